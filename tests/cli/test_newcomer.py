"""A newcomer's paper cuts: running from the source tree, and flush counts that need tracefs."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from atsdbench.measure import core

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _source_copy(tmp_path):
    """A checkout as `git clone` leaves it: sources, no compiled core."""
    tree = tmp_path / "atsdbench-src"
    shutil.copytree(ROOT / "atsdbench", tree / "atsdbench",
                    ignore=shutil.ignore_patterns("_atsd*", "__pycache__"))
    shutil.copytree(ROOT / "csrc", tree / "csrc", ignore=shutil.ignore_patterns("atsd", "*.o"))
    for name in ("pyproject.toml", "setup.py", "build_atsd.py"):
        shutil.copy(ROOT / name, tree / name)
    return tree


# As after a plain `pip install .`: the checkout's copy comes first on sys.path.  (An editable
# install's import hook would find the in-place build instead; it is set aside here.)
PRELUDE = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
           "sys.path.insert(0, '.'); ")


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_python_api_from_the_source_tree_says_what_to_do(tmp_path):
    tree = _source_copy(tmp_path)
    code = PRELUDE + "import atsdbench; atsdbench.run(size='64M')"
    p = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True)
    assert p.returncode != 0
    last = p.stderr.strip().splitlines()[-1]
    assert "CoreMissing" in last and f"{tree / 'atsdbench'}, a source tree:" in last
    assert f"pip install -e {tree}`" in last
    assert "run from another directory" in last


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_cli_from_the_source_tree_is_one_line(tmp_path):
    tree = _source_copy(tmp_path)
    code = PRELUDE + "import runpy; sys.argv = ['atsdbench', 'run', '--size', '64M']; " \
        "runpy.run_module('atsdbench', run_name='__main__')"
    p = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "source tree" in p.stderr and f"pip install -e {tree}`" in p.stderr


def test_tracefs_problem_names_the_cause_and_the_fix():
    root_unmounted = core.tracepoint_problem(euid=0, mounted=False)
    assert "tracefs not mounted" in root_unmounted
    assert "mount -t tracefs nodev /sys/kernel/tracing" in root_unmounted
    user = core.tracepoint_problem(euid=1000, mounted=False)
    assert "needs root" in user and "mount" not in user
    assert "has no tlb:tlb_flush event" in core.tracepoint_problem(euid=0, mounted=True)


def test_tracefs_mount_is_read_from_proc_mounts():
    assert core.tracefs_mounted("tracefs /sys/kernel/tracing tracefs rw,nosuid 0 0\n")
    assert not core.tracefs_mounted("proc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\n")


@pytest.mark.live  # starts `atsdbench run`
def test_info_and_run_give_the_same_reason(cli, tmp_path):
    from atsdbench.measure import counters

    # the tracepoint a run counts flushes from (tlb:tlb_flush never fires on POWER)
    event = "powerpc:tlbie" if counters.is_power() else "tlb:tlb_flush"
    if core.find_tracepoint(event.replace(":", "/"))[0] is not None:
        pytest.skip(f"{event} is readable here: there is no reason to give")
    reason = core.tracepoint_problem(event)
    if os.geteuid() == 0 and not core.tracefs_mounted():
        assert "mount -t tracefs" in reason
    info = cli("info")
    # info hangs a long fact under its value at 100 columns: the same words, other line breaks
    assert info.returncode == 0 and " ".join(reason.split()) in " ".join(info.stdout.split()), info.stdout
    out = tmp_path / "r.json"
    run = cli("run", "--size", "16M", "--strides", "64K", "--rounds", "1", "--reps", "1", "-o", out)
    assert run.returncode == 0, run.stderr
    # run hangs it too (the core's sentence, cut at 100 columns)
    assert f"no flush counts: {' '.join(reason.split())}" in " ".join(run.stdout.split()), run.stdout
    assert json.loads(out.read_text())["config"]["trace_error"] == reason


def test_guest_help_says_what_smp_and_mem_are_and_their_defaults():
    from atsdbench import cli

    text = " ".join(cli.build_parser("guest")._subparsers._group_actions[0].choices["guest"].format_help().split())
    assert "--smp N virtual CPUs of the guest (default 2" in text
    assert "--mem SIZE guest memory" in text and "(default 2G" in text


def test_python_m_pytest_from_a_checkout_tests_the_installed_package(tmp_path, monkeypatch):
    """`python -m pytest` puts the checkout first on sys.path; after a plain `pip install .` its atsdbench
    has no core, so conftest takes the checkout off sys.path (the installed copy is tested, as by `pytest`)."""
    import conftest

    tree = tmp_path / "checkout"
    (tree / "atsdbench").mkdir(parents=True)
    monkeypatch.chdir(tree)
    path = ["", str(tree), "/usr/lib/python3/site-packages"]
    conftest._test_the_installed_package(tree, path, {})
    assert path == ["/usr/lib/python3/site-packages"]
    (tree / "atsdbench" / "_atsd.abi3.so").write_bytes(b"")  # pip install -e: the core built in place
    path = ["", str(tree)]
    conftest._test_the_installed_package(tree, path, {})
    assert path == ["", str(tree)]
