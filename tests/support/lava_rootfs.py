"""The system a LAVA qemu job of tests/lab boots: scripts/lava-rootfs's cached Debian 12 rootfs, kernel and
initrd, the rootfs tree with the wheel under test in it, ext4 images of that tree, and the libguestfs
settings a worker on this machine needs (its appliance boots a kernel: where /boot has none, the guest's;
TCG, as a /dev/kvm that does not work makes it hang)."""
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
TOOLS = ("lava-run", "mmdebstrap", "qemu-system-x86_64", "mkfs.ext4", "git")


def need():
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (apt-get install lava-dispatcher mmdebstrap qemu-system-x86)")


def system(work, wheel):
    """{cache, tree, work, wheel}: the cached rootfs, kernel and initrd, and a tree with the wheel (the
    session's, tests/support/built.py) in it."""
    cache = subprocess.run([str(ROOT / "scripts" / "lava-rootfs")], capture_output=True, text=True, timeout=1800)
    if cache.returncode:
        pytest.skip(f"scripts/lava-rootfs could not build the rootfs: {cache.stderr.strip()[-300:]}")
    cache = pathlib.Path(cache.stdout.strip())
    tree = work / "tree"
    tree.mkdir()
    subprocess.run(["tar", "-C", str(tree), "-xf", str(cache / "rootfs.tar")], check=True)
    wheels = tree / "opt" / "wheels"
    wheels.mkdir(parents=True)
    wheel = pathlib.Path(shutil.copy(wheel, wheels))
    return {"cache": cache, "tree": tree, "work": work, "wheel": "/" + str(wheel.relative_to(tree))}


def image(system, name, extra=None):
    """An ext4 image of the tree, with extra {path in the guest: bytes}."""
    for path, data in (extra or {}).items():
        target = system["tree"] / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    out = system["work"] / f"{name}.ext4"
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "root", "-d", str(system["tree"]), str(out), "3G"], check=True)
    return out


def guestfs_env(system):
    [modules] = list((system["tree"] / "lib" / "modules").iterdir())
    return {"LIBGUESTFS_BACKEND": "direct", "LIBGUESTFS_BACKEND_SETTINGS": "force_tcg",
            "SUPERMIN_KERNEL": str(system["cache"] / "vmlinuz"), "SUPERMIN_MODULES": str(modules)}
