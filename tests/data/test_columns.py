"""data/columns.py and the streaming load (results.load): the samples as columns, read a batch at a
time, equal to what the whole-file parse and a dict per pass gave."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from atsdbench.data import columns, inputs, results
from atsdbench.errors import UsageError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")


def _whole(path):
    """The old way: the whole file parsed, a dict per pass."""
    return inputs.read_json(path, "a result file")


def _odd_samples():
    """Passes with what a reader must keep apart: absent and null fields, whole numbers in a column
    with gaps, flags with gaps, text, histograms, unknown columns of mixed or huge values."""
    out = []
    for i in range(40):
        s = {"round": i // 4, "rep": 0, "stride_bytes": 65536 * (1 + i % 4), "warmup": i < 4, "ns": 1000 + i,
             "seconds": 1e-6 * (1000 + i), "calls": 16, "gbps": None if i == 7 else 1.5 + i, "us_per_call": 0.5}
        if i % 3:
            s["thp_share"] = None if i % 5 == 0 else 0.5
        if i % 2:
            s["disturbed"] = i % 4 == 1
        if i > 20:
            s["cell_note"] = "text" if i % 2 else None
            s["ipis"] = i
        if i % 7 == 0:
            s["lat_hist"] = {"40": 3, "41": 1} if i else None
        s["huge"] = 2 ** 70 if i == 30 else i  # beyond int64: an object column, as pandas makes it
        s["mixed"] = ("x" if i < 20 else i) if i % 2 else None
        out.append(s)
    return out


def _write(tmp_path, samples, name="r.json", config=None):
    config = config or {"size": 1 << 30, "strides": [65536, 131072, 196608, 262144], "rounds": 10, "reps": 1,
                        "pages": "base"}
    r = results.Result({"hostname": "h", "kernel_release": "k"}, config, samples, started=0.0, finished=1.0)
    path = str(tmp_path / name)
    results.save(r, path)
    return path


@pytest.fixture(params=[3, 8192], ids=["batch3", "batch8192"])
def batch(request, monkeypatch):
    monkeypatch.setattr(columns, "BATCH", request.param)
    return request.param


@pytest.mark.parametrize("name", ["before.json", "after.json", "single_round.json", "small_other.json"])
def test_fixtures_stream_to_the_columns_of_the_whole_parse(name, batch):
    path = os.path.join(FIXTURES, name)
    data = _whole(path)
    loaded = results.load(path)
    assert isinstance(loaded.columns, columns.Columns) and loaded._records is None
    pd.testing.assert_frame_equal(loaded.columns.frame(), pd.DataFrame.from_records(data["samples"]))
    pd.testing.assert_frame_equal(loaded.samples, results.from_dict(data, path).samples)
    assert list(loaded.records) == data["samples"]


def test_odd_columns_match_a_dict_per_pass(tmp_path, batch):
    samples = _odd_samples()
    path = _write(tmp_path, samples)
    loaded = results.load(path)
    pd.testing.assert_frame_equal(loaded.columns.frame(), pd.DataFrame.from_records(samples))
    assert list(loaded.records) == samples
    assert [loaded.records[i] for i in (0, 7, 30, -1)] == [samples[i] for i in (0, 7, 30, -1)]
    assert loaded.passes() == len(loaded.records) == 40


def test_save_writes_what_json_dumps_wrote(tmp_path, batch):
    """The writer streams a batch at a time; the bytes are those of the one json.dumps it replaced,
    from a run's list and from a loaded file alike (a loaded file's passes give their fields in the
    columns' order, the order they first appear in: the same bytes where every pass has one order)."""
    fixture = _whole(os.path.join(FIXTURES, "before.json"))
    uniform = fixture["samples"]
    for samples in (_odd_samples(), [], uniform):
        path = _write(tmp_path, samples, config=fixture["config"] if samples is uniform else None)
        r = results.load(path)
        old = json.dumps(dict(r.head(), samples=[results._clean(s) for s in samples]), indent=1,
                         allow_nan=False) + "\n"
        with open(path) as f:
            assert f.read() == old
        results.save(r, str(tmp_path / "again.json"))
        with open(tmp_path / "again.json") as f:
            again = f.read()
        assert json.loads(again) == json.loads(old)
        assert samples is not uniform or again == old


