"""data/lava_log.py: result files read back out of a LAVA job's log, as lava-run's output.yaml keeps it
(one `- {"dt", "lvl", "msg"}` a line) and as a plain console; damage on the serial line is caught."""
import base64
import gzip
import hashlib
import json

import subprocess
import sys
import zlib

import pytest

import atsdbench

from atsdbench.data import lava_log
from support import memory


def _block(name, raw, chunk=76):
    body = base64.b64encode(gzip.compress(raw)).decode()
    lines = [body[i:i + chunk] for i in range(0, len(body), chunk)]
    return [f"+ echo ATSDBENCH-RESULT-BEGIN {name} {len(raw)}", f"ATSDBENCH-RESULT-BEGIN {name} {len(raw)}",
            *lines, f"ATSDBENCH-RESULT-END {name} {hashlib.sha256(raw).hexdigest()}"]


def _yaml(lines):
    return "\n".join('- {"dt": "2026-12-04T20:00:00.000000", "lvl": "target", "msg": %s}' % json.dumps(line)
                     for line in lines)


def test_a_result_is_read_from_lava_s_log_and_from_a_console(fixtures):
    raw = (fixtures / "before.json").read_bytes()
    lines = ["<LAVA_SIGNAL_STARTRUN 0_atsdbench uuid>", *_block("a", raw), "done"]
    for text in (_yaml(lines), "\r\n".join(lines)):
        found, problems = lava_log.extract(text)
        assert found == [("a", raw)] and problems == []


def _log(tmp_path, lines, name="output.yaml"):
    log = tmp_path / name
    log.write_text(_yaml(lines))
    return log


def test_damage_on_the_line_leaves_that_result_out_and_says_so(fixtures, tmp_path, cli):
    raw = (fixtures / "before.json").read_bytes()
    good, bad, cut = _block("good", raw), _block("bad", raw), _block("cut", raw)
    bad[3] = bad[3][:10] + ("A" if bad[3][10] != "A" else "B") + bad[3][11:]  # one character changed
    found, problems = lava_log.extract("\n".join(good + bad + cut[:-1]))
    assert [n for n, _ in found] == ["good"]
    assert any("bad in the log is left out: damaged" in p for p in problems)
    assert any("cut in the log" in p and "end marker is missing" in p for p in problems)
    p = cli("import", "--lava-log", _log(tmp_path, good + bad), "-o", tmp_path / "out")
    assert p.returncode == 2 and "1 result(s) left out" in p.stderr.splitlines()[-1]
    assert [x.name for x in (tmp_path / "out").iterdir()] == ["good.json"]
    assert atsdbench.load(str(tmp_path / "out" / "good.json")).config["label"] == "Before"


def _begin_damaged(line):
    return lava_log.extract("\n".join([line] + _block("x", b"{}")[2:]))[1]


@pytest.mark.parametrize("line, why", [
    ("\x1b[0mATSDBENCH-RESULT-BEGIN x 2", "serial noise before its marker"),
    ("ATSDBENCH-RESULT-BEGIN x 2\x07junk", "serial noise after its size"),
    ("ATSDBENCH-RESULT-BEGXN x 2", "a mangled byte in its marker"),
    ("ATSDBENCH-RESULT-BEGIN two words 2", "its name holds a space"),
    ("ATSDBENCH-RESULT-BEGIN a/b 2", "its name holds '/'"),
    ("ATSDBENCH-RESULT-BEGIN " + "n" * 201 + " 2", "its name is over 200 characters"),
    ("ATSDBENCH-RESULT-BEGIN x 1234567890123", "its size has over 12 digits"),
    ("ATSDBENCH-RESULT-BEGIN .atsdbench-lock-foo 2", "its name begins with '.'"),
])
def test_a_damaged_begin_line_is_named_with_its_reason(line, why):
    problems = _begin_damaged(line)
    assert len(problems) == 1 and why in problems[0] and "begin marker" in problems[0], problems
    assert all(len(p) < 200 for p in problems)


