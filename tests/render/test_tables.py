"""render/tables: run's and show's per-stride tables come from one builder (stride_table)."""
import json
import atsdbench

from atsdbench.data import results
from atsdbench.render import tables


def _with_latency_and_a_lost_rate(tmp_path, fixtures):
    d = json.loads((fixtures / "before.json").read_text())
    d["host"]["tlb_single_page_flush_ceiling"] = 33
    for s in d["samples"]:
        if not s["warmup"]:
            s.update(lat_p50_us=s["us_per_call"], lat_p90_us=s["us_per_call"] * 1.1,
                     lat_p99_us=s["us_per_call"] * 1.5, lat_max_us=s["us_per_call"] * 3, gpu_touch_ns=1234567)
            if (s["round"], s["rep"]) == (2, 1):
                s["gbps"] = None  # a pass without a rate
        if s["traced"]:
            s["full_flushes"] = s["flushes"] // 3
    path = tmp_path / "lat.json"
    path.write_text(json.dumps(d))
    return results.load(str(path))


def _row(table, stride, titles):
    """The stride's row, across the blocks a table wider than notes.WIDTH is cut into."""
    out, cols = {}, []
    for line in table.splitlines():
        if line.lstrip().startswith("Stride"):
            cols = [c.strip() for c in line.split("  ") if c.strip()]
        elif line.split()[:1] == [stride]:
            out.update({c: v for c, v in zip(cols, line.split()) if c in titles})
    return out


def test_show_has_run_s_columns_and_numbers(tmp_path, fixtures):
    r = _with_latency_and_a_lost_rate(tmp_path, fixtures)
    run = tables.run_table(r)
    by_pass, _ = tables.show_table(r, unit="pass")
    shared = ["us/call", "p50 us", "p90 us", "p99 us", "max us", "GPU touch ms", "IPIs/call", "flushes/call",
              "full flush %", "expected flush"]
    for title in shared:
        assert title in run and title in by_pass, title
    for stride in ("64K", "1M", "2M", "4M"):
        mine, theirs = _row(run, stride, shared), _row(by_pass, stride, shared)
        assert mine == theirs and len(mine) == len(shared), stride
        ran = _row(run, stride, ["Median GB/s", "Min", "Max"])
        passes = _row(by_pass, stride, ["Median", "Min", "Max", "N"])
        assert passes["N"] == "19"  # the pass without a rate is left out, as run leaves it out
        for a, b in (("Median GB/s", "Median"), ("Min", "Min"), ("Max", "Max")):
            assert abs(float(ran[a]) - float(passes[b])) <= 0.0051, (stride, a)


def test_csv_names_are_one_word_each(tmp_path, fixtures):
    r = _with_latency_and_a_lost_rate(tmp_path, fixtures)
    head = tables.show_table(r, fmt="csv")[0].splitlines()[0]
    assert head == ("stride,n,min,max,median,mean,stddev,cv_pct,us_per_call,p50_us,p90_us,p99_us,max_us,"
                    "gpu_touch_ms,ipis_per_call,flushes_per_call,full_flush_pct,expected_flush")


def test_the_warnings_state_the_thresholds_the_data_side_applies(monkeypatch):
    """The 90% in the warnings is data.results' own, not a copy of it."""
    idle = [{"warmup": False, "bystander_idle": True}]
    disturbed = [{"warmup": False, "disturbed": True, "preempted": 1, "cpu_share": 1.0}]
    assert "under 90% of the pass" in tables.bystander_notes(idle)[0]
    assert "under 90% on CPU" in tables.disturbance_notes(disturbed)[0]
    monkeypatch.setattr(results, "BYSTANDER_BUSY", 0.75)
    monkeypatch.setattr(results, "CPU_BUSY", 0.8)
    assert "under 75% of the pass" in tables.bystander_notes(idle)[0]
    assert "under 80% on CPU" in tables.disturbance_notes(disturbed)[0]


def test_the_disturbed_warning_says_what_to_do():
    disturbed = [{"warmup": False, "disturbed": True, "preempted": 1, "cpu_share": 1.0}] * 79 + \
        [{"warmup": False, "disturbed": False, "preempted": 0, "cpu_share": 1.0}]
    warning, advice = tables.disturbance_notes(disturbed)
    assert warning.startswith("warning: 79 of 80 timed passes disturbed")
    assert advice.startswith("  what to do: stop the host's other work") and "`atsdbench info --cpus`, --cpu N" in advice
    assert len(advice) <= 100


def _placed(round_, h, median, contig=0.0, nodes="0"):
    return {"round": round_, "warmup": False, "placement_pfn_hash": h, "placement_pfn_median": median,
            "placement_contig2m": contig, "placement_nodes": nodes}


def test_placement_note_only_when_placement_varies():
    from atsdbench.render import notes, tables

    same = [_placed(r, "aa", 2_170_000) for r in range(3)]
    assert tables.placement_notes(same) == []
    varied = same[:2] + [_placed(2, "bb", 2_280_000, 0.25)]
    (line,) = tables.placement_notes(varied)
    one = " ".join(line.split())
    assert one.startswith("placement: the rounds' regions sat on 2 different sets of physical pages in 3 rounds; "
                          "the median page frame number ranged 2.17M to 2.28M; ")
    assert "0% to 25% of a region in 2M-contiguous runs" in one and one.endswith(f"({notes.PLACEMENT})")
    assert all(len(x) <= notes.WIDTH for x in line.splitlines())
    # without root: no PFN, but two NUMA nodes still say the rounds' memory moved
    unprivileged = [{"round": r, "warmup": False, "placement_nodes": n} for r, n in enumerate(["0", "1"])]
    (line,) = tables.placement_notes(unprivileged)
    assert " ".join(line.split()) == notes.see(
        "placement: the rounds' regions sat on 2 different sets of physical pages in 2 rounds; NUMA nodes 0 / 1",
        notes.PLACEMENT)


def test_placement_note_wraps_and_keeps_every_part():
    from atsdbench.render import notes, tables

    line = tables.placement_varied(12, 120, ("2.17M", "2.28M"), ("0%", "100%"), "0 / 1 / 2 / 3 / 0,1 / 0,1,2,3")
    assert all(len(x) <= notes.WIDTH for x in line.splitlines()) and "NUMA nodes 0 / 1" in " ".join(line.split())
    assert "2M-contiguous" in line and all(x.startswith("  ") for x in line.splitlines()[1:])



def _no_timed_pass(fixtures, tmp_path, keep_warmups):
    import json

    data = json.loads((fixtures / "before.json").read_text())
    data["complete"] = False
    data["samples"] = [s for s in data["samples"] if s["warmup"]][:keep_warmups]
    path = tmp_path / f"empty{keep_warmups}.json"
    path.write_text(json.dumps(data))
    return path


def test_a_file_without_a_timed_pass_is_said_to_be_empty_everywhere(cli, fixtures, tmp_path):
    for warm in (0, 3):
        path = _no_timed_pass(fixtures, tmp_path, warm)
        p = cli("show", path)
        assert p.returncode == 0 and "Stride" not in p.stdout, p.stdout
        assert "no measured pass: the run ended before its first timed pass" in p.stdout
        assert ("(3 warm-up passes kept)" in p.stdout) == (warm == 3)
        assert "no measured pass" in tables.run_report(atsdbench.load(str(path)))
        for args in (["compare", path, fixtures / "before.json"], ["compare", fixtures / "before.json", path],
                     ["plot", path, "-o", tmp_path / "x.png"], ["model", path]):
            p = cli(*args)
            assert p.returncode == 2 and "no measured pass" in p.stderr and len(p.stderr.splitlines()) == 1, args
