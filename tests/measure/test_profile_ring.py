"""csrc/atsd_profile.c's ring-record parser (through measure/core.perf_parse) on bytes captured on this
project's VM (tests/fixtures/profile: cpu-clock samples on CPU 1 while a thread there ran 64K mprotect
calls; capture.py says how), and analysis/profile's shares of them.  Pure: no perf_event_open."""
import struct

import pytest

from atsdbench.analysis import profile
from atsdbench.measure import core

PERF_RECORD_LOST, PERF_RECORD_SAMPLE = 2, 9
KERNEL_MARK = (1 << 64) - 128   # PERF_CONTEXT_KERNEL


def _ring(fixtures):
    return (fixtures / "profile" / "perf-ring.bin").read_bytes()


def _symbols(fixtures):
    return profile.Symbols((fixtures / "profile" / "kallsyms.txt").read_text())


def sample(cpu, tid, chain, ip=0x1234):
    body = struct.pack("QIIII", ip, tid, tid, cpu, 0) + struct.pack("Q", len(chain)) + struct.pack(
        f"{len(chain)}Q", *chain)
    return struct.pack("IHH", PERF_RECORD_SAMPLE, 0, 8 + len(body)) + body


def test_the_captured_ring_parses_whole(fixtures):
    data = _ring(fixtures)
    flat, lost, used = core.perf_parse(data)
    samples = profile.split(flat)
    assert used == len(data) and lost == 0 and len(samples) > 500
    assert {cpu for cpu, _, _ in samples} == {1}  # the CPU the capture sampled
    assert all(chain and all(a < KERNEL_MARK - 4095 for a in chain) for _, _, chain in samples)  # no markers


def test_the_mprotect_calls_are_in_the_symbolized_chains(fixtures):
    symbols = _symbols(fixtures)
    samples = [(c, t, [symbols.name(a) for a in chain]) for c, t, chain in profile.split(core.perf_parse(_ring(
        fixtures))[0])]
    from collections import Counter

    # the capturing thread: the one with most mprotect samples (other processes shared the CPU)
    tid = Counter(t for _, t, chain in samples if "do_mprotect_pkey" in chain).most_common(1)[0][0]
    s = profile.shares(samples, 1, tid)
    incl = dict(s["inclusive"])
    assert incl["do_mprotect_pkey"] > 0.5 and 0 < s["stages"]["page_table"] <= 1
    assert sum(share for _, share in s["self"]) <= 1 + 1e-9
    assert s["stages"]["flush"] > 0  # 64K calls flush: flush_tlb_mm_range is sampled


def test_a_record_cut_at_the_end_is_left_for_the_next_read(fixtures):
    data = _ring(fixtures)
    whole = profile.split(core.perf_parse(data)[0])
    cut = len(data) // 2 + 3
    first, _, used = core.perf_parse(data[:cut])
    assert used <= cut and used > 0
    rest, _, used2 = core.perf_parse(data[used:])
    assert profile.split(first) + profile.split(rest) == whole and used + used2 == len(data)


def test_markers_are_skipped_lost_records_counted_and_other_records_passed_over():
    data = (sample(3, 77, [KERNEL_MARK, 0xffffffff81000010, 0xffffffff81000020])
            + struct.pack("IHH", PERF_RECORD_LOST, 0, 24) + struct.pack("QQ", 5, 42)
            + struct.pack("IHH", 1, 0, 16) + b"\0" * 8  # PERF_RECORD_MMAP-sized junk of another type
            + sample(2, 78, [KERNEL_MARK], ip=0xffffffff81000099))
    flat, lost, used = core.perf_parse(data)
    assert lost == 42 and used == len(data)
    assert profile.split(flat) == [(3, 77, [0xffffffff81000010, 0xffffffff81000020]),
                                   (2, 78, [0xffffffff81000099])]  # no chain: the sample's own IP


def test_a_chain_longer_than_its_record_is_refused():
    bad = bytearray(sample(1, 1, [1, 2]))
    struct.pack_into("Q", bad, 8 + 24, 1000)  # nr = 1000 in a 2-address record
    with pytest.raises(OSError):
        core.perf_parse(bytes(bad))


def test_a_full_output_stops_at_a_whole_sample():
    data = sample(1, 1, [1, 2, 3]) + sample(1, 2, [4, 5, 6])
    flat, _, used = core.perf_parse(data, cap=8)
    assert profile.split(flat) == [(1, 1, [1, 2, 3])] and used == len(data) // 2


def test_symbols_hidden_and_found():
    assert profile.Symbols("0000000000000000 T a\n0000000000000000 T b\n").hidden
    s = profile.Symbols("ffffffff81000000 T _text\nffffffff81000100 t inner\nffffffff81000200 D data\n")
    assert not s.hidden and s.name(0xffffffff81000150) == "inner" and s.name(0xffffffff81000250) == "inner"
    assert s.name(0x10) == "0x10"


@pytest.mark.parametrize("nr", [(1 << 64) - 3, 1 << 61])
def test_a_chain_length_that_wraps_is_refused(nr):
    """nr x 8 computed in 64 bits wrapped to within the record for these: 2^61 passed as "out is full"
    (the ring then stuck on it), 2^64 - 3 wrapped n + 3 + nr too and the parser read and wrote out of
    bounds.  A record with such an nr is malformed, never a sample."""
    bad = bytearray(sample(1, 1, []))
    struct.pack_into("Q", bad, 8 + 24, nr)
    with pytest.raises(OSError):
        core.perf_parse(bytes(bad))
