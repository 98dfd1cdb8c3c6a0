"""`atsdbench guest`: boot a kernel image under qemu and run the static `atsd` inside it.

The pieces: the machine table (qemu binary, its Debian package, machine options, console, kernel
arguments), image-format detection from the file's header (ELF vmlinux, x86 bzImage, arm64 Image),
the run options checked against the option table (csrc/atsd_options.h: what `atsd` accepts), the
static `atsd` and busybox for the guest's arch (built or fetched once, cached in ~/.cache/atsdbench/),
the initramfs (newc cpio written here, its /init is INIT below: the only one, scripts/power-check's guests
boot it too), the qemu command line, and the console: "@@ key value" lines and "@@ begin NAME attrs" ..
"@@ end NAME attrs" blocks, as INIT prints them, with what comes home from them (result files, traces, a
command's files).  Under emulation (TCG) the kernel's invalidation counts are its own; the rates are not.
"""
import base64
import gzip
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

from ..errors import UsageError

# name: arch, qemu binary, Debian package with it, machine options, console, extra kernel arguments
MACHINES = {
    "power9": {"arch": "ppc64le", "qemu": "qemu-system-ppc64", "package": "qemu-system-ppc",
               "options": ["-M", "pseries", "-cpu", "power9"], "console": "hvc0", "append": ""},
    "power9-hash": {"arch": "ppc64le", "qemu": "qemu-system-ppc64", "package": "qemu-system-ppc",
                    "options": ["-M", "pseries", "-cpu", "power9"], "console": "hvc0", "append": "disable_radix"},
    "power8": {"arch": "ppc64le", "qemu": "qemu-system-ppc64", "package": "qemu-system-ppc",
               "options": ["-M", "pseries", "-cpu", "power8"], "console": "hvc0", "append": ""},
    "x86_64": {"arch": "x86_64", "qemu": "qemu-system-x86_64", "package": "qemu-system-x86",
               "options": [], "console": "ttyS0", "append": ""},
    "aarch64": {"arch": "aarch64", "qemu": "qemu-system-aarch64", "package": "qemu-system-arm",
                "options": ["-M", "virt", "-cpu", "max"], "console": "ttyAMA0", "append": ""},
}
DEFAULT_MACHINE = {"ppc64le": "power9", "x86_64": "x86_64", "aarch64": "aarch64"}
DEBIAN_ARCH = {"ppc64le": "ppc64el", "x86_64": "amd64", "aarch64": "arm64"}
# arch: cross compiler, its Debian packages
CROSS = {"ppc64le": ("powerpc64le-linux-gnu-gcc", ["gcc-powerpc64le-linux-gnu", "libc6-dev-ppc64el-cross"]),
         "x86_64": ("x86_64-linux-gnu-gcc", ["gcc-x86-64-linux-gnu", "libc6-dev-amd64-cross"]),
         "aarch64": ("aarch64-linux-gnu-gcc", ["gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"])}
ELF_MACHINES = {21: "ppc64", 62: "x86_64", 183: "aarch64"}  # e_machine

# /init: busybox only, the one /init of every guest.  Prints the guest's facts, then for each run K of
# /etc/atsd/ (K.args: atsd's words, K.attrs: the same as name=value for the markers, K.tracepoints: tracefs
# events recorded around that run) atsd's output and table between markers, each trace gzip+base64; then
# the command of /etc/atsd/command (output streamed, the files it leaves in /out gzip+base64), and powers off.
# Its own steps use busybox (PATH=/bin); the command sees an added root's tools first.
INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
dmesg -n 1
echo "@@ guest"
echo "@@ release $(uname -r)"
echo "@@ uname_m $(uname -m)"
grep -E '^(cpu|MMU|platform|model name)[[:space:]]*:' /proc/cpuinfo | sort -u | sed 's/^/@@ cpuinfo /'
echo "@@ page_size $(awk '/^KernelPageSize/ {print $2 * 1024; exit}' /proc/self/smaps)"
for d in /sys/kernel/debug/powerpc /sys/kernel/debug/x86 /sys/kernel/debug; do
	[ -r $d/tlb_single_page_flush_ceiling ] && echo "@@ ceiling $(cat $d/tlb_single_page_flush_ceiling)" && break
