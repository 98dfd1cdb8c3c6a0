"""The journal against what fools it: stray and foreign files in journal/, done events that name a
file twice, another kernel's file, a file swapped or gone, a recovery written after later boots, a
full disk; and what status says then (docs/lab.md, "What the fold holds")."""
import json
import os

import pytest

from atsdbench.campaign import actions, step as steps, unit
from atsdbench.data import campaign as store
from atsdbench.errors import UsageError

import campaign_fakes as fakes
from conftest import unwrap

BANNERS = {"old": fakes.A_BANNER, "new": fakes.B_BANNER}


class World:
    """A campaign of old and new (2 boots each), booted and stepped by hand."""

    def __init__(self, root, boots=2):
        self.root, self.dir, self.proc = root, str(root / "c"), str(root / "proc")
        images = {n: fakes.bzimage(root / f"vmlinuz-{n}", b) for n, b in BANNERS.items()}
        fakes.plan(self.dir, [(n, BANNERS[n], images[n]) for n in ("old", "new")], boots=boots)
        self.runner, self.method, self.lines, self.n = fakes.Runner(self.proc), fakes.Method(), [], 0

    def boot(self, name=None):
        name = name or (self.method.arranged[-1] if self.method.arranged else "old")
        self.n += 1
        fakes.proc(self.proc, f"{self.n:08d}-0000-4000-8000-000000000000", BANNERS[name])

    def step(self, runner=None):
        return steps.Step(self.dir, self.method, proc=self.proc, runner=runner or self.runner,
                          out=self.lines.append)()

    def run(self, boots):
        """Boot what was arranged and step, `boots` times."""
        for _ in range(boots):
            self.boot()
            self.step()

    def journal(self, *names):
        return os.path.join(self.dir, "journal", *names)

    def events(self, kind):
        return sorted(n for n in os.listdir(self.journal()) if n.endswith(f"-{kind}.json"))

    def forge(self, event):
        """An event file written by hand, numbered after the last."""
        seq = max(int(n.split("-")[0]) for n in os.listdir(self.journal()) if n[:1].isdigit()) + 1
        with open(self.journal(f"{seq:06d}-{event['event']}.json"), "w") as f:
            json.dump(event, f)


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


# ---- numbering ----

def test_a_stray_numbered_file_neither_shadows_nor_exhausts_the_numbering(world, cli):
    world.boot()
    world.step()
    with open(world.journal("999999-junk.txt"), "w") as f:
        f.write("x")
    world.run(3)
    c = store.load(world.dir)
    assert c.complete and [e["kernel"] for e in c.done] == ["old", "new", "old", "new"]
    assert max(e["seq"] for e in c.events) < 100  # numbered on from the events, not from the stray
    assert os.path.exists(world.journal("999999-junk.txt"))  # named, never deleted
    r = cli("campaign", "status", world.dir)
    assert "999999-junk.txt: ignored (not a journal event's name" in unwrap(r.stderr), r.stderr
    assert "is complete" in r.stdout


def test_numbering_goes_on_past_six_digits_and_is_read(world):
    world.boot()
    world.step()
    with open(world.journal(world.events("arranged")[-1])) as f:
        arranged = json.load(f)
    with open(world.journal("999999-arranged.json"), "w") as f:  # a foreign event of the last number
        json.dump(arranged, f)
    e = store.append_event(world.dir, {"event": "arranged", "kernel": "old", "time": 1})
    assert e["seq"] == 1000000 and os.path.exists(world.journal("1000000-arranged.json"))
    c = store.load(world.dir)
    assert c.events[-1]["seq"] == 1000000 and c.expected() == "old"


def test_an_event_is_never_replaced_even_where_the_number_looks_free(world, monkeypatch):
    world.boot()
    world.step()
    before = {n: open(world.journal(n)).read() for n in os.listdir(world.journal())}
    real = os.listdir

    blind_once = [True]

    def blind(path="."):  # the writer's first look sees an empty journal (a foreign writer raced it)
        if os.path.abspath(path) == world.journal() and blind_once[0]:
            blind_once[0] = False
            return []
        return real(path)
    monkeypatch.setattr(os, "listdir", blind)
    e = store.append_event(world.dir, {"event": "arranged", "kernel": "old", "time": 2})
    monkeypatch.undo()
    assert {n: open(world.journal(n)).read() for n in before} == before
    assert e["seq"] not in [int(n[:6]) for n in before]
    assert len(os.listdir(world.journal())) == len(before) + 1


