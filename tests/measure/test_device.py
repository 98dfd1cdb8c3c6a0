"""--device hmm (csrc/atsd_device.c, measure/session.py, atsd): the plan's refusals, the touch, the axis,
the device's verify and its loud line, in both front ends, against tests/support/fake_hmm.c (a test double of
the kernel's test_hmm: coherent, or stale); the real driver runs in guests (scripts/device-check,
tests/measure/test_device_guest.py)."""
import json
import os
import re
import subprocess

import pytest

from conftest import run_cli, unwrap

SMALL = ["--size", "4M", "--strides", "64K,1M", "--rounds", "2", "--reps", "1", "--warmup-rounds", "0", "--seed", "3"]


def two_cpus():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: --verify has nothing to check from")


@pytest.mark.parametrize("args, words", [
    (["--device", "gpu"], "--device must be none or hmm (got 'gpu')"),
    (["--device", "hmm", "--gpu"], "--device hmm with --gpu: one device path a run"),
    (["--device", "hmm", "--workload", "tlb_flush2", "--size", "1M"], "it takes no --device"),
    (["--device", "none,"], "empty value"),
])
def test_bad_device_plans_are_one_line_and_exit_2(args, words, tmp_path):
    p = run_cli("run", *args, "-o", tmp_path / "x.json")
    assert p.returncode == 2 and p.stdout == "", p
    assert len(p.stderr.strip().splitlines()) == 1 and words in unwrap(p.stderr), p.stderr
    assert not (tmp_path / "x.json").exists()


def test_a_missing_node_names_the_driver(tmp_path):
    env = dict(os.environ, ATSD_HMM_DEVICE=str(tmp_path / "hmm_dmirror0"))
    p = run_cli("run", "--device", "hmm", *SMALL, "-o", tmp_path / "x.json", env=env)
    assert p.returncode == 2 and not (tmp_path / "x.json").exists(), p
    assert p.stderr.strip() == (f"atsdbench: --device hmm: no {tmp_path}/hmm_dmirror0 (read-write): load the "
                                "test_hmm driver (docs/device.md)"), p.stderr


def test_processes_and_memory_are_refused_by_the_check(fake_hmm, monkeypatch):
    from atsdbench.errors import UsageError
    from atsdbench.measure import plan

    monkeypatch.setenv("ATSD_HMM_DEVICE", fake_hmm()["ATSD_HMM_DEVICE"])
    with pytest.raises(UsageError, match="mirrors one mm"):
        plan.make_plan(affinity={0, 1}, device="hmm", threads=2, tasks="processes", size=1 << 24, strides=[65536])
    # the region fits, the region and the mirror's table do not
    meminfo = {"MemAvailable": (1 << 30) + (16 << 20) + (3 << 20)}  # the canary 16M, the mirror 6M
    plan.make_plan(meminfo=meminfo, size=1 << 30, strides=[65536])
    with pytest.raises(UsageError, match="mirror's .* exceed MemAvailable"):
        plan.make_plan(meminfo=meminfo, device="hmm", size=1 << 30, strides=[65536])


def test_the_device_is_an_axis_in_cell_order(fake_hmm, monkeypatch):
    from atsdbench.measure import plan

    monkeypatch.setenv("ATSD_HMM_DEVICE", fake_hmm()["ATSD_HMM_DEVICE"])
    p = plan.make_plan(device="none,hmm", op="mprotect,madvise", size=1 << 22, strides=[65536])
    assert p.axes == {"op": ["mprotect", "madvise"], "device": ["none", "hmm"]}
    assert [(c["op"], c["device"]) for c in p.cells] == [("mprotect", "none"), ("mprotect", "hmm"),
                                                         ("madvise", "none"), ("madvise", "hmm")]
    c = p.to_c()
    from atsdbench.measure import core

    cells = []
    for i in range(core.lib.atsd_plan_cells(c)):
        out = core.ffi.new("struct atsd_cell *")
        core.lib.atsd_plan_cell(c, i, out)
        cells.append((core.op_name(out.op), core.device_name(out.device)))
    assert cells == [(cell["op"], cell["device"]) for cell in p.cells]  # one numbering, C's and Python's
    assert "device" not in plan.make_plan(size=1 << 22, strides=[65536]).config()  # a file without one says nothing


