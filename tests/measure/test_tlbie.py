"""POWER tlbie decoding, on trace text captured from the radix and hash guests of scripts/power-check."""
import re

import pytest

from atsdbench.measure import tlbie

K64 = 64 << 10


def trace(fixtures, name):
    return (fixtures / "power" / name).read_text().splitlines()


def ceilings(fixtures):
    console = (fixtures / "power" / "power9-radix.console").read_text()
    return (int(re.search(r"@@ ceiling (\d+)", console)[1]), int(re.search(r"@@ local_ceiling (\d+)", console)[1]))


def test_fields_decode_as_the_kernel_encodes_them():
    page = tlbie.parse("tlbie: lpid=0, local=0, rb=0x7fff830100a0, rs=0x300000000, ric=0x0, prs=0x1, r=0x1")
    assert (page.scope, page.address, page.page_size, page.pid, page.local) == ("page", 0x7fff83010000, K64, 3, 0)
    pid = tlbie.parse("lpid=0 local=0 rb=0x400 rs=0x300000000 ric=0x2 prs=0x1 r=0x1")   # older format: no commas
    assert (pid.scope, pid.pid, pid.set, pid.ric_name, pid.address) == ("pid", 3, 0, "all", None)
    walk = tlbie.Tlbie(lpid=0, local=1, rb=0x7f400, rs=5 << 32, ric=0, prs=1, r=1)
    assert (walk.scope, walk.set, walk.pid) == ("pid", 0x7f, 5)
    lpid = tlbie.Tlbie(lpid=7, local=0, rb=0x800, rs=7, ric=0, prs=0, r=1)
    assert (lpid.scope, lpid.ident, lpid.pid) == ("lpid", 7, None)
    assert tlbie.Tlbie(0, 1, 0xc00, 0, 2, 1, 1).scope == "all"
    assert tlbie.parse("hcall_entry: opcode=4") is None
    assert tlbie.hcall_name(292) == "H_BULK_REMOVE" and tlbie.hcall_name(999) == "hcall 999"


def test_radix_with_a_bystander_flushes_globally_per_page_then_the_whole_pid(fixtures):
    ceiling, _ = ceilings(fixtures)
    calls = tlbie.mprotect_calls(trace(fixtures, "radix-bystanders1.trace"))
    assert sorted(length for length, _, _ in calls) == [K64, 1 << 20, 2 << 20, 4 << 20]
    pids = {e.pid for _, events, _ in calls for e in events if e.pid}
    assert len(pids) == 1
    pid = pids.pop()
    for length, events, _ in calls:
        n = length // K64
        c = tlbie.tally(events, pid)
        assert c["tlbie_global"] == c["tlbie"] == len(events)
        if n > ceiling:
            assert (c["tlbie_page"], c["tlbie_full"]) == (0, 1)
            full = [e for e, label in zip(events, tlbie.classify(events, pid)) if label == "full"]
            assert full[0].scope == "pid" and full[0].pid == pid
        else:
            assert (c["tlbie_page"], c["tlbie_full"]) == (n, 0)
        # the POWER9 errata workarounds: counted apart, never as flushes of the process
        assert c["tlbie_fixup"] == c["tlbie"] - c["tlbie_page"] - c["tlbie_full"] > 0
        assert c["tlbie_other"] == 0


def test_radix_without_a_bystander_flushes_locally_per_page(fixtures):
    _, local_ceiling = ceilings(fixtures)
    calls = tlbie.mprotect_calls(trace(fixtures, "radix-bystanders0.trace"))
    assert len(calls) == 4
    for length, events, _ in calls:
        n = length // K64
        assert n <= local_ceiling
        c = tlbie.tally(events)
        assert c == {"tlbie": n, "tlbie_global": 0, "tlbie_page": n, "tlbie_full": 0, "tlbie_fixup": 0,
                     "tlbie_other": 0}
        assert all(e.local for e in events)


