"""The option table (csrc/atsd_options.h) is the one declaration of a run's options."""
import pathlib
import re
import subprocess

import pytest

from atsdbench import cli
from atsdbench.measure import core

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"


def _section(page, title):
    """The text of docs/PAGE from the heading line TITLE to the next heading outside a code block."""
    lines = (DOCS / page).read_text().splitlines()
    start = lines.index(title)
    out, fence = [], False
    for line in lines[start + 1:]:
        fence ^= line.startswith("```")
        if not fence and line.startswith("#"):
            break
        out.append(line)
    return "\n".join(out)


def test_run_options_page_names_every_option_with_its_default():
    table = _section("run-options.md", "# `atsdbench run` options")
    for o in core.options():
        if not o["run"]:
            continue
        flag = "-o" if o["name"] == "output" else f"--{o['name']}"
        rows = [line for line in table.splitlines() if line.startswith("|") and f"`{flag}" in line]
        assert rows, f"docs/run-options.md's option table lacks {flag}"
        if o["metavar"] and o["default"] is not None:
            assert any(f"{flag} {o['default']}" in row or f"default {o['default']}" in row for row in rows), \
                f"docs/run-options.md's row for {flag} does not give its default {o['default']}"


def test_atsd_page_says_which_options_atsd_lacks():
    missing = sorted(f"--{o['name']}" for o in core.options() if o["run"] and not o["atsd"])
    atsd = _section("atsd.md", "# Minimal systems: the standalone `atsd`")
    m = re.search(r"It takes every `run` option but ([^.]*)\.", atsd.replace("\n", " "))
    assert m and sorted(re.findall(r"`(--[a-z-]+)`", m.group(1))) == missing


def test_argparse_is_built_from_the_table():
    run = cli.build_parser("run")._subparsers._group_actions[0].choices["run"]
    flags = {s for a in run._actions for s in a.option_strings} - {"-h", "--help"}
    # --force: the command line's rule for every file it writes (data/files.py), not a plan option
    want = {f"--{o['name']}" for o in core.options() if o["run"]} | {"-o", "--force"}
    assert flags == want


def test_atsd_help_is_built_from_the_table(atsd):  # live through the fixture: the session's one make of atsd
    text = subprocess.run([atsd, "--help"], capture_output=True, text=True, check=True).stdout
    words = " ".join(text.split())  # a help past 100 columns is wrapped at its spaces
    for o in core.options():
        assert (f"--{o['name']}" in text) == o["atsd"], o["name"]
        if o["atsd"]:
            assert " ".join(o["help"].split()) in words, o["name"]


def test_defaults_come_from_the_table_alone():
    from atsdbench.measure.plan import make_plan

    p = make_plan(meminfo={"MemAvailable": 8 << 30}, affinity=[0, 1])
    table = {o["field"]: o["default"] for o in core.options() if o["field"]}
    assert p.size == core.parse_size(table["size"]) and p.rounds == int(table["rounds"])
    assert p.strides == [core.parse_size(s) for s in table["strides"].split(",")]


def test_run_help_prints_every_option(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    for o in core.options():
        if o["run"]:
            assert f"--{o['name']}" in out