done
[ -r /sys/kernel/debug/powerpc/tlb_local_single_page_flush_ceiling ] &&
	echo "@@ local_ceiling $(cat /sys/kernel/debug/powerpc/tlb_local_single_page_flush_ceiling)"
T=/sys/kernel/tracing
k=1
while [ -f /etc/atsd/$k.args ]; do
	attrs="run=$k $(cat /etc/atsd/$k.attrs)"
	echo "@@ running run=$k"
	traced=
	[ -f /etc/atsd/$k.tracepoints ] && traced=1
	if [ -n "$traced" ]; then
		events=
		for e in $(tr , ' ' </etc/atsd/$k.tracepoints); do
			[ -d "$T/events/$e" ] && events="$events $e"
		done
		{ echo 0 >$T/tracing_on; cat /etc/atsd/trace_buffer_kb >$T/buffer_size_kb; echo >$T/trace; } 2>/dev/null
		for e in $events; do echo 1 >"$T/events/$e/enable"; done
		echo 1 >$T/tracing_on 2>/dev/null
	fi
	atsd $(cat /etc/atsd/$k.args) -o /tmp/out.txt </dev/null >/tmp/atsd.table 2>/tmp/atsd.log
	rc=$?
	if [ -n "$traced" ]; then
		echo 0 >$T/tracing_on 2>/dev/null
		for e in $events; do echo 0 >"$T/events/$e/enable"; done
	fi
	echo "@@ begin atsd $attrs"
	cat /tmp/out.txt 2>/dev/null
	echo "@@ end atsd rc=$rc"
	echo "@@ begin table $attrs"
	cat /tmp/atsd.table
	echo "@@ end table"
	[ $rc = 0 ] || sed 's/^/@@ atsd-error /' /tmp/atsd.log
	if [ -n "$traced" ]; then
		lost=$(cat $T/per_cpu/cpu*/stats 2>/dev/null | awk '/^(overrun|dropped events):/ {n += $NF} END {print n + 0}')
		echo "@@ begin trace $attrs events=$(echo $events | tr ' ' ,)"
		grep -v '^#' $T/trace 2>/dev/null | gzip -c | base64
		echo "@@ end trace rc=$rc overrun=$lost"
		echo >$T/trace 2>/dev/null
	fi
	rm -f /tmp/out.txt
	k=$((k + 1))
done
if [ -f /etc/atsd/command ]; then
	mkdir -p /out
	echo "@@ running command"
	echo "@@ begin command"
	(cd /tmp && OUT=/out PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/sh /etc/atsd/command) </dev/null 2>&1
	echo "@@ end command rc=$?"
	(cd /out && find . -type f) | sed 's|^\./||' | while read -r f; do
		case "$f" in *[!A-Za-z0-9_+./-]*) echo "@@ skipped-file $f"; continue ;; esac
		echo "@@ begin file path=$f"
		gzip -c "/out/$f" | base64
		echo "@@ end file"
	done
