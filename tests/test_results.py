import json

import pytest

import atsdbench
from atsdbench import results
from atsdbench.errors import UsageError


def make(samples=None, **config):
    samples = samples or [{"stride_bytes": 65536, "round": r, "rep": p, "warmup": p == 0, "seconds": 0.01,
                           "calls": 16, "gbps": 0.1 + r, "ns": 10_000_000, "us_per_call": 1.0}
                          for r in range(2) for p in range(3)]
    return results.Result({"hostname": "h", "kernel_release": "6.1"}, {"size": 1 << 20, **config}, samples)


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
    results.save(r, str(tmp_path / "n.json"))
    assert json.loads((tmp_path / "n.json").read_text())["samples"][0]["gbps"] is None


@pytest.mark.parametrize("content,message", [
    ("{not json", "is not JSON"),
    ("[1, 2]", "is not an atsdbench result"),
    ('{"format": "atsdbench-result"}', "has no schema_version"),
    ('{"format": "atsdbench-result", "schema_version": 99, "samples": [], "host": {}, "config": {}}',
     "schema_version 99; this atsdbench reads up to"),
    ('{"format": "atsdbench-result", "schema_version": 1, "samples": [{"gbps": 1}], "host": {}, "config": {}}',
     "sample without the columns"),
])
def test_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=message):
        atsdbench.load(str(path))


def test_missing_file(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        atsdbench.load(str(tmp_path / "nope.json"))


def test_check_writable(tmp_path):
    results.check_writable(str(tmp_path / "ok.json"))
    assert not (tmp_path / "ok.json").exists()
    with pytest.raises(UsageError, match="cannot write output"):
        results.check_writable(str(tmp_path / "missing-dir" / "x.json"))
    with pytest.raises(UsageError, match="is a directory"):
        results.check_writable(str(tmp_path))
