"""`atsd --breakdown` (csrc/atsd_breakdown.c, the instance of csrc/atsd_instance.c) on this machine, and
`atsdbench import` cutting its traces into stages: a live run that adds up and leaves no instance, a
SIGINT or SIGTERM during the traced passes that leaves none either, and bad input that is one line,
exit 2, before anything is measured.  The tracefs is mounted in a mount namespace of the test's own
(this machine's mounts stay as they are).  The format's parsing is tests/data/test_atsd_output.py's."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from traced import SIGNAL_IN_TRACED_PASSES, in_namespace

needs_tracefs = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")


RUN = r"""
import json, os, subprocess, sys
atsd, out = sys.argv[1:3]
p = subprocess.run([atsd, "--size", "4M", "--strides", "64K,1M", "--rounds", "1", "--reps", "1", "--bystanders",
                    "0,1", "--breakdown", "-o", out], capture_output=True, text=True)
left = [n for n in os.listdir("/sys/kernel/tracing/instances") if n.startswith("atsdbench-")]
print(json.dumps({"code": p.returncode, "left": left, "stderr": p.stderr, "stdout": p.stdout}))
"""


@pytest.mark.live
@needs_tracefs
def test_a_live_atsd_breakdown_imports_and_adds_up(atsd, in_tracefs, tmp_path, cli):
    from atsdbench.analysis.breakdown import check_sum
    from atsdbench.data import atsd_output

    out = tmp_path / "b.txt"
    p = in_namespace(in_tracefs, RUN, atsd, str(out))
    if p.returncode and "{" not in p.stdout:
        pytest.skip(f"no tracefs with the syscall tracepoints here: {p.stderr.strip()[-200:]}")
    end = json.loads(p.stdout.strip().splitlines()[-1])
    assert end["code"] == 0 and end["left"] == [], end["stderr"]
    text = out.read_text()
    assert text.startswith("atsd-output 2\n") and "\tbreakdown=1\t" in text
    assert text.rstrip().endswith("end\tcomplete=1\tbreakdown_complete=1")
    assert "tracing_mark_write: atsdbench t0 " in text and "tracing_mark_write: atsdbench t1 " in text
    r = atsd_output.load(str(out))
    section = r.config["breakdown"]
    assert section["complete"] and section["calls_max"] == 2048 and section["clock"]
    assert [(q["cell"], q["stride_bytes"]) for q in section["passes"]] == [(0, 64 << 10), (0, 1 << 20),
                                                                          (1, 64 << 10), (1, 1 << 20)]
    for q in section["passes"]:
        assert q["lost"] == 0 and q["calls"] == (4 << 20) // q["stride_bytes"] and check_sum(q)
        assert q["untraced_us"] > 0 and q["flushes"] >= 1
    shown = cli("import", str(out), "-o", str(tmp_path / "b.json"))
    assert shown.returncode == 0 and "Where a call's time goes" in shown.stdout
    assert "bystanders=1" in shown.stdout  # the cells named as compare names them


@pytest.mark.live
@needs_tracefs
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_during_the_traced_passes_removes_the_instance(atsd, in_tracefs, tmp_path, sig):
    from atsdbench.data import atsd_output

    out = tmp_path / "b.txt"
    p = in_namespace(in_tracefs, SIGNAL_IN_TRACED_PASSES, str(out), sig, atsd)
    if p.returncode and not p.stdout:
        pytest.skip(f"no tracefs with the syscall tracepoints here: {p.stderr.strip()[-200:]}")
    seen, code, left, stderr = p.stdout.strip().split(" ", 3)
    assert seen == "True", p.stdout  # the signal came while the passes' instance was there
    assert code == "130" and left == "False", p.stdout
    assert "interrupted; wrote the finished samples" in stderr
    text = out.read_text()  # every timed pass kept (complete), the breakdown as far as it got
    assert "\tcomplete=1\tbreakdown_complete=0" in text
    r = atsd_output.load(str(out))
    assert r.complete and r.config["breakdown"]["complete"] is False


@pytest.mark.live
@pytest.mark.parametrize("args,message", [
    (["--breakdown"], "atsd: --breakdown needs -o FILE"),
    (["--breakdown=1", "-o", "x"], "--breakdown"),
])
def test_bad_breakdown_options_exit_2_before_measuring(atsd, tmp_path, args, message):
    p = subprocess.run([atsd, "--size", "4M", "--strides", "64K", "--rounds", "1", "--reps", "1", *args],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and message in p.stderr and p.stdout.count("GB/s") == 0
    assert not os.path.exists(tmp_path / "x")


@pytest.mark.live
@pytest.mark.skipif(os.geteuid() != 0, reason="drops root to show the refusal of a user")
def test_not_root_is_one_line_and_exit_2(atsd, tmp_path):
    folder = tempfile.mkdtemp(prefix="atsd-user-")
    try:
        os.chmod(folder, 0o777)
        mine = os.path.join(folder, "atsd")
        shutil.copy(atsd, mine)
        os.chmod(mine, 0o755)
        p = subprocess.run([mine, "--size", "4M", "--strides", "64K", "--rounds", "1", "--reps", "1", "--breakdown",
                            "-o", os.path.join(folder, "o.txt")], capture_output=True, text=True, cwd=folder,
                           preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
        assert p.returncode == 2 and p.stdout == "", p.stderr
        assert p.stderr == "atsd: --breakdown: tracefs needs root for syscalls:sys_enter_mprotect (run as root)\n"
        assert not os.path.exists(os.path.join(folder, "o.txt"))
    finally:
        shutil.rmtree(folder)


REUSED = r"""
import json, os, subprocess, sys
out, argv = sys.argv[1], sys.argv[2:]
# the instance a crashed process of this very pid would have left: mkdir, then exec into the run
p = subprocess.run(["sh", "-c", 'mkdir /sys/kernel/tracing/instances/atsdbench-$$ && exec "$@"', "sh", *argv,
                    "--size", "4M", "--strides", "64K", "--rounds", "1", "--reps", "1", "--breakdown", "-o", out],
                   capture_output=True, text=True, cwd=os.path.dirname(out))
left = [n for n in os.listdir("/sys/kernel/tracing/instances") if n.startswith("atsdbench-")]
print(json.dumps({"code": p.returncode, "left": left, "stderr": p.stderr}))
"""


@pytest.mark.live
@needs_tracefs
@pytest.mark.parametrize("front", ["atsd", "run"])
def test_a_stale_instance_of_a_reused_pid_is_removed_not_a_refusal(atsd, in_tracefs, tmp_path, front):
    argv = [atsd] if front == "atsd" else [sys.executable, "-m", "atsdbench", "run"]
    out = tmp_path / ("b.txt" if front == "atsd" else "b.json")
    p = in_namespace(in_tracefs, REUSED, str(out), *argv)
    if p.returncode != 0 or not p.stdout.strip():
        pytest.skip(f"no tracefs with syscall events here: {p.stderr.strip()[-200:]}")
    r = json.loads(p.stdout)
    assert r["code"] == 0 and "File exists" not in r["stderr"], r["stderr"]
    assert r["left"] == [] and out.exists()
