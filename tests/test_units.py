import pytest
from hypothesis import given, settings, strategies as st

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


@pytest.mark.parametrize("text,value", [("256M", 256 << 20), ("256MiB", 256 << 20), ("256mib", 256 << 20),
                                        ("4096B", 4096), ("4096 b", 4096), ("16T", 16 << 40),
                                        ("18446744073709551615", 2**64 - 1), ("16777215T", (2**24 - 1) << 40),
                                        ("0" * 5000 + "1K", 1024)])
def test_parse_size_is_binary_and_64_bit(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text,message", [
    ("256MB", "--size '256MB': sizes are binary: write 256M or 256MiB (2^20), not MB (10^6 to many)"),
    ("1gb", "--size '1gb': sizes are binary: write 1G or 1GiB (2^30), not GB (10^9 to many)"),
    ("64 KB ", "--size '64 KB ': sizes are binary: write 64K or 64KiB (2^10), not KB (10^3 to many)"),
    ("18446744073709551616", "--size '18446744073709551616' is too large (a size must fit in 64 bits)"),
    ("16777216T", "--size '16777216T' is too large (a size must fit in 64 bits)"),
    ("9" * 5000, "is too large"),
    ("\u0663K", "is not a size"),           # ARABIC-INDIC DIGIT THREE: \d would take it
    ("\uff11\uff16M", "is not a size"),     # fullwidth 16
    ("16\u212a", "is not a size"),          # KELVIN SIGN: re.IGNORECASE alone would take it as k
    ("16\u00a0K", "is not a size"),         # no-break space: \s would take it
    ("16K\n\n\u2003", "is not a size"),
    ("256iB", "is not a size"),
    ("0MiB", "--size must not be zero"),
])
def test_parse_size_refuses_in_one_line(text, message):
    with pytest.raises(UsageError) as e:
        parse_size(text, "--size")
    assert message in str(e.value) and "\n" not in str(e.value).replace(text, "")


SIZE_CHARS = "0123456789" * 3 + "KMGTkmgtiIbB" + " \t\n\r\f\v" + "\u0663\uff11\u212a\u00a0\u2003xE.-+\x00é"


def _size_texts():
    near = st.sampled_from([0, 1, 2**54 - 1, 2**54, 2**64 - 1, 2**64, 2**70, 10**19, 10**20])
    shaped = st.builds(lambda n, d, unit, tail, pad: f"{pad}{n + d}{pad}{unit}{tail}{pad}", near,
                       st.integers(-2, 2), st.sampled_from(["", "K", "M", "g", "T", "P"]),
                       st.sampled_from(["", "B", "iB", "ib", "i", "bb"]), st.sampled_from(["", " ", "\t"]))
    return st.one_of(st.text(SIZE_CHARS, max_size=30), shaped, st.text(max_size=60))


def _parsed_alike(text):
    """units.parse_size (the pure side's) and the core's atsd_parse_size (run's, atsd's): the same
    value, or the same refusal in the same words, for every text."""
    core = pytest.importorskip("atsdbench.measure.core")

    def outcome(parse):
        try:
            return parse(text, "--size")
        except UsageError as e:
            return str(e)

    assert outcome(parse_size) == outcome(core.parse_size)


# The quick set tries 25 texts, the whole suite (slow) 800 more: the same property at breadth.
@settings(max_examples=25, derandomize=True, deadline=None)
@given(_size_texts())
def test_the_pure_parser_is_the_c_parser(text):
    _parsed_alike(text)


@pytest.mark.slow
@settings(max_examples=800, derandomize=True, deadline=None)
@given(_size_texts())
def test_the_pure_parser_is_the_c_parser_at_breadth(text):
    _parsed_alike(text)
