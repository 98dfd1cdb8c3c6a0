"""`atsdbench import`: the standalone `atsd` program's output (csrc/atsd_output.c) as a result file.

Each field is checked as it is read, against the ranges the result schema (schema.py) holds: a bad
line gets one message naming the line and the field, the bad value cut short; the result is then
checked against the schema itself, so what import writes, load reads.  'atsd-output 2', what `atsd
--breakdown` writes, adds breakdown_* config fields and, after the samples, each traced pass as a
`breakdown` record and its raw tracefs lines (`trace` records), cut into stages here by
analysis/breakdown.py as `run --breakdown`'s are.  The format: docs/atsd.md.
"""
import itertools
import math
import re

from .. import __version__
from . import schema
from ..errors import UsageError
from .cells import OPS
from ..units import parse_bracketed
from .results import Result, disturbance, thread_disturbance
from .schema import MAX_BYTES, MAX_INT64, cut

# CONFIG_NR_CPUS is at most 8192 on every architecture Linux supports: a CPU list naming more is
# not a machine's (and 0-99999999999 must not become a list of 10^11 numbers).
MAX_CPUS = 8192
BYTES, COUNT, CPU = (1, MAX_BYTES), (0, MAX_INT64), (0, MAX_CPUS - 1)
# The whole-number fields of each record atsd writes, with their ranges; lat_*_ns are COUNTs.
INTS = {
    "host": {"page_size": BYTES, "hugepage_size": (-MAX_INT64, MAX_BYTES)},  # <= 0: none (-errno)
    "config": {"size": BYTES, "rounds": (1, MAX_INT64), "reps": (1, MAX_INT64), "warmup": COUNT,
               "warmup_rounds": COUNT, "cpu": CPU, "seed": (0, 2 ** 64 - 1), "runs": (1, MAX_INT64)},
    "sample": {"round": COUNT, "rep": COUNT, "order": COUNT, "stride_bytes": BYTES, "warmup": (0, 1), "ns": COUNT,
               "calls": (1, MAX_INT64), "ipis": (0, MAX_INT64), "cell": (0, 255),
               "bystanders": (0, MAX_CPUS), "threads": (1, MAX_CPUS), "traced": (0, 1), "run": COUNT, "preempted": COUNT, "cpu_ns": COUNT,
               "steal_ticks": COUNT, "canary_compute_ns": COUNT, "canary_chase_ns": COUNT,
               "loops": (1, MAX_INT64),  # --workload
               "device_touch_ns": COUNT},  # --device hmm
    # --verify: one record per verify pass (csrc/atsd_main.c's verify_cell)
    "verify": {"round": COUNT, "warmup": (0, 1), "stride_bytes": BYTES, "threads": (1, MAX_CPUS), "calls": COUNT,
               "checks": COUNT, "faults": COUNT, "zeros": COUNT, "stale": COUNT, "held": COUNT, "ns": COUNT,
               "run": COUNT, "cell": (0, 255), "device_checks": COUNT, "device_failed": COUNT, "device_zeros": COUNT,
               "device_stale": COUNT},
    # atsd --breakdown (csrc/atsd_breakdown.c): one record a traced pass, its trace lines after it
    "breakdown": {"stride_bytes": BYTES, "region_bytes": BYTES, "calls": (1, MAX_INT64), "lost": COUNT, "cpu": CPU,
                  "tid": (1, MAX_INT64), "cell": (0, 255)},
}
# bystanders and pages are lists: several values are an axis (cells, see plan.py).
LISTS = {"config": {"strides": BYTES, "bystander_cpus": CPU, "bystanders": (0, MAX_CPUS), "threads": (1, MAX_CPUS),
                    "thread_cpus": CPU, "verify_cpus": CPU},
         "verify": {"invalidator_cpus": CPU, "checker_cpus": CPU},
         # --threads: each thread's loop ns, CPU ns and involuntary switches, in thread order
         "sample": {"thread_ns": COUNT, "thread_cpu_ns": COUNT, "thread_preempted": COUNT}}
