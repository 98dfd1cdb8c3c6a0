"""The `slow` marker is opt-in (tests/conftest.py): left out, and said so, unless --slow, a -m naming
slow, or the test's own id asks for it."""
import pathlib
import re
import subprocess
import sys
import types

import pytest

import conftest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SLOW = "tests/meta/test_sdist.py::test_the_tests_run_from_the_sdist"
QUICK = "tests/meta/test_sdist.py::test_sdist_carries_what_the_build_tests_scripts_and_docs_read"


@pytest.mark.slow  # a pytest process (its collection: seconds); _kept below checks the rule in process
def test_pytest_leaves_slow_tests_out_and_says_so():
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "tests/meta/test_sdist.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = p.stdout.splitlines()
    assert p.returncode == 0 and QUICK in lines and SLOW not in lines, p.stdout + p.stderr
    assert "1 slow test left out (studies, storms, the sdist's run): --slow runs them, as CI does" in lines


class Item:
    def __init__(self, nodeid, slow):
        self.nodeid, self.slow, self.fixturenames = nodeid, slow, ()

    def get_closest_marker(self, name):
        return name == "slow" and self.slow or None


def _kept(options, args=()):
    deselected = []
    config = types.SimpleNamespace(getoption=lambda name: options.get(name), args=list(args), rootpath=ROOT,
                                   stash=pytest.Stash(),
                                   hook=types.SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items)))
    items = [Item(QUICK, False), Item(SLOW, True), Item(SLOW.replace("::", "::x_") + "[a]", True)]
    conftest.pytest_collection_modifyitems(config, items)
    assert len(items) + len(deselected) == 3
    return [i.nodeid for i in items], config.stash.get(conftest._SLOW_LEFT, 0)


@pytest.mark.parametrize("options, args, kept", [
    ({}, (), [QUICK]),
    ({"--slow": True}, (), "all"),
    ({"markexpr": "slow"}, (), "all"),
    ({"markexpr": "not live and not slow"}, (), "all"),  # -m deselects them itself
    ({}, (str(ROOT / SLOW),), [QUICK, SLOW]),  # named by its id (a path and the test's name)
    ({}, (SLOW.partition("::")[0],), [QUICK]),  # its file only: still left out
])
def test_slow_is_opt_in(options, args, kept):
    got, left = _kept(options, args)
    everything = [QUICK, SLOW, SLOW.replace("::", "::x_") + "[a]"]
    assert got == (everything if kept == "all" else kept)
    assert left == 3 - len(got)


@pytest.mark.parametrize("markexpr, out", [
    ("not live", True), ("not live and not slow", True), ("not (live or slow)", True), ("slow and not live", True),
    ("", False), (None, False), ("live", False), ("not slow", False), ("not live or slow", False), ("(", False),
])
def test_live_left_out_reads_the_mark_expression(markexpr, out):
    assert conftest._live_left_out(markexpr) is out


def _workers(markexpr, numprocesses=None, worker=False, cpus=2, **option):
    option = types.SimpleNamespace(**{"numprocesses": numprocesses, "collectonly": False, "usepdb": False,
                                      "capture": "fd", "markexpr": markexpr, **option})
    config = types.SimpleNamespace(option=option, pluginmanager=types.SimpleNamespace(has_plugin=lambda n: True))
    if worker:
        config.workerinput = {}
    saved = conftest.os.sched_getaffinity
    conftest.os.sched_getaffinity = lambda pid: set(range(cpus))
    try:
        conftest.pytest_cmdline_main(config)
    finally:
        conftest.os.sched_getaffinity = saved
    return option.numprocesses


def test_the_quick_set_takes_up_to_four_cpus_and_a_worker_starts_none():
    assert _workers("not live") == 2 and _workers("not live", cpus=64) == conftest.MAX_WORKERS == 4
    assert _workers("not live", cpus=1) is None  # one CPU: one process, no worker to start
    assert _workers("not live", worker=True) is None  # a worker that started workers would never end
    assert _workers("not live", numprocesses=0) == 0 and _workers("not live", numprocesses=3) == 3  # -n asked
    assert _workers("not slow") is None  # live tests in the run: one process
    for option in ({"collectonly": True}, {"usepdb": True}, {"capture": "no"}):
        assert _workers("not live", **option) is None


@pytest.mark.slow
def test_the_quick_set_s_workers_say_what_they_left_out():
    pytest.importorskip("xdist")
    if len(conftest.os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the quick set runs in one process")
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "not live",
                        "tests/meta/test_sdist.py", "-k", "no_test_has_this_name"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    workers = re.search(r"created: (\d+)/\1 workers", p.stdout)
    assert p.returncode == 5 and workers and int(workers[1]) >= 2, p.stdout + p.stderr
    assert "1 slow test left out (studies, storms, the sdist's run): --slow runs them, as CI does" in p.stdout