def test_a_run_s_records_are_written_as_json_dumps_wrote_them(tmp_path):
    """The writer's flat records go through json's C encoder: its bytes are those of json.dumps with
    indent=1, a NaN or an infinity null, nested values, empty ones and text with the separator in it."""
    inf, nan = float("inf"), float("nan")
    samples = [{"gbps": nan, "ns": 1}, {"gbps": -inf, "lat_hist": {"3": 1}}, {}, {"e": {}, "f": []},
               {"label": "a,\n \"b\": 1", "big": 2 ** 70, "warmup": True, "ipis": None},
               {"xs": [1.5, nan], "y": 1e300}, {"pair": (1, 2), "z": 0}]
    path = _write(tmp_path, samples)
    r = results.Result({"hostname": "h", "kernel_release": "k"}, {}, samples, started=0.0, finished=1.0)
    with open(path) as f:
        written = f.read()
    assert written.split('"samples": ')[1] == json.dumps(
        {"samples": [results._clean(s) for s in samples]}, indent=1, allow_nan=False).split('"samples": ')[1] + "\n"
    assert json.loads(written)["samples"][0] == {"gbps": None, "ns": 1} and r.passes() == 7


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 20])
def test_any_read_size_gives_the_same_load(tmp_path, monkeypatch, chunk):
    """Values cut by the read window (a number in two, a string, a key) are decoded whole."""
    monkeypatch.setattr(inputs, "STREAM_CHUNK", chunk)
    samples = _odd_samples()
    path = _write(tmp_path, samples)
    assert list(results.load(path).records) == samples
    # samples before the config, other white space: any JSON object loads
    data = _whole(path)
    with open(path, "w") as f:
        f.write(json.dumps({"samples": data.pop("samples"), **data}, separators=(",", ":")))
    assert list(results.load(path).records) == samples


def test_sub_runs_from_columns(tmp_path, batch):
    samples = [dict(s, run=s["round"] % 3) for s in _odd_samples() if "cell_note" not in s]
    path = _write(tmp_path, samples)
    parts = results.load(path).sub_runs()
    whole = results.Result({}, {}, samples).sub_runs()
    assert [p.sub_run for p in parts] == [0, 1, 2] == [p.sub_run for p in whole]
    for p, w in zip(parts, whole):
        assert list(p.records) == list(w.records) == [s for s in samples if s["run"] == p.sub_run]


@pytest.mark.parametrize("mutate, message", [
    (lambda ss: ss[25].update(gbps=-1), "samples[25].gbps must be more than 0 (got -1)"),
    (lambda ss: ss.__setitem__(33, 5), "samples[33] must be an object (got 5)"),
    (lambda ss: ss[38].pop("ns"), "samples[38] has no ns"),
    (lambda ss: ss[39].update(stride_bytes=4096), "samples[39].stride_bytes is 4096, not one of config.strides"),
    (lambda ss: ss[37].update(round=ss[12]["round"], stride_bytes=ss[12]["stride_bytes"]),
     "samples[37] is the same pass as samples[12] (round 3, rep 0, stride 65536)"),
])
def test_bad_samples_beyond_the_first_batch_are_named(tmp_path, batch, mutate, message):
    samples = [{k: v for k, v in s.items() if k not in ("huge", "mixed")} for s in _odd_samples()]
    path = _write(tmp_path, samples)
    data = _whole(path)
    mutate(data["samples"])
    with open(path, "w") as f:
        json.dump(data, f)
    with pytest.raises(UsageError) as streamed:
        results.load(path)
    with pytest.raises(UsageError) as whole:
        results.from_dict(_whole(path), path)
    assert str(streamed.value) == str(whole.value) == f"{path}: {message}"


