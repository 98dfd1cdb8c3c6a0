"""A fleet through a real LAVA server (Debian 12's lava-server 2023.01): a PostgreSQL cluster and a
lava-server of the test's own on free local ports (tests/support/lava_lab.py), its scheduler, a worker with
two qemu devices (two boards, each pinned by its tag) whose jobs LAVA's own dispatcher (`lava-run`) runs,
`lab submit` of two sides x two boards, all but the first job canceled, `lab collect`.  The job boots
Debian 12 (scripts/lava-rootfs) under qemu TCG, takes the definition lava/atsdbench.yaml from this
checkout by git, installs the session's wheel with its `venv` mode, runs, and compares against a
BASELINE on the device (a committed result file of the same strides).  One job proves the path (submit,
the scheduler, the worker, LAVA's dispatcher, the log through REST, collect's import); a second side
would run the same path again (compare of a fleet's sides is tests/cli/test_compare_fleet.py's, on
files).  The rates are emulated: the test checks the design, the cases, the files and the board.  It
leaves no process, cluster or port behind.  Where lava-server, lava-dispatcher, postgresql, mmdebstrap
or qemu is missing (or this is not root), it skips."""
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

import lava_lab
import lava_rootfs

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
RUN_OPTIONS = ["--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "2"]  # the path, not a rate
COLLECT_TIMEOUT = 3600

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _closed(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_a_fleet_through_a_lava_server(tmp_path, cli_process, request, fixtures):
    why = lava_lab.missing()
    if why:
        pytest.skip(why)
    lava_rootfs.need()
    started = time.monotonic()
    system = lava_rootfs.system(tmp_path, request.getfixturevalue("wheel"))
    # 64K and 1M among the baseline's strides: the definition's compare case has a speedup for each
    image = lava_rootfs.image(system, "fleet", {"/opt/baseline.json": (fixtures / "before.json").read_bytes()})
    lab = lava_lab.Lab(worker_env=lava_rootfs.guestfs_env(system))
    try:
        lab.start()
        lab.wait_devices()
        up = time.monotonic()
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LAVA_URI": lab.uri, "LAVA_USER": "admin",
               "LAVA_TOKEN": lab.token}
        fleet = tmp_path / "fleet"
        revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                  check=True).stdout.strip()
        kernel = f"{(system['cache'] / 'vmlinuz').as_uri()},initrd={(system['cache'] / 'initrd.img').as_uri()}"
        p = cli_process("lab", "submit", fleet, "--kernel", f"old={kernel}", "--kernel", f"new={kernel}",
                        "--device-type", "qemu", "--device", "qemu01", "--device", "qemu02",
                        "--set", f"ROOTFS={image.as_uri()}", "--set", f"REPOSITORY={ROOT}", "--set",
                        f"REVISION={revision}", "--set", "INSTALL=venv", "--set", f"SOURCE={system['wheel']}",
                        "--set", "BASELINE=/opt/baseline.json", "--", *RUN_OPTIONS, env=env)
        assert p.returncode == 0, p.stderr
        jobs = json.loads((fleet / "fleet.json").read_text())["jobs"]
        assert [(j["side"], j["requested"]) for j in jobs] == [("old", "qemu01"), ("old", "qemu02"),
                                                               ("new", "qemu01"), ("new", "qemu02")]
        # all but the first canceled (qemu02's first perhaps already running, the others queued): each
        # must be named and nothing else lost, and qemu01 runs the one job
        from atsdbench.lab import server

        for j in jobs[1:]:
            server.Server(server.Identity(lab.uri, "admin", lab.token)).call("scheduler.jobs.cancel", str(j["id"]))
        # the jobs take minutes each under TCG (more on a busy machine): longer than cli_process waits
        p = subprocess.run([sys.executable, "-m", "atsdbench", "lab", "collect", str(fleet), "--interval", "10"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=COLLECT_TIMEOUT)
        assert p.returncode == 0, (p.stderr, lab.logs())
        data = json.loads((fleet / "fleet.json").read_text())
        states = [(j["side"], j["board"], j["state"]) for j in data["jobs"]]
        assert states[0] == ("old", "qemu01", "Complete"), (states, lab.logs())
        assert [s[2] for s in states[1:]] == ["Canceled"] * 3, states
        assert all(f"job {j['id']} {j['side']}" in p.stdout for j in jobs[1:]), p.stdout
        assert [len(j["results"]) for j in data["jobs"]] == [1, 0, 0, 0]
        for j in data["jobs"][:1]:  # the job's cases, from the log collect brought home
            cases = lava_lab.cases((fleet / j["log"]).read_text(errors="replace"))
            assert all(cases.get(c, (None,))[0] == "pass" for c in ("atsdbench-install", "atsdbench-run",
                                                                     "atsdbench-compare")), cases
            assert {c for c in cases if c.startswith("rate-")} == {"rate-64K", "rate-1M"}, cases
            assert all(cases[c][0] == "pass" and float(cases[c][1]) > 0 for c in ("rate-64K", "rate-1M"))
            assert {"speedup-64K", "speedup-1M"} <= set(cases), cases
        from atsdbench.data import fleet as fleets

        boards = fleets.by_board(str(fleet))
        assert {b: sorted(s) for b, s in boards.items()} == {"qemu01": ["old"]}
        [kept] = boards["qemu01"]["old"]
        assert cli_process("show", kept, env=env).returncode == 0
        again = cli_process("lab", "collect", fleet, env=env)  # idempotent: nothing new, nothing rewritten
        assert again.returncode == 0 and json.loads((fleet / "fleet.json").read_text()) == data
        print(f"lab up in {up - started:.0f} s, the fleet in {time.monotonic() - up:.0f} s")
    finally:
        lab.stop()
    assert not lab.leftovers()
    assert _closed(lab.port) and _closed(lab.pg_port)
    assert not (lava_lab.DISPATCHER_D / lab.worker).exists() and not lab.folder.exists()
    assert not list(pathlib.Path(lava_lab.DISPATCHER_TMP).glob(f"{lab.worker}-*"))
