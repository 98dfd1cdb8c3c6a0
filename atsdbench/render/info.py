"""`atsdbench info` as text: one fact a line, warnings last."""
from ..units import format_cpulist
from ..units import format_size
from .notes import hang
from .numbers import fixed


def _list(v):
    return format_cpulist(v) if isinstance(v, list) and v and isinstance(v[0], int) else str(v)


def _ceiling(f):
    value, why = f["tlb_single_page_flush_ceiling"], f.get("tlb_single_page_flush_ceiling_problem")
    return f"{value} ({why})" if value == "unknown" and why else value


def render_cpus(rows, auto=None):
    """info --cpus: one row per CPU, and which one --cpu auto takes."""
    from tabulate import tabulate

    table = [[r["cpu"], fixed(r["gbps"], 2), fixed(r["cv_pct"], 1), fixed(r["irq_per_s"], 0), fixed(r["steal_per_s"], 2),
              fixed(r["canary_ms"], 2)] for r in rows]
    head = "64K mprotect rate per CPU (GB/s = 10^9 bytes/s; 3 rounds of a fresh 64M region, 4 passes each)"
    text = tabulate(table, headers=["CPU", "GB/s", "CV% rounds", "IRQs/s", "steal/s", "canary ms"],
                    disable_numparse=True, stralign="right")
    lines = [head, text]
    if auto:
        lines.append(f"--cpu auto takes CPU {auto[0]} ({auto[1]})")
    lines.append("a brief look for choosing --cpu, not a measurement to compare kernels with")
    return "\n".join(lines)


def render(facts, warnings, cpus=None, auto=None):
    """info: the host's facts, a line each, its warnings, and with --cpus the CPU table."""
    f = facts
    pools = ", ".join(f"{format_size(size)}: {p['free']}/{p['total']} free" for size, p in
                      sorted(f.get("hugepage_pools", {}).items(), key=lambda kv: int(kv[0]))) or "none"
    accel = "; ".join(f"{a['address']} {a['vendor']} {a['kind']} ({a['device_id']}), driver {a['driver'] or 'none'}"
                      for a in f.get("accelerators", [])) or "none found in PCI sysfs"
    mit = f.get("mitigations", {})
    lines = [
        ("arch", f["arch"]), ("kernel", f"{f['kernel_release']} {f['kernel_version']}"), ("CPU model", f["cpu_model"]),
        ("online CPUs", _list(f["online_cpus"])), ("affinity", _list(f["affinity"])), ("SMT", f["smt"]),
        ("NUMA nodes", _list(f["numa_nodes"])), ("base page size", format_size(f["page_size"])),
        ("THP enabled / defrag", f"{f['thp_enabled']} / {f['thp_defrag']}"), ("hugetlb pools", pools),
        ("MMU", f["mmu"]), ("TLB single-page flush ceiling", _ceiling(f)),
        *([("TLB local single-page flush ceiling", f["tlb_local_single_page_flush_ceiling"])]
          if f.get("tlb_local_single_page_flush_ceiling", "unknown") != "unknown" else []),
        ("THP size", format_size(f["thp_size"]) if isinstance(f.get("thp_size"), int) else "unknown"),
        ("TLB CPU flags", " ".join(f["tlb_cpu_flags"]) if isinstance(f["tlb_cpu_flags"], list) else f["tlb_cpu_flags"]),
        ("page-table isolation", mit.get("meltdown", "unknown")),
        ("mitigations", ", ".join(f"{k}: {v}" for k, v in mit.items() if k != "meltdown" and v != "Not affected")
         or ("none needed" if mit else "unknown")),
        ("cpufreq governor", f["cpufreq_governor"]), ("boost", f["boost"]), ("hypervisor", f["hypervisor"]),
        ("accelerators", accel), ("nvidia_uvm loaded", "yes" if f["nvidia_uvm_loaded"] else "no"),
        ("tlb:tlb_flush tracepoint", f.get("tlb_flush_tracepoint", "unknown")),
        *([("powerpc:tlbie tracepoint", f["tlbie_tracepoint"])] if "tlbie_tracepoint" in f else []),
        ("load average", " ".join(fixed(x, 2) for x in f["loadavg"])),
    ]
    width = max(len(k) for k, _ in lines)
    out = [hang(f"{k + ':':<{width + 1}} {v}", width + 2) for k, v in lines]
    out += [hang(f"warning: {w}", 2) for w in warnings]
    if cpus is not None:
        out += ["", render_cpus(cpus, auto)]
    return "\n".join(out)


def render_json(facts, warnings, cpus=None, auto=None):
    """info --json: the facts and warnings (and --cpus' rows with the CPU --cpu auto takes)."""
    import json

    out = {"host": facts, "warnings": warnings}
    if cpus is not None:
        out.update(cpus=cpus, cpu_auto={"cpu": auto[0], "reason": auto[1]})
    return json.dumps(out, indent=1)
