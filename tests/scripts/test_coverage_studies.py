"""scripts/coverage_studies.py (not live: nothing is measured): each study runs, seeded, on a few
experiments, and says its figures, its claim and its verdict on one line; the studies themselves, at
full size, are run by hand and their figures dated in docs/benchmarks.md#coverage-studies."""
import re

import pytest


@pytest.fixture(scope="module")
def studies(script):
    return script("coverage_studies")


LINE = re.compile(r"^(?P<name>[a-z-]+): (?P<figures>.+?\d.*?) \| claimed (?P<claim>.+?) \| "
                  r"(?P<verdict>inside|OUTSIDE|few trials: no claim) \(\d+ s\)$")


def test_every_study_runs_small_and_says_one_line(studies, capsys):
    assert studies.main(["--scale", "0.01"]) == 0  # few trials: no claim, so nothing fails
    lines = capsys.readouterr().out.splitlines()
    assert [LINE.match(line)["name"] for line in lines] == list(studies.STUDIES), lines
    assert all(LINE.match(line)["verdict"] == "few trials: no claim" for line in lines), lines
    assert all("%" in LINE.match(line)["figures"] for line in lines), lines


def test_the_same_seed_gives_the_same_figures(studies):
    assert studies.paired_t(0.01) == studies.paired_t(0.01)
    assert studies.within_run_aa(0.01) == studies.within_run_aa(0.01)


def test_a_figure_outside_its_claim_fails_at_full_size(studies, capsys, monkeypatch):
    monkeypatch.setitem(studies.STUDIES, "mean-ci", lambda scale: ("coverage 80.0%", "93-97% each", False))
    assert studies.main(["--only", "mean-ci"]) == 1
    assert capsys.readouterr().out.startswith("mean-ci: coverage 80.0% | claimed 93-97% each | OUTSIDE (")


@pytest.mark.parametrize("argv", [["--only", "nope"], ["--scale", "0"], ["--scale", "nan"]])
def test_bad_input_is_one_line_and_exit_2(studies, capsys, argv):
    assert studies.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("coverage_studies: ")
