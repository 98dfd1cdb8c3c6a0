"""calibrate's design: a fixed plan of K sub-runs in fresh processes, starts at least --gap apart, whose
result file becomes a noise profile (data/noise_profile.py, analysis/noise.py; docs/calibrate.md).

Its defaults are the noise profile's (data/noise_profile.py: what a profile is measured as)."""
from ..data.noise_profile import CALIBRATION_GAP as GAP, CALIBRATION_RUNS as RUNS
from ..errors import UsageError


def make_plan(options, args):
    """The calibration plan of run's options (RUNS and GAP where not given), refused where it could not
    estimate what a profile holds."""
    from . import plan as plans

    if getattr(args, "breakdown", None) or getattr(args, "profile", None):
        raise UsageError("calibrate measures noise: --breakdown and --profile are run's (extra passes per "
                         "stride)")
    if options.get("until") is not None:
        raise UsageError("calibrate measures a fixed design: --until would stop on the noise it estimates")
    plan = plans.make_plan(**{"runs": RUNS, "gap": GAP, **options})
    if plan.runs < 2:
        raise UsageError(f"calibrate --runs {plan.runs}: one sub-run has no between-run variance (give 2+; "
                         f"default {RUNS})")
    if plan.rounds < 2:  # a profile's within-run part is a sub-run's spread of round means
        raise UsageError(f"calibrate --rounds {plan.rounds}: one round a sub-run has no within-run variance "
                         "(give 2+)")
    return plan


def gap_floor():
    """The default gap in seconds: a shorter one holds less of the host's drift over minutes than the
    design that was measured nominal."""
    return float(GAP.rstrip("s"))


def machine_id():
    """The machine a profile was measured on (/etc/machine-id), or None."""
    from .procfs import read

    return (read("/etc/machine-id") or "").strip() or None
