"""The resources of a run in one process: pinning, bystanders, counters, the optional GPU toucher.

`with Session(plan) as s:` sets them up (restoring the CPU affinity on any error) and tears them
down; `s.round(i, warmup_round, emit)` runs a round's passes through the core's loop (csrc/atsd_loop.c)
and hands each pass's sample to emit as it ends.  It does not keep them: the runner does.
"""
import os
import time

import contextlib

from .. import signals
from ..data.results import bystander_fields, disturbance, thread_disturbance
from . import placement, procfs


def latency_summary(percentiles_ns, lat_ns):
    """A pass's latency fields: its p50, p90, p99 and max (ns, by nearest rank: the loop's, which
    atsd's lat_*_ns are too) in us, and a quarter-octave histogram of its calls' latencies (ns), compact
    enough to keep per pass and fine enough to plot."""
    import numpy as np

    p50, p90, p99, top = (v / 1e3 for v in percentiles_ns)
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


class _Around:
    """run's hooks on the core's loop: around each pass what only run reads, outside the thread's own
    state that the loop reads: the GPU's touch (untimed), the flush counters (traced on a warm-up
    repetition where they can be), the bystanders' spins over a window of this clock's reads.  A held
    signal stops the loop after a pass (the cell's after hook), never before one: a run stopped early
    has its pass under way, as it always had."""

    def __init__(self, session, gpu=None, region=None):
        self.session, self.gpu, self.region = session, gpu, region
        self.traced = False

    def before(self, rec):
        s = self.session
        self.gpu_ns = self.gpu.touch(self.region) if self.gpu else None
        self.traced = rec.rep < s.plan.warmup and s.counters.can_trace
        rec.traced = self.traced
        if self.traced:
            s.counters.open_trace()
        try:
            self.counts = s.counters.read(self.traced)
            self.t0 = time.monotonic_ns()
            self.spins = s.bystanders.read_spins()
        except BaseException:
            self._close()
            raise
        return False

    def after(self, rec):
        """What was read around the pass: (GPU touch ns, bystander fields, counter fields), or None for
        a pass that failed."""
        s = self.session
        try:
            if rec.err:
                return None
            spins = s.bystanders.read_spins()
            window = time.monotonic_ns() - self.t0
            counts = s.counters.read(self.traced)
        finally:
            self._close()
        bystander = bystander_fields(self.spins, spins, window, rec.ns) if self.spins else {}
        return self.gpu_ns, bystander, s.counters.delta(self.counts, counts)

    def _close(self):
        if self.traced:
            self.traced = False
            self.session.counters.close_trace()


def _own(rec):
    """The measuring thread's (preempted, CPU ns, steal ticks or None) over the pass, as the loop read it."""
    d = rec.self
    return d.preempted, d.cpu_ns, (d.steal_ticks if d.steal_ticks >= 0 else None)


def _threads(rec):
    return [(t.t1 - t.t0, t.cpu_ns, t.preempted) for t in rec.times[0:rec.ntimes]]


