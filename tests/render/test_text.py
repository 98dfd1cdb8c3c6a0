"""The text around every output (render/notes.py and the notes beside each table): each output's longest line and its count of notes
under the table are held in tests/golden/shapes.json (regenerate with ATSDBENCH_REGOLD=1 and review
the diff); every note is at most shared.WIDTH columns, at most shared.MAX_NOTES of them, each naming a
docs/ anchor that exists."""
import json
import os
import pathlib
import re

import pytest

from atsdbench.analysis import compare as comparison, compare_by
from atsdbench.data import results, sides
from atsdbench.render import compare as compare_formats, notes as shared, tables, verify

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SHAPES = ROOT / "tests" / "golden" / "shapes.json"


def _compare(*files, by=None, **options):
    if by is not None:
        return compare_by.compare_by(sides.load(list(files)), by, **options)
    return comparison.compare(sides.load(list(files)), **options)


_CACHE = {}


def _profile_text():
    """calibrate's report of a simulated 4-sub-run profile (the noise simulator, seeded)."""
    import noise_sim
    import numpy as np

    from atsdbench.analysis import noise
    from atsdbench.data import noise_profile
    from atsdbench.render import noise_profile as noise_profile_report

    r = noise_sim.simulate_side(np.random.default_rng(4), 4, 3, 20.0, 0.03, 0.0, label="A")
    entries, rounds = noise.noise_profile_entries(r)
    data = noise_profile.build(r.host, r.config, entries, True, rounds, None, "cal.json", span_s=60.0)
    data["date"] = "2026-01-01 00:00:00 UTC"  # the golden holds lengths: no clock in them
    return noise_profile_report.render(noise_profile.NoiseProfile(data, "p.json"))


def _outputs():
    if not _CACHE:
        here = os.getcwd()
        os.chdir(FIXTURES)  # file names as given, not this checkout's path: the golden holds lengths
        try:
            _CACHE.update(_make_outputs())
        finally:
            os.chdir(here)
    return _CACHE


def _make_outputs():
    from atsdbench.analysis import model
    from atsdbench.render import model as model_formats

    before = results.load("before.json")
    out = {"run before.json": tables.run_report(before),
           "show before.json": "\n".join([tables.headline(before), tables.show_table(before)[0]] + tables.notes(before))}
    # a threads sweep's scaling table with the lines above it (show's notes under it are show's own)
    out["show sweep.json --scaling"] = tables.show_table(results.load("sweep.json"), scaling=True)[0]
    cases = {"compare before after": (("before.json", "after.json"), {}),
             "compare --unit round": (("before.json", "after.json"), {"unit": "round"}),
             "compare three --unit round": (("before.json", "after.json", "again.json"), {"unit": "round"}),
             "compare --metric median --unit round": (("before.json", "after.json"), {"metric": "median",
                                                                                       "unit": "round"}),
             "compare before,again after": (("before.json,again.json", "after.json"), {}),
             "compare single_round before": (("single_round.json", "before.json"), {}),
             "compare sweep --by threads": (("sweep.json",), {"by": "threads"}),
             "compare sweep sweep_after": (("sweep.json", "sweep_after.json"), {})}
    for name, (files, options) in cases.items():
        cmp = _compare(*files, **options)
        out[name] = compare_formats.render_text(cmp)
        out[name + " --format commit"] = compare_formats.render_commit(cmp)
    from atsdbench.render import counts

    three = _compare("before.json", "after.json", "again.json")
    out["compare three --counts"] = counts.render_text(three)
    out["compare three --counts --format commit"] = counts.render_commit(three)
    wide = _every_column(before)
    out["run, every column"] = tables.run_report(wide)
    out["show, every column"] = "\n".join([tables.headline(wide), tables.show_table(wide)[0]])
    groups = [comparison.sub_runs(sides.files(f)) for f in ("before.json", "after.json")]
    for unit in ("auto", "round"):
        analysis = model.analyse(groups, ["Before", "After"], unit=unit)
        out[f"model --unit {unit}"] = model_formats.render_text(analysis)
        out[f"model --unit {unit} --format commit"] = model_formats.render_commit(analysis)
    out["calibrate's profile"] = _profile_text()
    return out


def _every_column(result):
    """before.json with latency percentiles, GPU touch and POWER's counters on every pass: the widest
    table run and show print, which must still fit in shared.WIDTH columns (as blocks)."""
    from atsdbench.data import results

    extra = {"lat_p50_us": 11.0, "lat_p90_us": 12.5, "lat_p99_us": 19.25, "lat_max_us": 123.5,
             "gpu_touch_ns": 1.5e6, "ipis": 3, "tlbie": 40, "tlbie_global": 20, "tlbie_full": 1,
             "h_remove": 2}
    # a loaded file's records are a view made from its columns: a new Result from changed copies
    return results.Result(result.host, result.config, [dict(r, **extra) for r in result.records], result.complete,
                          result.started, result.finished, result.path)


def _notes(output):
    """The lines under the table: after its last row (columns two spaces apart, or a rule), up to a
    blank line (an appendix: compare's counts)."""
    lines = output.split("\n")
    rows = [i for i, line in enumerate(lines) if line.startswith(" ") or re.search(r"\S\s{2,}\S", line)]
    notes = []
    for line in lines[max(rows) + 1:]:
        if not line:
            break
        notes.append(line)
    return notes


