"""Runs rounds in a fresh process, for `run --processes` (one round each) and `run --runs` (a whole
sub-run each).  JSON request on stdin; one JSON line per finished pass on stdout as it finishes, then
one closing line, so a parent that is stopped keeps every pass its worker finished."""
import dataclasses
import json
import sys
import time

from .. import signals
from ..errors import ReadBackFailed, UsageError
from .plan import Plan
from .session import Session


def main():
    with signals.held():  # as in runner.run: stop between passes, report what was finished
        request = json.load(sys.stdin)
        fields = {f.name for f in dataclasses.fields(Plan)}
        plan = Plan(**{k: v for k, v in request["plan"].items() if k in fields})  # "cells" is derived
        end = {"interrupted": False, "error": None}
        started = time.monotonic() - request.get("t", 0.0)  # round_t counts from the parent's start
        try:
            signals.check()
            with Session(plan) as session:
                end["facts"] = session.facts()
                for index, warm in request["rounds"]:
                    round_t = time.monotonic() - started

                    def send(sample, round_t=round_t):  # as the pass ends: a parent stopped keeps it
                        sample["round_t"] = round_t
                        print(json.dumps({"sample": sample}), flush=True)

                    session.round(index, warm, send)
        except KeyboardInterrupt:
            end["interrupted"] = True
        except OSError as e:
            end["error"] = {"errno": e.errno, "message": str(e.strerror or e),
                            "readback": isinstance(e, ReadBackFailed)}
        except UsageError as e:
            end["error"] = {"errno": None, "message": str(e)}
        end["interrupted"] = signals.take() or end["interrupted"]
        print(json.dumps({"end": end}), flush=True)


if __name__ == "__main__":
    signals.install()
    main()
    signals.end(0)
