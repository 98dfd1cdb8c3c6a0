"""scripts/bench_placement.py: its variance components (pure, on seeded data with known levels) and its
quick mode (live: it measures; its figures are not asserted)."""
import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(script):
    return script("bench_placement")


def test_components_recover_known_levels(bench):
    rng = np.random.default_rng(35)
    P, R, N = 40, 4, 8
    sp, sr, se = 0.10, 0.15, 0.03
    y = (rng.normal(0, sp, (P, 1, 1)) + rng.normal(0, sr, (P, R, 1)) + rng.normal(0, se, (P, R, N)))
    c = bench.components(y)
    assert c["df"] == {"process": P - 1, "region": P * (R - 1), "round": P * R * (N - 1)}
    assert abs(c["round"] ** 0.5 - se) < 0.2 * se
    assert abs(c["region"] ** 0.5 - sr) < 0.2 * sr
    assert abs(c["process"] ** 0.5 - sp) < 0.35 * sp
    assert c["region_p"] < 1e-6


def test_components_without_a_region_level_find_none(bench):
    rng = np.random.default_rng(7)
    c = bench.components(rng.normal(0, 0.05, (6, 4, 5)))
    assert c["region"] < 0.02 ** 2 and c["region_p"] > 0.001
    # negative moment estimates are set to 0, never left negative
    flat = np.zeros((3, 2, 2))
    flat[:, :, 1] = 1.0
    c = bench.components(flat)
    assert c["region"] == 0.0 and c["process"] == 0.0 and c["round"] > 0


def test_analyse_and_table_from_worker_outputs(bench):
    out = lambda shift: {"records": [{"region": r, "round": n, "stride": 65536, "gbps": 10.0 * (1 + 0.3 * r) + shift + n * 0.01}
                                     for r in range(2) for n in range(3)], "placements": []}
    rows = bench.analyse({"forward": [out(0.0), out(1.0)]}, [65536])
    ((variant, stride, c),) = rows
    assert (variant, stride) == ("forward", 65536) and c["region"] > c["round"]
    text = bench.table(rows)
    assert "between-region" in text and "forward" in text and "64K" in text


def test_bad_arguments_are_one_line_exit_2(bench, capsys):
    assert bench.main(["--variants", "sideways"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "variants from forward, reversed, recycled" in err


@pytest.mark.live
def test_quick_mode_measures_every_variant(bench, capsys, tmp_path):
    assert bench.main(["--quick", "--out", str(tmp_path / "q.json")]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\n") == 3 + 3 * 2  # the headline, two header lines, 3 variants x 2 strides
    data = json.loads((tmp_path / "q.json").read_text())
    assert set(data["runs"]) == {"forward", "reversed", "recycled"}
    one = data["runs"]["forward"][0]
    assert len(one["records"]) == 2 * 2 * 2 and len(one["placements"]) == 2  # K 2 x 2 rounds x 2 strides
