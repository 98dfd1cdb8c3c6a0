"""run --breakdown's table: per stride (and cell), where the µs of a traced call go, summing to the
syscall time, and the counts beside them (analysis/breakdown.py holds the arithmetic); run
--profile's table of sampled shares; compare's tables of both; and the notes under each."""
from ..analysis.breakdown import STAGES
from ..units import format_size
from . import layout, numbers
from .notes import BREAKDOWN, GUEST_BREAKDOWN, MAX_NOTES, PERMISSIONS, PROFILE, see

def breakdown_missing(events):
    """Optional tracepoints this kernel lacks, by system ('csd, ipi')."""
    systems = ", ".join(dict.fromkeys(e.split(":")[0] for e in events))
    return see(f"--breakdown: no {systems} events here: those stages not measured", PERMISSIONS)


BREAKDOWN_TITLE = "Where a call's time goes (run --breakdown: traced calls, µs per call)"
PROFILE_TITLE = "Kernel profile of the calls (run --profile: share of the measuring thread's samples)"
COMPARE_BREAKDOWN_TITLE = "Where a call's time went (run --breakdown: µs per traced call; % of the syscall)"
COMPARE_PROFILE_TITLE = "Kernel profile shares (run --profile: % of the measuring thread's samples)"


def stages_sum_to_syscall(traced_over):
    """Under the breakdown table: the unit, N, what it does not cover."""
    over = f"; tracing cost {traced_over}" if traced_over else ""
    return see(f"N = 1 pass's calls; stages sum to syscall{over}", BREAKDOWN)


def local_flush_untimed():
    """Under a breakdown whose local flushes were not timed (no bystander on x86)."""
    return see("untimed: no other CPU to reach, flushed in place, inside page tables", BREAKDOWN)


def emulated_read_the_shares(virtualized):
    """Under a breakdown or profile of a guest under full emulation: the shares hold, the µs do not."""
    return see(f"emulated ({virtualized}): the µs are the emulator's, read the shares", GUEST_BREAKDOWN)


def events_lost(strides):
    return see(f"--breakdown: events lost at {strides}: no breakdown there", BREAKDOWN)


def breakdown_interrupted():
    return see("--breakdown interrupted: the strides shown were finished", BREAKDOWN)


def samples_legend(event, n):
    """Under the profile table: the event, N, and the caveat of a PMU-less (timer) profile."""
    if event == "cycles":
        return see(f"cycles samples, N = {n}; a stage: any frame of a sample in it", PROFILE)
    return see(f"cpu-clock, no PMU: time with IRQs off shows after them; N = {n}", PROFILE)


def profile_interrupted():
    return see("--profile interrupted: the strides shown were finished", PROFILE)


def files_a_side(files, intervals):
    """Under compare's stage tables: N files a side, and what the interval covers (or that there is none)."""
    if intervals:
        return see(f"files a side {files}; [Welch CI over files] where both sides have 2+", BREAKDOWN)
    return see(f"files a side {files}: one traced pass each, no interval (replicate files give one)", BREAKDOWN)


NAMES = {"page_table": "page tables", "local_flush": "local flush", "tlbie": "tlbie span", "ipi_send": "IPI send",
         "remote_wait": "remote wait", "device": "device inval"}


def _us(v, total):
    if numbers.missing(v):
        return numbers.NA
    share = f" {numbers.pct(100 * v / total, 0, sign=False)}" if total else ""
    return f"{numbers.fixed(v, 2)}{share}"


def _remote(d):
    if d is None:
        return numbers.NA
    return " ".join(f"{cpu}:{numbers.fixed(us, 2)}" for cpu, us in d.items()) or "-"


def _pages(p):
    """Pages flushed per call, and whole-mm flushes per call where there were any."""
    pages, full = p.get("pages"), p.get("full_flushes")
    if numbers.missing(pages):
        return numbers.NA
    return numbers.general(pages) + (f" +{numbers.general(full)} full" if full else "")


UNTIMED = "untimed"


def _untimed_only(p):
    """A pass whose local flushes no cross-call timed (x86 without a bystander flushes in place, inside
    page tables' time): its local flush is not 0 µs but not measured."""
    return not (p.get("local_flush_us") or 0) and (p.get("local_untimed") or 0) > 0


