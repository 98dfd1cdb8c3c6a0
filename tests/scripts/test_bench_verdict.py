"""scripts/bench_verdict.py's simulation (not live: nothing is measured): its table and its seed, and
the noise simulator it runs (tests/support/noise_sim.py)."""
import noise_sim
import pytest


@pytest.fixture(scope="module")
def bench(script):
    return script("bench_verdict")


def test_the_schedule_gives_each_design_its_wall_time():
    assert noise_sim.schedule(1, 5, 0)[1] == 9.0  # 5 rounds + a warm-up round, 1.5 s each
    assert noise_sim.schedule(5, 5, 20)[1] == 89.0
    assert noise_sim.schedule(8, 3, 20)[1] == 146.0
    assert noise_sim.schedule(5, 5, 0) == ([0.0, 9.0, 18.0, 27.0, 36.0], 45.0)  # back to back


def test_a_simulated_side_has_the_real_schema_and_compare_takes_it():
    import numpy as np

    from atsdbench.analysis.compare import compare
    from atsdbench.data import results

    rng = np.random.default_rng(1)
    a = noise_sim.simulate_side(rng, 3, 2, 20.0, 0.03, 0.0, label="A", boot_id="x")
    b = noise_sim.simulate_side(rng, 3, 2, 20.0, 0.03, 0.0, change=0.1, label="B", boot_id="y")
    again = results.from_dict(a.to_dict())  # the schema check of a file on disk
    assert [p.sub_run for p in again.sub_runs()] == [0, 1, 2]
    s = a.records[0]
    assert set(s) >= {"round", "rep", "stride_bytes", "warmup", "ns", "seconds", "calls", "gbps", "us_per_call",
                      "round_t", "run"}
    assert a.config["runs"] == 3 and a.config["gap"] == 20.0 and a.host["boot_id"] == "x"
    assert sorted({r["round"] for r in a.records if r["run"] == 1}) == [3, 4, 5]  # numbered across sub-runs
    cmp = compare([a, b])
    assert cmp.unit == "run" and {(r["n_base"], r["n_new"]) for r in cmp.rows} == {(3, 3)}
    assert "run" not in noise_sim.simulate_side(rng, 1, 5, 0.0, 0.0, 0.0).records[0]


@pytest.mark.slow
def test_the_simulation_table_and_its_seed(bench, capsys):
    args = ["--reps", "3", "--designs", "1x5,3x5@20", "--sp", "3", "--boot", "0,2", "--jobs", "1"]
    assert bench.main(args) == 0
    first = capsys.readouterr().out
    header = first.splitlines()[0]
    for column in bench.COLUMNS:
        assert column in header
    assert "1 process x 5 rounds (--unit round)" in first and "3 x 5, 20 s apart" in first
    rows = bench.simulate(["1x5", "3x5@20"], [3.0], [0.0, 2.0], 3, 25)
    assert rows == bench.simulate(["1x5", "3x5@20"], [3.0], [0.0, 2.0], 3, 25)  # the same numbers twice
    assert [r["wall s"] for r in rows] == [9.0, 9.0, 49.0, 49.0] and all(r["calibrate s"] == 0 for r in rows)
    for r in rows:
        assert set(r) == set(bench.COLUMNS)
        assert 0 <= r["A/A %"] <= 100 and 0 <= r["coverage %"] <= 100 and r["MDE %"] > 0
    assert bench.simulate(["3x5@20"], [3.0], [2.0], 3, 25) == rows[3:]  # a cell's seed is its own
    assert bench.main(args) == 0
    assert capsys.readouterr().out.splitlines()[:6] == first.splitlines()[:6]


@pytest.mark.slow
def test_a_profiled_single_run_keeps_its_coverage_seeded(bench):
    """One process a side with a noise profile of its kernel, through the real estimator and
    the real compare: its CI must cover the truth (the within-run verdict it replaces covered 46-65%)."""
    row = bench._cell((25, "1x5+P8", 3.0, 0.0, 12))
    assert row["calibrate s"] == 1059.0 and row["wall s"] == 9.0
    assert row["coverage %"] >= 85.0, row
    assert row["no CI %"] <= 25.0 and row["A/A %"] <= 25.0 and row["MDE %"] > 0, row
    within = bench._cell((25, "1x5", 3.0, 0.0, 12))  # the same seed and noise without a profile: it collapses
    assert within["coverage %"] < row["coverage %"]


def test_the_placement_level_rotates_over_k_regions_a_sub_run(monkeypatch):
    """The placement level: round i of a sub-run on region i mod k; with k = 1 the region is one more
    per-process effect (every round of a sub-run alike, sub-runs apart)."""
    import numpy as np

    for name in ("PASS_SD", "ROUND_SD", "DRIFT_SD"):  # the placement level alone
        monkeypatch.setattr(noise_sim, name, 0.0)

    def round_levels(side):
        got = {}
        for s in side.records:
            if not s["warmup"] and s["stride_bytes"] == 65536:
                got[(s.get("run", 0), s["round"])] = round(s["gbps"], 9)
        return got

    rng = np.random.default_rng(7)
    levels = round_levels(noise_sim.simulate_side(rng, 1, 8, 0.0, 0.0, 0.0, placement=0.1, k=4))
    values = [levels[r] for r in sorted(levels)]
    assert len(values) == 8 and values[:4] == values[4:] and len(set(values[:4])) == 4
    levels = round_levels(noise_sim.simulate_side(rng, 2, 3, 20.0, 0.0, 0.0, placement=0.1, k=1))
    by_run = [{v for (run, _), v in levels.items() if run == r} for r in (0, 1)]
    assert [len(v) for v in by_run] == [1, 1] and by_run[0] != by_run[1]
    flat = round_levels(noise_sim.simulate_side(rng, 1, 4, 0.0, 0.0, 0.0))
    assert len(set(flat.values())) == 1  # no placement level: nothing moves