fi
echo "@@ begin kernel-log"
dmesg | grep -v -E 'Kernel command line|Command line:' | grep -E 'BUG|Oops|WARNING|Call Trace|Kernel panic' | head -20
echo "@@ end kernel-log"
echo "@@ done"
poweroff -f
"""


class Missing(UsageError):
    """A piece the guest needs is not on this machine: the message names the Debian package."""


# ---- images ----

def detect_image(path):
    """(arch, format) of a kernel image, from its header: ELF vmlinux (ppc64le), bzImage (x86_64),
    arm64 Image (plain or gzip).  UsageError naming what it is otherwise."""
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
            raise UsageError(f"--kernel {path} is an ELF file but not a Linux kernel (no 'Linux version' banner)")
        if kind == "ppc64" and little:
            return "ppc64le", "vmlinux"
        if kind == "ppc64":
            raise UsageError(f"--kernel {path} is a big-endian ppc64 kernel; guest boots ppc64le (little-endian)")
        if kind == "x86_64":
            raise UsageError(f"--kernel {path} is an x86_64 vmlinux (ELF): give the bzImage (arch/x86/boot/bzImage "
                             "or /boot/vmlinuz-*)")
        if kind == "aarch64":
            raise UsageError(f"--kernel {path} is an arm64 vmlinux (ELF): give the Image (arch/arm64/boot/Image)")
        raise UsageError(f"--kernel {path} is an ELF kernel for machine {machine}, which guest does not boot")
    if head[0x202:0x206] == b"HdrS":
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
    raise UsageError(f"--kernel {path} is not a kernel image (no ELF vmlinux, bzImage or arm64 Image header)")


def _has_linux_banner(path):
    import mmap

    with open(path, "rb") as f:
        try:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                return m.find(b"Linux version ") >= 0
        except ValueError:  # empty
            return False


def bzimage_version(path):
    """The version string a bzImage carries in its setup header (without booting), or None."""
    with open(path, "rb") as f:
        head = f.read(0x10000)
    if head[0x202:0x206] != b"HdrS":
        return None
    offset = struct.unpack_from("<H", head, 0x20E)[0] + 0x200
    text = head[offset:offset + 256].split(b"\0")[0].decode("ascii", "replace")
    return text.split()[0] if text else None


def choose_machine(arch, machine, path):
    """The machine asked for (checked against the image's arch), or the arch's default."""
    if machine is None:
        return DEFAULT_MACHINE[arch]
    if machine not in MACHINES:
        raise UsageError(f"--machine must be one of {', '.join(MACHINES)} (got {machine!r})")
    if MACHINES[machine]["arch"] != arch:
        raise UsageError(f"--kernel {path} is {'an' if arch[0] in 'ax' else 'a'} {arch} kernel; --machine {machine} boots "
                         f"{MACHINES[machine]['arch']}")
    return machine


# ---- run options ----

def sleeps(runs, gap, rounds, spread):
    """The least time one run's sleeps take, whatever its passes cost: each sub-run paces its measured
    rounds over --spread (the last starts (rounds - 1) / rounds of it in), and each sub-run starts
    at least --gap after the one before (plan.next_sub_run_start)."""
    from . import core

    return core.least_sleep(runs, gap, rounds, spread)


def split_runs(words):
    """The words after guest's `--`: one list per run, each further `--` starting another."""
    runs = [[]]
    for word in words:
        if word == "--":
            runs.append([])
        else:
            runs[-1].append(word)
    return runs


TRACEPOINT = re.compile(r"[A-Za-z0-9_]+[/:][A-Za-z0-9_]+")


def tracepoints(value):
    """--tracepoints EVENT,...: tracefs names (SUBSYSTEM/EVENT; perf's SUBSYSTEM:EVENT taken too)."""
    names = value.split(",")
    for name in names:
        if not TRACEPOINT.fullmatch(name):
            raise UsageError(f"--tracepoints {value!r}: each tracepoint is SUBSYSTEM/EVENT as tracefs names it "
                             f"(powerpc/tlbie, tlb/tlb_flush, syscalls/sys_enter_mprotect); got {name!r}")
    return list(dict.fromkeys(n.replace(":", "/") for n in names))


def check_run(argv, options):
    """One run's words: atsd's options (check_run_options) and guest's own --tracepoints EVENT,...
    Returns (checked, tracepoints or None)."""
    rest, events, i = [], None, 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--tracepoints" or word.startswith("--tracepoints="):
            value = word.partition("=")[2] if "=" in word else (argv[i] if i < len(argv) else None)
            if "=" not in word:
                i += 1
            if not value:
                raise UsageError("--tracepoints needs a value (EVENT,...: tracefs names such as powerpc/tlbie)")
            events = (events or []) + [e for e in tracepoints(value) if e not in (events or [])]
        else:
            rest.append(word)
    return check_run_options(rest, options), events


def check_run_options(argv, options):
    """The options of one run, checked against the option table: only what `atsd` accepts, each flag
    alone and each valued option with its value.  Returns [(option dict, value or None)]."""
    by_long = {o["name"]: o for o in options}
    by_short = {o["short"]: o for o in options if o["short"]}
    out, i = [], 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            o = by_long.get(name)
            shown = f"--{name}"
        elif word.startswith("-") and len(word) > 1:
            o, eq, value = by_short.get(word[1]), "", word[2:]
            eq = "=" if value else ""
            shown = word[:2]
        else:
            raise UsageError(f"run option {word!r} is not an option (atsd takes no file names)")
        if o is None:
            raise UsageError(f"atsd has no option {shown} (atsd -h lists them)")
        if o["name"] == "output":
            raise UsageError(f"{shown} is guest's own: it names the result files (-o DIR before --)")
        if not o["atsd"]:
            hint = "; --tracepoints EVENT,... records tracepoints in the guest" if o["field"] == "trace" else ""
            raise UsageError(f"{shown} is `atsdbench run`'s only: the standalone atsd has no {shown}{hint}")
        if o["metavar"] is None:
            if eq:
                raise UsageError(f"{shown} takes no value (got {value!r})")
            out.append((o, None))
            continue
        if not eq:
            if o["const"] is not None and (i >= len(argv) or argv[i].startswith("-")):
                out.append((o, None))
                continue
            if i >= len(argv):
                raise UsageError(f"{shown} needs a value ({o['metavar']})")
            value = argv[i]
            i += 1
        out.append((o, value))
    return out


def atsd_words(checked):
    """The checked options as atsd's command line (--name=value words: no spaces to quote)."""
    words = []
    for o, value in checked:
        if value is not None and any(c.isspace() for c in value):
            raise UsageError(f"--{o['name']} {value!r}: values with spaces do not reach the guest's atsd")
        words.append(f"--{o['name']}" if value is None else f"--{o['name']}={value}")
    return words


def run_attrs(checked, events=None):
    """The run's options as name=value words, for the console's markers (power_verdict reads size and
    bystanders from them)."""
    words = [f"{o['name']}={value if value is not None else o['const']}" for o, value in checked]
    return " ".join(words + ([f"tracepoints={','.join(events)}"] if events else []))


# ---- the pieces ----

def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "atsdbench")


