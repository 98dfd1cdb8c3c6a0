"""--ceiling: set for the run, always restored, refused clearly where it cannot be written."""
import pytest

from atsdbench.ceiling import Ceiling
from atsdbench.errors import UsageError


def test_set_and_restored_even_on_error(tmp_path):
    f = tmp_path / "tlb_single_page_flush_ceiling"
    f.write_text("33\n")
    with pytest.raises(KeyboardInterrupt):
        with Ceiling(paths=(str(tmp_path / "absent"), str(f))) as c:
            c.set(1)
            assert f.read_text() == "1\n"
            raise KeyboardInterrupt
    assert f.read_text() == "33\n"


def test_missing_or_unwritable_is_one_clear_line(tmp_path):
    with pytest.raises(UsageError, match="no tlb_single_page_flush_ceiling in debugfs"):
        Ceiling(paths=(str(tmp_path / "absent"),)).__enter__()
    d = tmp_path / "dir"
    d.mkdir()
    (d / "ceiling").mkdir()  # reads fail like a missing file; a directory cannot be written either
    with pytest.raises(UsageError):
        Ceiling(paths=(str(d / "ceiling"),)).__enter__()


@pytest.mark.live  # starts `atsdbench run` (refused before measuring where there is no ceiling)
def test_cli_ceiling_without_debugfs_stops_before_measuring(cli, tmp_path):
    from atsdbench import ceiling

    if ceiling.find() is not None:
        pytest.skip("this machine has a writable-looking ceiling; not touching it in a test")
    p = cli("run", "--size", "16M", "--strides", "64K", "--rounds", "1", "--ceiling", "1", "-o", tmp_path / "x.json")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--ceiling" in p.stderr
    assert not (tmp_path / "x.json").exists()
