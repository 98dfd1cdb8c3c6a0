"""render/breakdown.py: run --breakdown's table from a section as measure/breakdown.run writes it
(here made from the captured x86 traces, tests/fixtures/breakdown)."""
import json

from atsdbench.analysis import breakdown as b
from atsdbench.render import breakdown, notes as shared


def _section(fixtures, bystanders=1, untraced=None):
    cases = json.loads((fixtures / "breakdown" / "cases.json").read_text())
    passes = []
    for k in (64, 1024, 4096):
        name = f"x86-mprotect-{k}k-bystanders{bystanders}.trace"
        meta = cases[name]
        lines = (fixtures / "breakdown" / name).read_text().splitlines()
        one = {"stride_bytes": meta["stride"], "region_bytes": meta["region"], "lost": 0}
        one.update(b.breakdown(lines, meta["cpu"], meta["pid"], "mprotect", set(meta["have"])))
        if untraced:
            one["untraced_us"] = one["syscall_us"] / untraced
        passes.append(one)
    return {"clock": "x86-tsc", "events": [], "missing": [], "passes": passes, "complete": True}


def test_each_stride_is_a_row_whose_stages_add_up(fixtures):
    whole = breakdown.table(_section(fixtures))
    out = whole.splitlines()
    assert out[0] == breakdown.BREAKDOWN_TITLE and max(map(len, out)) <= shared.WIDTH  # blocks where wider
    for name in ("Stride", "Calls", "Syscall µs", "page tables", "local flush", "Pages", "IPIs wanted", "IPIs sent"):
        assert name in whole
    rows = out[3:6]  # the first block's rows
    assert [r.split()[0] for r in rows] == ["64K", "1M", "4M"]
    assert "+1 full" in whole and rows[0].split()[1] == "64"
    assert out[-1].startswith("N = 1 pass's calls; stages sum to syscall")


def test_the_overhead_against_the_timed_passes_is_said(fixtures):
    out = breakdown.table(_section(fixtures, untraced=1.25))
    assert "tracing cost +25%" in out
    assert breakdown.overhead({"passes": [{"syscall_us": 2.0, "untraced_us": 1.0},
                                          {"syscall_us": 3.0, "untraced_us": 2.0}]}) == "+50% to +100%"


def test_lost_interrupted_and_missing_are_notes_at_most_three(fixtures):
    section = _section(fixtures, bystanders=0)
    section["passes"].append({"stride_bytes": 2 << 20, "region_bytes": 4 << 20, "lost": 12})
    section["complete"] = False
    section["missing"] = ["csd:csd_function_entry"]
    lines = breakdown.table(section).splitlines()
    notes = lines[lines.index(next(x for x in lines if x.startswith("N = 1 pass's calls"))):]
    assert len(notes) == shared.MAX_NOTES and "events lost at 2M" in notes[1] and "interrupted" in notes[2]
    assert all(len(x) <= shared.WIDTH for x in notes)
    assert "2M " not in "\n".join(lines[:lines.index(notes[0])])  # a lost pass has no row


def test_nothing_to_show_is_nothing():
    assert breakdown.table(None) == "" and breakdown.table({}) == ""


def test_the_legend_fits_with_the_widest_overhead():
    assert len(breakdown.stages_sum_to_syscall("-100% to +1000%")) <= shared.WIDTH


PROFILE = {"event": "cpu-clock", "freq": 4000, "complete": True, "passes": [
    {"stride_bytes": 65536, "passes": 3, "lost": 0, "samples": 313, "bystander_samples": 40,
     "self": [["change_pte_range", 0.441], ["smp_call_function_many_cond", 0.157], ["native_write_msr", 0.051]],
     "inclusive": [["do_mprotect_pkey", 1.0]],
     "stages": {"page_table": 0.575, "flush": 0.246, "local_flush": 0.0, "remote_wait": 0.224, "notifier": 0.0},
     "bystander_stages": {"local_flush": 0.1}},
    {"stride_bytes": 2 << 20, "passes": 3, "lost": 0, "samples": 302, "bystander_samples": 0,
     "self": [["change_pte_range", 0.758]], "inclusive": [], "stages": {"page_table": 0.927}, "bystander_stages": {}}]}


def test_the_profile_table_gives_stage_shares_and_the_pmu_caveat():
    whole = breakdown.profile_table(PROFILE)
    lines = whole.splitlines()
    assert lines[0] == breakdown.PROFILE_TITLE and max(map(len, lines)) <= shared.WIDTH  # blocks where wider
    assert "page tables" in lines[1] and "remote wait" in whole and "top 3 self" in whole
    assert lines[3].split()[:4] == ["64K", "313", "57.5%", "24.6%"] and "change_pte_range 44.1%" in whole
    assert "10.0%" in whole  # the bystanders' flush share
    assert lines[4].split()[:4] == ["2M", "302", "92.7%", "n/a"]
    assert lines[-1].startswith("cpu-clock, no PMU: time with IRQs off shows after them; N = 302-313")
    cycles = dict(PROFILE, event="cycles")
    assert breakdown.profile_table(cycles).splitlines()[-1].startswith("cycles samples, N = 302-313;")
    assert breakdown.profile_table(None) == ""
    assert len(breakdown.samples_legend("cpu-clock", "10000-20000")) <= shared.WIDTH


