"""run --workload tlb_flush1|2|3: will-it-scale's loops, counted and checked; the read-back
double failing loudly (exit 3); the plan as the result records it.  No timing is asserted: the
loops' counts are exact, their rates are whatever this machine gave."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from atsdbench.data import results
from conftest import small_tmpfs

PAGE = os.sysconf("SC_PAGE_SIZE")


def _run(cli, tmp_path, *args, name="w.json"):
    out = tmp_path / name
    p = cli("run", "--rounds", "1", "--reps", "2", "--warmup", "0", "--warmup-rounds", "0", *args, "-o", str(out))
    return p, out


@pytest.mark.live
@pytest.mark.parametrize("tasks", ["threads", "processes"])
def test_tlb_flush2_counts_every_loop_of_every_task(cli, tmp_path, tasks):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no second task")
    p, out = _run(cli, tmp_path, "--workload", "tlb_flush2", "--size", "2M", "--threads", "1,2", "--tasks", tasks)
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    c = data["config"]
    assert data["schema_version"] == results.SCHEMA_VERSION >= 4 and data["complete"]
    assert c["workload"] == "tlb_flush2" and c["tasks"] == tasks and c["strides"] == [PAGE]
    assert c["axes"] == {"threads": [1, 2]}
    # the measuring processes were executed with ADDR_NO_RANDOMIZE (runner._start_worker)
    assert c["aslr"] == "off"
    samples = data["samples"]
    assert len(samples) == 4
    for s in samples:
        loops = (2 << 20) // PAGE * s["threads"]  # every task goes through --size of pages a pass
        assert s["loops"] == s["calls"] == loops, s
        assert s["loops_per_s"] == pytest.approx(loops * 1e9 / s["ns"])
        assert s["gbps"] == pytest.approx(loops * PAGE / s["ns"])  # the pages zapped, bytes per ns
        assert s["stride_bytes"] == PAGE and s["thread_ns_max"] == s["ns"]
    assert "tlb_flush2 loops (will-it-scale) over 2M a task" in p.stdout
    back = results.load(str(out))
    assert back.config["workload"] == "tlb_flush2" and len(back.measured) == 4
    # --verify is on by default for a workload (will-it-scale asserts its read-back): the loop's call
    # (madvise, a page a call) checked from every other CPU on a region of 1M a task, each round
    assert c["verify"] is True and "STALE" not in p.stderr
    v = data["verify"]
    assert sorted((r["threads"], r["op"], r["stride_bytes"], r["calls"]) for r in v) == [
        (t, "madvise", PAGE, (1 << 20) // PAGE * t) for t in (1, 2)]  # the cells in their interleaved order
    assert all(r["stale"] == 0 and r["checks"] > 0 for r in v)
    # the table in will-it-scale's loops/s, the verify passes said to be the workload's default
    assert "Median loops/s" in p.stdout and "Median GB/s" not in p.stdout
    assert "on by default for --workload" in " ".join(p.stdout.split())
    rate = {}
    for args in ([], ["--gbps"]):
        shown = cli("show", out, "--unit", "pass", *args).stdout.splitlines()
        head = next(i for i, line in enumerate(shown) if line.startswith("Stride"))
        rate[bool(args)] = float(shown[head + 2].split()[4])  # the first cell's median
    assert rate[False] == pytest.approx(rate[True] * 1e9 / PAGE, rel=0.01)


@pytest.mark.live
def test_a_workload_runs_unchecked_with_no_verify(cli, tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: verify is off anyway")
    p, out = _run(cli, tmp_path, "--workload", "tlb_flush2", "--size", "1M", "--no-verify")
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert data["config"]["verify"] is False and not data.get("verify")


@pytest.mark.live
def test_file_workloads_read_back_as_their_source_says(cli, tmp_path):
    """tlb_flush1 (private file: 0 after DONTNEED) and tlb_flush3 (shared file: 1) as an axis."""
    p, out = _run(cli, tmp_path, "--workload", "tlb_flush1,tlb_flush3", "--size", "128M")
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert data["config"]["axes"] == {"workload": ["tlb_flush1", "tlb_flush3"]}
    assert sorted({s["workload"] for s in data["samples"]}) == ["tlb_flush1", "tlb_flush3"]
    assert all(s["loops"] == (128 << 20) // PAGE for s in data["samples"])


@pytest.fixture
def skip_madvise(monkeypatch):
    """The C test double (atsd_test_skip_madvise), in this process: the run measures here instead
    of in a worker process (which would not inherit it); always turned off again."""
    from atsdbench.measure import core, runner

    monkeypatch.setattr(runner, "FreshProcess", runner.InProcess)
    yield core.lib.atsd_test_skip_madvise
    core.lib.atsd_test_skip_madvise(0)


@pytest.mark.live
@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_failed_read_back_is_exit_3_with_the_finished_passes_kept(cli, tmp_path, skip_madvise, threads):
    if int(threads) > len(os.sched_getaffinity(0)):
        pytest.skip("one CPU")
    skip_madvise(3)  # the third pass from now on leaves out its madvise
    p, out = _run(cli, tmp_path, "--workload", "tlb_flush2", "--size", "1M", "--reps", "5", "--threads", threads)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 3 and len(lines) == 1, p.stderr
    assert lines[0].startswith("atsdbench: tlb_flush2: read-back check failed after ") and "loops" in lines[0]
    assert len(lines[0]) <= 100
    r = results.load(str(out))
    assert not r.complete and len(r.samples) == 2  # the two passes before it, never a third rate


@pytest.mark.live
def test_a_read_back_failing_at_once_writes_nothing_and_says_one_line(cli, tmp_path, skip_madvise):
    skip_madvise(1)
    p, out = _run(cli, tmp_path, "--workload", "tlb_flush1", "--size", "128M")
    assert p.returncode == 3 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "tlb_flush1: read-back check failed after 0 loops" in p.stderr and not out.exists()


@pytest.mark.live
def test_the_double_is_off_by_default_and_the_loops_pass(cli, tmp_path, monkeypatch):
    """Without the double the same in-process run passes: the check is not what fails it."""
    from atsdbench.measure import runner

    monkeypatch.setattr(runner, "FreshProcess", runner.InProcess)
    p, out = _run(cli, tmp_path, "--workload", "tlb_flush2", "--size", "1M")
    assert p.returncode == 0, p.stderr


def test_gpu_is_refused_with_a_workload(cli, tmp_path):
    p = cli("run", "--workload", "tlb_flush2", "--size", "1M", "--gpu", "-o", str(tmp_path / "x.json"))
    assert p.returncode == 2 and p.stderr.strip() == ("atsdbench: --workload runs will-it-scale's loop as it is "
                                                      "(one page a loop): it takes no --gpu")
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("option", ["--breakdown", "--profile"])
def test_breakdown_and_profile_are_refused_with_a_workload(cli, tmp_path, option):
    """Their passes are of the cell's --op: a workload cell's were mprotect passes of one page a call,
    shown under the workload's name."""
    p = cli("run", "--workload", "tlb_flush2", "--size", "1M", "--rounds", "1", "--reps", "1", option, "-o",
            str(tmp_path / "x.json"))
    assert p.returncode == 2 and p.stderr.strip() == (f"atsdbench: {option} adds passes of an --op; --workload's "
                                                      "loop has none: give one of them")
    assert not os.listdir(tmp_path)


