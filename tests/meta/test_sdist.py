"""The sdist (MANIFEST.in) holds every file of the checkout that the core's build, the tests, the
scripts and the doc checks read, and nothing a build or test run leaves behind; the pure tests pass
from it, against the installed package."""
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile

import pytest

import built

ROOT = pathlib.Path(__file__).resolve().parents[2]

# What a build or a test run leaves in a working tree, and the sdist must not carry.
JUNK = ["atsdbench/_atsd.abi3.so", "atsdbench/_atsd.c", "atsdbench/__pycache__/cli.cpython-311.pyc",
        "csrc/atsd", "csrc/atsd.o", "tests/__pycache__/conftest.cpython-311.pyc", "tests/.hypothesis/examples/x",
        ".ci/venv/bin/python", ".ci/cache/atsdbench/lava/rootfs.tar", ".ci/lab-tmp/x", ".ci/lab.log"]
NOT_SHIPPED = {".gitignore"}  # git's own


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    """The sdist built from the files git tracks, with a build's and a test run's leftovers beside
    them: (the tracked files, the files it carries, where it is unpacked)."""
    tmp_path = tmp_path_factory.mktemp("sdist")
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:  # pyproject's build requirement
        pytest.skip(f"setuptools {setuptools.__version__} cannot build this project (the test extra asks >= 77)")
    tracked = built.tracked()
    assert not [n for n in tracked if (ROOT / n).is_symlink()], "an sdist cannot carry a symlink"
    src = tmp_path / "src"
    for name in tracked:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    for name in JUNK:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(b"")
    dist = tmp_path / "dist"
    p = subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; "
                        f"print(build_meta.build_sdist({str(dist)!r}))"], cwd=src, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    sdist = dist / p.stdout.split()[-1]
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        shipped = {m.name.partition("/")[2] for m in tar.getmembers() if m.isfile()}
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return tracked, shipped, tmp_path / top


@pytest.mark.live  # builds an sdist
def test_sdist_carries_what_the_build_tests_scripts_and_docs_read(sdist):
    tracked, shipped, _ = sdist
    missing = sorted(set(tracked) - NOT_SHIPPED - shipped)
    assert not missing, f"MANIFEST.in leaves out {missing}"
    assert not shipped & set(JUNK), sorted(shipped & set(JUNK))
    assert {"tests/support/fake_libcuda.c", "tests/support/fake_hmm.c", "scripts/build-test-hmm",
            "scripts/device-check", "tests/golden/compare_before_after.text", "scripts/cross-check",
            "docs/development.md", "csrc/atsd.h", "build_atsd.py"} <= shipped


@pytest.mark.live
@pytest.mark.slow  # pytest from the sdist: its collection, and the tests that read the tree
def test_the_tests_run_from_the_sdist(sdist):
    """Every test module imports and every test is collected from the unpacked sdist, and the quick
    tests that read the tree (the docs' links, the layout, the scripts, the option tables, the raise
    sites) pass there, against the installed package.  The rest of the quick set reads what the first
    test holds the sdist to carry (every tracked file): running it again here would check nothing new."""
    unpacked = sdist[2]
    # -P: not the unpacked source tree (no compiled core) on sys.path, but the installed package
    where = subprocess.run([sys.executable, "-P", "-c", "import atsdbench; print(atsdbench.__file__)"],
                           cwd=unpacked, capture_output=True, text=True, check=True).stdout.strip()
    assert not where.startswith(str(unpacked)), where
    # PYTHONSAFEPATH is -P for pytest and its xdist workers too, which start with -c
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    every = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "--slow", "-p", "no:cacheprovider"],
                           cwd=unpacked, capture_output=True, text=True, timeout=600, env=env)
    assert every.returncode == 0 and "error" not in every.stdout.splitlines()[-1], every.stdout[-3000:] + every.stderr
    # every test module of the checkout gave tests there
    collected = {line.split("::")[0] for line in every.stdout.splitlines() if "::" in line}
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")}
    assert modules <= collected, sorted(modules - collected)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not live and not slow", "-p", "no:cacheprovider",
                        "tests/meta"], cwd=unpacked, capture_output=True, text=True, timeout=600, env=env)
    tail = p.stdout[-3000:] + p.stderr[-2000:]
    assert p.returncode == 0, tail
    assert " passed" in p.stdout.splitlines()[-1] and "failed" not in p.stdout.splitlines()[-1], tail
