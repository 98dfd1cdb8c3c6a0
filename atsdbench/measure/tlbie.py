"""POWER's tlbie/tlbiel trace events (powerpc:tlbie) decoded as the kernel encodes them: `local`
(tlbiel, this CPU only, or a broadcast tlbie), the invalidation scope in rb's IS bits (one page, one
PID, one LPID, everything), the PID in rs, ric and r.  POWER9's errata workarounds add broadcast
invalidations that flush nothing of the process: `classify` marks them "fixup" so they are counted
apart.  The encoding, bit by bit: docs/power.md#how-the-tlbie-tracepoint-encodes-an-invalidation."""
import re
from collections import Counter, namedtuple

from . import core

IS_SHIFT = 10          # PPC_BITLSHIFT(53)
SET_SHIFT = 12         # PPC_BITLSHIFT(51)
AP_SHIFT = 5           # PPC_BITLSHIFT(58)
OFFSET_MASK = 0xfff    # PPC_BITMASK(52, 63): not part of the address
PID_SHIFT = 32         # PPC_BITLSHIFT(31)
SCOPES = ("page", "pid", "lpid", "all")
RICS = ("tlb", "pwc", "all")
# mmu_get_ap() on radix: the AP field of each page size
RADIX_AP = {0: 4 << 10, 5: 64 << 10, 1: 2 << 20, 2: 1 << 30}
# fixup_tlbie_pid()/fixup_tlbie_lpid() flush "an address which is probably unused"
DUMMY_ADDRESS = ((1 << 52) - 1) & ~OFFSET_MASK
RIC_TLB = 0

# pseries hypervisor calls that change the hash page table (PAPR numbers, as hcall_entry prints them)
HCALLS = {4: "H_REMOVE", 8: "H_ENTER", 12: "H_READ", 16: "H_CLEAR_MOD", 20: "H_CLEAR_REF", 24: "H_PROTECT",
          292: "H_BULK_REMOVE"}
HPTE_INVALIDATE = {"H_REMOVE": 1, "H_BULK_REMOVE": 4}   # page table entries one call can remove, at most
# The counter columns of a traced pass (counters.py): every tlbie/tlbiel instruction, the broadcast ones,
# whole-PID flushes of a process (PID scope, PID != 0; a tlbiel walk over the TLB sets counts once: its
# set-0 instruction), the errata workarounds, tlbia; on hash, the hypervisor calls that change the hash
# page table, one column each (reading an entry, H_READ, changes nothing).
COLUMNS = ("tlbie", "tlbie_global", "tlbie_full", "tlbie_fixup", "tlbia")
# The hypervisor calls' columns and the tlbie columns' kernel filters are csrc/atsd_trace.c's table, which
# atsd counts with as perf counters (the workarounds need the order of events: "the same page again");
# this parser counts the same columns from a trace, and tests/measure/test_tlbie.py holds the filters to
# it on real traces.
_POWER = core.power_columns()
HCALL_COLUMNS = {c["opcode"]: c["name"] for c in _POWER if c["hash"]}
FILTERS = {c["name"]: c["filter"] for c in _POWER if c["event"] == "powerpc/tlbie"}

_LINE = re.compile(r"^\s*(?P<task>.+?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]\s+\S+\s+[\d.]+:\s+"
                   r"(?P<what>.*)$")
_ENTER = re.compile(r"sys_mprotect\(start: ([0-9a-f]+), len: ([0-9a-f]+), prot: ([0-9a-f]+)\)")
_FIELDS = re.compile(r"lpid=(\d+),? local=(\d+),? rb=(0x[0-9a-f]+),? rs=(0x[0-9a-f]+),? ric=(0x[0-9a-f]+),?"
                     r" prs=(0x[0-9a-f]+),? r=(0x[0-9a-f]+)")


class Tlbie(namedtuple("Tlbie", "lpid local rb rs ric prs r")):
    """One traced invalidation instruction (the tracepoint's fields as integers)."""

    __slots__ = ()

    @property
    def scope(self):
        return SCOPES[(self.rb >> IS_SHIFT) & 3]

    @property
    def ident(self):
        """The PID (process-scoped) or LPID (partition-scoped) the instruction names."""
        return self.rs >> PID_SHIFT if self.prs else self.rs & 0xffffffff

    @property
    def pid(self):
        return self.rs >> PID_SHIFT if self.prs else None

    @property
    def address(self):
        return self.rb & ~OFFSET_MASK if self.scope == "page" else None

    @property
    def page_size(self):
        if self.scope != "page" or not self.r:
            return None
        return RADIX_AP.get((self.rb >> AP_SHIFT) & 7)

    @property
    def set(self):
        return (self.rb >> SET_SHIFT) & 0xfff if self.scope != "page" else None

    @property
    def ric_name(self):
        return RICS[self.ric] if self.ric < len(RICS) else f"ric={self.ric}"

    def describe(self):
        where = "tlbiel" if self.local else "tlbie"
        who = f"PID {self.pid}" if self.prs else f"LPID {self.ident}"
        if self.scope == "page":
            size = f" {self.page_size >> 10}K" if self.page_size else ""
            return f"{where} page 0x{self.address:x}{size} {who}"
        what = {"pid": who, "lpid": f"LPID {self.ident}", "all": "everything"}[self.scope]
        return f"{where} {what} ({self.ric_name}, set {self.set})"


