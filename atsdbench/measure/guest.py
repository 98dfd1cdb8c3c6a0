"""`atsdbench guest`: boot a kernel image under qemu and run the static `atsd` inside it.

The pieces: the machine table (qemu binary, its Debian package, machine options, console, kernel
arguments), image-format detection from the file's header (ELF vmlinux, x86 bzImage, arm64 Image),
the run options checked against the option table (csrc/atsd_options.h: what `atsd` accepts), the
static `atsd` and busybox for the guest's arch (built or fetched once, cached in ~/.cache/atsdbench/),
the initramfs (newc cpio written here, its /init is INIT below), the qemu command line, and the
console: "@@ key value" lines and "@@ begin NAME" .. "@@ end NAME attrs" blocks, as scripts/power-init.sh
prints them.  Under emulation (TCG) the kernel's invalidation counts are its own; the rates are not.
"""
import gzip
import hashlib
import os
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

# /init: busybox only.  Prints the guest's facts, runs atsd with the options in /etc/atsd.args, prints
# its output between markers, and powers off.
INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
dmesg -n 1
echo "@@ guest"
echo "@@ release $(uname -r)"
echo "@@ uname_m $(uname -m)"
grep -E '^(cpu|MMU|platform|model name)[[:space:]]*:' /proc/cpuinfo | sort -u | sed 's/^/@@ cpuinfo /'
for d in /sys/kernel/debug/powerpc /sys/kernel/debug/x86 /sys/kernel/debug; do
	[ -r $d/tlb_single_page_flush_ceiling ] && echo "@@ ceiling $(cat $d/tlb_single_page_flush_ceiling)" && break
done
[ -r /sys/kernel/debug/powerpc/tlb_local_single_page_flush_ceiling ] &&
	echo "@@ local_ceiling $(cat /sys/kernel/debug/powerpc/tlb_local_single_page_flush_ceiling)"
echo "@@ running"
atsd $(cat /etc/atsd.args) -o /tmp/out.txt >/tmp/atsd.table 2>/tmp/atsd.log
rc=$?
echo "@@ begin atsd"
cat /tmp/out.txt 2>/dev/null
echo "@@ end atsd rc=$rc"
echo "@@ begin table"
cat /tmp/atsd.table
echo "@@ end table"
[ $rc = 0 ] || sed 's/^/@@ atsd-error /' /tmp/atsd.log
echo "@@ begin kernel-log"
dmesg | grep -E 'BUG|Oops|WARNING|Call Trace|panic' | head -20
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

def check_run_options(argv, options):
    """The options after `--`, checked against the option table: only what `atsd` accepts, each flag
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
            raise UsageError(f"{shown} is `atsdbench run`'s only: the standalone atsd has no {shown}")
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
            shutil.copy(out, path + ".tmp")
            os.replace(path + ".tmp", path)
    shutil.copy(path, os.path.join(d, "atsd.tmp"))
    os.replace(os.path.join(d, "atsd.tmp"), os.path.join(d, "atsd"))
    return path


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
            shutil.copy(candidate, path + ".tmp")
            os.replace(path + ".tmp", path)
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
                    shutil.copy(found, path + ".tmp")
                    os.replace(path + ".tmp", path)
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
        with open(path + ".tmp", "wb") as f:
            f.write(cpio(dirs + files))
        os.replace(path + ".tmp", path)
    return path


def run_initramfs(base, words, into):
    """The base initramfs followed by a small archive holding /etc/atsd.args (the kernel unpacks both)."""
    path = os.path.join(into, "initramfs.cpio")
    with open(path, "wb") as f:
        with open(base, "rb") as b:
            shutil.copyfileobj(b, f)
        f.write(cpio([("etc", 0o40755, None), ("etc/atsd.args", 0o100644, (" ".join(words) + "\n").encode())]))
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
    if b"@@ running" in text:
        return "running atsd"
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


def atsd_output(text, qemu_rc=0, timeout=None, qemu_messages=""):
    """(values, atsd's output text, its table) from one guest's console, or UsageError saying in one
    line what went wrong, the console's tail after it."""
    values, blocks, errors = parse_console(text)
    end = "; console tail:\n  " + "\n  ".join(tail(text) or ["(nothing)"])
    if qemu_rc is None:
        raise UsageError(f"the guest hung: killed after {timeout:g} s" + end)
    if "guest" not in values:
        qemu = (tail(qemu_messages, 1) or [""])[0]
        raise UsageError(f"the kernel did not reach /init (qemu exit {qemu_rc}{': ' + qemu if qemu else ''})" + end)
    found = [b for b in blocks if b["name"] == "atsd"]
    if not found or found[0]["end"] is None:
        raise UsageError("the guest stopped before atsd's output was complete" + end)
    b = found[0]
    if b["end"].get("rc") != "0":
        why = errors[0] if errors else f"exit {b['end'].get('rc')}"
        raise UsageError(f"atsd in the guest failed: {why}" + end)
    table = next((bl["lines"] for bl in blocks if bl["name"] == "table"), [])
    return values, "\n".join(b["lines"]) + "\n", "\n".join(table)


def result_name(release, machine, arch):
    """KERNEL-RELEASE.json, with -MACHINE where the machine is not the arch's default."""
    safe = "".join(c if c.isalnum() or c in "._+-" else "_" for c in release) or "unknown"
    return f"{safe}.json" if DEFAULT_MACHINE[arch] == machine else f"{safe}-{machine}.json"


def kvm_usable(arch):
    return arch == host_arch() and os.access("/dev/kvm", os.R_OK | os.W_OK)


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