def _cell(p, config):
    """A pass's cell as compare names it ("op=madvise"), or its index where the file lists no cells."""
    from ..data.cells import name

    listed = (config or {}).get("cells") or []
    i = p.get("cell", "")
    return name(listed[i]) if isinstance(i, int) and 0 <= i < len(listed) else i


def rows(section, config=None):
    """One row a finished pass: stride (cell), syscall µs, each stage present, counts."""
    passes = [p for p in section.get("passes", []) if p.get("syscall_us") is not None]
    stages = [s for s in STAGES if s in ("page_table", "local_flush")
              or any((p.get(f"{s}_us") or 0) > 0 for p in passes)]
    cells = any("cell" in p for p in passes)
    headers = (["Cell"] if cells else []) + ["Stride", "Calls", "Syscall µs"] + [NAMES[s] for s in stages]
    untimed = any((p.get("local_untimed") or 0) > 0 for p in passes)
    headers += ["Pages"] + (["Untimed flushes"] if untimed else []) + ["IPIs wanted", "IPIs sent",
                                                                       "Remote flush µs (CPU)"]
    power = any(p.get("tlbie") is not None or p.get("hcalls") is not None for p in passes)
    if power:
        headers += ["tlbie", "hcalls"]
    body = []
    for p in passes:
        total = p["syscall_us"]
        line = ([_cell(p, config)] if cells else []) + [format_size(p["stride_bytes"]), p["calls"],
                                                          numbers.fixed(total, 2)]
        line += [UNTIMED if s == "local_flush" and _untimed_only(p) else _us(p.get(f"{s}_us"), total)
                 for s in stages]
        line += [_pages(p)] + ([numbers.general(p.get("local_untimed"))] if untimed else [])
        line += [numbers.general(p.get("ipis_wanted")), numbers.general(p.get("ipis_sent")),
                 _remote(p.get("remote_flush_us"))]
        if power:
            line += [numbers.general(p.get("tlbie")), numbers.general(p.get("hcalls"))]
        body.append(line)
    return headers, body


def overhead(section):
    """The traced calls' syscall time against the timed passes' µs per call: '+22% to +26%', or None."""
    ratios = [100 * (p["syscall_us"] / p["untraced_us"] - 1) for p in section.get("passes", [])
              if p.get("syscall_us") and p.get("untraced_us")]
    if not ratios:
        return None
    lo, hi = numbers.pct(min(ratios), 0), numbers.pct(max(ratios), 0)
    return lo if lo == hi else f"{lo} to {hi}"


def _emulated(host):
    """The note of a file from a guest under TCG (host.virtualized qemu-tcg), else None."""
    virtualized = (host or {}).get("virtualized") or ""
    return emulated_read_the_shares(virtualized) if virtualized.startswith("qemu-tcg") else None


def table(section, fmt="text", config=None, host=None):
    """The table, its legend and notes; '' where the file has no breakdown.  config: the file's, for
    the cells' names."""
    if not section:
        return ""
    headers, body = rows(section, config)
    out = [BREAKDOWN_TITLE]
    if body:
        out.append(layout.fitted(body, headers, "github" if fmt == "markdown" else "simple"))
    notes = [stages_sum_to_syscall(overhead(section))]
    if _emulated(host):
        notes.append(_emulated(host))
    lost = [format_size(p["stride_bytes"]) for p in section.get("passes", []) if p.get("lost")]
    if lost:
        notes.append(events_lost(", ".join(lost)))
    if not section.get("complete", True):
        notes.append(breakdown_interrupted())
    if section.get("missing"):
        notes.append(breakdown_missing(section["missing"]))
    if any(_untimed_only(p) for p in section.get("passes", []) if p.get("syscall_us") is not None):
        notes.append(local_flush_untimed())
    return "\n".join(out + notes[:MAX_NOTES])


PROFILE_STAGES = {"page_table": "page tables", "flush": "flush (all)", "local_flush": "local flush",
                  "remote_wait": "remote wait", "notifier": "notifier"}


