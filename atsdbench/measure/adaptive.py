"""Adaptive runs (`run --until P%`), pure: when has a run measured enough?

After the planned rounds the runner asks `Policy.after_round` after every round; it answers None (one
more round) or why to stop: "target" (every stride's interval of its round-mean rate within `until`
percent), "max-rounds" or "time".  The rule looks at each stride's precision only, never at a
difference, so it cannot chase significance.  From ROBUST_MIN_ROUNDS rounds the interval is over
overlapping batch means of floor(sqrt(n)) rounds (a consistent variance estimator: stopped on, a
narrow-looking t interval over few batches would cover far less than its level).  With `--runs M`
(RunPolicy) the sub-run is the unit, as in compare.  Why, and the coverage measured by seeded
simulation: docs/adaptive.md.  Imported lazily: through timeseries it loads numpy."""
import math

from ..analysis.timeseries import ROBUST_MIN_ROUNDS
from ..data.cells import labels_of, where_row
from .plan import next_sub_run_start


def half_width(x, confidence=95.0):
    """(mean, half-width, method) of the mean of round means `x` in time order; the last axis holds
    the rounds, leading axes are independent series (the simulation tests run thousands at once).
    NaN half-width with fewer than two rounds."""
    import numpy as np

    from ..analysis.stats import t_bounds, t_interval

    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    if n < ROBUST_MIN_ROUNDS:
        mean, _, _, half = t_interval(x, confidence)
        return mean, half, "t"
    mean = x.mean(axis=-1)
    m = math.isqrt(n)
    csum = np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(x, axis=-1)], axis=-1)
    batch = (csum[..., m:] - csum[..., :-m]) / m  # the n - m + 1 overlapping batch means
    # Meketon-Schmeiser: an estimate of n * var(mean) with about 1.5 (n/m - 1) degrees of freedom.
    var = n * m / ((n - m + 1) * (n - m)) * ((batch - mean[..., None]) ** 2).sum(axis=-1)
    return mean, t_bounds(mean, np.sqrt(var / n), 1.5 * (n / m - 1), confidence)[2], "obm"


class RoundMeans:
    """Round means per (cell, stride) over the measured passes, and the rounds' start times, kept
    up to date as the runner's list of samples grows: only samples not seen before are read, so
    asking after every round of a long run of short rounds stays linear."""

    def __init__(self):
        self._reset(None)

    def _reset(self, records):
        self.sums, self.seen, self.records = {}, 0, records
        self.rounds, self.measured_starts, self.run_of = set(), {}, {}

    def update(self, records):
        if records is not self.records or len(records) < self.seen:
            self._reset(records)  # another list: start over
        for s in records[self.seen:]:
            self.rounds.add(s["round"])
            self.run_of.setdefault(s["round"], int(s.get("run", 0)))
            if s.get("warmup") or s.get("gbps") is None:
                continue
            if s.get("round_t") is not None:
                self.measured_starts.setdefault(s["round"], float(s["round_t"]))
            per_round = self.sums.setdefault((int(s.get("cell", 0)), int(s["stride_bytes"])), {})
            total, count = per_round.get(s["round"], (0.0, 0))
            per_round[s["round"]] = (total + float(s["gbps"]), count + 1)
        self.seen = len(records)
        return self.means()

    def means(self):
        """{(cell, stride): [round mean GB/s, ...] in round order}."""
        return {key: [t / c for _, (t, c) in sorted(rounds.items())] for key, rounds in sorted(self.sums.items())}

    def run_means(self):
        """{(cell, stride): [sub-run mean GB/s, ...] in sub-run order}: each sub-run's observation as
        compare takes it (stats.run_value of its round means)."""
        from ..analysis.stats import run_value

        out = {}
        for key, rounds in sorted(self.sums.items()):
            per_run = {}
            for r, (t, c) in sorted(rounds.items()):
                per_run.setdefault(self.run_of.get(r, 0), []).append(t / c)
            out[key] = [run_value(v) for _, v in sorted(per_run.items())]
        return out

    def next_round_seconds(self, elapsed_s):
        """The expected duration of one more round: the mean of the measured rounds so far, from
        their start times (round_t, seconds since the run began) where the samples carry them, so
        set-up and warm-up rounds do not count (waits between spread rounds do); else the elapsed
        time over every round so far.  None before any round."""
        if self.measured_starts:
            first = min(self.measured_starts.values())
            return max(0.0, (float(elapsed_s) - first) / len(self.measured_starts))
        return float(elapsed_s) / len(self.rounds) if self.rounds else None