def host_arch():
    import platform

    m = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def source_dir():
    """csrc/ of this checkout (atsd's sources; $ATSDBENCH_CSRC names another), or of the working directory."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for d in (os.environ.get("ATSDBENCH_CSRC") or os.path.join(here, "csrc"), os.path.join(os.getcwd(), "csrc")):
        if os.path.isfile(os.path.join(d, "atsd_main.c")):
            return d
    return None


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
    """The static atsd for arch: built from csrc/ once per source version (cached), or the cached one."""
    d = os.path.join(cache_dir(), arch)
    os.makedirs(d, exist_ok=True)
    src = source_dir()
    if src is None:
        cached = os.path.join(d, "atsd")
        if os.path.exists(cached):
            return cached
        raise Missing(f"guest needs atsd's sources (csrc/ of the atsdbench checkout; run from it) or a static "
                      f"atsd at {cached}")
    cc, packages = compiler(arch)
    if cc is None:
        raise Missing(f"guest needs {' '.join(packages)} (apt-get install {' '.join(packages)})")
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


ARCHIVE_MAGIC = (b"070701", b"070702", b"\x1f\x8b", b"\xfd7zXZ", b"\x28\xb5\x2f\xfd", b"\x02\x21\x4c\x18", b"BZh",
                 b"\x89LZO", b"\x5d\x00\x00")  # newc cpio, or gzip, xz, zstd, lz4, bzip2, lzo, lzma around one


def check_archive(path):
    """--initrd ARCHIVE: a newc cpio (or one the kernel decompresses), else one line."""
    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError as e:
        raise UsageError(f"--initrd {path}: {e.strerror}") from None
    if not head.startswith(ARCHIVE_MAGIC):
        raise UsageError(f"--initrd {path} is not a cpio archive (newc, as `cpio -o -H newc` writes it, or "
                         "compressed with gzip, xz, zstd, lz4, bzip2, lzo or lzma)")


def run_initramfs(base, runs, into, command=None, trace_buffer_kb=8192, archives=()):
    """The guest's initrd: the added archives first (a root with Python, tools), then the base (so its
    /init, busybox and atsd win), then a small archive with the runs (etc/atsd/K.args, K.attrs,
    K.tracepoints) and the command.  The kernel unpacks them in turn."""
    files = [("etc", 0o40755, None), ("etc/atsd", 0o40755, None),
             ("etc/atsd/trace_buffer_kb", 0o100644, f"{trace_buffer_kb}\n".encode())]
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


# ---- qemu ----

def qemu_command(machine, kernel, initrd, console_log, smp=2, mem="2G", append="", accel="tcg"):
    """The qemu command line of one guest: its console to console_log, no display, no network, no reboot."""
    spec = MACHINES[machine]
    options = list(spec["options"])
    if accel == "kvm" and "-cpu" in options:
        options[options.index("-cpu") + 1] = "host"
    elif accel == "kvm":
        options += ["-cpu", "host"]
    args = " ".join(a for a in (f"console={spec['console']}", "quiet", "panic=-1", spec["append"], append) if a)
    return [spec["qemu"], *options, "-accel", accel, "-m", str(mem), "-smp", str(smp), "-display", "none",
            "-nodefaults", "-monitor", "none", "-serial", f"file:{console_log}", "-no-reboot",
            "-kernel", kernel, "-initrd", initrd, "-append", args]


def boot(cmd, console_log, timeout, progress=None):
    """Run qemu until the guest powers off or timeout seconds pass (then it is killed).
    Returns (qemu's exit status or None when killed, seconds, qemu's own messages)."""
    start = time.monotonic()
    stage = "booting"
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        try:
            while True:
                try:
                    rc = p.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    pass
                elapsed = time.monotonic() - start
                if elapsed > timeout:
                    p.kill()
                    p.wait()
                    rc = None
                    break
                if progress:
                    stage = _stage(console_log, stage)
                    progress(stage, elapsed)
        except BaseException:
            p.kill()
            p.wait()
            raise
        err.seek(0)
        return rc, time.monotonic() - start, err.read()


def _stage(console_log, stage):
    try:
        with open(console_log, "rb") as f:
            text = f.read()
    except OSError:
        return stage
    if b"@@ done" in text:
        return "done"
    at = text.rfind(b"@@ running")
    if at >= 0:
        what = text[at + 11:].split(b"\n", 1)[0].strip().decode("ascii", "replace")
        return f"running atsd ({what.replace('=', ' ')})" if what.startswith("run=") else f"running the {what}"
    return stage


# ---- the console ----

def parse_console(text):
    """Values ("@@ key value"), blocks ("@@ begin name attrs" .. "@@ end name attrs") and atsd errors,
    from a console log (kernel messages and \\r between them are ignored)."""
    values, blocks, errors, block = {}, [], [], None
    for raw in text.replace("\r", "").split("\n"):
        at = raw.find("@@ ")
        line = raw[at + 3:] if at >= 0 else None
        if block is not None:
            if line is not None and line.startswith(f"end {block['name']}"):
                words = line.split(None, 2)
                block["end"] = attrs(words[2] if len(words) > 2 else "")
                blocks.append(block)
                block = None
            else:
                block["lines"].append(raw)
            continue
        if line is None:
            continue
        key, _, rest = line.partition(" ")
        if key == "begin":
            name, _, rest = rest.partition(" ")
            block = {"name": name, "attrs": attrs(rest), "lines": [], "end": None}
        elif key == "atsd-error":
            errors.append(rest)
        elif key == "cpuinfo":
            k, _, v = rest.partition(":")
            values[k.strip()] = v.strip()
        else:
            values[key] = rest.strip()
    return values, blocks, errors  # a block cut off before its end line is left out


def attrs(text):
    return dict(part.split("=", 1) for part in text.split() if "=" in part)


def tail(text, lines=8):
    """The console's last lines, for a guest that hung or failed."""
    kept = [line.rstrip() for line in text.replace("\r", "").split("\n") if line.strip()]
    return kept[-lines:]


