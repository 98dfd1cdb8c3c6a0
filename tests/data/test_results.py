import errno
import json
import os
import stat
import tempfile

import pytest

import atsdbench
from atsdbench import cli
from atsdbench.data import files as outfile, results, schema
from atsdbench.errors import UsageError

CONFIG = {"size": 1 << 20, "strides": [65536], "rounds": 2, "reps": 3, "pages": "base"}


def make(samples=None, **config):
    samples = samples or [{"stride_bytes": 65536, "round": r, "rep": p, "warmup": p == 0, "seconds": 0.01,
                           "calls": 16, "gbps": 0.1 + r, "ns": 10_000_000, "us_per_call": 1.0}
                          for r in range(2) for p in range(3)]
    return results.Result({"hostname": "h", "kernel_release": "6.1"}, {**CONFIG, **config}, samples)


def test_round_trip(tmp_path):
    path = tmp_path / "r.json"
    results.save(make(label="x"), str(path))
    data = json.loads(path.read_text())
    assert data["schema_version"] == results.SCHEMA_VERSION and data["format"] == "atsdbench-result"
    back = atsdbench.load(str(path))
    assert back.config["label"] == "x" and back.host["hostname"] == "h" and back.complete
    frame = back.samples
    for col in ("stride_bytes", "round", "rep", "warmup", "seconds", "calls", "gbps"):
        assert col in frame
    assert frame["warmup"].dtype == bool and len(frame) == 6 and len(back.measured) == 4


def test_nan_is_written_as_null(tmp_path):
    r = make()
    r._records[0]["gbps"] = float("nan")
    r.host["odd"] = {"deep": [float("inf")]}
    results.save(r, str(tmp_path / "n.json"))
    data = json.loads((tmp_path / "n.json").read_text())
    assert data["samples"][0]["gbps"] is None and data["host"]["odd"] == {"deep": [None]}
    assert atsdbench.load(str(tmp_path / "n.json")).samples["gbps"].isna().sum() == 1


def test_every_fixture_loads(fixtures):
    for path in sorted(fixtures.glob("*.json")):
        assert len(atsdbench.load(str(path)).samples) > 0


def test_cells_and_axes_are_accepted(fixtures, tmp_path):
    data = json.loads((fixtures / "small_other.json").read_text())
    data["config"]["axes"] = {"bystanders": [0, 1], "pages": ["base", "thp"]}
    data["config"]["cells"] = [{"bystanders": 0, "pages": "base"}, {"bystanders": 1, "pages": "thp"}]
    for i, s in enumerate(data["samples"]):
        s.update(cell=i % 2, bystanders=i % 2, pages=["base", "thp"][i % 2])
    path = tmp_path / "cells.json"
    path.write_text(json.dumps(data))
    frame = atsdbench.load(str(path)).samples
    assert set(frame["cell"]) == {0, 1} and set(frame["pages"]) == {"base", "thp"}


def _fixture(fixtures):
    return json.loads((fixtures / "before.json").read_text())


def _set(path, value):
    """A mutation: set data[path...] = value (a missing last key is created; DELETE removes it)."""
    def apply(data):
        *parents, last = path
        target = data
        for p in parents:
            target = target[p]
        if value is DELETE:
            del target[last]
        else:
            target[last] = value
    return apply


