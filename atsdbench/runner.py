"""Repetition: runs a checked plan's rounds and keeps every finished sample.

Two strategies give the same samples: in this process (one Session for the whole run), or each
round in a fresh Python process (`--processes`: address space and allocator renewed), through
`atsdbench.worker`.  Ctrl-C (and SIGTERM, see commands) or an error part-way keeps every finished
sample (complete=False, result.error says why); set-up errors raise before any pass.
"""
import json
import os
import subprocess
import sys
import time

from . import host
from .errors import UsageError
from .plan import round_kinds
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

    def round(self, round_index, warmup_round):
        return self.session.round(round_index, warmup_round)


class FreshProcess:
    """One round per fresh `python -m atsdbench.worker`: JSON plan in, JSON samples out."""

    def __init__(self, plan):
        self.plan = plan
        self.facts = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def round(self, round_index, warmup_round):
        request = json.dumps({"plan": self.plan.config(), "round": round_index, "warmup_round": warmup_round})
        # cwd: the folder holding this very package, so the worker imports it and not a source tree
        # that happens to be the current directory.
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        proc = subprocess.Popen([sys.executable, "-m", "atsdbench.worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=here)
        try:
            stdout, stderr = proc.communicate(request)
        except KeyboardInterrupt:
            # The worker got the same SIGINT; it writes what it finished and exits.
            stdout, stderr = proc.communicate()
            yield from self._reply(stdout, stderr)["samples"]
            raise
        reply = self._reply(stdout, stderr)
        self.facts.update(reply.get("facts") or {})
        yield from reply["samples"]
        if reply.get("error"):
            err = reply["error"]
            raise OSError(err.get("errno") or 0, err["message"])
        if reply.get("interrupted"):
            raise KeyboardInterrupt

    @staticmethod
    def _reply(stdout, stderr):
        try:
            return json.loads(stdout)
        except ValueError:
            raise OSError(f"round worker failed: {(stderr or 'no output').strip().splitlines()[-1:]}") from None


def run(plan, progress=None):
    """Measure the plan; returns a Result (see the module's docstring)."""
    from .results import Result

    samples, complete, error, started = [], False, None, time.time()
    host_facts = host.full()
    strategy = (FreshProcess if plan.processes else InProcess)(plan)
    with strategy:
        try:
            for round_index, warmup_round in round_kinds(plan):
                for sample in strategy.round(round_index, warmup_round):
                    samples.append(sample)
                    if progress:
                        progress(sample)
            complete = True
        except KeyboardInterrupt:
            pass
        except (OSError, UsageError) as e:
            if not samples:
                raise
            error = str(e.strerror if isinstance(e, OSError) and e.strerror else e)
    config = plan.config()
    config.update({k: v for k, v in strategy.facts.items() if k != "gpu"})
    if "gpu" in strategy.facts:
        host_facts["gpu"] = strategy.facts["gpu"]
    result = Result(host=host_facts, config=config, samples=samples, complete=complete,
                    started=started, finished=time.time())
    result.error = error
    return result
