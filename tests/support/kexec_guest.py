"""The pieces of the end-to-end campaign test (tests/campaign/test_kexec_guest.py): two Debian amd64
kernels (apt-get download, cached as guest caches its pieces), an initramfs that runs `atsdbench
campaign step` at every boot (this host's Python 3 and atsdbench with its compiled core, the static
atsd and busybox guest uses, each kernel's virtio and 9p modules), and a 9p share that holds the
campaign directory and survives every kexec.  One qemu: the first kernel boots, and every later boot
is the step's own kexec."""
import glob
import lzma
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig

KERNELS = ("linux-image-6.1.0-47-amd64", "linux-image-6.12.101+deb12-amd64")
# loaded in this order where a kernel has them as modules (6.12 has virtio and virtio_pci built in)
MODULES = ("virtio", "virtio_ring", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci", "netfs",
           "fscache", "9pnet", "9pnet_virtio", "9p")
PY_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "distutils",
           "site-packages", "dist-packages", "sqlite3", "unittest", "xmlrpc", "wsgiref", "venv", "curses", "dbm",
           "config-3.11-x86_64-linux-gnu", "msilib", "xml", "asyncio", "multiprocessing", "concurrent"}
SO_SKIP = {"_ssl", "_hashlib", "_tkinter", "_sqlite3", "_dbm", "_gdbm", "_curses", "_curses_panel", "readline",
           "_lzma", "_bz2", "_uuid", "_ctypes", "_decimal"}
# the atsdbench this test imports (a checkout built in place, or the installed one CI tests), with its core
PKG = pathlib.Path(__import__("atsdbench").__file__).resolve().parent

INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
rel=$(uname -r)
for m in MODULES; do
    [ -f /lib/modules/$rel/$m.ko ] && insmod /lib/modules/$rel/$m.ko 2>/dev/null
