"""The noise simulator: a seeded model of the noise measured on this VM (shared/notes/noise-levels.md),
on the log scale, for 4 strides, that makes result files with the real sample schema.  The studies of
scripts/ (bench_verdict, bench_defaults, model_coverage, adaptive_coverage) and the tests run it; the
tests import it by name (tests/support is on sys.path, tests/conftest.py), the scripts through their one
loader (scripts/_support.py).

  - pass noise 3.4% (4 timed passes a round, each stride its own passes: independent);
  - a white round effect 2.8%;
  - a drift component 4.6% with exp(-dt/8 s) correlation (an Ornstein-Uhlenbeck process over the side's
    clock: rounds every 1.5 s, sub-runs starting `gap` apart; two sides are independent, as a reboot
    >= 60 s apart makes them);
  - a per-process (sub-run) effect sP;
  - optionally a per-boot effect (one boot a side), and a per-placement (region) effect;
  - every effect but the pass noise correlated 0.7 across strides (one shared factor).

simulate_side makes one side (an atsdbench.data.results.Result), calibration a simulated `atsdbench
calibrate` of one kernel through the real estimator, schedule a side's sub-run starts and wall time,
and map_cells runs a study's seeded cells over processes.
"""
import math

ROUND_S = 1.5  # one round of 256M x 4 strides on this VM, warm-up pass included
STRIDES = [65536, 1048576, 2097152, 4194304]
BASE_GBPS = {65536: 12.0, 1048576: 20.0, 2097152: 25.0, 4194304: 28.0}  # levels only; tests are on log ratios
SIZE = 256 << 20
REPS = 4  # timed passes a round
PASS_SD, ROUND_SD, DRIFT_SD, DRIFT_TAU, RHO = 0.034, 0.028, 0.046, 8.0, 0.7
TRUE_CHANGE = 0.10  # the studies' true change: the new side of a +10% pair is 10% faster
CALIBRATION_GAP = 150.0  # calibrate's default (measure/calibration.py's GAP); the simulated drift (8 s) is gone by 20 s


def sub_run_seconds(rounds, warmup_rounds=1):
    return (rounds + warmup_rounds) * ROUND_S


def schedule(runs, rounds, gap):
    """Start times of a side's sub-runs and its wall time: starts at least `gap` apart, never overlapping."""
    step = max(gap, sub_run_seconds(rounds))
    starts = [k * step for k in range(runs)]
    return starts, starts[-1] + sub_run_seconds(rounds)


def _factor(rng, shape):
    """Standard normals over the last axis (strides), correlated RHO between strides."""
    common = rng.standard_normal(shape[:-1] + (1,))
    return math.sqrt(RHO) * common + math.sqrt(1 - RHO) * rng.standard_normal(shape)


