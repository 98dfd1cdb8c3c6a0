"""A fleet through a real LAVA server (Debian 12's lava-server 2023.01): a PostgreSQL cluster and a
lava-server of the test's own on free local ports (tests/support/lava_lab.py), its scheduler, a worker with
two qemu devices (two boards, each pinned by its tag), `lab submit` of two sides x two boards, one job
canceled, `lab collect`, and compare of what came home.  The rates are emulated (TCG): the test checks the
design, the files and the boards, never a verdict.  It leaves no process, cluster or port behind.  Where
lava-server, lava-dispatcher, postgresql, mmdebstrap or qemu is missing (or this is not root), it skips."""
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
RUN_OPTIONS = ["--strides", "64K,1M", "--rounds", "2", "--reps", "2"]
COLLECT_TIMEOUT = 3600

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _compare_reads_fleets():
    """Does this checkout's compare take a fleet directory (boards as blocks)?"""
    return any("is_fleet" in (ROOT / "atsdbench" / p).read_text()
               for p in ("commands.py", "data/sides.py", "data/campaign.py") if (ROOT / "atsdbench" / p).exists())


def _closed(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_a_fleet_through_a_lava_server(tmp_path, cli_process):
    why = lava_lab.missing()
    if why:
        pytest.skip(why)
    lava_rootfs.need()
    started = time.monotonic()
    system = lava_rootfs.system(tmp_path)
    image = lava_rootfs.image(system, "fleet")
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
                        "--set", "BASELINE=", "--", *RUN_OPTIONS, env=env)
        assert p.returncode == 0, p.stderr
        jobs = json.loads((fleet / "fleet.json").read_text())["jobs"]
        assert [(j["side"], j["requested"]) for j in jobs] == [("old", "qemu01"), ("old", "qemu02"),
                                                               ("new", "qemu01"), ("new", "qemu02")]
        # the last job waits behind qemu02's first: canceled, it must be named and nothing else lost
        from atsdbench.lab import server

        server.Server(server.Identity(lab.uri, "admin", lab.token)).call("scheduler.jobs.cancel",
                                                                          str(jobs[3]["id"]))
        # the jobs take minutes each under TCG (more on a busy machine): longer than cli_process waits
        p = subprocess.run([sys.executable, "-m", "atsdbench", "lab", "collect", str(fleet), "--interval", "10"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=COLLECT_TIMEOUT)
        assert p.returncode == 0, (p.stderr, lab.logs())
        data = json.loads((fleet / "fleet.json").read_text())
        states = [(j["side"], j["board"], j["state"]) for j in data["jobs"]]
        assert states[:3] == [("old", "qemu01", "Complete"), ("old", "qemu02", "Complete"),
                              ("new", "qemu01", "Complete")], (states, lab.logs())
        assert states[3][2] == "Canceled" and f"job {jobs[3]['id']} new on " in p.stdout
        assert all(len(j["results"]) == 1 for j in data["jobs"][:3]) and data["jobs"][3]["results"] == []
        from atsdbench.data import fleet as fleets

        boards = fleets.by_board(str(fleet))
        assert {b: sorted(s) for b, s in boards.items()} == {"qemu01": ["new", "old"], "qemu02": ["old"]}
        again = cli_process("lab", "collect", fleet, env=env)  # idempotent: nothing new, nothing rewritten
        assert again.returncode == 0 and json.loads((fleet / "fleet.json").read_text()) == data
        if _compare_reads_fleets():
            p = cli_process("compare", fleet, env=env)
        else:  # one board's two sides, as compare takes files
            p = cli_process("compare", *boards["qemu01"]["old"], *boards["qemu01"]["new"], env=env)
        assert p.returncode == 0, p.stderr
        print(f"lab up in {up - started:.0f} s, the fleet in {time.monotonic() - up:.0f} s")
    finally:
        lab.stop()
    assert not lab.leftovers()
    assert _closed(lab.port) and _closed(lab.pg_port)
    assert not (lava_lab.DISPATCHER_D / lab.worker).exists() and not lab.folder.exists()
    assert not list(pathlib.Path(lava_lab.DISPATCHER_TMP).glob(f"{lab.worker}-*"))
