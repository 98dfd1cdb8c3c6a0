"""What the tests build from the checkout, once a test session and shared: the wheel pip builds from
the sdist of the files git tracks (as pip builds one from an sdist or a git URL; the core's C build is
its cost, 20-60 s here).  tests/conftest.py's `wheel` fixture hands it to test_install and tests/lab."""
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def tracked():
    """The files git tracks (that exist): what an sdist is built from."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the sdist is built from the files git tracks")
    return [name for name in out.decode().split("\0") if name and (ROOT / name).exists()]


def build_env():
    """The environment a build runs in: no ATSDBENCH_CSRC or PYTHONPATH of the test run's."""
    return {k: v for k, v in os.environ.items() if k not in ("ATSDBENCH_CSRC", "PYTHONPATH")}


def wheel(folder):
    """Build the sdist of the tracked files in `folder`, then the wheel from it; the wheel's path."""
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:  # pyproject's build requirement
        pytest.skip(f"setuptools {setuptools.__version__} cannot build this project (the test extra asks >= 77)")
    folder = pathlib.Path(folder)
    src = folder / "src"
    for name in tracked():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    p = subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; "
                        f"print(build_meta.build_sdist({str(folder / 'sdist')!r}))"], cwd=src, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    with tarfile.open(folder / "sdist" / p.stdout.split()[-1]) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(folder / "unpacked", **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(folder / "wheel"), str(folder / "unpacked" / top)], capture_output=True, text=True,
                       timeout=900, env=build_env())
    assert p.returncode == 0, p.stderr[-3000:]
    [built] = (folder / "wheel").glob("atsdbench-*.whl")
    return built
