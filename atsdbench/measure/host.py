"""Host facts: what a result was measured on.  Parsers take text so fixtures can test them."""
import os
import re
import platform
import socket

from .. import __version__
from ..units import format_cpulist, parse_bracketed, parse_cpulist
from . import ceiling
from .procfs import online_cpus, parse_meminfo, read


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


def probe(cpuinfo_text=None):
    """The facts every result file carries; probed once per run."""
    uname = platform.uname()
    cpuinfo = parse_cpuinfo(read("/proc/cpuinfo") if cpuinfo_text is None else cpuinfo_text)
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
        # replicate files from different boots are a level of replication above runs
        "boot_id": (read("/proc/sys/kernel/random/boot_id") or "").strip() or None,
        "python": platform.python_version(),
        "atsdbench": __version__,
    }


# --- the fuller probe behind `atsdbench info` (also stored in every result file) ---

PCI_VENDORS = {"0x10de": "NVIDIA", "0x1014": "IBM"}
PCI_DEVICES = {("0x1014", "0x04ea"): "NPU2 (NVLink 2, POWER9)", ("0x1014", "0x04bf"): "NPU (NVLink 1, POWER8)"}
TLB_FLAGS = ("pcid", "invpcid", "invlpgb", "pti")


def pci_devices(root="/sys/bus/pci/devices"):
    """Accelerators and coherent devices: NVIDIA GPUs, IBM NPUs, with their drivers."""
    out = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    for name in names:
        base = os.path.join(root, name)
        vendor = (read(os.path.join(base, "vendor")) or "").strip()
        device = (read(os.path.join(base, "device")) or "").strip()
        if vendor not in PCI_VENDORS:
            continue
        if vendor == "0x1014" and (vendor, device) not in PCI_DEVICES:
            continue
        cls = (read(os.path.join(base, "class")) or "").strip()
        if vendor == "0x10de" and not cls.startswith(("0x0300", "0x0302")):
            continue  # NVIDIA audio, USB and bridge functions are not GPUs
        driver = os.path.basename(os.readlink(os.path.join(base, "driver"))) if os.path.islink(
            os.path.join(base, "driver")) else None
        out.append({"address": name, "vendor": PCI_VENDORS[vendor], "vendor_id": vendor, "device_id": device,
                    "kind": PCI_DEVICES.get((vendor, device), "GPU"), "driver": driver})
    return out


def mitigations(root="/sys/devices/system/cpu/vulnerabilities"):
    out = {}
    try:
        for name in sorted(os.listdir(root)):
            out[name] = (read(os.path.join(root, name)) or "").strip()
    except OSError:
        pass
    return out


def hypervisor(cpuinfo_flags, cpuinfo_text=""):
    kind = (read("/sys/hypervisor/type") or "").strip()
    if kind:
        return kind
    if "hypervisor" in cpuinfo_flags:
        return "yes (cpuinfo flag)"
    if re.search(r"^platform\s*:\s*pSeries", cpuinfo_text or "", re.MULTILINE):
        return "PowerVM/KVM guest (pSeries)"
    return "none detected"


def hugepage_pools(root="/sys/kernel/mm/hugepages"):
    pools = {}
    try:
        for name in sorted(os.listdir(root)):
            m = re.match(r"hugepages-(\d+)kB", name)
            if m:
                total = (read(os.path.join(root, name, "nr_hugepages")) or "").strip()
                free = (read(os.path.join(root, name, "free_hugepages")) or "").strip()
                pools[int(m.group(1)) * 1024] = {"total": int(total or 0), "free": int(free or 0)}
    except OSError:
        pass
    return pools


def int_or_unknown(text):
    text = (text or "").strip()
    return int(text) if text.lstrip("-").isdigit() else "unknown"


def tracepoint_states(arch):
    """What `info` says of the flush tracepoints.  On POWER tlb:tlb_flush exists but never fires (the
    architecture does not call it); flushes are counted from powerpc:tlbie there (counters.py)."""
    from .core import find_tracepoint, tracepoint_problem

    if not arch.startswith(("ppc64", "powerpc")):
        return {"tlb_flush_tracepoint": "readable" if find_tracepoint()[0] is not None
                else tracepoint_problem()}
    tlbie = find_tracepoint("powerpc/tlbie")[0] is not None
    return {"tlb_flush_tracepoint": "not used: it never fires on POWER",
            "tlbie_tracepoint": "readable (flushes counted from it)" if tlbie
            else tracepoint_problem("powerpc:tlbie")}


