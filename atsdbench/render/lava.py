"""`--format lava` of show and compare: one line per (cell, stride) as `NAME pass|fail VALUE UNITS`, which a
LAVA test definition hands to `lava-test-case NAME --result R --measurement V --units U`
(lava/atsdbench.yaml, docs/lab.md#lava).  Names are LAVA's test case alphabet (letters, digits, _ . -)."""
import math
import os
import re

from ..units import format_size


def _name(*parts):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(str(p) for p in parts if p)).strip("_")


def _value(v):
    from .numbers import general

    return general(v, 6)


def show_lines(result, unit="round"):
    """Per (cell, stride) of one file: the mean rate (of round means, or passes) in GB/s; pass where the
    stride was measured, fail where no observation of it finished."""
    from ..analysis import stats
    from ..data import cells
    from .tables import stride_rows

    out = []
    for _, _, spec, table in cells.headings(result):
        cell = cells.name(spec) if spec else ""
        for r in stride_rows(table, stats.effective_unit(table, unit)):
            name = _name("rate", cell, format_size(r["stride_bytes"]))
            mean = r.get("mean")
            if r["n"] and mean is not None and math.isfinite(mean):
                out.append(f"{name} pass {_value(mean)} GB/s")
            else:
                out.append(f"{name} fail 0 GB/s")
    out += verify_lines(result)
    return "\n".join(out)


def verify_lines(result):
    """run --verify's checks as test cases, one per (op, stride): `fail STALE stale` where any check read
    a translation after the invalidation returned (a kernel bug, which the job must show as a failed case,
    not only as a line on stderr), `pass 0 stale` otherwise; none for a file without verify passes."""
    sums = {}
    for v in getattr(result, "verify", None) or ():
        key = ("verify", v.get("op") or "mprotect", v["stride_bytes"])
        sums[key] = sums.get(key, 0) + v["stale"]
        if v.get("device_checks") is not None:  # --device hmm: the device's reads, cases of their own
            key = ("verify-device",) + key[1:]
            sums[key] = sums.get(key, 0) + (v.get("device_stale") or 0)
    return [f"{_name(case, op, format_size(stride))} {'fail' if stale else 'pass'} {stale} stale"
            for (case, op, stride), stale in sums.items()]


def compare_lines(cmp):
    """Per (cell, stride, new side): the speedup in %; fail where a slowdown is proven (the compare's
    verdict: its confidence, Holm), pass otherwise (faster, no difference proven, or no verdict);
    `skip` (no value) where the row has no speedup; `skip` with its value where the files measure
    different work (threads, tasks, workload, op or bystanders differ: compare's warning says which)."""
    several = len(cmp.labels) > 2
    out = []
    for r in cmp.rows:
        name = _name("speedup", r["new_label"] if several else "", r.get("cell") or "", r["stride"])
        speedup = r.get("speedup_pct")
        if speedup is None or not math.isfinite(speedup):
            out.append(f"{name} skip")
            continue
        if getattr(cmp, "different_work", None):  # another setting's effect, said on stderr: no verdict
            out.append(f"{name} skip {_value(speedup)} %")
            continue
        slower = bool(r.get("significant")) and speedup < 0
        out.append(f"{name} {'fail' if slower else 'pass'} {_value(speedup)} %")
    stale = {}  # a side's file whose verify passes read stale: a failed case, whatever the speedups say
    for path, g in getattr(cmp, "stale", None) or ():
        key = _name("verify", os.path.basename(path or ""), g["op"], format_size(g["stride_bytes"]))
        stale[key] = stale.get(key, 0) + g["stale"]
    out += [f"{name} fail {n} stale" for name, n in stale.items()]
    return "\n".join(out)
