"""Tables for `run` and `show`: functions that return strings.

One per-stride table builder serves both (stride_table): one block per cell, headed by its axis
values and judged under its own flush ceiling; the rates of one unit (single passes, or round
means); then us/call, latency, counter and expected-flush columns where a row has them.  The two
views differ only in which rate columns they print: run's (atsd prints the same table, so its
titles stay) Median, Min, Max of single passes to 2 decimals and the two spreads; show's N, Min,
Max, Median, Mean, Stddev and CV% of its unit to 3 decimals, the unit in the titles."""

from ..units import format_size
from . import numbers
from .layout import fitted
from .notes import NOISE_PROFILES, PLACEMENT, SESSION, VERIFY_HELD, WIDTH, hang, plural, see, what_gives_a_verdict

UNITS_NOTE = "GB/s = 10^9 bytes/s; sizes are binary (1G = 2^30 bytes)"
# show summarizes round means by default: its Median/Min/Max differ from these, and its columns say so.
RUN_UNIT_NOTE = "Median, Min, Max: of single passes; CV% within: of a round's passes, between: of round means"
INTERRUPTED_NOTE = "interrupted: only finished passes are shown and saved (complete: false)"
# Per-call counter columns of the `run` and `show` tables: (summary key, title, scale).
COUNTER_COLUMNS = (("gpu_touch_ms", "GPU touch ms", 1), ("ipis_per_call", "IPIs/call", 1),
                   ("flushes_per_call", "flushes/call", 1), ("full_flush_share", "full flush %", 100),
                   # POWER (counted from its trace events, see tlbie.py)
                   ("tlbie_per_call", "tlbie/call", 1), ("tlbie_global_per_call", "global/call", 1),
                   ("tlbie_full_per_call", "full PID/call", 1), ("tlbie_fixup_per_call", "fixup/call", 1),
                   ("tlbia_per_call", "tlbia/call", 1), ("h_remove_per_call", "H_REMOVE/call", 1),
                   ("h_bulk_remove_per_call", "H_BULK_REMOVE/call", 1), ("h_protect_per_call", "H_PROTECT/call", 1),
                   ("h_enter_per_call", "H_ENTER/call", 1), ("h_clear_mod_per_call", "H_CLEAR_MOD/call", 1),
                   ("h_clear_ref_per_call", "H_CLEAR_REF/call", 1),
                   # --device hmm (kprobe events): the mmu notifier's starts and the driver's callbacks
                   ("device_touch_ms", "device touch ms", 1), ("notifier_starts_per_call", "notifier/call", 1),
                   ("device_invalidates_per_call", "dev inval/call", 1))
# measured but shown only where some stride has one: POWER9 radix never issues tlbia, and most of
# the hypervisor calls do not occur in mprotect
QUIET = {"tlbia_per_call"} | {c[0] for c in COUNTER_COLUMNS if c[0].startswith("h_")}


def _counters_present(rows):
    """The counter columns (COUNTER_COLUMNS entries) that some row has."""
    return [c for c in COUNTER_COLUMNS if any(c[0] in r for r in rows)
            and (c[0] not in QUIET or any(r.get(c[0]) for r in rows))]


def flush_expectation(stride, host, bystanders=None):
    """'per-page' or 'full' where the kernel's single-page flush ceiling is known, else None.  POWER
    has a second, higher ceiling for flushes local to one CPU (tlbiel): it applies without bystanders.
    The ceilings are radix's: POWER's hash MMU removes every page's entry whatever the stride."""
    if host.get("mmu") == "Hash":
        return "per-page"
    ceiling = host.get("tlb_single_page_flush_ceiling")
    if bystanders == 0 and isinstance(host.get("tlb_local_single_page_flush_ceiling"), int):
        ceiling = host["tlb_local_single_page_flush_ceiling"]
    page = host.get("page_size")
    if not isinstance(ceiling, int) or not page:
        return None
    return "per-page" if stride // page <= ceiling else "full"