def test_each_reason_is_said_and_the_exit_is_2_where_none_survives(tmp_path, cli):
    future = json.dumps({"format": "atsdbench-result", "schema_version": 99}).encode()
    blocks = [_block("future", future), _block("notjson", b"not json at all"), _block("digest", b"{}")]
    blocks[2][-1] = blocks[2][-1][:-1] + ("0" if blocks[2][-1][-1] != "0" else "1")
    trunc = _block("trunc", b"x" * 1000)
    trunc[2] = trunc[2][:-1]  # a base64 line cut by one character
    ended = _block("ended", b"{}")
    ended[-1] = "ATSDBENCH-RESULT-ENX ended " + ended[-1].rsplit(" ", 1)[1]
    lines = [line for b in blocks + [trunc, ended] for line in b] + _block("cut", b"{}")[:-1]
    p = cli("import", "--lava-log", _log(tmp_path, lines), "-o", tmp_path / "out")
    err = p.stderr.replace("\n  ", " ")  # warnings wrapped to 100 columns, each line indented
    assert p.returncode == 2 and "6 result(s) left out" in err.splitlines()[-1] and "Traceback" not in err
    for name, why in (("future", "schema_version 99 is newer"), ("notjson", "not JSON"),
                      ("digest", "its digest differs"), ("trunc", "its base64 is cut short"),
                      ("ended", "its end marker: a mangled byte"), ("cut", "the job was cut off")):
        assert f"result {name} in the log is left out" in err and why in err, (name, err)
    assert "ended" not in [line for line in err.splitlines() if "cut off" in line][0]
    assert not list((tmp_path / "out").iterdir())


def test_a_log_without_a_whole_result_is_one_line(tmp_path, cli):
    log = tmp_path / "log.txt"
    log.write_text("no markers here\n")
    p = cli("import", "--lava-log", log)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "no atsdbench result" in p.stderr
    p = cli("import", "--lava-log", tmp_path / "gone.yaml")
    assert p.returncode == 2 and "no such file" in p.stderr
    p = cli("import", "--lava-log", "/dev/zero")
    assert p.returncode == 2 and "not a regular file" in p.stderr
    p = cli("import", "--lava-log", log, "-o", "")
    assert p.returncode == 2 and "empty" in p.stderr


def test_import_lava_log_writes_each_result_and_never_a_second_copy(fixtures, tmp_path, cli):
    raw = (fixtures / "before.json").read_bytes()
    other = (fixtures / "after.json").read_bytes()
    log = _log(tmp_path, _block("atsdbench-h-6.1-x", raw) + _block("atsdbench-h-6.1-x", raw)
               + _block("atsdbench-h-6.1-x", other))
    p = cli("import", "--lava-log", log, "-o", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in (tmp_path / "out").iterdir()) == ["atsdbench-h-6.1-x-2.json", "atsdbench-h-6.1-x.json"]
    assert (tmp_path / "out" / "atsdbench-h-6.1-x.json").read_bytes() == raw  # byte for byte as the device wrote it
    assert "already in" in p.stderr and "not written again" in p.stderr
    p = cli("import", "--lava-log", log, "-o", tmp_path / "out")  # the same log again: nothing new
    assert p.returncode == 0 and p.stderr.count("not written again") == 3, p.stderr
    assert len(list((tmp_path / "out").iterdir())) == 2


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_stdin_and_a_pipe_are_read(fixtures, tmp_path, cli_process):
    raw = (fixtures / "before.json").read_bytes()
    text = _yaml(_block("piped", raw))
    p = cli_process("import", "--lava-log", "-", "-o", tmp_path / "a", stdin=text)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "a" / "piped.json").read_bytes() == raw
    gz = tmp_path / "job.log.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    p = subprocess.run(["bash", "-c", f'"$0" -m atsdbench import --lava-log <(zcat {gz}) -o {tmp_path / "b"}',
                        sys.executable], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "b" / "piped.json").read_bytes() == raw


def test_a_result_named_as_atsdbench_s_own_files_is_refused(fixtures, tmp_path, cli):
    raw = (fixtures / "before.json").read_bytes()
    p = cli("import", "--lava-log", _log(tmp_path, _block(".atsdbench-lock-foo", raw) + _block("kept", raw[:-1] + b" ")),
            "-o", tmp_path / "out")
    assert p.returncode == 2 and "begins with '.'" in p.stderr
    assert [x.name for x in (tmp_path / "out").iterdir()] == ["kept.json"]


