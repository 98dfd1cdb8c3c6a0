"""campaign/step with its world faked: /proc (boot_id, release, version), the runner and the boot
method.  A whole campaign of boots, a foreign kernel, a missed slot, a crash mid-run, Ctrl-C, a full
disk, a second step at once, a boot used twice."""
import json
import os

import pytest

from atsdbench.campaign import step as steps
from atsdbench.data import campaign as store
from atsdbench.errors import UsageError

import campaign_fakes as fakes
from conftest import unwrap


@pytest.fixture
def world(tmp_path):
    d = str(tmp_path / "camp")
    a = fakes.bzimage(tmp_path / "vmlinuz-a", fakes.A_BANNER)
    b = fakes.bzimage(tmp_path / "vmlinuz-b", fakes.B_BANNER)
    fakes.plan(d, [("old", fakes.A_BANNER, a), ("new", fakes.B_BANNER, b)], boots=2)
    proc = str(tmp_path / "proc")
    runner, method = fakes.Runner(proc), fakes.Method()
    lines = []
    n = [0]

    def boot(banner, boot_id=None):
        n[0] += 1
        fakes.proc(proc, boot_id or f"{n[0]:08d}-0000-4000-8000-000000000000", banner)

    def step(dry_run=False):
        return steps.Step(d, method, proc=proc, runner=runner, clock=lambda: 1000.0 + n[0] * 60,
                          out=lines.append)(dry_run=dry_run)
    return {"dir": d, "boot": boot, "step": step, "runner": runner, "method": method, "lines": lines}


def _banner(name):
    return fakes.A_BANNER if name == "old" else fakes.B_BANNER


def test_a_whole_campaign_alternates_and_keeps_one_file_per_boot(world):
    world["boot"](fakes.A_BANNER)
    for expect in ["old", "new", "old", "new"]:
        assert world["step"]() == 0
        if world["method"].arranged:
            world["boot"](_banner(world["method"].arranged[-1]))
    c = store.load(world["dir"])
    assert [e["kernel"] for e in c.done] == ["old", "new", "old", "new"]
    assert len({e["boot_id"] for e in c.done}) == 4
    assert world["method"].arranged == ["new", "old", "new"] and world["method"].reboots == 3
    assert c.complete
    for e in c.done:
        path = os.path.join(world["dir"], e["file"])
        assert path == os.path.join(world["dir"], e["kernel"], e["boot_id"] + ".json")
        assert json.load(open(path))["host"]["boot_id"] == e["boot_id"]
    assert any("complete" in line for line in world["lines"])
    # the run options of the plan went to every run
    assert all(words == ["--size", "16M"] for words, _ in world["runner"].calls)


def test_a_boot_already_used_is_refused(world):
    world["boot"](fakes.A_BANNER)
    world["step"]()
    with pytest.raises(UsageError, match="already used"):
        world["step"]()
    assert len(store.load(world["dir"]).done) == 1


def test_a_kernel_not_in_the_plan_is_recorded_never_mistaken(world):
    world["boot"](fakes.A_BANNER)
    world["step"]()  # arranges new
    # same release as old, another build: not old
    world["boot"](fakes.A_BANNER.replace("#1 SMP", "#2 SMP"))
    assert world["step"]() == 1
    c = store.load(world["dir"])
    kinds = [e["event"] for e in c.events]
    assert kinds[-3:] == ["foreign", "missed", "arranged"] and len(c.done) == 1
    assert world["method"].arranged == ["new", "new"]  # asked for again
    assert len(world["runner"].calls) == 1


def test_a_kernel_that_failed_to_boot_is_a_missed_slot_and_the_plan_rebalances(world):
    world["boot"](fakes.A_BANNER)
    world["step"]()  # old done; new arranged
    world["boot"](fakes.A_BANNER)  # new did not come up: grub fell back to old
    assert world["step"]() == 0
    c = store.load(world["dir"])
    assert [e["kernel"] for e in c.done] == ["old", "old"]
    missed = [e for e in c.events if e["event"] == "missed"]
    assert missed[0]["expected"] == "new" and missed[0]["booted"] == "old"
    assert world["method"].arranged[-1] == "new"  # behind by two: next
    world["boot"](fakes.B_BANNER)
    world["step"]()
    world["boot"](fakes.B_BANNER)  # old has its 2 boots, so new again
    assert world["step"]() == 0
    assert store.load(world["dir"]).complete


