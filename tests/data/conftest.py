import os
import subprocess

import pytest


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