# ---- done events checked against their files ----

def _two_boots(world):
    world.run(2)
    c = store.load(world.dir)
    assert [e["kernel"] for e in c.done] == ["old", "new"]
    return c


def test_two_done_events_naming_one_file_count_once(world, cli):
    c = _two_boots(world)
    old = dict(c.done[0], boot_id="ffffffff-0000-4000-8000-000000000000", time=5)
    world.forge({k: v for k, v in old.items() if k != "seq"})
    c = store.load(world.dir)
    assert c.counts() == {"old": 1, "new": 1}
    assert any("000007-done.json: not counted (" in w for w in c.warnings), c.warnings
    r = cli("compare", world.dir)
    assert r.returncode == 0 and "A = old: boot_ids 00000001\n" in r.stdout, r.stdout


def test_a_done_of_one_kernel_naming_the_other_s_file_is_refused(world):
    c = _two_boots(world)
    crossed = dict(c.done[0], kernel="new", boot_id="eeeeeeee-0000-4000-8000-000000000000")
    crossed.pop("seq")
    world.forge(crossed)
    c = store.load(world.dir)
    assert c.counts() == {"old": 1, "new": 1}
    assert any("not in new's folder" in w for w in c.warnings), c.warnings
    paths = dict(store.sides(world.dir)[1])
    assert all(p.startswith(os.path.join(world.dir, "new")) for p in paths["new"])


def _without_digests(world):
    """The done events as a journal written before they recorded their file's sha256."""
    for n in world.events("done"):
        with open(world.journal(n)) as f:
            e = json.load(f)
        e.pop("sha256", None)
        with open(world.journal(n), "w") as f:
            json.dump(e, f)


@pytest.mark.parametrize("how", ["another run's result", "edited", "another run's, no digest"])
def test_a_swapped_result_is_not_counted_and_its_slot_is_measured_again(world, cli, how):
    c = _two_boots(world)
    if how.endswith("no digest"):
        _without_digests(world)
    target = os.path.join(world.dir, c.done[0]["file"])
    data = json.load(open(target))
    if how.startswith("another run's"):
        data["host"]["boot_id"] = "dddddddd-0000-4000-8000-000000000000"
    else:
        data["host"]["hostname"] = "elsewhere"
    with open(target, "w") as f:
        json.dump(data, f)
    c = store.load(world.dir)
    assert c.counts() == {"old": 0, "new": 1} and not c.complete
    why = "ran in boot dddddddd" if how.endswith("no digest") else "is not the file it recorded"
    assert any(why in w and "open again" in w for w in c.warnings), c.warnings
    r = cli("campaign", "status", world.dir)
    assert "not counted: old in boot" in r.stdout and "next: old" in r.stdout, r.stdout
    world.run(3)
    c = store.load(world.dir)
    assert c.complete and c.counts() == {"old": 2, "new": 2}
    assert os.path.join(world.dir, c.done[0]["file"]) != target


def test_one_file_under_two_done_events_counts_once_where_nothing_else_tells_them_apart(world):
    c = _two_boots(world)
    _without_digests(world)
    target = os.path.join(world.dir, c.done[0]["file"])
    data = json.load(open(target))
    del data["host"]["boot_id"]  # an older result, which named no boot
    with open(target, "w") as f:
        json.dump(data, f)
    second = {k: v for k, v in c.done[0].items() if k not in ("seq", "sha256")}
    world.forge(dict(second, boot_id="bbbbbbbb-0000-4000-8000-000000000000"))
    c = store.load(world.dir)
    assert c.counts() == {"old": 1, "new": 1}
    assert any("not counted (its file is counted under" in w and "000002-done.json already" in w
               for w in c.warnings), c.warnings