def _share(v):
    return numbers.NA if numbers.missing(v) else numbers.pct(100 * v, 1, sign=False)


def profile_table(section, fmt="text", top=3, config=None, host=None):
    """run --profile's table: per stride (and cell) the named stages' inclusive shares, the bystanders'
    remote flush share and the top self functions; '' where the file has none."""
    if not section:
        return ""
    passes = [p for p in section.get("passes", []) if p.get("samples")]
    cells = any("cell" in p for p in passes)
    headers = (["Cell"] if cells else []) + ["Stride", "N"] + list(PROFILE_STAGES.values())
    headers += ["bystander flush", f"top {top} self"]
    body = []
    for p in passes:
        line = ([_cell(p, config)] if cells else []) + [format_size(p["stride_bytes"]), p["samples"]]
        line += [_share((p.get("stages") or {}).get(s)) for s in PROFILE_STAGES]
        line.append(_share((p.get("bystander_stages") or {}).get("local_flush")) if p.get("bystander_samples")
                    else "-")
        line.append(", ".join(f"{name} {_share(v)}" for name, v in (p.get("self") or [])[:top]))
        body.append(line)
    out = [PROFILE_TITLE]
    if body:
        out.append(layout.fitted(body, headers, "github" if fmt == "markdown" else "simple"))
    counts = [p["samples"] for p in passes] or [0]
    n = str(min(counts)) if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"
    notes = [samples_legend(section.get("event"), n)]
    if _emulated(host):
        notes.append(_emulated(host))
    if not section.get("complete", True):
        notes.append(profile_interrupted())
    return "\n".join(out + notes[:MAX_NOTES])


STAGE_NAMES = dict(NAMES, syscall="syscall", flush="flush (all)", notifier="notifier")


def _change(v, interval, unit):
    if numbers.missing(v):
        return numbers.NA
    out = f"{numbers.signed(v, 2)}{unit}"
    if interval is not None:
        out += " " + numbers.interval(interval[0], interval[1], lambda x: numbers.signed(x, 2))
    return out


def compare_table(cmp, fmt="text"):
    """After compare's rate table: per stride and stage, each side's µs per traced call (breakdown) or
    share of samples (profile) and the change, in µs and in percentage points; '' without any."""
    rows = getattr(cmp, "stages", None) or []
    if not rows:
        return ""
    tablefmt = "github" if fmt == "markdown" else "simple"
    out = []
    for kind in ("breakdown", "profile"):
        mine = [r for r in rows if r["kind"] == kind]
        if not mine:
            continue
        cells = any(r["cell"] is not None for r in mine)
        if kind == "breakdown":
            headers = (["Cell"] if cells else []) + ["Stride", "Stage", "Base µs", "New µs", "Change µs",
                                                     "Base %", "New %", "Change pp"]
        else:
            headers = (["Cell"] if cells else []) + ["Stride", "Stage", "Base %", "New %", "Change pp"]
        body = []
        for r in mine:
            line = ([r["cell"] if r["cell"] is not None else ""] if cells else []) + [
                format_size(r["stride_bytes"]), STAGE_NAMES.get(r["stage"], r["stage"])]
            if kind == "breakdown":
                line += [numbers.fixed(r["base_us"]), numbers.fixed(r["new_us"]),
                         _change(r["change_us"], r["us_interval"], "")]
            if r["stage"] == "syscall":  # the whole: 100% on both sides
                line += ["", "", ""]
            else:
                line += [numbers.fixed(r["base_share"], 1), numbers.fixed(r["new_share"], 1),
                         _change(r["change_pp"], r["pp_interval"], "")]
            body.append(line)
        out.append(COMPARE_BREAKDOWN_TITLE if kind == "breakdown" else COMPARE_PROFILE_TITLE)
        out.append(layout.fitted(body, headers, tablefmt))
    sizes = sorted({(r["n_base"], r["n_new"]) for r in rows})
    # one base/new pair per new side: "3/3, 3/1" (joined with "/" they read as one side's count)
    out.append(files_a_side(", ".join(f"{a}/{b}" for a, b in sizes),
                            any(r["pp_interval"] is not None for r in rows)))
    return "\n".join(out)
