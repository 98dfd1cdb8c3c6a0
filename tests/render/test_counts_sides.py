"""compare's counts with 2-5 files in which any count changes on any side: every format renders (no side's
columns shifted by a count another side lacks), each text line within 100 columns."""
import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from atsdbench.render import notes

BASE = "guest/6.1.0-50-amd64.json"
COUNTERS = ("ipis", "flushes", "full_flushes")
STRIDES = (65536, 1048576, 2097152, 4194304)
# per file: which (counter, stride) pairs move, and by how much (0 zeroes a count the others keep)
CHANGES = st.lists(st.tuples(st.sampled_from(COUNTERS), st.sampled_from(STRIDES), st.sampled_from([0, 2, 7])),
                   max_size=4)


def _write(fixtures, path, changes, label):
    data = json.loads((fixtures / BASE).read_text())
    data["config"]["label"] = label
    data["host"]["virtualized"] = None  # bare metal: rates and counts both compared
    for counter, stride, factor in changes:
        for s in data["samples"]:
            if s["stride_bytes"] == stride and s.get(counter) is not None:
                s[counter] = s[counter] * factor + (1 if factor else 0)
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(CHANGES, min_size=2, max_size=5))
def test_any_mix_of_count_changes_across_files_renders(cli, fixtures, tmp_path, per_file):
    files = [_write(fixtures, tmp_path / f"k{i}.json", c, f"k{i}") for i, c in enumerate(per_file)]
    for extra in ([], ["--format", "commit"], ["--format", "markdown"], ["--counts"], ["--counts", "--format",
                                                                                          "commit"]):
        p = cli("compare", *files, *extra)
        assert p.returncode == 0, (extra, p.stderr)
        assert "Traceback" not in p.stderr
        if "markdown" not in extra:
            assert max(map(len, p.stdout.splitlines())) <= notes.WIDTH, extra


def test_a_count_changed_in_one_of_three_files(cli, fixtures, tmp_path):
    """The README's before/after/again: a count that moved only in the third file keeps every side's columns."""
    files = [_write(fixtures, tmp_path / f"{n}.json", c, n)
             for n, c in (("before", []), ("after", []), ("again", [("ipis", 65536, 7)]))]
    for extra in ([], ["--format", "commit"], ["--counts"]):
        p = cli("compare", *files, *extra)
        assert p.returncode == 0, p.stderr
    p = cli("compare", "--counts", *files)
    after, again = [ln.split() for ln in p.stdout.splitlines() if ln.startswith("bystanders=1  64K     IPIs")]
    assert after[-2:] == ["(+0%)", "same"] and again[-4:] == ["7", "+6", "(+600%)", "changed"], again  # timed passes only