def test_a_done_whose_file_is_gone_reopens_its_slot(world, cli):
    world.run(4)
    c = store.load(world.dir)
    assert c.complete
    gone = c.done[3]["file"]
    os.unlink(os.path.join(world.dir, gone))
    r = cli("campaign", "status", world.dir)
    assert "is complete" not in r.stdout and "next: new" in r.stdout, r.stdout
    assert f"its file {gone} is gone" in unwrap(r.stderr), r.stderr
    r = cli("compare", world.dir)
    assert "no such file" not in r.stderr.lower() and r.returncode == 0, r.stderr
    world.boot("new")  # the unit was disabled: booted by hand into the open slot's kernel
    assert world.step() == 0
    assert store.load(world.dir).complete


def test_a_hand_written_done_of_a_boot_that_never_happened_counts_for_nothing(world):
    world.boot()
    world.step()
    world.forge({"event": "done", "boot_id": "cccccccc-0000-4000-8000-000000000000", "kernel": "new",
                 "file": "new/cccccccc-0000-4000-8000-000000000000.json", "time": 9})
    c = store.load(world.dir)
    assert c.counts() == {"old": 1, "new": 0}
    assert "cccccccc-0000-4000-8000-000000000000" not in store.Campaign.boots_done(c)


# ---- the order as the boots ran ----

def test_a_done_recovered_after_later_boots_keeps_its_place_in_the_order(world, cli):
    world.run(3)  # old, new, old
    [_, second, _] = world.events("done")
    with open(world.journal(second), "wb") as f:
        f.write(os.urandom(500))  # new's done destroyed
    world.run(1)  # new again: the step recovers the destroyed done, then measures this boot
    c = store.load(world.dir)
    assert c.complete and [e.get("recovered", False) for e in c.done] == [False, True, False, False]
    r = cli("campaign", "status", world.dir)
    assert "boots done in order: old,new,old,new" in r.stdout, r.stdout
    r = cli("compare", world.dir)
    assert "boots in order ABAB; 3 of 3 consecutive boots switch kernel" in r.stdout, r.stdout


# ---- a full disk, a journal folder gone, status's rows ----

def test_a_slot_whose_end_could_not_be_journaled_on_a_full_disk_says_so(world, monkeypatch):
    from atsdbench.data import files

    world.boot()
    real = files.write_atomically

    def full(path, write, binary=False, **kw):
        if os.path.basename(path).endswith("-unfinished.json"):
            raise OSError(28, "No space left on device", path)
        return real(path, write, binary, **kw)
    world.runner.rc = 2  # the run could not write its file: the disk is full
    monkeypatch.setattr(files, "write_atomically", full)
    with pytest.raises(OSError):
        world.step()
    monkeypatch.undo()
    world.runner.rc = 0
    assert world.step() == 0  # the same boot, space freed
    [closed] = [e for e in store.load(world.dir).events if e["event"] == "unfinished"]
    assert "No space left on device (the disk was full)" in closed["why"], closed


def test_status_names_result_files_when_the_journal_is_gone(world, cli):
    world.run(2)
    import shutil

    shutil.rmtree(world.journal())
    r = cli("campaign", "status", world.dir)
    assert r.returncode == 0
    assert "is gone), but result files are here: old 1, new 1" in r.stdout, r.stdout
    assert "not in the campaign's journal: left out" in unwrap(r.stderr)


def test_status_rows_end_in_no_blanks_and_fit_100_columns(world, cli):
    world.boot()
    world.step()
    r = cli("campaign", "status", world.dir)
    lines = r.stdout.splitlines()[1:]  # the first names DIR, as long as its path
    assert any(line.startswith("  new ") and line.endswith("0/2") for line in lines), lines
    assert all(line == line.rstrip() and len(line) <= 100 for line in lines), lines
    assert any(line.startswith("next step: ") for line in lines) and any("why: " in line for line in lines)


# ---- install and init ----