def headline(result):
    c = result.config
    axes = c.get("axes") or {}
    extras = [] if "pages" in axes else [f"{c['pages']} pages"]
    if (c.get("threads") or 1) > 1 and "threads" not in axes:
        extras.append(f"{c['threads']} {c.get('tasks') or 'threads'} on CPU {','.join(map(str, c.get('thread_cpus', [])))}")
    if c.get("bystanders") and "bystanders" not in axes:
        extras.append(f"{c['bystanders']} bystander(s) on CPU {','.join(map(str, c.get('bystander_cpus', [])))}")
    if not c.get("retouch", True):
        extras.append("no retouch")
    if c.get("gpu") is not None and "gpu" not in axes:
        extras.append(f"GPU {c['gpu']}")
    h = result.host
    rounds = plural(c['rounds'], 'round')
    if (c.get("adaptive") or {}).get("unit") == "run":  # --until --runs: config runs is the minimum
        rounds = (f"{plural(c['adaptive'].get('runs') or 0, 'sub-run')} (adaptive, at least {c.get('runs')}) "
                  f"of {plural(c['rounds'], 'round')}")
    elif c.get("adaptive"):  # config rounds is then the minimum
        rounds = f"{plural(c['adaptive'].get('rounds', 0), 'round')} (adaptive, at least {c['rounds']})"
    what = f"{op_text(c)} rate over {format_size(c['size'])}"
    workloads = workloads_of(c)
    if workloads:  # will-it-scale's loop: size is each task's pages a pass
        what = f"{','.join(map(str, workloads))} loops (will-it-scale) over {format_size(c['size'])} a task"
        extras.append(f"ASLR {c.get('aslr') or 'unknown'}")
    what += f" ({', '.join(extras)})" if extras else ""
    how = f"{rounds} x {plural(c['reps'], 'rep')}{' per cell' if axes else ''}, CPU {c.get('cpu')}"
    host = f"{h.get('kernel_release', '?')} {h.get('arch', '?')}, page size {format_size(h.get('page_size') or 0)}"
    # one line where it fits, else broken after the plan or before it; the cells on a line of their own
    line1 = f"{what}, {how}; {host}"
    if len(line1) > WIDTH:
        line1 = f"{what}, {how};\n{host}" if len(f"{what}, {how};") <= WIDTH else f"{what},\n{how}; {host}"
    line1 = "\n".join(hang(line, 2) for line in line1.split("\n"))
    units = [UNITS_NOTE]
    if workloads:
        units.append(workload_rates(format_size(h.get("page_size") or 0)))
    placed = [placements_rotate(c["placements"], c.get("placement_pool"))] if (c.get("placements") or 1) > 1 else []
    return "\n".join([line1] + ([hang(axes_text(c), 2)] if axes else []) + units + placed + trace_notes(c)
                     + ipi_notes(result.columns) + verify_notes(result))


def verify_notes(result):
    """run --verify: the verify passes' line above the table (where a file has them)."""
    from ..data.results import verify_summary

    summary = verify_summary(getattr(result, "verify", None) or [])
    return [verify_passes_line(summary, bool(workloads_of(result.config)))] if summary else []


def verify_passes_line(summary, workload=False):
    """Above run's and show's table, for a file with verify passes: what they checked, and how many of
    the checks proved something (the checker held the translation while the call ran).  workload: a
    --workload run, which takes them unasked (its loop's read-back is checked the same way)."""
    checks, held = summary["checks"], summary["held"]
    why = ", on by default for --workload (--no-verify skips them)" if workload else ""
    line = (f"verify: untimed passes after each round's timed ones{why}: {summary['stale']} stale in "
            f"{plural(checks, 'check')}; {held} of {checks} held the translation while the call ran")
    if checks - held:
        line += f" (the other {checks - held} proved nothing)"
    if summary.get("device_checks") is not None:  # --device hmm: the device's read after each call
        must = summary["device_failed"] + summary["device_zeros"]
        line += (f"; device (test_hmm): {summary['device_stale']} stale in {plural(summary['device_checks'], 'read')}, "
                 f"{must} refused or zero as they must be")
    return hang(see(line, VERIFY_HELD), 2)


def workload_rates(page):
    """Under a --workload run's headline: what its GB/s column is."""
    return hang(f"workload: a loop writes, zaps (MADV_DONTNEED) and reads back one {page} page: rates in loops/s, "
                f"as will-it-scale counts them (show --gbps: GB/s = loops/s x {page}) "
                "(docs/workloads.md#will-it-scales-loops)", 2)


