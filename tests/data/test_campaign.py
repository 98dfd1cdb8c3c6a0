"""data/campaign: the plan's check, the journal (append-only, damaged files skipped), result names."""
import json
import os
import pathlib

import pytest

from atsdbench.data import campaign as store
from atsdbench.errors import UsageError

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"


def _result(d, name, boot_id, release):
    """A complete result file of boot_id on release at DIR/NAME/BOOT_ID.json (a fixture's copy)."""
    data = json.loads((FIXTURES / "before.json").read_text())
    data["host"].update(boot_id=boot_id, kernel_release=release)
    os.makedirs(os.path.join(d, name), exist_ok=True)
    with open(os.path.join(d, name, f"{boot_id}.json"), "w") as f:
        json.dump(data, f)
    return f"{name}/{boot_id}.json"


def _plan(**changes):
    plan = {"format": store.FORMAT, "version": 1, "kernels": [
        {"name": "a", "image": "/a", "release": "6.1"}, {"name": "b", "image": "/b", "release": "6.12"}],
        "boots": 2, "schedule": "alternate", "method": "manual", "run_options": []}
    plan.update(changes)
    return plan


@pytest.mark.parametrize("changes,message", [
    ({"format": "x"}, "no campaign format"), ({"version": 2}, "version 2"),
    ({"kernels": [{"name": "a", "image": "/a", "release": "6.1"}]}, "fewer than 2"),
    ({"boots": 0}, "boots"), ({"boots": True}, "boots"), ({"schedule": "x"}, "schedule"),
    ({"method": "pxe"}, "method"), ({"runner": "x"}, "runner"), ({"run_options": "--size 1G"}, "run_options"),
    ({"kernels": [{"name": "a/b", "image": "/a", "release": "1"}, {"name": "b", "image": "/b", "release": "2"}]},
     "valid name"),
])
def test_a_damaged_plan_is_one_line(changes, message):
    with pytest.raises(UsageError, match=message):
        store.check_plan(_plan(**changes), "DIR/campaign.json")


def test_the_journal_only_grows_and_skips_what_does_not_parse(tmp_path):
    d = str(tmp_path)
    (tmp_path / "campaign.json").write_text(json.dumps(_plan()))
    store.append_event(d, {"event": "start", "boot_id": "x", "kernel": "a", "file": "a/x.json"})
    store.append_event(d, {"event": "done", "boot_id": "x", "kernel": "a", "file": _result(d, "a", "x", "6.1")})
    names = sorted(os.listdir(tmp_path / "journal"))
    assert names == ["000001-start.json", "000002-done.json"]
    (tmp_path / "journal" / "000003-done.json").write_text('{"event": ')  # a disk that lied
    e = store.append_event(d, {"event": "arranged", "kernel": "b"})
    assert e["seq"] == 4  # never reuses the damaged one's number
    c = store.load(d)
    assert [x["event"] for x in c.events] == ["start", "done", "arranged"]
    assert any("000003-done.json: skipped" in w for w in c.warnings)
    assert (tmp_path / "journal" / "000003-done.json").exists()  # kept as it was
    assert c.counts() == {"a": 1, "b": 0} and c.expected() == "b" and not c.open_starts()
    with pytest.raises(ValueError):
        store.append_event(d, {"event": "bogus"})


def test_a_redone_slot_of_one_boot_takes_a_new_name(tmp_path):
    first = store.free_result_path(str(tmp_path), "a", "id")
    assert first.endswith("a/id.json")
    open(first, "w").close()
    assert store.free_result_path(str(tmp_path), "a", "id").endswith("a/id-2.json")


def test_a_redone_slot_never_meets_the_atsd_record_of_a_slot_before(tmp_path):
    """--runner atsd keeps atsd's own output as BOOT_ID.atsd.txt beside the result, and atsd refuses an
    existing -o file: a slot whose import failed leaves that record alone, and the next takes -2."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "id.atsd.txt").write_text("atsd-output 1\n")
    assert store.free_result_path(str(tmp_path), "a", "id").endswith("a/id-2.json")


def test_not_a_campaign(tmp_path):
    with pytest.raises(UsageError, match="not a campaign directory"):
        store.load(str(tmp_path))
    assert not store.is_campaign(str(tmp_path))


@pytest.mark.parametrize("event,why", [
    ({"event": "done", "boot_id": "y", "kernel": "zz", "file": "zz/y.json"}, "kernel 'zz' is not a kernel of the plan"),
    ({"event": "done", "kernel": "b", "file": "b/y.json"}, "event done without boot_id"),
    ({"event": "done", "boot_id": "y", "kernel": "b"}, "event done without file"),
    ({"event": "done", "boot_id": "y", "kernel": "b", "file": "/etc/passwd"}, "outside the campaign directory"),
    ({"event": "missed", "boot_id": "y", "expected": 3}, "event missed without expected"),
    ({"event": "unfinished", "boot_id": "y", "kernel": "a"}, "event unfinished without why"),
])
def test_an_event_without_what_its_readers_take_is_skipped_not_a_traceback(tmp_path, cli, event, why):
    """A hand-edited (or damaged) journal event: skipped and named, as one that does not parse, so that
    status, step and compare DIR read the rest instead of failing on a missing key."""
    d = str(tmp_path)
    (tmp_path / "campaign.json").write_text(json.dumps(_plan()))
    store.append_event(d, {"event": "done", "boot_id": "x", "kernel": "a", "file": _result(d, "a", "x", "6.1")})
    (tmp_path / "journal" / "000002-done.json").write_text(json.dumps(event))
    c = store.load(d)
    assert [x["boot_id"] for x in c.events] == ["x"] and c.counts() == {"a": 1, "b": 0}
    assert any("000002-done.json: skipped (" in w and why in w for w in c.warnings), c.warnings
    p = cli("campaign", "status", d)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "boots done in order: a" in p.stdout and why in p.stderr


@pytest.mark.parametrize("links", [True, False])
def test_an_event_never_replaces_a_file_with_hard_links_or_without(tmp_path, monkeypatch, links):
    """The writer takes a name no file has: by a hard link, or (a file system without them: vfat, some
    9p) by a look and a rename; a taken name is a FileExistsError, and the journal's next number."""
    import errno

    from atsdbench.data import files

    if not links:
        def no_link(src, dst):
            raise OSError(errno.EPERM, "Operation not permitted")
        monkeypatch.setattr(os, "link", no_link)
    target = tmp_path / "x.json"
    target.write_text("kept")
    with pytest.raises(FileExistsError):
        files.write_atomically(str(target), lambda f: f.write("new"), replace=False)
    assert target.read_text() == "kept" and sorted(os.listdir(tmp_path)) == ["x.json"]  # no temporary left
    files.write_atomically(str(tmp_path / "y.json"), lambda f: f.write("new"), replace=False)
    assert (tmp_path / "y.json").read_text() == "new" and sorted(os.listdir(tmp_path)) == ["x.json", "y.json"]
