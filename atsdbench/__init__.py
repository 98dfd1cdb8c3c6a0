"""atsdbench: the cost of TLB invalidation on Linux, measured with mprotect(PROT_NONE) strides."""
__version__ = "0.1.0"


def run(**options):
    """Measure from Python; takes the `atsdbench run` options as keywords; returns a Result."""
    from .measure import plan, runner

    return runner.run(plan.make_plan(**options))


def load(path):
    """Read a result file; returns a Result (.samples DataFrame, .config and .host dicts)."""
    from .data import results

    return results.load(path)


def compare(base, *more, **options):
    """Compare results (Result objects or paths) per stride; returns a DataFrame (see `atsdbench compare`).
    compare(path, by="bystanders"): one file's cells against each other, paired by round."""
    from .analysis import compare as comparison

    return comparison.compare_frame([base, *more], **options)


def scaling(result, confidence=95):
    """A threads sweep (run --threads 1,2,4) by thread count: a DataFrame of one row per (other axes,
    stride, thread count) with rate, per_task, efficiency (against linear, paired by round) and its
    CI, spread, disturbed and cpu_share (docs/workloads.md#scaling).  result: a Result or a path."""
    import dataclasses

    import pandas as pd

    from .analysis import scaling as sweep
    from .data import results
    from .errors import UsageError

    r = results.load(result)
    if not sweep.has_sweep(r):
        raise UsageError(f"{r.path or 'the result'}: no threads axis of 2 or more thread counts")
    return pd.DataFrame([dataclasses.asdict(row) for row in sweep.analyse(r, confidence).rows])
