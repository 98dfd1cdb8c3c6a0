"""Where the time of a call goes: the stage arithmetic of `run --breakdown`, from tracefs text.

A breakdown pass (measure/breakdown.py) records the op's syscall enter/exit of the measuring thread
and every CPU's invalidation events (tlb:tlb_flush, csd, ipi; on POWER tlbie and hcalls) between two
trace_marker lines that turn the trace clock's ticks into ns.  Each call is cut on the measuring
CPU's timeline into stages that do not overlap (STAGES; _PRECEDENCE settles a shared tick), so they sum
to the syscall time exactly; beside them, counts per call.  The stages, what each is on each
architecture and the counts: docs/breakdown.md#stages.  Pure: lines in, numbers out
(tests/analysis/test_breakdown.py runs it on real traces, tests/fixtures/breakdown/ and power/).
"""
import re
from collections import defaultdict

STAGES = ("page_table", "local_flush", "tlbie", "ipi_send", "remote_wait", "device")
# precedence where intervals overlap (page_table is what no other stage claims)
_PRECEDENCE = ("device", "local_flush", "tlbie", "ipi_send", "remote_wait")
MARK = "atsdbench"

_LINE = re.compile(r"^\s*(?P<task>.*?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]\s+(?:[^\s:]+\s+)?"
                   r"(?P<ts>\d+(?:\.\d+)?):\s+(?P<body>.*)$")
_ENTER = re.compile(r"sys_(\w+)\((?P<args>.*)\)\s*$")
_EXIT = re.compile(r"sys_(\w+) -> (\S+)\s*$")
_LEN = re.compile(r"len: (?:0x)?([0-9a-f]+)")
_FLUSH = re.compile(r"tlb_flush: pages:(-?\d+) reason:(.*?) \((-?\d+)\)\s*$")
_CSD = re.compile(r"csd_function_(entry|exit): func=([^\s,]+)")
_IPI_CPU = re.compile(r"ipi_send_cpu: cpu=(\d+)")
_IPI_MASK = re.compile(r"ipi_send_cpumask: cpumask=(\S+)")
_TLBIE = re.compile(r"tlbie: .*?local=(\d+)")
_HCALL = re.compile(r"hcall_(entry|exit): opcode=(\d+)")
_MARKER = re.compile(rf"tracing_mark_write: {MARK} (t[01]) (\d+)")
FULL = -1  # tlb_flush prints TLB_FLUSH_ALL as -1 (%ld of an unsigned long)


class Event:
    __slots__ = ("ts", "cpu", "pid", "kind", "a", "b")

    def __init__(self, ts, cpu, pid, kind, a=None, b=None):
        self.ts, self.cpu, self.pid, self.kind, self.a, self.b = ts, cpu, pid, kind, a, b


def _cpumask_count(text):
    """ipi_send_cpumask prints its mask as the kernel's %*pb: hex words joined by commas."""
    try:
        return bin(int(text.replace(",", ""), 16)).count("1")
    except ValueError:
        return 0


def parse(lines):
    """tracefs text lines -> [Event] in time order (per-CPU files are read one after another) and
    the clock markers {"t0": (ticks, ns), "t1": ...}.  Lines it does not know are skipped."""
    events, marks = [], {}
    for line in lines:
        m = _LINE.match(line)
        if not m:
            continue
        ts, cpu, pid, body = float(m["ts"]), int(m["cpu"]), int(m["pid"]), m["body"]
        e = None
        if body.startswith("sys_"):
            x = _ENTER.match(body)
            if x:
                n = _LEN.search(x["args"])
                e = Event(ts, cpu, pid, "enter", x[1], int(n[1], 16) if n else None)
            else:
                x = _EXIT.match(body)
                if x:
                    e = Event(ts, cpu, pid, "exit", x[1])
        elif body.startswith("tlb_flush:"):
            x = _FLUSH.match(body)
            if x:
                e = Event(ts, cpu, pid, "flush", int(x[1]), "send" in x[2].lower())
        elif body.startswith("csd_function_"):
            x = _CSD.match(body)
            if x:
                e = Event(ts, cpu, pid, "csd_" + x[1], x[2])
        elif body.startswith("ipi_send_cpu:"):
            x = _IPI_CPU.match(body)
            if x:
                e = Event(ts, cpu, pid, "ipi", 1, int(x[1]))
        elif body.startswith("ipi_send_cpumask:"):
            x = _IPI_MASK.match(body)
            if x:
                e = Event(ts, cpu, pid, "ipi", _cpumask_count(x[1]))
        elif body.startswith("tlbie:"):
            x = _TLBIE.match(body)
            if x:
                e = Event(ts, cpu, pid, "tlbie", int(x[1]))
        elif body.startswith("hcall_"):
            x = _HCALL.match(body)
            if x:
                e = Event(ts, cpu, pid, "hcall_" + x[1], int(x[2]))
        elif body.startswith(("device_entry:", "device_exit:")):  # --device hmm's kprobe pair
            e = Event(ts, cpu, pid, "dev_entry" if body.startswith("device_entry:") else "dev_exit")
        elif body.startswith("tracing_mark_write:"):
            x = _MARKER.match(body)
            if x:
                marks[x[1]] = (ts, int(x[2]))
        if e is not None:
            events.append(e)
    events.sort(key=lambda e: e.ts)  # stable: one CPU's events keep their order at equal stamps
    return events, marks