def test_a_local_pid_flush_walks_every_tlb_set_and_counts_once(fixtures):
    events = [tlbie.parse(line) for line in trace(fixtures, "radix-tlbiel-pid.trace")]
    assert [e.set for e in events] == list(range(len(events)))
    labels = tlbie.classify(events)
    assert labels.count("full") == 1 and labels.count("set") == len(events) - 1
    assert tlbie.tally(events)["tlbie_full"] == 1


def test_hash_invalidates_through_the_hypervisor(fixtures):
    calls = tlbie.mprotect_calls(trace(fixtures, "hash-bystanders1.trace"))
    assert len(calls) == 4
    for length, events, ops in calls:
        n = length // K64
        assert events == []
        named = {tlbie.hcall_name(op): k for op, k in ops.items()}
        removed = sum(tlbie.HPTE_INVALIDATE[k] * v for k, v in named.items() if k in tlbie.HPTE_INVALIDATE)
        assert removed >= n and sum(named.values()) >= -(-n // 4)


def page(address, pid, local=0):
    return tlbie.Tlbie(0, local, address | 0xa0, pid << 32, 0, 1, 1)


@pytest.mark.parametrize("sequence, labels", [
    # _tlbie_va with both errata: the page, the ERAT copy for PID 0, the store-queue repeat
    ([page(0x10000, 3), page(0x10000, 0), page(0x10000, 3)], ["page", "fixup", "fixup"]),
    # two pages and no workaround
    ([page(0x10000, 3), page(0x20000, 3)], ["page", "page"]),
    # a local repeat is not a workaround (fixups are broadcast only)
    ([page(0x10000, 3, 1), page(0x10000, 3, 1)], ["page", "page"]),
    # the kernel's own flush of PID 0 (RIC_FLUSH_ALL) is a flush, the ERAT fixup (RIC_FLUSH_TLB) is not
    ([tlbie.Tlbie(0, 0, 0x400, 0, 2, 1, 1), tlbie.Tlbie(0, 0, 0x400, 0, 0, 1, 1)], ["full", "fixup"]),
    # fixup_tlbie_pid's dummy address
    ([tlbie.Tlbie(0, 0, 0x400, 3 << 32, 0, 1, 1), page(tlbie.DUMMY_ADDRESS, 3)], ["full", "fixup"]),
])
def test_errata_fixups(sequence, labels):
    assert tlbie.classify(sequence) == labels


def test_flushes_of_another_pid_are_not_the_process(fixtures):
    events = [page(0x10000, 4), tlbie.Tlbie(0, 0, 0x400, 4 << 32, 0, 1, 1)]
    assert tlbie.classify(events, pid=3) == ["other", "other"]
    assert tlbie.tally(events, pid=3)["tlbie_other"] == 2


def test_describe_reads_like_the_encoding():
    assert page(0x7fff83000000, 3).describe() == "tlbie page 0x7fff83000000 64K PID 3"
    assert tlbie.Tlbie(0, 1, 0x1400, 2 << 32, 0, 1, 1).describe() == "tlbiel PID 2 (tlb, set 1)"


# --- the counter columns of a traced pass (counters.py on POWER) ---

def kernel_filter(expr, e):
    """A tracepoint filter of the kind atsd gives the kernel ('rb == 1024 && prs == 1'), evaluated on one
    event's fields: what the kernel's filter would select."""
    fields = e._asdict()
    if expr is None:
        return True
    py = expr.replace("&&", " and ").replace("||", " or ")
    return bool(eval(py, {}, fields))  # the expressions are constants of tlbie.py


def test_pass_counts_of_a_bystander_pass(fixtures):
    # one call each of 64K, 1M, 2M (per page + two workarounds) and 4M (whole PID + two workarounds)
    c = tlbie.pass_counts(trace(fixtures, "radix-bystanders1.trace"))
    assert c == {"tlbie": 1 + 16 + 32 + 1 + 4 * 2, "tlbie_global": 58, "tlbie_full": 1, "tlbie_fixup": 8, "tlbia": 0}


def test_pass_counts_without_a_bystander_and_a_tlbiel_walk(fixtures):
    c = tlbie.pass_counts(trace(fixtures, "radix-bystanders0.trace"))
    assert (c["tlbie"], c["tlbie_global"], c["tlbie_full"], c["tlbie_fixup"]) == (1 + 16 + 32 + 64, 0, 0, 0)
    walk = tlbie.pass_counts(trace(fixtures, "radix-tlbiel-pid.trace"))
    assert (walk["tlbie"], walk["tlbie_full"]) == (128, 1)   # 128 sets, one flush of the PID


def test_pass_counts_on_hash_count_the_hypervisor_calls(fixtures):
    lines = trace(fixtures, "hash-bystanders1.trace")
    c = tlbie.pass_counts(lines, hcalls=True)
    assert c["tlbie"] == 0 and set(tlbie.HCALL_COLUMNS.values()) <= set(c)
    assert c["h_remove"] == sum(1 for x in lines if x.rstrip().endswith("opcode=4")) > 0
    assert c["h_bulk_remove"] == sum(1 for x in lines if x.rstrip().endswith("opcode=292")) > 0
    assert "h_remove" not in tlbie.pass_counts(lines)   # counted only where asked (a hash MMU)


def test_workarounds_are_told_apart_per_cpu():
    # CPU 1's tlbiel walk lands between CPU 0's page flush and its repeat in the merged text: per CPU,
    # the repeat still follows its page flush and is a workaround
    line = "  python3-{tid}  [{cpu:03d}] .....  7.5: tlbie: lpid=0, local={local}, rb={rb:#x}, rs={rs:#x}, ric=0x0, prs=0x1, r=0x1"
    lines = [line.format(tid=9, cpu=0, local=0, rb=0x7fff830000a0, rs=3 << 32),
             line.format(tid=10, cpu=1, local=1, rb=0x400, rs=3 << 32),
             line.format(tid=10, cpu=1, local=1, rb=0x1400, rs=3 << 32),
             line.format(tid=9, cpu=0, local=0, rb=0x400, rs=0),
             line.format(tid=9, cpu=0, local=0, rb=0x7fff830000a0, rs=3 << 32)]
    c = tlbie.pass_counts(lines)
    assert (c["tlbie"], c["tlbie_global"], c["tlbie_full"], c["tlbie_fixup"]) == (5, 3, 1, 2)
    assert tlbie.pass_counts(lines[:1] + lines[3:])["tlbie_fixup"] == 2


def test_tracefs_line_with_tgid_and_without_flags():
    a = "  atsd-122  ( 122) [001] d..1.  7.585644: tlbie: lpid=0, local=0, rb=0x400, rs=0x300000000, ric=0x0, prs=0x1, r=0x1"
    assert tlbie.pass_counts([a, "# tracer: nop", "CPU:1 [LOST 3 EVENTS]"])["tlbie_full"] == 1


def test_the_full_column_is_what_the_kernel_filter_selects(fixtures):
    # atsd counts tlbie_full with a kernel filter (no order to go by); on every real event the filter
    # and the decoder agree
    events = [e for name in ("radix-bystanders1.trace", "radix-bystanders0.trace", "radix-tlbiel-pid.trace")
              for e in map(tlbie.parse, trace(fixtures, name)) if e is not None]
    events += [tlbie.Tlbie(0, 0, 0x400, 0, 2, 1, 1), tlbie.Tlbie(7, 0, 0x800, 7, 0, 0, 1)]
    assert any(tlbie.is_process_full(e) for e in events) and not all(tlbie.is_process_full(e) for e in events)
    for column, expr in tlbie.FILTERS.items():
        for e in events:
            want = {"tlbie": True, "tlbie_global": not e.local, "tlbie_full": tlbie.is_process_full(e)}[column]
            assert kernel_filter(expr, e) == want, (column, e)
