"""render/layout.fitted through compare's text and commit tables (named apart from tests/meta/test_layout.py:
test files need unique basenames): every block names the side of each of its columns, whatever the
sides' number and labels, in lines of at most 100 columns."""
import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import atsdbench
from atsdbench.analysis import compare as comparison
from atsdbench.render import compare as render, notes
from conftest import FIXTURES

# Labels of characters no header's own words hold (Stride, GB/s, Speedup, 95% CI, within-run interval,
# Detects (80%), Verdict): a label found in a header is that side's, never a statistic's.
ALPHABET = "qzjkxyQZJKXYbfgmo1234567_+.,"
LABEL = st.one_of(st.text(ALPHABET + " ", min_size=1, max_size=60), st.text(ALPHABET + " ", min_size=40, max_size=60)
                  ).filter(lambda s: s == s.strip() and "  " not in s)  # long ones often: they cut a side


def _norm(text):
    return text.replace(" ", "")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Six runs of their own (three fixtures and a copy of each with samples of its own)."""
    folder, out = tmp_path_factory.mktemp("runs"), []
    for k in range(2):
        for name in ("before.json", "after.json", "again.json"):
            data = json.loads((FIXTURES / name).read_text())
            for s in data["samples"]:
                s["retaken"] = k
            path = folder / f"{k}-{name}"
            path.write_text(json.dumps(data))
            out.append(atsdbench.load(str(path)))
    return out


def _blocks(table):
    """Each block of a text or commit table as (header text per column, row count): columns found
    where every line of the block is blank two columns running."""
    out = []
    for block in table.split("\n\n"):
        lines = block.split("\n")
        width = max(map(len, lines))
        padded = [line.ljust(width + 2) for line in lines]
        blank = [all(line[p] == " " for line in padded) for p in range(width + 2)]
        spans, start = [], None
        for p in range(width + 2):
            if not blank[p] and start is None:
                start = p
            elif blank[p] and start is not None and (p + 1 >= len(blank) or blank[p + 1]):
                spans.append((start, p))
                start = None
        top = next(i for i, line in enumerate(lines) if line.startswith("Stride") or line.startswith("---"))
        if lines[top].startswith("---"):
            top -= 1
        heads = ["".join(line[a:b].strip() for line in lines[:top + 1]) for a, b in spans]
        out.append(heads)
    return out


def _check(table, labels, per_side):
    seen = {label: 0 for label in labels[1:]}
    for heads in _blocks(table):
        assert heads[0] == "Stride" and _norm(labels[0]) in _norm(heads[1]), heads
        current = None
        for head in heads[2:]:
            named = [label for label in labels[1:] if _norm(label) in _norm(head)]
            assert len(named) <= 1, (head, named)
            current = named[0] if named else current
            assert current is not None, f"a column of no side named: {heads}"
            seen[current] += 1
    assert seen == {label: per_side for label in labels[1:]}, seen


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 5).flatmap(lambda n: st.lists(LABEL, min_size=n + 1, max_size=n + 1, unique_by=_norm)))
def test_every_block_names_the_side_of_each_column(runs, labels):
    normed = [_norm(label) for label in labels]
    if any(a != b and a in b for a in normed for b in normed):
        return  # one label inside another: which side a header names would be ambiguous to this test
    cmp = comparison.compare(runs[:len(labels)], labels=labels, unit="round")
    text = render._table(cmp, "simple")
    _check(text, labels, 5)
    commit = render.render_commit(cmp).split("\n")
    footer = next(i for i in range(len(commit) - 1, 0, -1) if commit[i][:1].isdigit()) + 1
    _check("\n".join(commit[1:footer]), labels, 2)
    for out in (render.render_text(cmp), render.render_commit(cmp)):
        assert max(map(len, out.splitlines())) <= notes.WIDTH


def test_the_long_labels_of_three_patches_keep_their_sides(runs):
    labels = ["v6.18-base", "v6.18-with-batched-flush-patch-v3", "v6.18-with-batched-flush-patch-v4-rebased"]
    cmp = comparison.compare(runs[:3], labels=labels, unit="round")
    for heads in _blocks(render._table(cmp, "simple")):
        sides = {label for label in labels[1:] for head in heads[2:] if label in head}
        # a label names every column of its side in each block, wrapped over the header's lines
        assert all(any(label in head for label in labels[1:]) for head in heads[2:]) and sides, heads
    assert max(map(len, render.render_text(cmp).splitlines())) <= notes.WIDTH