def _bomb(name, inflated, claim):
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    zero = bytes(1 << 20)
    body = b"".join(z.compress(zero) for _ in range(inflated >> 20)) + z.flush()
    text = base64.b64encode(body).decode()
    return [f"ATSDBENCH-RESULT-BEGIN {name} {claim}", *(text[i:i + 76] for i in range(0, len(text), 76)),
            f"ATSDBENCH-RESULT-END {name} {'0' * 64}"]


@pytest.mark.slow  # a big input through a process, its memory measured
def test_a_gzip_bomb_is_named_and_the_others_kept_in_bounded_memory(fixtures, tmp_path):
    """The inflated size is capped whatever the begin marker claims (here the cap is 8 MiB for the
    test, 1 GiB in use), and at what it claims: 64 MiB of zeros are inflated no further, into a
    temporary file, never into memory."""
    raw = (fixtures / "before.json").read_bytes()
    log = tmp_path / "job.log"
    log.write_text("\n".join(_block("first", raw) + _bomb("claims", 64 << 20, 999999999999)
                             + _bomb("bomb", 64 << 20, 4 << 20) + _block("last", (fixtures / "after.json").read_bytes())))
    patch = "from atsdbench.data import lava_log; lava_log.MAX_RESULT = 8 << 20"
    _, small = memory.peak(["import", "--lava-log", "-", "-o", tmp_path / "base"], feed=f"head -n 3 {log}")
    p, used = memory.peak(["import", "--lava-log", log, "-o", tmp_path / "out"], patch=patch)
    err = p.stderr.replace("\n  ", " ")
    assert p.returncode == 2 and "Traceback" not in err, err
    assert "result claims in the log is left out: damaged (it claims 999999999999 bytes, over the" in err
    assert "result bomb in the log is left out: damaged (it inflates past the 4194304 bytes its begin marker says" in err
    assert sorted(x.name for x in (tmp_path / "out").iterdir()) == ["first.json", "last.json"]
    assert used - small < 32 << 20, (used, small)


def test_a_full_folder_is_one_line(fixtures, tmp_path, monkeypatch, cli):
    import tempfile

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    p = cli("import", "--lava-log", _log(tmp_path, _block("a", b"{}")), "-o", tmp_path / "out")
    assert p.returncode == 2 and p.stderr.endswith(f"cannot write a temporary file in {tmp_path / 'out'}: "
                                                   "No space left on device\n"), p.stderr
    p = cli("import", "--lava-log", tmp_path / "gone.log", "-o", tmp_path / "new")
    assert p.returncode == 2 and not (tmp_path / "new").exists()  # no folder made for a log that is not there


@pytest.mark.slow  # a big input through a process, its memory measured
def test_a_stream_without_newlines_is_read_in_bounded_memory(tmp_path):
    """/dev/zero through a pipe: one endless line, named and skipped, the memory one chunk's."""
    _, small = memory.peak(["import", "--lava-log", "-", "-o", tmp_path], feed="printf 'x\\n'")
    p, used = memory.peak(["import", "--lava-log", "-", "-o", tmp_path], feed="head -c 128M /dev/zero")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "1 line(s) over 1 MiB skipped (the first: line 1)" in p.stderr
    assert used - small < 32 << 20, (used, small)


@pytest.mark.slow  # 64 MiB of console lines, a line at a time in Python
def test_a_long_console_log_is_read_in_bounded_memory(fixtures, tmp_path):
    _, small = memory.peak(["import", "--lava-log", "-", "-o", tmp_path], feed="printf 'x\\n'")
    raw = (fixtures / "before.json").read_bytes()
    block = tmp_path / "block.txt"
    block.write_text("\n".join(_block("kept", raw)) + "\n")
    p, used = memory.peak(["import", "--lava-log", "-", "-o", tmp_path / "many"],
                          feed=f'{{ cat {block}; yes "[ 12.345] kernel: a console line" | head -c 64M; cat {block}; }}')
    # the warning is wrapped at 100 columns around a temporary path of any length: words, not lines
    assert p.returncode == 0 and " ".join(p.stderr.split()).count("not written again") == 1, p.stderr
    assert used - small < 32 << 20, (used, small)
