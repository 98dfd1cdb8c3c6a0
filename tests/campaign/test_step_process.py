"""A real `atsdbench campaign step` process and its real `atsdbench run`, signalled from outside: a signal
to the step's pid alone stops it before it arranges a boot, and a SIGKILL of the step takes its run with
it (the run saves what it measured), so the next step in the same boot finds no orphan writing."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from atsdbench.data import campaign as store

import campaign_fakes as fakes

# long enough to be signalled mid-run (--spread paces its rounds over 6 s), small enough to be quick
OPTIONS = ["--size", "8M", "--strides", "64K", "--rounds", "12", "--reps", "1", "--spread", "6s"]


def _plan(tmp_path):
    """A plan whose first kernel is the one running here (its release and version string), by hand."""
    u = os.uname()
    image = fakes.bzimage(tmp_path / "vmlinuz-other", fakes.B_BANNER)
    d = str(tmp_path / "c")
    fakes.plan(d, [("here", fakes.A_BANNER, image), ("other", fakes.B_BANNER, image)], boots=2, options=OPTIONS)
    plan = json.load(open(os.path.join(d, "campaign.json")))
    plan["kernels"][0].update(release=u.release, version=u.version)
    with open(os.path.join(d, "campaign.json"), "w") as f:
        json.dump(plan, f)
    return d


def _step(d):
    # from the campaign's folder: a checkout's source tree (the working directory under python -m) has no core
    return subprocess.Popen([sys.executable, "-m", "atsdbench", "campaign", "step", d], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=d)


def _wait_for(what, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if what():
            return True
        time.sleep(0.05)
    return False


def _started(d):
    return lambda: any(e["event"] == "start" for e in store.load(d).events)


def _runs_writing(path):
    """Processes whose command line names path (an `atsdbench run -o path` still alive)."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if path.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.mark.live
@pytest.mark.parametrize("signals", [(signal.SIGINT, signal.SIGTERM), (signal.SIGTERM,)])
def test_a_signal_to_the_step_stops_it_and_arranges_nothing(tmp_path, signals):
    d = _plan(tmp_path)
    p = _step(d)
    assert _wait_for(_started(d)), p.communicate()
    time.sleep(0.5)
    for s in signals:
        p.send_signal(s)  # the step's pid alone (its own session: no terminal's process group)
        time.sleep(0.2)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    c = store.load(d)
    kinds = [e["event"] for e in c.events]
    assert "arranged" not in kinds and "next:" not in out, (kinds, out)
    # the run was told too: it stopped early and saved its passes, and the slot says why
    assert kinds in (["start", "unfinished"], ["start", "done", "stopped"]), kinds
    if kinds[1] == "unfinished":  # a run stopped before its first pass writes no file (nothing measured)
        assert c.events[1]["why"] == "interrupted"
        if c.events[1]["file"]:
            assert json.load(open(os.path.join(d, c.events[1]["file"])))["complete"] is False
    assert "Traceback" not in err


@pytest.mark.live
def test_sigkill_of_the_step_takes_its_run_and_the_next_step_redoes_the_slot(tmp_path):
    d = _plan(tmp_path)
    p = _step(d)
    assert _wait_for(_started(d)), p.communicate()
    time.sleep(0.5)
    start = next(e for e in store.load(d).events if e["event"] == "start")
    result = os.path.join(d, start["file"])
    assert _runs_writing(result)
    p.kill()
    p.communicate(timeout=30)
    assert _wait_for(lambda: not _runs_writing(result), 30), "the run outlived its step"
    kept = json.load(open(result))  # the run had SIGTERM: its passes saved, marked unfinished
    assert kept["complete"] is False
    again = _step(d)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, (out, err)
    c = store.load(d)
    assert [e["event"] for e in c.events] == ["start", "unfinished", "start", "done", "arranged"]
    assert c.events[1]["file"] == start["file"] and c.done[0]["file"].endswith("-2.json")
    assert "being written by another" not in err and "not in the campaign's journal" not in err
