"""Real, small runs on this machine (kept small: the suite runs on 2 cores)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import atsdbench

pytestmark = pytest.mark.live


def test_small_run_holds_every_round_rep_stride_once(small_run):
    r = atsdbench.load(str(small_run))
    s = r.samples
    assert r.complete and r.config["size"] == 64 << 20
    assert (s["seconds"] > 0).all() and (s["gbps"] > 0).all()
    assert (s["calls"] == (64 << 20) // s["stride_bytes"]).all()
    assert not s.duplicated(["round", "rep", "stride_bytes"]).any()
    # 1 warm-up round + 2 measured, 1 warm-up pass + 2 timed, 2 strides
    assert len(s) == 3 * 3 * 2
    assert set(s[s["warmup"]]["round"]) == {0, 1, 2} and len(r.measured) == 2 * 2 * 2
    for key in ("hostname", "arch", "kernel_release", "kernel_version", "cpu_model", "online_cpus", "page_size",
                "thp_enabled", "python", "atsdbench"):
        assert key in r.host


def test_cli_run_prints_table_and_writes_default_name(cli, tmp_path):
    p = cli("run", "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "1", "--seed", "3",
            "--latency", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "GB/s = 10^9 bytes/s" in p.stdout and "p99 us" in p.stdout and "64K" in p.stdout
    written = [f for f in os.listdir(tmp_path) if f.startswith("atsdbench-") and f.endswith(".json")]
    assert len(written) == 1 and f"wrote {written[0]}" in p.stdout
    data = json.loads((tmp_path / written[0]).read_text())
    assert data["config"]["seed"] == 3 and "lat_p99_us" in data["samples"][0]
    assert p.stderr == ""  # no progress bar when stderr is not a terminal


def test_processes_mode(tmp_path):
    r = atsdbench.run(size="16M", strides="1M", rounds=2, reps=1, warmup=0, warmup_rounds=0, processes=True)
    assert r.complete and len(r.samples) == 2 and set(r.samples["round"]) == {0, 1}


@pytest.mark.parametrize("args,message", [
    (["--strides", "6K"], "not a multiple of the page size"),
    (["--size", "1T"], "more than MemAvailable"),
    (["--rounds", "0"], "--rounds must be at least 1"),
    (["--bystanders", "512"], "other CPUs"),
    (["--cpu", "4095"], "not in this process's CPU affinity"),
    (["-o", "/nonexistent-dir/x.json"], "cannot write output"),
])
def test_cli_bad_input_is_one_line_exit_2(cli, tmp_path, args, message):
    p = cli("run", "--size", "16M", *args, cwd=tmp_path)
    assert p.returncode == 2
    assert message in p.stderr and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert os.listdir(tmp_path) == []


def test_ctrl_c_writes_finished_samples(tmp_path):
    out = tmp_path / "int.json"
    proc = subprocess.Popen([sys.executable, "-m", "atsdbench", "run", "--size", "64M", "--rounds", "2000",
                             "--reps", "4", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    data = json.loads(out.read_text())
    assert data["complete"] is False and len(data["samples"]) > 0
    assert "interrupted" in stdout


def test_mprotect_failure_is_an_oserror_with_errno_text():
    """A hole in the region makes mprotect fail with ENOMEM, as max_map_count exhaustion does."""
    import ctypes
    import errno

    from atsdbench.measure import core

    libc = ctypes.CDLL(None, use_errno=True)
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    with core.Region(4 << 20, 2 << 20) as region:
        hole = int(core.ffi.cast("uintptr_t", region._r.addr)) + (2 << 20)
        assert libc.munmap(hole, 1 << 20) == 0
        with pytest.raises(OSError) as info:
            region.timed_pass(1 << 20)
    assert info.value.errno == errno.ENOMEM
    assert "call 3 of stride" in str(info.value) and "Cannot allocate memory" in str(info.value)


def test_failure_mid_run_keeps_finished_samples(monkeypatch, tmp_path, cli):
    """A hole punched in the region before the fourth pass: its mprotect fails with ENOMEM, as
    max_map_count exhaustion makes it fail, and the three finished passes are kept."""
    import ctypes

    from atsdbench.measure import plan, runner, session

    libc = ctypes.CDLL(None, use_errno=True)
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    calls, real = [], session._Around.before

    def before(self, rec):  # run's hook just before each timed pass
        calls.append(1)
        if len(calls) == 4:
            assert libc.munmap(self.region.address + (2 << 20), 1 << 20) == 0
        return real(self, rec)

    monkeypatch.setattr(session._Around, "before", before)
    r = runner.run(plan.make_plan(size="16M", strides="64K,1M", rounds=2, reps=1))
    assert not r.complete and len(r.samples) == 3 and "Cannot allocate memory" in r.error
    assert "mprotect(PROT_NONE) failed at call " in r.error


def test_bystander_makes_shootdown_ipis():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no bystander possible")
    from atsdbench.measure import procfs

    if procfs.parse_interrupts(procfs.read("/proc/interrupts")) is None:
        pytest.skip("no TLB row in /proc/interrupts on this architecture")
    alone = atsdbench.run(size="16M", strides="64K", rounds=1, reps=6, warmup_rounds=0, trace="off")
    with_b = atsdbench.run(size="16M", strides="64K", rounds=2, reps=6, warmup_rounds=0, bystanders=1, trace="off")
    calls = 6 * (16 << 20) // (64 << 10)
    # Only passes the bystander ran through (its CPU time over the pass >= 90%, the run's own flag):
    # while another process holds its CPU the mm is not live there and flushes need no IPI.
    busy = with_b.measured[~with_b.measured["bystander_idle"].astype(bool)]
    if len(busy) < 2:
        pytest.skip(f"the bystander's CPU was busy with other work in {len(with_b.measured) - len(busy)} of "
                    f"{len(with_b.measured)} passes: nothing to test")
    # Some pass the bystander ran through took an IPI for at least half its calls.  Not the sum over
    # passes: on a machine loaded on both CPUs a pass can pass the 90% share and still take none (seen
    # in CI with a CPU burner beside it), while with no bystander no pass ever takes them.
    assert (busy["ipis"] >= 0.5 * busy["calls"]).any(), busy[["ipis", "calls", "bystander_share"]]
    assert alone.measured["ipis"].sum() <= 0.1 * calls


def test_unwritable_at_save_time_rescues_and_prints_the_table(monkeypatch, tmp_path, capsys):
    """The output was fine when checked, then failed (a full disk): the run is not lost."""
    from atsdbench import cli
    from atsdbench.data import files as outfile

    real = outfile.write_atomically

    def full(path, write, binary=False):
        if str(path).endswith("x.json"):
            raise OSError(28, "No space left on device")
        return real(path, write, binary)

    monkeypatch.setattr(outfile, "write_atomically", full)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rc = cli.main(["run", "--size", "16M", "--strides", "64K", "--rounds", "1", "--reps", "1", "-o",
                   str(tmp_path / "x.json")])
    out, err = capsys.readouterr()
    assert rc == 2 and "GB/s" in out and err.count("\n") == 1
    assert "No space left on device" in err and "saved to" in err
    rescued = [f for f in os.listdir(tmp_path) if f.startswith("atsdbench-rescued-")]
    assert len(rescued) == 1 and atsdbench.load(str(tmp_path / rescued[0])).complete


def test_sigterm_keeps_finished_samples(tmp_path):
    """SIGTERM once passes are done, as the progress bar (stderr on a terminal) counts them: exit 130,
    and the file holds at least those passes, timed ones among them, with complete false.  Waits on
    the progress and the exit, each bounded, never on a sleep."""
    import pty
    import re
    import select

    out = tmp_path / "t.json"
    need = 5 + 2  # the warm-up round's 5 passes (1 warm-up + 4 reps), round 1's warm-up pass, a timed one
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "atsdbench", "run", "--size", "64M", "--strides", "64K",
                          "--rounds", "2000", "--reps", "4", "-o", str(out)], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    progress, done = b"", 0

    def read_progress(until):
        nonlocal progress, done
        while not until() and time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    progress += os.read(master, 4096)
                except OSError:  # EIO: the run has closed its terminal
                    return
                counts = re.findall(rb"\] (\d+)/\d+ passes", progress)
                done = int(counts[-1]) if counts else 0

    try:
        deadline = time.monotonic() + 120
        read_progress(lambda: done >= need or p.poll() is not None)
        assert done >= need and p.poll() is None, \
            f"{done} passes in 120 s (exit {p.poll()}): {progress[-300:].decode(errors='replace')}"
        p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 120
        read_progress(lambda: p.poll() is not None)  # keeps the terminal drained until the run exits
        stdout = p.communicate(timeout=max(1.0, deadline - time.monotonic()))[0].decode()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
    assert p.returncode == 130, (stdout, progress[-300:])
    r = atsdbench.load(str(out))
    assert not r.complete and len(r.records) >= done and len(r.measured) > 0
    assert "interrupted" in stdout


def test_runs_are_sub_runs_in_fresh_processes_spaced_by_the_gap(tmp_path):
    import time as _time

    t0 = _time.monotonic()
    r = atsdbench.run(size="16M", strides="1M", rounds=2, reps=1, warmup=0, warmup_rounds=1, runs=3, gap="0.5s",
                      trace="off", seed=5)
    assert r.complete and r.config["runs"] == 3 and r.config["gap"] == 0.5
    assert sorted({s["run"] for s in r.records}) == [0, 1, 2]
    rounds = {s["run"]: set() for s in r.records}
    for s in r.records:
        rounds[s["run"]].add((s["round"], s["warmup"]))
    # each sub-run has its own warm-up round, and every round of the file its own index
    assert all(sorted(v) == [(3 * k, True), (3 * k + 1, False), (3 * k + 2, False)] for k, v in rounds.items())
    firsts = [min(s["round_t"] for s in r.records if s["run"] == k) for k in range(3)]
    assert firsts[1] >= 0.5 and firsts[2] >= 1.0  # each a gap after the one before started: a sleep's lower bound
    assert _time.monotonic() - t0 >= 1.0
    assert len(r.sub_runs()) == 3


def test_no_rescue_folder_prints_the_table_then_the_json(monkeypatch, tmp_path, capsys):
    """no temporary directory usable (gettempdir() itself fails) and the current
    directory full: the table, then the result file itself on stdout, and one line saying so."""
    import errno
    import tempfile

    from atsdbench import cli
    from atsdbench.data import files as outfile

    real_write, real_mkstemp = outfile.write_atomically, tempfile.mkstemp

    def full(path, write, binary=False):
        if str(path).endswith("x.json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(path, write, binary)

    def mkstemp(*a, prefix=None, **k):
        if prefix == "atsdbench-rescued-":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_mkstemp(*a, prefix=prefix, **k)

    monkeypatch.setattr(outfile, "write_atomically", full)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(tempfile, "_candidate_tempdir_list", lambda: [])
    rc = cli.main(["run", "--size", "16M", "--strides", "64K", "--rounds", "1", "--reps", "1", "-o",
                   str(tmp_path / "x.json")])
    out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1 and "result was written to stdout above" in err, err
    table, _, text = out.partition("\n{")
    assert "GB/s" in table and "wrote" not in table
    from atsdbench.data import results

    assert results.from_dict(json.loads("{" + text)).complete


def test_a_second_run_to_the_same_output_refuses_to_start(tmp_path, cli):
    """two runs with one -o both said "wrote"; the second now stops before measuring."""
    target = tmp_path / "r.json"
    code = "import sys; from atsdbench.data import files; files.claim(sys.argv[1]); print('held', flush=True); " \
           "sys.stdin.read()"
    holder = subprocess.Popen([sys.executable, "-c", code, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        p = cli("run", "--size", "16M", "--strides", "64K", "--rounds", "1", "--reps", "1", "-o", target)
        assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1
        assert f"output {target} is being written by another atsdbench (pid {holder.pid})" in p.stderr
    finally:
        holder.communicate("")
    assert not target.exists()


@pytest.mark.parametrize("op", ["mprotect", "madvise", "munmap"])
def test_each_op_s_rate_and_counts_per_call(op, tmp_path, in_tracefs):
    """run --op: the op in the config and the table's heading, a rate per pass, and the kernel's counts
    per call (tlb:tlb_flush with its reasons, in a mount namespace with tracefs; IPIs).  With a
    bystander keeping the mm live on the other CPU, each op's flushes must reach it."""
    from atsdbench.data.cells import OPS

    two = len(os.sched_getaffinity(0)) >= 2
    out = tmp_path / f"{op}.json"
    p = subprocess.run(["unshare", "-m", "sh", "-c", in_tracefs + 'exec "$@"', "sh", sys.executable, "-m",
                        "atsdbench", "run", "--size", "16M", "--strides", "64K,2M", "--rounds", "2", "--reps", "2",
                        "--op", op, "--latency", *(["--bystanders", "1"] if two else []), "--seed", "4", "-o",
                        str(out)], capture_output=True, text=True, cwd=str(tmp_path), timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"{OPS[op]} rate over 16M")
    r = atsdbench.load(str(out))
    s = r.samples
    assert r.config["op"] == op and "op" not in s  # one op: config only, no axis
    assert (s["gbps"] > 0).all() and (s["calls"] == (16 << 20) // s["stride_bytes"]).all()
    assert s["lat_p99_us"].gt(0).all()
    if "ipis" in s:
        assert s["ipis"].ge(0).all()
    traced = s[s["traced"]]
    if r.config.get("trace_events"):
        # every call of every op invalidates what it took away, at least once
        assert len(traced) and (traced["flushes"] >= traced["calls"]).all()
        if two:
            live = traced[traced["bystander_share"] >= 0.9]
            if len(live):
                assert live["flushes_remote_ipi_send"].sum() > 0


def test_ops_as_an_axis_are_paired_cells_of_one_run(tmp_path, cli):
    p = cli("run", "--size", "16M", "--strides", "64K", "--rounds", "2", "--reps", "1", "--op", "mprotect,madvise,munmap",
            "--seed", "2", "-o", tmp_path / "ops.json")
    assert p.returncode == 0, p.stderr
    assert "cell 2: op=munmap" in p.stdout and p.stdout.startswith("mprotect,madvise,munmap rate over")
    r = atsdbench.load(str(tmp_path / "ops.json"))
    assert r.config["axes"] == {"op": ["mprotect", "madvise", "munmap"]} and set(r.samples["op"]) == set(OPS3)
    c = cli("compare", tmp_path / "ops.json", "--by", "op")
    assert c.returncode == 0 and "op=madvise" in c.stdout and "op=munmap" in c.stdout, c.stderr
    assert c.stdout.startswith("mprotect/madvise/munmap rate (GB/s = 10^9 bytes/s)")


OPS3 = ("mprotect", "madvise", "munmap")


def test_threads_as_an_axis_give_aggregate_rates_and_each_thread_s_share(tmp_path, cli):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no second thread")
    p = cli("run", "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "2", "--threads", "1,2",
            "--op", "madvise", "--seed", "3", "-o", tmp_path / "t.json")
    assert p.returncode == 0, p.stderr
    assert "cell 1: threads=2" in p.stdout and "threads 1,2 on CPU" in p.stdout
    r = atsdbench.load(str(tmp_path / "t.json"))
    s = r.samples
    assert r.config["axes"] == {"threads": [1, 2]} and len(r.config["thread_cpus"]) == 2
    two, one = s[s["threads"] == 2], s[s["threads"] == 1]
    assert len(two) == len(one) == 3 * 3 * 2
    assert (two["ns"] == two["thread_ns_max"]).all() and (two["thread_ns_min"] <= two["thread_ns_max"]).all()
    assert (two["gbps"] == (16 << 20) / two["ns"]).all()
    assert (two["us_per_call"] == two["ns"] / 1e3 / (two["calls"] // 2)).all()
    assert (two["disturbed"] == (two["threads_disturbed"] > 0)).all() and one["thread_ns_max"].isna().all()


def test_threads_above_the_cpus_allowed_are_refused_before_measuring(tmp_path, cli):
    n = len(os.sched_getaffinity(0))
    p = cli("run", "--size", "16M", "--threads", str(n + 1), "-o", tmp_path / "x.json")
    assert p.returncode == 2 and p.stderr.startswith(f"atsdbench: --threads {n + 1} needs {n + 1} CPUs")
    assert len(p.stderr.splitlines()) == 1 and not (tmp_path / "x.json").exists()


def test_processes_as_tasks_are_recorded_and_leave_no_process_behind(tmp_path, cli):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no second task")
    p = cli("run", "--size", "16M", "--strides", "64K", "--rounds", "2", "--reps", "1", "--threads", "2", "--tasks",
            "processes", "--op", "munmap", "-o", tmp_path / "p.json")
    assert p.returncode == 0, p.stderr
    assert "2 processes on CPU" in p.stdout.splitlines()[0]
    r = atsdbench.load(str(tmp_path / "p.json"))
    assert r.config["tasks"] == "processes" and (r.samples["threads"] == 2).all()


def test_cli_run_with_placements_says_so_and_records_slots(cli, tmp_path):
    p = cli("run", "--size", "16M", "--strides", "64K", "--rounds", "4", "--reps", "1", "--placements", "2",
            "-o", "p.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "--placements 2: rounds rotate over 2 regions held at once" in p.stdout
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["config"]["placements"] == 2 and data["config"]["placement_pool"] == "held"
    slots = {s["round"]: s["placement_slot"] for s in data["samples"]}
    assert slots == {r: r % 2 for r in slots}
    assert all(s["placement_present"] == 1.0 for s in data["samples"])
