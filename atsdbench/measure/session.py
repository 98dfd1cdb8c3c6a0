"""The resources of a run in one process: pinning, bystanders, counters, the optional GPU toucher.

`with Session(plan) as s:` sets them up (restoring the CPU affinity on any error) and tears them
down; `s.round(i, warmup_round)` yields one sample per pass.  It does not keep them: the runner does.
"""
import os
import time

import contextlib

from ..data.results import bystander_fields, disturbance, thread_disturbance
from . import placement, procfs
from .plan import round_order


def latency_summary(lat_ns):
    import numpy as np

    from . import core

    # Nearest rank, the rule atsd's lat_*_ns follow too (csrc/atsd.c), so lat_p99_us means one thing.
    p50, p90, p99, top = (v / 1e3 for v in core.latency_percentiles(lat_ns, (50, 90, 99, 100)))
    # Quarter-octave histogram of ns: compact enough to keep per pass, fine enough to plot.
    bins = np.floor(np.log2(np.maximum(lat_ns, 1).astype(np.float64)) * 4).astype(int)
    keys, counts = np.unique(bins, return_counts=True)
    return {"lat_p50_us": float(p50), "lat_p90_us": float(p90), "lat_p99_us": float(p99),
            "lat_max_us": float(top), "lat_hist": {int(k): int(c) for k, c in zip(keys, counts)}}


def aslr_state():
    """"off" where this process's mappings are not randomized: it was executed with
    ADDR_NO_RANDOMIZE (runner starts a --workload's measuring processes so, as will-it-scale's
    runtest.py runs its binaries under setarch -R) or the kernel randomizes nothing; else "on"."""
    from . import core

    return core.aslr_state()


def device_facts(path, sysfs="/sys/module/test_hmm"):
    """What --device hmm ran against: the driver's node, its module and the module's srcversion (a
    build's fingerprint: the mirror-only build and the kernel's own differ) where sysfs has them."""
    facts = {"kind": "hmm", "node": path, "driver": "test_hmm"}
    version = procfs.read(os.path.join(sysfs, "srcversion"))
    if version:
        facts["srcversion"] = version.strip()
    facts["kernel_release"] = os.uname().release
    return facts