def placements_rotate(k, mode):
    """Above run's and show's table for `run --placements K`: what the between-round spread holds."""
    if mode == "chained":
        return f"--placements {k}: too little memory for {k} at once; each round's region mapped beside the last"
    return f"--placements {k}: rounds rotate over {k} regions held at once; CV between includes placement"


def trace_notes(config):
    """Where the flush counts came from, or why there are none: above the table, with the units (the
    columns it explains), leaving the lines under it for what the numbers mean."""
    if config.get("trace_scope"):
        events = config.get("trace_events") or "tlb:tlb_flush"
        how = "tracepoint" if events == "tlb:tlb_flush" else "trace events"
        return [f"flush counts: {events} {how} ({config['trace_scope']}-wide), on warm-up passes (none timed)"]
    if config.get("trace_error") and config.get("trace") != "off":
        return [hang(f"no flush counts: {config['trace_error']}", 2)]  # the core's sentence
    return []


def ipi_notes(columns):
    """Where the IPIs/call column came from, beside the flush counts' line: they are counted on the timed
    passes (the flush counts on the warm-ups), so the two columns' passes differ."""
    if "ipis" not in columns.keys() or not columns.present("ipis").any():
        return []
    return ["IPIs: /proc/interrupts' TLB row (all CPUs), on timed passes"]


def op_text(config):
    """"madvise(MADV_DONTNEED)" for a file of one op; "mprotect,madvise" for an axis of ops."""
    from ..data.cells import OPS, op_of, value_text

    ops = (config.get("axes") or {}).get("op")
    if ops:
        return ",".join(value_text(v) for v in ops)
    return OPS.get(op_of(config), op_of(config))


def axes_text(config):
    """"4 cells interleaved in every round: bystanders 0,1 on CPU 1 x pages base,thp"."""
    from ..data.cells import value_text

    axes = config["axes"]
    cells = config.get("cells") or []
    cpus = config.get("bystander_cpus") or []
    parts = []
    for a, vs in axes.items():
        parts.append(f"{a} {','.join(value_text(v) for v in vs)}")
        if a == "bystanders" and cpus:
            parts[-1] += f" on CPU {','.join(map(str, cpus))}"
        if a == "threads" and config.get("tasks") == "processes":
            parts[-1] += " (processes)"
        if a == "threads" and config.get("thread_cpus"):
            parts[-1] += f" on CPU {','.join(map(str, config['thread_cpus']))}"
    return f"{len(cells)} cells interleaved in every round: {' x '.join(parts)}"


FORMATS = {"text": "simple", "markdown": "github", "csv": None}
LATENCY = ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_max_us")


def stride_rows(table, unit):
    """Per stride of one cell's samples (a whole file without cells): run's summary (spreads within
    and between rounds, us/call, latency, GPU, counters) with N, Min, Max, Median, Mean, Stddev and
    CV% of the observations of `unit` (a pass without a rate left out, as run always did)."""
    import numpy as np

    from ..analysis import stats

    rows = []
    by_stride = stats.observations_by_stride(table, unit)
    for row in stats.stride_summary(table):
        obs = by_stride.get(row["stride_bytes"], np.empty(0))
        obs = obs[~np.isnan(obs)]
        d = stats.describe(obs) if len(obs) else {"n": 0, **dict.fromkeys(("min", "max", "median", "mean",
                                                                            "stddev", "cv"), None)}
        rows.append({**row, **d, "unit": unit})
    return rows


def _cell_host(result, spec):
    """The host facts a cell is judged under: its own flush ceiling where it ran under one."""
    if spec.get("ceiling") is None:
        return result.host
    return {**result.host, "tlb_single_page_flush_ceiling": spec["ceiling"]}