DELETE = object()
BAD = [  # (mutation, what the one message must say)
    (_set(["samples", 3, "ns"], "12"), "samples[3].ns must be a whole number (got '12')"),
    (_set(["samples", 3, "ns"], None), "samples[3].ns must be a whole number (got None)"),
    (_set(["samples", 3, "ns"], -1), "samples[3].ns must be at least 0 (got -1)"),
    (_set(["samples", 3, "ns"], 1.5), "samples[3].ns must be a whole number (got 1.5)"),
    (_set(["samples", 2, "stride_bytes"], 2 ** 70), "samples[2].stride_bytes must be at most 4611686018427387904"),
    (_set(["samples", 2, "stride_bytes"], 0), "samples[2].stride_bytes must be at least 1"),
    (_set(["samples", 0, "round"], True), "samples[0].round must be a whole number (got True)"),
    (_set(["samples", 0, "calls"], 0), "samples[0].calls must be at least 1 (got 0)"),
    (_set(["samples", 0, "warmup"], "false"), "samples[0].warmup must be true or false"),
    (_set(["samples", 5, "us_per_call"], DELETE), "samples[5] has no us_per_call"),
    (_set(["samples", 7, "gbps"], -2.5), "samples[7].gbps must be more than 0 (got -2.5)"),
    (_set(["samples", 1, "lat_hist"], {"40": 2, "x": 1}), "samples[1].lat_hist has a key 'x'"),
    (_set(["samples", 1, "lat_hist"], {"40": -2}), "samples[1].lat_hist.40 must be at least 1"),
    (_set(["samples", 1, "lat_hist"], {"0": 0}), "samples[1].lat_hist.0 must be at least 1"),
    (_set(["samples", 4, "gbps"], 1e300), "samples[4].gbps must be at most 4.611686018427388e+18"),
    (_set(["samples", 4, "seconds"], 1e300), "samples[4].seconds must be at most"),
    (_set(["samples", 4, "lat_p50_us"], 1e300), "samples[4].lat_p50_us must be at most"),
    (_set(["samples", 1, "lat_hist"], [1, 2]), "samples[1].lat_hist must be an object or null"),
    (_set(["samples", 1, "lat_p99_us"], "slow"), "samples[1].lat_p99_us must be a number or null"),
    (_set(["samples", 1, "tlb_remote_flush"], 1.5), "samples[1].tlb_remote_flush must be a whole number or null"),
    (_set(["samples", 1, "extra"], {"a": 1}), "samples[1].extra must be a number or text or true or false or null"),
    (_set(["samples", 1, "cell"], -1), "samples[1].cell must be at least 0"),
    # counts of events: a pass's total that fell is written null, never a negative count
    (_set(["samples", 2, "ipis"], -3), "samples[2].ipis must be at least 0 (got -3)"),
    (_set(["samples", 2, "flushes"], -7), "samples[2].flushes must be at least 0 (got -7)"),
    (_set(["samples", 2, "full_flushes"], -1), "samples[2].full_flushes must be at least 0 (got -1)"),
    (_set(["samples", 2, "tlb_remote_flush"], -2), "samples[2].tlb_remote_flush must be at least 0"),
    (_set(["samples", 1], [1]), "samples[1] must be an object"),
    (_set(["config", "size"], DELETE), "config has no size"),
    (_set(["config", "rounds"], DELETE), "config has no rounds"),
    (_set(["config", "reps"], DELETE), "config has no reps"),
    (_set(["config", "pages"], DELETE), "config has no pages"),
    (_set(["config", "strides"], DELETE), "config has no strides"),
    (_set(["config", "strides"], []), "config.strides must not be empty"),
    (_set(["config", "strides"], ["64K"]), "config.strides[0] must be a whole number (got '64K')"),
    (_set(["config", "label"], ["a"]), "config.label must be text or null (got ['a'])"),
    (_set(["config", "size"], "1G"), "config.size must be a whole number"),
    (_set(["config", "retouch"], "no"), "config.retouch must be true or false"),
    (_set(["config", "axes"], {"pages": "thp"}), "config.axes.pages must be a list"),
    (_set(["config", "cells"], [{"pages": []}]), "config.cells[0].pages must be"),
    (_set(["config", "round_lag1"], [{"stride_bytes": 65536, "rounds": 5, "lag1": "high"}]),
     "config.round_lag1[0].lag1 must be a number or null"),
    (_set(["samples", 1, "bystander_idle"], "no"), "samples[1].bystander_idle must be true or false"),
    (_set(["samples", 1, "thp_share"], "most"), "samples[1].thp_share must be a number or null"),
    (_set(["config", "adaptive"], {"target": "1%"}), "config.adaptive.target must be a number (got '1%')"),
    (_set(["config", "adaptive"], {"target": 1, "half_widths": [{"stride_bytes": "64K"}]}),
     "config.adaptive.half_widths[0].stride_bytes must be a whole number"),
    (_set(["config", "adaptive"], "yes"), "config.adaptive must be an object or null"),
    (_set(["host", "tlb_single_page_flush_ceiling"], 10 ** 30), "host.tlb_single_page_flush_ceiling must be at most"),
    (_set(["host", "page_size"], 0), "host.page_size must be at least 1"),
    (_set(["host", "kernel_release"], 6), "host.kernel_release must be text or null"),
    (_set(["complete"], "false"), "complete must be true or false (got 'false')"),
    (_set(["complete"], DELETE), "the file has no complete"),
    (_set(["samples"], {}), "samples must be a list"),
    (_set(["host"], []), "host must be an object"),
    (_set(["schema_version"], 0), "schema_version 0 is not a version"),
    (_set(["schema_version"], -1), "schema_version -1 is not a version"),
    (_set(["schema_version"], True), "schema_version True is not a version"),
    (_set(["schema_version"], "1"), "schema_version '1' is not a version"),
    (_set(["schema_version"], 99), "schema_version 99 is newer than"),
    (_set(["schema_version"], DELETE), "has no schema_version"),
    (_set(["format"], "other"), "is not an atsdbench result file"),
]


