"""lab collect and lab status: wait for a fleet's jobs to end, bring each one's log home through the
REST API and its results into FLEET/results/BOARD/SIDE/ (the import --lava-log rules), record its end."""
import os
import sys
import time

from .._cli import shows_progress, warn
from ..data import fleet, files, lava_log
from ..errors import UsageError
from .. import signals
from .server import Unreachable

LOGS = "logs"  # FLEET/logs/JOB.log: each ended job's log as the server gave it
INTERVAL = 30
PATIENCE = 300  # seconds a server may not answer (a restart) before collect stops, resumable


def _load(directory, server):
    if not fleet.is_fleet(directory):
        raise UsageError(f"{directory}: not a fleet directory (no {fleet.MANIFEST}: lab submit makes one)")
    data = fleet.load(directory)
    if server is not None and data["server"] != server.identity.server:
        raise UsageError(f"{directory} is a fleet of {data['server']}, not of {server.identity.server}: "
                         "give its identity")
    return data


class _Patient:
    """Calls to a server that may be restarting: Unreachable is retried until `patience` seconds
    have gone without an answer, then it stops (the manifest holds what was done)."""

    def __init__(self, server, directory, patience, clock, err):
        self.server, self.directory, self.patience, self.clock, self.err = server, directory, patience, clock, err
        self.down_since = None

    def __call__(self, method, *args):
        try:
            answer = getattr(self.server, method)(*args)
        except Unreachable as e:
            now = self.clock()
            if self.down_since is None:
                self.down_since = now
                warn(f"{e}: retrying for up to {self.patience} s", self.err)
            if now - self.down_since >= self.patience:
                raise Unreachable(f"{e} for {self.patience} s: {self.directory} holds every job collected so "
                                  f"far; lab collect {self.directory} again resumes") from None
            return None
        self.down_since = None
        return answer


def _write_log(directory, job, text):
    rel = f"{LOGS}/{job['id']}.log"
    path = os.path.join(directory, rel)
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        files.write_atomically(path, lambda f: f.write(text), binary=True)
    return rel


def _import(directory, job, log_path):
    """The job's results from its log into results/BOARD/SIDE/JOB-NAME.json with import --lava-log's
    rules (each block left out named; a file of an interrupted collect of this job is kept, never
    overwritten; the same bytes as another job's file are that job's, counted once); (relative
    paths, problems)."""
    prefix = f"{job['id']}-"
    folder = os.path.dirname(os.path.join(directory, fleet.result_path(directory, job, "x")))
    problems = []
    try:
        written, there, lost = lava_log.import_log(log_path, folder, problems.append, lambda line: None,
                                                   prefix=prefix)
    except UsageError as e:
        return [], problems + [str(e)]
    rels = []
    for path in written + there:
        name = os.path.basename(path)
        if path in there and not name.startswith(prefix):
            continue  # another job's file holds these bytes: said in problems, one observation
        rels.append("/".join((os.path.relpath(folder, directory).replace(os.sep, "/"), name)))
    if not written and not there and not lost:
        problems.append("no atsdbench result between markers")
    return list(dict.fromkeys(rels)), problems


def _health(show):
    health = show.get("health")
    if health in fleet.ENDED:
        return health
    return "Incomplete"  # Finished with no health the manifest knows: not a whole job


def _log_reason(log_text):
    """The reason LAVA logged for a job that did not complete (its `lava` definition's `job` case's
    error_msg), where the server keeps no failure_comment (a job it refused in validation)."""
    import json

    for line in reversed(log_text.decode("utf-8", "replace").splitlines()):
        if '"case": "job"' not in line or not line.startswith("- {"):
            continue
        try:
            msg = json.loads(line[2:]).get("msg")
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("error_msg"):
            return " ".join(str(msg["error_msg"]).split())[:300]
    return None