def round_means(records):
    """{(cell, stride): [round mean GB/s, ...] in round order} over the measured passes."""
    return RoundMeans().update(records)


class Policy:
    """The stopping rule of one adaptive run of rounds (see the module docstring)."""

    unit = "round"

    def __init__(self, until, confidence=95.0, max_time=600.0, max_rounds=None, min_rounds=3, cells=None):
        self.until, self.confidence = float(until), float(confidence)
        self.max_time = None if max_time is None else float(max_time)
        self.max_rounds, self.min_rounds = max_rounds, int(min_rounds)
        # Rows name their cell only where the run has axes (config "cells" exists only then).
        self.labels = labels_of(dict(enumerate(cells))) if cells else None
        self.rows, self.rounds, self.elapsed, self.next_round_s = [], 0, 0.0, None
        self.stop_reason = None
        self._means = RoundMeans()

    @classmethod
    def from_plan(cls, plan):
        """The policy of a checked plan (RunPolicy with --runs); None when the plan is not adaptive."""
        if getattr(plan, "until", None) is None:
            return None
        if getattr(plan, "runs", 1) > 1:
            return RunPolicy(plan.until, plan.confidence, plan.max_time, plan.max_rounds, plan.runs, plan.rounds,
                             plan.gap, plan.config().get("cells"))
        return cls(plan.until, plan.confidence, plan.max_time, plan.max_rounds, plan.rounds,
                   plan.config().get("cells"))

    def _row(self, cell, stride, mean, half, method, **counts):
        pct = float(half / mean * 100) if mean > 0 and not math.isnan(half) else math.nan
        row = {"stride_bytes": stride, **counts, "mean_gbps": float(mean), "half_width_pct": pct,
               "method": method, "met": bool(pct <= self.until)}
        return row if self.labels is None else {"cell": cell, **row}

    def observe(self, records, elapsed_s):
        """Take stock of the samples so far (all of them, warm-up included) without deciding."""
        means = self._means.update(records)
        self.rows = [self._row(cell, stride, *half_width(x, self.confidence), rounds=len(x))
                     for (cell, stride), x in means.items()]
        self.rounds = max((len(x) for x in means.values()), default=0)
        self.elapsed = float(elapsed_s)
        self.next_round_s = self._means.next_round_seconds(elapsed_s)

    def _decide(self, enough, capped):
        """The rule's order: the target (from the minimum on), then the cap, then the time."""
        if self.rows and enough and all(r["met"] for r in self.rows):
            self.stop_reason = "target"
        elif capped:
            self.stop_reason = "max-rounds"
        elif self.max_time is not None and self.next_round_s is not None and \
                self.elapsed + self.next_round_s > self.max_time:
            self.stop_reason = "time"
        return self.stop_reason

    def after_round(self, records, elapsed_s):
        """None: measure one more round; else why to stop ("target", "max-rounds", "time")."""
        self.observe(records, elapsed_s)
        return self._decide(self.rounds >= self.min_rounds, bool(self.max_rounds) and self.rounds >= self.max_rounds)

    def interrupted(self, records=None, elapsed_s=None):
        """Ctrl-C: the run ends here; with the samples so far, the summary counts them too."""
        if records is not None:
            self.observe(records, self.elapsed if elapsed_s is None else elapsed_s)
        self.stop_reason = "interrupted"

    def worst(self):
        """The row with the widest relative half-width (not-yet-known ones first), or None."""
        if not self.rows:
            return None
        return max(self.rows, key=lambda r: math.inf if math.isnan(r["half_width_pct"]) else r["half_width_pct"])

    def _done_text(self):
        return f"round {self.rounds}"

    def progress_text(self):
        """e.g. 'round 7, 41 s, worst 1.8% (64K)' ('sub-run 6, ...' with --runs)."""
        text = f"{self._done_text()}, {self.elapsed:.0f} s"
        w = self.worst()
        if w is None:
            return text
        pct = "n/a" if math.isnan(w["half_width_pct"]) else f"{w['half_width_pct']:.1f}%"
        return f"{text}, worst {pct} ({where_row(w, self.labels)})"

    def summary(self):
        """What the result file records under config["adaptive"]."""
        rows = [{**r, "half_width_pct": None if math.isnan(r["half_width_pct"]) else round(r["half_width_pct"], 4),
                 "mean_gbps": round(r["mean_gbps"], 6)} for r in self.rows]
        return {"target": self.until, "confidence": self.confidence, "max_time": self.max_time,
                "max_rounds": self.max_rounds, "min_rounds": self.min_rounds, "stop_reason": self.stop_reason,
                "unit": self.unit, "rounds": self.rounds, "elapsed_s": round(self.elapsed, 3),
                "met": bool(self.rows) and all(r["met"] for r in self.rows), "half_widths": rows}