@pytest.mark.parametrize("mutate,message", BAD, ids=[m for _, m in BAD])
def test_bad_values_name_the_field(fixtures, tmp_path, mutate, message):
    data = _fixture(fixtures)
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=None) as e:
        atsdbench.load(str(path))
    assert message in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)


def test_all_zero_rates_and_one_cell_beyond_cells(fixtures, tmp_path):
    data = _fixture(fixtures)
    for s in data["samples"]:
        s["gbps"] = 0
    path = tmp_path / "zero.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"samples\[0\].gbps must be more than 0"):
        atsdbench.load(str(path))
    data = _fixture(fixtures)
    data["config"]["cells"] = [{"bystanders": 0}]
    data["samples"][4]["cell"] = 1
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"samples\[4\].cell is 1, beyond config.cells \(1\)"):
        atsdbench.load(str(path))


def test_stray_cell_unknown_stride_and_repeated_pass(fixtures, tmp_path, capsys):
    """Each loaded before: a lone "cell" made show print an empty cell table and plot raise; a
    stride outside config.strides or a pass given twice skewed every mean."""
    path = tmp_path / "bad.json"
    cases = [
        (lambda d: d["samples"][5].update(cell=7), r"samples\[5\].cell is 7, but the file has no axes"),
        (lambda d: d["samples"][5].update(cell=0), r"samples\[5\].cell is 0, but the file has no axes"),
        (lambda d: d["samples"][3].update(stride_bytes=3 * 65536), r"samples\[3\].stride_bytes is 196608, not one "
         r"of config.strides"),
        (lambda d: d["samples"].append(dict(d["samples"][6])), rf"samples\[{len(_fixture(fixtures)['samples'])}\] is "
         r"the same pass as samples\[6\] \(round \d+, rep \d+, stride \d+\)"),
    ]
    for mutate, message in cases:
        data = _fixture(fixtures)
        mutate(data)
        path.write_text(json.dumps(data))
        with pytest.raises(UsageError, match=message):
            atsdbench.load(str(path))
        for argv in (["show", str(path)], ["model", str(path)]):
            assert cli.main(argv) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and err.startswith("atsdbench: ")
    # in a file with cells, the same round, rep and stride in two cells are two passes; in one, one
    data = _fixture(fixtures)
    data["config"]["cells"] = [{"bystanders": 0}, {"bystanders": 1}]
    twin = [dict(s, cell=1) for s in data["samples"]]
    data["samples"] = [dict(s, cell=0) for s in data["samples"]] + twin
    path.write_text(json.dumps(data))
    assert len(atsdbench.load(str(path)).samples) == len(data["samples"])
    data["samples"][-1]["cell"] = 0
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"is the same pass as samples\[\d+\] \(.*, cell 0\)"):
        atsdbench.load(str(path))