def test_plan_cells_of_workloads_match_the_c_numbering():
    from atsdbench.measure import core
    from atsdbench.measure.plan import make_plan

    p = make_plan(workload="tlb_flush2,tlb_flush3", threads="1,2", size="128M", affinity={0, 1, 2})
    assert p.workload == "tlb_flush2" and p.axes == {"workload": ["tlb_flush2", "tlb_flush3"], "threads": [1, 2]}
    assert p.strides == [PAGE] and p.config()["workload"] == "tlb_flush2"
    c = p.to_c()
    cells = []
    for i in range(core.lib.atsd_plan_cells(c)):
        out = core.ffi.new("struct atsd_cell *")
        core.lib.atsd_plan_cell(c, i, out)
        cells.append((core.workload_name(out.workload), out.threads))
    assert cells == [(x["workload"], x["threads"]) for x in p.cells]
    # no workload: every cell's is -1, and the plan records None
    q = make_plan(size="16M", strides="64K")
    assert q.workload is None and all(x["workload"] is None for x in q.cells)
    assert core.cells(q.to_c())[0][4] == 0  # op mprotect, unchanged


def test_processes_at_one_task_is_will_it_scales_t_1():
    from atsdbench.measure.plan import make_plan

    assert make_plan(workload="tlb_flush2", tasks="processes", size="1M").tasks == "processes"


