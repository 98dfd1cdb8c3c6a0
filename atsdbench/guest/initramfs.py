"""The guest's initramfs for `atsdbench guest`: its pieces, found or built once and cached in
~/.cache/atsdbench/ARCH/ (the static atsd from csrc/, a static busybox), the newc cpio written here
(/init is the package's guest/init.sh, the only one: scripts/power-check's guests boot it too), the
small archive with each boot's runs and command, and the check of a user's --initrd archive."""
import hashlib
import importlib.resources
import os
import re
import shutil
import subprocess
import tempfile

from .. import carried
from ..errors import UsageError
from .qemu import MACHINES, Missing, host_arch
from .image import elf_arch

DEBIAN_ARCH = {"ppc64le": "ppc64el", "x86_64": "amd64", "aarch64": "arm64"}
# arch: cross compiler, its Debian packages
CROSS = {"ppc64le": ("powerpc64le-linux-gnu-gcc", ["gcc-powerpc64le-linux-gnu", "libc6-dev-ppc64el-cross"]),
         "x86_64": ("x86_64-linux-gnu-gcc", ["gcc-x86-64-linux-gnu", "libc6-dev-amd64-cross"]),
         "aarch64": ("aarch64-linux-gnu-gcc", ["gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"])}
INIT = importlib.resources.files(__package__).joinpath("init.sh").read_text(encoding="utf-8")


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "atsdbench")


def source_dir():
    """atsd's sources ($ATSDBENCH_CSRC, the package's atsdbench/csrc/, the checkout's csrc/: carried.find)."""
    return carried.find("csrc", "ATSDBENCH_CSRC", "atsd_main.c")


def compiler(arch):
    """(compiler, packages): the host's own gcc for its arch, else the cross compiler."""
    cross, packages = CROSS[arch]
    if host_arch() == arch and shutil.which("gcc"):
        return "gcc", []
    return (cross if shutil.which(cross) else None), packages


def missing_tools(machines):
    """Debian packages to install before these machines can boot (qemu, compilers), in order."""
    need = []
    for m in machines:
        spec = MACHINES[m]
        if not shutil.which(spec["qemu"]):
            need.append(spec["package"])
        arch = spec["arch"]
        if not os.path.exists(os.path.join(cache_dir(), arch, "atsd")) or source_dir():
            cc, packages = compiler(arch)
            if cc is None:
                need += packages
        if not shutil.which("make"):
            need.append("make")
    return list(dict.fromkeys(need))