@pytest.mark.parametrize("content,message", [
    ("{not json", "is not JSON"),
    ("[1, 2]", "is not an atsdbench result"),
    ("[" * 100000, "nested too deeply"),
    ('{"format": "atsdbench-result", "schema_version": 1, "complete": true, "samples": [], "host": {}, '
     '"config": {"size": 1, "strides": [1], "rounds": 1, "reps": 1, "pages": "base"}, "x": NaN}', "NaN is not"),
    ('{"format": "atsdbench-result", "schema_version": 1e999}', "is out of range"),
    ('{"format": "atsdbench-result", "schema_version": ' + "9" * 5000 + "}", "is not JSON"),
])
def test_bad_json(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=message) as e:
        atsdbench.load(str(path))
    assert len(str(e.value)) < 200


def test_long_bad_values_are_cut(fixtures, tmp_path):
    data = _fixture(fixtures)
    data["samples"][0]["ns"] = "x" * 1_000_000
    data["config"]["x" * 10_000] = 1  # unknown config keys are allowed
    path = tmp_path / "long.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError) as e:
        atsdbench.load(str(path))
    assert "samples[0].ns must be a whole number (got 'xxx" in str(e.value)
    assert len(str(e.value)) < len(str(path)) + 120


def test_a_bad_file_through_the_cli_is_one_line(fixtures, tmp_path, capsys):
    data = _fixture(fixtures)
    data["samples"][9]["gbps"] = "fast"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    for argv in (["show", str(path)], ["compare", str(path), str(fixtures / "after.json")]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "samples[9].gbps must be a number or null (got 'fast')" in err


def test_large_file_checks_by_column(fixtures):
    """A 6,000-pass file with histograms: the column check finds the one bad pass near the end."""
    data = _fixture(fixtures)
    one = [dict(s, lat_hist={str(k): 3 for k in range(40, 60)}, lat_p50_us=1.0) for s in data["samples"]]
    copies = 6000 // len(one)
    rounds = max(s["round"] for s in one) + 1
    # each pass its own dicts (the bad count below is set in one), copied by hand: deepcopy took most of the time
    data["samples"] = [dict(s, lat_hist=dict(s["lat_hist"]), round=s["round"] + k * rounds) for k in range(copies)
                       for s in one]
    schema.check(data, "big")
    data["samples"][-3]["lat_hist"]["45"] = 1.5
    with pytest.raises(UsageError, match=rf"samples\[{len(data['samples']) - 3}\].lat_hist.45 must be a whole"):
        schema.check(data, "big")


def test_missing_file(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        atsdbench.load(str(tmp_path / "nope.json"))


# Saving: nothing clobbered, nothing half-written, nothing lost.

def test_check_writable(tmp_path):
    before = os.stat(tmp_path).st_mtime_ns
    outfile.check_writable(str(tmp_path / "ok.json"))
    # probes without creating (and unlinking) anything: two processes checking one name cannot race
    assert os.listdir(tmp_path) == [] and os.stat(tmp_path).st_mtime_ns == before
    with pytest.raises(UsageError, match="cannot write output .*: no directory"):
        outfile.check_writable(str(tmp_path / "missing-dir" / "x.json"))
    with pytest.raises(UsageError, match="is a directory"):
        outfile.check_writable(str(tmp_path))
    with pytest.raises(UsageError, match="the output file name is empty"):
        outfile.check_writable("")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="Not a directory"):
        outfile.check_writable(str(tmp_path / "file" / "x.json"))


@pytest.mark.parametrize("kind", ["fifo", "symlink", "chardev"])
def test_non_regular_outputs_are_refused_and_kept(tmp_path, kind):
    path = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(path)
        word = "a FIFO"
    elif kind == "symlink":
        (tmp_path / "target.json").write_text("keep")
        os.symlink("target.json", path)
        word = "a symbolic link"
    else:
        path = "/dev/null"
        word = "a character device"
    for attempt in (outfile.check_writable, lambda p: results.save(make(), p)):
        with pytest.raises(UsageError, match=f"is {word}, not a regular file: refusing to replace it"):
            attempt(str(path))
    mode = os.lstat(path).st_mode
    assert {"fifo": stat.S_ISFIFO, "symlink": stat.S_ISLNK, "chardev": stat.S_ISCHR}[kind](mode)
    if kind == "symlink":
        assert (tmp_path / "target.json").read_text() == "keep"


def test_unwritable_outputs_say_why(tmp_path, monkeypatch):
    (tmp_path / "old.json").write_text("old")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).endswith("old.json") else real(p, mode))
    with pytest.raises(UsageError, match="cannot write output .*old.json: Permission denied"):
        outfile.check_writable(str(tmp_path / "old.json"))
    monkeypatch.setattr(os, "access", lambda p, mode: False)
    with pytest.raises(UsageError, match="cannot write output .*new.json: Permission denied"):
        outfile.check_writable(str(tmp_path / "new.json"))


