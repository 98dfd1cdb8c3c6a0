"""A kernel image for `atsdbench guest`, from its header: which arch and format it is (ELF vmlinux for
ppc64le, bzImage for x86_64, arm64 Image), whether it is whole (a truncated file is refused before it
boots), the version a bzImage carries, and the machine to boot it on."""
import gzip
import os
import struct

from ..errors import UsageError
from .qemu import DEFAULT_MACHINE, MACHINES

ELF_MACHINES = {21: "ppc64", 62: "x86_64", 183: "aarch64"}  # e_machine


def detect_image(path):
    """(arch, format) of a kernel image, from its header: ELF vmlinux (ppc64le), bzImage (x86_64),
    arm64 Image (plain or gzip).  UsageError naming what it is otherwise, or what is missing from a
    vmlinux or bzImage cut off short (qemu would boot it into a silent hang)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise UsageError(f"--kernel {path}: {e.strerror}") from None
    if head[:4] == b"\x7fELF":
        if len(head) < 20:
            raise UsageError(f"--kernel {path} is not a kernel image (a truncated ELF file)")
        little = head[5] == 1
        machine = struct.unpack_from("<H" if little else ">H", head, 18)[0]
        kind = ELF_MACHINES.get(machine)
        if not _has_linux_banner(path):
            raise UsageError(f"--kernel {path} is an ELF file but not a Linux kernel (no 'Linux version')")
        if kind == "ppc64" and little:
            _elf_whole(path)
            return "ppc64le", "vmlinux"
        if kind == "ppc64":
            raise UsageError(f"--kernel {path} is a big-endian ppc64 kernel; guest boots ppc64le")
        if kind == "x86_64":
            raise UsageError(f"--kernel {path} is an x86_64 vmlinux (ELF): give the bzImage")
        if kind == "aarch64":
            raise UsageError(f"--kernel {path} is an arm64 vmlinux (ELF): give the Image")
        raise UsageError(f"--kernel {path} is an ELF kernel for machine {machine}, which guest does not boot")
    if head[0x202:0x206] == b"HdrS":
        short = bzimage_short(path)
        if short:
            raise UsageError(f"--kernel {path} is cut off: header says {short[1]} bytes, file has {short[0]}")
        return "x86_64", "bzImage"
    if head[0x38:0x3C] == b"ARM\x64":
        return "aarch64", "Image"
    if head[:2] == b"MZ" and head[4:8] == b"zimg":
        return "aarch64", "EFI zboot"
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as f:
                inner = f.read(64)
        except (OSError, EOFError):
            inner = b""
        if inner[0x38:0x3C] == b"ARM\x64":
            return "aarch64", "Image.gz"
    raise UsageError(f"--kernel {path} is not a kernel image (no vmlinux, bzImage or arm64 Image)")


def bzimage_short(path):
    """(bytes there, bytes its setup header says) of a bzImage cut short (a copy or download that
    stopped), else None.  The x86 boot protocol (Documentation/arch/x86/boot.rst): setup_sects (0 is 4)
    512-byte sectors after the boot sector, then syssize 16-byte paragraphs of kernel; a signed one
    has more after them, never less.  Before protocol 2.04 syssize was 16 bits: no check."""
    with open(path, "rb") as f:
        head = f.read(0x210)
        have = os.fstat(f.fileno()).st_size
    if len(head) < 0x210 or head[0x202:0x206] != b"HdrS" or struct.unpack_from("<H", head, 0x206)[0] < 0x204:
        return None
    want = ((head[0x1F1] or 4) + 1) * 512 + struct.unpack_from("<I", head, 0x1F4)[0] * 16
    return (have, want) if have < want else None


def _elf_whole(path):
    """Every program header's bytes (what qemu's loader copies into the guest) lie within the file."""
    size = os.stat(path).st_size
    with open(path, "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[4] != 2:  # not ELF64: nothing here to check
            return
        e = "<" if head[5] == 1 else ">"
        phoff, = struct.unpack_from(e + "Q", head, 32)
        phentsize, phnum = struct.unpack_from(e + "HH", head, 54)
        end = phoff + phentsize * phnum
        if phnum and (phentsize < 56 or end > size):
            raise UsageError(f"--kernel {path} is cut off: its ELF program headers end at {end}")
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for k in range(phnum):
        kind, = struct.unpack_from(e + "I", table, k * phentsize)
        offset, = struct.unpack_from(e + "Q", table, k * phentsize + 8)
        filesz, = struct.unpack_from(e + "Q", table, k * phentsize + 32)
        if kind and filesz and offset + filesz > size:
            raise UsageError(f"--kernel {path} is cut off: ELF segment {k} ends at byte {offset + filesz}, file "
                             f"has {size}")


def _has_linux_banner(path):
    import mmap

    with open(path, "rb") as f:
        try:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                return m.find(b"Linux version ") >= 0
        except ValueError:  # empty
            return False


def choose_machine(arch, machine, path):
    """The machine asked for (checked against the image's arch), or the arch's default."""
    if machine is None:
        return DEFAULT_MACHINE[arch]
    if machine not in MACHINES:
        raise UsageError(f"--machine must be one of {', '.join(MACHINES)} (got {machine!r})")
    if MACHINES[machine]["arch"] != arch:
        raise UsageError(f"--kernel {path} is {'an' if arch[0] in 'ax' else 'a'} {arch} kernel; --machine "
                         f"{machine} boots {MACHINES[machine]['arch']}")
    return machine


def elf_arch(path):
    """'ppc64le', 'x86_64', 'aarch64' of an ELF file, and whether it is static (no PT_INTERP)."""
    with open(path, "rb") as f:
        data = f.read(1 << 16)
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return None, False
    e = "<" if data[5] == 1 else ">"
    machine = struct.unpack_from(e + "H", data, 18)[0]
    phoff, = struct.unpack_from(e + "Q", data, 32)
    phentsize, phnum = struct.unpack_from(e + "HH", data, 54)
    static = True
    for k in range(phnum):
        at = phoff + k * phentsize
        if at + 4 <= len(data) and struct.unpack_from(e + "I", data, at)[0] == 3:  # PT_INTERP
            static = False
    arch = {21: "ppc64le" if e == "<" else "ppc64", 62: "x86_64", 183: "aarch64"}.get(machine)
    return arch, static
