"""compare --fail-on T: the exit status a CI job or `git bisect run` reads from compare's own rows.
A row proves a slowdown beyond T where its verdict is "slower" (significant by compare's rule, Holm's
where it adjusts) and its interval lies wholly below -T; a row without a verdict (withheld, emulated,
too few, no fleet verdict) cannot clear a commit, so the run is skipped (git bisect's 125)."""
import math

from ..errors import EXIT_NO_VERDICT, EXIT_SLOWER, UsageError


def threshold(text):
    """--fail-on's slowdown in percent: '5%' or '5' (0 <= T < 100)."""
    if text is None:
        return None
    raw = str(text).strip()
    number = raw[:-1] if raw.endswith("%") else raw
    try:
        value = float(number)
    except ValueError:
        raise UsageError(f"--fail-on {raw!r} is not a slowdown in percent (e.g. --fail-on 5%)") from None
    if not (math.isfinite(value) and 0 <= value < 100):
        raise UsageError(f"--fail-on must be a slowdown from 0% up to below 100% (got {raw})")
    return value


def has_verdict(row):
    """Whether compare gave this row a verdict: a test made, not withheld, an interval to read."""
    return not (math.isnan(row["p_value"]) or row.get("verdict_withheld") or math.isnan(row["ci_low_pct"])
                or math.isnan(row["ci_high_pct"]))


def slower_beyond(row, limit):
    """The row's verdict is "slower" and its interval excludes every slowdown of `limit`% or less."""
    return has_verdict(row) and bool(row["significant"]) and row["speedup_pct"] < 0 \
        and row["ci_high_pct"] < -limit


def status(rows, limit):
    """EXIT_SLOWER where a row proves a slowdown beyond `limit`%; else EXIT_NO_VERDICT where no rows,
    or a row had no verdict; else 0."""
    if any(slower_beyond(r, limit) for r in rows):
        return EXIT_SLOWER
    if not rows or not all(has_verdict(r) for r in rows):
        return EXIT_NO_VERDICT
    return 0


def reason(rows, limit):
    """One line for stderr saying why the status is what it is."""
    code = status(rows, limit)
    if code == EXIT_SLOWER:
        worst = [r for r in rows if slower_beyond(r, limit)]
        return (f"--fail-on {limit:g}%: slower beyond it at {len(worst)} of {len(rows)} rows "
                f"(exit {EXIT_SLOWER})")
    if code == EXIT_NO_VERDICT and not rows:
        return f"--fail-on {limit:g}%: nothing was compared (exit {EXIT_NO_VERDICT}, git bisect's skip)"
    if code == EXIT_NO_VERDICT:
        missing = sum(1 for r in rows if not has_verdict(r))
        return (f"--fail-on {limit:g}%: no verdict at {missing} of {len(rows)} rows, so none can clear "
                f"it (exit {EXIT_NO_VERDICT}, git bisect's skip)")
    return f"--fail-on {limit:g}%: no slowdown beyond it proven (exit 0)"