PAGES = ("base", "thp", "hugetlb")
DEVICES = ("none", "hmm")
REQUIRED = {"config": ("size", "strides", "rounds", "reps", "warmup", "warmup_rounds", "pages", "bystanders", "cpu",
                       "seed"),
            "sample": ("round", "rep", "stride_bytes", "warmup", "ns", "calls"),
            "verify": ("round", "op", "stride_bytes", "calls", "checks", "faults", "zeros", "stale", "held"),
            "breakdown": ("stride_bytes", "region_bytes", "lost", "op", "cpu", "tid")}
VERSIONS = ("atsd-output 1", "atsd-output 2")
# the flush counts of a traced pass, named as counters.py names them (tlb:tlb_flush on x86; POWER's
# tlbie events and hypervisor calls)
COUNTS = re.compile(r"(flushes|full_flushes|flushes_[a-z0-9_]+|tlbie|tlbie_[a-z]+|tlbia|h_[a-z_]+|notifier_starts|"
                    r"device_invalidates)")
_WHOLE = re.compile(r"-?[0-9]+")
_CPUS = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def _whole(key, value, bounds, where):
    # int() would take '+5', ' 5', '5_000' and other scripts' digits; atsd writes none of them.
    if not _WHOLE.fullmatch(value):
        raise UsageError(f"{where}: {key}={cut(value)} is not a whole number")
    lo, hi = bounds
    n = int(value) if len(value) <= len(str(hi)) + 1 else None  # 400 digits: out of range, not converted
    if n is None or not lo <= n <= hi:
        raise UsageError(f"{where}: {key}={cut(value)} is out of range ({lo} to {hi})")
    return n


def _number(key, value, where):
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v < 0:
        raise UsageError(f"{where}: {key}={cut(value)} is not a number of seconds")
    return v


def _list(key, value, bounds, where):
    parts = value.split(",")
    if value and not all(_WHOLE.fullmatch(p) for p in parts):
        raise UsageError(f"{where}: {key}={cut(value)} is not a comma-separated list of whole numbers")
    return [_whole(key, p, bounds, where) for p in parts if p]


def _cpu_range(part):
    """(first, last) of '3' or '2-5', or None where it is no range of CPUs below MAX_CPUS."""
    m = _CPUS.fullmatch(part)
    if not m or len(m[1]) > len(str(MAX_CPUS)) or len(m[2] or "") > len(str(MAX_CPUS)):
        return None  # longer numbers are refused before int() reads them
    lo, hi = int(m[1]), int(m[2] or m[1])
    return (lo, hi) if lo <= hi < MAX_CPUS else None


def cpu_list(text, where, key="online_cpus"):
    """'0-3,8' -> [0, 1, 2, 3, 8], each CPU below MAX_CPUS."""
    cpus = set()
    for part in (text or "").strip().split(","):
        if not part:
            continue
        found = _cpu_range(part)
        if found is None:
            raise UsageError(f"{where}: {key}={cut(text)} is not a list of CPUs below {MAX_CPUS}")
        cpus.update(range(found[0], found[1] + 1))
    return sorted(cpus)


def _fields(kind, parts, where):
    out = {}
    ints, lists = INTS.get(kind, {}), LISTS.get(kind, {})
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep:
            raise UsageError(f"{where}: {cut(part)} is not key=value")
        if key in out:  # which of the two atsd meant is not known: neither is kept silently
            raise UsageError(f"{where}: the key {cut(key)} is given twice")
        if key in ints:
            value = _whole(key, value, ints[key], where)
        elif key in lists:
            value = _list(key, value, lists[key], where)
        elif kind == "sample" and (key.startswith("lat_") or COUNTS.fullmatch(key)):
            value = _whole(key, value, COUNT, where)
        elif kind == "host" and key == "online_cpus":
            value = cpu_list(value, where)
        out[key] = value
    missing = [k for k in REQUIRED.get(kind, ()) if k not in out]
    if missing:
        raise UsageError(f"{where}: {kind} without {', '.join(missing)}")
    return out