def _rate_columns(view, unit, loops=False):
    """[(title, csv name, row -> text)]: the columns that tell the two views apart.  loops: a
    --workload's rates as will-it-scale gives them, loops/s (GB/s over the page a loop zaps)."""
    def col(title, name, key, fmt):
        if loops and fmt is not cv:
            return title, f"{name}_loops_per_s" if name else name, \
                lambda r: numbers.fixed(None if r.get(key) is None else r[key] * 1e9 / r["stride_bytes"], 0)
        return title, name, lambda r: fmt(r.get(key))

    def rate3(v):
        return numbers.rate(v, 3)

    def cv(v):
        return numbers.fixed(v, 1)

    if view == "run":
        return [col("Median loops/s" if loops else "Median GB/s", "median", "median", numbers.rate),
                col("Min", "min", "min", numbers.rate), col("Max", "max", "max", numbers.rate),
                col("CV% within", "cv_within_pct", "within_cv", cv),
                col("CV% between", "cv_between_pct", "between_cv", cv)]
    # run prints Median/Min/Max of single passes, show by default of round means: the same words
    # for two different numbers, so the line over show's table names its unit (what_show_summarizes).
    return [("N", "n", lambda r: str(r["n"]))] + [
        col(title, title.lower(), title.lower(), rate3) for title in ("Min", "Max", "Median", "Mean")] + [
        col("Stddev", "stddev", "stddev", rate3), col("CV%", "cv_pct", "cv", cv)]


def workloads_of(config):
    """The --workload loops a file ran (an axis or one), [] for --op passes."""
    return (config.get("axes") or {}).get("workload") or ([config["workload"]] if config.get("workload") else [])


def stride_table(result, unit="pass", fmt="text", view="run", gbps=False):
    """(table, warnings, unit shown): the per-stride table of `view` ("run" or "show") over `unit`
    ("pass" or "round"; rounds fall back to passes where a stride has a single round, and say so),
    as text, markdown or csv (one table, the cell and its axis values leading each row)."""
    from ..analysis import stats
    from ..data.cells import headings, value_text

    bystanders = result.config.get("bystanders")
    blocks = []
    for index, heading, spec, passes in headings(result):
        effective = stats.effective_unit(passes, unit)
        blocks.append((index, heading, spec, stride_rows(passes, effective), _cell_host(result, spec),
                       spec.get("bystanders", bystanders), effective))
    warnings = []
    if any(b[6] != unit for b in blocks):
        warnings.append("a stride has a single round: its spread ignores between-round variance")
    rows = [r for b in blocks for r in b[3]]
    shown = blocks[0][3][0]["unit"] if blocks[0][3] else unit

    loops = bool(workloads_of(result.config)) and not gbps
    columns = [("Stride", "stride", lambda r: format_size(r["stride_bytes"]))] + _rate_columns(view, shown, loops)
    columns.append(("us/call", "us_per_call", lambda r: numbers.fixed(r.get("us_per_call"), 3)))
    for key in (k for k in LATENCY if any(k in r for r in rows)):
        columns.append((f"{key.split('_')[1]} us", key[4:], lambda r, key=key: numbers.fixed(r.get(key), 3)))
    for key, title, scale in _counters_present(rows):
        columns.append((title, "full_flush_pct" if key == "full_flush_share" else key,
                        lambda r, key=key, scale=scale: numbers.fixed(
                            r[key] * scale if r.get(key) is not None else None)))
    expect = any(flush_expectation(r["stride_bytes"], b[4], b[5]) for b in blocks for r in b[3])

    def body(block):
        out = []
        for r in block[3]:
            line = [text(r) for _, _, text in columns]
            if expect:
                line.append(flush_expectation(r["stride_bytes"], block[4], block[5]) or "")
            out.append(line)
        return out

    if fmt == "csv":
        axes = list(result.config.get("axes") or {}) if blocks[0][0] is not None else []
        lead = ["cell"] + axes if blocks[0][0] is not None else []
        lines = [",".join(lead + [name for _, name, _ in columns] + (["expected_flush"] if expect else []))]
        for block in blocks:
            index, spec = block[0], block[2]
            first = [] if index is None else [str(index)] + [value_text(spec.get(a)) for a in axes]
            lines += [",".join(first + row) for row in body(block)]
        return "\n".join(lines), warnings, shown
    titles = [title for title, _, _ in columns] + (["expected flush"] if expect else [])
    align = {"stralign": "right"} if view == "run" else {}
    out = []
    for block in blocks:
        heading = block[1]
        table = fitted(body(block), titles, FORMATS[fmt], **align)
        if heading is not None:  # markdown: a paragraph of its own, or the table would continue it
            table = f"**{heading}**\n\n{table}" if fmt == "markdown" else f"{heading}\n{table}"
        out.append(table)
    return "\n\n".join(out), warnings, shown


