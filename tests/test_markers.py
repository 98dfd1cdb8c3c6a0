"""The `slow` marker is opt-in (tests/conftest.py): left out, and said so, unless --slow, a -m naming
slow, or the test's own id asks for it."""
import pathlib
import subprocess
import sys
import types

import pytest

import conftest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SLOW = "tests/test_sdist.py::test_the_quick_set_passes_from_the_sdist"
QUICK = "tests/test_sdist.py::test_sdist_carries_what_the_build_tests_scripts_and_docs_read"


def test_pytest_leaves_slow_tests_out_and_says_so():
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "tests/test_sdist.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
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