def _finish(directory, job, show, log_text):
    device = show.get("device")
    job["board"] = fleet.check_name(device, "board") if device else None
    job["state"] = _health(show)
    job["reason"] = show.get("failure_comment") or None
    if job["reason"] is None and job["state"] != "Complete" and log_text:
        job["reason"] = _log_reason(log_text)
    job["results"], job["problems"] = [], []
    if log_text is not None and job["board"] is not None:
        job["log"] = _write_log(directory, job, log_text)
        job["results"], job["problems"] = _import(directory, job, os.path.join(directory, job["log"]))


def _describe(job):
    where = f"{job['side']} on {job.get('board') or job.get('requested') or 'no board'}"
    reason = f" ({job['reason']})" if job.get("reason") else ""
    n = len(job.get("results") or [])
    return f"job {job['id']} {where}: {job['state']}{reason}, {n} result{'s' if n != 1 else ''}"


def collect(directory, server, wait=True, interval=INTERVAL, patience=PATIENCE, out=None, err=None,
            clock=time.monotonic, sleep=None, max_polls=None):
    """0 once every job has ended and each one's results are home (or, without wait, what has ended)."""
    out = out or sys.stdout
    err = err or sys.stderr
    sleep = sleep or signals.sleep
    data = _load(directory, server)
    ask = _Patient(server, directory, patience, clock, err)
    progress = shows_progress("auto", err)
    polls = 0
    try:
        with signals.held():  # Ctrl-C lands between jobs: each one collected is in the manifest first
            while True:
                for job in data["jobs"]:
                    if job["state"] in fleet.ENDED:
                        continue
                    signals.check()
                    show = ask("show", job["id"])
                    if show is None:
                        break  # the server is down: wait, then ask again
                    if show.get("state") != "Finished":
                        continue
                    log_text = ask("log", job["id"]) if show.get("device") else None
                    if log_text is None and show.get("device") and ask.down_since is not None:
                        break
                    _finish(directory, job, show, log_text)
                    fleet.save(directory, data)
                    print(_describe(job), file=out)
                    for problem in job["problems"]:
                        warn(f"job {job['id']}: {problem}", err)
                left = sum(j["state"] not in fleet.ENDED for j in data["jobs"])
                if progress:
                    print(f"\r{len(data['jobs']) - left} of {len(data['jobs'])} jobs ended", end="", file=err,
                          flush=True)
                polls += 1
                if not left or not wait or (max_polls is not None and polls >= max_polls):
                    break
                sleep(interval)
    finally:
        if progress:
            print(file=err)
    return _summary(directory, data, out)


def _summary(directory, data, out):
    jobs = data["jobs"]
    counts = {s: sum(j["state"] == s for j in jobs) for s in fleet.STATES}
    n = sum(len(j.get("results") or []) for j in jobs)
    shown = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
    print(f"{directory}: {len(jobs)} jobs ({shown or 'none'}), {n} result files", file=out)
    for job in jobs:
        if job["state"] in ("Incomplete", "Canceled"):
            print(f"  {_describe(job)}", file=out)
    if counts["submitted"]:
        print(f"  {counts['submitted']} not ended yet: lab collect {directory} again", file=out)
    return 0


def status(directory, server, out=None):
    """Each job: the manifest's record, and the server's state for a job not ended yet."""
    out = out or sys.stdout
    data = _load(directory, server)
    rows = [("job", "side", "requested", "board", "state", "results", "reason")]
    for job in data["jobs"]:
        state = job["state"]
        board = job.get("board")
        if state not in fleet.ENDED and server is not None:
            show = server.show(job["id"])
            state, board = f"{show.get('state')} (server)", show.get("device") or board
        reason = (job.get("reason") or "")[:40]
        rows.append((str(job["id"]), job["side"], job.get("requested") or "any", board or "-", state,
                     str(len(job.get("results") or [])), reason))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()[:100], file=out)
    print(f"{data['server']}: {len(data['jobs'])} jobs, sides {', '.join(data['sides'])}", file=out)
    return 0
