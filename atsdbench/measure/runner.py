"""Repetition: runs a checked plan's rounds and keeps every finished sample.

Two strategies give the same samples: in this process (one Session for the whole run), or each
round in a fresh Python process (`--processes`: address space and allocator renewed), through
`atsdbench.measure.worker`.  Ctrl-C (and SIGTERM, see commands) or an error part-way keeps every finished
sample (complete=False, result.error says why); set-up errors raise before any pass.
"""
import json
import os
import signal
import subprocess
import sys
import time

from . import host
from .. import signals
from ..analysis import timeseries
from ..errors import ReadBackFailed, UsageError
from .plan import next_sub_run_start, round_kinds
from .session import Session


class InProcess:
    def __init__(self, plan):
        self.session = Session(plan)
        self.facts = {}

    def __enter__(self):
        self.session.__enter__()
        self.facts = self.session.facts()
        return self

    def __exit__(self, *exc):
        self.session.close()

    def round(self, round_index, warmup_round, emit):
        self.session.round(round_index, warmup_round, emit)


def worker_failure(returncode, stderr):
    """Why a worker ended without its closing line: the signal that killed it (the OOM killer's
    SIGKILL leaves no output of its own), or its exit status and last line on stderr."""
    last = (stderr or "").strip().splitlines()[-1:]
    said = f": {last[0]}" if last else " and printed nothing"
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the round worker was killed by {name} (signal {-returncode}){said if last else ''}"
    return f"the round worker exited {returncode} without finishing{said}"


def has_workload(plan):
    """The plan runs will-it-scale's loops (--workload) in some cell; the workload of the first is
    the plan's own, a list an axis."""
    return bool(getattr(plan, "workload", None) or (getattr(plan, "axes", None) or {}).get("workload"))


def _start_worker(plan, argv, **kw):
    """The worker process; for a --workload executed with ASLR off, as will-it-scale's runtest.py runs
    its binaries (setarch -R): a process's layout is chosen when it is executed, so the flag is put in
    this process's personality around the start (a child inherits it) and taken out again."""
    if not has_workload(plan):
        return subprocess.Popen(argv, **kw)
    from . import core

    try:
        had = core.no_aslr(1)
    except OSError:  # the personality refused: measured as it is, its config says aslr on (as atsd does)
        return subprocess.Popen(argv, **kw)
    try:
        return subprocess.Popen(argv, **kw)
    finally:
        if not had:
            core.no_aslr(-1)