def parse(line):
    """The Tlbie in a trace line (or its field text), None when the line holds no tlbie event."""
    if "tlbie" not in line and "lpid=" not in line:
        return None
    m = _FIELDS.search(line)
    if not m:
        return None
    return Tlbie(*(int(v, 0) for v in m.groups()))


def classify(events, pid=None):
    """A label per event of one sequence (one flush operation, e.g. one mprotect call):

    "page"  a flush of one page,
    "full"  a flush of a whole PID, LPID or everything (a tlbiel walk over the TLB sets counts once:
            its set-0 instruction),
    "set"   the tlbiel of sets 1.. of such a walk,
    "fixup" a POWER9 errata workaround,
    "other" a page or PID flush naming another PID than `pid` (when given).
    """
    labels, last_page = [], None
    for e in events:
        label = _label(e, last_page, pid)
        if label == "page" and not e.local:
            last_page = e
        elif label not in ("fixup", "set"):
            last_page = None
        labels.append(label)
    return labels


def _label(e, last_page, pid):
    scope = e.scope
    if not e.local and scope == "page":
        if e.address == DUMMY_ADDRESS:
            return "fixup"
        if last_page is not None and (e.rb, e.rs, e.prs) == (last_page.rb, last_page.rs, last_page.prs):
            return "fixup"          # the store-queue workaround repeats the last page
        if e.ident == 0 and last_page is not None and e.address == last_page.address:
            return "fixup"          # the ERAT workaround flushes the same page for PID 0
    if not e.local and scope in ("pid", "lpid") and e.ident == 0 and e.ric == RIC_TLB:
        return "fixup"              # the ERAT workaround flushes PID (LPID) 0 after a flush
    if scope != "page" and e.set:
        return "set"
    if pid is not None and e.prs and scope in ("page", "pid") and e.pid != pid:
        return "other"
    return "page" if scope == "page" else "full"


def tally(events, pid=None, labels=None):
    """Counts of one sequence: tlbie (every instruction), tlbie_global (broadcast ones), tlbie_page,
    tlbie_full (whole-address-space flushes), tlbie_fixup, tlbie_other."""
    labels = classify(events, pid) if labels is None else labels
    counts = {"tlbie": len(events), "tlbie_global": sum(1 for e in events if not e.local)}
    for name in ("page", "full", "fixup", "other"):
        counts[f"tlbie_{name}"] = labels.count(name)
    return counts


def hcall_name(opcode):
    return HCALLS.get(opcode, f"hcall {opcode}")


def mprotect_calls(lines, prot=0):
    """The calls of mprotect(..., prot) in tracefs `trace` text, in order, as (length, [Tlbie], Counter of
    hcall opcodes): the tlbie and hcall_entry events a task logged between its sys_enter_mprotect and
    sys_exit_mprotect events (the kernel invalidates in the caller's context)."""
    open_calls, done = {}, []
    for line in lines:
        m = _LINE.match(line)
        if not m:
            continue
        pid, what = m["pid"], m["what"]
        enter = _ENTER.match(what)
        if enter:
            open_calls[pid] = (int(enter[2], 16), int(enter[3], 16), [], Counter())
        elif what.startswith("sys_mprotect ->"):
            call = open_calls.pop(pid, None)
            if call and call[1] == prot:
                done.append((call[0], call[2], call[3]))
        elif pid in open_calls:
            if what.startswith("tlbie:"):
                open_calls[pid][2].append(parse(what))
            elif what.startswith("hcall_entry:"):
                op = re.search(r"opcode=(\d+)", what)
                if op:
                    open_calls[pid][3][int(op[1])] += 1
    return done


def is_process_full(e):
    """A whole-PID flush of a process (not PID 0, the kernel's): what the tlbie_full column counts, and
    what the kernel filter `rb == 1024 && prs == 1 && rs >= 4294967296` selects (atsd counts with it)."""
    return e.scope == "pid" and bool(e.prs) and e.rb == 1 << IS_SHIFT and e.pid != 0


def pass_counts(lines, hcalls=False):
    """The counter columns (COLUMNS, and HCALL_COLUMNS with hcalls) of one traced pass, from the tracefs
    text of every CPU's buffer.  Each CPU's events are classified in their order on that CPU (a
    workaround follows the flush it works around on the same CPU)."""
    per_cpu, counts = {}, dict.fromkeys(COLUMNS, 0)
    if hcalls:
        counts.update(dict.fromkeys(HCALL_COLUMNS.values(), 0))
    for line in lines:
        m = _LINE.match(line)
        if not m:
            continue
        what = m["what"]
        if what.startswith("tlbie:"):
            e = parse(what)
            if e is not None:
                per_cpu.setdefault(m["cpu"], []).append(e)
        elif what.startswith("tlbia:"):
            counts["tlbia"] += 1
        elif hcalls and what.startswith("hcall_entry:"):
            op = re.search(r"opcode=(\d+)", what)
            if op and int(op[1]) in HCALL_COLUMNS:
                counts[HCALL_COLUMNS[int(op[1])]] += 1
    for events in per_cpu.values():
        labels = classify(events)
        counts["tlbie"] += len(events)
        counts["tlbie_global"] += sum(1 for e in events if not e.local)
        counts["tlbie_full"] += sum(1 for e, label in zip(events, labels) if label == "full" and is_process_full(e))
        counts["tlbie_fixup"] += labels.count("fixup")
    return counts