class Session:
    def __init__(self, plan):
        self.plan = plan
        self.gpus = {}
        self.device = None       # --device hmm: open for one cell's passes only (its notifier costs every call)
        self.device_facts = None
        self.bystanders = None
        self.counters = None
        self.ceiling = None
        self.canary = None
        self._c_plan = None
        self._saved_affinity = None
        self.pool = None

    def __enter__(self):
        from . import core
        from .counters import Counters

        plan = self.plan
        cells = plan.cells
        self._saved_affinity = os.sched_getaffinity(0)
        try:
            self._c_plan = plan.to_c()
            core.pin_self(plan.cpu)
            self.counters = Counters(procfs.online_cpus(), "off" if plan.warmup < 1 else plan.trace, size=plan.size,
                                     page_size=core.page_size(), cpu=plan.cpu, bystander_cpus=plan.bystander_cpus,
                                     device=any(c.get("device", "none") != "none" for c in cells))
            for ordinal in sorted({c["gpu"] for c in cells if c["gpu"] is not None}):
                from . import gpu

                self.gpus[ordinal] = gpu.open_toucher(ordinal)  # every GPU of the plan, before any pass
            if any(c.get("device", "none") != "none" for c in cells):  # known before the first pass (facts())
                self.device_facts = device_facts(core.device_path())
            if core.lib.atsd_device_prime(self._c_plan) < 0:  # --device none,hmm: one mm for every cell
                core.Device().close()  # says why it cannot be opened
            self.canary = core.Canary(core.CANARY_BYTES, plan.seed)
            mode = placement.pool_mode(plan.placements, plan.size, len({c["pages"] for c in cells}),
                                       procfs.parse_meminfo(procfs.read("/proc/meminfo")).get("MemAvailable"))
            if mode:
                self.pool = placement.Pool(plan.placements, plan.size, plan.align, mode, plan.mem_node)
            self._use_bystanders(cells[0]["bystanders"])
            if any(c["ceiling"] is not None for c in cells):
                from .ceiling import Ceiling

                self.ceiling = Ceiling().__enter__()
                if len(cells) == 1:
                    self.ceiling.set(cells[0]["ceiling"])
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _use_bystanders(self, n):
        from . import core

        if self.bystanders is not None and len(self.bystanders.cpus) == n:
            return
        self._close_bystanders()
        self.bystanders = core.Bystanders(self.plan.bystander_cpus[:n])

    def _enter_cell(self, cell):
        """Between cells, outside any timed pass: the cell's bystanders and flush ceiling."""
        self._use_bystanders(cell["bystanders"])
        if self.ceiling is not None and len(self.plan.cells) > 1:
            self.ceiling.set(cell["ceiling"] if cell["ceiling"] is not None else self.ceiling.original)

    def round(self, round_index, warmup_round):
        """One round: every cell in the round's shuffled order, each with a fresh region; yields one
        sample per pass."""
        from . import core
        from .plan import cell_order

        cells, plan = self.plan.cells, self.plan
        order = cell_order(plan, round_index, self._c_plan) if len(cells) > 1 else [0]
        compute_ns, chase_ns = self.canary.run(core.CANARY_COMPUTE, core.CANARY_CHASE)
        for position, index in enumerate(order):
            cell = cells[index]
            if len(cells) > 1:
                self._enter_cell(cell)
            for sample in self._cell_round(round_index, warmup_round, index, cell,
                                           position * plan.passes_per_round):
                if plan.axes:
                    sample["cell"] = index
                    sample.update({name: cell[name] for name in plan.axes})
                if sample.get("kind") != "verify":
                    sample["canary_compute_ns"], sample["canary_chase_ns"] = int(compute_ns), int(chase_ns)
                yield sample

    def _cell_round(self, round_index, warmup_round, index, cell, first_position):
        if cell.get("workload"):
            yield from self._workload_round(round_index, warmup_round, index, cell, first_position)
            return
        from . import core

        plan = self.plan
        gpu = self.gpus.get(cell["gpu"])
        nthreads = cell["threads"]
        if cell.get("device", "none") != "none":
            try:
                yield from self._device_cell(round_index, warmup_round, index, cell, first_position)
            finally:
                self._close_device()
            return
        yield from self._op_cell(round_index, warmup_round, index, cell, first_position, gpu, nthreads)

    def _device_cell(self, round_index, warmup_round, index, cell, first_position):
        """A --device hmm cell: the device opened before its region is made (untimed), closed after its
        last pass; its passes otherwise as any cell's."""
        from . import core

        self._close_device()
        self.device = core.Device()
        yield from self._op_cell(round_index, warmup_round, index, cell, first_position, None, cell["threads"])

    def _op_cell(self, round_index, warmup_round, index, cell, first_position, gpu, nthreads):
        from . import core

        plan, device = self.plan, self.device
        # the tasks before the region: a forked one (--tasks processes) would share it copy-on-write
        tasks = core.Threads(plan.thread_cpus[:nthreads], plan.tasks == "processes", plan.size, plan.align,
                             cell["pages"]) if nthreads > 1 else contextlib.nullcontext()
        pooled = self.pool.region(cell["pages"], round_index) if self.pool else None
        with tasks as threads, (contextlib.nullcontext(pooled[0]) if pooled else
                                core.Region(plan.size, plan.align, cell["pages"], plan.mem_node)) as region:
            if pooled:  # a pooled region comes back as the last round left it: PROT_NONE, maybe stale
                region.restore(plan.retouch, cell["op"])
            thp_share = None
            if cell["pages"] == "thp":  # MADV_HUGEPAGE is advice: say how much of it was taken
                thp_share = procfs.smaps_huge_share(procfs.read("/proc/self/smaps"), region.address,
                                                    region.address + plan.size)
            # where the region sits in physical memory, once per round (docs/methodology.md#placement)
            place = {k: v for k, v in placement.read(region.address, plan.size, core.page_size()).items()
                     if v is not None}
            if pooled and pooled[1] is not None:
                place["placement_slot"] = pooled[1]
            dirty = False
            for i, (rep, warm, stride) in enumerate(round_order(plan, round_index, self._c_plan, index)):
                if dirty:
                    region.restore(plan.retouch, cell["op"])
                    if threads:
                        threads.restore(plan.retouch, cell["op"])
                gpu_ns = gpu.touch(region) if gpu else None
                device_ns = device.touch(region) if device else None
                if threads:
                    (ns, times, lat), traced, own, bystander, counted = self._around(
                        warm, lambda: threads.pass_(region, stride, plan.latency, cell["op"]))
                else:
                    (ns, lat), traced, own, bystander, counted = self._around(
                        warm, lambda: region.timed_pass(stride, plan.latency, cell["op"]))
                dirty = True
                calls = plan.size // stride
                sample = {"round": round_index, "rep": rep, "order": first_position + i, "stride_bytes": stride,
                          "warmup": bool(warm or warmup_round), "ns": int(ns), "seconds": ns / 1e9,
                          "calls": calls, "gbps": plan.size / ns if ns else float("nan"),
                          "us_per_call": ns / 1e3 / (calls // nthreads), "traced": bool(traced)}
                if gpu_ns is not None:
                    sample["gpu_touch_ns"] = int(gpu_ns)
                if device_ns is not None:
                    sample["device_touch_ns"] = int(device_ns)
                if thp_share is not None:
                    sample["thp_share"] = round(thp_share, 4)
                sample.update(place)
                sample.update(bystander)
                if threads:  # each thread by the rule over its own loop; steal of the first's CPU
                    sample["threads"] = nthreads
                    sample.update(thread_disturbance(times, own[2], ns))
                else:
                    sample.update(disturbance(*own, ns))
                sample.update(counted)
                if lat is not None:
                    sample.update(latency_summary(lat))
                yield sample
            if plan.verify:
                yield from self._verify_passes(round_index, warmup_round, cell, region)

    def _verify_passes(self, round_index, warmup_round, cell, region):
        """run --verify: after the cell's timed passes, one verify pass per stride (untimed, its own
        records, kind "verify"), the checkers started here and stopped before anything is timed again.
        With --threads N each task's part is invalidated from its own CPU in turn and checked from every
        other CPU (docs/verify.md)."""
        plan, nthreads = self.plan, cell["threads"]
        invalidators = plan.thread_cpus[:nthreads] if nthreads > 1 else [plan.cpu]
        # the bystanders stop for the verify passes: spinning on the checkers' CPUs they would take turns
        # with them (slower passes, fewer checks held), and they come back before the next timed pass.  Not
        # in a finally: a generator closed after Session.close would start them again, unowned.
        self._use_bystanders(0)
        yield from self._checked(round_index, warmup_round, cell, region, invalidators)
        self._use_bystanders(cell["bystanders"])

    def _checked(self, round_index, warmup_round, cell, region, invalidators):
        from . import core

        plan, nthreads = self.plan, cell["threads"]
        with core.Verifier(plan.verify_cpus) as verifier:
            if self.device:
                verifier.check_device(self.device)
            for stride in plan.strides:
                # every page's translation live again, whatever --no-retouch; only this process's region
                # is checked (--tasks processes: the caller's, each part from its task's CPU)
                region.restore(True, cell["op"])
                counts = verifier.pass_(region, stride, cell["op"], invalidators)
                record = {"kind": "verify", "round": round_index, "warmup": bool(warmup_round), "op": cell["op"],
                          "stride_bytes": stride, "threads": nthreads, "invalidator_cpus": list(invalidators),
                          "checker_cpus": core.verify_checkers(plan.verify_cpus, invalidators)}
                record.update({k: int(v) for k, v in counts.items()})
                yield record

    def _around(self, warm, run_pass):
        """One pass (run_pass() returns its ns first) with what is read just outside it, never inside:
        the flush counters (traced on a warm-up pass where they can be), the measuring thread's own
        state, the bystanders' CPU time.  Returns (what run_pass returned, traced, the thread's
        (preempted, CPU ns, steal ticks), the bystander fields, the counter fields)."""
        from . import core

        plan, counters = self.plan, self.counters
        traced = warm and counters.can_trace
        if traced:
            counters.open_trace()
        try:
            before = counters.read(traced)
            self0 = core.self_state(plan.cpu)
            t0 = time.monotonic_ns()
            spins0 = self.bystanders.read_spins()
            got = run_pass()
            spins1 = self.bystanders.read_spins()
            window = time.monotonic_ns() - t0
            self1 = core.self_state(plan.cpu, after=True)
            after = counters.read(traced)
        finally:
            if traced:
                counters.close_trace()
        bystander = bystander_fields(spins0, spins1, window, got[0]) if spins0 else {}
        return got, traced, core.self_delta(self0, self1), bystander, counters.delta(before, after)

    def _workload_round(self, round_index, warmup_round, index, cell, first_position):
        """run --workload: will-it-scale's loop in every task (C: atsd_workload_pass), `size` bytes of
        pages each a pass; the tasks (and, tlb_flush1/3, their files) fresh every round."""
        from . import core

        plan = self.plan
        nthreads, page = cell["threads"], core.page_size()
        with core.Threads(plan.thread_cpus[:nthreads], plan.tasks == "processes", 0, plan.align, "base") as tasks:
            for i, (rep, warm, stride) in enumerate(round_order(plan, round_index, self._c_plan, index)):
                (ns, times, loops), traced, own, bystander, counted = self._around(
                    warm, lambda: tasks.workload_pass(cell["workload"], plan.size))
                sample = {"round": round_index, "rep": rep, "order": first_position + i, "stride_bytes": stride,
                          "warmup": bool(warm or warmup_round), "ns": int(ns), "seconds": ns / 1e9,
                          "calls": loops, "loops": loops, "loops_per_s": loops * 1e9 / ns if ns else None,
                          "gbps": loops * page / ns if ns else float("nan"),
                          "us_per_call": ns / 1e3 / (loops / nthreads), "traced": bool(traced),
                          "threads": nthreads}
                sample.update(bystander)
                sample.update(thread_disturbance(times, own[2], ns))
                sample.update(counted)
                yield sample
        if plan.verify:  # on by default for a workload: the loop's call checked, on a region of its own
            with core.Region(core.verify_workload_size(nthreads), plan.align, "base") as region:
                yield from self._verify_passes(round_index, warmup_round, dict(cell, op="madvise"), region)

    def facts(self):
        """What this session learned that belongs in the result file."""
        out = {"trace_scope": self.counters.trace_scope, "trace_error": self.counters.trace_error,
               "placement_page_tables": placement.PAGE_TABLES}
        if self.counters.device_count_error:
            out["device_count_error"] = self.counters.device_count_error
        if self.pool:
            out["placement_pool"] = self.pool.mode
        if self.counters.trace_events:
            out["trace_events"] = self.counters.trace_events
        if any(c.get("workload") for c in self.plan.cells):
            out["aslr"] = aslr_state()
        if self.gpus:
            facts = [g.facts for _, g in sorted(self.gpus.items())]
            out["gpu"] = facts[0] if len(facts) == 1 else facts
        if self.device_facts:
            out["device"] = self.device_facts
        return out

    def close(self):
        """Every step runs, whatever the one before did (the ceiling is restored even when a counter
        will not close), with SIGINT/SIGTERM held until the end; the first error is raised."""
        from ..signals import held

        with held():
            errors = []
            for step in (self._close_pool, self._close_counters, self._close_canary, self._close_ceiling,
                         self._close_bystanders, self._close_gpus, self._close_device, self._restore_affinity):
                try:
                    step()
                except Exception as e:
                    errors.append(e)
            if errors:
                raise errors[0]

    def _close_pool(self):
        pool, self.pool = self.pool, None
        if pool:
            pool.close()

    def _close_counters(self):
        counters, self.counters = self.counters, None
        if counters:
            counters.close()

    def _close_canary(self):
        canary, self.canary = self.canary, None
        if canary:
            canary.close()

    def _close_ceiling(self):
        ceiling, self.ceiling = self.ceiling, None
        if ceiling:
            ceiling.__exit__(None, None, None)

    def _close_bystanders(self):
        bystanders, self.bystanders = self.bystanders, None
        if bystanders:
            bystanders.stop()

    def _close_gpus(self):
        gpus, self.gpus = self.gpus, {}
        for g in gpus.values():
            g.close()

    def _close_device(self):
        device, self.device = self.device, None
        if device:
            device.close()

    def _restore_affinity(self):
        saved, self._saved_affinity = self._saved_affinity, None
        if saved is not None:
            os.sched_setaffinity(0, saved)