def test_schema_round_trip_of_a_workload_file(tmp_path):
    config = {"size": 1 << 20, "strides": [PAGE], "rounds": 1, "reps": 1, "pages": "base", "op": "mprotect",
              "workload": "tlb_flush2", "aslr": "off", "threads": 2, "tasks": "processes"}
    loops = 2 * (1 << 20) // PAGE
    sample = {"stride_bytes": PAGE, "round": 0, "rep": 0, "warmup": False, "ns": 10_000_000, "seconds": 0.01,
              "calls": loops, "loops": loops, "loops_per_s": loops * 1e9 / 1e7, "gbps": loops * PAGE / 1e7,
              "us_per_call": 1e4 / (loops / 2), "threads": 2}
    path = tmp_path / "w.json"
    results.save(results.Result({"hostname": "h", "page_size": PAGE}, config, [sample]), str(path))
    back = results.load(str(path))
    assert back.config["workload"] == "tlb_flush2" and back.config["aslr"] == "off"
    assert back.samples["loops"].tolist() == [loops]
    assert back.samples["loops_per_s"].tolist() == [pytest.approx(loops * 100)]
    data = json.loads(path.read_text())
    data["samples"][0]["loops"] = 0  # a finished pass ran a loop at least
    path.write_text(json.dumps(data))
    from atsdbench.errors import UsageError

    with pytest.raises(UsageError, match="loops"):
        results.load(str(path))


def test_guest_runs_take_a_workload():
    """guest hands run options to the guest's atsd through the one option table."""
    from atsdbench.guest import options
    from atsdbench.measure import core

    checked = options.check_run_options(["--workload", "tlb_flush2", "--threads", "2", "--size=1M"], core.options())
    assert options.atsd_words(checked) == ["--workload=tlb_flush2", "--threads=2", "--size=1M"]


def test_a_workload_file_is_named_by_its_workload_where_an_op_would_be():
    """compare's title and its different-calls warning read op_of: a workload file's is its loop."""
    from atsdbench.data.cells import op_of

    assert op_of({"op": "mprotect", "workload": "tlb_flush2"}) == "tlb_flush2"
    assert op_of({"op": "madvise"}) == "madvise" and op_of({}) == "mprotect"


@pytest.mark.live
def test_atsd_says_a_failed_read_back_in_the_same_words_and_exits_3(tmp_path):
    """A test build of atsd (-DATSD_TEST_DOUBLES: the double behind an environment variable) fails
    its third pass; the atsd a user builds has no such switch."""
    import shutil
    import subprocess

    if not shutil.which("make") or not shutil.which("cc"):
        pytest.skip("make or cc not installed")
    exe = tmp_path / "atsd-test"
    subprocess.run(["make", "-s", "-C", os.path.join(os.path.dirname(__file__), "..", "..", "csrc"), f"OUT={exe}",
                    "CFLAGS=-O2 -DATSD_TEST_DOUBLES"], check=True)
    out = tmp_path / "w.tsv"
    p = subprocess.run([str(exe), "--workload", "tlb_flush2", "--size", "1M", "--rounds", "1", "--reps", "5",
                        "--warmup", "0", "--warmup-rounds", "0", "-o", str(out)], capture_output=True, text=True,
                       env={**os.environ, "ATSD_TEST_SKIP_MADVISE": "3"}, timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 3 and len(lines) == 1, p.stderr
    loops = int(lines[0].split("after ")[1].split()[0])
    assert lines[0] == f"atsd: tlb_flush2: read-back check failed after {loops} loops (a page read wrong after DONTNEED)"
    text = out.read_text()
    assert text.count("\nsample\t") == 2 and "end\tcomplete=0" in text
    # the same build without the variable runs clean: the check is not what fails it
    q = subprocess.run([str(exe), "--workload", "tlb_flush2", "--size", "1M", "--rounds", "1", "--reps", "2"],
                       capture_output=True, text=True, timeout=120)
    assert q.returncode == 0, q.stderr


@pytest.mark.live
def test_atsd_says_a_stale_read_when_a_read_back_ends_the_run(tmp_path):
    """A test build of atsd: round 0's verify passes are stale (the control: no call), round 1's pass
    fails its read-back.  Exit 3 with both lines: the stale one was lost (only the read-back said)."""
    import shutil
    import subprocess

    if not shutil.which("make") or not shutil.which("cc"):
        pytest.skip("make or cc not installed")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to check from")
    exe = tmp_path / "atsd-test"
    subprocess.run(["make", "-s", "-C", os.path.join(os.path.dirname(__file__), "..", "..", "csrc"), f"OUT={exe}",
                    "CFLAGS=-O2 -DATSD_TEST_DOUBLES"], check=True)
    out = tmp_path / "w.tsv"
    p = subprocess.run([str(exe), "--workload", "tlb_flush2", "--size", "1M", "--rounds", "2", "--reps", "1",
                        "--warmup", "0", "--warmup-rounds", "0", "--verify", "-o", str(out)],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "ATSD_TEST_SKIP_MADVISE": "2", "ATSD_TEST_VERIFY_SKIP_CALL": "1"})
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 3, p.stderr
    assert any(line.startswith("atsd: tlb_flush2: read-back check failed after ") for line in lines), p.stderr
    assert any(line.startswith("STALE TRANSLATION: ") and "(madvise, " in line for line in lines), p.stderr
    text = out.read_text()
    assert text.count("\nsample\t") == 1 and "\nverify\t" in text and "end\tcomplete=0" in text