def _shape(output):
    return {"longest": max(map(len, output.split("\n"))), "notes": len(_notes(output))}


def test_shapes_are_the_golden_ones():
    got = {name: _shape(o) for name, o in _outputs().items()}
    if os.environ.get("ATSDBENCH_REGOLD"):
        SHAPES.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert got == json.loads(SHAPES.read_text())


@pytest.mark.parametrize("name", sorted(_outputs()))
def test_every_line_fits(name):
    """Tables included: a wide one is cut into blocks (layout.fitted), a long headline wrapped."""
    long = [line for line in _outputs()[name].split("\n") if len(line) > shared.WIDTH]
    assert not long, long
    assert json.loads(SHAPES.read_text())[name]["longest"] <= shared.WIDTH


@pytest.mark.parametrize("name", sorted(_outputs()))
def test_notes_are_short_few_and_anchored(name):
    output = _outputs()[name]
    notes = _notes(output)
    assert len(notes) <= shared.MAX_NOTES, notes
    assert all(len(line) <= shared.WIDTH for line in notes), notes
    if "--format commit" not in name and name.startswith(("compare", "model")):
        # the legend's two lines (test, confidence, unit, N; what a verdict means) and then one note of
        # what the interval leaves out, which names its long story
        assert "docs/" in notes[-1] and re.search(r"\(docs/[\w.-]+\.md#[\w-]+\)$", notes[-1]), notes
    for line in notes:
        assert "docs/" not in line or re.search(r"\(docs/[\w.-]+\.md#[\w-]+\)$", line), line


def test_every_anchor_exists():
    from doc_anchors import anchors

    for target in shared.ANCHORS:
        file, _, anchor = target.partition("#")
        assert anchor in anchors(ROOT / file), target


def test_every_anchor_a_message_names_exists():
    """Warnings worded where they are raised (analysis/, data/, ...) name docs/ anchors too."""
    from doc_anchors import anchors

    found = {m for path in (ROOT / "atsdbench").rglob("*.py")
             for m in re.findall(r"docs/[\w-]+\.md#[\w-]+", path.read_text())}
    assert found >= set(shared.ANCHORS)
    missing = [t for t in sorted(found) if t.partition("#")[2] not in anchors(ROOT / t.partition("#")[0])]
    assert not missing, missing


def test_no_figure_of_our_machines_is_printed():
    for name, output in _outputs().items():
        assert not re.search(r"measured here|this VM|\d+-\d+% of|\d+% of pairs", output), name


def test_plurals():
    assert shared.plural(1, "round") == "1 round" and shared.plural(2, "pass", "passes") == "2 passes"


def test_a_long_fact_hangs_under_its_value():
    line = "mitigations: " + ", ".join(f"spectre_v{i}: Mitigation; retpolines, IBPB conditional" for i in range(4))
    out = shared.hang(line, 13).split("\n")
    assert len(out) > 1 and all(len(x) <= shared.WIDTH for x in out) and all(x.startswith(" " * 13) for x in out[1:])
    assert shared.hang("short: yes", 7) == "short: yes"


def test_wrap_breaks_after_semicolons_and_keeps_every_word():
    line = "; ".join(["alpha beta gamma delta"] * 12) + "; " + "word " * 40
    out = shared.wrap(line).split("\n")
    assert all(len(x) <= shared.WIDTH for x in out) and " ".join(out).split() == line.split()
    assert shared.wrap("short; line") == "short; line"


def test_one_round_of_one_rep_reads_singular():
    r = results.load(str(FIXTURES / "before.json"))
    r.config.update(rounds=1, reps=1)
    assert "1 round x 1 rep, CPU" in tables.headline(r)


def test_the_stale_line_is_worded_as_the_issue_words_it():
    line = verify.stale_translation(3, 16384, "madvise", "64K", [1], [0])
    assert line == ("STALE TRANSLATION: 3 of 16384 checks read through a translation after the invalidation "
                    "returned (madvise, 64K, CPUs 1 -> 0)")
    groups = [{"op": "munmap", "stride_bytes": 2 << 20, "invalidator_cpus": [0, 1], "checker_cpus": [0, 1, 2, 3],
               "stale": 16384, "checks": 16384}]
    lines = verify.stale_lines(groups, "a-very-long-file-name-of-a-result.json")
    assert lines[0].startswith("a-very-long-file-name-of-a-result.json: STALE TRANSLATION: 16384 of 16384")
    assert all(len(part) <= shared.WIDTH for part in lines[0].split("\n"))
    assert " ".join(lines[0].split()).endswith("(munmap, 2M, CPUs 0,1 -> 0,1,2,3)")


def test_the_verify_line_reports_the_checks_that_proved_nothing():
    line = tables.verify_passes_line({"checks": 98304, "held": 97310, "stale": 0, "calls": 98304})
    assert " ".join(line.split()) == (
        "verify: untimed passes after each round's timed ones: 0 stale in 98304 checks; 97310 of 98304 held the "
        "translation while the call ran (the other 994 proved nothing) (docs/verify.md#held)")
    assert all(len(x) <= shared.WIDTH for x in line.splitlines())
    assert "on by default for --workload" in tables.verify_passes_line({"checks": 1, "held": 1, "stale": 0, "calls": 1}, True)
    assert "proved nothing" not in tables.verify_passes_line({"checks": 1, "held": 1, "stale": 0, "calls": 1})