def _sources_hash(src, cc):
    h = hashlib.sha256(cc.encode())
    for name in sorted(os.listdir(src)):
        if name.endswith((".c", ".h")) or name == "Makefile":
            with open(os.path.join(src, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def static_atsd(arch):
    """The static atsd for arch: built from its sources (source_dir) once per source version (cached),
    or the cached one (guest's initramfs, `atsdbench atsd`, a campaign of --runner atsd)."""
    if arch not in CROSS:
        raise UsageError(f"atsd is built for {', '.join(sorted(CROSS))}, not {arch}")
    d = os.path.join(cache_dir(), arch)
    os.makedirs(d, exist_ok=True)
    src = source_dir()
    if src is None:
        cached = os.path.join(d, "atsd")
        if os.path.exists(cached):
            return cached
        raise Missing(f"no atsd sources in this install (reinstall atsdbench) and no static atsd at {cached}")
    cc, packages = compiler(arch)
    if cc is None:
        raise Missing(f"the {arch} atsd needs apt-get install {' '.join(packages)}")
    if not shutil.which("make"):
        raise Missing(f"the {arch} atsd needs apt-get install make")
    path = os.path.join(d, f"atsd-{_sources_hash(src, cc)}")
    if not os.path.exists(path):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "atsd")
            p = subprocess.run(["make", "-s", "-C", src, f"CC={cc}", "LDFLAGS=-static", f"OUT={out}"],
                               capture_output=True, text=True)
            if p.returncode:
                lines = p.stderr.strip().splitlines() or ["?"]
                last = next((line for line in lines if "error" in line), lines[-1])
                raise UsageError(f"building the static {arch} atsd with {cc} failed: {last}")
            _install(out, path)
    _install(path, os.path.join(d, "atsd"))
    return path


def _install(src, dest):
    """Copy into the cache whole or not at all, also with several guests filling it at once."""
    tmp = f"{dest}.{os.getpid()}.tmp"
    shutil.copy(src, tmp)
    os.replace(tmp, dest)


def busybox(arch):
    """A static busybox for arch: cached, else the host's own (busybox-static, same arch), else
    Debian's busybox-static:ARCH fetched with apt-get download (no root needed once the arch's index
    is there)."""
    d = os.path.join(cache_dir(), arch)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "busybox")
    if os.path.exists(path):
        return path
    deb_arch = DEBIAN_ARCH[arch]
    for candidate in ("/bin/busybox", "/usr/bin/busybox"):
        if os.path.exists(candidate) and elf_arch(candidate) == (arch, True):
            _install(candidate, path)
            return path
    package = f"busybox-static:{deb_arch}"
    if shutil.which("apt-get") and shutil.which("dpkg-deb"):
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o777)  # apt's sandbox user writes the download
            p = subprocess.run(["apt-get", "download", "-qq", package], cwd=tmp, capture_output=True, text=True)
            debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
            if p.returncode == 0 and debs:
                subprocess.run(["dpkg-deb", "-x", os.path.join(tmp, debs[0]), os.path.join(tmp, "x")], check=True)
                found = os.path.join(tmp, "x", "bin", "busybox")
                if os.path.exists(found) and elf_arch(found) == (arch, True):
                    _install(found, path)
                    return path
    how = "" if deb_arch == DEBIAN_ARCH.get(host_arch()) else f"dpkg --add-architecture {deb_arch}; apt-get update; "
    raise Missing(f"guest needs {package} ({how}apt-get download {package}), or a static {arch} busybox at {path}")


def cpio(entries):
    """A newc cpio archive of [(name, mode, data or None for a directory)], with its trailer."""
    out, ino = [], 1
    for name, mode, data in entries + [("TRAILER!!!", 0, b"")]:
        data = data or b""
        raw = name.encode() + b"\0"
        header = "070701" + "".join(f"{v:08X}" for v in (
            ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(raw), 0))
        blob = header.encode() + raw
        blob += b"\0" * (-len(blob) % 4)
        blob += data + b"\0" * (-len(data) % 4)
        out.append(blob)
        ino += 1
    return b"".join(out)


def initramfs(arch):
    """The guest's base initramfs (cached by content): /init, busybox, atsd."""
    parts = {"busybox": open(busybox(arch), "rb").read(), "atsd": open(static_atsd(arch), "rb").read()}
    digest = hashlib.sha256(INIT.encode() + parts["busybox"] + parts["atsd"]).hexdigest()[:16]
    path = os.path.join(cache_dir(), arch, f"initramfs-{digest}.cpio")
    if not os.path.exists(path):
        dirs = [(d, 0o40755, None) for d in ("bin", "dev", "proc", "sys", "tmp", "etc")]
        files = [("init", 0o100755, INIT.encode()), ("bin/busybox", 0o100755, parts["busybox"]),
                 ("bin/atsd", 0o100755, parts["atsd"])]
        with open(f"{path}.{os.getpid()}.tmp", "wb") as f:
            f.write(cpio(dirs + files))
        os.replace(f"{path}.{os.getpid()}.tmp", path)
    return path


NEWC_MAGIC = (b"070701", b"070702")
# what the kernel decompresses (lib/decompress.c's magics), and python's decompressor for each it
# can check; the others are taken as they come (no claim about what they hold)
COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ", "xz"), (b"\x5d\x00\x00", "lzma"),
              (b"BZh", "bzip2"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"\x02\x21\x4c\x18", "lz4"), (b"\x89LZO", "lzo"))
HEX_FIELDS = re.compile(rb"[0-9A-Fa-f]{104}")  # a newc header's 13 fields, 8 hex digits each
PATH_MAX = 4096  # the kernel refuses a longer name