class RunPolicy(Policy):
    """`--until` with `--runs M`: the stopping rule on the sub-run unit (see the module docstring).
    The runner tells it when each sub-run began and ended (`run_done`), then asks `after_run`."""

    unit = "run"

    def __init__(self, until, confidence=95.0, max_time=600.0, max_rounds=None, min_runs=2, rounds=5, gap=20.0,
                 cells=None):
        super().__init__(until, confidence, max_time, max_rounds, int(min_runs) * int(rounds), cells)
        self.min_runs, self.rounds_per_run, self.gap = int(min_runs), int(rounds), float(gap)
        self.runs, self.durations, self.last_start = 0, [], None

    def run_done(self, started_s, ended_s):
        """A sub-run ran from started_s to ended_s (seconds since the run began; process start-up and
        its warm-up rounds included: one more sub-run costs them again)."""
        self.durations.append(max(0.0, float(ended_s) - float(started_s)))
        self.last_start = float(started_s)

    def observe(self, records, elapsed_s):
        from ..analysis.stats import t_interval

        rounds = self._means.update(records)
        per_run = self._means.run_means()
        self.rows = []
        for (cell, stride), x in per_run.items():
            mean, _, _, half = t_interval(x, self.confidence)
            self.rows.append(self._row(cell, stride, mean, half, "t", runs=len(x), rounds=len(rounds[(cell, stride)])))
        self.runs = max((len(x) for x in per_run.values()), default=0)
        self.rounds = max((len(x) for x in rounds.values()), default=0)
        self.elapsed = float(elapsed_s)
        # From now to the end of one more sub-run: it starts when the gap allows (as the runner
        # schedules it) and lasts as long as the finished ones did.
        if self.durations:
            start = next_sub_run_start(self.last_start, self.gap, self.elapsed)
            self.next_round_s = start - self.elapsed + sum(self.durations) / len(self.durations)
        else:
            self.next_round_s = None

    def after_run(self, records, elapsed_s):
        """None: measure one more sub-run; else why to stop ("target", "max-rounds", "time")."""
        self.observe(records, elapsed_s)
        capped = bool(self.max_rounds) and (self.runs + 1) * self.rounds_per_run > self.max_rounds
        return self._decide(self.runs >= self.min_runs, capped)

    def _done_text(self):
        return f"sub-run {self.runs}"

    def summary(self):
        return {**super().summary(), "runs": self.runs, "min_runs": self.min_runs}

