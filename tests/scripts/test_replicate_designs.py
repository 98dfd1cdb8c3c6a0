"""scripts/replicate_designs.py's simulation (not live: nothing is measured): its table, its seed, and
what the real compare does with each design it studies."""
import math

import pytest


@pytest.fixture(scope="module")
def designs(script):
    return script("replicate_designs")


def test_the_table_and_its_seed(designs, capsys):
    assert designs.main(["--reps", "2", "--designs", "1v3,3v3", "--sp", "3:6", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    for column in designs.COLUMNS:
        assert column in out.splitlines()[0]
    assert "1 vs 3 files" in out and "3 vs 3 files" in out
    rows = designs.simulate(["1v3", "3v3"], [(3.0, 6.0)], 2, 57)
    assert rows == designs.simulate(["1v3", "3v3"], [(3.0, 6.0)], 2, 57)  # the same numbers twice
    assert designs.simulate(["3v3"], [(3.0, 6.0)], 2, 57) == rows[1:]  # a cell's seed is its own
    short, balanced = rows
    assert short["verdict %"] == 0 and balanced["verdict %"] == 100  # compare withholds the short side's
    for r in rows:
        assert set(r) == set(designs.COLUMNS) and 0 <= r["A/A stride %"] <= 100
    assert 0 <= short["coverage %"] <= 100 and 0 <= balanced["coverage %"] <= 100


def test_a_side_of_k_files_loads_as_k_files(designs):
    import numpy as np

    from atsdbench.analysis.compare import compare

    rng = np.random.default_rng(3)
    a, b = designs._side(rng, 3, 0.03, 0.0, "A"), designs._side(rng, 1, 0.03, 0.0, "B")
    assert len(a) == 3 and len(b) == 1
    cmp = compare([a, b])
    assert cmp.level == "file" and {(r["n_base"], r["n_new"]) for r in cmp.rows} == {(3, 1)}
    assert all(r["note"] == "unbalanced: 1 vs 3 files" and math.isnan(r["p_value"]) for r in cmp.rows)
    assert any(w == "no verdict for B: 1 vs 3 files; 2 more for B give one"
               for w in cmp.warnings)
    assert not any(math.isnan(r["p_value"]) for r in compare([a, b], unit="run").rows)  # asked for: made