def _decompressor(kind):
    """Python's decompressor of one stream of `kind` (.decompress, .eof, .unused_data), or None."""
    import zlib

    if kind == "gzip":
        return zlib.decompressobj(wbits=31)
    try:
        if kind in ("xz", "lzma"):
            import lzma

            return lzma.LZMADecompressor(lzma.FORMAT_XZ if kind == "xz" else lzma.FORMAT_ALONE)
        if kind == "bzip2":
            import bz2

            return bz2.BZ2Decompressor()
    except ImportError:  # a Python built without it
        pass
    return None


class _Stream:
    """Bytes read in order, from a file or a decompressor, with what was read past a compressed
    stream's end put back for the next reader."""

    def __init__(self, chunks):
        self._chunks, self._buf, self.pos = chunks, bytearray(), 0

    def _fill(self, n):
        while len(self._buf) < n:
            chunk = next(self._chunks, b"")
            if not chunk:
                return
            self._buf += chunk

    def peek(self, n):
        self._fill(n)
        return bytes(self._buf[:n])

    def read(self, n):
        out = self.peek(n)
        del self._buf[:len(out)]
        self.pos += len(out)
        return out

    def skip(self, n):
        """Skip n bytes; how many there were."""
        done = 0
        while done < n:
            got = len(self.read(min(n - done, 1 << 20)))
            if not got:
                break
            done += got
        return done

    def skip_zeros(self):
        while self.peek(1) == b"\0":
            kept = self._buf.lstrip(b"\0")
            self.pos += len(self._buf) - len(kept)
            self._buf = bytearray(kept)

    def unread(self, data):
        self._buf[:0] = data
        self.pos -= len(data)


def _inflated(stream, d, kind, refuse):
    """The decompressed chunks of the one `kind` stream at the stream's position (d: its decompressor);
    what follows it is put back into the stream."""
    while not d.eof:
        data = stream.read(1 << 16)
        if not data:
            refuse(f"its {kind} data is cut off (it ends before the {kind} stream does)")
        try:
            out = d.decompress(data)
        except Exception as e:  # zlib.error, lzma.LZMAError, OSError: each module has its own
            refuse(f"its {kind} data is damaged ({e})")
        if d.eof:
            stream.unread(d.unused_data)
        if out:
            yield out


def _newc(stream, refuse, where):
    """One newc archive, from the header at the stream's position through its TRAILER!!! entry, as the
    kernel's init/initramfs.c reads it."""
    entries, last = 0, None
    while True:
        at = stream.pos
        head = stream.read(110)
        name = "its first entry" if entries == 0 else f"the entry after {last!r}"
        if len(head) < 110 and (entries or len(head) > 6):
            refuse(f"its cpio archive{where} is cut off in the header of {name} (at byte {at})")
        if len(head) < 110:
            refuse(f"its cpio archive{where} is the magic {head[:6].decode()} alone (no entry follows it)")
        if head[:6] not in NEWC_MAGIC:
            refuse(f"its cpio archive{where} has no newc header at byte {at} (after {last!r}): it ends "
                   "without its TRAILER!!! entry")
        if not HEX_FIELDS.fullmatch(head[6:]):
            refuse(f"its cpio archive{where} has a damaged header at byte {at} (fields not hex)")
        filesize, namesize = int(head[54:62], 16), int(head[94:102], 16)
        if not 1 <= namesize <= PATH_MAX:
            refuse(f"its cpio archive{where} has a damaged header at byte {at} (a name of {namesize} bytes)")
        raw = stream.read(namesize)
        if len(raw) < namesize or raw[-1:] != b"\0":
            refuse(f"its cpio archive{where} is cut off in the name of {name} (at byte {at})")
        last = raw[:-1].decode("utf-8", "replace")
        entries += 1
        padding = -(110 + namesize) % 4
        if last == "TRAILER!!!":
            stream.skip(padding)
            return
        want = padding + filesize + -filesize % 4
        if stream.skip(want) < want:
            refuse(f"its cpio archive{where} is cut off in {last!r} (its {filesize} bytes, from byte {at})")