def test_compare_appends_the_stage_tables_in_text_markdown_and_commit(cli, tmp_path):
    import copy

    from atsdbench.data import results

    base = results.load(str(fixtures_dir() / "before.json"))
    new = results.load(str(fixtures_dir() / "after.json"))
    stride = base.config["strides"][0]
    for r, syscall, local in ((base, 10.0, 1.0), (new, 8.0, 2.0)):
        r.config["breakdown"] = {"complete": True, "passes": [
            {"stride_bytes": stride, "calls": 16, "syscall_us": syscall, "local_flush_us": local,
             "page_table_us": syscall - local}]}
        r.config["profile"] = copy.deepcopy(PROFILE)
        r.config["profile"]["passes"][0]["stride_bytes"] = stride
        r.config["profile"]["passes"] = r.config["profile"]["passes"][:1]
    results.save(base, str(tmp_path / "a.json"))
    results.save(new, str(tmp_path / "b.json"))
    for fmt in ("text", "markdown", "commit"):
        p = cli("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", fmt)
        assert p.returncode == 0, p.stderr
        assert breakdown.COMPARE_BREAKDOWN_TITLE in p.stdout and breakdown.COMPARE_PROFILE_TITLE in p.stdout
        assert p.stdout.index(breakdown.COMPARE_BREAKDOWN_TITLE) > p.stdout.index("GB/s")  # after the rate table
        local = next(x for x in p.stdout.splitlines() if "local flush" in x)
        assert "+1.00" in local and "+15.00" in local  # µs and percentage points (10% -> 25%)
        assert "one traced pass each, no interval" in p.stdout
    p = cli("compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "csv")
    assert breakdown.COMPARE_BREAKDOWN_TITLE not in p.stdout  # machine formats: the rates only


def fixtures_dir():
    import pathlib

    return pathlib.Path(__file__).parent.parent / "fixtures"


def test_show_prints_the_breakdown_and_profile_of_a_file(cli, tmp_path, fixtures):
    from atsdbench.data import results

    r = results.load(str(fixtures_dir() / "before.json"))
    section = _section(fixtures)
    stride = r.config["strides"][0]
    section["passes"] = [dict(p, stride_bytes=stride) for p in section["passes"][:1]]
    r.config["breakdown"] = section
    r.config["profile"] = {**PROFILE, "passes": [dict(PROFILE["passes"][0], stride_bytes=stride)]}
    results.save(r, str(tmp_path / "r.json"))
    p = cli("show", str(tmp_path / "r.json"))
    assert p.returncode == 0, p.stderr
    assert breakdown.BREAKDOWN_TITLE in p.stdout and breakdown.PROFILE_TITLE in p.stdout
    assert cli("show", str(tmp_path / "r.json"), "--format", "csv").stdout.count(breakdown.BREAKDOWN_TITLE) == 0


def test_cells_are_named_as_compare_names_them(fixtures):
    section = _section(fixtures)
    for i, p in enumerate(section["passes"]):
        p["cell"] = i % 2
    config = {"cells": [{"op": "madvise"}, {"op": "munmap"}]}
    rows = breakdown.table(section, config=config).splitlines()
    assert rows[1].split()[0] == "Cell" and rows[3].startswith("op=madvise") and rows[4].startswith("op=munmap")
    assert breakdown.table(section).splitlines()[3].split()[0] == "0"  # no cells listed: the index


def test_the_stage_legend_names_each_new_sides_files_apart():
    """Three sides, the second with one file: N per side reads '3/3, 3/1' (base/new of each new side),
    not '3/1/3/3', which cannot be told apart."""
    import types

    def row(n_new, interval):
        return {"kind": "breakdown", "cell": None, "stride_bytes": 65536, "stage": "local_flush", "base_us": 1.0,
                "new_us": 2.0, "change_us": 1.0, "us_interval": interval, "base_share": 10.0, "new_share": 20.0,
                "change_pp": 10.0, "pp_interval": interval, "n_base": 3, "n_new": n_new}

    cmp = types.SimpleNamespace(stages=[row(3, (0.5, 1.5)), row(1, None)])
    out = breakdown.compare_table(cmp)
    assert "files a side 3/1, 3/3;" in out, out


def test_a_guest_under_full_emulation_is_marked_and_the_shares_asked_for(fixtures):
    section = _section(fixtures)
    note = breakdown.emulated_read_the_shares("qemu-tcg")
    assert note in breakdown.table(section, host={"virtualized": "qemu-tcg"}).splitlines()
    assert note not in breakdown.table(section, host={"virtualized": "kvm"})
    assert note not in breakdown.table(section)
    assert "emulated (qemu-tcg)" in note and "shares" in note and len(note) <= shared.WIDTH
    profile = {"event": "cpu-clock", "complete": True, "passes": [
        {"stride_bytes": 65536, "samples": 10, "stages": {"page_table": 0.5}, "self": [["f", 0.5]]}]}
    assert note in breakdown.profile_table(profile, host={"virtualized": "qemu-tcg"}).splitlines()


def test_a_local_flush_no_cross_call_timed_is_untimed_not_zero(fixtures):
    """Without a bystander, x86 flushes in place: the local flush column says untimed, and a note why."""
    alone = breakdown.table(_section(fixtures, bystanders=0))
    rows = [line for line in alone.splitlines() if line.split()[:1] in (["64K"], ["1M"], ["4M"])]
    assert rows and all(breakdown.UNTIMED in r for r in rows[:3]) and " 0.00 0%" not in alone
    assert "untimed: no other CPU to reach, flushed in place" in alone
    shared = breakdown.table(_section(fixtures, bystanders=1))
    assert breakdown.UNTIMED + " " not in shared.split("\n", 1)[1].split("N = 1")[0]
    assert "flushed in place" not in shared
