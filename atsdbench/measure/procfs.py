"""Readers of /proc and sysfs (the pure parsers of the kernel's list formats live in units; tracefs's
rules are the core's, csrc/atsd_trace.c).

Parsers take text so fixtures can test them; `read` returns a default where a file is missing.
"""
import os

from ..units import parse_cpulist


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
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


def online_cpus():
    return parse_cpulist(read("/sys/devices/system/cpu/online", "")) or list(range(os.cpu_count() or 1))


def parse_interrupts(text, row="TLB"):
    """Sum of one /proc/interrupts row over all CPUs, or None when the row is absent."""
    lines = (text or "").splitlines()
    if not lines:
        return None
    ncpu = len(lines[0].split())
    for line in lines[1:]:
        name, sep, rest = line.partition(":")
        if sep and name.strip() == row:
            counts = rest.split()[:ncpu]
            return sum(int(c) for c in counts if c.isdigit())
    return None


def interrupts_of_cpu(text, cpu):
    """Every interrupt /proc/interrupts has counted on one CPU (its column summed over the rows)."""
    lines = (text or "").splitlines()
    if not lines:
        return None
    header = lines[0].split()
    if f"CPU{cpu}" not in header:
        return None
    col, total = header.index(f"CPU{cpu}"), 0
    for line in lines[1:]:
        name, sep, rest = line.partition(":")
        counts = rest.split()
        if sep and len(counts) > col and counts[col].isdigit():
            total += int(counts[col])
    return total


def parse_vmstat_tlb(text):
    out = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("nr_tlb_"):
            out[parts[0][3:]] = int(parts[1])
    return out


def smaps_huge_share(text, start, end):
    """Share of [start, end) backed by transparent huge pages, from /proc/self/smaps' AnonHugePages
    of the mappings inside it (None when no mapping overlaps)."""
    huge, size, inside = 0, 0, False
    for line in (text or "").splitlines():
        head = line.split(None, 1)[0] if line.strip() else ""
        if "-" in head and not head.endswith(":"):
            lo, _, hi = head.partition("-")
            try:
                lo, hi = int(lo, 16), int(hi, 16)
            except ValueError:
                inside = False
                continue
            inside = lo < end and hi > start
            if inside:
                size += min(hi, end) - max(lo, start)
        elif inside and head == "AnonHugePages:":
            huge += int(line.split()[1]) * 1024
    return huge / size if size else None