def ns_per_tick(marks, lines_in_seconds):
    """The trace clock's tick in ns, from the two markers; a clock printed in seconds (a ns clock)
    without markers is 1e9 ns a unit.  None: no way to tell."""
    if "t0" in marks and "t1" in marks:
        (t0, n0), (t1, n1) = marks["t0"], marks["t1"]
        if t1 > t0 and n1 > n0:
            return (n1 - n0) / (t1 - t0)
    return 1e9 if lines_in_seconds else None


def _union(intervals):
    out = []
    for s, e in sorted(i for i in intervals if i[1] > i[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _minus(intervals, taken):
    """intervals (a union) less the union `taken`: both sorted, disjoint."""
    out = []
    for s, e in intervals:
        for ts, te in taken:
            if te <= s or ts >= e:
                continue
            if ts > s:
                out.append([s, ts])
            s = max(s, te)
            if s >= e:
                break
        if s < e:
            out.append([s, e])
    return out


def _length(intervals):
    return sum(e - s for s, e in intervals)


def _is_tlb(func):
    return "tlb" in func.lower()


def _pairs(events, cpu, enter, leave, match=lambda e: True):
    """[start, end] of entry/exit pairs of one CPU (a nested or unmatched end is dropped)."""
    out, start = [], None
    for e in events:
        if e.cpu != cpu or not match(e):
            continue
        if e.kind == enter:
            start = e.ts
        elif e.kind == leave and start is not None:
            out.append([start, e.ts])
            start = None
    return out


def calls(events, cpu, pid, syscall):
    """One dict per call of `syscall` by thread `pid` on `cpu`: its window and every stage, in ticks.
    Events of other CPUs count where their flush starts inside the call."""
    windows, start, length = [], None, None
    for e in events:
        if e.pid == pid and e.cpu == cpu and e.a == syscall:
            if e.kind == "enter":
                start, length = e.ts, e.b
            elif e.kind == "exit" and start is not None:
                windows.append((start, e.ts, length))
                start = None
    if not windows:
        return []
    # per CPU: the TLB-flush cross-calls; the measuring CPU's hypervisor calls
    flush_on = defaultdict(list)
    for c in {e.cpu for e in events if e.kind == "csd_entry"}:
        flush_on[c] = _pairs(events, c, "csd_entry", "csd_exit", lambda e: e.kind[:4] != "csd_" or _is_tlb(e.a))
    hcalls = _pairs(events, cpu, "hcall_entry", "hcall_exit")
    devices = _pairs(events, cpu, "dev_entry", "dev_exit")
    mine = [e for e in events if e.cpu == cpu and e.kind in ("flush", "ipi", "tlbie", "hcall_entry")]
    out, j = [], 0
    for s, t, length in windows:
        while j < len(mine) and mine[j].ts < s:
            j += 1
        k = j
        inside = []
        while k < len(mine) and mine[k].ts <= t:
            inside.append(mine[k])
            k += 1
        local = _union([[max(a, s), min(b, t)] for a, b in flush_on.get(cpu, []) + hcalls if b > s and a < t])
        remote = {c: [[a, b] for a, b in spans if s <= a <= t] for c, spans in flush_on.items() if c != cpu}
        remote = {c: spans for c, spans in remote.items() if spans}
        tlbies = [e.ts for e in inside if e.kind == "tlbie"]
        sends = [e.ts for e in inside if (e.kind == "flush" and e.b) or e.kind == "ipi"]
        stage = {"local_flush": local,
                 "tlbie": _union([[min(tlbies), max(tlbies)]]) if len(tlbies) > 1 else [],
                 "ipi_send": [], "remote_wait": [],
                 "device": _union([[max(a, s), min(b, t)] for a, b in devices if b > s and a < t])}
        if sends:
            first = min(sends)
            after = [a for a, _ in local if a >= first]
            stage["ipi_send"] = _union([[first, after[0] if after else max(sends)]])
        ends = [b for spans in remote.values() for _, b in spans]
        if ends:
            local_end = max((b for _, b in local), default=max(sends) if sends else s)
            stage["remote_wait"] = _union([[local_end, min(max(ends), t)]])
        taken, ticks = [], {}
        for name in _PRECEDENCE:
            own = _minus(stage[name], taken)
            ticks[name] = _length(own)
            taken = _union(taken + own)
        ticks["syscall"] = t - s
        ticks["page_table"] = (t - s) - _length(taken)
        flushes = [e for e in inside if e.kind == "flush" and not e.b]
        local_untimed = sum(1 for e in flushes if not any(a <= e.ts <= b for a, b in flush_on.get(cpu, [])))
        out.append({
            "start": s, "length": length, "ticks": ticks,
            "pages": sum(e.a for e in flushes if e.a >= 0), "full_flushes": sum(1 for e in flushes if e.a == FULL),
            "flushes": len(flushes), "local_untimed": local_untimed,
            "ipis_wanted": sum(1 for e in inside if e.kind == "flush" and e.b),
            "ipis_sent": sum(e.a for e in inside if e.kind == "ipi"),
            "remote": {c: _length(spans) for c, spans in remote.items()},
            "tlbie": len(tlbies), "tlbie_global": sum(1 for e in inside if e.kind == "tlbie" and e.a == 0),
            "hcalls": sum(1 for e in inside if e.kind == "hcall_entry")})
    return out


def summarize(call_list, tick_ns, have=()):
    """The per-call means of a list of calls (one stride): µs per stage and per call, counts per call.
    `have`: the events that were recorded ("csd", "ipi", "tlb", "tlbie", "hcall"), so that a count
    whose event was missing is absent (None), never 0."""
    n = len(call_list)
    if not n or not tick_ns:
        return None
    us = tick_ns / 1e3
    out = {"calls": n, "syscall_us": sum(c["ticks"]["syscall"] for c in call_list) * us / n}
    for name in STAGES:
        if name != "device" or "device" in have:  # the device stage only where its kprobes were recorded
            out[f"{name}_us"] = sum(c["ticks"][name] for c in call_list) * us / n
    if "device" not in have:  # not a stage then: its ticks are the page tables' as they would be untraced
        out["page_table_us"] += sum(c["ticks"]["device"] for c in call_list) * us / n
    remote = defaultdict(float)
    for c in call_list:
        for cpu, ticks in c["remote"].items():
            remote[cpu] += ticks
    out["remote_flush_us"] = {str(cpu): t * us / n for cpu, t in sorted(remote.items())} if "csd" in have else None
    counts = {"pages": "tlb", "full_flushes": "tlb", "flushes": "tlb", "local_untimed": "csd",
              "ipis_wanted": "tlb", "ipis_sent": "ipi", "tlbie": "tlbie", "tlbie_global": "tlbie", "hcalls": "hcall"}
    for key, needs in counts.items():
        out[key] = sum(c[key] for c in call_list) / n if needs in have else None
    if out["local_untimed"] is not None and "tlb" not in have:
        out["local_untimed"] = None
    return out


def by_stride(call_list):
    """{len: [calls]} for a trace of several strides (a guest's atsd run: each call names its len)."""
    out = defaultdict(list)
    for c in call_list:
        out[c["length"]].append(c)
    return dict(out)


def seconds_clock(lines):
    """Whether the trace's stamps are printed as seconds (a ns clock: 12.345678) or raw ticks."""
    for line in lines:
        m = _LINE.match(line)
        if m:
            return "." in m["ts"]
    return False


def events_seen(events):
    """Which families of events a trace holds (summarize's `have`, for a trace read without knowing
    what was enabled)."""
    kinds = {e.kind for e in events}
    have = set()
    if "flush" in kinds:
        have.add("tlb")
    if kinds & {"csd_entry", "csd_exit"}:
        have.add("csd")
    if "ipi" in kinds:
        have.add("ipi")
    if "tlbie" in kinds:
        have.add("tlbie")
    if "hcall_entry" in kinds:
        have.add("hcall")
    if "dev_entry" in kinds:
        have.add("device")
    return have


def breakdown(lines, cpu, pid, syscall, have=None):
    """A breakdown pass's trace -> summarize()'s dict (None where no call was recorded)."""
    events, marks = parse(lines)
    tick = ns_per_tick(marks, seconds_clock(lines))
    if tick is None:
        return None
    if "t0" in marks and "t1" in marks:  # only the pass: not the events of enabling the tracepoints
        events = [e for e in events if marks["t0"][0] <= e.ts <= marks["t1"][0]]
    return summarize(calls(events, cpu, pid, syscall), tick, events_seen(events) if have is None else have)


def untraced_us(records):
    """{(cell or None, stride): mean µs per call of the measured passes (sample dicts, warm-up left
    out)}: what tracing costs is the traced syscall time against it."""
    sums = {}
    for s in records:
        if s.get("warmup"):
            continue
        key = (s.get("cell"), s["stride_bytes"])
        total, n = sums.get(key, (0.0, 0))
        sums[key] = (total + s["us_per_call"], n + 1)
    return {k: t / n for k, (t, n) in sums.items()}


def check_sum(summary, tolerance=1e-6):
    """True when the stages of a summary add up to its syscall time (and none is negative)."""
    parts = [summary[f"{s}_us"] for s in STAGES if f"{s}_us" in summary]
    return all(p >= -tolerance for p in parts) and abs(sum(parts) - summary["syscall_us"]) <= tolerance * max(
        1.0, summary["syscall_us"])


# ---- compare: the stages of files with breakdowns (and profiles) side by side ----

PROFILE_STAGES = ("page_table", "flush", "local_flush", "remote_wait", "notifier")


def _files(group):
    """A side's distinct files (a --runs file's sub-runs share one config)."""
    seen = {}
    for r in group:
        seen.setdefault(getattr(r, "path", None) or id(r.config), r)
    return list(seen.values())


def _values(files, section, key_of):
    """{(cell name or None, stride): [one dict a file]} from each file's config section."""
    from ..data.cells import name

    out = {}
    for r in files:
        listed = r.config.get("cells") or []
        for p in (r.config.get(section) or {}).get("passes", []):
            if key_of(p) is not None:
                cell = p.get("cell")
                if isinstance(cell, int) and 0 <= cell < len(listed):
                    cell = name(listed[cell])  # files with other axes meet on the cell's name, as compare's rates
                out.setdefault((cell, p["stride_bytes"]), []).append(p)
    return out


def _interval(base, new, confidence):
    """The change's interval of the means (Welch), where each side has 2 or more files and some spread;
    else None."""
    if len(base) < 2 or len(new) < 2:
        return None
    import numpy as np
    from scipy import stats

    a, b = np.asarray(base, float), np.asarray(new, float)
    if a.var(ddof=1) == 0 and b.var(ddof=1) == 0:  # no spread seen: a zero-width interval would claim certainty
        return None
    import warnings

    with warnings.catch_warnings():  # near-equal values: scipy warns of precision; the interval is still right
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = stats.ttest_ind(b, a, equal_var=False).confidence_interval(confidence / 100)
    return (float(ci.low), float(ci.high))


def compare_stages(groups, labels, confidence=95.0):
    """Rows for compare: per (cell, stride, stage) of the breakdown (µs per call and percentage points of
    the syscall time) and of the profile (percentage points of samples), each new side against the
    base; an interval where both sides have 2 or more files, else None (one file a side: no spread)."""
    rows = []
    sides = [_files(g) for g in groups]
    for section, stages, key in (("breakdown", ("syscall",) + STAGES, "syscall_us"),
                                 ("profile", PROFILE_STAGES, "samples")):
        per_side = [_values(f, section, lambda p: p.get(key) or None) for f in sides]
        for i in range(1, len(groups)):
            for k in sorted(set(per_side[0]) & set(per_side[i]), key=lambda k: (str(k[0] or ""), k[1])):
                base, new = per_side[0][k], per_side[i][k]
                for stage in stages:
                    if section == "breakdown":
                        bu = [p.get(f"{stage}_us") or 0.0 for p in base]
                        nu = [p.get(f"{stage}_us") or 0.0 for p in new]
                        bs = [100 * u / p["syscall_us"] for u, p in zip(bu, base)]
                        ns = [100 * u / p["syscall_us"] for u, p in zip(nu, new)]
                    else:
                        bu = nu = None
                        bs = [100 * (p.get("stages") or {}).get(stage, 0.0) for p in base]
                        ns = [100 * (p.get("stages") or {}).get(stage, 0.0) for p in new]
                    if not any(bs + ns) and not (bu and any(bu + nu)):
                        continue  # a stage neither side has (tlbie on x86)
                    row = {"kind": section, "cell": k[0], "stride_bytes": k[1], "stage": stage,
                           "base_label": labels[0], "new_label": labels[i], "n_base": len(base), "n_new": len(new),
                           "base_share": sum(bs) / len(bs), "new_share": sum(ns) / len(ns)}
                    row["change_pp"] = row["new_share"] - row["base_share"]
                    row["pp_interval"] = _interval(bs, ns, confidence)
                    if bu is not None:
                        row.update(base_us=sum(bu) / len(bu), new_us=sum(nu) / len(nu))
                        row["change_us"] = row["new_us"] - row["base_us"]
                        row["us_interval"] = _interval(bu, nu, confidence)
                    rows.append(row)
    return rows
