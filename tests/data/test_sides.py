"""data/sides.py: the labels a table shows."""
import json

import pytest

from atsdbench.data import sides


def test_control_characters_in_a_label_are_shown_escaped():
    assert sides.shown_label("v6.18\nrm -rf") == "v6.18\\nrm -rf"
    assert sides.shown_label("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert sides.shown_label("plain label, é") == "plain label, é"


@pytest.mark.parametrize("fmt", ["text", "markdown", "commit", "ministat", "lava"])
def test_no_table_prints_a_label_s_control_characters(fixtures, tmp_path, cli, fmt):
    for name, label in (("a", "base\nline two"), ("b", "\x1b[2J\x1b[31mnew")):
        data = json.loads((fixtures / ("before.json" if name == "a" else "after.json")).read_text())
        data["config"]["label"] = label
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    p = cli("compare", tmp_path / "a.json", tmp_path / "b.json", "--format", fmt)
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout + p.stderr and "line two" not in [x.strip() for x in p.stdout.splitlines()]
    p = cli("compare", tmp_path / "a.json", tmp_path / "b.json", "--labels", "x\ny,\x07z", "--format", fmt)
    assert p.returncode == 0 and "\x07" not in p.stdout and not any(x.startswith("y") for x in p.stdout.splitlines())
