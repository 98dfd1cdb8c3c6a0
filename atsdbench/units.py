"""Sizes are binary (1G = 2**30 bytes); rates are decimal (GB/s = 10**9 bytes/s).  Also the kernel's own
little text formats (CPU lists, a bracketed choice), which result files carry and readers of them parse."""
import re

from .errors import UsageError

_SUFFIX = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text, what="size"):
    """'64K' -> 65536.  Raises UsageError for anything unparsable or zero."""
    m = _SIZE.match(str(text))
    if not m:
        raise UsageError(f"{what} {text!r} is not a size "
                         "(use a number with an optional K, M, G suffix, binary: 1G = 2^30)")
    value = int(m.group(1)) << _SUFFIX[m.group(2).upper()]
    if value == 0:
        raise UsageError(f"{what} must not be zero")
    return value


def parse_sizes(text, what="stride"):
    parts = [p for p in str(text).split(",") if p.strip()]
    if not parts:
        raise UsageError(f"no {what} given")
    return [parse_size(p, what) for p in parts]


def format_size(n):
    """65536 -> '64K'; exact binary units only, else plain bytes."""
    for suffix, shift in (("T", 40), ("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


def gbps(nbytes, seconds):
    return nbytes / seconds / 1e9


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