def test_a_crash_mid_run_is_redone_keeping_what_was_saved(world):
    world["boot"](fakes.A_BANNER, "aaaaaaaa-0000-4000-8000-000000000000")

    def crash(words, output):  # the run wrote part of a file, then the power went
        with open(output, "w") as f:
            f.write('{"partial": ')
        raise SystemExit("power cut")
    with pytest.raises(SystemExit):
        steps.Step(world["dir"], world["method"], proc=world["runner"].proc_root, runner=crash,
                   out=world["lines"].append)()
    c = store.load(world["dir"])
    assert [e["event"] for e in c.events] == ["start"]
    partial = os.path.join(world["dir"], "old", "aaaaaaaa-0000-4000-8000-000000000000.json")
    before = open(partial).read()
    world["boot"](fakes.A_BANNER, "bbbbbbbb-0000-4000-8000-000000000000")  # the machine came back up in old
    assert world["step"]() == 0
    c = store.load(world["dir"])
    assert [e["event"] for e in c.events][:3] == ["start", "unfinished", "start"]
    assert c.events[1]["file"] == "old/aaaaaaaa-0000-4000-8000-000000000000.json"
    assert open(partial).read() == before  # kept as it was
    assert [e["boot_id"][:8] for e in c.done] == ["bbbbbbbb"]


def test_ctrl_c_in_the_run_keeps_the_partial_file_and_redoes_the_slot_in_the_same_boot(world):
    world["boot"](fakes.A_BANNER)
    world["runner"].rc = 130
    assert world["step"]() == 130
    c = store.load(world["dir"])
    assert [e["event"] for e in c.events] == ["start", "unfinished"] and not world["method"].arranged
    first = os.path.join(world["dir"], c.events[0]["file"])
    kept = open(first).read()
    world["runner"].rc = 0
    assert world["step"]() == 0  # same boot: the slot is redone under a new name
    c = store.load(world["dir"])
    assert c.done[0]["file"].endswith("-2.json") and open(first).read() == kept


def test_a_run_that_could_not_save_is_unfinished_and_nothing_is_arranged(world):
    world["boot"](fakes.A_BANNER)
    world["runner"].rc = 2  # run's file could not be written (its rescue is run's to say)
    assert world["step"]() == 1
    c = store.load(world["dir"])
    assert c.events[-1]["event"] == "unfinished" and c.events[-1]["file"] is None
    assert not world["method"].arranged


def test_a_full_disk_before_the_run_is_one_line_and_nothing_lost(world, monkeypatch):
    from atsdbench.data import files

    world["boot"](fakes.A_BANNER)
    world["step"]()
    saved = sorted(os.listdir(os.path.join(world["dir"], "journal")))
    world["boot"](fakes.B_BANNER)

    def full(path, size):
        raise UsageError(f"{path}: 0 MiB free")
    monkeypatch.setattr(files, "check_space", full)
    with pytest.raises(UsageError, match="MiB free"):
        world["step"]()
    assert sorted(os.listdir(os.path.join(world["dir"], "journal"))) == saved
    assert len(store.load(world["dir"]).done) == 1


def test_an_event_that_cannot_be_written_leaves_the_journal_whole(world, monkeypatch):
    from atsdbench.data import files

    world["boot"](fakes.A_BANNER)
    real = files.write_atomically
    calls = [0]

    def enospc(path, write, binary=False, **kw):
        calls[0] += 1
        if calls[0] == 2:  # the `done` event: the disk filled during the run
            raise OSError(28, "No space left on device", path)
        return real(path, write, binary, **kw)
    monkeypatch.setattr(files, "write_atomically", enospc)
    with pytest.raises(OSError):
        world["step"]()
    monkeypatch.setattr(files, "write_atomically", real)
    c = store.load(world["dir"])
    assert [e["event"] for e in c.events] == ["start"]
    result = os.path.join(world["dir"], c.events[0]["file"])
    assert os.path.exists(result)  # the run's file is there, complete: the next step counts it
    world["boot"](fakes.B_BANNER)  # the arrangement never happened; the user booted new
    world["step"]()
    c = store.load(world["dir"])
    assert c.events[1]["event"] == "done" and c.events[1]["file"] == os.path.relpath(result, world["dir"])
    assert c.events[1]["recovered"] is True and [e["kernel"] for e in c.done] == ["old", "new"]


def test_two_steps_at_once_the_second_refuses(world):
    world["boot"](fakes.A_BANNER)
    with steps.Lock(world["dir"]):
        with pytest.raises(UsageError, match="another step is running"):
            world["step"]()
    assert world["step"]() == 0