def _end(text):
    return "; console tail:\n  " + "\n  ".join(tail(text) or ["(nothing)"])


def reached_init(text, qemu_rc=0, timeout=None, qemu_messages=""):
    """The guest's values ("@@ key value") once its /init ran, or UsageError: it hung before, or the kernel
    never got there (qemu's own last message with it)."""
    values, _, _ = parse_console(text)
    if "guest" in values:
        return values
    if qemu_rc is None:
        raise UsageError(f"the guest hung: killed after {timeout:g} s" + _end(text))
    qemu = (tail(qemu_messages, 1) or [""])[0]
    raise UsageError(f"the kernel did not reach /init (qemu exit {qemu_rc}{': ' + qemu if qemu else ''})" + _end(text))


def _segment(text, run):
    """The console lines of one run: from its "@@ running run=K" to the next "@@ running" or the kernel log
    (a console without the markers, from an older /init, is one run)."""
    lines = text.replace("\r", "").split("\n")
    marks = [i for i, line in enumerate(lines) if "@@ running" in line or "@@ begin kernel-log" in line]
    start = next((i for i in marks if lines[i].split("@@ running", 1)[-1].split() == [f"run={run}"]), None)
    if start is None:
        return text if run == 1 and not any("@@ running run=" in line for line in lines) else ""
    end = next((i for i in marks if i > start), len(lines))
    return "\n".join(lines[start:end])