def _op_sample(plan, rec, got, fields):
    """A timed pass's sample from its loop record, what run's hooks read around it and its round's fields."""
    gpu_ns, bystander, counted = got
    ns, calls, nthreads = rec.ns, rec.calls, rec.threads
    sample = {"round": rec.round, "rep": rec.rep, "order": rec.order, "stride_bytes": rec.stride_bytes,
              "warmup": bool(rec.warmup), "ns": int(ns), "seconds": ns / 1e9, "calls": calls,
              "gbps": plan.size / ns if ns else float("nan"), "us_per_call": ns / 1e3 / (calls // nthreads),
              "traced": bool(rec.traced)}
    if gpu_ns is not None:
        sample["gpu_touch_ns"] = int(gpu_ns)
    if rec.device_touch_ns >= 0:
        sample["device_touch_ns"] = int(rec.device_touch_ns)
    sample.update(fields)
    sample.update(bystander)
    if nthreads > 1:  # each thread by the rule over its own loop; steal of the first's CPU
        sample["threads"] = nthreads
        sample.update(thread_disturbance(_threads(rec), _own(rec)[2], ns))
    else:
        sample.update(disturbance(*_own(rec), ns))
    sample.update(counted)
    if rec.latency:  # every call's latency, there while the loop's hook runs
        import numpy as np

        from . import core

        lat = np.frombuffer(core.ffi.buffer(rec.call_ns, 8 * calls), dtype=np.uint64)
        sample.update(latency_summary(list(rec.lat_ns), lat))
    return sample


def _workload_sample(rec, got, page):
    _, bystander, counted = got
    ns, loops, nthreads = rec.ns, rec.loops, rec.threads
    sample = {"round": rec.round, "rep": rec.rep, "order": rec.order, "stride_bytes": rec.stride_bytes,
              "warmup": bool(rec.warmup), "ns": int(ns), "seconds": ns / 1e9, "calls": loops, "loops": loops,
              "loops_per_s": loops * 1e9 / ns if ns else None, "gbps": loops * page / ns if ns else float("nan"),
              "us_per_call": ns / 1e3 / (loops / nthreads), "traced": bool(rec.traced), "threads": nthreads}
    sample.update(bystander)
    sample.update(thread_disturbance(_threads(rec), _own(rec)[2], ns))
    sample.update(counted)
    return sample


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

    def round(self, round_index, warmup_round, emit):
        """One round: every cell in the round's shuffled order, each with a fresh region; emit(record)
        for each pass as it ends (and each verify record).  A signal held meanwhile stops it between
        passes: the finished ones emitted, then KeyboardInterrupt (signals.check)."""
        from . import core
        from .plan import cell_order

        cells, plan = self.plan.cells, self.plan
        order = cell_order(plan, round_index, self._c_plan) if len(cells) > 1 else [0]
        compute_ns, chase_ns = self.canary.run(core.CANARY_COMPUTE, core.CANARY_CHASE)
        for position, index in enumerate(order):
            cell = cells[index]
            if len(cells) > 1:
                self._enter_cell(cell)

            def cell_emit(sample, index=index, cell=cell):
                if plan.axes:
                    sample["cell"] = index
                    sample.update({name: cell[name] for name in plan.axes})
                if sample.get("kind") != "verify":
                    sample["canary_compute_ns"], sample["canary_chase_ns"] = int(compute_ns), int(chase_ns)
                emit(sample)

            self._cell_round(round_index, warmup_round, index, cell, position * plan.passes_per_round, cell_emit)
            signals.check()

    def _cell_round(self, round_index, warmup_round, index, cell, first_position, emit):
        if cell.get("workload"):
            self._workload_round(round_index, warmup_round, index, cell, first_position, emit)
        elif cell.get("device", "none") != "none":
            from . import core

            # opened before its region is made (untimed), closed after its last pass
            self._close_device()
            try:
                self.device = core.Device()
                self._op_cell(round_index, warmup_round, index, cell, first_position, None, emit)
            finally:
                self._close_device()
        else:
            self._op_cell(round_index, warmup_round, index, cell, first_position, self.gpus.get(cell["gpu"]), emit)

    def _op_cell(self, round_index, warmup_round, index, cell, first_position, gpu, emit):
        from . import core

        plan, nthreads = self.plan, cell["threads"]
        # the tasks before the region: a forked one (--tasks processes) would share it copy-on-write
        tasks = core.Threads(plan.thread_cpus[:nthreads], plan.tasks == "processes", plan.size, plan.align,
                             cell["pages"]) if nthreads > 1 else contextlib.nullcontext()
        pooled = self.pool.region(cell["pages"], round_index) if self.pool else None
        with tasks as threads, (contextlib.nullcontext(pooled[0]) if pooled else
                                core.Region(plan.size, plan.align, cell["pages"], plan.mem_node)) as region:
            if pooled:  # a pooled region comes back as the last round left it: PROT_NONE, maybe stale
                region.restore(plan.retouch, cell["op"])
            fields = {}  # what every pass of this cell's round carries, read once before them
            if cell["pages"] == "thp":  # MADV_HUGEPAGE is advice: say how much of it was taken
                share = procfs.smaps_huge_share(procfs.read("/proc/self/smaps"), region.address,
                                                region.address + plan.size)
                if share is not None:
                    fields["thp_share"] = round(share, 4)
            # where the region sits in physical memory, once per round (docs/methodology.md#placement)
            fields.update({k: v for k, v in placement.read(region.address, plan.size, core.page_size()).items()
                           if v is not None})
            if pooled and pooled[1] is not None:
                fields["placement_slot"] = pooled[1]
            hooks = _Around(self, gpu, region)

            def after(rec):
                got = hooks.after(rec)
                if got is not None:
                    emit(_op_sample(plan, rec, got, fields))
                return signals.pending()

            passes = core.cell_passes(self._c_plan, index, round_index, warmup_round, first_position, region, threads,
                                      self.device, hooks.before, after)
            if plan.verify and not passes.stopped:
                self._verify_passes(round_index, warmup_round, index, cell, region, emit)

    def _verify_passes(self, round_index, warmup_round, index, cell, region, emit):
        """run --verify: after the cell's timed passes, one verify pass per stride (untimed, its own
        records, kind "verify"), the checkers started here and stopped before anything is timed again.
        With --threads N each task's part is invalidated from its own CPU in turn and checked from every
        other CPU (docs/verify.md)."""
        from . import core

        plan, nthreads = self.plan, cell["threads"]
        invalidators = plan.thread_cpus[:nthreads] if nthreads > 1 else [plan.cpu]
        checkers = core.verify_checkers(plan.verify_cpus, invalidators)
        device = self.device

        def after(rec):
            record = {"kind": "verify", "round": round_index, "warmup": bool(warmup_round), "op": cell["op"],
                      "stride_bytes": rec.stride_bytes, "threads": nthreads, "invalidator_cpus": list(invalidators),
                      "checker_cpus": list(checkers)}
            v = rec.verify
            record.update(calls=v.calls, checks=v.checks, faults=v.faults, zeros=v.zeros, stale=v.stale, held=v.held,
                          ns=v.ns)
            if device:
                record.update(device_checks=v.device_checks, device_failed=v.device_failed,
                              device_zeros=v.device_zeros, device_stale=v.device_stale)
            emit(record)
            return signals.pending()

        # the bystanders stop for the verify passes: spinning on the checkers' CPUs they would take turns
        # with them (slower passes, fewer checks held), and they come back before the next timed pass.  Not
        # in a finally: a run that stops here needs them no more.
        self._use_bystanders(0)
        with core.Verifier(plan.verify_cpus) as verifier:
            if device:
                verifier.check_device(device)
            passes = core.cell_verify(self._c_plan, index, round_index, warmup_round, region, verifier, cell["op"],
                                      invalidators, after)
        if not passes.stopped:
            self._use_bystanders(cell["bystanders"])

    def _workload_round(self, round_index, warmup_round, index, cell, first_position, emit):
        """run --workload: will-it-scale's loop in every task (C: atsd_workload_pass), `size` bytes of
        pages each a pass; the tasks (and, tlb_flush1/3, their files) fresh every round."""
        from . import core

        plan = self.plan
        nthreads, page = cell["threads"], core.page_size()
        with core.Threads(plan.thread_cpus[:nthreads], plan.tasks == "processes", 0, plan.align, "base") as tasks:
            hooks = _Around(self)

            def after(rec):
                got = hooks.after(rec)
                if got is not None:
                    emit(_workload_sample(rec, got, page))
                return signals.pending()

            passes = core.cell_passes(self._c_plan, index, round_index, warmup_round, first_position, None, tasks,
                                      None, hooks.before, after)
        if plan.verify and not passes.stopped:  # on by default: the loop's call checked, on a region of its own
            with core.Region(core.verify_workload_size(nthreads), plan.align, "base") as region:
                self._verify_passes(round_index, warmup_round, index, dict(cell, op="madvise"), region, emit)

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
