"""Host facts: what a result was measured on.  Parsers take text so fixtures can test them."""
import os
import platform
import socket

from . import __version__


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def parse_meminfo(text):
    """'/proc/meminfo' -> {key: bytes (kB lines) or count}."""
    out = {}
    for line in (text or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key.strip()] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    return out


def parse_bracketed(text):
    """'always [madvise] never' -> 'madvise'."""
    if not text:
        return "unknown"
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text.strip() or "unknown"


def parse_cpulist(text):
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus = []
    for part in (text or "").strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def format_cpulist(cpus):
    """[0, 1, 2, 5] -> '0-2,5'."""
    cpus, parts, i = sorted(cpus), [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def online_cpus():
    return parse_cpulist(read("/sys/devices/system/cpu/online", "")) or list(range(os.cpu_count() or 1))


def parse_cpuinfo(text):
    """CPU model and MMU from /proc/cpuinfo on x86, POWER and arm64."""
    model, mmu, flags, platform_ = None, None, [], None
    implementer, part = None, None
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "model name" and model is None:
            model = value
        elif key == "cpu" and model is None:  # POWER: 'cpu : POWER9, altivec supported'
            model = value
        elif key == "MMU":
            mmu = value
        elif key == "platform":
            platform_ = value
        elif key in ("flags", "Features") and not flags:
            flags = value.split()
        elif key == "CPU implementer" and implementer is None:
            implementer = value
        elif key == "CPU part" and part is None:
            part = value
    if model is None and implementer is not None:
        model = f"arm64 implementer {implementer} part {part}"
    return {"cpu_model": model or "unknown", "mmu": mmu or "unknown", "platform": platform_, "cpu_flags": flags}


def probe():
    """The facts every result file carries; probed once per run."""
    uname = platform.uname()
    cpuinfo = parse_cpuinfo(read("/proc/cpuinfo"))
    meminfo = parse_meminfo(read("/proc/meminfo"))
    return {
        "hostname": socket.gethostname(),
        "arch": uname.machine,
        "kernel_release": uname.release,
        "kernel_version": uname.version,
        "cpu_model": cpuinfo["cpu_model"],
        "mmu": cpuinfo["mmu"],
        "online_cpus": online_cpus(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "page_size": os.sysconf("SC_PAGE_SIZE"),
        "hugepage_size": meminfo.get("Hugepagesize"),
        "thp_enabled": parse_bracketed(read("/sys/kernel/mm/transparent_hugepage/enabled")),
        "thp_defrag": parse_bracketed(read("/sys/kernel/mm/transparent_hugepage/defrag")),
        "python": platform.python_version(),
        "atsdbench": __version__,
    }