def test_dry_run_says_and_does_nothing(world):
    world["boot"](fakes.A_BANNER)
    assert world["step"](dry_run=True) == 0
    assert not os.path.exists(os.path.join(world["dir"], "journal")) or not os.listdir(
        os.path.join(world["dir"], "journal"))
    assert not world["runner"].calls and not world["method"].arranged
    assert any(line.startswith("would run old") for line in world["lines"])
    assert any(line.startswith("would arrange new: fake new") for line in world["lines"])


def test_a_failed_arrangement_keeps_the_saved_boot(world):
    world["boot"](fakes.A_BANNER)
    world["method"].fail = "kexec: refused under lockdown (integrity; UEFI Secure Boot)"
    with pytest.raises(UsageError, match="lockdown"):
        world["step"]()
    c = store.load(world["dir"])
    assert len(c.done) == 1 and os.path.exists(os.path.join(world["dir"], c.done[0]["file"]))


def test_the_plan_done_disables_the_unit(world):
    import subprocess

    calls = []

    def run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "", "")
    world["boot"](fakes.A_BANNER)
    for _ in range(4):
        steps.Step(world["dir"], world["method"], proc=world["runner"].proc_root, runner=world["runner"],
                   out=world["lines"].append, disable=("atsdbench-campaign-x.service", run))()
        if world["method"].arranged:
            world["boot"](_banner(world["method"].arranged[-1]))
    assert calls == [["systemctl", "disable", "atsdbench-campaign-x.service"]]


def _atsd_output():
    """A real atsd output: the one in the committed POWER guest console."""
    from atsdbench.guest import console

    _, blocks, _ = console.parse_console((fakes.FIXTURES / "power" / "power9-radix.console").read_text())
    return "\n".join([b for b in blocks if b["name"] == "atsd"][0]["lines"]) + "\n"


def test_the_atsd_runner_imports_atsd_s_output(tmp_path):
    out = tmp_path / "atsd-output.txt"
    out.write_text(_atsd_output())
    atsd = tmp_path / "atsd"
    # a fake atsd: its options recorded, its output (-o FILE) a real one
    atsd.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\nwhile [ "$1" != -o ]; do shift; done\n'
                    f'cp {out} "$2"\necho table\n')
    atsd.chmod(0o755)
    target = str(tmp_path / "r.json")
    assert steps.run_atsd(["--size=64M"], target, atsd=str(atsd)) == 0
    from atsdbench.data import results
    assert results.load(target).complete
    assert (tmp_path / "args").read_text().strip() == f"--size=64M -o {tmp_path}/r.atsd.txt"
    assert (tmp_path / "r.atsd.txt").read_text() == out.read_text()  # atsd's own record, kept
    # exit 3 (its verify passes read stale, said on stderr): finished, imported, the 3 passed on
    atsd.write_text(f'#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\ncp {out} "$2"\nexit 3\n')
    os.remove(target)
    assert steps.run_atsd([], target, atsd=str(atsd)) == 3 and results.load(target).complete


def test_without_atsd_on_path_the_install_s_sources_build_it(tmp_path, monkeypatch):
    """A plain install is the whole tool: no atsd on PATH, the step runs this machine's static atsd
    built from the package's sources (guest's cached build)."""
    import shutil

    from atsdbench.guest import initramfs, qemu

    atsd = tmp_path / "built-atsd"
    atsd.write_text(f'#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\necho junk > "$2"\n')
    atsd.chmod(0o755)
    asked = []
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(initramfs, "static_atsd", lambda arch: asked.append(arch) or str(atsd))
    assert steps.run_atsd([], str(tmp_path / "r.json")) == 2  # it ran: its junk did not import
    assert asked == [qemu.host_arch()] and (tmp_path / "r.atsd.txt").read_text() == "junk\n"


def test_a_failed_atsd_is_its_exit_status_and_bad_output_is_2(tmp_path):
    atsd = tmp_path / "atsd"
    atsd.write_text("#!/bin/sh\nexit 130\n")
    atsd.chmod(0o755)
    target = str(tmp_path / "r.json")
    assert steps.run_atsd([], target, atsd=str(atsd)) == 130 and not os.path.exists(target)
    atsd.write_text('#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\necho junk > "$2"\n')
    assert steps.run_atsd([], target, atsd=str(atsd)) == 2 and not os.path.exists(target)
    assert (tmp_path / "r.atsd.txt").read_text() == "junk\n"