done
store=$(sed -n 's/.*atsd_store=\([^ ]*\).*/\1/p' /proc/cmdline)
mkdir -p "$store"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 store "$store" || echo "@@ no share"
export PATH=/bin:/usr/bin PYTHONPATH=/opt/atsdbench HOME=/tmp PYTHONDONTWRITEBYTECODE=1
echo "@@ boot $(cat /proc/sys/kernel/random/boot_id) $rel"
/usr/bin/python3 -m atsdbench campaign step "$store/camp"
echo "@@ step rc=$?"
sync
poweroff -f
"""


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "atsdbench" / "kernels"


def kernel(package):
    """(vmlinuz, release, {module: .ko path}) of a Debian kernel package, fetched once and cached."""
    d = cache_dir() / package
    if not (d / "done").exists():
        tmp = pathlib.Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True).stdout.strip())
        tmp.chmod(0o755)  # apt's sandbox user writes the download
        subprocess.run(["apt-get", "download", "-qq", package], cwd=tmp, check=True, capture_output=True)
        subprocess.run(["dpkg-deb", "-x", next(tmp.glob("*.deb")), tmp / "x"], check=True)
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(next((tmp / "x" / "boot").glob("vmlinuz-*")), d / "vmlinuz")
        for m in MODULES:
            found = [p for p in (tmp / "x").rglob(f"{m}.ko*") if p.name in (f"{m}.ko", f"{m}.ko.xz")]
            if found:
                data = found[0].read_bytes()
                (d / f"{m}.ko").write_bytes(lzma.decompress(data) if found[0].name.endswith(".xz") else data)
        release = next((tmp / "x" / "lib" / "modules").iterdir()).name
        (d / "release").write_text(release)
        (d / "done").write_text("")
        shutil.rmtree(tmp)
    mods = {m: d / f"{m}.ko" for m in MODULES if (d / f"{m}.ko").exists()}
    return d / "vmlinuz", (d / "release").read_text(), mods


def _cpio_entry(out, name, data=b"", mode=0o100644, mtime=0):
    name_b = name.encode() + b"\0"
    head = b"070701" + b"".join(b"%08X" % v for v in (0, mode, 0, 0, 1, int(mtime), len(data), 0, 0, 0, 0,
                                                       len(name_b), 0))
    out += head + name_b
    out += b"\0" * (-len(out) % 4)
    out += data
    out += b"\0" * (-len(out) % 4)


def initramfs(path, kernels):
    """The guest's root as an uncompressed newc cpio (faster to unpack under TCG than a compressed one)."""
    from atsdbench.guest import initramfs

    out = bytearray()
    dirs = set()

    def add_dir(d):
        parts = d.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            p = "/".join(parts[:i])
            if p and p not in dirs:
                dirs.add(p)
                _cpio_entry(out, p, mode=0o40755)

    def add(target, data, mode=0o100644, mtime=0):
        add_dir(os.path.dirname(target))
        _cpio_entry(out, target.strip("/"), data, mode, mtime)

    for d in ("proc", "sys", "dev", "tmp", "bin"):
        add_dir(d)
    add("init", INIT.replace("MODULES", " ".join(MODULES)).encode(), 0o100755)
    add("bin/busybox", pathlib.Path(initramfs.busybox("x86_64")).read_bytes(), 0o100755)
    add("bin/atsd", pathlib.Path(initramfs.static_atsd("x86_64")).read_bytes(), 0o100755)
    for _, release, mods in kernels:
        for m, p in mods.items():
            add(f"lib/modules/{release}/{m}.ko", p.read_bytes())
    # this host's Python (Debian's, as the kernels are) and the libraries it links
    exe = os.path.realpath(sys.executable if not hasattr(sys, "_base_executable") else sys._base_executable)
    add("usr/bin/python3", pathlib.Path(exe).read_bytes(), 0o100755)
    linked = [exe]
    stdlib = pathlib.Path(sysconfig.get_paths()["stdlib"])
    for p in sorted(stdlib.rglob("*")):
        rel = p.relative_to(stdlib)
        if rel.parts[0] in PY_SKIP or p.is_dir() or p.is_symlink() or p.name.split(".")[0] in SO_SKIP:
            continue
        if p.suffix == ".so":
            linked.append(str(p))
        if p.suffix not in (".py", ".pyc", ".so"):
            continue
        add(str(stdlib / rel), p.read_bytes(), mtime=p.stat().st_mtime)  # the pycs check their source's mtime
    site = pathlib.Path(sysconfig.get_paths()["purelib"])
    for p in glob.glob(str(site / "_cffi_backend*.so")):
        add(f"opt/atsdbench/{os.path.basename(p)}", pathlib.Path(p).read_bytes(), 0o100755)
        linked.append(p)
    linked += glob.glob(str(PKG / "_atsd*.so"))
    libs = set()
    for so in linked:  # the shared libraries all of them link, from this host (Debian, as the kernels)
        ldd = subprocess.run(["ldd", so], capture_output=True, text=True).stdout
        libs |= set(re.findall(r"=> (/\S+)", ldd)) | set(re.findall(r"^\s*(/\S+) \(", ldd, re.M))
    for lib in sorted(libs):
        add(lib, pathlib.Path(lib).read_bytes(), 0o100755)
    import py_compile
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for p in sorted(PKG.rglob("*")):
            if not p.is_file() or "__pycache__" in p.parts:
                continue
            rel = p.relative_to(PKG)
            if p.suffix in (".py", ".sh") or p.name.startswith("_atsd"):
                add(f"opt/atsdbench/atsdbench/{rel}", p.read_bytes())
            if p.suffix == ".py":  # compiled here: a fresh root every boot would compile them again under TCG
                pyc = os.path.join(tmp, "x.pyc")
                py_compile.compile(str(p), cfile=pyc, doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
                tag = sys.implementation.cache_tag
                add(f"opt/atsdbench/atsdbench/{rel.parent}/__pycache__/{p.stem}.{tag}.pyc",
                    pathlib.Path(pyc).read_bytes())
    _cpio_entry(out, "TRAILER!!!")
    pathlib.Path(path).write_bytes(bytes(out))
    return path


def qemu(store, image, initrd, console, timeout, smp=2, quiet=True):
    """Boot the first kernel with the share; the rest of the campaign happens inside (kexec)."""
    cmd = ["qemu-system-x86_64", "-m", "1G", "-smp", str(smp), "-nographic", "-no-reboot", "-kernel", str(image),
           "-initrd", str(initrd), "-append", f"console=ttyS0 {'quiet ' if quiet else ''}panic=-1 atsd_store={store}",
           "-virtfs", f"local,path={store},mount_tag=store,security_model=none", "-serial", f"file:{console}",
           "-monitor", "none", "-display", "none"]
    cmd.remove("-nographic")
    return subprocess.run(cmd, timeout=timeout, stdin=subprocess.DEVNULL, capture_output=True)
