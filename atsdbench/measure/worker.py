"""Runs one round in a fresh process for `run --processes`; JSON in on stdin, JSON out on stdout."""
import dataclasses
import json
import sys

from .. import signals
from ..errors import UsageError
from .plan import Plan
from .session import Session


def main():
    with signals.held():  # as in runner.run: stop between passes, reply with what was finished
        request = json.load(sys.stdin)
        fields = {f.name for f in dataclasses.fields(Plan)}
        plan = Plan(**{k: v for k, v in request["plan"].items() if k in fields})  # "cells" is derived
        samples, reply = [], {"interrupted": False, "error": None}
        try:
            signals.check()
            with Session(plan) as session:
                reply["facts"] = session.facts()
                for sample in session.round(request["round"], request["warmup_round"]):
                    samples.append(sample)
                    signals.check()
        except KeyboardInterrupt:
            reply["interrupted"] = True
        except OSError as e:
            reply["error"] = {"errno": e.errno, "message": str(e.strerror or e)}
        except UsageError as e:
            reply["error"] = {"errno": None, "message": str(e)}
        reply["interrupted"] = signals.take() or reply["interrupted"]
        reply["samples"] = samples
        json.dump(reply, sys.stdout)


if __name__ == "__main__":
    signals.install()
    main()
    signals.ignore()
