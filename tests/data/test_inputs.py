"""data/inputs.py: the bounds on what a reader takes: a value's length and nesting in a result file,
the line reader's line cap."""
import io
import os

import pytest

from atsdbench.data import inputs, results
from atsdbench.errors import UsageError
from support import memory

HEAD = '{"format": "atsdbench-result", "schema_version": 3, "complete": true, "host": {}, "config": {"label": "'


@pytest.mark.slow  # a big input through a process, its memory measured
def test_a_1_gb_string_is_refused_without_taking_gbs(tmp_path):
    """The string's bytes are a hole of the file (no GB on disk): the reader refuses the value at its
    cap (64 MiB), where it grew its window to the whole file before."""
    path = tmp_path / "big.json"
    with open(path, "wb") as f:
        f.write(HEAD.encode())
        f.truncate(inputs.MAX_INPUT - 4096)
    code = f"from atsdbench.data import results; results.load({str(path)!r})"
    _, small = memory.peak(["--version"])
    patch = f"import sys\ntry:\n    {code}\nexcept Exception as e:\n    print(type(e).__name__, e)\nsys.argv[1:] = ['--version']"
    p, used = memory.peak([], limit=small + (768 << 20), patch=patch)
    assert "UsageError" in p.stdout and "over 64 MiB" in p.stdout, (p.stdout, p.stderr)
    assert used - small < 400 << 20, (used, small)


def test_a_long_valid_string_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_VALUE", 1 << 20)
    path = tmp_path / "long.json"
    path.write_text(HEAD + "x" * (3 << 20) + '"}, "samples": []}')
    with pytest.raises(UsageError, match=r"long.json: a JSON value over 1 MiB \(near byte \d+\)"):
        results.load(str(path))


def test_deep_nesting_in_a_large_file_is_one_line_without_a_whole_read(tmp_path, monkeypatch):
    path = tmp_path / "deep.json"
    path.write_text('{"config": ' + "[" * 100_000 + " " * (2 << 20))
    monkeypatch.setattr(inputs, "read_json", None)  # not called: a call would be a TypeError
    with pytest.raises(UsageError, match="deep.json is not a result file \\(JSON nested too deeply\\)"):
        results.load(str(path))


def test_lines_skips_a_line_past_its_cap_and_counts_on():
    skipped = []
    data = b"a\n" + b"x" * 50 + b"\nb\n" + b"y" * 30 + b"\nc"
    f = io.BytesIO(data)
    got = list(inputs.lines(f, "x", max_line=20, too_long=skipped.append))
    assert got == [b"a", b"b", b"c"] and skipped == [2, 4]
    with pytest.raises(UsageError, match="over 0 MiB"):
        list(inputs.lines(io.BytesIO(b"z" * (3 << 20)), "big", limit=1 << 19))


def test_open_stream_takes_a_pipe_and_refuses_a_device(tmp_path):
    r, w = os.pipe()
    os.write(w, b"1\n2\n")
    os.close(w)
    f, name = inputs.open_stream(f"/proc/self/fd/{r}")
    assert f.read() == b"1\n2\n" and name.startswith("/proc")
    f.close()
    os.close(r)
    with pytest.raises(UsageError, match="/dev/zero is a character device, not a regular file"):
        inputs.open_stream("/dev/zero")