def full():
    """Everything `atsdbench info` shows; unknown stays 'unknown'."""
    cpuinfo_text = read("/proc/cpuinfo") or ""
    cpuinfo = parse_cpuinfo(cpuinfo_text)
    facts = probe(cpuinfo_text)
    cpu = "/sys/devices/system/cpu"
    smt = (read(f"{cpu}/smt/active") or "").strip()
    facts.update({
        "platform": cpuinfo["platform"] or "unknown",
        "smt": {"1": "on", "0": "off"}.get(smt, "unknown"),
        "numa_nodes": parse_cpulist(read("/sys/devices/system/node/online", "")) or "unknown",
        "numa_memory_nodes": memory_nodes() or "unknown",
        "hugepage_pools": hugepage_pools(),
        # x86/ or powerpc/ in debugfs (root); POWER also has the ceiling of flushes local to one CPU.
        "tlb_single_page_flush_ceiling": int_or_unknown(read(ceiling.find() or "/nonexistent")),
        "tlb_local_single_page_flush_ceiling": int_or_unknown(
            read("/sys/kernel/debug/powerpc/tlb_local_single_page_flush_ceiling")),
        "thp_size": int_or_unknown(read("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")),
        "tlb_cpu_flags": [f for f in TLB_FLAGS if f in cpuinfo["cpu_flags"]] if facts["arch"] in ("x86_64", "i686")
        else "n/a",
        "mitigations": mitigations(),
        "cpufreq_governor": (read(f"{cpu}/cpu0/cpufreq/scaling_governor") or "unknown").strip(),
        "boost": {"1": "on", "0": "off"}.get((read(f"{cpu}/cpufreq/boost") or "").strip(),
                                           {"0": "on", "1": "off"}.get(
                                               (read(f"{cpu}/intel_pstate/no_turbo") or "").strip(), "unknown")),
        "hypervisor": hypervisor(cpuinfo["cpu_flags"], cpuinfo_text),
        "accelerators": pci_devices(),
        "nvidia_uvm_loaded": os.path.isdir("/sys/module/nvidia_uvm"),
        "loadavg": [float(x) for x in (read("/proc/loadavg") or "0 0 0").split()[:3]],
    })
    facts.update(tracepoint_states(facts["arch"]))
    if facts["tlb_single_page_flush_ceiling"] == "unknown":
        facts["tlb_single_page_flush_ceiling_problem"] = ceiling.locate()[1] or "its file does not hold a number"
    return facts


def memory_nodes(root="/sys/devices/system/node"):
    """The NUMA nodes that have memory (sysfs has_memory; else online), [] where sysfs does not say."""
    for name in ("has_memory", "online"):
        nodes = parse_cpulist(read(os.path.join(root, name), "") or "")
        if nodes:
            return nodes
    return []


def warnings(facts, pages=None, bystanders=0, mem_node=None):
    """pyperf `system show`-style advice, one line each."""
    out = []
    if facts.get("cpufreq_governor") not in ("performance", "unknown"):
        out.append(f"CPU frequency governor is {facts['cpufreq_governor']}, not performance: rates will wander")
    if facts.get("boost") == "on":
        out.append("turbo/boost is on: rates depend on temperature and the other cores' load")
    hv = facts.get("hypervisor", "")
    if hv and hv != "none detected":
        out.append(f"running in a virtual machine ({hv}): invalidations may be trapped or batched by the host")
    thp = facts.get("thp_enabled")
    if pages == "base" and thp == "always":
        out.append("THP is 'always' but --pages base asks for base pages (atsdbench uses MADV_NOHUGEPAGE)")
    if pages == "thp" and thp == "never":
        out.append("THP is 'never': --pages thp will get base pages")
    load = facts.get("loadavg", [0])[0]
    if load > 0.5 * max(1, len(facts.get("online_cpus", [1]))):
        out.append(f"load average {load:.2f} is high for {len(facts.get('online_cpus', []))} CPUs")
    nodes = facts.get("numa_memory_nodes") or []
    if isinstance(nodes, list) and len(nodes) > 1 and mem_node is None:
        out.append(f"memory on NUMA nodes {format_cpulist(nodes)}: a run's region is not pinned (run --mem-node N "
                   "binds it)")
    if bystanders and bystanders > len(facts.get("affinity", [])) - 1:
        out.append(f"{bystanders} bystanders requested but only {len(facts.get('affinity', [])) - 1} other CPUs")
    return out
