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


def compare(base, *more, noise_profiles=(), find_noise_profiles=True, **options):
    """Compare results (Result objects or paths; 'a.json,b.json' or a list: replicate runs of one side)
    per stride; returns a DataFrame (see `atsdbench compare`).  noise_profiles: paths or NoiseProfiles
    for sides of one process; find_noise_profiles: look the others up in the profile store.
    compare(path, by="bystanders"): one file's cells against each other, paired by round.
    `profiles=` and `find_profiles=`, their old names, are still taken."""
    from .analysis import compare as comparison, compare_by
    from .data import noise_profile, sides

    noise_profiles = options.pop("profiles", noise_profiles)
    find_noise_profiles = options.pop("find_profiles", find_noise_profiles)
    items = [base, *more]
    by = options.pop("by", None)
    checked = {k: v for k, v in options.items() if k != "labels"}
    comparison.check([sides.count(x) for x in items], by=by, noise_profiles=noise_profiles, **checked)
    loaded = sides.load(items)
    if by is not None:
        return compare_by.compare_by(loaded, by, **options).frame()
    store = noise_profile.Store() if find_noise_profiles else None
    return comparison.compare(loaded, noise_profiles=[noise_profile.load(p) for p in noise_profiles], store=store,
                              **options).frame()


def scaling(result, confidence=95):
    """A threads sweep (run --threads 1,2,4) by thread count: a DataFrame of one row per (other axes,
    stride, thread count) with rate, per_task, efficiency (against linear, paired by round) and its
    CI, spread, disturbed and cpu_share (docs/workloads.md#scaling).  result: a Result or a path."""
    import dataclasses

    import pandas as pd

    from .analysis import scaling as sweep
    from .data import results

    r = results.load(result)
    sweep.require_sweep(r)
    return pd.DataFrame([dataclasses.asdict(row) for row in sweep.analyse(r, confidence).rows])
