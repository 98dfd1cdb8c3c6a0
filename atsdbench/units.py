"""Sizes are binary (1G = 2**30 bytes); rates are decimal (GB/s = 10**9 bytes/s).  Also the kernel's own
little text formats (CPU lists, a bracketed choice), which result files carry and readers of them parse."""
import re

from .errors import UsageError

_SUFFIX = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
# csrc/atsd_plan.c's atsd_parse_size, which the measuring side calls through the core; this twin is for
# the pure side (import, reading files), which must work without it.  ASCII only: \d and \s would take
# other scripts' digits and spaces, which the C parser does not.
_SIZE = re.compile(r"[ \t\n\r\f\v]*([0-9]+)[ \t\n\r\f\v]*(?:([KMGT])(IB|B)?|(B)?)[ \t\n\r\f\v]*",
                   re.ASCII | re.IGNORECASE)
_MAX_SIZE = (1 << 64) - 1


def _cut(text):
    """As the C parser echoes a bad value: at most 40 bytes, else its first 37 and '...'."""
    raw = text.encode("utf-8", "surrogateescape")
    return text if len(raw) <= 40 else raw[:37].decode("utf-8", "replace") + "..."


def parse_size(text, what="size"):
    """'64K' -> 65536; binary (K = 2^10 ... T = 2^40, also KiB ... TiB), B alone is bytes, and KB ...
    TB are refused (decimal to many).  Raises UsageError for anything unparsable, zero or above
    2^64 - 1, with csrc/atsd_plan.c's words (tests/test_units.py holds the two alike)."""
    text = str(text)
    m = _SIZE.fullmatch(text)
    if not m:
        raise UsageError(f"{what} '{_cut(text)}' is not a size (a whole number, optional K, M, G or T: binary, 1G "
                         "= 2^30)")
    digits, unit, tail = m.group(1), (m.group(2) or "").upper(), (m.group(3) or "").upper()
    shift = _SUFFIX[unit]
    if unit and tail == "B":
        number = digits[:20]
        raise UsageError(f"{what} '{_cut(text)}': sizes are binary: write {number}{unit} or {number}{unit}iB "
                         f"(2^{shift}), not {unit}B (10^{shift * 3 // 10} to many)")
    digits = digits.lstrip("0") or "0"  # int() refuses more than 4300 digits; a size has at most 20
    if len(digits) > 20 or int(digits) << shift > _MAX_SIZE:
        raise UsageError(f"{what} '{_cut(text)}' is too large (a size must fit in 64 bits)")
    value = int(digits) << shift
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
