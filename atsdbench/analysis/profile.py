"""run --profile's arithmetic: kernel callchains sampled during untimed passes -> shares of the top
kernel functions (self: the innermost frame; inclusive: anywhere in the chain) and of named stages.

Pure: symbols in, shares out (measure/profile.py samples through the core's perf ring reader and
symbolizes with /proc/kallsyms).  A share is of the measuring thread's samples on its CPU during the
pass (N = those samples); the bystanders' CPUs are summed apart (their remote flushes).
"""
import bisect
import re
from collections import Counter

# stage -> the kernel functions that are it (inclusive: a sample is in the stage when any frame matches)
STAGES = {
    "page_table": re.compile(r"^(change_protection|change_p[a-z0-9]*_range|zap_pte_range|zap_p[a-z0-9]*_range|"
                             r"unmap_page_range|unmap_single_vma|__split_huge_pmd)$"),
    "flush": re.compile(r"^(flush_tlb_mm_range|flush_tlb_range|tlb_flush_mmu|tlb_finish_mmu|__flush_tlb_range|"
                        r"radix__flush_tlb_range.*|radix__flush_tlb_mm|hash__flush_tlb_range.*|flush_hash_range)$"),
    "local_flush": re.compile(r"^(flush_tlb_func|native_flush_tlb_one_user|native_flush_tlb_local|flush_tlb_local|"
                              r"_tlbiel_.*|__tlbiel_.*|radix__local_flush_tlb.*)$"),
    "remote_wait": re.compile(r"^(smp_call_function_many_cond|on_each_cpu_cond_mask|csd_lock_wait)$"),
    "notifier": re.compile(r"^(__mmu_notifier_.*|mmu_notifier_.*|pnv_npu2_.*|arm_smmu_.*invalidate.*)$"),
}
TOP = 10


class Symbols:
    """/proc/kallsyms text -> address to function name (text symbols only)."""

    def __init__(self, text):
        rows = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tTwW":
                try:
                    rows.append((int(parts[0], 16), parts[2]))
                except ValueError:
                    continue
        rows.sort()
        self.addrs = [a for a, _ in rows]
        self.names = [n for _, n in rows]

    @property
    def hidden(self):
        """kptr_restrict (or no privilege): every address reads 0."""
        return not self.addrs or self.addrs[-1] == 0

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        return self.names[i] if i >= 0 else f"0x{addr:x}"


def split(flat):
    """The core's flat array (cpu, tid, n, n addresses ...) -> [(cpu, tid, [addresses])]."""
    out, i = [], 0
    while i + 3 <= len(flat):
        cpu, tid, n = int(flat[i]), int(flat[i + 1]), int(flat[i + 2])
        out.append((cpu, tid, [int(a) for a in flat[i + 3:i + 3 + n]]))
        i += 3 + n
    return out


def shares(samples, cpu, tid, bystander_cpus=()):
    """samples: [(cpu, tid, [function names, innermost first])] -> the shares of one pass."""
    mine = [chain for c, t, chain in samples if c == cpu and t == tid and chain]
    others = [chain for c, t, chain in samples if c in bystander_cpus and chain]
    n = len(mine)
    out = {"samples": n, "bystander_samples": len(others)}
    if not n:
        out.update({"self": [], "inclusive": [], "stages": {}, "bystander_stages": {}})
        return out
    self_counts = Counter(chain[0] for chain in mine)
    incl = Counter(name for chain in mine for name in set(chain))
    out["self"] = [[name, k / n] for name, k in self_counts.most_common(TOP)]
    out["inclusive"] = [[name, k / n] for name, k in incl.most_common(TOP)]
    out["stages"] = {stage: sum(1 for chain in mine if any(rx.match(f) for f in chain)) / n
                     for stage, rx in STAGES.items()}
    out["bystander_stages"] = ({stage: sum(1 for chain in others if any(rx.match(f) for f in chain)) / len(others)
                                for stage in ("local_flush",) for rx in [STAGES[stage]]} if others else {})
    return out