@pytest.fixture
def small_tmpdir(tmp_path):
    """A 1 MiB tmpfs for TMPDIR (root and mount(8)); skipped where it cannot be mounted."""
    with small_tmpfs(tmp_path / "tmp", "1m") as mnt:
        yield mnt


def _in_both_front_ends(cli_process, atsd, tmp_path, env, *args):
    run = cli_process("run", *args, "-o", tmp_path / "r.json", env=env)
    alone = subprocess.run([atsd, *args, "-o", str(tmp_path / "a.txt")], capture_output=True, text=True, env=env)
    return run, alone


@pytest.mark.live
@pytest.mark.parametrize("workload", ["tlb_flush1", "tlb_flush3"])
def test_a_file_workload_without_room_in_tmpdir_is_refused_naming_it(cli_process, atsd, tmp_path, small_tmpdir,
                                                                     workload):
    """Its 128M file a task in a 1M TMPDIR died of SIGBUS (a sparse file's hole touched): refused up front."""
    env = dict(os.environ, TMPDIR=str(small_tmpdir))
    for p in _in_both_front_ends(cli_process, atsd, tmp_path, env, "--workload", workload, "--size", "128M",
                                 "--rounds", "1"):
        assert p.returncode == 2, (p.returncode, p.stderr)
        assert f"--workload {workload} needs 128M in TMPDIR ({small_tmpdir}), a 128M file a task: it has" in p.stderr
        assert len(p.stderr.splitlines()) == 1 and "SIGBUS" not in p.stderr and "Bus error" not in p.stderr
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "a.txt").exists()


@pytest.mark.live
def test_a_missing_tmpdir_is_named(cli_process, atsd, tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path / "gone"))
    for p in _in_both_front_ends(cli_process, atsd, tmp_path, env, "--workload", "tlb_flush1", "--size", "128M"):
        assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
        assert f"makes its files in TMPDIR ({tmp_path / 'gone'}): No such file or directory" in p.stderr


@pytest.mark.live
def test_tlb_flush2_needs_no_tmpdir(cli, tmp_path, small_tmpdir, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "gone"))
    p, _ = _run(cli, tmp_path, "--workload", "tlb_flush2", "--size", "1M")
    assert p.returncode == 0, p.stderr


@pytest.mark.live
def test_a_helper_process_killed_mid_run_is_said_to_have_died(cli_process, tmp_path):
    """--tasks processes: a helper SIGKILLed from outside is a helper that died, not "No child processes"."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no second task")
    out = tmp_path / "k.json"
    proc = subprocess.Popen([sys.executable, "-m", "atsdbench", "run", "--workload", "tlb_flush2", "--size", "256M",
                             "--threads", "2", "--tasks", "processes", "--rounds", "6", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)

    def children(pid):
        try:
            return [int(k) for k in open(f"/proc/{pid}/task/{pid}/children").read().split()]
        except OSError:
            return []
    try:
        killed = False
        for _ in range(400):  # the round worker, then the helper it forks for the second task
            time.sleep(0.05)
            helpers = [h for w in children(proc.pid) for h in children(w)]
            if helpers:
                time.sleep(0.3)  # inside its loops
                try:
                    os.kill(helpers[0], signal.SIGKILL)
                    killed = True
                    break
                except ProcessLookupError:
                    continue
        assert killed, "no helper process seen"
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert "No child processes" not in stderr and "Traceback" not in stderr, stderr
    assert "a helper process died (killed from outside)" in stderr, (proc.returncode, stderr)
