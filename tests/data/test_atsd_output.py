"""`atsdbench import` of atsd output: every bad field is one line naming it, exit 2; the file written loads."""
import errno
import json
import os
import tempfile

import pytest

import atsdbench
from atsdbench import cli
from atsdbench.data import atsd_output as importer
from atsdbench.errors import UsageError

HOST = ("host\thostname=h\tarch=x86_64\tkernel_release=6.1.0\tkernel_version=#1 SMP\tcpu_model=c\tmmu=unknown"
        "\tonline_cpus=0-1\tpage_size=4096\thugepage_size=2097152\tthp_enabled=always [madvise] never")
CONFIG = ("config\tsize=16777216\tstrides=65536,1048576\trounds=2\treps=2\twarmup=1\twarmup_rounds=0\tpages=base"
          "\tbystanders=0\tcpu=0\tbystander_cpus=\tlatency=1\tretouch=1\tseed=7\tlabel=lab")


def sample(rnd, rep, order, stride, warmup, ns=1_000_000, **extra):
    fields = dict(round=rnd, rep=rep, order=order, stride_bytes=stride, warmup=warmup, ns=ns,
                  calls=16777216 // stride, ipis=0, lat_p50_ns=900, lat_p90_ns=950, lat_p99_ns=990,
                  lat_max_ns=999, **extra)
    return "sample\t" + "\t".join(f"{k}={v}" for k, v in fields.items())


def text(host=HOST, config=CONFIG, samples=None, end="end\tcomplete=1"):
    samples = samples if samples is not None else [
        sample(r, p, i, s, int(p == 0), 1_000_000 + 1000 * (r + p + i))
        for r in range(2) for p in range(3) for i, s in enumerate((65536, 1048576))]
    return "\n".join(["atsd-output 1", host, config, *samples, end]) + "\n"


