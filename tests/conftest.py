import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

FIXTURES = pathlib.Path(__file__).parent / "fixtures"

# The `live` marker (pyproject.toml): a test that measures or builds on this machine.  Files and tests
# say so themselves; a test that asks for one of these fixtures is live through it.
LIVE_FIXTURES = {"small_run", "atsd"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        if LIVE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.live)


@pytest.fixture
def fixtures():
    return FIXTURES


# Run a command with tracefs at /sys/kernel/tracing in a mount namespace of its own (this machine's stays
# as it is); where it is already mounted (systemd's default) the namespace has it and mount would fail.
@pytest.fixture(scope="session")
def in_tracefs():
    return ('grep -q " /sys/kernel/tracing tracefs " /proc/mounts || '
            'mount -t tracefs nodev /sys/kernel/tracing || exit; ')

SCRIPTS = pathlib.Path(__file__).parent.parent / "scripts"


def _load_script(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def script():
    """script("bench_verdict"): scripts/bench_verdict.py loaded as a module (scripts/ is no package)."""
    return _load_script


NEUTRAL = tempfile.mkdtemp(prefix="atsdbench-tests-")


def run_cli(*args, stdin=None, cwd=None, env=None):
    """Run `python -m atsdbench ARGS` as a user would; returns CompletedProcess (text).

    Never from the checkout's root: there `-m atsdbench` would find the source tree, which has no
    compiled core, instead of the installed package."""
    return subprocess.run([sys.executable, "-m", "atsdbench", *map(str, args)], input=stdin, capture_output=True,
                          text=True, cwd=cwd or NEUTRAL, env=env, timeout=600)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    """One real, small run shared by the tests that read a live result."""
    import atsdbench

    result = atsdbench.run(size="64M", strides="64K,1M", rounds=2, reps=2, seed=1)
    path = tmp_path_factory.mktemp("run") / "small.json"
    from atsdbench.data import results

    results.save(result, str(path))
    return path


@pytest.fixture(scope="session")
def atsd(tmp_path_factory):
    """The standalone atsd, built from csrc/ with plain make (as for an initramfs)."""
    if not shutil.which("make") or not shutil.which("cc"):
        pytest.skip("make or cc not installed")
    out = tmp_path_factory.mktemp("atsd") / "atsd"
    subprocess.run(["make", "-s", "-C", os.path.join(os.path.dirname(__file__), "..", "csrc"), f"OUT={out}"],
                   check=True)
    return str(out)


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs (needs root and mount(8)); skipped where it cannot be mounted."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


@pytest.fixture
def full_disk(tiny_disk):
    """tiny_disk with every block taken: even a 4-byte write fails (ENOSPC)."""
    fd = os.open(tiny_disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"x" * 512):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    return tiny_disk