def test_install_refuses_a_bad_settle_before_writing_anything(tmp_path):
    calls = []
    for settle in (-5, 86400 * 2, True):
        with pytest.raises(UsageError, match="--settle must be 0 to"):
            unit.install(str(tmp_path / "c"), unit_dir=str(tmp_path), run=calls.append, settle=settle)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".service")] and not calls


@pytest.mark.parametrize("fails", ["daemon-reload", "enable"])
def test_install_takes_back_its_unit_when_systemctl_fails(tmp_path, fails):
    import subprocess

    calls = []

    def run(cmd, **kw):
        calls.append(cmd[1])
        return subprocess.CompletedProcess(cmd, 1 if cmd[1] == fails and calls.count(fails) == 1 else 0, "",
                                           "Failed to connect to bus")
    with pytest.raises(UsageError, match=f"systemctl {fails}.* failed: Failed to connect to bus .*removed"):
        unit.install(str(tmp_path / "c"), unit_dir=str(tmp_path), run=run)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".service")]
    assert calls[-1] == "daemon-reload"  # systemd forgets it too


def test_init_by_kexec_asks_the_running_kernel_for_kexec_file_load(tmp_path, capsys):
    images = [fakes.bzimage(tmp_path / f"vmlinuz-{n}", b) for n, b in BANNERS.items()]

    class NoKexec:
        @staticmethod
        def kexec_file_supported():
            return False
    specs = [f"old={images[0]}", f"new={images[1]}"]
    proc = fakes.proc(tmp_path / "proc", "aaaaaaaa-0000-4000-8000-000000000000", BANNERS["new"])
    with pytest.raises(UsageError, match=r"this kernel \(new\) has no kexec_file_load"):
        actions.init(str(tmp_path / "c"), specs, method="kexec", kexec={"core": NoKexec, "proc": proc})
    assert not os.path.exists(tmp_path / "c" / "campaign.json")
    # planned on another machine (its kernel not in the plan): said, not refused
    other = fakes.proc(tmp_path / "other", "bbbbbbbb-0000-4000-8000-000000000000", "5.10.0-9-amd64 (x@y) #1 SMP")
    assert actions.init(str(tmp_path / "d"), specs, method="kexec", kexec={"core": NoKexec, "proc": other}) == 0
    assert "this kernel (5.10.0-9-amd64) has no kexec_file_load: the planned ones need it" in unwrap(
        capsys.readouterr().err)

    class Kexec:
        @staticmethod
        def kexec_file_supported():
            return True
    assert actions.init(str(tmp_path / "c"), specs, method="kexec", kexec={"core": Kexec}) == 0


def test_a_run_whose_file_would_not_count_is_unfinished_and_arranges_no_boot(world):
    """A done its own check would refuse would reopen its slot at every boot: never written."""
    world.boot()
    real = world.runner

    def elsewhere(words, output):  # a run that wrote a result of another boot (a broken runner)
        rc = real(words, output)
        data = json.load(open(output))
        data["host"]["boot_id"] = "99999999-0000-4000-8000-000000000000"
        with open(output, "w") as f:
            json.dump(data, f)
        return rc
    assert world.step(elsewhere) == 1
    c = store.load(world.dir)
    assert [e["event"] for e in c.events] == ["start", "unfinished"] and not world.method.arranged
    assert "ran in boot 99999999" in c.events[1]["why"]


def test_a_second_file_of_a_number_is_read_and_named(world):
    world.boot()
    world.step()  # 1 start, 2 done, 3 arranged
    with open(world.journal("000003-arranged.json")) as f:
        e = json.load(f)
    with open(world.journal("000003-missed.json"), "w") as f:  # made by hand under a number taken
        json.dump({"event": "missed", "boot_id": "x", "expected": e["kernel"], "booted": None}, f)
    c = store.load(world.dir)
    assert [x["event"] for x in c.events] == ["start", "done", "arranged", "missed"]
    assert any("000003-missed.json: numbered 3, as 000003-arranged.json is" in w and w.endswith("both read")
               for w in c.warnings), c.warnings
    assert store.append_event(world.dir, {"event": "arranged", "kernel": "new"})["seq"] == 4
