"""LAVA's own dispatcher (Debian's lava-dispatcher, `lava-run`) runs lava/jobs/qemu-amd64.yaml on the
device of lava/devices/qemu-amd64.yaml: Debian 12's kernel boots a Debian 12 rootfs (scripts/lava-rootfs,
cached) under qemu TCG, the definition lava/atsdbench.yaml comes from this checkout by git and installs
atsdbench with its own `venv` mode from the wheel under test.  Two jobs: the first's result file is read
back from its log (import --lava-log) and is the second's BASELINE.  Rates are emulated: only the cases
are checked.  Where lava-run, mmdebstrap or qemu is missing (or this is not root), it skips, saying why."""
import json
import os
import pathlib
import re
import subprocess
import time

import pytest

import lava_rootfs

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
LAB = ROOT / "lava"
RUN_OPTIONS = "--strides 64K,1M --rounds 2 --reps 2"

pytestmark = [pytest.mark.live, pytest.mark.slow]


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    """The cached rootfs, kernel and initrd, and the rootfs tree with the wheel under test in it."""
    lava_rootfs.need()
    if os.geteuid() != 0:
        pytest.skip("needs root (mmdebstrap, the rootfs image)")
    return lava_rootfs.system(tmp_path_factory.mktemp("lab"))


def _image(system, name, extra=None):
    return lava_rootfs.image(system, name, extra)


def _job(system, name, image, baseline=""):
    revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    text = (LAB / "jobs" / "qemu-amd64.yaml").read_text()
    for key, value in {"{NAME}": name, "{KERNEL}": (system["cache"] / "vmlinuz").as_uri(),
                       "{INITRD}": (system["cache"] / "initrd.img").as_uri(), "{ROOTFS}": image.as_uri(),
                       "{REPOSITORY}": str(ROOT), "{REVISION}": revision, "{INSTALL}": "venv",
                       "{SOURCE}": system["wheel"], "{RUN_OPTIONS}": RUN_OPTIONS, "{BASELINE}": baseline}.items():
        text = text.replace(key, value)
    job = system["work"] / f"{name}.yaml"
    job.write_text(text)
    out = system["work"] / f"{name}-out"
    # lava-run puts its overlay on a disk of its own through libguestfs (tests/support/lava_rootfs.py)
    env = dict(os.environ, **lava_rootfs.guestfs_env(system))
    started = time.monotonic()
    p = subprocess.run(["lava-run", "--device", str(LAB / "devices" / "qemu-amd64.yaml"), "--job-id",
                        str(abs(hash(name)) % 10000), "--output-dir", str(out), str(job)], capture_output=True,
                       text=True, env=env, timeout=1800)
    took = time.monotonic() - started
    return p, p.stdout + p.stderr, took  # lava-run's log (on stderr): one {"dt", "lvl", "msg"} a line


def _cases(log):
    """{case: (result, measurement)} of the job's atsdbench test cases (lava's results in its log)."""
    out = {}
    for line in log.splitlines():
        if '"lvl": "results"' not in line:
            continue
        line = re.sub(r'(:\s*)! (")', r"\1\2", line[2:] if line.startswith("- ") else line)  # YAML's `! "965"`
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        msg = entry.get("msg") or {}
        if isinstance(msg, dict) and msg.get("definition") == "0_atsdbench":
            out[msg.get("case")] = (msg.get("result"), msg.get("measurement"))
    return out


def test_lava_runs_the_definition_and_a_second_job_compares_against_the_first(system, cli, tmp_path):
    p, log, took = _job(system, "first", _image(system, "first"))
    cases = _cases(log)
    assert cases.get("atsdbench-install", (None,))[0] == "pass", (p.stdout[-2000:], p.stderr[-2000:])
    assert cases["atsdbench-run"][0] == "pass"
    assert {c for c in cases if c.startswith("rate-")} == {"rate-64K", "rate-1M"}
    assert all(cases[c][0] == "pass" and float(cases[c][1]) > 0 for c in ("rate-64K", "rate-1M"))
    (tmp_path / "first.yaml").write_text(log)
    r = cli("import", "--lava-log", tmp_path / "first.yaml", "-o", tmp_path / "kept")
    assert r.returncode == 0, r.stderr
    [kept] = list((tmp_path / "kept").iterdir())
    print(f"first job: {took:.0f} s")
    p, log, took = _job(system, "second", _image(system, "second", {"/opt/baseline.json": kept.read_bytes()}),
                        baseline="/opt/baseline.json")
    cases = _cases(log)
    assert cases.get("atsdbench-compare", (None,))[0] == "pass", (p.stdout[-2000:], p.stderr[-2000:])
    assert {"speedup-64K", "speedup-1M"} <= set(cases)
    print(f"second job: {took:.0f} s")
