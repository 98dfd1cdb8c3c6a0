"""scripts/adaptive_coverage.py (not live): the coverage tables of docs/adaptive.md, on a few
replicates: their rows and their shape (the full tables are run by hand; docs/adaptive.md has them)."""
import pytest


def test_the_rounds_table_on_few_replicates(script, capsys):
    assert script("adaptive_coverage").main(["20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + 8 and all(line.startswith("| ") and line.endswith(" |") for line in lines), lines


@pytest.mark.slow  # the noise simulator through the real RunPolicy: seconds even for 4 sides
def test_the_sub_run_table_on_few_sides(script, capsys):
    assert script("adaptive_coverage").main(["--runs", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + 6 and all(line.count("|") == 17 for line in lines), lines