def unpack(block):
    """The bytes of a gzip+base64 block, or None where they came back damaged."""
    try:
        return gzip.decompress(base64.b64decode("".join(block["lines"])))
    except (ValueError, OSError, EOFError):
        return None


def run_output(text, run=1, qemu_rc=0, timeout=None):
    """Run `run`'s atsd output, its table and its trace, from one guest's console: {"output", "table",
    "trace": None (not traced) or {"text" (None: it came back damaged), "events" (those the kernel has),
    "lost"}}, or UsageError saying in one line what went wrong (the console's tail after it)."""
    segment = _segment(text, run)
    _, blocks, errors = parse_console(segment)
    found = [b for b in blocks if b["name"] == "atsd"]
    if not found or found[0]["end"] is None:
        if qemu_rc is None:
            raise UsageError(f"the guest hung: killed after {timeout:g} s" + _end(text))
        raise UsageError("the guest stopped before atsd's output was complete" + _end(segment or text))
    b = found[0]
    if b["end"].get("rc") != "0":
        why = errors[0] if errors else f"exit {b['end'].get('rc')}"
        raise UsageError(f"atsd in the guest failed: {why}" + _end(segment))
    table = next((bl["lines"] for bl in blocks if bl["name"] == "table"), [])
    trace = None
    if "tracepoints" in b["attrs"]:
        t = next((bl for bl in blocks if bl["name"] == "trace"), None)
        data = unpack(t) if t is not None and t["end"] is not None else None
        lost = (t["end"] or {}).get("overrun", "0") if t is not None else "0"
        trace = {"text": None if data is None else data.decode("utf-8", "replace"),
                 "lost": int(lost) if lost.isdigit() else 0,
                 "events": [e for e in t["attrs"].get("events", "").split(",") if e] if t is not None else []}
    return {"output": "\n".join(b["lines"]) + "\n", "table": "\n".join(table), "trace": trace}