def test_save_replaces_a_regular_file_with_the_umask_mode(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old")
    results.save(make(), str(path))
    assert json.loads(path.read_text())["format"] == "atsdbench-result"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~mask
    assert os.listdir(tmp_path) == ["r.json"]


def _fail_fsync(monkeypatch, err=errno.ENOSPC):
    def fsync(fd):
        raise OSError(err, os.strerror(err))
    monkeypatch.setattr(os, "fsync", fsync)


def test_a_failed_save_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    path.write_text("old")
    _fail_fsync(monkeypatch)
    with pytest.raises(OSError, match="No space left on device"):
        results.save(make(), str(path))
    assert os.listdir(tmp_path) == ["r.json"] and path.read_text() == "old"


def test_save_or_rescue_writes_a_rescue_file_and_names_it(tmp_path, monkeypatch):
    rescue_dir = tmp_path / "rescue"
    rescue_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(rescue_dir))
    out = tmp_path / "out"
    out.mkdir()
    r = make()
    def replace(a, b):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(UsageError) as e:
        results.save_or_rescue(r, str(out / "r.json"))
    rescued = [f for f in os.listdir(rescue_dir)]
    assert len(rescued) == 1 and os.listdir(out) == []
    message = str(e.value)
    assert f"cannot write output {out / 'r.json'}: Read-only file system" in message
    assert f"saved to {rescue_dir / rescued[0]} instead" in message and r.path == str(rescue_dir / rescued[0])
    monkeypatch.undo()
    assert len(atsdbench.load(str(rescue_dir / rescued[0])).samples) == 6


def test_save_or_rescue_falls_back_to_stdout(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(outfile, "rescue_folders", lambda: [str(tmp_path / "gone")])
    monkeypatch.setattr(os, "access", lambda p, mode: False)
    with pytest.raises(UsageError, match="Permission denied; no rescue file could be written in .*gone: the result "
                       "was written to stdout above"):
        results.save_or_rescue(make(), str(tmp_path / "r.json"))
    assert json.loads(capsys.readouterr().out)["format"] == "atsdbench-result"


def test_save_or_rescue_returns_the_path_when_all_is_well(tmp_path):
    assert results.save_or_rescue(make(), str(tmp_path / "r.json")) == str(tmp_path / "r.json")


def test_full_disk(tiny_disk, tmp_path, monkeypatch):
    old = tiny_disk / "r.json"
    results.save(make(), str(old))
    before = old.read_text()
    big = make([{"stride_bytes": 65536, "round": 1 + i, "rep": 0, "warmup": False, "seconds": 0.01, "calls": 16,
                 "gbps": 0.1, "ns": 10_000_000, "us_per_call": 1.0} for i in range(2000)])
    with pytest.raises(OSError, match="No space left on device"):
        results.save(big, str(old))
    assert os.listdir(tiny_disk) == ["r.json"] and old.read_text() == before
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(UsageError, match="No space left on device; the result was saved to") as e:
        results.save_or_rescue(big, str(tiny_disk / "new.json"))
    assert os.listdir(tiny_disk) == ["r.json"]
    assert len(atsdbench.load(str(e.value).rsplit(" saved to ", 1)[1].split(" instead")[0]).samples) == 2000


def test_plot_never_leaves_a_truncated_picture(tmp_path, monkeypatch):
    from atsdbench.render import plot

    class Figure:
        def tight_layout(self):
            pass

        def savefig(self, f, format, dpi):
            f.write(b"<svg>half")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OSError):
        plot.save(Figure(), str(tmp_path / "p.svg"))
    assert os.listdir(tmp_path) == []


