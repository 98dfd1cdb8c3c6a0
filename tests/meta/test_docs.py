"""The README is a front door and docs/ holds the rest: every relative link resolves, every page is reachable."""
import pathlib
import re

import pytest
from doc_anchors import anchors as _anchors, prose as _prose, slug as _slug

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
FILES = [README, *PAGES]

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _links(path):
    """(line number, target) of every relative link in PATH."""
    for number, line in enumerate(_prose(path.read_text()), 1):
        for target in LINK.findall(line):
            if not re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
                yield number, target


def _resolve(path, target):
    """The file and anchor a relative link from PATH points to."""
    file, _, anchor = target.partition("#")
    return (path.parent / file).resolve() if file else path.resolve(), anchor


def test_there_are_pages():
    assert len(PAGES) >= 10


def test_the_slug_is_githubs():
    assert _slug("Comparing: `atsdbench compare`") == "comparing-atsdbench-compare"
    assert _slug("A/A: two runs of the same thing") == "aa-two-runs-of-the-same-thing"
    assert _slug("Adaptive runs: `--until`") == "adaptive-runs---until"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(path):
    bad = []
    for number, target in _links(path):
        file, anchor = _resolve(path, target)
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        if not file.exists():
            bad.append(f"{where}: no such file")
        elif ROOT.resolve() not in file.parents and file != ROOT.resolve():
            bad.append(f"{where}: outside the repository")
        elif anchor and (file.suffix != ".md" or anchor not in _anchors(file)):
            bad.append(f"{where}: no heading with anchor #{anchor}")
    assert not bad, "\n".join(bad)


def test_readme_is_a_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move what is not the front door to docs/"


QUICK = 'pytest -q -m "not live"'
REST = 'pytest -q --slow -m "live or slow"'


def test_readme_keeps_the_two_set_up_commands():
    """.ci/run runs the README's test commands, the quick set and then the rest: findable, exactly."""
    lines = README.read_text().splitlines()
    assert "pip install . && atsdbench run" in lines
    assert f"pip install '.[test]' && {QUICK}" in lines
    assert f"pip install '.[test]' && {QUICK} && {REST}" in lines
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    quick = [i for i, line in enumerate(ci) if line.startswith(QUICK + " ")]
    rest = [i for i, line in enumerate(ci) if line.startswith(REST + " ")]
    assert len(quick) == len(rest) == 1 and quick < rest, "the quick set first, then the live and slow tests"


def test_every_page_is_linked_from_the_readme():
    linked = {_resolve(README, target)[0] for _, target in _links(README)}
    unlinked = [p.relative_to(ROOT).as_posix() for p in PAGES if p.resolve() not in linked]
    assert not unlinked, f"README.md links none of {unlinked}"


def test_the_picture_is_linked():
    targets = {_resolve(p, t)[0] for p in FILES for _, t in _links(p)}
    assert (ROOT / "docs" / "sweep.png").resolve() in targets


DIARY = re.compile(r"\b([01]?[0-9]|2[0-3]):[0-5][0-9]\b|\b(today|yesterday|tonight|this morning|in the morning|"
                   r"afternoon|later that day|the same day|the day before|fast hours|slow hours)\b", re.I)


def test_benchmarks_are_dated_evidence_not_a_diary():
    """docs/benchmarks.md dates its evidence by section, never by the clock or the day's story."""
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    found = [(n, m.group(0)) for n, line in enumerate(_prose(text), 1) for m in DIARY.finditer(line)]
    assert not found, found


def test_no_test_speaks_of_the_issue():
    """Tests say what they hold, not where the wish came from."""
    said = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "tests").rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"\bthe issue\b|\bissue's\b", line, re.I) and p.name != "test_docs.py"]
    assert not said, said


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_the_docs_way_to_give_stat_a_result_s_numbers_works(tmp_path, fixtures):
    """docs/stat.md#a-result-files-numbers: its shell lines, run on two result files, give stat two
    columns of round means (show --format's help points there)."""
    import os
    import shutil
    import subprocess
    import sys

    doc = (ROOT / "docs" / "stat.md").read_text()
    section = doc.split("## A result file's numbers", 1)[1]
    script = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    for name in ("before", "after"):
        shutil.copy(fixtures / f"{name}.json", tmp_path / f"{name}.json")
    env = dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    p = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "x before.txt" in p.stdout and "+ after.txt" in p.stdout and "Student's t" in p.stdout
    assert len((tmp_path / "before.txt").read_text().split()) == 5  # before.json's 5 rounds
