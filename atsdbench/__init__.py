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