def atsd_output(text, qemu_rc=0, timeout=None, qemu_messages=""):
    """(values, atsd's output text, its table) of the first run of one guest's console (UsageError as
    reached_init and run_output say)."""
    values = reached_init(text, qemu_rc, timeout, qemu_messages)
    run = run_output(text, 1, qemu_rc, timeout)
    return values, run["output"], run["table"]


SAFE_PATH = re.compile(r"[A-Za-z0-9_+.-]+(/[A-Za-z0-9_+.-]+)*")  # INIT sends no other names


def command_output(text, qemu_rc=0, timeout=None):
    """The command's exit status, its output, the files it left in /out ({path: bytes}) and the ones that
    did not come back (names with other characters, damaged); UsageError where it did not finish."""
    _, blocks, _ = parse_console(text)
    found = [b for b in blocks if b["name"] == "command"]
    if not found:
        if qemu_rc is None:
            raise UsageError(f"the guest hung: killed after {timeout:g} s before the command finished" + _end(text))
        raise UsageError("the guest stopped before the command finished" + _end(text))
    files = {}
    left = [raw.split("@@ skipped-file ", 1)[1].strip() for raw in text.replace("\r", "").split("\n")
            if "@@ skipped-file " in raw]  # names the markers cannot carry
    for b in blocks:
        if b["name"] != "file":
            continue
        path = b["attrs"].get("path", "")
        data = unpack(b) if b["end"] is not None else None
        if not SAFE_PATH.fullmatch(path) or ".." in path.split("/") or data is None:
            left.append(path or "?")
        else:
            files[path] = data
    if qemu_rc is None or "done" not in parse_console(text)[0]:
        left.append("(the guest stopped before every file came back)")
    return int(found[0]["end"].get("rc", "1")), "\n".join(found[0]["lines"]) + "\n", files, left


def result_name(release, machine, arch):
    """KERNEL-RELEASE.json, with -MACHINE where the machine is not the arch's default."""
    safe = "".join(c if c.isalnum() or c in "._+-" else "_" for c in release) or "unknown"
    return f"{safe}.json" if DEFAULT_MACHINE[arch] == machine else f"{safe}-{machine}.json"


KVM_DEVICE = "/dev/kvm"
KVM_GET_API_VERSION = 0xAE00  # _IO(KVMIO, 0x00), linux/kvm.h
KVM_API_VERSION = 12


def kvm_problem(device=None):
    """Why KVM cannot be used here, in words, or None: the device opens read-write and answers
    KVM_GET_API_VERSION with the version qemu speaks.  (A KVM that opens but cannot run a guest, as on
    the VM this was written on, is only seen when qemu starts.)"""
    import errno
    import fcntl

    device = device or KVM_DEVICE
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENOENT:
            return (f"{device}: no such device (no KVM on this machine: the kvm module is not loaded, or a VM "
                    "without nested virtualization); leave --accel out for emulation (TCG)")
        if e.errno in (errno.EACCES, errno.EPERM):
            return f"{device}: permission denied (join its group, often kvm, or leave --accel out for TCG)"
        return f"{device}: {e.strerror}"
    try:
        version = fcntl.ioctl(fd, KVM_GET_API_VERSION)
    except OSError as e:
        return f"{device} is not a KVM device (KVM_GET_API_VERSION: {e.strerror})"
    finally:
        os.close(fd)
    if version != KVM_API_VERSION:
        return f"{device} speaks KVM API {version}, qemu speaks {KVM_API_VERSION}"
    return None


def accel_name(accel):
    return "kvm" if accel == "kvm" else "qemu-tcg"


def tty_progress(label):
    """A one-line progress report on stderr, only on a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(stage, elapsed):
        sys.stderr.write(f"\r{'':70}\r{label}: {stage}, {elapsed:.0f} s")
        sys.stderr.flush()
    return show
