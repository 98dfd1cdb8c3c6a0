"""compare FLEET's analysis (analysis/blocked.py): boards as blocks, on fleets of scaled fixture copies
(tests/support/fleets.py): the boards' speeds cancel, a board that stands out is named, one board gives
no fleet verdict, a board that ran one side is left out."""
import math

import numpy as np
import pytest

from atsdbench.analysis import blocked, compare
from atsdbench.data import sides

import fleets


def _fleet(directory, **kw):
    names, boards, one_sided = sides.fleet_sides(fleets.make_fleet(directory, **kw))
    found = {b: compare.compare(sides.load(paths), labels=names, store=None) for b, paths in boards.items()}
    return blocked.blocked(found, names, one_sided=one_sided), boards


def test_board_speeds_cancel_where_exchangeable_files_widen_the_interval(tmp_path):
    speeds = {"p9a": 1.0, "p9b": 2.5, "x86a": 0.4, "x86b": 0.8}
    fleet, boards = _fleet(tmp_path / "f", boards=speeds, effect={"B": 0.97}, files=2, jitter=0.01)
    mixed = compare.compare([[r for paths in boards.values() for r in sides.files(paths[i])] for i in (0, 1)],
                            labels=["A", "B"], store=None)
    for row, plain in zip(fleet.rows, mixed.rows):
        assert row["n_base"] == 4 and row["test"] == blocked.TEST and row["unit"] == blocked.UNIT
        assert row["ci_low_pct"] < -3 < row["ci_high_pct"] and row["significant"]
        fleet_width = row["ci_high_pct"] - row["ci_low_pct"]
        assert fleet_width * 10 < plain["ci_high_pct"] - plain["ci_low_pct"], (row, plain)
        assert not plain["significant"]  # the boards' 6x range of speeds hides the 3% in the mixed files
    assert not fleet.withheld and not fleet.one_sided and not fleet.stands_out


def test_one_board_gives_no_fleet_verdict_and_says_why(tmp_path):
    fleet, _ = _fleet(tmp_path / "f", boards={"only": 1.0}, effect={"B": 0.9})
    assert fleet.withheld == blocked.TOO_FEW
    for row in fleet.rows:
        assert math.isnan(row["p_value"]) and not row["significant"] and row["note"].startswith("1 board:")
        assert row["speedup_pct"] == pytest.approx(-10, abs=1.5)


def test_a_board_that_ran_one_side_is_named_and_left_out(tmp_path):
    boards = {"a": 1.0, "b": 2.0, "c": 0.5, "half": {"A": 7.0}}
    fleet, used = _fleet(tmp_path / "f", boards=boards, effect={"B": 1.05})
    assert fleet.one_sided == {"half": ["A"]} and list(used) == ["a", "b", "c"]
    assert all(row["boards"] == ["a", "b", "c"] and row["n_base"] == 3 for row in fleet.rows)


def test_a_board_whose_effect_stands_out_is_named(tmp_path):
    effect = {b: {"B": 0.98} for b in "abcde"}
    effect["odd"] = {"B": 0.80}
    boards = {b: s for b, s in zip(["a", "b", "c", "d", "e", "odd"], [1, 2, 0.5, 1.5, 3, 1])}
    fleet, _ = _fleet(tmp_path / "f", boards=boards, effect=effect, jitter=0.003)
    assert fleet.stands_out and all(found == ["odd"] for found in fleet.stands_out.values())


def test_the_interval_is_the_mean_log_ratio_t_on_k_minus_1_df():
    d = np.log([1.01, 1.03, 0.99, 1.02])
    r = blocked.fleet_difference(d, 95)
    from scipy import stats

    low, high = stats.t.interval(0.95, 3, loc=d.mean(), scale=stats.sem(d))
    assert r["df"] == 3 and r["ci_low_pct"] == pytest.approx((math.exp(low) - 1) * 100)
    assert r["ci_high_pct"] == pytest.approx((math.exp(high) - 1) * 100)
    assert r["p_value"] == pytest.approx(stats.ttest_1samp(d, 0).pvalue)


def test_standing_out_needs_three_boards_and_names_the_far_one():
    assert blocked.standing_out([("a", 0.0), ("b", 0.5)]) == []
    named = [("a", 0.010), ("b", 0.012), ("c", 0.011), ("d", 0.009), ("far", -0.2)]
    assert blocked.standing_out(named) == ["far"]
    assert blocked.standing_out(named[:4]) == []
