"""data/noise_profile: the noise profile's file (build, save, load, its schema check), what it names and is
matched on (host, kernel, plan), the store and the calibrate command it gives."""
import json
import os

import pytest

from atsdbench.data import noise_profile, results
from atsdbench.errors import UsageError
from conftest import unwrap

HOST = {"hostname": "h1", "cpu_model": "Xeon", "arch": "x86_64", "kernel_release": "6.1.0", "kernel_version": "#1 SMP",
        "boot_id": "b-1"}
CONFIG = {"size": 256 << 20, "strides": [65536, 1 << 20], "rounds": 5, "reps": 4, "warmup": 1, "warmup_rounds": 1,
          "pages": "base", "bystanders": 0, "cpu": 1, "latency": False, "retouch": True, "trace": "auto", "gpu": None,
          "ceiling": None, "spread": 0.0, "processes": False, "runs": 8, "gap": 20.0, "label": "x", "seed": 3}
ENTRY = {"within_var": 0.0009, "within_df": 32, "means_var": 0.0025, "means_df": 7, "inv_rounds": 0.2,
         "between_var": 0.0025 - 0.2 * 0.0009, "between_df": 6.1}


def _profile(tmp_path, host=HOST, config=CONFIG, when=1000.0, name="p.json"):
    entries = [{"cell": "", "stride_bytes": s, **ENTRY} for s in config["strides"]]
    data = noise_profile.build(host, config, entries, True, [5] * 8, machine_id="abc", source="cal.run.json", when=when)
    path = str(tmp_path / name)
    noise_profile.save(data, path)
    return path


def _result(host=HOST, config=CONFIG, path="side.json"):
    return results.Result(host, dict(config, runs=1), [], path=path)


def test_a_profile_round_trips_and_names_what_it_measured(tmp_path):
    p = noise_profile.load(_profile(tmp_path))
    assert p.host["machine_id"] == "abc" and p.host["boot_id"] == "b-1" and p.data["date"].startswith("1970-01-01")
    assert "runs" not in p.plan and "seed" not in p.plan and "label" not in p.plan and p.plan["rounds"] == 5
    assert p.entry("", 65536)["within_df"] == 32 and p.entry("", 4096) is None
    assert p.describe() == "p.json (8 sub-runs x 5 rounds, 20 s apart, 1970-01-01 00:16:40 UTC)"
    assert p.mismatch(_result()) is None


@pytest.mark.parametrize("change,level,words", [
    ({"host": {"hostname": "h2"}}, 0, "was measured on host 'h1'"),
    ({"host": {"cpu_model": "EPYC"}}, 0, "(cpu_model)"),
    ({"host": {"kernel_release": "6.12.0"}}, 1, "is of kernel '6.1.0'"),
    ({"host": {"kernel_version": "#2 SMP"}}, 1, "(kernel_version)"),  # a rebuilt kernel keeps its release
    ({"config": {"rounds": 3}}, 2, "rounds 5, side.json 3"),
    ({"config": {"size": 1 << 30}}, 2, "size 256M, side.json 1G"),
    ({"config": {"bystanders": 1}}, 2, "bystanders"),
])
def test_another_host_kernel_or_plan_does_not_match(tmp_path, change, level, words):
    p = noise_profile.load(_profile(tmp_path))
    side = _result(dict(HOST, **change.get("host", {})), dict(CONFIG, **change.get("config", {})))
    found = p.mismatch(side)
    assert found[0] == level and words in found[1]
    # what is not part of the plan's noise does not count
    assert p.mismatch(_result(config=dict(CONFIG, seed=9, label="other", gap=0.0))) is None