def parse(text, name="<atsd output>"):
    """(host, config, samples, complete, verify, breakdown): breakdown is [(record, [trace lines])]
    (version 2), and the `end` record's fields are complete's and config's `end`."""
    lines = text.splitlines()
    version = lines[0].strip() if lines else None
    if version not in VERSIONS:
        raise UsageError(f"{name} is not atsd output (its first line must be 'atsd-output 1' or 2)")
    host, config, samples, verify, traced, end = None, None, [], [], [], {}
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        kind, *parts = line.split("\t")
        where = f"{name} line {number}"
        if kind not in ("host", "config", "sample", "verify", "end", "breakdown", "trace"):
            raise UsageError(f"{where}: unknown record {cut(kind)}")
        if kind in ("breakdown", "trace") and version != VERSIONS[1]:
            raise UsageError(f"{where}: a {kind} record needs 'atsd-output 2' (atsd --breakdown) as the first line")
        if kind == "trace":  # the rest of the line as tracefs printed it (analysis/breakdown.py reads it)
            if not traced:
                raise UsageError(f"{where}: a trace line before any breakdown record")
            traced[-1][1].append(line.partition("\t")[2])
            continue
        f = _fields(kind, parts, where)
        if (kind == "host" and host is not None) or (kind == "config" and config is not None) or (kind == "end" and end):
            raise UsageError(f"{where}: a second {kind} record (atsd writes one)")
        if kind == "host":
            host = f
        elif kind == "config":
            config = f
        elif kind == "sample":
            samples.append(f)
        elif kind == "verify":
            verify.append(f)
        elif kind == "breakdown":
            if f["op"] not in OPS:
                raise UsageError(f"{where}: breakdown op={cut(f['op'])} is not one of {', '.join(OPS)}")
            traced.append((f, []))
        else:
            end = f
    if host is None or config is None:
        raise UsageError(f"{name} has no host or config line")
    return host, config, samples, end.get("complete") == "1", verify, traced, end


def breakdown_section(config, traced, end, samples, cells, name):
    """atsd --breakdown's traced passes as run --breakdown's config section: each pass's trace cut into
    stages by analysis/breakdown.py, with the measured passes' µs per call beside it."""
    from ..analysis import breakdown as arithmetic

    have = set(filter(None, config.get("breakdown_have", "").split(",")))
    calls_max = config.get("breakdown_calls_max", "")
    section = {"clock": config.get("breakdown_clock") or None,
               "events": sorted(filter(None, config.get("breakdown_events", "").split(","))),
               "missing": list(filter(None, config.get("breakdown_missing", "").split(","))),
               "calls_max": _whole("breakdown_calls_max", calls_max, (1, MAX_INT64), f"{name} config"),
               "passes": [], "complete": end.get("breakdown_complete") == "1"}
    measured = arithmetic.untraced_us(samples)
    for record, lines in traced:
        cell = record.get("cell")
        if cells and (cell is None or cell >= len(cells)):
            raise UsageError(f"{name}: a breakdown record of a run with axes has no cell, or one out of range")
        one = {"stride_bytes": record["stride_bytes"], "region_bytes": record["region_bytes"], "lost": record["lost"]}
        if cells:
            one["cell"] = cell
        summary = None if record["lost"] else arithmetic.breakdown(lines, record["cpu"], record["tid"], record["op"],
                                                                   have)
        if summary is not None:
            one.update(summary)
            one["untraced_us"] = measured.get((cell if cells else None, record["stride_bytes"]))
        section["passes"].append(one)
    return section