def test_good_output_imports_and_loads(tmp_path, capsys):
    (tmp_path / "a.txt").write_text(text())
    out = tmp_path / "a.json"
    assert cli.main(["import", str(tmp_path / "a.txt"), "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    r = atsdbench.load(str(out))
    assert r.complete and r.config["strides"] == [65536, 1048576] and r.host["online_cpus"] == [0, 1]
    assert r.label == "lab" and len(r.measured) == 8 and r.samples["lat_p99_us"].max() == pytest.approx(0.99)


def test_self_disturbance_and_the_canary_are_imported_as_run_records_them(tmp_path):
    from atsdbench.data import results

    fields = [dict(preempted=0, cpu_ns=1_000_000, steal_ticks=0), dict(preempted=2, cpu_ns=990_000),
              dict(preempted=0, cpu_ns=700_000, steal_ticks=0), {}]
    samples = [sample(i // 2, 1 + i % 2, i, 65536, 0, 1_000_000, canary_compute_ns=20_000_000 + i,
                      canary_chase_ns=40_000_000, **f) for i, f in enumerate(fields)]
    (tmp_path / "d.txt").write_text(text(samples=samples))
    r = importer.load(str(tmp_path / "d.txt"))
    got = r._records
    for f, s in zip(fields, got):
        if f:  # run's own rule, on atsd's fields
            want = results.disturbance(f["preempted"], f["cpu_ns"], f.get("steal_ticks"), 1_000_000)
            assert {k: s.get(k) for k in want} == want
        else:  # an atsd from before these fields: none made up
            assert not {"preempted", "cpu_share", "disturbed"} & set(s)
    assert [s.get("disturbed") for s in got] == [False, True, True, None]
    assert [s["canary_compute_ns"] for s in got] == [20_000_000 + i for i in range(4)]
    assert ("steal_ticks" in got[1]) is False and got[2]["cpu_share"] == 0.7


BIG = "9" * 400
BAD = [  # (what to replace in the good text, by what, the message)
    (CONFIG, CONFIG.replace("\tstrides=65536,1048576", ""), "line 3: config without strides"),
    (CONFIG, "config\tsize=1", "line 3: config without strides, rounds, reps, warmup, warmup_rounds, pages"),
    ("strides=65536,1048576", "strides=64K", "strides='64K' is not a comma-separated list of whole numbers"),
    ("strides=65536,1048576", "strides=0", "strides='0' is out of range (1 to 4611686018427387904)"),
    ("online_cpus=0-1", "online_cpus=a", "online_cpus='a' is not a list of CPUs below 8192"),
    ("online_cpus=0-1", "online_cpus=0-99999999999", "online_cpus='0-99999999999' is not a list of CPUs"),
    ("online_cpus=0-1", "online_cpus=3-1", "online_cpus='3-1' is not a list of CPUs"),
    ("size=16777216", "size=0", "line 3: size='0' is out of range"),
    ("size=16777216", f"size={BIG}", "size='99999999999999999999999999999999999999999999999999999999..."),
    ("rounds=2", "rounds=+2", "rounds='+2' is not a whole number"),
    ("cpu=0", "cpu=-1", "cpu='-1' is out of range (0 to 8191)"),
    ("calls=256", "calls=0", "line 4: calls='0' is out of range (1 to 9223372036854775807)"),
    ("stride_bytes=65536", "stride_bytes=0", "line 4: stride_bytes='0' is out of range"),
    ("ns=1000000", "ns=-5", "line 4: ns='-5' is out of range"),
    ("ns=1000000", f"ns={BIG}", "line 4: ns='9999"),
    ("warmup=1\tns", "warmup=2\tns", "line 4: warmup='2' is out of range (0 to 1)"),
    ("lat_p50_ns=900", "lat_p50_ns=fast", "lat_p50_ns='fast' is not a whole number"),
    ("ipis=0", "ipis=0\tpreempted=-1\tcpu_ns=5", "line 4: preempted='-1' is out of range"),
    ("ipis=0", "ipis=0\tpreempted=0\tcpu_ns=x", "line 4: cpu_ns='x' is not a whole number"),
    ("end\tcomplete=1", "end\tcomplete", "'complete' is not key=value"),
    ("end\tcomplete=1", "ending", "unknown record 'ending'"),
]


@pytest.mark.parametrize("old,new,message", BAD, ids=[m for _, _, m in BAD])
def test_bad_fields_are_one_line_naming_them(tmp_path, capsys, old, new, message):
    good = text()
    assert old in good
    (tmp_path / "bad.txt").write_text(good.replace(old, new, 1))
    with pytest.raises(UsageError) as e:
        importer.load(str(tmp_path / "bad.txt"))
    assert message in str(e.value) and len(str(e.value)) < len(str(tmp_path)) + 180
    assert cli.main(["import", str(tmp_path / "bad.txt"), "-o", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and not os.path.exists(tmp_path / "o.json")


def test_a_megabyte_bad_value_is_cut(tmp_path):
    (tmp_path / "bad.txt").write_text(text().replace("ns=1000000", "ns=" + "x" * 1_000_000, 1))
    with pytest.raises(UsageError, match=r"ns='xxx.*\.\.\. is not a whole number") as e:
        importer.load(str(tmp_path / "bad.txt"))
    assert len(str(e.value)) < len(str(tmp_path)) + 120


@pytest.mark.parametrize("output,message", [("", "the output file name is empty"),
                                            ("/dev/null", "is a character device, not a regular file")])
def test_outputs_that_are_refused(tmp_path, capsys, output, message):
    (tmp_path / "a.txt").write_text(text())
    assert cli.main(["import", str(tmp_path / "a.txt"), "-o", output]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_failed_write_is_rescued_and_named(tmp_path, capsys, monkeypatch):
    (tmp_path / "a.txt").write_text(text())
    rescue = tmp_path / "rescue"
    rescue.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(rescue))

    def replace(a, b):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "replace", replace)
    out = tmp_path / "out.json"
    assert cli.main(["import", str(tmp_path / "a.txt"), "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert "GB/s" in captured.out  # the table came first
    (saved,) = os.listdir(rescue)
    assert captured.err == (f"atsdbench: cannot write output {out}: No space left on device; the result was saved "
                            f"to {rescue / saved} instead\n")
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["a.txt", "rescue"]
    monkeypatch.undo()
    assert json.loads((rescue / saved).read_text())["config"]["label"] == "lab"


# ---- atsd --breakdown: 'atsd-output 2', its breakdown and trace records, cut here into stages ----

def breakdown_text(fixtures, *, lost=0, version=2, extra="", traces=("64k", "1024k"), tid=16626):
    """An atsd --breakdown output of one cell: two traced passes whose trace lines are real ones
    (tests/fixtures/breakdown/, captured on this project's VM with one bystander)."""
    config = (CONFIG.replace("bystanders=0\tcpu=0\tbystander_cpus=", "bystanders=1\tcpu=1\tbystander_cpus=0")
              + "\tbreakdown=1\tbreakdown_calls_max=2048\tbreakdown_clock=x86-tsc\tbreakdown_have=tlb,csd,ipi"
              "\tbreakdown_missing=\tbreakdown_events=syscalls:sys_enter_mprotect,syscalls:sys_exit_mprotect,"
              "tlb:tlb_flush")
    records = []
    for name in traces:
        stride = 65536 if name == "64k" else 1048576
        lines = (fixtures / "breakdown" / f"x86-mprotect-{name}-bystanders1.trace").read_text().splitlines()
        records.append(f"breakdown\tstride_bytes={stride}\tregion_bytes=4194304\tcalls={4194304 // stride}"
                       f"\tlost={lost}\top=mprotect\tcpu=1\ttid={tid}{extra}")
        records += ["trace\t" + line for line in lines]
    body = text(config=config, end="end\tcomplete=1\tbreakdown_complete=1").splitlines()
    body[0] = f"atsd-output {version}"
    return "\n".join(body[:-1] + records + body[-1:]) + "\n"


def test_a_breakdown_output_is_cut_into_stages_by_runs_arithmetic(tmp_path, fixtures, cli):
    from atsdbench.analysis import breakdown as arithmetic

    (tmp_path / "b.txt").write_text(breakdown_text(fixtures))
    r = importer.load(str(tmp_path / "b.txt"))
    section = r.config["breakdown"]
    assert section["complete"] and section["clock"] == "x86-tsc" and section["calls_max"] == 2048
    assert section["events"] == ["syscalls:sys_enter_mprotect", "syscalls:sys_exit_mprotect", "tlb:tlb_flush"]
    assert [p["stride_bytes"] for p in section["passes"]] == [65536, 1048576]
    for p, name in zip(section["passes"], ("64k", "1024k")):
        lines = (fixtures / "breakdown" / f"x86-mprotect-{name}-bystanders1.trace").read_text().splitlines()
        expect = arithmetic.breakdown(lines, 1, 16626, "mprotect", {"tlb", "csd", "ipi"})
        assert {k: p[k] for k in expect} == expect and arithmetic.check_sum(p)
        assert p["calls"] == 4194304 // p["stride_bytes"] and p["flushes"] >= 1
        # the measured passes' µs per call beside it (the legend's tracing cost)
        mine = [s["us_per_call"] for s in r.records if s["stride_bytes"] == p["stride_bytes"] and not s["warmup"]]
        assert p["untraced_us"] == pytest.approx(sum(mine) / len(mine))
    out = tmp_path / "b.json"
    assert cli("import", str(tmp_path / "b.txt"), "-o", str(out)).returncode == 0
    shown = cli("show", str(out))
    assert shown.returncode == 0 and "Where a call's time goes" in shown.stdout
    assert "stages sum to syscall" in shown.stdout and "emulated" not in shown.stdout


def test_a_pass_that_lost_events_has_no_stages(tmp_path, fixtures):
    (tmp_path / "b.txt").write_text(breakdown_text(fixtures, lost=3))
    passes = importer.load(str(tmp_path / "b.txt")).config["breakdown"]["passes"]
    assert [p["lost"] for p in passes] == [3, 3] and not any("syscall_us" in p for p in passes)


def test_a_breakdown_of_another_thread_has_no_calls(tmp_path, fixtures):
    (tmp_path / "b.txt").write_text(breakdown_text(fixtures, tid=4242))
    passes = importer.load(str(tmp_path / "b.txt")).config["breakdown"]["passes"]
    assert len(passes) == 2 and not any("syscall_us" in p for p in passes)


def test_a_version_1_output_still_imports_without_a_breakdown(tmp_path):
    (tmp_path / "a.txt").write_text(text())
    assert "breakdown" not in importer.load(str(tmp_path / "a.txt")).config


BAD_BREAKDOWN = [
    ({"version": 1}, "needs 'atsd-output 2'"),
    ({"tid": "x"}, "tid='x' is not a whole number"),
    ({"lost": -1}, "lost='-1' is out of range"),
]


@pytest.mark.parametrize("change,message", BAD_BREAKDOWN, ids=[m for _, m in BAD_BREAKDOWN])
def test_bad_breakdown_records_are_one_line(tmp_path, fixtures, cli, change, message):
    (tmp_path / "b.txt").write_text(breakdown_text(fixtures, **change))
    p = cli("import", str(tmp_path / "b.txt"), "-o", str(tmp_path / "b.json"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and message in p.stderr
    assert not os.path.exists(tmp_path / "b.json")


def test_a_trace_line_before_any_breakdown_and_a_bad_op_are_refused(tmp_path, fixtures):
    good = breakdown_text(fixtures)
    first = good.index("breakdown\tstride_bytes")
    (tmp_path / "b.txt").write_text(good[:first] + "trace\tx\n" + good[first:])
    with pytest.raises(UsageError, match="trace line before any breakdown record"):
        importer.load(str(tmp_path / "b.txt"))
    (tmp_path / "b.txt").write_text(good.replace("op=mprotect", "op=mlock", 1))
    with pytest.raises(UsageError, match="breakdown op='mlock' is not one of"):
        importer.load(str(tmp_path / "b.txt"))


def test_a_key_or_a_record_given_twice_is_refused(tmp_path, cli):
    good = text()
    host = next(line for line in good.splitlines() if line.startswith("host\t"))
    twice = good.replace(host, host + "\t" + host.split("\t")[1], 1)
    with pytest.raises(UsageError, match=r"line 2: the key '\w+' is given twice"):
        importer.parse(twice)
    with pytest.raises(UsageError, match="a second host record"):
        importer.parse(good.replace(host, host + "\n" + host, 1))
    (tmp_path / "t.txt").write_text(twice)
    p = cli("import", tmp_path / "t.txt", "-o", tmp_path / "r.json")
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and not (tmp_path / "r.json").exists()
