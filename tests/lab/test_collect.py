"""lab collect and lab status against a fake LAVA server on 127.0.0.1: every ended job's log through
the REST API, its results under results/BOARD/SIDE/ by the board that ran it, each job's end and the
server's reason; resumable, idempotent, and a restart, a damaged result, Ctrl-C each one line."""
import json
import os
import signal

import pytest

from atsdbench.data import fleet as fleets
from atsdbench.errors import UsageError
from atsdbench.lab import collect, server as servers
from fake_lava import TOKEN, lava, log_of, result_block  # noqa: F401  (lava: the fixture)

TEMPLATE = "device_type: qemu\njob_name: {NAME}\nvisibility: public\nurl: {KERNEL}\n"


@pytest.fixture
def submitted(cli, lava, tmp_path):
    """A fleet of 4 jobs (old, new on qemu01 and qemu02) on the fake server."""
    (tmp_path / "job.yaml").write_text(TEMPLATE)
    fleet = tmp_path / "fleet"
    p = cli("lab", "submit", fleet, "--kernel", "old=http://k/old", "--kernel", "new=http://k/new", "--device-type",
            "qemu", "--template", tmp_path / "job.yaml", "--device", "qemu01", "--device", "qemu02",
            env=lava.env(tmp_path))
    assert p.returncode == 0, p.stderr
    return fleet


def _log(fixtures, *names, damage=None):
    """A job's log with a result per name: "a" is before.json's bytes, any other name a run of its own (its
    start moved), since the same bytes twice are one run, counted once."""
    raw = (fixtures / "before.json").read_bytes()
    lines = ["<LAVA_SIGNAL_STARTRUN 0_atsdbench uuid>"]
    for name in names:
        start = 1500000000 + (0 if name == "a" else sum(map(ord, name)))
        block = result_block(name, raw.replace(b'"started": 1500000000.0', f'"started": {start}.0'.encode()))
        if name == damage:
            block[2] = block[2][:10] + ("A" if block[2][10] != "A" else "B") + block[2][11:]
        lines += block
    return log_of(lines)


def _server(lava):
    return servers.Server(servers.Identity(lava.uri, "admin", TOKEN))


def _manifest(fleet):
    return json.loads((fleet / "fleet.json").read_text())


def test_results_go_by_the_board_that_ran_each_job_and_its_side(cli, lava, tmp_path, submitted, fixtures):
    jobs = _manifest(submitted)["jobs"]
    # the scheduler put the jobs asked for qemu01 on qemu02 and back: actual_device decides
    for job in jobs:
        ran = "qemu02" if job["requested"] == "qemu01" else "qemu01"
        lava.finish(job["id"], device=ran, log=_log(fixtures, f"atsdbench-{job['side']}"))
    p = cli("lab", "collect", submitted, "--interval", "1", env=lava.env(tmp_path))
    assert p.returncode == 0, p.stderr
    data = _manifest(submitted)
    assert all(j["state"] == "Complete" and len(j["results"]) == 1 for j in data["jobs"])
    boards = fleets.by_board(str(submitted))
    assert sorted(boards) == ["qemu01", "qemu02"] and all(sorted(b) == ["new", "old"] for b in boards.values())
    for job in data["jobs"]:
        assert job["results"][0] == f"results/{job['board']}/{job['side']}/{job['id']}-atsdbench-{job['side']}.json"
        assert json.loads((submitted / job["results"][0]).read_text())["config"]["label"] == "Before"
        assert (submitted / job["log"]).read_bytes() == lava.jobs[job["id"]]["log"]
    assert "4 jobs (4 Complete), 4 result files" in p.stdout
    assert all(ok for _, ok in lava.calls) and TOKEN not in p.stdout + p.stderr
    for root, _, names in os.walk(submitted):
        assert not any(TOKEN.encode() in open(os.path.join(root, n), "rb").read() for n in names)


