"""data/files.py under faults: full disks, special files, two writers, writers killed mid-write."""
import errno
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import pytest

import atsdbench
from atsdbench.data import files, inputs, results
from atsdbench.errors import UsageError
from conftest import unwrap

def make(n=6, label=None):
    samples = [{"stride_bytes": 65536, "round": i // 3, "rep": i % 3, "warmup": i % 3 == 0, "seconds": 0.01,
                "calls": 16, "gbps": 0.1 + i, "ns": 10_000_000, "us_per_call": 1.0} for i in range(n)]
    return results.Result({"hostname": "h", "kernel_release": "6.1"},
                          {"size": 1 << 20, "strides": [65536], "rounds": 2, "reps": 3, "pages": "base",
                           "label": label}, samples)


@pytest.fixture(autouse=True)
def fresh():
    """Each test searches its folders for leftovers anew."""
    files._searched.clear()


def test_no_usable_temporary_directory_falls_back_to_stdout(full_disk, monkeypatch, capsys):
    """$TMPDIR, /tmp and the current directory on one full disk: gettempdir() itself
    fails, and the result still reaches stdout (the JSON itself), the error naming the output."""
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(tempfile, "_candidate_tempdir_list", lambda: [str(full_disk)])
    monkeypatch.chdir(full_disk)
    with pytest.raises(FileNotFoundError):
        tempfile.gettempdir()  # the fault is real: no usable temporary directory
    with pytest.raises(UsageError, match=f"cannot write output {full_disk}/r.json: No space left on device; "
                       "no rescue file could be written in .*: the result was written to stdout above"):
        results.save_or_rescue(make(), str(full_disk / "r.json"))
    out = capsys.readouterr().out
    assert len(results.from_dict(json.loads(out)).records) == 6
    assert sorted(os.listdir(full_disk)) == ["filler"]