@pytest.mark.parametrize("text", ['{"format": "atsdbench-result", "samples": [{"a": 1}, ', '[1, 2]', '{"samples": [1e999]}',
                                  '{"a": 1} x', '{"samples": [], "samples": []}', '\ufeff{}', '{"a": NaN}'])
def test_what_the_stream_cannot_follow_gets_the_whole_parse_words(tmp_path, text):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(UsageError) as streamed:
        results.load(str(path))
    try:
        results.from_dict(inputs.read_json(str(path), "a result file"), str(path))
    except UsageError as e:
        assert str(streamed.value) == str(e)


@pytest.mark.slow  # 200,000 passes: the load's fixed cost (about 20 MiB) must be small beside them
def test_a_large_file_loads_in_bounded_memory(tmp_path):
    """Loading holds the columns (about 80 bytes a pass here), not the text nor a dict a pass (about 1
    KB a pass before): measured as VmHWM in a fresh interpreter (exec starts a new memory map, so,
    unlike ru_maxrss, it does not inherit this process's high-water mark)."""
    n = 200_000
    strides = [65536, 1048576, 2097152, 4194304]
    rec = ('  {{"round": {r}, "rep": {p}, "order": {j}, "stride_bytes": {s}, "warmup": false, "traced": false, '
           '"ns": 123456789, "seconds": 0.123456789, "calls": 16384, "gbps": 8.69, "us_per_call": 7.53}}')
    body = ",\n".join(rec.format(r=i // 16, p=i % 4, j=(i // 4) % 4, s=strides[(i // 4) % 4]) for i in range(n))
    path, small = tmp_path / "big.json", tmp_path / "small.json"
    head = ('{"format": "atsdbench-result", "schema_version": 3, "complete": true, "host": {}, '
            f'"config": {{"size": 1073741824, "strides": {strides}, "rounds": {n // 16}, "reps": 4, '
            '"pages": "base"},\n "samples": [\n')
    path.write_text(f"{head}{body}\n ]\n}}\n")
    small.write_text(head + body[:body.index("},") + 1] + "\n ]\n}\n")
    size = path.stat().st_size
    child = textwrap.dedent(f"""
        import sys
        import pandas, numpy
        from atsdbench.data import results

        def hwm():
            with open("/proc/self/status") as f:
                return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))

        results.load({str(small)!r}).measured  # the imports (a load of the big file would set the mark)
        base = hwm()
        r = results.load({str(path)!r})
        frame = r.measured
        assert len(frame) == {n}, len(frame)
        print(hwm() - base)
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    grown = int(out.stdout.split()[-1])
    # the columns: 9 of 8 bytes and 2 of 1 a pass, 74 bytes, and a load's fixed cost (its modules, a
    # batch of dicts: about 20 MiB, measured 177 bytes a pass in all here); the text alone is about
    # 190 bytes a pass, and a dict a pass took about 1 KB on top of it
    assert grown / n < 250, (grown, size)


def test_sub_runs_of_stretches_are_views_of_the_file(tmp_path, batch):
    """`run --runs` writes each sub-run's passes together: its part shares the file's columns (a copy
    a sub-run took show of a 10^6-pass --runs file from 231 to 420 MiB) and reads as a copy would."""
    samples = [dict(s, run=i // 13) for i, s in enumerate(_odd_samples())]
    loaded = results.load(_write(tmp_path, samples))
    parts = loaded.sub_runs()
    assert [p.sub_run for p in parts] == [0, 1, 2, 3]
    for p in parts:
        index = np.flatnonzero(loaded.columns.get("run") == p.sub_run)
        copy = loaded.columns.take(index)
        assert list(p.records) == list(copy.records()) == [s for s in samples if s["run"] == p.sub_run]
        assert p.columns.keys() == copy.keys()  # a field none of its passes has is left out, as take does
        for key in p.columns.keys():
            assert np.shares_memory(p.columns.get(key), loaded.columns.get(key)), key
        pd.testing.assert_frame_equal(p.samples, results.Result({}, {}, copy).samples)


def test_same_pass_check_holds_its_memory_to_a_sort_of_one_key():
    """The check for a pass written twice sorts one int64 key: tracemalloc's peak over it stays under
    40 bytes a pass (lexsort and four sorted copies took over 70)."""
    import tracemalloc

    from atsdbench.data import schema

    n, strides = 200_000, [65536, 1 << 20, 2 << 20, 4 << 20]
    cols = columns.Columns({
        "round": columns._Column(np.arange(n, dtype=np.int64) // 16),
        "rep": columns._Column(np.arange(n, dtype=np.int64) % 4),
        "stride_bytes": columns._Column(np.array(strides, dtype=np.int64)[np.arange(n) // 4 % 4]),
    }, n)
    config = {"strides": strides}
    tracemalloc.start()
    try:
        assert schema._placement_problem(config, cols) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * n, peak / n
    cols.get("rep")[n - 3] = cols.get("rep")[n - 7]  # pass n-3 is pass n-7 again (same round and stride)
    cols.get("stride_bytes")[n - 3] = cols.get("stride_bytes")[n - 7]
    assert schema._placement_problem(config, cols) == (
        f".samples[{n - 3}]", f"is the same pass as samples[{n - 7}] (round {(n - 7) // 16}, rep 1, stride 2097152)")


@pytest.mark.parametrize("seed", range(5))
def test_the_one_key_sorts_as_the_tuple_and_gives_way_where_it_cannot(seed, monkeypatch):
    from atsdbench.data import schema

    rng = np.random.default_rng(seed)
    parts = [rng.integers(-3, 4, 500), rng.integers(0, 50, 500), rng.integers(10**6, 10**6 + 3, 500),
             np.full(500, 7)]
    key = schema._pass_key(parts)
    assert (np.argsort(key, kind="stable") == np.lexsort(parts[::-1])).all()
    assert schema._pass_key([np.array([0, 1 << 40]), np.array([0, 1 << 30])]) is None  # 2^70 keys: lexsort
    n = 64
    cols = columns.Columns({"round": columns._Column(rng.integers(0, 2, n) << 40),
                            "rep": columns._Column(rng.integers(0, 1 << 30, n)),
                            "stride_bytes": columns._Column(np.full(n, 4096))}, n)
    cols.get("round")[9], cols.get("rep")[9] = cols.get("round")[3], cols.get("rep")[3]
    found = schema._placement_problem({"strides": [4096]}, cols)
    assert found[0] == ".samples[9]" and "same pass as samples[3]" in found[1]


def test_the_table_readers_take():
    """Result.table: the required fields always there (NaN where the file has none), warmup and traced
    as flags (a pass without traced is not traced); rows() keeps a field none of its passes has, as a
    frame's mask does (take() leaves it out); known() and numbers() read gaps, nulls and text."""
    from atsdbench.data.columns import known, numbers

    samples = [{"stride_bytes": 65536, "round": 0, "rep": 0, "warmup": True, "traced": True, "lat_hist": {"3": 1}},
               {"stride_bytes": 65536, "round": 0, "rep": 1, "warmup": False, "note": "x"},
               {"stride_bytes": 1 << 20, "round": 1, "rep": 0, "warmup": False, "ipis": None}]
    r = results.Result({}, {}, samples)
    t = r.table
    assert np.isnan(t["gbps"]).all() and t["warmup"].tolist() == [True, False, False]
    assert t["traced"].dtype == bool and t["traced"].tolist() == [True, False, False]
    pd.testing.assert_frame_equal(r.samples, t.frame())
    later = t.rows(~t["warmup"])
    assert len(later) == 2 and "lat_hist" in later and "lat_hist" not in r.columns.take(np.array([1, 2]))
    assert known(later["lat_hist"]).tolist() == [False, False]
    assert known(t["ipis"]).tolist() == [False, False, False] and known(t["round"]).all()
    assert np.isnan(numbers(t, "note")).all()  # text, and where absent
    assert numbers(t, "round").tolist() == [0.0, 0.0, 1.0] and np.isnan(numbers(t, "absent")).all()