def test_an_offline_board_a_canceled_job_and_a_damaged_result_are_named(cli, lava, tmp_path, submitted, fixtures):
    lava.finish(1, log=_log(fixtures, "good", "bad", damage="bad"))
    lava.finish(2, health="Incomplete", device="qemu02", log=log_of(["boot"]),
                comment="qemu02 went offline: device health Bad")
    lava.finish(3, health="Canceled", device=None, log=None, comment="Canceled by admin")
    lava.finish(4, device="qemu02", log=_log(fixtures, "r"))
    p = cli("lab", "collect", submitted, "--interval", "1", env=lava.env(tmp_path))
    assert p.returncode == 0, p.stderr
    jobs = {j["id"]: j for j in _manifest(submitted)["jobs"]}
    assert [os.path.basename(r) for r in jobs[1]["results"]] == ["1-good.json"]
    assert "result bad in the log is left out: damaged" in " ".join(jobs[1]["problems"])
    assert "job 1: result bad in the log is left out: damaged (" in p.stderr
    assert jobs[2]["state"] == "Incomplete" and jobs[2]["reason"] == "qemu02 went offline: device health Bad"
    assert jobs[3]["state"] == "Canceled" and jobs[3]["board"] is None and jobs[3]["results"] == []
    assert "job 2 old on qemu02: Incomplete (qemu02 went offline: device health Bad), 0 results" in p.stdout
    assert "job 3 new on qemu01: Canceled (Canceled by admin), 0 results" in p.stdout
    assert len(jobs[4]["results"]) == 1


def test_collect_resumes_and_a_second_one_fetches_nothing_and_overwrites_nothing(cli, lava, tmp_path, submitted,
                                                                                  fixtures):
    lava.finish(1, log=_log(fixtures, "a"))
    lava.run(2)
    p = cli("lab", "collect", submitted, "--no-wait", env=lava.env(tmp_path))
    assert p.returncode == 0 and "3 not ended yet: lab collect" in p.stdout
    assert [j["state"] for j in _manifest(submitted)["jobs"]] == ["Complete", "submitted", "submitted", "submitted"]
    first = submitted / _manifest(submitted)["jobs"][0]["results"][0]
    stamp = os.stat(first).st_mtime_ns, os.stat(first).st_ino
    for job in (2, 3, 4):
        lava.finish(job, device="qemu02", log=_log(fixtures, "b"))
    assert cli("lab", "collect", submitted, env=lava.env(tmp_path)).returncode == 0
    before = _manifest(submitted)
    logs = sum(1 for path, _ in lava.calls if path.endswith("/logs/"))
    assert logs == 4 and (os.stat(first).st_mtime_ns, os.stat(first).st_ino) == stamp
    p = cli("lab", "collect", submitted, env=lava.env(tmp_path))
    assert p.returncode == 0 and _manifest(submitted) == before
    assert sum(1 for path, _ in lava.calls if path.endswith("/logs/")) == 4  # nothing fetched again


def test_a_collect_cut_off_after_writing_a_result_keeps_it_when_resumed(lava, tmp_path, submitted, fixtures):
    for job in (1, 2, 3, 4):
        lava.finish(job, log=_log(fixtures, "a"))
    data = _manifest(submitted)
    kept = submitted / "results" / "qemu01" / "old" / "1-a.json"
    kept.parent.mkdir(parents=True)
    raw = (fixtures / "before.json").read_bytes()  # the log's result, as an earlier collect wrote it
    kept.write_bytes(raw)  # its manifest write never happened
    assert collect.collect(str(submitted), _server(lava)) == 0
    assert kept.read_bytes() == raw and sorted(p.name for p in kept.parent.iterdir()) == ["1-a.json"]
    assert _manifest(submitted)["jobs"][0]["results"] == ["results/qemu01/old/1-a.json"]
    assert data["jobs"][0]["state"] == "submitted"


def test_a_server_restarted_mid_collect_is_waited_for(lava, tmp_path, submitted, fixtures):
    lava.finish(1, log=_log(fixtures, "a"))
    clock, naps = [0.0], []

    def sleep(seconds):  # the poll's wait: the server goes down for two polls, then comes back
        naps.append(seconds)
        clock[0] += seconds
        if len(naps) == 1:
            lava.stop()
        if len(naps) == 3:
            for job in (2, 3, 4):
                lava.finish(job, log=_log(fixtures, "b"))
            lava.start()
        assert len(naps) < 20

    err = open(tmp_path / "err", "w+")
    assert collect.collect(str(submitted), _server(lava), interval=5, patience=60, clock=lambda: clock[0],
                           sleep=sleep, err=err, out=open(os.devnull, "w")) == 0
    assert all(j["state"] == "Complete" for j in _manifest(submitted)["jobs"])
    err.seek(0)
    assert "does not answer (Connection refused): retrying for up to 60 s" in " ".join(err.read().split())