def run_table(result, fmt="text"):
    """The per-stride table printed after a run: Median, Min, Max of single passes."""
    if not result.has_timed_pass():
        return no_measured_pass(result)
    return stride_table(result, "pass", fmt, view="run")[0]


def no_measured_pass(result):
    """What run and show print for a file without a timed pass, in the table's place."""
    warm = sum(1 for s in result.records if s.get("warmup"))
    kept = f" ({plural(warm, 'warm-up pass', 'warm-up passes')} kept)" if warm else ""
    return f"no measured pass: the run ended before its first timed pass{kept}"


def show_table(result, unit="round", fmt="text", scaling=False, gbps=False):
    """`atsdbench show`'s table, over rounds (default) or passes, and what its numbers are: (text, warnings).
    A threads sweep (analysis/scaling.has_sweep) adds its scaling table after the cells' blocks (text,
    markdown); scaling=True gives that table alone, in any format (csv too)."""
    from ..analysis import scaling as sweep

    if scaling:
        sweep.require_sweep(result)
        return scaling_table(result, fmt), []
    if not result.has_timed_pass() and fmt != "csv":
        return no_measured_pass(result), []
    table, warnings, shown = stride_table(result, unit, fmt, view="show", gbps=gbps)
    if fmt == "csv":
        return table, warnings
    unit_note = what_show_summarizes(shown, "loops/s" if workloads_of(result.config) and not gbps else "GB/s")
    if sweep.has_sweep(result):
        table += "\n\n" + scaling_table(result, fmt)
    return f"{unit_note}\n{table}", warnings


def what_show_summarizes(unit, rate="GB/s"):
    """The line over show's table: which observations its columns are of."""
    if unit == "round":
        return f"Min to Stddev: {rate} of round means (N = rounds); run's Median, Min, Max: of passes (--unit pass)"
    return f"Min to Stddev: {rate} of single passes (N = passes), as run prints them"


def scaling_table(result, fmt="text"):
    """A threads sweep's table by thread count (render/scaling.py), with the lines above it."""
    from ..analysis import scaling as sweep
    from . import scaling as sweep_table

    return sweep_table.show_table(sweep.analyse(result), fmt)


def run_report(result, calibrating=False):
    """run's report: the headline, the table, and the notes under it; calibrating: without the
    compare advice (calibrate is that advice; the profile's own table follows)."""
    return "\n".join([headline(result), RUN_UNIT_NOTE, run_table(result)] + notes(result, calibrating))


def notes(result, calibrating=False):
    """The lines under a result's table, the same for `run` and `show`: how an adaptive run ended,
    an interrupted run, idle bystanders, THP share, lag-1, what a compare of two like it detects
    (where the flush counts came from is in the headline, trace_notes)."""
    lines = adaptive_notes(result.config)
    if not result.complete:
        lines.append(INTERRUPTED_NOTE)
    notes = bystander_notes(result.columns) + disturbance_notes(result.columns) + thp_notes(result.columns)
    lag1 = result.config.get("round_lag1")
    if lag1 is None:  # files from before lag-1 was recorded
        from ..analysis.timeseries import round_lag1

        lag1 = round_lag1(result.columns)
    notes += lag1_notes(lag1)
    notes += placement_notes(result.records)
    notes += [] if calibrating else detect_notes(result)
    return [hang(line, 2) if line.startswith("warning: ") else line for line in lines + notes]


