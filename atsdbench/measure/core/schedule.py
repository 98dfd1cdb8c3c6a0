"""The order and timing of a run (csrc/atsd_schedule.c): stride order, cells, the sleeps' schedule."""
from . import ffi, lib, _check


def round_order(p, round_index):
    """Stride of every pass of one round, in order (warm-up repetitions first)."""
    cap = (p.warmup + p.reps) * p.nstrides
    out = ffi.new("uint64_t[]", cap)
    n = _check(lib.atsd_round_order(p, round_index, out, cap), "ordering the round")
    return list(out[0:n])


def cells(p):
    """Every cell of the plan (the product of its axes) as (bystanders, pages, gpu, ceiling, op, threads) tuples."""
    c = ffi.new("struct atsd_cell *")
    out = []
    for i in range(lib.atsd_plan_cells(p)):
        _check(lib.atsd_plan_cell(p, i, c), "enumerating cells")
        out.append((c.bystanders, c.pages, c.gpu, c.ceiling, c.op, c.threads))
    return out


def cell_order(p, round_index):
    n = lib.atsd_plan_cells(p)
    out = ffi.new("int32_t[]", n)
    _check(lib.atsd_cell_order(p, round_index, out, n), "ordering the cells")
    return list(out)


def sub_run_start(previous, gap, now):
    """When the next sub-run (--runs) starts; previous None for the first."""
    return lib.atsd_sub_run_start(previous is None, previous or 0.0, gap, now)


def round_start(first_start, r, spread, rounds):
    """When measured round r starts, paced over --spread from the first's start."""
    return lib.atsd_round_start(first_start, r, spread, rounds)


def least_sleep(runs, gap, rounds, spread):
    """The least seconds a plan's sleeps take (--gap between sub-runs, --spread within each)."""
    return lib.atsd_least_sleep(runs, gap, rounds, spread)