def test_later_leaves_stdout_to_the_caller(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(files, "rescue_folders", lambda: [])
    monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space")))
    with pytest.raises(results.Unsaved) as e:
        results.save_or_rescue(make(), str(tmp_path / "r.json"), later=True)
    assert capsys.readouterr().out == ""
    print("the table")
    with pytest.raises(results.Unsaved):
        results.print_unsaved(e.value)
    table, text = capsys.readouterr().out.split("\n", 1)
    assert table == "the table" and json.loads(text)["format"] == "atsdbench-result"


@pytest.mark.parametrize("writer", ["result", "profile", "picture"])
def test_a_failed_write_names_its_path(tmp_path, monkeypatch, writer):
    """A full disk is said with the path ("No space left on device"), whichever file it was."""
    def fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", fsync)
    from atsdbench.data import noise_profile

    path = str(tmp_path / "out")
    write = {"result": lambda: results.save(make(), path), "profile": lambda: noise_profile.save({"x": 1}, path),
             "picture": lambda: files.write_atomically(path, lambda f: f.write(b"x"), binary=True)}[writer]
    with pytest.raises(OSError) as e:
        write()
    assert e.value.filename == path and e.value.strerror == "No space left on device"
    assert os.listdir(tmp_path) == []


def test_cli_plot_to_a_full_disk_names_the_path(full_disk, fixtures, cli):
    """plot -o FULL/p.png says which file (calibrate --from's profile goes through the same writer)."""
    pytest.importorskip("matplotlib")
    p = cli("plot", fixtures / "before.json", "-o", full_disk / "p.png")
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert f"{full_disk / 'p.png'}: No space left on device" in p.stderr, p.stderr


def test_space_is_checked_before_working(tiny_disk):
    with pytest.raises(UsageError, match=r"cannot write output .*r.json: \d+ KiB free, about "
                       r"1024.0 MiB needed"):
        files.claim(str(tiny_disk / "r.json"), 1 << 30)
    files.claim(str(tiny_disk / "r.json"), 1024)
    files.release(str(tiny_disk / "r.json"))
    assert os.listdir(tiny_disk) == []


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_readers_read_regular_files_only(tmp_path, kind):
    """a FIFO would hang the reader, /dev/zero (through a link) fill the memory."""
    path = tmp_path / "x.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        os.symlink("/dev/zero", path)
    else:
        path.mkdir()
    word = {"fifo": "is a FIFO, not a regular file", "dev_zero": "is a character device, not a regular file",
            "directory": "is a directory"}[kind]
    for read in (lambda: results.load(str(path)), lambda: inputs.read_input(str(path))):
        with pytest.raises(UsageError, match=word):
            read()


def test_readers_stop_at_the_size_bound(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(" " * 2000)
    with pytest.raises(UsageError, match="big.json is over 0 MiB: larger than any file atsdbench reads"):
        inputs.read_json(str(path), "a result file", limit=1000)
    assert inputs.read_bytes(str(path), limit=2000) == b" " * 2000


def test_cli_show_of_special_files_is_one_line(tmp_path, cli):
    os.mkfifo(tmp_path / "f.json")
    for target in ("/dev/zero", str(tmp_path / "f.json")):
        p = cli("show", target)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not a regular file" in p.stderr, p.stderr


HOLD = """
import sys
from atsdbench.data import files
for path in sys.argv[1:]:
    files.claim(path)
print("held", flush=True)
sys.stdin.read()
"""


def test_two_writers_of_one_path(tmp_path, fixtures, cli):
    """while one atsdbench holds an output, a second refuses it (one line, exit 2) and the
    first one's file is what is left; once it is done the path is free again."""
    target = tmp_path / "r.json"
    picture = tmp_path / "p.png"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(target), str(picture)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(UsageError, match=f"output {target} is being written by another atsdbench "
                           fr"\(pid {holder.pid}\)"):
            files.claim(str(target))
        with pytest.raises(UsageError, match="being written by another atsdbench"):
            results.save(make(), str(target))
        assert not target.exists()
        pytest.importorskip("matplotlib")
        p = cli("plot", fixtures / "before.json", "-o", picture)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "being written by another" in p.stderr
    finally:
        holder.communicate("")
    results.save(make(), str(target))  # its lock is gone with it
    assert len(atsdbench.load(str(target)).records) == 6
    assert sorted(os.listdir(tmp_path)) == ["r.json"]


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_two_concurrent_savers_never_lose_one_silently(tmp_path):
    """Two processes saving the same path over and over: each save either wrote the file or said it
    was refused; the file left is one of them, whole."""
    code = """
import sys
from atsdbench.data import results
from atsdbench.errors import UsageError
r = results.Result({"hostname": "h", "kernel_release": "6.1"}, {"size": 1 << 20, "strides": [65536],
    "rounds": 1, "reps": 1, "pages": "base", "label": sys.argv[2]}, [{"stride_bytes": 65536, "round": i,
    "rep": 0, "warmup": False, "seconds": 0.01, "calls": 16, "gbps": 0.1, "ns": 1, "us_per_call": 1.0}
    for i in range(500)])
wrote = refused = 0
for _ in range(30):
    try:
        results.save(r, sys.argv[1])
        wrote += 1
    except UsageError as e:
        assert "being written by another atsdbench" in str(e), e
        refused += 1
print(wrote, refused)
"""
    target = str(tmp_path / "r.json")
    procs = [subprocess.Popen([sys.executable, "-c", code, target, who], stdout=subprocess.PIPE, text=True)
             for who in "ab"]
    counts = [tuple(map(int, p.communicate()[0].split())) for p in procs]
    assert all(p.returncode == 0 for p in procs) and all(w + r == 30 for w, r in counts)
    assert atsdbench.load(target).config["label"] in "ab"
    assert sorted(os.listdir(tmp_path)) == ["r.json"]


KILLED = """
import sys
from atsdbench.data import files, results
big = results.Result({"hostname": "h", "kernel_release": "6.1"}, {"size": 1 << 20, "strides": [65536],
    "rounds": 1, "reps": 1, "pages": "base"}, [{"stride_bytes": 65536, "round": i, "rep": 0, "warmup": False,
    "seconds": 0.01, "calls": 16, "gbps": 0.1, "ns": 1, "us_per_call": 1.0} for i in range(4000)])
text = results._text(big)  # made once: the kills land in the writing, not in json.dumps
results.save(big, sys.argv[1])
print("saved", flush=True)
while True:
    files.write_atomically(sys.argv[1], lambda f: [f.write(text[i:i + 4096]) for i in range(0, len(text), 4096)])
"""


@pytest.mark.parametrize("kills", [2, pytest.param(12, marks=pytest.mark.slow)])  # a process start each
def test_sigkill_during_saves_loses_nothing(tmp_path, kills):
    """a writer SIGKILLed at random moments while it saves, twice (12 times under
    --slow): the target is always a whole file, and the next write to the folder reports every
    temporary file left behind, keeping each under a visible name (a complete one as a result that
    loads)."""
    target = tmp_path / "r.json"
    rng = random.Random(34)
    left = []
    for _ in range(kills):
        child = subprocess.Popen([sys.executable, "-c", KILLED, str(target)], stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "saved\n"
        time.sleep(rng.uniform(0, 0.15))
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert len(atsdbench.load(str(target)).records) == 4000
        files._searched.clear()
        left += files.recover_leftovers(str(tmp_path))
        assert not [n for n in os.listdir(tmp_path) if n.startswith(".atsdbench-")], os.listdir(tmp_path)
    for was, now, complete in left:
        assert os.path.basename(now).startswith("atsdbench-recovered-" if complete else "atsdbench-partial-")
        if complete:
            assert len(atsdbench.load(now).records) == 4000


def test_a_leftover_is_reported_on_the_next_write(tmp_path, capsys):
    whole = tmp_path / ".atsdbench-999999999-abc.tmp"
    whole.write_text(results._text(make(label="lost")))
    half = tmp_path / ".atsdbench-999999999-def.tmp"
    half.write_text(results._text(make())[:100])
    results.save(make(), str(tmp_path / "new.json"))
    err = unwrap(capsys.readouterr().err).splitlines()
    assert len(err) == 2 and all(line.startswith(f"atsdbench: warning: {tmp_path}/.atsdbench-") for line in err)
    assert "a complete file" in err[0] and "atsdbench-recovered-999999999-abc.json" in err[0]
    assert "an incomplete file (100 bytes" in err[1] and "atsdbench-partial-999999999-def.tmp" in err[1]
    assert atsdbench.load(str(tmp_path / "atsdbench-recovered-999999999-abc.json")).config["label"] == "lost"
    assert sorted(os.listdir(tmp_path)) == ["atsdbench-partial-999999999-def.tmp",
                                            "atsdbench-recovered-999999999-abc.json", "new.json"]


def test_a_live_writers_temporary_file_is_left_alone(tmp_path):
    mine = tmp_path / f".atsdbench-{os.getppid()}-abc.tmp"  # a running process's
    mine.write_text("{")
    assert files.recover_leftovers(str(tmp_path)) == [] and mine.exists()