def detect_notes(result):
    """What a compare of two files like this one could see: each stride's smallest detectable speedup
    (80% power), from this file's own variance, as `compare` would compute it (with the noise
    profile it would find in the store)."""
    import math

    from ..analysis.compare import compare
    from ..data.noise_profile import Store
    from ..errors import UsageError

    store = Store()
    try:
        cmp = compare([result, result], store=store)  # the same design on both sides: the A/A of this file
    except UsageError:
        return []
    if cmp.withheld:
        if len(result.sub_runs()) < 2:
            return [no_verdict_alone(""), what_gives_a_verdict()]
        return [no_verdict_alone(_detects(compare([result, result], unit="run", store=store))),
                what_gives_a_verdict()]
    found = _detects(cmp)
    if not found:
        return []
    n = next(r["n_base"] for r in cmp.rows if not math.isnan(r.get("mde_pct", math.nan)))
    return [detects_with_noise_profiles(found, n)]


def no_verdict_alone(found):
    """Under run's and show's table, where one session a side gets no verdict: found = the range
    --unit run detects within a --runs file's session ('2.0-2.4%'), or ''."""
    if found:
        return see(f"no verdict alone for two such files; --unit run detects >= {found}", SESSION)
    return see("two files like this give no verdict alone: one session a side", SESSION)


def detects_with_noise_profiles(found, n):
    """A one-process file with a noise profile: what a compare of two like it detects."""
    return see(f"two runs like this: detects >= {found} (80% power, {plural(n, 'round')} a side)", NOISE_PROFILES)


def _detects(cmp):
    """The range of compare's rows' smallest detectable speedups, '2.0-2.4%' ('2.4%' where one); ''
    where no row has one (each stride's own is in compare's Detects column)."""
    import math

    found = [r["mde_pct"] for r in cmp.rows if not math.isnan(r.get("mde_pct", math.nan))]
    if not found:
        return ""
    low, high = (numbers.pct(m, 1, sign=False) for m in (min(found), max(found)))
    return low if low == high else f"{low[:-1]}-{high}"


def adaptive_notes(config):
    """An adaptive run's outcome under its table: whether every stride met the target and, where
    not, how far off, e.g. "target 0.5% not met after 40 rounds (598 s): 64K at 0.8% (stopped: time)"."""
    a = config.get("adaptive")
    if not a:
        return []
    from ..data.cells import labels_of, where_row

    labels = labels_of(dict(enumerate(config.get("cells") or [])))
    target = f"target {numbers.level(a['target'])}" + ("" if a.get("confidence", 95) == 95 else
                                                        f" ({numbers.level(a['confidence'])} CI)")
    seconds = a.get("elapsed_s") or 0
    taken = plural(a.get("runs") or 0, "sub-run") if a.get("unit") == "run" else \
        plural(a.get("rounds") or 0, "round")
    after = f"after {taken} ({numbers.fixed(seconds, 0 if seconds >= 10 else 1)} s)"
    stopped = a.get("stop_reason") or "error"
    missed = [r for r in a.get("half_widths") or [] if not r.get("met")]
    if a.get("half_widths") and not missed:
        scope = "every stride and cell" if any("cell" in r for r in a["half_widths"]) else "every stride"
        return [f"{target} met at {scope} {after}" + ("" if stopped == "target" else f" (stopped: {stopped})")]
    off = ", ".join(f"{where_row(r, labels)} at {numbers.general(r.get('half_width_pct'), suffix='%')}"
                    for r in missed)
    return [f"{target} not met {after}: {off or 'nothing measured'} (stopped: {stopped})"]


def bystander_notes(records):
    """Passes during which a bystander did not run (its CPU busy elsewhere) measured fewer remote
    flushes than the plan asked for: say how many."""
    from ..data.results import BYSTANDER_BUSY

    from ..data.columns import as_columns, flag

    cols = as_columns(records)
    flagged = cols.present("bystander_idle") & ~flag(cols, "warmup")
    idle = int((flag(cols, "bystander_idle") & flagged).sum())
    if not idle:
        return []
    return [f"warning: {idle} of {int(flagged.sum())} timed passes had a bystander under "
            f"{numbers.pct(100 * BYSTANDER_BUSY, 0, sign=False)} of the pass: fewer remote flushes"]


def disturbance_notes(records):
    """Passes that did not have their CPU to themselves (measured around each pass)."""
    from ..analysis.stats import disturbed
    from ..data.results import CPU_BUSY

    n, of = disturbed(records)
    if not n:
        return []
    return [f"warning: {n} of {of} timed passes disturbed (preempted, under "
            f"{numbers.pct(100 * CPU_BUSY, 0, sign=False)} on CPU, or steal): cpu_share",
            "  what to do: stop the host's other work, or pick a quiet CPU (`atsdbench info --cpus`, --cpu N)"]