@pytest.mark.live
def test_run_with_the_device_touches_before_every_pass_and_verifies_it(fake_hmm, tmp_path):
    two_cpus()
    out = tmp_path / "d.json"
    p = run_cli("run", *SMALL, "--device", "none,hmm", "--op", "mprotect,madvise,munmap", "--verify", "-o", out,
                env=fake_hmm())
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert data["schema_version"] == 8 and data["config"]["axes"]["device"] == ["none", "hmm"]
    assert data["host"]["device"]["driver"] == "test_hmm"
    for s in data["samples"]:
        assert ("device_touch_ns" in s) == (s["device"] == "hmm"), s
        assert s.get("device_touch_ns", 1) > 0
    device = [v for v in data["verify"] if v["device"] == "hmm"]
    assert {v["op"] for v in device} == {"mprotect", "madvise", "munmap"}
    for v in device:
        must = v["device_zeros"] if v["op"] == "madvise" else v["device_failed"]
        assert v["device_checks"] == v["calls"] > 0 and must == v["device_checks"] and v["device_stale"] == 0, v
    assert all("device_checks" not in v for v in data["verify"] if v["device"] == "none")
    assert "device (test_hmm): 0 stale in" in unwrap(p.stdout)
    shown = run_cli("show", out)
    assert "device touch ms" in shown.stdout and "cell 5: op=munmap device=hmm" in shown.stdout, shown.stdout


@pytest.mark.live
def test_a_stale_device_is_loud_and_exit_3(fake_hmm, tmp_path):
    """The control: a device that never forgets.  Every device check is stale, the file is saved, the loud
    line names the op and stride, the exit is 3; the CPUs' own checks stay clean."""
    two_cpus()
    out = tmp_path / "stale.json"
    p = run_cli("run", *SMALL, "--device", "hmm", "--op", "mprotect,madvise", "--verify", "-o", out,
                env=fake_hmm(stale=True))
    assert p.returncode == 3, p.stderr
    data = json.loads(out.read_text())
    assert data["verify"] and all(v["device_stale"] == v["device_checks"] == v["calls"] and v["stale"] == 0
                                  for v in data["verify"])
    err = unwrap(p.stderr)
    assert "STALE DEVICE TRANSLATION: " in err and "(madvise, 1M, test_hmm)" in err and "(mprotect, 64K" in err, err
    shown = run_cli("show", out)  # a file's stale reads, above its table
    assert shown.returncode == 0 and "STALE DEVICE TRANSLATION: " in shown.stdout, shown


@pytest.mark.live
def test_atsd_takes_the_device_as_run_does(fake_hmm, atsd, tmp_path):
    two_cpus()
    for stale, rc in ((False, 0), (True, 3)):
        out = tmp_path / f"atsd-{stale}.tsv"
        p = subprocess.run([atsd, *SMALL, "--device", "none,hmm", "--op", "munmap", "--verify", "-o", str(out)],
                           capture_output=True, text=True, env=fake_hmm(stale), timeout=300)
        assert p.returncode == rc, p.stderr
        assert ("STALE DEVICE TRANSLATION: " in p.stderr) == stale, p.stderr
        imported = tmp_path / f"atsd-{stale}.json"
        q = run_cli("import", out, "-o", imported)
        assert q.returncode == 0, q.stderr
        data = json.loads(imported.read_text())
        assert data["config"]["axes"] == {"device": ["none", "hmm"]}
        hmm = [s for s in data["samples"] if s["device"] == "hmm"]
        assert hmm and all(s["device_touch_ns"] > 0 for s in hmm)
        checks = [v for v in data["verify"] if v["device"] == "hmm"]
        assert checks and all(v["device_checks"] == v["calls"] for v in checks)
        assert all(bool(v["device_stale"]) == stale for v in checks)


def test_the_loud_line_is_one_sentence_in_both_front_ends():
    from atsdbench.measure import core
    from atsdbench.render import verify

    for op in ("mprotect", "madvise", "munmap"):
        assert core.device_stale_text(3, 256, op, 65536) == verify.stale_device_translation(3, 256, op, "64K")


def test_the_kprobes_are_the_cores_and_name_their_columns():
    from atsdbench.analysis import stats
    from atsdbench.measure import core

    probes = core.device_kprobes()
    assert probes == [("notifier_starts", "__mmu_notifier_invalidate_range_start"),
                      ("device_invalidates", "test_hmm:dmirror_interval_invalidate")]
    assert tuple(c for c, _ in probes) == stats.DEVICE_COUNTERS


def test_kprobes_in_a_tree_without_kprobe_events_say_why(tmp_path):
    from atsdbench.measure import core

    (tmp_path / "events").mkdir()
    with pytest.raises(OSError, match="kprobe_events"):
        core.Kprobe(str(tmp_path), "device_invalidates", "test_hmm:dmirror_interval_invalidate")


