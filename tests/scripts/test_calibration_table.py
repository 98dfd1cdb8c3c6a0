"""scripts/calibration_table.py (not live): the coverage and power table of docs/compare.md, on a few
experiments: its rows and their shape (the full table is run by hand; docs/compare.md has it)."""


def test_the_table_on_few_experiments(script, capsys):
    table = script("calibration_table")
    assert table.main(["--experiments", "40"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("N a side | mean: coverage") and len(lines) == 1 + 8 + 2, lines
    assert [line.split(" | ")[0] for line in lines[1:9]] == [str(n) for n in range(3, 11)]
    assert all(line.count(" | ") == 4 and line.count("%") >= 3 for line in lines[1:9]), lines
    assert all(line.startswith("A/A over 4 strides") for line in lines[9:]), lines