@pytest.mark.parametrize("text,words", [
    ("not json", "is not JSON"),
    ('{"format": "atsdbench-result"}', "is not an atsdbench noise profile"),
    ('{"format": "atsdbench-noise-profile", "schema_version": 99}', "schema_version 99 is newer than 1 (upgrade)"),
    ('{"format": "atsdbench-noise-profile", "schema_version": 1}', "has no created"),
])
def test_a_bad_file_is_one_line(tmp_path, text, words):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(UsageError) as e:
        noise_profile.load(str(path))
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("edit,words", [
    (lambda d: d["entries"][0].update(within_df=0), "entries[0].within_df must be at least 1"),
    (lambda d: d["entries"][0].update(stride_bytes=4096), "not one of plan.strides"),
    (lambda d: d["calibration"].update(runs=1), "calibration.runs must be at least 2"),
    (lambda d: d["entries"][0].update(within_var=-1.0), "entries[0].within_var must be at least 0"),
    (lambda d: d["host"].pop("kernel_release"), "host has no kernel_release"),
    # squared in the Satterthwaite combination, 1e160 overflowed every compare
    (lambda d: d["entries"][0].update(means_var=1e160), "entries[0].means_var must be at most"),
    (lambda d: d["entries"][0].update(between_df=1e300), "entries[0].between_df must be at most"),
    (lambda d: d.update(created=-1e300), "created must be at least 0"),
])
def test_a_profile_that_breaks_its_schema_is_refused(tmp_path, edit, words):
    path = _profile(tmp_path)
    data = json.load(open(path))
    edit(data)
    json.dump(data, open(path, "w"))
    with pytest.raises(UsageError, match=words.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        noise_profile.load(path)
    with pytest.raises(UsageError, match="no such file"):
        noise_profile.load(str(tmp_path / "missing.json"))


def test_the_store_follows_xdg_and_finds_the_newest_match(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert noise_profile.store() == str(tmp_path / "xdg" / "atsdbench" / "noise-profiles")
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert noise_profile.store() == str(tmp_path / "home" / ".local" / "share" / "atsdbench" / "noise-profiles")
    folder = tmp_path / "store"
    folder.mkdir()
    old = _profile(folder, when=1000.0, name="old.json")
    new = _profile(folder, when=2000.0, name="new.json")
    _profile(folder, host=dict(HOST, kernel_release="6.12.0"), when=3000.0, name="other-kernel.json")
    (folder / "broken.json").write_text("{")
    (folder / "cal.run.json").write_text("{}")  # a calibration's result file, not a profile
    found = noise_profile.stored(str(folder))
    assert [p.name for p in found] == ["other-kernel.json", "new.json", "old.json"]
    assert noise_profile.find(_result(), found).path == new
    assert noise_profile.assign({0: _result()}, [], noise_profile.Store(str(folder)))[0].path == new
    assert noise_profile.assign({0: _result()}, []) == {}
    given = noise_profile.load(old)
    assert noise_profile.assign({0: _result()}, [given], noise_profile.Store(str(folder)))[0].path == old  # given wins
    path = noise_profile.default_path(HOST, noise_profile.plan_of(CONFIG), 0)
    assert os.path.basename(path).startswith("h1-6.1.0-") and path.endswith(".json")
    assert noise_profile.result_path("a/p.json") == "a/p.run.json"


def test_an_explicit_profile_must_describe_a_side(tmp_path):
    other = noise_profile.load(_profile(tmp_path, host=dict(HOST, kernel_release="6.12.0"), name="k2.json"))
    mine = noise_profile.load(_profile(tmp_path))
    sides = {0: _result(path="a.json"), 1: _result(dict(HOST, kernel_release="5.4"), path="b.json")}
    with pytest.raises(UsageError, match=r"--noise-profile .*k2.json is of kernel '6.12.0' \(kernel_release\), a.json "
                                         r"'6.1.0': it describes no side"):
        noise_profile.assign(sides, [other])
    plan = noise_profile.load(_profile(tmp_path, config=dict(CONFIG, rounds=10), name="r10.json"))
    with pytest.raises(UsageError, match="is of another plan: rounds 10, a.json 5"):  # the closest side's reason
        noise_profile.assign(sides, [plan])
    with pytest.raises(UsageError, match="both describe .*: one per kernel"):
        noise_profile.assign(sides, [mine, mine])
    assert noise_profile.assign(sides, [mine]) == {0: mine}


def test_the_calibrate_command_repeats_the_plan():
    words = noise_profile.calibrate_command(dict(CONFIG, latency=True, retouch=False, trace="off"))
    assert words.startswith("atsdbench calibrate --size 256M --strides 64K,1M --rounds 5 --reps 4 --warmup 1 "
                            "--warmup-rounds 1 --pages base --bystanders 0 --cpu 1 --latency --no-retouch --no-trace")
    axes = dict(CONFIG, axes={"bystanders": [0, 1], "ceiling": [None, 33]}, cells=[{}])
    assert "--bystanders 0,1" in noise_profile.calibrate_command(axes) and "--ceiling kernel,33" in \
        noise_profile.calibrate_command(axes)


def test_special_files_in_the_store_are_skipped_without_hanging(tmp_path):
    """a FIFO named x.json hung every compare, a link to /dev/zero read until the OOM killer."""
    folder = tmp_path / "store"
    folder.mkdir()
    good = _profile(folder, name="good.json")
    os.mkfifo(folder / "x.json")
    os.symlink("/dev/zero", folder / "zero.json")
    broken = []
    assert [p.path for p in noise_profile.stored(str(folder), broken)] == [good]
    assert sorted(os.path.basename(p) for p, _, _ in broken) == ["x.json", "zero.json"]
    assert all("not a regular file" in why for _, why, _ in broken)


def test_a_corrupt_matching_profile_is_reported(tmp_path):
    """a broken profile a side would have used is said, not skipped silently; a broken
    one of another host is not the side's business."""
    folder = tmp_path / "store"
    folder.mkdir()
    named = os.path.basename(noise_profile.default_path(HOST, noise_profile.plan_of(CONFIG), 0))
    (folder / named).write_text('{"format": "atsdbench-noise-')  # by its name: this side's
    path = _profile(folder, name="renamed.json")  # by its host and kernel: this side's, its variance absurd
    data = json.load(open(path))
    data["entries"][0]["means_var"] = 1e160
    json.dump(data, open(path, "w"))
    other = _profile(folder, host=dict(HOST, hostname="h2"), name="other.json")
    data = json.load(open(other))
    data["entries"][0]["within_df"] = 0
    json.dump(data, open(other, "w"))
    warnings = []
    assert noise_profile.assign({0: _result()}, [], noise_profile.Store(str(folder)), warnings=warnings) == {}
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith(f"{folder / named} is not JSON") and "may be side.json's; not used" in warnings[0]
    assert warnings[1].startswith(f"{path}: entries[0].means_var must be at most")


def test_compare_reports_a_corrupt_matching_profile(tmp_path, fixtures, cli):
    """Through the command line: one warning line naming the profile, the compare still made."""
    side = json.load(open(fixtures / "before.json"))
    folder = tmp_path / "xdg" / "atsdbench" / "noise-profiles"
    folder.mkdir(parents=True)
    path = _profile(folder, host=dict(side["host"]), config=dict(side["config"]), name="cal.json")
    data = json.load(open(path))
    data["entries"][0]["means_var"] = 1e160
    json.dump(data, open(path, "w"))
    p = cli("compare", str(fixtures / "before.json"), str(fixtures / "after.json"),
            env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")})
    assert p.returncode == 0, p.stderr
    lines = [line for line in unwrap(p.stderr).splitlines() if "cal.json" in line]
    assert len(lines) == 1 and "means_var must be at most" in lines[0] and "Traceback" not in p.stderr


def test_a_profile_of_one_op_or_thread_count_is_not_another_s(tmp_path):
    old = noise_profile.load(_profile(tmp_path))  # a config from before --op and --threads: mprotect, 1 thread
    assert noise_profile.assign({0: _result(config=dict(CONFIG, op="mprotect", threads=1))}, [old]) == {0: old}
    for key, value, text in (("op", "madvise", "op 'mprotect', a.json 'madvise'"),
                              ("threads", 2, "threads 1, a.json 2")):
        with pytest.raises(UsageError, match=f"is of another plan: {text}"):
            noise_profile.assign({0: _result(config=dict(CONFIG, **{key: value}), path="a.json")}, [old])
    words = noise_profile.calibrate_command(dict(CONFIG, op="munmap", threads=2, tasks="threads"))
    assert "--op munmap" in words and "--threads 2" in words and "--tasks" not in words


def test_a_profile_of_one_placement_or_node_is_not_another_s(tmp_path):
    """run --placements K measures another level and spread (docs/methodology.md#placement): a profile of
    one-region rounds does not stand for a file of K regions, nor one of another --mem-node."""
    old = noise_profile.load(_profile(tmp_path))  # a config from before --placements and --mem-node
    assert noise_profile.assign({0: _result(config=dict(CONFIG, placements=1, mem_node=None))}, [old]) == {0: old}
    for key, value, text in (("placements", 4, "placements 1, a.json 4"), ("mem_node", 0, "mem_node None, a.json 0")):
        with pytest.raises(UsageError, match=f"is of another plan: {text}"):
            noise_profile.assign({0: _result(config=dict(CONFIG, **{key: value}), path="a.json")}, [old])
    words = noise_profile.calibrate_command(dict(CONFIG, placements=4, mem_node=0))
    assert "--placements 4" in words and "--mem-node 0" in words
    assert "--placements" not in noise_profile.calibrate_command(dict(CONFIG, placements=1, mem_node=None))
