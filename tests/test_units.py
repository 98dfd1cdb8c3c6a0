import pytest

from atsdbench.errors import UsageError
from atsdbench.units import format_size, parse_size, parse_sizes


@pytest.mark.parametrize("text,value", [("64K", 65536), ("1M", 1 << 20), ("1G", 1 << 30), ("4096", 4096),
                                        ("2m", 2 << 20), ("1GiB", 1 << 30), (" 16K ", 16384)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["0", "0K", "", "1.5G", "12Q", "-4K", "K"])
def test_parse_size_rejects(text):
    with pytest.raises(UsageError):
        parse_size(text)


def test_parse_sizes_and_format():
    assert parse_sizes("64K,1M,2M,4M") == [65536, 1 << 20, 2 << 20, 4 << 20]
    assert [format_size(s) for s in (65536, 1 << 20, 1 << 30, 12288, 1000)] == ["64K", "1M", "1G", "12K", "1000"]
