"""`atsdbench guest`: boot a kernel image under qemu and run the static `atsd` inside it.

This module holds the machine table (qemu binary, its Debian package, machine options, console, kernel
arguments), the run options checked against the option table (csrc/atsd_options.h: what `atsd`
accepts), and the names the results come home under.  The pieces: guest_image (the image's format from
its header, and that it is whole), guest_initramfs (the static atsd and busybox, cached; the newc cpio
with /init, the package's guest_init.sh; a user's --initrd checked), guest_qemu (the command line,
booting, timeouts, KVM) and, on the pure side, data/guest_console (what /init printed, and what comes
home from it).  Under emulation (TCG) the kernel's invalidation counts are its own; the rates are not.
"""
import os
import re

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


class Missing(UsageError):
    """A piece the guest needs is not on this machine: the message names the Debian package."""


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
            raise UsageError(f"--tracepoints {value!r}: {name!r} is not SUBSYSTEM/EVENT (as tracefs names it)")
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
            hint = "; use --tracepoints EVENT,..." if o["field"] == "trace" else ""
            raise UsageError(f"{shown} is `atsdbench run`'s only: atsd has no {shown}{hint}")
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


def host_arch():
    import platform

    m = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def result_name(release, machine, arch):
    """KERNEL-RELEASE.json, with -MACHINE where the machine is not the arch's default."""
    safe = "".join(c if c.isalnum() or c in "._+-" else "_" for c in release) or "unknown"
    return f"{safe}.json" if DEFAULT_MACHINE[arch] == machine else f"{safe}-{machine}.json"


def _family(stem):
    """The names of one guest's files under its stem: NAME.json, NAME-runK.json and .trace, NAME.console,
    NAME.out, NAME/ (the command's files)."""
    s = re.escape(stem)
    return re.compile(rf"{s}(-run[0-9]+)?\.(json|trace)|{s}(\.console|\.out)?")


def claim(folder, name, taken, suffix=".console"):
    """The path stem, under folder, for one guest's files, overwriting nothing: NAME, else NAME-2,
    NAME-3, ...: the first that no file there has (NAME.json, NAME-runK.json, NAME.console, ...) and
    that this invocation has not `taken`.  NAME+suffix is created empty at once (O_EXCL), so another
    guest writing into the same folder at the same time takes the next one."""
    try:
        names = os.listdir(folder)
    except OSError:  # the folder went bad since the check: the writes will say so, and rescue
        names = []
    k = 1
    while True:
        stem = name if k == 1 else f"{name}-{k}"
        k += 1
        family = _family(stem) if suffix == ".console" else re.compile(re.escape(stem + suffix))
        if stem in taken or any(family.fullmatch(n) for n in names):
            continue
        try:
            os.close(os.open(os.path.join(folder, stem + suffix), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        except OSError:
            pass  # unwritable now: the writes name the path and rescue
        taken.add(stem)
        return os.path.join(folder, stem)


GUEST_BYTES = 1 << 20  # one boot's console and a command's output, with room (tens of KB as docs/guest.md's)
RUN_BYTES = 1 << 20  # one run's result file and its part of the console, with room (the same)
TRACE_COPIES = 4  # a traced run's events as text: its trace file, the console's gzip+base64 copy, room


def expected_bytes(runs, traced, trace_kb, smp):
    """About what one guest's files under -o take: its console, its runs' result files, and for each
    traced run what a full trace buffer on every CPU holds."""
    return GUEST_BYTES + runs * RUN_BYTES + traced * TRACE_COPIES * trace_kb * 1024 * smp


BREAKDOWN_LINE_BYTES = 16 * 128  # a traced call's events as trace lines (csrc/atsd_breakdown.c), with room


def breakdown_bytes(plan):
    """About what a run's --breakdown brings home in the console: every traced pass's trace lines
    (at most core.BREAKDOWN_CALLS calls a pass, one pass per cell and stride)."""
    from . import core

    calls = sum(min(plan.size // s, core.BREAKDOWN_CALLS) for s in plan.strides[0:plan.nstrides])
    return calls * len(core.cells(plan)) * BREAKDOWN_LINE_BYTES


def check_output_dir(path, need):
    """-o DIR, before anything boots: a directory, or one that can be made, that this process can write
    in, with about `need` bytes free on its file system.  UsageError naming what is wrong otherwise."""
    import errno
    import stat

    if not path:
        raise UsageError("-o needs a directory (got an empty name)")
    probe = os.path.abspath(path)
    while True:
        try:
            st = os.stat(probe)
            break
        except FileNotFoundError:
            if os.path.lexists(probe):
                raise UsageError(f"-o {path}: {probe} is a symbolic link to nothing") from None
            probe = os.path.dirname(probe)
        except OSError as e:  # a file where a directory should be, a loop of links, no permission
            raise UsageError(f"-o {path}: {e.strerror}") from None
    made = probe != os.path.abspath(path)  # DIR is to be made in probe
    if not stat.S_ISDIR(st.st_mode):
        kind = next((name for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISFIFO, "a FIFO"),
                                             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                                             (stat.S_ISSOCK, "a socket")) if test(st.st_mode)), "not a directory")
        raise UsageError(f"-o {path}{(': ' + probe if made else '')} is {kind}, not a directory")
    try:
        fs = os.statvfs(probe)
    except OSError as e:
        raise UsageError(f"-o {path}: {e.strerror}") from None
    if not os.access(probe, os.W_OK | os.X_OK):
        denied = os.strerror(errno.EROFS if fs.f_flag & os.ST_RDONLY else errno.EACCES)
        raise UsageError(f"-o {path}: cannot make it in {probe}: {denied}" if made else
                         f"-o {path}: cannot write in it: {denied}")
    free = fs.f_bavail * fs.f_frsize
    if free < need:
        raise UsageError(f"-o {path}: {free / 2 ** 20:.1f} MiB free, guests need about {need / 2 ** 20:.0f} MiB")
