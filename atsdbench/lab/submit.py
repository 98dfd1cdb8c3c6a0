"""lab submit: a kernel A/B as LAVA jobs across a lab's boards, each job recorded in the fleet's
manifest as its submit returns (data/fleet.py)."""
import os
import shlex
import sys
import time

from ..data import fleet, files
from ..errors import UsageError
from .. import signals
from . import jobs as templates

JOBS = "jobs"  # FLEET/jobs/: every definition as submitted


def _boards(devices, tags):
    """[(board label, requested, tags pinning it)]: a --device is pinned by the tag of its own name
    (LAVA's single-node jobs name no device), a --tag by itself; none: any board of the type."""
    out = [(d, d, [d]) for d in devices] + [(t, f"tag:{t}", [t]) for t in tags]
    names = [b[0] for b in out]
    for name in names:
        fleet.check_name(name, "device or tag")
    if len(set(names)) != len(names):
        raise UsageError(f"--device and --tag name each board once (got {', '.join(names)})")
    return out or [("any", None, [])]


def _check_run_options(words):
    for w in words:
        if w in ("-o", "--output") or w.startswith("--output=") or (w.startswith("-o") and not w.startswith("--")):
            raise UsageError("the job's definition names its result files: no -o in the run options")
    return shlex.join(words)


def _check_server(server, device_type, boards, common_tags):
    """The device type, devices and tags as the server has them: refused before anything is submitted."""
    server.device_type(device_type)
    for label, requested, pins in boards:
        if requested == label:  # a --device
            dev = server.device(label)
            if dev.get("device_type") != device_type:
                raise UsageError(f"device {label} is of type {dev.get('device_type')!r}, not {device_type!r}")
            if label not in (dev.get("tags") or []):
                raise UsageError(f"device {label} has no tag {label!r} (LAVA pins a job to a board by a "
                                 "tag)")
    wanted = [label for label, requested, _ in boards if requested and requested.startswith("tag:")]
    wanted += list(common_tags)
    if wanted:
        known = server.tags()
        unknown = [t for t in wanted if t not in known]
        if unknown:
            raise UsageError(f"LAVA server {server.name} has no tag {', '.join(unknown)}")


def _fresh_or_added(directory, add, server_url, sides, kernels):
    """The manifest to add to: a new one, or (with --add) the directory's, if it is of this server and
    these sides and kernels."""
    if fleet.is_fleet(directory):
        data = fleet.load(directory)
        if not add:
            raise UsageError(f"{directory} is a fleet already ({len(data['jobs'])} jobs): lab submit --add "
                             "adds to it")
        if data["server"] != server_url:
            raise UsageError(f"{directory} is a fleet of {data['server']}, not of {server_url}")
        if data["sides"] != sides or data.get("kernels", {}) != kernels:
            raise UsageError(f"{directory} is a fleet of other kernels ({', '.join(data['sides'])}): --add takes "
                             "the same --kernel specs")
        return data
    if add:
        raise UsageError(f"lab submit --add {directory}: no fleet there to add to")
    if os.path.exists(directory) and (not os.path.isdir(directory)
                                      or set(os.listdir(directory)) - {JOBS}):
        raise UsageError(f"lab submit {directory}: not an empty directory nor a fleet")
    data = fleet.new_manifest(server_url, sides)
    data["kernels"] = kernels
    return data


def _write_definition(directory, name, text):
    folder = os.path.join(directory, JOBS)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    files.write_atomically(path, lambda f: f.write(text))
    return "/".join((JOBS, name))


def submit(directory, kernel_specs, device_type, devices=(), tags=(), board_tags=(), boots=1, template=None,
           settings=(), run_options=(), dry_run=False, add=False, server=None, out=None):
    """Returns 0; `server` (lab.server.Server) is needed unless dry_run."""
    out = out or sys.stdout
    if len(kernel_specs) < 2:
        raise UsageError("lab submit needs two or more --kernel NAME=URL (the sides: the first is the baseline)")
    if not 1 <= boots <= 1000:
        raise UsageError(f"--boots must be 1 to 1000 (got {boots})")
    kernels = dict(templates.parse_kernel(s) for s in kernel_specs)
    sides = [templates.parse_kernel(s)[0] for s in kernel_specs]
    if len(kernels) != len(sides):
        raise UsageError(f"--kernel names must differ (got {', '.join(sides)})")
    for side in sides:
        fleet.check_name(side, "side")
    for t in tags:
        fleet.check_name(t, "tag")
    fleet.check_name(device_type, "device type")
    boards = _boards(devices, board_tags)
    common = templates.parse_set(settings)
    common.setdefault("RUN_OPTIONS", _check_run_options(list(run_options)))
    path = template or templates.project_template()
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"--template {path}: {e.strerror}") from None
    server_url = server.identity.server if server is not None else None
    data = _fresh_or_added(directory, add, server_url, sides, kernels) if not dry_run else None
    start = len(data["jobs"]) if data else 0
    first_boot = 1 + max((j.get("boot", 0) for j in data["jobs"]), default=0) if data else 1
    todo = []  # every definition is filled (and any placeholder left refused) before the first submit
    for n, (board, side, boot) in enumerate(templates.plan(sides, boots, [b[0] for b in boards])):
        label, requested, pins = next(b for b in boards if b[0] == board)
        boot += first_boot - 1
        name = f"{start + n + 1:04d}-{side}-{board}-{boot}.yaml"
        values = dict(common, **kernels[side])
        values.update(NAME=f"{side} boot {boot} on {board}", SIDE=side, BOARD=board, BOOT=str(boot))
        job_tags = pins + [t for t in tags if t not in pins]
        todo.append((name, side, requested, job_tags, boot,
                     templates.fill(text, values, path, device_type, job_tags)))
    if dry_run:
        for name, *_, definition in todo:
            print(f"wrote {os.path.join(directory, _write_definition(directory, name, definition))}", file=out)
        print(f"dry run: {len(todo)} jobs written, none submitted", file=out)
        return 0
    _check_server(server, device_type, boards, tags)
    os.makedirs(directory, exist_ok=True)
    if not data["jobs"]:
        fleet.save(directory, data)  # the fleet exists (of this server) before its first job does
    done = 0
    try:
        with signals.held():  # a Ctrl-C lands between jobs: each one submitted is in the manifest first
            for name, side, requested, job_tags, boot, definition in todo:
                signals.check()
                rel = _write_definition(directory, name, definition)
                job_id = server.submit(definition)
                data["jobs"].append({"id": job_id, "side": side, "board": None, "state": "submitted",
                                     "results": [], "requested": requested, "tags": job_tags, "boot": boot,
                                     "definition": rel, "submitted": time.time()})
                fleet.save(directory, data)
                done += 1
                print(f"submitted job {job_id}: {side} boot {boot} on {requested or 'any ' + device_type}",
                      file=out)
            signals.check()
    except KeyboardInterrupt:
        print(f"atsdbench: lab submit stopped after {done} of {len(todo)} jobs, each in "
              f"{fleet.manifest_path(directory)} (lab submit --add for more)", file=sys.stderr)
        raise
    except UsageError as e:
        if not done:
            raise
        raise UsageError(f"{e} (after {done} of {len(todo)} jobs, each in {fleet.manifest_path(directory)})") \
            from None
    print(f"{done} jobs in {directory}: lab collect {directory} waits for them and brings their results home",
          file=out)
    return 0