def test_a_real_sigint_during_the_run_waits_for_the_run_and_is_an_unfinished_slot(world):
    """The Ctrl-C reaches the step too (one process group): held while the run saves its passes, then
    the slot is recorded unfinished and the step exits 130, nothing raised through it."""
    import signal

    world["boot"](fakes.A_BANNER)
    real = world["runner"]

    def interrupted(words, output):
        os.kill(os.getpid(), signal.SIGINT)  # lands in the step's process while the run goes on
        real.rc = 130
        return real(words, output)  # the run saved a partial file and exited 130
    steps_ = steps.Step(world["dir"], world["method"], proc=real.proc_root, runner=interrupted,
                        out=world["lines"].append)
    assert steps_() == 130
    c = store.load(world["dir"])
    assert [e["event"] for e in c.events] == ["start", "unfinished"] and c.events[1]["why"] == "interrupted"
    assert os.path.exists(os.path.join(world["dir"], c.events[1]["file"])) and not world["method"].arranged


NO_NUMPY = r"""
import sys

class Refuse:  # a guest's initramfs has atsdbench but neither numpy nor pandas
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numpy", "pandas", "scipy"):
            raise ImportError(f"no {name} here")
        return None

sys.meta_path.insert(0, Refuse())
from atsdbench.data import atsd_output, results

text = open(sys.argv[1]).read()
results.save_or_rescue(atsd_output.to_result(text, sys.argv[1]), sys.argv[2])
print("saved")
"""