def _archives(stream, refuse, inside=None):
    """Archives one after another, as the kernel unpacks them: newc cpio starting 4-aligned, zeros
    between them, and (outside a compressed one) compressed streams holding more.  Where a compression
    cannot be checked here, the rest is taken unchecked.  How many archives there were."""
    where = f" (in its {inside} data)" if inside else ""
    count = 0
    while True:
        stream.skip_zeros()
        head = stream.peek(6)
        if not head:
            return count
        if head in NEWC_MAGIC and stream.pos % 4 == 0:
            _newc(stream, refuse, where)
            count += 1
            continue
        kind = next((k for magic, k in COMPRESSED if head.startswith(magic)), None)
        if inside and not count:
            refuse(f"its {inside} data is not a cpio archive (it starts {head!r}, no newc header)")
        if inside:
            refuse(f"its {inside} data has bytes at {stream.pos}, after its cpio archive, that are neither zero "
                   "padding nor another cpio archive (the kernel's 'junk within compressed archive')")
        if kind is None and not count:
            refuse("is not a cpio archive (newc, as `cpio -o -H newc` writes it, or compressed with gzip, xz, "
                   "zstd, lz4, bzip2, lzo or lzma)")
        if kind is None:
            refuse(f"has bytes at {stream.pos}, after its archive, that are neither zero padding nor another "
                   "archive (the kernel's 'invalid magic at start of compressed archive')")
        d = _decompressor(kind)
        if d is None:
            return count + 1
        if not _archives(_Stream(_inflated(stream, d, kind, refuse)), refuse, kind):
            refuse(f"its {kind} data holds no cpio archive (it decompresses to nothing, or zeros only)")
        count += 1


def check_archive(path):
    """--initrd ARCHIVE: newc cpio archives, each whole through its TRAILER!!!, plain or compressed
    the ways the kernel decompresses (gzip, xz, lzma and bzip2 ones checked inside, the others taken
    unchecked), else one line saying what is wrong and where."""
    def refuse(what):
        raise UsageError(f"--initrd {path} {what}" if what.startswith("is ") else f"--initrd {path}: {what}")

    try:
        with open(path, "rb") as f:
            if not _archives(_Stream(iter(lambda: f.read(1 << 20), b"")), refuse):
                refuse("is empty (or zeros only): no cpio archive")
    except OSError as e:
        raise UsageError(f"--initrd {path}: {e.strerror}") from None


def check_module(path):
    """--module FILE.ko: a readable ELF file (the guest's insmod says the rest: a wrong kernel, a
    missing symbol), else one line."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise UsageError(f"--module {path}: {e.strerror}") from None
    if head != b"\x7fELF":
        raise UsageError(f"--module {path} is not a kernel module (no ELF header)")


def run_initramfs(base, runs, into, command=None, trace_buffer_kb=8192, archives=(), modules=()):
    """The guest's initrd: the added archives first (a root with Python, tools), then the base (so its
    /init, busybox and atsd win), then a small archive with the runs (etc/atsd/K.args, K.attrs,
    K.tracepoints), the command and the modules /init loads first (etc/atsd/modules/N-NAME.ko, in
    order).  The kernel unpacks them in turn."""
    files = [("etc", 0o40755, None), ("etc/atsd", 0o40755, None),
             ("etc/atsd/trace_buffer_kb", 0o100644, f"{trace_buffer_kb}\n".encode())]
    if modules:
        files.append(("etc/atsd/modules", 0o40755, None))
    for k, module in enumerate(modules, 1):
        with open(module, "rb") as f:
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(module))
            files.append((f"etc/atsd/modules/{k:02d}-{name}", 0o100644, f.read()))
    for k, run in enumerate(runs, 1):
        files += [(f"etc/atsd/{k}.args", 0o100644, (" ".join(run["words"]) + "\n").encode()),
                  (f"etc/atsd/{k}.attrs", 0o100644, (run["attrs"] + "\n").encode())]
        if run["tracepoints"]:
            files.append((f"etc/atsd/{k}.tracepoints", 0o100644, (",".join(run["tracepoints"]) + "\n").encode()))
    if command is not None:
        files.append(("etc/atsd/command", 0o100644, (command + "\n").encode()))
    path = os.path.join(into, "initramfs.cpio")
    with open(path, "wb") as f:
        for part in (*archives, base):
            with open(part, "rb") as b:
                shutil.copyfileobj(b, f)
            f.write(b"\0" * (-f.tell() % 4))  # the next archive starts 4-aligned, as the kernel reads them
        f.write(cpio(files))
    return path
