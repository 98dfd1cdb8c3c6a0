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

ROOT = pathlib.Path(__file__).resolve().parents[2]

# What a build or a test run leaves in a working tree, and the sdist must not carry.
JUNK = ["atsdbench/_atsd.abi3.so", "atsdbench/_atsd.c", "atsdbench/__pycache__/cli.cpython-311.pyc",
        "csrc/atsd", "csrc/atsd.o", "tests/__pycache__/conftest.cpython-311.pyc", "tests/.hypothesis/examples/x",
        ".ci/venv/bin/python"]
NOT_SHIPPED = {".gitignore"}  # git's own


def _tracked():
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the sdist is checked against the files git tracks")
    return [name for name in out.decode().split("\0") if name and (ROOT / name).exists()]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    """The sdist built from the files git tracks, with a build's and a test run's leftovers beside
    them: (the tracked files, the files it carries, where it is unpacked)."""
    tmp_path = tmp_path_factory.mktemp("sdist")
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:  # pyproject's build requirement
        pytest.skip(f"setuptools {setuptools.__version__} cannot build this project (the test extra asks >= 77)")
    tracked = _tracked()
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
@pytest.mark.slow  # the quick set again, from the sdist
def test_the_quick_set_passes_from_the_sdist(sdist):
    unpacked = sdist[2]
    # -P: not the unpacked source tree (no compiled core) on sys.path, but the installed package
    where = subprocess.run([sys.executable, "-P", "-c", "import atsdbench; print(atsdbench.__file__)"],
                           cwd=unpacked, capture_output=True, text=True, check=True).stdout.strip()
    assert not where.startswith(str(unpacked)), where
    # the quick set a user runs; PYTHONSAFEPATH is -P for its xdist workers too, which start with -c
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not live and not slow", "-p", "no:cacheprovider"],
                       cwd=unpacked, capture_output=True, text=True, timeout=1800,
                       env={**os.environ, "PYTHONSAFEPATH": "1"})
    tail = p.stdout[-3000:] + p.stderr[-2000:]
    assert p.returncode == 0, tail
    assert " passed" in p.stdout.splitlines()[-1] and "failed" not in p.stdout.splitlines()[-1], tail