def test_a_descheduled_thread_makes_the_pass_disturbed():
    from atsdbench.data.results import thread_disturbance

    # (loop ns, CPU ns, involuntary switches) per thread
    calm = thread_disturbance([(1000, 990, 0), (800, 795, 0)], 0, 1000)
    assert not calm["disturbed"] and calm["threads_disturbed"] == 0 and calm["cpu_share"] == 0.99
    assert (calm["thread_ns_min"], calm["thread_ns_max"], calm["preempted"]) == (800, 1000, 0)
    # the second thread ran half of its loop: the pass is disturbed, whatever the first did
    late = thread_disturbance([(1000, 990, 0), (1000, 500, 0)], None, 1000)
    assert late["disturbed"] and late["threads_disturbed"] == 1 and late["cpu_share"] == 0.5
    assert "steal_ticks" not in late
    switched = thread_disturbance([(1000, 990, 0), (900, 899, 2)], 0, 1000)
    assert switched["disturbed"] and switched["preempted"] == 2
    # steal is the first thread's CPU's
    assert thread_disturbance([(1000, 990, 0), (900, 899, 0)], 3, 1000)["disturbed"]


def test_bystander_share_is_a_lower_bound_over_the_pass():
    from atsdbench.data.results import bystander_fields

    # ran the whole 1 ms window, pass 1 ms: the whole pass
    assert bystander_fields([(0, 0)], [(10, 1_000_000)], 1_000_000, 1_000_000)["bystander_share"] == 1.0
    # 2.1 ms of CPU over a 3 ms window around a 1 ms pass: it may have been off the CPU for 0.9 ms of the
    # pass (it ran outside the pass instead), so it surely ran 0.1 ms of it: idle, not 210%
    out = bystander_fields([(0, 0)], [(5, 2_100_000)], 3_000_000, 1_000_000)
    assert abs(out["bystander_share"] - 0.1) < 1e-9 and out["bystander_idle"]
    # the smallest of several bystanders, never below 0
    out = bystander_fields([(0, 0), (0, 0)], [(7, 950_000), (3, 0)], 1_000_000, 1_000_000)
    assert out["bystander_share"] == 0.0 and out["bystander_spins_min"] == 3 and out["bystander_idle"]


# ---- run --verify (schema 4): the verify passes' records, never among the samples ----

def _verify_record(**kw):
    r = {"round": 0, "warmup": False, "op": "madvise", "stride_bytes": 65536, "threads": 1, "invalidator_cpus": [0],
         "checker_cpus": [1], "calls": 16, "checks": 16, "faults": 0, "zeros": 16, "stale": 0, "held": 15, "ns": 9}
    r.update(kw)
    return r


def _with_verify(fixtures, records):
    data = json.loads((fixtures / "before.json").read_text())
    data["schema_version"] = results.SCHEMA_VERSION
    data["config"].update(verify=True, verify_cpus=[0, 1])
    data["verify"] = records
    return data


def test_verify_records_round_trip_and_stay_out_of_the_samples(fixtures, tmp_path):
    data = _with_verify(fixtures, [_verify_record(), _verify_record(stride_bytes=1 << 20, zeros=10, stale=6)])
    r = results.from_dict(data, "v.json")
    assert len(r.verify) == 2 and len(r.records) == len(data["samples"])
    assert "checks" not in r.samples.columns  # no statistic ever sees a verify pass
    results.save(r, str(tmp_path / "v.json"))
    again = results.load(str(tmp_path / "v.json"))
    assert again.verify == r.verify and again.config["verify"] is True
    assert again.stale() == [{"op": "madvise", "stride_bytes": 1 << 20, "invalidator_cpus": [0],
                              "checker_cpus": [1], "stale": 6, "checks": 16}]
    summary = results.verify_summary(again.verify)
    assert (summary["checks"], summary["held"], summary["stale"], summary["passes"]) == (32, 30, 6, 2)