@pytest.mark.live
def test_the_atsd_runner_imports_and_saves_without_numpy(atsd, tmp_path):
    """campaign step --runner atsd runs where numpy is not (a guest): atsd's output becomes a result
    file with nothing but the standard library (the e2e campaign found a Result needing numpy)."""
    import json
    import subprocess
    import sys

    raw = tmp_path / "out.atsd.txt"
    subprocess.run([atsd, "--size", "4M", "--strides", "64K", "--rounds", "1", "--reps", "1", "-o", str(raw)],
                   check=True, capture_output=True)
    p = subprocess.run([sys.executable, "-c", NO_NUMPY, str(raw), str(tmp_path / "r.json")], capture_output=True,
                       text=True, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == "saved\n", p.stderr
    assert json.loads((tmp_path / "r.json").read_text())["samples"]


def test_a_run_that_read_a_stale_translation_is_a_finished_slot_said_loudly(world):
    """run exits 3 when --verify read a stale translation after saving a complete file: a finding about
    the kernel, kept as the slot's run (redoing it each boot would loop), flagged in the journal."""
    world["boot"](fakes.A_BANNER)
    world["runner"].rc = 3
    world["runner"].complete = True
    assert world["step"]() == 0
    c = store.load(world["dir"])
    assert [e["event"] for e in c.events][:2] == ["start", "done"] and c.done[0].get("stale") is True
    assert any("STALE TRANSLATION" in line for line in world["lines"]) and world["method"].arranged == ["new"]
    world["runner"].complete = False  # exit 3 with a file cut short: unfinished, as any other failure
    world["boot"](fakes.B_BANNER)
    assert world["step"]() == 1
    assert store.load(world["dir"]).events[-1]["event"] == "unfinished"


# ---- faults: a start cut off before any file, a copied done, a lost done, a signal to the step ----

def test_a_slot_cut_off_before_its_file_is_closed_once(world):
    """SIGKILL right after the start event: no result file, so its close has file null; later steps
    must not close it again (it was listed open for ever, one more `unfinished` each step)."""
    world["boot"](fakes.A_BANNER)

    def killed(words, output):
        raise SystemExit("killed before writing")
    with pytest.raises(SystemExit):
        steps.Step(world["dir"], world["method"], proc=world["runner"].proc_root, runner=killed,
                   out=world["lines"].append)()
    for banner in (fakes.A_BANNER, fakes.B_BANNER, fakes.A_BANNER, fakes.B_BANNER, fakes.A_BANNER):
        world["boot"](banner)
        world["step"]()
    c = store.load(world["dir"])
    closes = [e for e in c.events if e["event"] == "unfinished"]
    assert len(closes) == 1 and closes[0]["file"] is None and closes[0]["start"] == c.events[0]["seq"]
    assert c.open_starts() == [] and c.complete


def test_a_copied_done_event_counts_its_boot_once(world, cli):
    world["boot"](fakes.A_BANNER)
    world["step"]()
    journal = os.path.join(world["dir"], "journal")
    [done] = [n for n in os.listdir(journal) if n.endswith("-done.json")]
    with open(os.path.join(journal, done)) as f, open(os.path.join(journal, "000099-done.json"), "w") as g:
        g.write(f.read())
    c = store.load(world["dir"])
    assert len(c.done) == 1 and c.counts() == {"old": 1, "new": 0}
    assert any("000099-done.json is a copy of" in w and w.endswith("read once") for w in c.warnings)
    r = cli("campaign", "status", world["dir"])
    assert "old" in r.stdout and " 1/2 " in r.stdout and "read once" in unwrap(r.stderr)
    # a done of the same boot that is no exact copy (edited, a later time): counted once all the same
    with open(os.path.join(journal, done)) as f:
        again = json.load(f)
    again["time"] += 1
    with open(os.path.join(journal, "000100-done.json"), "w") as g:
        json.dump(again, g)
    c = store.load(world["dir"])
    assert len(c.done) == 1 and len(c.duplicates()) == 1
    assert any("a second done event of boot" in w and "counted once" in w for w in c.warnings)


@pytest.mark.parametrize("fault", ["deleted", "corrupt"])
def test_a_lost_done_event_keeps_the_complete_result(world, fault):
    world["boot"](fakes.A_BANNER)
    world["step"]()
    journal = os.path.join(world["dir"], "journal")
    [done] = [os.path.join(journal, n) for n in os.listdir(journal) if n.endswith("-done.json")]
    if fault == "deleted":
        os.unlink(done)
    else:
        with open(done, "w") as f:
            f.write('{"event": "do')
    world["boot"](fakes.B_BANNER)
    assert world["step"]() == 0
    c = store.load(world["dir"])
    assert [e["kernel"] for e in c.done] == ["old", "new"] and c.done[0].get("recovered") is True
    assert any("its run had finished" in line for line in world["lines"])
    assert not [e for e in c.events if e["event"] == "unfinished"]


def test_a_finished_run_whose_step_was_cut_off_in_the_same_boot_is_counted_and_the_boot_moves_on(world):
    world["boot"](fakes.A_BANNER)
    real = world["runner"]

    def finished_then_killed(words, output):
        real(words, output)
        raise SystemExit("the step was killed after its run saved")
    with pytest.raises(SystemExit):
        steps.Step(world["dir"], world["method"], proc=real.proc_root, runner=finished_then_killed,
                   out=world["lines"].append)()
    assert world["step"]() == 0  # the same boot: counted, not refused as used, and the next one arranged
    c = store.load(world["dir"])
    assert [e["kernel"] for e in c.done] == ["old"] and world["method"].arranged == ["new"]
    assert len(real.calls) == 1 and c.done[0]["recovered"] is True  # not measured again


def test_a_signal_to_the_step_during_a_run_that_finishes_arranges_no_boot(world):
    import signal

    world["boot"](fakes.A_BANNER)
    real = world["runner"]

    def told_to_stop(words, output):
        os.kill(os.getpid(), signal.SIGTERM)  # `kill PID` of the step alone: the run itself went on
        return real(words, output)  # ... and finished, complete
    assert steps.Step(world["dir"], world["method"], proc=real.proc_root, runner=told_to_stop,
                      out=world["lines"].append)() == 130
    c = store.load(world["dir"])
    assert [e["event"] for e in c.events] == ["start", "done", "stopped"] and c.events[2]["why"].endswith("SIGTERM")
    assert not world["method"].arranged and world["method"].reboots == 0
    assert world["step"]() == 0 and world["method"].arranged == ["new"]  # again in this boot: it goes on
    assert len(real.calls) == 1  # the boot's run is not redone
    world["boot"](fakes.B_BANNER)
    assert world["step"]() == 0 and [e["kernel"] for e in store.load(world["dir"]).done] == ["old", "new"]


def test_a_complete_file_an_unfinished_slot_kept_is_named_by_compare(world, cli):
    world["boot"](fakes.A_BANNER)
    world["runner"].rc, world["runner"].complete = 1, True  # saved whole, then exited 1
    world["step"]()
    c = store.load(world["dir"])
    assert [e["event"] for e in c.events] == ["start", "unfinished"]
    world["runner"].rc = 0
    for banner in (fakes.A_BANNER, fakes.B_BANNER, fakes.A_BANNER, fakes.B_BANNER):
        world["boot"](banner)
        world["step"]()
    r = cli("compare", world["dir"])
    assert r.returncode == 0 and "is complete, but its run failed: not compared" in unwrap(r.stderr), r.stderr
