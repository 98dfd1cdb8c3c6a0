"""Where a region sits in physical memory: read once per round, after populating, untimed.

Which physical pages a run invalidates moves its rate by 20-40% (docs/methodology.md#placement), so
each round records the share of pages present, the share in contiguous 2M-aligned runs, a fingerprint
of the PFNs (from /proc/self/pagemap: root only, elsewhere the columns are null) and the NUMA nodes.
The rules are pure functions of the kernel's bytes (`summarize`, `numa_nodes`), tested on fixtures;
`read` reads this process's files: for 1G of 4K pages one 2 MiB pread, a sort and a hash in numpy."""
import hashlib
import os

PAGEMAP_PRESENT = 1 << 63
PAGEMAP_PFN_MASK = (1 << 55) - 1  # bits 0-54 (Documentation/admin-guide/mm/pagemap.rst)
RUN_BYTES = 2 << 20  # the contiguous runs counted: 2M, aligned in virtual and physical memory
PAGE_TABLES = "not recorded (the kernel exposes no page-table page address to user space)"
COLUMNS = ("placement_present", "placement_contig2m", "placement_pfn_min", "placement_pfn_median",
           "placement_pfn_max", "placement_pfn_hash", "placement_nodes")


def summarize(entries, address, page_size):
    """The placement of a region from its pagemap entries (a numpy uint64 array, one per base page,
    the first for the page at `address`): {column: value}.  PFN columns are None when no present
    page shows a PFN (not root), placement_nodes is left to numa_nodes."""
    import numpy as np

    entries = np.asarray(entries, dtype=np.uint64)
    n = len(entries)
    present = (entries & np.uint64(PAGEMAP_PRESENT)) != 0
    pfn = entries & np.uint64(PAGEMAP_PFN_MASK)
    out = dict.fromkeys(COLUMNS)
    out["placement_present"] = round(float(present.mean()), 4) if n else None
    shown = pfn[present]
    if not n or not shown.any():  # no PFN readable: unprivileged readers get 0 for every PFN
        return out
    chunk = max(RUN_BYTES // page_size, 1)
    first = (-(address // page_size)) % chunk  # the first page on a 2M virtual boundary
    whole = max(n - first, 0) // chunk
    contiguous = 0
    if whole:
        block = pfn[first:first + whole * chunk].reshape(whole, chunk).astype(np.int64)
        live = present[first:first + whole * chunk].reshape(whole, chunk).all(axis=1)
        steps = (block - np.arange(chunk, dtype=np.int64) == block[:, :1]).all(axis=1)
        contiguous = int((live & steps & (block[:, 0] % chunk == 0)).sum()) * chunk
    ordered = np.sort(shown)
    out.update({"placement_contig2m": round(contiguous / n, 4), "placement_pfn_min": int(ordered[0]),
                "placement_pfn_median": int(ordered[(len(ordered) - 1) // 2]),
                "placement_pfn_max": int(ordered[-1]),
                # in page order: the same set of pages in another order is another placement
                "placement_pfn_hash": hashlib.blake2b(pfn.astype("<u8").tobytes(), digest_size=8).hexdigest()})
    return out


def _ranges(maps_text):
    out = {}
    for line in (maps_text or "").splitlines():
        span = line.split(" ", 1)[0]
        lo, sep, hi = span.partition("-")
        try:
            out[int(lo, 16)] = int(hi, 16)
        except ValueError:
            continue
    return out


def numa_nodes(numa_maps_text, maps_text, start, end):
    """{node: pages} of the mappings overlapping [start, end), from /proc/self/numa_maps (N<node>=
    pages per mapping) and /proc/self/maps (where each mapping ends), or None when neither names one.
    A mapping that holds more than the region counts whole: its pages are the region's neighbours'
    too, so this says which nodes, not how many pages on each."""
    ends, nodes, seen = _ranges(maps_text), {}, False
    for line in (numa_maps_text or "").splitlines():
        words = line.split()
        try:
            lo = int(words[0], 16)
        except (IndexError, ValueError):
            continue
        hi = ends.get(lo)
        if hi is None or not (lo < end and hi > start):
            continue
        seen = True
        for w in words[1:]:
            key, sep, value = w.partition("=")
            if sep and key[:1] == "N" and key[1:].isdigit() and value.isdigit():
                nodes[int(key[1:])] = nodes.get(int(key[1:]), 0) + int(value)
    return nodes if seen else None


def nodes_text(nodes):
    """'0' or '0,1': the nodes holding pages, in order; None when unknown."""
    if nodes is None:
        return None
    return ",".join(str(k) for k in sorted(k for k, v in nodes.items() if v > 0)) or None


def read_pagemap(address, size, page_size, path="/proc/self/pagemap"):
    """The pagemap entries of [address, address + size): one pread.  None where unreadable."""
    import numpy as np

    n = size // page_size
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.pread(fd, 8 * n, (address // page_size) * 8)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) != 8 * n:
        return None
    return np.frombuffer(data, dtype="<u8")


def read(address, size, page_size, proc="/proc/self"):
    """This process's region [address, address + size): {column: value} (every COLUMNS key; None
    where the kernel did not say)."""
    from . import procfs

    entries = read_pagemap(address, size, page_size, os.path.join(proc, "pagemap"))
    out = summarize(entries, address, page_size) if entries is not None else dict.fromkeys(COLUMNS)
    out["placement_nodes"] = nodes_text(numa_nodes(procfs.read(os.path.join(proc, "numa_maps"), ""),
                                                   procfs.read(os.path.join(proc, "maps"), ""),
                                                   address, address + size))
    return out


def pool_mode(placements, size, kinds, mem_available):
    """How `run --placements K` holds its regions: "held" (all K of each page backing at once) where
    they fit in nine tenths of MemAvailable, else "chained" (each round's region mapped while the last
    round's is still held, then the last released: two at a time, distinct from the one before only).
    None for K = 1 (a fresh region each round, as without the option)."""
    if placements < 2:
        return None
    if mem_available is None or mem_available < 0 or placements * kinds * size <= 0.9 * mem_available:
        return "held"
    return "chained"


class Pool:
    """The regions `run --placements K` rotates over: round r of a cell uses slot r mod K.  Regions are
    mapped when first used and owned through one list each; a region leaves its list only after its
    close (which a second call makes a no-op), so `close` (SIGINT/SIGTERM held) can run again after
    an interrupt part-way and frees what is left."""

    def __init__(self, placements, size, align, mode, node=None):
        self.placements, self.size, self.align, self.mode, self.node = placements, size, align, mode, node
        self._held = {}  # pages -> [Region or None] * K ("held"), or [Region] ("chained")

    def region(self, pages, round_index):
        """(region, slot): the round's region, already mapped and populated, and which slot it is
        (None when chained: every round its own)."""
        from . import core

        if self.mode == "chained":
            from ..signals import held as signals_held

            held = self._held.setdefault(pages, [])
            fresh = core.Region(self.size, self.align, pages, self.node)  # mapped while the last one is still held
            with signals_held():
                held.append(fresh)
                while len(held) > 1:
                    held[0].close()  # a second close of a Region is a no-op: drop it only once closed
                    del held[0]
            return fresh, None
        slot = round_index % self.placements
        held = self._held.setdefault(pages, [None] * self.placements)
        if held[slot] is None:
            held[slot] = core.Region(self.size, self.align, pages, self.node)
        return held[slot], slot

    def close(self):
        from ..signals import held as signals_held

        with signals_held():
            errors = []
            for regions in self._held.values():
                for i, r in enumerate(regions):
                    if r is None:
                        continue
                    try:
                        r.close()  # idempotent (the C release clears its handle): dropped only once closed
                    except Exception as e:
                        errors.append(e)
                    regions[i] = None
            self._held = {}
            if errors:
                raise errors[0]