def test_stale_reads_are_summed_per_op_stride_and_cpus():
    recs = [_verify_record(stale=1, zeros=15), _verify_record(round=1, stale=2, zeros=14),
            _verify_record(op="munmap", zeros=0, faults=16), _verify_record(checker_cpus=[2], stale=16, zeros=0)]
    groups = results.stale_groups(recs)
    assert [(g["op"], g["checker_cpus"], g["stale"], g["checks"]) for g in groups] == [
        ("madvise", [1], 3, 32), ("madvise", [2], 16, 16)]
    assert results.stale_groups([_verify_record()]) == []


@pytest.mark.parametrize("change,field", [
    (dict(zeros=15), "verify[0]"),                      # a check that is neither fault, zero nor stale
    (dict(held=17), "verify[0].held"),                  # more held than checked
    (dict(stale=-1), "verify[0].stale"),
    (dict(op=3), "verify[0].op"),
    (dict(checker_cpus="1"), "verify[0].checker_cpus"),
])
def test_a_bad_verify_record_is_one_line_naming_it(fixtures, change, field):
    data = _with_verify(fixtures, [_verify_record(**change)])
    with pytest.raises(UsageError) as e:
        results.from_dict(data, "v.json")
    assert f"v.json: {field}" in str(e.value) and "\n" not in str(e.value)


def test_files_before_verify_have_none(fixtures):
    r = results.load(str(fixtures / "before.json"))
    assert r.verify == [] and r.stale() == [] and "verify" not in r.to_dict()
    assert results.verify_summary(r.verify) is None


def test_a_rate_named_by_the_config_is_checked_at_load(fixtures, tmp_path):
    """config.rate (a workload's loops/s, analysis/scaling.rate_of): its column must hold rates."""
    data = json.loads((fixtures / "sweep.json").read_text())
    data["config"]["rate"] = {"column": "loops_per_s", "unit": "loops/s"}
    for s in data["samples"]:
        s["loops_per_s"] = 5e5
    (tmp_path / "ok.json").write_text(json.dumps(data))
    assert results.load(str(tmp_path / "ok.json")).config["rate"]["unit"] == "loops/s"
    data["samples"][3]["loops_per_s"] = "fast"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"samples\[3\]\.loops_per_s must be a number or null"):
        results.load(str(tmp_path / "bad.json"))
    data["config"]["rate"] = {"column": "loops_per_s"}
    (tmp_path / "nounit.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match="config.rate has no unit"):
        results.load(str(tmp_path / "nounit.json"))


# The sample and config fields (and the top-level ones) the schema checked before the schema history
# was held to name every field: the first versions' plan and pass fields, described in words there.
FIELDS_BEFORE_HISTORY_CHECK = set(
    "adaptive axes bystander_cpus bystander_idle bystander_share bystander_spins_min bystanders calls canary_chase_ns "
    "canary_compute_ns cell cells cpu cpu_reason cpu_share disturbed gap gbps gpu gpu_touch_ns label lat_hist latency "
    "ns op order pages preempted processes rep reps retouch round round_lag1 round_t rounds run runs seconds size "
    "steal_ticks stride_bytes strides tasks thp_share thread_cpus thread_ns_max thread_ns_min threads "
    "threads_disturbed trace_error trace_scope traced us_per_call warmup warmup_rounds complete started finished "
    "host config samples".split())


def test_every_field_the_schema_checks_is_named_in_the_schema_history():
    """A field added to the schema (data/schema.py) has its version note in the format history
    (docs/result-file.md): config.profile and run --placements' fields once had none."""
    import pathlib
    import re

    from atsdbench.data import schema

    fields = set(schema.SAMPLE.fields) | set(schema.CONFIG.fields) | set(schema.TOP.fields)
    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "result-file.md"
    history = page.read_text().split("## Format history", 1)[1]
    unnamed = sorted(f for f in fields - FIELDS_BEFORE_HISTORY_CHECK if not re.search(rf"(?<!\w){f}(?!\w)", history))
    assert not unnamed, unnamed
