"""A fleet directory: the jobs `atsdbench lab submit` sent to a LAVA server, and the results `lab collect`
brought back, sorted by the board that ran each job and its side.

    FLEET/fleet.json                           the manifest (MANIFEST): server, sides, every job
    FLEET/results/BOARD/SIDE/JOB-NAME.json     each result file, under the job's actual_device

The manifest is the one record of what was submitted: lab writes it (atomically) as each submit
returns, collect as each job ends; compare FLEET reads it.  The format: docs/lab.md#fleets."""
import os
import re

from ..errors import UsageError
from .inputs import read_json

MANIFEST = "fleet.json"
FORMAT = "atsdbench-fleet"
VERSION = 1
RESULTS = "results"

# A job's state as the manifest records it: "submitted" until collect sees it end, then the server's
# health of the finished job.
STATES = ("submitted", "Complete", "Incomplete", "Canceled")
ENDED = STATES[1:]

# Board and side names become folder names: no separators, nothing hidden, nothing empty.
_NAME = re.compile(r"[A-Za-z0-9_+@=-][A-Za-z0-9_.+@=-]{0,127}\Z")


def manifest_path(directory):
    return os.path.join(directory, MANIFEST)


def is_fleet(path):
    """A fleet directory: a folder with a manifest (compare tells it from a campaign by this)."""
    return isinstance(path, str) and os.path.isdir(path) and os.path.isfile(manifest_path(path))


def check_name(name, what):
    """A board's or a side's name as a folder may hold it."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise UsageError(f"{what} {name!r} is no folder name (1-128 of A-Za-z0-9._+@=-, "
                         "not leading '.')")
    return name


def new_manifest(server, sides):
    """The manifest of a fleet not yet submitted: the server (its URL, never a token) and the side names
    in the order given (side 0 is the baseline)."""
    for side in sides:
        check_name(side, "side")
    if len(set(sides)) != len(sides) or len(sides) < 2:
        raise UsageError(f"a fleet needs two or more distinct sides (got {', '.join(sides) or 'none'})")
    return {"format": FORMAT, "version": VERSION, "server": server, "sides": list(sides), "jobs": []}


def check(data, path):
    """The manifest's shape, every job's fields and its result paths (inside the fleet), or UsageError."""
    where = f"{path}: not a fleet manifest"
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f"{where} (no format {FORMAT!r})")
    if data.get("version") != VERSION:
        raise UsageError(f"{where} of version {VERSION} (version {data.get('version')!r}: a newer atsdbench?)")
    sides = data.get("sides")
    if not isinstance(sides, list) or len(sides) < 2 or not isinstance(data.get("server"), str):
        raise UsageError(f"{where} (its server or sides are missing)")
    for side in sides:
        check_name(side, "side")
    jobs = data.get("jobs")
    if not isinstance(jobs, list):
        raise UsageError(f"{where} (no list of jobs)")
    seen = set()
    for i, job in enumerate(jobs):
        problem = job_problem(job, sides)
        if problem is None and str(job["id"]) in seen:
            problem = f"job {job['id']} is listed twice"
        if problem:
            raise UsageError(f"{path}: job {i + 1}: {problem}")
        seen.add(str(job["id"]))
    return data


def job_problem(job, sides):
    """What is wrong with one job's record, or None."""
    if not isinstance(job, dict):
        return "not an object"
    if not isinstance(job.get("id"), (int, str)) or isinstance(job.get("id"), bool) or str(job["id"]) == "":
        return "no job id"
    if job.get("side") not in sides:
        return f"side {job.get('side')!r} is none of {', '.join(sides)}"
    if job.get("state") not in STATES:
        return f"state {job.get('state')!r} is none of {', '.join(STATES)}"
    board = job.get("board")
    if board is not None and (not isinstance(board, str) or not _NAME.match(board)):
        return f"board {board!r} cannot name a folder"
    results = job.get("results", [])
    if not isinstance(results, list) or not all(isinstance(r, str) for r in results):
        return "results is not a list of paths"
    for r in results:
        parts = r.split("/")
        if len(parts) != 4 or parts[0] != RESULTS or parts[1] != board or parts[2] != job["side"] \
                or parts[3].startswith(".") or not parts[3].endswith(".json"):
            return f"result {r!r} is not {RESULTS}/BOARD/SIDE/NAME.json of its own board and side"
    return None


def load(directory):
    """The checked manifest of a fleet directory."""
    path = manifest_path(directory)
    return check(read_json(path, "fleet manifest"), path)


def result_path(directory, job, name):
    """Where a job's result named `name` goes: results/BOARD/SIDE/JOB-NAME.json (relative, as the
    manifest records it)."""
    return "/".join((RESULTS, check_name(job["board"], "board"), job["side"], f"{job['id']}-{name}.json"))


def by_board(directory, data=None):
    """{board: {side: [result paths]}} of every ended job with results, boards in first-seen order; the
    paths are joined to `directory`."""
    data = load(directory) if data is None else data
    boards = {}
    for job in data["jobs"]:
        if job.get("board") is None or not job.get("results"):
            continue
        sides = boards.setdefault(job["board"], {})
        sides.setdefault(job["side"], []).extend(os.path.join(directory, r) for r in job["results"])
    return boards


def save(directory, data):
    """Write the manifest (checked first) atomically: a reader, or a crash, sees the old one or the new."""
    import json

    from . import files

    path = manifest_path(directory)
    check(data, path)
    body = json.dumps(data, indent=1) + "\n"
    files.write_atomically(path, lambda f: f.write(body))