def simulate_side(rng, runs, rounds, gap, sp, boot, change=0.0, label="A", boot_id="boot-a", placement=0.0, k=1):
    """One side: a Result of `runs` sub-runs (no `run` column for one), log-normal noise as above.
    placement: the sd of a region's effect (which physical pages it got); each sub-run holds k
    regions and its measured round i uses region i mod k, so with k = 1 the region's effect is one more
    per-process effect, as measured (a process's fresh allocations get the same recycled pages)."""
    import numpy as np

    from atsdbench.data.results import Result

    ns = len(STRIDES)
    starts, _ = schedule(runs, rounds, gap)
    per_run = rounds + 1  # one warm-up round
    times = np.array([s + i * ROUND_S for s in starts for i in range(per_run)])
    # drift: stationary OU sampled at each round's time, correlated across strides
    drift = np.empty((len(times), ns))
    drift[0] = DRIFT_SD * _factor(rng, (ns,))
    for j in range(1, len(times)):
        phi = math.exp(-(times[j] - times[j - 1]) / DRIFT_TAU)
        drift[j] = phi * drift[j - 1] + DRIFT_SD * math.sqrt(1 - phi * phi) * _factor(rng, (ns,))
    round_eff = ROUND_SD * _factor(rng, (len(times), ns))
    process = sp * _factor(rng, (runs, ns))
    boot_eff = boot * _factor(rng, (ns,))
    passes = PASS_SD * rng.standard_normal((len(times), REPS + 1, ns))  # rep 0: the warm-up pass
    regions = placement * _factor(rng, (runs, k, ns)) if placement else np.zeros((runs, k, ns))
    base = np.log([BASE_GBPS[s] for s in STRIDES])
    records = []
    for n, t in enumerate(times):
        run, i = divmod(n, per_run)
        region = regions[run, max(i - 1, 0) % k]  # the warm-up round (i = 0) on the first region
        level = base + math.log1p(change) + boot_eff + process[run] + region + drift[n] + round_eff[n]
        for rep in range(REPS + 1):
            for order, stride in enumerate(STRIDES):
                gbps = float(math.exp(level[order] + passes[n, rep, order]))
                seconds = SIZE / (gbps * 1e9)
                calls = SIZE // stride
                s = {"round": n, "rep": rep, "order": order, "stride_bytes": stride, "warmup": i == 0 or rep == 0,
                     "ns": int(round(seconds * 1e9)), "seconds": seconds, "calls": calls, "gbps": gbps,
                     "us_per_call": seconds * 1e6 / calls, "round_t": float(t - starts[0])}
                if runs > 1:
                    s["run"] = run
                records.append(s)
    host = {"hostname": "sim", "arch": "x86_64", "kernel_release": f"sim-{label}", "page_size": 4096,
            "boot_id": boot_id}
    config = {"size": SIZE, "strides": list(STRIDES), "rounds": rounds, "reps": REPS, "warmup": 1,
              "warmup_rounds": 1, "pages": "base", "bystanders": 0, "retouch": True, "gpu": None, "label": label,
              "runs": runs, "gap": gap, "seed": 0}
    return Result(host, config, records, started=0.0, finished=float(times[-1] + ROUND_S))


def calibration(rng, runs, rounds, sp, boot, change, label):
    """A noise profile of one kernel (data.noise_profile.NoiseProfile) from a simulated `atsdbench calibrate`: `runs`
    sub-runs x `rounds`, CALIBRATION_GAP apart, through the real estimator (analysis/noise.py)."""
    from atsdbench.analysis import noise
    from atsdbench.data import noise_profile

    cal = simulate_side(rng, runs, rounds, CALIBRATION_GAP, sp, boot, change, label, f"boot-cal-{label}")
    entries, per_run = noise.noise_profile_entries(cal)
    data = noise_profile.build(cal.host, cal.config, entries, True, per_run, when=0.0,
                               span_s=noise_profile.span(cal))
    return noise_profile.NoiseProfile(data, f"calibration-{label}.json")


def paired_cells(rng, n, ratio, k):
    """k experiments x n rounds of two cells of one run (compare --by's pairs): each round's mean of 4
    passes; every round moves both cells alike (5-15% CV luck plus a drift of up to 3% a round); each
    cell has 1-4% noise of its own.  The new cell is the base cell's process scaled by `ratio`."""
    import numpy as np

    round_cv, cell_cv = rng.uniform(0.05, 0.15, (k, 1)), rng.uniform(0.01, 0.04, (k, 1))
    shared = np.exp(rng.normal(0, 1, (k, n)) * np.log1p(round_cv) + rng.uniform(-0.03, 0.03, (k, 1)) * np.arange(n))

    def cell():
        own = rng.normal(0, 1, (k, n)) * np.log1p(cell_cv)
        passes = np.exp(own[..., None] + rng.normal(0, 1, (k, n, 4)) * np.log1p(cell_cv)[..., None] / 5)
        return shared * passes.mean(axis=-1)

    return cell(), ratio * cell()


def map_cells(cell, tasks, jobs=1):
    """[cell(task) for task in tasks], over `jobs` processes where more than one (each task seeds its
    own generator, so the numbers do not depend on jobs).  model_coverage and bench_defaults use it too."""
    if jobs > 1:
        from multiprocessing import Pool

        with Pool(jobs) as pool:
            return pool.map(cell, tasks, chunksize=1)
    return [cell(t) for t in tasks]
