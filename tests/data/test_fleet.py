"""data/fleet.py: the fleet manifest's check refuses what would put a file outside its board and side."""
import json

import pytest

from atsdbench.data import fleet
from atsdbench.errors import UsageError


def manifest(tmp_path, jobs, sides=("base", "patched")):
    data = fleet.new_manifest("http://lava.example:8000", list(sides))
    data["jobs"] = jobs
    (tmp_path / fleet.MANIFEST).write_text(json.dumps(data))
    return str(tmp_path)


def job(i, side="base", board="qemu01", state="Complete", results=None):
    if results is None:
        results = [f"results/{board}/{side}/{i}-r.json"] if board else []
    return {"id": i, "side": side, "board": board, "state": state, "results": results}


def test_by_board_groups_ended_jobs_with_results(tmp_path):
    d = manifest(tmp_path, [job(1), job(2, "patched"), job(3, board="qemu02"),
                            job(4, board=None, state="submitted")])
    boards = fleet.by_board(d)
    assert list(boards) == ["qemu01", "qemu02"]
    assert boards["qemu01"]["patched"] == [f"{d}/results/qemu01/patched/2-r.json"]


@pytest.mark.parametrize("bad, words", [
    (job(1, side="other"), "side 'other'"),
    (job(1, state="Running"), "state 'Running'"),
    (job(1, board="../x", results=[]), "board '../x'"),
    (job(1, results=["results/qemu02/base/1-r.json"]), "of its own board and side"),
    (job(1, results=["results/qemu01/base/../../../etc.json"]), "of its own board and side"),
    (job(1, results=["results/qemu01/base/.hidden.json"]), "of its own board and side"),
    ({"side": "base", "state": "Complete"}, "no job id"),
])
def test_a_job_that_could_mislead_is_refused(tmp_path, bad, words):
    d = manifest(tmp_path, [bad])
    with pytest.raises(UsageError, match="job 1: .*" + words.replace(".", r"\.").replace("(", r"\(")):
        fleet.load(d)


def test_a_job_listed_twice_is_refused(tmp_path):
    with pytest.raises(UsageError, match="listed twice"):
        fleet.load(manifest(tmp_path, [job(7), job(7, "patched")]))


def test_another_format_or_version_is_refused(tmp_path):
    (tmp_path / fleet.MANIFEST).write_text(json.dumps({"format": "x"}))
    with pytest.raises(UsageError, match="not a fleet manifest"):
        fleet.load(str(tmp_path))
    data = fleet.new_manifest("http://s", ["a", "b"])
    data["version"] = fleet.VERSION + 1
    (tmp_path / fleet.MANIFEST).write_text(json.dumps(data))
    with pytest.raises(UsageError, match="newer atsdbench"):
        fleet.load(str(tmp_path))


@pytest.mark.parametrize("name", ["", ".hidden", "a/b", "a b", "x" * 129])
def test_names_that_cannot_be_folders(name):
    with pytest.raises(UsageError, match="is no folder name"):
        fleet.check_name(name, "side")


def test_sides_must_be_two_and_distinct():
    with pytest.raises(UsageError, match="two or more distinct"):
        fleet.new_manifest("http://s", ["a", "a"])