def thp_notes(records):
    """--pages thp is advice (MADV_HUGEPAGE): warn where the kernel backed less of the region with
    huge pages (share read from /proc/self/smaps after populating)."""
    from ..data.columns import as_columns, timed

    shares = timed(as_columns(records), "thp_share")[1].astype(float).tolist()
    if not shares or min(shares) >= 0.9:
        return []
    low, high = (numbers.pct(100 * x, 0, sign=False) for x in (min(shares), max(shares)))
    return [f"warning: --pages thp: huge pages backed {low} to {high} of the region (fragmented, or THP off)"]


def wrap_note(line):
    """A note longer than WIDTH (one value per stride and cell) on lines of its own, under its start."""
    return hang(line, 2)


def placement_notes(records):
    """Where the rounds' regions sat in physical memory, when that varied: how many placements, their
    median PFNs' range, the 2M-contiguous share, the NUMA nodes."""
    from ..data.columns import as_columns

    cols = as_columns(records)
    if cols.get("placement_pfn_hash") is None and cols.get("placement_nodes") is None:
        return []
    regions = {}
    for lo in range(0, len(records), 8192):  # a batch of dicts at a time (a loaded file's view)
        for s in records[lo:lo + 8192]:
            if not s.get("warmup") and (s.get("placement_pfn_hash") is not None or s.get("placement_nodes") is not None):
                regions[(s.get("run", 0), s["round"], s.get("cell", 0))] = s
    hashes = {s.get("placement_pfn_hash") for s in regions.values()}
    nodes = sorted({s.get("placement_nodes") for s in regions.values()} - {None})
    if len(hashes) < 2 and len(nodes) < 2:
        return []
    medians = [s["placement_pfn_median"] for s in regions.values() if s.get("placement_pfn_median") is not None]
    contig = [s["placement_contig2m"] for s in regions.values() if s.get("placement_contig2m") is not None]
    return [placement_varied(
        max(len(hashes - {None}), len(nodes)), len({key[:2] for key in regions}),
        tuple(numbers.general(v / 1e6, 3, "M") for v in (min(medians), max(medians))) if medians else None,
        tuple(numbers.pct(100 * v, 0, sign=False) for v in (min(contig), max(contig))) if contig else None,
        " / ".join(nodes) if len(nodes) > 1 else None)]


def lag1_notes(rows):
    """The lag-1 autocorrelation of each stride's round means, and a warning where it is high."""
    from ..analysis import timeseries
    from ..units import format_size

    rows = [r for r in rows or [] if r.get("lag1") is not None]
    if not rows:
        return []
    cells = {r.get("cell", 0) for r in rows}
    text = ", ".join((f"cell {r['cell']} " if len(cells) > 1 else "") + f"{format_size(r['stride_bytes'])} "
                     f"{numbers.signed(r['lag1'])}" for r in rows)
    out = [wrap_note(f"lag-1 autocorrelation of round means: {text}")]
    for r in rows:
        w = timeseries.warn_if_autocorrelated(r["lag1"], r["rounds"], tests=len(rows))
        if w:
            out.append(f"warning: {format_size(r['stride_bytes'])}: {w}")
    return out


def placement_varied(placements, regions, medians=None, contig=None, nodes=None):
    """show/run, under the table, where rounds' regions sat on different physical pages.  medians and
    contig are (low, high) already formatted (render/numbers.py), None without root; nodes is None
    where one node held them all.  Wrapped under its first word where it is longer than WIDTH."""
    parts = ([f"NUMA nodes {nodes}"] if nodes else []) + \
        ([f"the median page frame number ranged {medians[0]} to {medians[1]}"] if medians else []) + \
        ([f"{contig[0]} to {contig[1]} of a region in 2M-contiguous runs"] if contig else [])
    head = f"placement: the rounds' regions sat on {placements} different sets of physical pages in {regions} rounds"
    return hang(see(head + "".join(f"; {p}" for p in parts), PLACEMENT), 2)