def test_a_server_down_past_patience_stops_collect_in_one_line_with_the_manifest_true(lava, tmp_path, submitted,
                                                                                       fixtures):
    lava.finish(1, log=_log(fixtures, "a"))
    clock = [0.0]

    def sleep(seconds):
        clock[0] += seconds
        lava.stop()
        assert clock[0] < 1000

    with pytest.raises(UsageError, match="does not answer .* for 60 s: .* holds every job collected so far; lab "
                       "collect .* again resumes"):
        collect.collect(str(submitted), _server(lava), interval=10, patience=60, clock=lambda: clock[0],
                        sleep=sleep, err=open(os.devnull, "w"), out=open(os.devnull, "w"))
    assert [j["state"] for j in _manifest(submitted)["jobs"]] == ["Complete", "submitted", "submitted", "submitted"]


def test_ctrl_c_during_collect_keeps_what_ended_and_collect_resumes(cli, lava, tmp_path, submitted, fixtures):
    lava.finish(1, log=_log(fixtures, "a"))
    original = lava._show

    def show(job):  # Ctrl-C while job 2 is asked about
        if int(job) == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return original(job)

    lava._show = show
    p = cli("lab", "collect", submitted, "--interval", "1", env=lava.env(tmp_path))
    assert p.returncode == 130 and "interrupted" in p.stderr
    assert [j["state"] for j in _manifest(submitted)["jobs"]][:1] == ["Complete"]
    lava._show = original
    for job, name in ((2, "b"), (3, "c"), (4, "d")):
        lava.finish(job, log=_log(fixtures, name))
    assert cli("lab", "collect", submitted, env=lava.env(tmp_path)).returncode == 0
    assert all(len(j["results"]) == 1 for j in _manifest(submitted)["jobs"]), _manifest(submitted)["jobs"]


def test_status_shows_each_job_and_the_server_s_state(cli, lava, tmp_path, submitted, fixtures):
    lava.finish(1, log=_log(fixtures, "a"))
    assert cli("lab", "collect", submitted, "--no-wait", env=lava.env(tmp_path)).returncode == 0
    lava.run(2, device="qemu02")
    p = cli("lab", "status", submitted, env=lava.env(tmp_path))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["job", "side", "requested", "board", "state", "results", "reason"]
    assert lines[1].split()[:6] == ["1", "old", "qemu01", "qemu01", "Complete", "1"]
    assert lines[2].split()[:5] == ["2", "old", "qemu02", "qemu02", "Running"]
    assert lines[3].split()[:5] == ["3", "new", "qemu01", "-", "Submitted"]
    assert all(len(line) <= 100 for line in lines)


def test_collect_of_no_fleet_is_one_line(cli, lava, tmp_path):
    p = cli("lab", "collect", tmp_path, env=lava.env(tmp_path))
    assert p.returncode == 2 and "not a fleet directory" in p.stderr and len(p.stderr.splitlines()) == 1


def test_a_job_without_a_failure_comment_gets_the_reason_lava_logged(cli, lava, tmp_path, submitted):
    # a job the dispatcher refused in validation: the server keeps no failure_comment, the log has it
    error = {"case": "job", "definition": "lava", "result": "fail",
             "error_msg": "Invalid job data: [\"Image file '/k/old' does not exist or is not readable\"]"}
    log = b'- {"dt": "2026-12-06T21:11:21", "lvl": "results", "msg": ' + json.dumps(error).encode() + b"}\n"
    for job in (1, 2, 3, 4):
        lava.finish(job, health="Incomplete", log=log)
    assert cli("lab", "collect", submitted, env=lava.env(tmp_path)).returncode == 0
    reasons = {j["reason"] for j in _manifest(submitted)["jobs"]}
    assert reasons == {"Invalid job data: [\"Image file '/k/old' does not exist or is not readable\"]"}


def test_status_with_a_wrong_token_is_one_line(cli, lava, tmp_path, submitted):
    p = cli("lab", "status", submitted, env=lava.env(tmp_path, token="wrong"))
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "refused admin's token (401" in p.stderr


def test_a_result_two_jobs_printed_is_one_observation(lava, tmp_path, submitted, fixtures):
    for job in (1, 2, 3, 4):
        lava.finish(job, log=_log(fixtures, "a" if job < 3 else f"r{job}"))
    assert collect.collect(str(submitted), _server(lava)) == 0
    jobs = _manifest(submitted)["jobs"]
    assert jobs[0]["results"] == ["results/qemu01/old/1-a.json"] and jobs[1]["results"] == []
    assert "is already in" in " ".join(jobs[1]["problems"])
    assert sorted(p.name for p in (submitted / "results" / "qemu01" / "old").iterdir()) == ["1-a.json"]