def test_a_kprobe_file_gets_the_probe_and_its_removal(tmp_path):
    """On a fixture tracefs: the probe's line is written, its id read from the event it makes (here
    made by hand, as the kernel would), and its removal written at close; a dead process's group goes
    at the next make."""
    from atsdbench.measure import core

    pid = os.getpid()
    (tmp_path / "kprobe_events").write_text("")
    ev = tmp_path / "events" / f"atsdbench_{pid}" / "device_invalidates"
    ev.mkdir(parents=True)
    (ev / "format").write_text("name: device_invalidates\nID: 4242\nformat:\n")
    dead = tmp_path / "events" / "atsdbench_999999999" / "notifier_starts"
    dead.mkdir(parents=True)
    k = core.Kprobe(str(tmp_path), "device_invalidates", "test_hmm:dmirror_interval_invalidate")
    assert k.id == 4242 and k.event == f"atsdbench_{pid}/device_invalidates"
    k.close()
    k.close()  # twice: nothing more
    lines = (tmp_path / "kprobe_events").read_text().splitlines()
    assert lines == ["-:atsdbench_999999999/notifier_starts", f"-:atsdbench_{pid}/device_invalidates",
                     f"p:atsdbench_{pid}/device_invalidates test_hmm:dmirror_interval_invalidate",
                     f"-:atsdbench_{pid}/device_invalidates"]


def test_a_group_whose_pid_a_later_process_took_is_swept(tmp_path):
    """A group named for a live pid, made before that process started (its folder's mtime), is of a
    dead run whose pid was reused: swept; one made after the process started is that process's: kept."""
    from atsdbench.measure import core

    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/stat") as f:
        btime = int(next(line for line in f if line.startswith("btime ")).split()[1])
    started = btime + ticks / os.sysconf("SC_CLK_TCK")
    (tmp_path / "kprobe_events").write_text("")
    mine = tmp_path / "events" / f"atsdbench_{os.getpid()}"
    (mine / "notifier_starts").mkdir(parents=True)
    os.utime(mine, (started - 100, started - 100))  # made 100 s before this process began
    ev = tmp_path / "events" / f"atsdbench_{os.getppid()}" / "device_invalidates"
    ev.mkdir(parents=True)  # made now, after the parent began: the parent's own
    (ev / "format").write_text("name: device_invalidates\nID: 4242\nformat:\n")
    try:
        core.Kprobe(str(tmp_path), "device_invalidates", "test_hmm:dmirror_interval_invalidate").close()
    except OSError:
        pass
    lines = (tmp_path / "kprobe_events").read_text().splitlines()
    assert f"-:atsdbench_{os.getpid()}/notifier_starts" in lines, lines
    assert f"-:atsdbench_{os.getppid()}/device_invalidates" not in lines, lines


@pytest.mark.live
def test_a_run_without_kprobes_says_why_and_measures(fake_hmm, tmp_path):
    """No test_hmm loaded here to probe (the fake is no module): the counts are absent, the reason
    recorded, the rates measured all the same."""
    if os.path.isdir("/sys/module/test_hmm"):
        pytest.skip("this machine has the real driver loaded")
    out = tmp_path / "d.json"
    p = run_cli("run", *SMALL, "--device", "hmm", "-o", out, env=fake_hmm())
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert not any("device_invalidates" in s for s in data["samples"])
    assert "kprobe" in data["config"]["device_count_error"] or "tracefs" in data["config"]["device_count_error"]
    assert all(s["gbps"] > 0 for s in data["samples"])


def test_guest_takes_modules_in_order(tmp_path):
    from atsdbench.errors import UsageError
    from atsdbench.guest import initramfs

    bad = tmp_path / "bad.ko"
    bad.write_text("not elf")
    with pytest.raises(UsageError, match="is not a kernel module"):
        initramfs.check_module(str(bad))
    with pytest.raises(UsageError, match="No such file"):
        initramfs.check_module(str(tmp_path / "none.ko"))
    a, b = tmp_path / "test_hmm.ko", tmp_path / "other thing.ko"
    a.write_bytes(b"\x7fELF-a")
    b.write_bytes(b"\x7fELF-b")
    base = tmp_path / "base.cpio"
    base.write_bytes(initramfs.cpio([]))
    path = initramfs.run_initramfs(str(base), [], str(tmp_path), modules=[str(a), str(b)])
    data = open(path, "rb").read()
    assert data.index(b"etc/atsd/modules/01-test_hmm.ko") < data.index(b"etc/atsd/modules/02-other_thing.ko")
    assert b"\x7fELF-a" in data and b"\x7fELF-b" in data
    assert "insmod" in initramfs.INIT and "@@ modules" in initramfs.INIT


