"""--ceiling: set for the run, always restored, refused clearly where it cannot be written."""
import pytest

from atsdbench.measure.ceiling import Ceiling
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
    with pytest.raises(UsageError, match="debugfs not mounted|no tlb_single_page_flush_ceiling in debugfs"):
        Ceiling(paths=(str(tmp_path / "absent"),)).__enter__()
    d = tmp_path / "dir"
    d.mkdir()
    (d / "ceiling").mkdir()  # reads fail like a missing file; a directory cannot be written either
    with pytest.raises(UsageError):
        Ceiling(paths=(str(d / "ceiling"),)).__enter__()


@pytest.mark.live  # starts `atsdbench run` (refused before measuring where there is no ceiling)
def test_cli_ceiling_without_debugfs_stops_before_measuring(cli, tmp_path):
    from atsdbench.measure import ceiling

    if ceiling.find() is not None:
        pytest.skip("this machine has a writable-looking ceiling; not touching it in a test")
    p = cli("run", "--size", "16M", "--strides", "64K", "--rounds", "1", "--ceiling", "1", "-o", tmp_path / "x.json")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--ceiling" in p.stderr
    assert not (tmp_path / "x.json").exists()


def _refusing(err):
    """open() as debugfs answers under lockdown (EPERM) or to a user (EACCES)."""
    import os

    def fake(path, *a, **k):
        raise OSError(err, os.strerror(err), path)
    return fake


def test_lockdown_is_named_not_mount_advice(tmp_path, monkeypatch):
    import errno

    from atsdbench.measure import ceiling, host
    from atsdbench.render import info

    lockdown = tmp_path / "lockdown"
    lockdown.write_text("none [integrity] confidentiality\n")
    f = tmp_path / "tlb_single_page_flush_ceiling"
    f.write_text("33\n")
    monkeypatch.setattr(ceiling, "open", _refusing(errno.EPERM), raising=False)
    with pytest.raises(UsageError) as e:
        Ceiling(paths=(str(f),), lockdown=str(lockdown)).__enter__()
    message = str(e.value)
    assert message.startswith(f"--ceiling: {f}: Operation not permitted: the kernel is locked down (integrity)")
    assert "mount" not in message and "\n" not in message
    lockdown.write_text("[none] integrity confidentiality\n")  # refused without lockdown: say so, still no mount
    path, why = ceiling.locate((str(f),), str(lockdown))
    assert path is None and "lockdown or a security module" in why and "mount" not in why
    monkeypatch.setattr(ceiling, "open", _refusing(errno.EACCES), raising=False)
    assert ceiling.locate((str(f),), str(lockdown))[1] == f"{f}: Permission denied: debugfs needs root"
    # info shows why the ceiling is unknown
    monkeypatch.setattr(ceiling, "locate", lambda *a: (None, "X: Operation not permitted: the kernel is locked down"))
    facts = host.full()
    assert facts["tlb_single_page_flush_ceiling"] == "unknown"
    line = [x for x in info.render(facts, []).splitlines() if x.startswith("TLB single-page flush ceiling")][0]
    assert line.endswith("unknown (X: Operation not permitted: the kernel is locked down)")


def test_a_missing_file_still_says_mount(tmp_path):
    from atsdbench.measure import ceiling

    absent = (str(tmp_path / "absent"),)
    unmounted = ceiling.locate(absent, debugfs=str(tmp_path))[1]
    assert unmounted == ceiling.UNMOUNTED and "mount -t debugfs" in unmounted
    # debugfs there (a mount point), the file not: the kernel has none, mounting again would not help
    assert ceiling.locate(absent, debugfs="/")[1] == ceiling.MISSING
