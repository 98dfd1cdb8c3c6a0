"""The standalone `atsd` program (csrc/, plain make) and `atsdbench import`."""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

import atsdbench
from atsdbench.data import atsd_output as importer
from atsdbench.measure import plan as plans
from atsdbench.errors import UsageError

CSRC = os.path.join(os.path.dirname(__file__), "..", "..", "csrc")



def test_runs_and_imports(atsd, tmp_path, cli):
    out = tmp_path / "run.txt"
    p = subprocess.run([atsd, "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "2", "--seed", "5",
                        "--latency", "--label", "minimal", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    r = cli("import", out, "-o", tmp_path / "run.json")
    assert r.returncode == 0 and "p99 us" in r.stdout
    res = atsdbench.load(str(tmp_path / "run.json"))
    s = res.samples
    assert res.complete and res.config["label"] == "minimal" and res.config["source"] == "atsd"
    assert len(s) == 3 * 3 * 2 and len(res.measured) == 2 * 2 * 2 and (s["gbps"] > 0).all()
    assert not s.duplicated(["round", "rep", "stride_bytes"]).any()
    assert (s["calls"] == (16 << 20) // s["stride_bytes"]).all()
    assert res.host["page_size"] == os.sysconf("SC_PAGE_SIZE") and res.host["affinity"] == "unknown"
    # what disturbed each pass and the round's canary, as run records them (not timed: only there and sane)
    assert s["preempted"].ge(0).all() and s["cpu_share"].gt(0).all() and s["disturbed"].isin([True, False]).all()
    assert (s["canary_compute_ns"] > 0).all() and (s["canary_chase_ns"] > 0).all()
    assert s.groupby("round")["canary_compute_ns"].nunique().eq(1).all()  # one canary a round


@pytest.mark.parametrize("args,message", [
    (["--size", "0"], "size must not be zero"),
    (["--strides", "6K"], "is not a multiple of the page size"),
    (["--size", "64M", "--strides", "128M"], "is larger than the size"),
    (["--size", "65M", "--strides", "2M"], "is not a multiple of stride"),
    (["--size", "1T"], "more than MemAvailable"),
    (["--rounds", "0"], "--rounds must be at least 1"),
    (["--bystanders", "4096"], "other CPUs"),
    (["--cpu", "4095"], "not in this process's CPU affinity"),
    (["--pages", "huge"], "--pages must be"),
    (["-o", "/nonexistent-dir/x"], "cannot write output"),
])
def test_bad_plans(atsd, tmp_path, args, message):
    argv = [atsd, "--size", "16M", "-o", str(tmp_path / "x.txt")] + args
    p = subprocess.run(argv, capture_output=True, text=True)
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("text,message", [
    ("hello\n", "is not atsd output"),
    ("atsd-output 1\nhost\ta=1\n", "has no host or config line"),
    ("atsd-output 1\nwhat\tx=1\n", "unknown record"),
    ("atsd-output 1\nsample\tround=x\n", "is not a whole number"),
    ("atsd-output 1\nsample\tround=1\n", "sample without"),
])
def test_import_rejects(tmp_path, text, message, cli):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        importer.load(str(path))
    p = cli("import", path, "-o", tmp_path / "o.json")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_import_missing_file(cli, tmp_path):
    p = cli("import", tmp_path / "nope.txt")
    assert p.returncode == 2 and "no such file" in p.stderr


def test_axes_same_cells_same_order_as_atsdbench(atsd, tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no bystander possible")
    out = tmp_path / "ax.txt"
    subprocess.run([atsd, "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "1", "--seed", "9",
                    "--bystanders", "0,1", "--pages", "base,thp", "-o", str(out)], check=True, capture_output=True)
    res = importer.load(str(out))
    plan = plans.make_plan(size="16M", strides="64K,1M", rounds=2, reps=1, seed=9, bystanders="0,1",
                           pages="base,thp")
    assert res.config["axes"] == plan.axes and res.config["cells"] == plan.config()["cells"]
    got = [(s["round"], s["cell"], s["stride_bytes"]) for s in res._records]
    want = [(r, c, st) for r in range(3) for c in plans.cell_order(plan, r)
            for _, _, st in plans.round_order(plan, r, cell=c)]
    assert got == want
    assert all(plan.cells[s["cell"]]["pages"] == s["pages"] for s in res._records)


def table_rows(text):
    """{(cell heading or None, stride): [cells]} of atsd's table (or run's) on stdout."""
    rows, heading, columns = {}, None, None
    for line in text.splitlines():
        if line.startswith("cell "):
            heading = line.rstrip(":").strip()
        elif line.strip().startswith("Stride"):
            columns = re.split(r"\s{2,}", line.strip())
        elif columns and line.strip() and not line.strip().startswith("-") and line.split()[0][0].isdigit():
            # a table wider than 100 columns comes in blocks, each repeating the stride: one row of them all
            rows.setdefault((heading, line.split()[0]), {}).update(zip(columns, re.split(r"\s{2,}", line.strip())))
        elif not line.strip():
            columns = None
    return rows


def test_without_o_prints_the_table_and_writes_nothing(atsd, tmp_path):
    p = subprocess.run([atsd, "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "2", "--seed", "3"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0 and p.stderr == "" and os.listdir(tmp_path) == []
    assert p.stdout.startswith("mprotect(PROT_NONE) rate over 16M, 2 rounds x 2 reps, CPU ")
    assert "GB/s = 10^9 bytes/s" in p.stdout and "wrote" not in p.stdout
    rows = table_rows(p.stdout)
    assert sorted(stride for _, stride in rows) == ["1M", "64K"]
    assert all(float(r["Median GB/s"]) > 0 and float(r["us/call"]) > 0 for r in rows.values())
    # no counts here is said, not shown as zeros
    assert ("flush counts: tlb:tlb_flush" in p.stdout) != ("no flush counts: " in p.stdout)


def test_an_existing_output_is_refused_before_measuring_and_force_replaces_it(atsd, tmp_path):
    """atsdbench's rule for every file it is told to write (docs/result-file.md#nothing-replaced)."""
    out = tmp_path / "out.txt"
    out.write_text("kept\n")
    args = [atsd, "--size", "4M", "--strides", "64K", "--rounds", "1", "--reps", "1", "-o", str(out)]
    p = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and p.stderr == f"atsd: output {out} exists: --force replaces it\n"
    assert p.stdout == "" and out.read_text() == "kept\n"  # nothing measured
    p = subprocess.run(args + ["--force"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert out.read_text().startswith("atsd-output ") and sorted(os.listdir(tmp_path)) == ["out.txt"]


def test_a_file_made_at_the_output_s_name_during_the_run_is_never_replaced(atsd, tmp_path):
    """The name is taken with O_EXCL when the output is written: a file that appeared there while atsd
    measured stays, and the output goes to stdout (nothing lost)."""
    out = tmp_path / "out.txt"
    proc = subprocess.Popen([atsd, "--size", "4M", "--strides", "64K", "--rounds", "2", "--reps", "1", "--spread",
                             "3s", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)  # its 3 s of rounds under way
    out.write_text("theirs\n")
    stdout, stderr = proc.communicate(timeout=120)
    assert out.read_text() == "theirs\n"
    assert proc.returncode == 2
    if "exists: --force replaces it" not in stderr:  # this slow a start: refused before measuring
        assert stderr.endswith(f"atsd: cannot write {out}: File exists; the output follows on stdout\n"), stderr
        assert "atsd-output " in stdout and "\nend\t" in stdout
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]


def test_its_table_is_run_s_table_of_the_imported_file(atsd, tmp_path, cli):
    out = tmp_path / "t.txt"
    p = subprocess.run([atsd, "--size", "16M", "--strides", "64K,1M,2M", "--rounds", "3", "--reps", "2", "--seed", "4",
                        "--bystanders", "0,1", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert " ".join(p.stdout.split()).endswith(f"wrote {out} (atsdbench import {out})")  # a long path: 2 lines
    mine = table_rows(p.stdout)
    theirs = table_rows(cli("import", out, "-o", tmp_path / "t.json").stdout)
    assert len(mine) == 2 * 3 and set(mine) == set(theirs)
    for key, row in mine.items():
        for column in ("Median GB/s", "Min", "Max", "us/call", "IPIs/call", "flushes/call", "full flush %"):
            assert row.get(column) == theirs[key].get(column), (key, column)


def test_the_same_filters_and_columns_as_the_python_counters():
    from atsdbench.measure import core, tlbie

    # POWER's columns are one table, csrc/atsd_trace.c's: atsd counts from it and has no filter or
    # opcode of its own, and atsdbench's trace parser takes its names and opcodes from the same
    # (tests/measure/test_tlbie.py holds the filters to the parser on real traces)
    count = open(os.path.join(CSRC, "atsd_count.c")).read()
    assert "atsd_power_columns(" in count
    assert not re.search(r'"[a-z_]+ (==|!=|>=|<=|&) ', count) and not re.search(r"\{\d+, \"h_", count)
    power = core.power_columns()
    assert [c["name"] for c in power if not c["hash"]] == [c for c in tlbie.COLUMNS if c != "tlbie_fixup"]
    assert {c["opcode"]: c["name"] for c in power if c["hash"]} == tlbie.HCALL_COLUMNS
    assert tlbie.HCALL_COLUMNS == {op: n.lower() for op, n in tlbie.HCALLS.items() if n != "H_READ"}
    assert all(c["filter"] == f"opcode == {c['opcode']}" for c in power if c["hash"])
    src = open(os.path.join(CSRC, "atsd_summary.c")).read()
    titles = dict(re.findall(r'\{"([a-z_]+)", "([^"]+/call|full flush %)", [01]\}', src))
    assert {c["name"] for c in power if not c["hash"]} <= set(titles)
    from atsdbench.render.tables import COUNTER_COLUMNS

    py = {key[:-len("_per_call")]: title for key, title, _ in COUNTER_COLUMNS if key.endswith("_per_call")}
    assert {k: v for k, v in titles.items() if k != "full_flushes"} == {k: v for k, v in py.items() if k in titles}
    assert core.reason_column("remote IPI send") == "flushes_remote_ipi_send"  # as reason_column in C


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")
def test_counts_flushes_on_warm_up_passes_only(atsd, tmp_path, cli, in_tracefs):
    # tracefs in a mount namespace of its own (in_tracefs)
    out = tmp_path / "c.txt"
    p = subprocess.run(["unshare", "-m", "sh", "-c", in_tracefs + 'exec "$@"', "sh",
                        atsd, "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "2", "--seed", "6",
                        "-o", str(out)], capture_output=True, text=True)
    if "no flush counts" in p.stdout:
        pytest.skip(f"no tlb:tlb_flush counts here: {p.stdout.splitlines()[-2]}")
    assert p.returncode == 0, p.stderr
    assert "flush counts: tlb:tlb_flush (system-wide)" in p.stdout
    rows = table_rows(p.stdout)
    assert all(float(r["flushes/call"]) >= 1 for r in rows.values())  # every call flushed at least once
    res = atsdbench.load(str(tmp_path / "c.json")) if cli("import", out, "-o", tmp_path / "c.json").returncode == 0 \
        else pytest.fail("import failed")
    s = res.samples
    assert res.config["trace_scope"] == "system" and res.config["trace_events"] == "tlb:tlb_flush"
    traced = s[s["traced"]]
    assert len(traced) == 2 * 3 and traced["warmup"].all()  # one warm-up pass per stride and round
    assert (traced["flushes"] >= traced["calls"]).all() and s[~s["traced"]]["flushes"].isna().all()
    assert "flushes_remote_ipi_send" in s and (traced["full_flushes"] <= traced["flushes"]).all()


def test_import_carries_counts_and_checks_them(tmp_path):
    head = ("atsd-output 1\nhost\tarch=ppc64le\tmmu=Radix\tpage_size=65536\n"
            "config\tsize=16777216\tstrides=65536\trounds=1\treps=1\twarmup=1\twarmup_rounds=0\tpages=base\t"
            "bystanders=1\tcpu=0\tseed=1\ttrace_scope=system\ttrace_events=powerpc:tlbie,powerpc:tlbia\n")
    warm = "sample\tround=0\trep=0\tstride_bytes=65536\twarmup=1\tns=1000\tcalls=256\ttraced=1\t"
    timed = "sample\tround=0\trep=1\tstride_bytes=65536\twarmup=0\tns=1000\tcalls=256\ttraced=0\n"
    path = tmp_path / "p.txt"
    path.write_text(head + warm + "tlbie=768\ttlbie_global=768\ttlbie_full=0\ttlbia=0\n" + timed + "end\tcomplete=1\n")
    r = importer.load(str(path))
    s = r.samples
    assert list(s["traced"]) == [True, False] and s["tlbie_global"][0] == 768 and pd_isna(s["tlbie"][1])
    assert r.config["trace_events"] == "powerpc:tlbie,powerpc:tlbia" and r.config["trace"] == "auto"
    path.write_text(head + warm + "tlbie=-1\n" + timed)
    with pytest.raises(UsageError, match=r"line 4: tlbie='-1' is out of range"):
        importer.load(str(path))
    path.write_text(head + warm + "traced=2\n")
    with pytest.raises(UsageError, match="traced"):
        importer.load(str(path))


def pd_isna(v):
    import math

    return v is None or (isinstance(v, float) and math.isnan(v))


# ---- --runs M --gap D: sub-runs, each a fork of its own ----

SUB_RUN = ["--size", "8M", "--strides", "64K,1M", "--rounds", "2", "--reps", "2"]


def _children(pid):
    """The pids of pid's live (or unreaped) children; None where the kernel does not list them."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return f.read().split()
    except FileNotFoundError:
        return None


def _watch(proc, until, timeout=60):
    """Polls proc's children until until(seen pids, current pids) holds; returns the pids seen."""
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        now = _children(proc.pid)
        if now is None:
            proc.kill()
            proc.wait()
            pytest.skip("this kernel has no /proc/PID/task/PID/children")
        seen += [c for c in now if c not in seen]
        if until(seen, now):
            return seen
        time.sleep(0.001)
    return seen


def _ran_for(pid, cpu_seconds, timeout=60):
    """Waits until pid has had cpu_seconds of CPU: on a busy machine a fixed sleep may end before the
    process ran at all."""
    deadline, tick = time.monotonic() + timeout, os.sysconf("SC_CLK_TCK")
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return
        if (int(fields[11]) + int(fields[12])) / tick >= cpu_seconds:
            return
        time.sleep(0.01)


def test_sub_runs_are_fresh_processes_imported_as_run_runs_records_them(atsd, tmp_path, cli):
    from atsdbench.analysis import compare as comparison

    out = tmp_path / "r.txt"
    started = time.monotonic()
    proc = subprocess.Popen([atsd, *SUB_RUN, "--runs", "2", "--gap", "1s", "--seed", "7", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = _watch(proc, lambda seen, now: False)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0 and stderr == "", stderr
    assert time.monotonic() - started >= 1.0  # a sleep's lower bound: sub-run 1 starts >= 1 gap after 0
    assert len(seen) == 2  # one process per sub-run
    assert "rate over 8M, 2 sub-runs (fresh processes, --gap 1s) x 2 rounds x 2 reps" in stdout
    r = cli("import", out, "-o", tmp_path / "r.json")
    assert r.returncode == 0, r.stderr
    res = atsdbench.load(str(tmp_path / "r.json"))
    with open("/proc/sys/kernel/random/boot_id") as f:
        assert res.host["boot_id"] == f.read().strip()
    assert res.complete and res.config["runs"] == 2 and res.config["gap"] == 1.0
    per_run = 3 * 3 * 2  # (warm-up + measured rounds) x (warm-up + timed passes) x strides
    assert [s["run"] for s in res.records] == [0] * per_run + [1] * per_run
    # rounds numbered and ordered as run --runs numbers them: each sub-run its own warm-up round
    plan = plans.make_plan(size="8M", strides="64K,1M", rounds=2, reps=2, runs=2, gap="1s", seed=7)
    want = [(k, r, warm or w, st) for k in range(2) for r, warm in plans.round_kinds(plan, k)
            for _, w, st in plans.round_order(plan, r)]
    assert [(s["run"], s["round"], s["warmup"], s["stride_bytes"]) for s in res.records] == want
    # the table pools every sub-run's passes, as the imported file's does
    mine, theirs = table_rows(stdout), table_rows(r.stdout)
    assert set(mine) == set(theirs) and len(mine) == 2
    for key, row in mine.items():
        for column in ("Median GB/s", "Min", "Max", "us/call"):
            assert row[column] == theirs[key][column], (key, column)
    # compare takes it exactly as a file of atsdbench run --runs: the sub-run is the unit
    py = atsdbench.run(size="8M", strides="64K,1M", rounds=2, reps=2, runs=2, gap="1s", seed=7)
    assert {k: py.config[k] for k in ("runs", "gap", "processes")} == \
        {k: res.config[k] for k in ("runs", "gap", "processes")}
    assert py.host["boot_id"] == res.host["boot_id"] and sorted({s["run"] for s in py.records}) == [0, 1]
    cmp = comparison.compare([res, py])
    assert cmp.unit == "run" and {(x["n_base"], x["n_new"]) for x in cmp.rows} == {(2, 2)}
    assert cmp.boots == [1, 1]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_in_the_gap_ends_it_and_keeps_the_finished_sub_run(atsd, tmp_path, sig):
    out = tmp_path / "g.txt"
    proc = subprocess.Popen([atsd, *SUB_RUN, "--runs", "3", "--gap", "120s", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # sub-run 0's process came and went: atsd now waits out the gap
    seen = _watch(proc, lambda seen, now: seen and not now)
    assert len(seen) == 1 and proc.poll() is None
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=30)  # well inside the 120 s gap
    assert proc.returncode == 130 and stderr == f"atsd: interrupted; wrote the finished samples to {out}\n"
    assert sorted(table_rows(stdout)) == [(None, "1M"), (None, "64K")]
    res = importer.load(str(out))
    assert not res.complete and res.config["runs"] == 3
    assert [s["run"] for s in res.records] == [0] * (3 * 3 * 2)  # all of sub-run 0, nothing of the others


@pytest.mark.parametrize("target", ["atsd", "sub-run"])
def test_sigterm_stops_the_sub_run_under_way(atsd, tmp_path, target):
    """A SIGTERM to atsd alone reaches its sub-run (no terminal sends it to both); one to the
    sub-run alone stops the whole run.  Either way every finished pass is kept."""
    out = tmp_path / "t.txt"
    proc = subprocess.Popen([atsd, "--size", "8M", "--strides", "64K", "--rounds", "100000", "--reps", "1",
                             "--runs", "2", "--gap", "0", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = _watch(proc, lambda seen, now: bool(now))
    assert len(seen) == 1
    _ran_for(int(seen[0]), 0.3)  # some of its passes done, however loaded the machine
    os.kill(proc.pid if target == "atsd" else int(seen[0]), signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)  # 100000 rounds would take minutes
    assert proc.returncode == 130 and stderr == f"atsd: interrupted; wrote the finished samples to {out}\n"
    res = importer.load(str(out))
    assert not res.complete and len(res.records) > 0 and {s["run"] for s in res.records} == {0}
    assert out.read_text().count("\nsample\t") == len(res.records)


def test_import_refuses_a_sample_of_a_sub_run_the_config_lacks(tmp_path):
    head = ("atsd-output 1\nhost\tarch=x86_64\tpage_size=4096\tboot_id=unknown\n"
            "config\tsize=16777216\tstrides=65536\trounds=1\treps=1\twarmup=0\twarmup_rounds=0\tpages=base\t"
            "bystanders=0\tcpu=0\tseed=1\truns=2\tgap=20\n")
    sample = "sample\tround=0\trep=0\tstride_bytes=65536\twarmup=0\tns=1000\tcalls=256\ttraced=0\trun=%s\n"
    path = tmp_path / "s.txt"
    path.write_text(head + sample % 1 + "end\tcomplete=1\n")
    r = importer.load(str(path))
    assert r.records[0]["run"] == 1 and r.host["boot_id"] is None and r.config["gap"] == 20.0
    for bad, message in (("2", "run=2 is not one of config runs=2"), ("x", "run='x' is not a whole number")):
        path.write_text(head + sample % bad)
        with pytest.raises(UsageError, match=re.escape(message)):
            importer.load(str(path))


@pytest.mark.parametrize("op", ["madvise", "munmap"])
def test_op_runs_and_imports_as_run_records_it(atsd, tmp_path, cli, op):
    out = tmp_path / "op.txt"
    p = subprocess.run([atsd, "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "1", "--op", op,
                        "--latency", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith({"madvise": "madvise(MADV_DONTNEED)", "munmap": "munmap"}[op] + " rate over 16M")
    assert cli("import", out, "-o", tmp_path / "op.json").returncode == 0
    res = atsdbench.load(str(tmp_path / "op.json"))
    assert res.config["op"] == op and (res.samples["gbps"] > 0).all() and "op" not in res.samples


def test_op_axis_same_cells_same_order_as_atsdbench(atsd, tmp_path):
    out = tmp_path / "ops.txt"
    subprocess.run([atsd, "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "1", "--seed", "9",
                    "--op", "mprotect,munmap", "--pages", "base,thp", "-o", str(out)], check=True, capture_output=True)
    res = importer.load(str(out))
    plan = plans.make_plan(size="16M", strides="64K,1M", rounds=2, reps=1, seed=9, op="mprotect,munmap",
                           pages="base,thp")
    assert res.config["axes"] == plan.axes and res.config["cells"] == plan.config()["cells"]
    got = [(s["round"], s["cell"], s["stride_bytes"], s["op"]) for s in res._records]
    want = [(r, c, st, plan.cells[c]["op"]) for r in range(3) for c in plans.cell_order(plan, r)
            for _, _, st in plans.round_order(plan, r, cell=c)]
    assert got == want


def test_threads_run_and_import_by_run_s_rule(atsd, tmp_path, cli):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no second thread")
    out = tmp_path / "t.txt"
    p = subprocess.run([atsd, "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "1", "--threads",
                        "1,2", "--op", "munmap", "--seed", "4", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "cell 1: threads=2" in p.stdout
    assert cli("import", out, "-o", tmp_path / "t.json").returncode == 0
    res = atsdbench.load(str(tmp_path / "t.json"))
    s = res.samples
    plan = plans.make_plan(size="16M", strides="64K,1M", rounds=2, reps=1, seed=4, threads="1,2", op="munmap")
    assert res.config["axes"] == plan.axes and res.config["thread_cpus"] == plan.thread_cpus
    two = s[s["threads"] == 2]
    assert len(two) == 3 * 2 * 2 and (two["ns"] == two["thread_ns_max"]).all()
    assert (two["disturbed"] == (two["threads_disturbed"] > 0)).all()


def test_processes_run_one_mm_each_and_import(atsd, tmp_path, cli):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no second task")
    out = tmp_path / "p.txt"
    p = subprocess.run([atsd, "--size", "16M", "--strides", "64K", "--rounds", "1", "--reps", "1", "--threads", "2",
                        "--tasks", "processes", "--op", "madvise", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert cli("import", out, "-o", tmp_path / "p.json").returncode == 0
    res = atsdbench.load(str(tmp_path / "p.json"))
    assert res.config["tasks"] == "processes" and res.config["threads"] == 2
    assert (res.samples["threads"] == 2).all() and (res.samples["gbps"] > 0).all()


@pytest.mark.parametrize("op", ["mprotect", "madvise", "munmap"])
def test_verify_lines_import_as_runs_verify_records(atsd, tmp_path, cli, op):
    """atsd --verify: a verify line per stride per round and cell, clean here, which import reads as
    run's `verify` records; the loud line and exit 3 are the C twin of run's (tests/measure/test_verify.py)."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to check from")
    out = tmp_path / "v.txt"
    p = subprocess.run([atsd, "--size", "4M", "--strides", "64K,1M", "--rounds", "1", "--reps", "1", "--op", op,
                        "--verify", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0 and "STALE" not in p.stderr, p.stderr
    assert out.read_text().count("\nverify\t") == 2 * 2  # a warm-up and a measured round, 2 strides
    r = cli("import", out, "-o", tmp_path / "v.json")
    assert r.returncode == 0 and ": 0 stale in" in r.stdout and "\nverify: untimed passes" in r.stdout, r.stderr
    res = atsdbench.load(str(tmp_path / "v.json"))
    assert res.config["verify"] and len(res.verify) == 4 and res.stale() == []
    assert all(v["op"] == op and v["checks"] == v["calls"] * len(v["checker_cpus"]) for v in res.verify)


def test_verify_with_bystanders_stops_them_for_the_checks_and_starts_them_again(atsd, tmp_path):
    """As run does (measure/session.py): the bystanders stop for each cell's verify passes and are back
    for the next round's timed passes; a failed restart would end the run with exit 2."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to check from")
    out = tmp_path / "v.txt"
    p = subprocess.run([atsd, "--size", "4M", "--strides", "64K,1M", "--rounds", "2", "--reps", "1", "--verify",
                        "--bystanders", "0,1", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0 and "STALE" not in p.stderr, p.stderr
    lines = out.read_text().splitlines()
    assert lines[-1] == "end\tcomplete=1"
    # 3 rounds (a warm-up one) x 2 cells: each cell's verify lines, then the next cell's timed passes
    assert sum(line.startswith("verify\t") for line in lines) == 3 * 2 * 2
    assert sum(line.startswith("sample\t") and "\twarmup=0\t" in line for line in lines) == 2 * 2 * 2  # rounds, cells, strides


def test_verify_with_one_cpu_is_refused_as_run_refuses_it(atsd, tmp_path):
    cpu = min(os.sched_getaffinity(0))
    p = subprocess.run([atsd, "--size", "4M", "--verify"], capture_output=True, text=True,
                       preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    assert p.returncode == 2 and p.stderr == (f"atsd: --verify checks each call from another CPU; the affinity "
                                              f"mask has one ({cpu})\n")