def to_result(text, name="<atsd output>"):
    host, config, raw, complete, raw_verify, traced, end = parse(text, name)
    host = {"hostname": host.get("hostname", "unknown"), "arch": host.get("arch", "unknown"),
            "kernel_release": host.get("kernel_release", "unknown"),
            "kernel_version": host.get("kernel_version", "unknown"), "cpu_model": host.get("cpu_model", "unknown"),
            "mmu": host.get("mmu", "unknown"), "online_cpus": host.get("online_cpus", []),
            "affinity": "unknown", "page_size": host.get("page_size"),
            "hugepage_size": host.get("hugepage_size") if (host.get("hugepage_size") or 0) > 0 else None,
            "thp_enabled": parse_bracketed(host.get("thp_enabled")), "thp_defrag": "unknown",
            "boot_id": host["boot_id"] if host.get("boot_id") not in (None, "", "unknown") else None,
            "python": "none (atsd)", "atsdbench": f"atsd, imported by {__version__}"}
    size = config["size"]
    pages = config["pages"].split(",")
    if not config["bystanders"] or not all(p in PAGES for p in pages):
        raise UsageError(f"{name}: config pages={cut(config['pages'])} or bystanders is not a valid list")
    ops = config.get("op", "mprotect").split(",")  # an atsd from before --op timed mprotect
    if not all(o in OPS for o in ops):
        raise UsageError(f"{name}: config op={cut(config.get('op'))} is not a list of {', '.join(OPS)}")
    # in the C core's cell numbering: op slowest, then bystanders, pages
    threads = config.get("threads", [1])  # an atsd from before --threads ran one
    workloads = config["workload"].split(",") if config.get("workload") else [None]
    if not all(w in ("tlb_flush1", "tlb_flush2", "tlb_flush3", None) for w in workloads):
        raise UsageError(f"{name}: config workload={cut(config.get('workload'))} is not a list of tlb_flush1/2/3")
    devices = config.get("device", "none").split(",")  # an atsd from before --device had none
    if not all(d in DEVICES for d in devices):
        raise UsageError(f"{name}: config device={cut(config.get('device'))!r} is not a list of {', '.join(DEVICES)}")
    lists = {"workload": workloads, "op": ops, "threads": threads, "bystanders": config["bystanders"],
             "pages": pages, "device": devices}
    axes = {k: v for k, v in lists.items() if len(v) > 1}
    cfg = {"size": size, "strides": config["strides"],
           "rounds": config["rounds"], "reps": config["reps"], "warmup": config["warmup"],
           "warmup_rounds": config["warmup_rounds"], "processes": False, "pages": pages[0], "op": ops[0],
           "threads": threads[0], "tasks": config.get("tasks", "threads"), "thread_cpus": config.get("thread_cpus", []),
           "bystanders": config["bystanders"][0], "cpu": config["cpu"],
           "bystander_cpus": config.get("bystander_cpus", []),
           "latency": config.get("latency") == "1", "retouch": config.get("retouch") != "0",
           "trace": "auto" if "trace_scope" in config or "trace_error" in config else "off",
           "label": config.get("label"), "seed": config["seed"], "gpu": None, "source": "atsd"}
    if devices != ["none"]:
        cfg["device"] = devices[0]
    if workloads[0]:
        cfg.update(workload=workloads[0], aslr=config.get("aslr"))
    for key in ("cpu_reason", "trace_scope", "trace_events", "trace_error", "device_count_error"):  # how atsd counted
        if key in config:
            cfg[key] = config[key]
    if "spread" in config:
        cfg["spread"] = _number("spread", config["spread"], f"{name} config")
    cfg["runs"] = config.get("runs", 1)  # an atsd from before --runs ran one process
    if "gap" in config:
        cfg["gap"] = _number("gap", config["gap"], f"{name} config")
    if axes:
        cfg["axes"] = axes
        cfg["cells"] = [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]
    samples = []
    for s in raw:
        ns = s["ns"]
        sample = {"round": s["round"], "rep": s["rep"], "order": s.get("order"), "stride_bytes": s["stride_bytes"],
                  "warmup": bool(s["warmup"]), "ns": ns, "seconds": ns / 1e9, "calls": s["calls"],
                  "gbps": size / ns if ns else float("nan"), "us_per_call": ns / 1e3 / s["calls"],
                  "traced": bool(s.get("traced", 0))}
        if "ipis" in s:
            sample["ipis"] = s["ipis"]
        if "device_touch_ns" in s:
            sample["device_touch_ns"] = s["device_touch_ns"]
        if workloads[0]:  # will-it-scale's loop: the rate is loops, gbps the pages they zapped
            if s.get("loops") != s["calls"]:
                raise UsageError(f"{name}: a workload's sample has no loops=, or not its calls")
            sample.update(loops=s["loops"], loops_per_s=s["loops"] * 1e9 / ns if ns else None,
                          gbps=s["loops"] * s["stride_bytes"] / ns if ns else float("nan"))
        if "thread_ns" in s:  # --threads: every thread by the rule run applies
            n = len(s["thread_ns"])
            if not n == len(s.get("thread_cpu_ns", ())) == len(s.get("thread_preempted", ())) \
                    or n < (1 if workloads[0] else 2) \
                    or s["calls"] % n:
                raise UsageError(f"{name}: a sample's thread columns disagree on the thread count")
            sample["threads"] = n
            sample["us_per_call"] = ns / 1e3 / (s["calls"] // n)
            sample.update(thread_disturbance(list(zip(s["thread_ns"], s["thread_cpu_ns"], s["thread_preempted"])),
                                             s.get("steal_ticks"), ns))
        elif "preempted" in s and "cpu_ns" in s:  # an atsd from before these fields measured none
            sample.update(disturbance(s["preempted"], s["cpu_ns"], s.get("steal_ticks"), ns))
        for key in ("canary_compute_ns", "canary_chase_ns"):
            if key in s:
                sample[key] = s[key]
        if "run" in s:  # --runs: the sub-run (its own process), as run --runs records it
            if s["run"] >= cfg["runs"]:
                raise UsageError(f"{name}: a sample's run={s['run']} is not one of config runs={cfg['runs']}")
            sample["run"] = s["run"]
        sample.update({k: v for k, v in s.items() if COUNTS.fullmatch(k)})
        if axes:
            if "cell" not in s or s["cell"] >= len(cfg["cells"]):
                raise UsageError(f"{name}: a sample of a run with axes has no cell, or one out of range")
            sample["cell"] = s["cell"]
            sample.update(cfg["cells"][s["cell"]])
        for q in ("p50", "p90", "p99", "max"):
            if f"lat_{q}_ns" in s:
                sample[f"lat_{q}_us"] = s[f"lat_{q}_ns"] / 1e3
        samples.append(sample)
    if config.get("verify") == "1":
        cfg["verify"], cfg["verify_cpus"] = True, config.get("verify_cpus", [])
    verify = []
    for v in raw_verify:
        if v["op"] not in OPS:
            raise UsageError(f"{name}: a verify record's op={cut(v['op'])} is not one of {', '.join(OPS)}")
        record = dict(v, warmup=bool(v.get("warmup", 0)))
        if axes:
            if "cell" not in v or v["cell"] >= len(cfg["cells"]):
                raise UsageError(f"{name}: a verify record of a run with axes has no cell, or one out of range")
            record.update(cfg["cells"][v["cell"]])
        verify.append(record)
    if config.get("breakdown") == "1":
        cfg["breakdown"] = breakdown_section(config, traced, end, samples, cfg.get("cells"), name)
    result = Result(host, cfg, samples, complete, verify=verify)
    schema.check(result.to_dict(), name)  # what is imported loads again
    return result


def load(path):
    from .inputs import read_input

    return to_result(*read_input(path))
