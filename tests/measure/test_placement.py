"""measure/placement: the pagemap and numa_maps rules on captured fixtures (pure), and one live read."""
import os

import numpy as np
import pytest

from atsdbench.measure import placement

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "placement")
REGION = 0x7faf39000000  # the captured region (tests/fixtures/placement/pagemap-base-4M.txt's header)
PRESENT = 1 << 63


def _fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def _pagemap():
    lines = [line for line in _fixture("pagemap-base-4M.txt").splitlines() if not line.startswith("#")]
    return np.array([int(x, 16) for x in lines], dtype=np.uint64)


def test_captured_base_pages_are_scattered():
    """The captured 4M base-page region (root, this VM): every page present, no 2M run contiguous."""
    out = placement.summarize(_pagemap(), REGION, 4096)
    assert out["placement_present"] == 1.0
    assert out["placement_contig2m"] == 0.0
    assert out["placement_pfn_min"] <= out["placement_pfn_median"] <= out["placement_pfn_max"]
    pfns = _pagemap() & np.uint64(placement.PAGEMAP_PFN_MASK)
    assert out["placement_pfn_min"] == int(pfns.min()) and out["placement_pfn_max"] == int(pfns.max())
    assert len(out["placement_pfn_hash"]) == 16


def _entries(pfns, present=True):
    return np.array([(PRESENT if present else 0) | p for p in pfns], dtype=np.uint64)


def test_contiguous_aligned_runs_count_whole():
    # 4M at a 2M boundary: the first 2M one aligned physical run, the second scattered
    first = list(range(1024, 1024 + 512))
    second = list(range(5000, 5000 + 512 * 2, 2))
    out = placement.summarize(_entries(first + second), 0x200000, 4096)
    assert out["placement_contig2m"] == 0.5
    assert out["placement_pfn_min"] == 1024 and out["placement_pfn_max"] == 5000 + 1022


def test_contiguous_but_misaligned_is_not_a_run():
    # physically contiguous, but starting at a PFN off a 2M boundary: no huge mapping could cover it
    out = placement.summarize(_entries(range(1025, 1025 + 1024)), 0x200000, 4096)
    assert out["placement_contig2m"] == 0.0


def test_virtual_offset_counts_only_whole_2m_chunks():
    # the region starts 1M past a 2M boundary: its first 256 pages belong to no whole 2M chunk
    pfns = list(range(7, 7 + 256)) + list(range(2048, 2048 + 512)) + list(range(9000, 9000 + 256))
    out = placement.summarize(_entries(pfns), 0x300000, 4096)
    assert out["placement_contig2m"] == 0.5


def test_64k_pages_make_32_page_runs():
    out = placement.summarize(_entries(range(64, 64 + 64)), 0x400000, 65536)
    assert out["placement_contig2m"] == 1.0


def test_hash_is_of_the_page_order():
    a = placement.summarize(_entries([1, 2, 3, 4]), 0, 4096)
    b = placement.summarize(_entries([2, 1, 3, 4]), 0, 4096)
    assert a["placement_pfn_hash"] != b["placement_pfn_hash"]
    assert a["placement_pfn_median"] == b["placement_pfn_median"] == 2  # the lower median, a real PFN


def test_unprivileged_pagemap_gives_no_pfn():
    """Without CAP_SYS_ADMIN the kernel zeroes PFNs: present is still known, the rest is null."""
    out = placement.summarize(_entries([0] * 512), 0, 4096)
    assert out["placement_present"] == 1.0
    assert all(out[k] is None for k in placement.COLUMNS if k != "placement_present")


def test_absent_pages_break_a_run_and_lower_present():
    pfns = list(range(512, 1024))
    entries = _entries(pfns)
    entries[3] = np.uint64(0)
    out = placement.summarize(entries, 0, 4096)
    assert out["placement_present"] == round(511 / 512, 4) and out["placement_contig2m"] == 0.0


def test_numa_nodes_of_the_captured_region():
    nodes = placement.numa_nodes(_fixture("numa_maps"), _fixture("maps"), REGION, REGION + (4 << 20))
    assert nodes == {0: 1024}
    assert placement.nodes_text(nodes) == "0"