def _worker(plan, rounds, t, facts):
    """Runs `rounds` ([(index, warm-up?)]) of the plan in a fresh `python -m atsdbench.measure.worker`
    and yields each pass as the worker finishes it.  Signals are held here (see run): one recorded
    while the worker runs is passed on to it (a Ctrl-C from the terminal reached it already), and
    the worker stops between passes and reports; then KeyboardInterrupt, with every pass kept."""
    request = json.dumps({"plan": plan.config(), "rounds": [list(r) for r in rounds], "t": t})
    # cwd: the folder holding this very package, so the worker imports it and not a source tree
    # that happens to be the current directory.
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = _start_worker(plan, [sys.executable, "-m", "atsdbench.measure.worker"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=here)
    end, passed_on = None, False
    try:
        proc.stdin.write(request)
        proc.stdin.close()
        for line in proc.stdout:
            if signals.pending() and not passed_on:
                proc.send_signal(signal.SIGINT)
                passed_on = True
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "sample" in message:
                yield message["sample"]
            elif "end" in message:
                end = message["end"]
    finally:
        if end is None and proc.poll() is None:  # the caller stopped reading: stop the worker too
            proc.send_signal(signal.SIGINT)
        stderr = proc.stderr.read()
        proc.wait()
    if end is None:
        raise OSError(worker_failure(proc.returncode, stderr))
    facts.update(end.get("facts") or {})
    if end.get("error"):
        kind = ReadBackFailed if end["error"].get("readback") else OSError
        raise kind(end["error"].get("errno") or 0, end["error"]["message"])
    if end.get("interrupted") or passed_on:
        signals.take()
        raise KeyboardInterrupt


class FreshProcess:
    """`--processes`: each round in a fresh worker process."""

    def __init__(self, plan):
        self.plan = plan
        self.facts = {}
        self.t0 = time.monotonic()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def round(self, round_index, warmup_round, emit):
        for sample in _worker(self.plan, [(round_index, warmup_round)], time.monotonic() - self.t0, self.facts):
            emit(sample)


class SubRuns:
    """`--runs M`: M sub-runs, each in a fresh worker process (its own allocations, address space and
    bystanders), their starts at least `--gap` apart: the wait is a sleep, never left to chance.
    Every pass carries `run`, its sub-run's index.  With `--until` (an adaptive.RunPolicy) M is the
    minimum: after each sub-run from the M-th on, one more while the policy asks for it."""

    def __init__(self, plan):
        self.plan = plan
        self.facts = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def passes(self, t0, emit, progress=None, policy=None, records=None):
        """emit(sample) for the passes of every sub-run; `records` is the caller's list of them, which the
        policy reads (emit appends every pass to it)."""
        r, last = 0, None
        more = (lambda: policy.after_run(records, time.monotonic() - t0) is None) if policy else (lambda: False)
        while r < self.plan.runs or more():
            now = time.monotonic()
            wait = next_sub_run_start(last, self.plan.gap, now) - now
            if wait > 0:
                if progress:
                    of = f" of {self.plan.runs}" if policy is None else ""
                    progress({"wait": wait, "before": f"sub-run {r + 1}{of} (--gap)"})
                signals.sleep(wait)
            last = time.monotonic()
            started = last - t0
            for sample in _worker(self.plan, round_kinds(self.plan, r), started, self.facts):
                sample["run"] = r
                emit(sample)
            if policy is not None:
                policy.run_done(started, time.monotonic() - t0)
                if progress:
                    policy.observe(records, time.monotonic() - t0)
                    progress({"adaptive": policy.progress_text()})
            r += 1


class Pacer:
    """Spreads the measured rounds evenly over at least `spread` seconds (sleeping between rounds,
    never inside one), so consecutive rounds are far enough apart to see the machine's drift."""

    def __init__(self, spread, rounds, clock=time.monotonic, sleep=signals.sleep):
        self.spread, self.rounds = spread, rounds
        self.clock, self.sleep = clock, sleep
        self.first = None

    def wait(self, k, progress=None):
        """Before measured round k (0-based): returns the seconds slept."""
        if k == 0 or self.first is None:
            self.first = self.clock()
            return 0.0
        from . import core

        delay = core.round_start(self.first, k, self.spread, self.rounds) - self.clock()
        if delay <= 0:
            return 0.0
        if progress:
            progress({"wait": delay, "before": f"round {k + 1} (--spread)"})
        self.sleep(delay)
        return delay


def _rounds(plan, policy, records, started):
    """(round index, warm-up round?) for the whole run: warm-up rounds, the planned rounds, then, for
    an adaptive run, one more while the policy asks for it."""
    index = 0
    for index, warm in round_kinds(plan):
        yield index, warm
    while policy is not None and policy.after_round(records, time.monotonic() - started) is None:
        index += 1
        yield index, False


def _round_passes(plan, strategy, policy, records, t0, progress, emit):
    """emit(sample) for the passes of a run made of rounds (in this process, or a fresh one per round):
    paced by --spread, and for --until one more round while the policy asks (it reads `records`, which
    emit appends every pass to)."""
    pacer, measured = Pacer(plan.spread, plan.rounds), 0
    for round_index, warmup_round in _rounds(plan, policy, records, t0):
        if not warmup_round:
            pacer.wait(measured, progress)
            measured += 1
        round_t = time.monotonic() - t0

        def stamped(sample, round_t=round_t):
            sample["round_t"] = round_t
            emit(sample)

        strategy.round(round_index, warmup_round, stamped)
        if policy and progress and not warmup_round:
            policy.observe(records, time.monotonic() - t0)
            progress({"adaptive": policy.progress_text()})


def run(plan, progress=None):
    """Measure the plan; returns a Result (see the module's docstring).  SIGINT and SIGTERM are held
    for the whole run and looked for between passes: the run stops there, and a signal that comes
    while the result is put together marks it incomplete instead of losing it."""
    with signals.held():
        return _run(plan, progress)


def _run(plan, progress):
    from ..data.results import Result

    samples, verify, complete, error, failure, started = [], [], False, None, None, time.time()
    policy = None
    if plan.until:
        from . import adaptive

        policy = adaptive.Policy.from_plan(plan)
    host_facts = host.full()
    # a --workload is measured in processes executed with ASLR off (_start_worker): one per round
    strategy = (SubRuns if plan.runs > 1 else FreshProcess if plan.processes or has_workload(plan) else
                InProcess)(plan)
    t0 = time.monotonic()

    def keep(sample):  # each pass as it ends; a held signal stops the run after it (Session, the worker)
        if sample.get("kind") == "verify":  # run --verify: a record of its own, never a timed pass
            del sample["kind"]
            verify.append(sample)
            return
        samples.append(sample)
        if progress:
            progress(sample)

    with strategy:
        try:
            signals.check()
            if isinstance(strategy, SubRuns):
                strategy.passes(t0, keep, progress, policy, samples)
            else:
                _round_passes(plan, strategy, policy, samples, t0, progress, keep)
            complete = True
        except KeyboardInterrupt:
            if policy:
                policy.interrupted(samples, time.monotonic() - t0)
        except ReadBackFailed as e:  # kept with what finished, even nothing: exit 3 (commands)
            error, failure = e.strerror, e
        except (OSError, UsageError) as e:
            if not samples:
                raise
            error = str(e.strerror if isinstance(e, OSError) and e.strerror else e)
    config = plan.config()
    config.update({k: v for k, v in strategy.facts.items() if k not in ("gpu", "device")})
    if policy:
        config["adaptive"] = policy.summary()
    config["round_lag1"] = timeseries.round_lag1(samples)
    for key in ("gpu", "device"):  # what the device is: the host's, as its CPU model is
        if key in strategy.facts:
            host_facts[key] = strategy.facts[key]
    if signals.take():  # after the last pass: the samples are all there, but the user asked to stop
        complete = False
    result = Result(host=host_facts, config=config, samples=samples, complete=complete,
                    started=started, finished=time.time(), verify=verify)
    result.error = error
    result.failure = failure
    return result
