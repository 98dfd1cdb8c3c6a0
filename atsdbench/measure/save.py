"""run's and calibrate's measuring, inside their held(): the passes, run --breakdown's and --profile's
extra passes after a run that was not stopped, then the file (or its rescue) before anything optional
runs."""
import sys

from .. import signals
from ..errors import UsageError


def measure_and_save(plan, output, progress=None, probe=None, sampler=None):
    """Returns (result, the save's UsageError or None).  probe: run --breakdown's (measure/breakdown.py),
    sampler: run --profile's (measure/profile.py); each adds its section to the result's config."""
    from ..data import results
    from . import runner

    result = runner.run(plan, progress=progress)
    if progress:
        progress.end()
    if probe is not None and result.complete and not signals.pending():
        from . import breakdown

        result.config["breakdown"] = _section(lambda into: breakdown.run(plan, probe, breakdown.untraced_us(result),
                                                                          into=into))
    if sampler is not None and result.complete and not signals.pending():
        from . import profile

        result.config["profile"] = _section(lambda into: profile.run(plan, sampler, into=into))
    save_error = None
    if not result.records:
        if getattr(result, "failure", None) is None:  # a read-back's one line says it all (exit 3)
            print("atsdbench: no pass finished; nothing written", file=sys.stderr)
    else:
        try:
            results.save_or_rescue(result, output, later=True)
        except UsageError as e:
            save_error = e
    return result, save_error


def probes(plan, breakdown=False, profile=False):
    """(run --breakdown's probe or None, run --profile's sampler or None), each refused (UsageError)
    where this machine cannot take it."""
    probe = sampler = None
    if breakdown:
        from . import breakdown as traced

        probe = traced.Probe(sorted({c["op"] for c in plan.cells}))
    if profile:
        from . import profile as sampled

        sampler = sampled.Probe([plan.cpu] + list(plan.bystander_cpus))
    return probe, sampler


def _section(run):
    """An extra pass's section {"passes": [...]}: a Ctrl-C keeps what finished (complete false there; the
    signal stays pending, so the run exits 130); an error ends the section, never the run's file."""
    section = {"passes": []}
    try:
        run(section)
    except (OSError, UsageError) as e:
        section["complete"] = False
        section["error"] = str(e.strerror if isinstance(e, OSError) and e.strerror else e)
    return section