def test_numa_nodes_across_two_nodes_and_outside():
    numa = _fixture("numa_maps").replace("N0=1024", "N0=1000 N1=24")
    assert placement.nodes_text(placement.numa_nodes(numa, _fixture("maps"), REGION, REGION + 4096)) == "0,1"
    assert placement.numa_nodes(numa, _fixture("maps"), 0x1000, 0x2000) is None
    assert placement.numa_nodes("", "", REGION, REGION + 1) is None
    assert placement.nodes_text(None) is None


def test_read_from_a_fake_proc(tmp_path):
    entries = _entries(range(512, 1024))
    (tmp_path / "pagemap").write_bytes(b"\0" * 8 * 16 + entries.astype("<u8").tobytes())
    (tmp_path / "maps").write_text("00010000-00210000 rw-p 00000000 00:00 0\n")
    (tmp_path / "numa_maps").write_text("00010000 default anon=512 dirty=512 N1=512 kernelpagesize_kB=4\n")
    out = placement.read(16 * 4096, 512 * 4096, 4096, proc=str(tmp_path))
    assert out["placement_pfn_min"] == 512 and out["placement_nodes"] == "1"
    assert placement.read(0, 4096, 4096, proc=str(tmp_path / "none")) == dict.fromkeys(placement.COLUMNS)


@pytest.mark.live
def test_live_region_placement():
    from atsdbench.measure import core

    with core.Region(4 << 20, 2 << 20, "base") as r:
        out = placement.read(r.address, 4 << 20, core.page_size())
    assert out["placement_present"] == 1.0
    if os.geteuid() == 0:
        assert out["placement_pfn_min"] > 0 and out["placement_contig2m"] is not None


def test_pool_mode_holds_k_where_memory_allows():
    assert placement.pool_mode(1, 1 << 30, 1, 8 << 30) is None
    assert placement.pool_mode(4, 1 << 30, 1, 8 << 30) == "held"
    assert placement.pool_mode(4, 1 << 30, 2, 8 << 30) == "chained"  # two page backings, each its own K
    assert placement.pool_mode(4, 1 << 30, 1, None) == "held"


def _pfns(region, size):
    from atsdbench.measure import core

    entries = placement.read_pagemap(region.address, size, core.page_size())
    return set((entries & np.uint64(placement.PAGEMAP_PFN_MASK)).tolist())


@pytest.mark.live
@pytest.mark.skipif(os.geteuid() != 0, reason="PFNs are shown to root only")
def test_pool_regions_hold_disjoint_physical_pages():
    from atsdbench.measure import core

    size = 4 << 20
    pool = placement.Pool(3, size, 2 << 20, "held")
    try:
        regions = [pool.region("base", r) for r in range(6)]
        assert [slot for _, slot in regions] == [0, 1, 2, 0, 1, 2]  # rotating, round r on slot r mod K
        assert regions[0][0] is regions[3][0]
        sets = [_pfns(r, size) for r, _ in regions[:3]]
        assert all(len(s) == size // core.page_size() for s in sets)
        assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    finally:
        pool.close()
        pool.close()  # a second release is a no-op


@pytest.mark.live
@pytest.mark.skipif(os.geteuid() != 0, reason="PFNs are shown to root only")
def test_chained_pool_maps_the_next_region_while_the_last_is_held():
    size = 4 << 20
    pool = placement.Pool(3, size, 2 << 20, "chained")
    try:
        first, slot = pool.region("base", 0)
        before = _pfns(first, size)
        second, _ = pool.region("base", 1)
        assert slot is None and not (before & _pfns(second, size))
        assert first._r is None or first._r.addr == placement_null()
    finally:
        pool.close()


def placement_null():
    from atsdbench.measure import core

    return core.ffi.NULL


@pytest.mark.live
def test_mem_node_binds_the_region():
    """--mem-node N: the region's mapping carries the MPOL_BIND policy (numa_maps says bind:N), and
    the placement reads node N; without it the kernel's default policy."""
    from atsdbench.measure import core, procfs

    for node, policy in ((0, "bind:0"), (None, "default")):
        with core.Region(4 << 20, 2 << 20, "base", node) as r:
            line = [l for l in procfs.read("/proc/self/numa_maps").splitlines()
                    if int(l.split()[0], 16) == r.address]
            out = placement.read(r.address, 4 << 20, core.page_size())
        assert line and line[0].split()[1] == policy, line
        assert out["placement_nodes"] == "0"
    with pytest.raises(OSError, match="on NUMA node 1023"):
        core.Region(4 << 20, 2 << 20, "base", 1023)
