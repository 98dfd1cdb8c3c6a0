"""scripts/bench_defaults.py (not live: nothing is measured): designs cut out of --runs files, the pairs,
the sessions, the canary covariate and the seeded simulation, on simulated files with the real schema."""
import math

import noise_sim
import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(script):
    return script("bench_defaults")


@pytest.fixture(scope="module")
def series():
    """Six files of 8 sub-runs x 5 rounds, 150 s apart, with canaries: a miniature of the real series."""
    rng = np.random.default_rng(7)
    out = []
    for k in range(6):
        r = noise_sim.simulate_side(rng, 8, 5, 20.0, 0.02, 0.0, label="A", boot_id="b")
        for s in r.records:
            s["canary_compute_ns"] = 22_000_000 + int(rng.integers(0, 100_000))
            s["canary_chase_ns"] = 40_000_000 + int(rng.integers(0, 400_000))
        r.started, r.path = 150.0 * k, f"run{k:02d}.json"
        out.append(r)
    return out


def test_a_design_is_cut_out_of_a_file(bench, series):
    part = bench.cut(series[0], (0, 2, 4), 3)
    assert [p.sub_run for p in part.sub_runs()] == [0, 1, 2]
    measured = {(s["run"], s["round"]) for s in part.records if not s["warmup"]}
    assert len(measured) == 9  # 3 sub-runs x their first 3 measured rounds
    originals = sorted({s["round"] for s in series[0].records if s["run"] == 2 and not s["warmup"]})[:3]
    assert sorted({rd for run, rd in measured if run == 1}) == originals
    assert part.config["runs"] == 3 and part.config["rounds"] == 3


def test_pairs_are_two_files_apart_and_disjoint_ones_independent(bench):
    all_pairs, disjoint = bench.pairs_of(8)
    assert all(j - i >= 2 for i, j in all_pairs) and len(all_pairs) == 21
    assert disjoint == [(0, 2), (1, 3), (4, 6), (5, 7)]
    assert len({f for p in disjoint for f in p}) == 2 * len(disjoint)


@pytest.mark.slow
def test_the_tables_have_a_row_per_design(bench, series):
    head, rows = bench.design_table(series)
    assert [r[0] for r in rows] == list(bench.DESIGNS) and "A/A, all pairs" in head
    for r in rows:
        k, n = map(int, r[2].split(" = ")[0].split("/"))
        assert 0 <= k <= n == len(bench.pairs_of(len(series))[0])
    head, rows, n = bench.session_table(series)
    assert n >= 6 and len(rows) >= 4 and rows[0][0].startswith("2 runs a side, alternating")
    head, rows = bench.canary_table(series)
    assert {r[1] for r in rows} == set(bench.CANARIES)
    head, rows = bench.explained(series)
    assert len(rows) == 4 and all(r[2].endswith("%") for r in rows)


def test_ancova_recovers_a_known_side_difference(bench):
    rng = np.random.default_rng(3)
    ca, cb = rng.normal(0, 1, 12), rng.normal(0.5, 1, 12)
    ya = 2.0 + 0.3 * ca + rng.normal(0, 0.01, 12)
    yb = 2.1 + 0.3 * cb + rng.normal(0, 0.01, 12)
    d, se, df = bench.ancova(ya, [ca], yb, [cb])
    assert df == 24 - 3 and abs(d - 0.1) < 4 * se and se < 0.02
    d0, se0, df0 = bench.ancova(ya, [], yb, [])  # without the covariate the canary's 0.15 shift is in d
    assert df0 == 22 and abs(d0 - 0.25) < 0.1 and se0 > se


@pytest.mark.slow
def test_the_simulation_is_seeded(bench):
    head, rows = bench.simulate(2, 25, sps=(0,))
    assert rows == bench.simulate(2, 25, sps=(0,))[1]
    assert [r[0] for r in rows] == [v[0] for v in bench._session_designs().values()]
    for r in rows:
        assert 0 <= float(r[2]) <= 100 and (r[3] == "-" or 0 <= float(r[3]) <= 100)
        assert r[5] == "-" or float(r[5]) > 0 and math.isfinite(float(r[5]))