def test_a_cli_guest_refuses_a_bad_module_before_booting(tmp_path):
    image = tmp_path / "vmlinuz"
    image.write_bytes(b"\x7fELF" + b"\0" * 60)
    p = run_cli("guest", "--kernel", image, "--module", tmp_path / "missing.ko", "-o", tmp_path / "o")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_the_device_stage_is_cut_from_the_kprobe_pair():
    from atsdbench.analysis import breakdown

    lines = ["atsd-9 [001] ..... 100: tracing_mark_write: atsdbench t0 1000",
             "atsd-9 [001] ..... 110: sys_mprotect(start: 7f0000000000, len: 10000, prot: 0)",
             "atsd-9 [001] ..... 112: device_entry: (dmirror_interval_invalidate+0x0/0x100 [test_hmm])",
             "atsd-9 [001] ..... 117: device_exit: (__mmu_notifier_invalidate_range_start+0x137/0x190 <- "
             "dmirror_interval_invalidate)",
             "atsd-9 [001] ..... 118: tlb_flush: pages:16 reason:local mm shootdown (3)",
             "atsd-9 [001] ..... 120: sys_mprotect -> 0x0",
             "atsd-9 [001] ..... 200: tracing_mark_write: atsdbench t1 2000"]
    s = breakdown.breakdown(lines, 1, 9, "mprotect", {"tlb", "device"})
    assert s["calls"] == 1 and s["device_us"] == pytest.approx(5 * 10 / 1e3) and breakdown.check_sum(s)
    assert s["page_table_us"] == pytest.approx(5 * 10 / 1e3)
    without = breakdown.breakdown(lines, 1, 9, "mprotect", {"tlb"})
    assert "device_us" not in without and breakdown.check_sum(without)  # a trace without the pair: no stage


def test_a_guests_atsd_breakdown_with_the_device_imports(fixtures, tmp_path):
    """A real trace: atsd --device none,hmm --breakdown in Debian 6.1's guest (qemu TCG) with test_hmm
    (scripts/device-check's mirror boot)."""
    import gzip

    from atsdbench.analysis import breakdown

    tsv = tmp_path / "bd.tsv"
    tsv.write_bytes(gzip.decompress((fixtures / "device" / "atsd-breakdown-6.1-tcg.tsv.gz").read_bytes()))
    p = run_cli("import", tsv, "-o", tmp_path / "bd.json")
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "bd.json").read_text())
    cells = data["config"]["cells"]
    passes = data["config"]["breakdown"]["passes"]
    assert len(passes) == 4 and all(breakdown.check_sum(q) for q in passes)
    for q in passes:
        if cells[q["cell"]]["device"] == "hmm":
            assert 0 < q["device_us"] < q["syscall_us"], q
        else:
            assert q["device_us"] == 0, q
    assert "device inval" in run_cli("show", tmp_path / "bd.json").stdout


@pytest.mark.live
def test_compare_says_when_one_file_had_the_device(fake_hmm, tmp_path):
    a, b = tmp_path / "none.json", tmp_path / "hmm.json"
    for out, device in ((a, "none"), (b, "hmm")):
        p = run_cli("run", *SMALL, "--device", device, "-o", out, env=fake_hmm())
        assert p.returncode == 0, p.stderr
    assert "device" not in json.loads(a.read_text())["config"]
    p = run_cli("compare", a, b)
    assert p.returncode == 0, p.stderr
    err = unwrap(p.stderr)
    assert "the files differ in device: none in none, hmm in hmm" in err and "measure different work" in err, err


def test_inside_a_pid_namespace_the_sweep_leaves_other_namespaces_probes(tmp_path):
    """A pid names a process only within its namespace: from inside a new one, the group of a live
    process of the host (whose pid is no process here) is not swept, and this process's own group names
    its namespace."""
    import shutil
    import subprocess
    import sys

    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare for a pid namespace")
    (tmp_path / "kprobe_events").write_text("")
    host = tmp_path / "events" / f"atsdbench_{os.getpid()}" / "notifier_starts"  # this test's process: live
    host.mkdir(parents=True)
    code = ("import sys; from atsdbench.measure import core\n"
            "try:\n    core.Kprobe(sys.argv[1], 'notifier_starts', '__mmu_notifier_invalidate_range_start')\n"
            "except OSError:\n    pass\n")
    # from tmp_path: `python -c` puts its folder first on sys.path, and the checkout's package may
    # have no compiled core (an install that is not editable, as CI's)
    p = subprocess.run(["unshare", "--pid", "--fork", sys.executable, "-c", code, str(tmp_path)],
                       capture_output=True, text=True, cwd=tmp_path)
    if p.returncode and "unshare" in p.stderr:
        pytest.skip(f"no pid namespace here: {p.stderr.strip()}")
    assert p.returncode == 0, p.stderr
    lines = (tmp_path / "kprobe_events").read_text().splitlines()
    assert f"-:atsdbench_{os.getpid()}/notifier_starts" not in lines, lines
    ns = os.stat("/proc/self/ns/pid").st_ino
    made = [line for line in lines if line.startswith("p:")]
    assert made and all(line.startswith("p:atsdbench_") and f"_{ns}_" not in line for line in made), lines
    assert all(re.fullmatch(r"p:atsdbench_\d+_1/notifier_starts \S+", line) for line in made), lines
