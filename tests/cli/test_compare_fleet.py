"""compare FLEET through the command line (boards as blocks: a row per board and the fleet's, the
commit format's fleet row and number of boards), and compare --fail-on's exit statuses for files,
replicate lists, campaign directories and fleets (0, 1, 125; 2 for a bad threshold)."""
import json
import os
import re

from atsdbench.analysis import gate
from atsdbench.errors import EXIT_NO_VERDICT, EXIT_SLOWER

import fleets
from conftest import unwrap

SPEEDS = {"p9a": 1.0, "p9b": 2.5, "x86a": 0.4, "x86b": 0.8}


def test_compare_fleet_has_a_row_per_board_and_the_fleet_s(cli, tmp_path):
    d = fleets.make_fleet(tmp_path / "f", {**SPEEDS, "lonely": {"B": 1.0}}, effect={"B": 0.95})
    r = cli("compare", d)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "boards as blocks" in lines[0]
    for board in SPEEDS:
        assert sum(1 for line in lines if line.split()[1:2] == [board]) == 8, board  # 4 strides, 2 blocks
    assert sum(1 for line in lines if "fleet (4 boards)" in line) == 8
    assert all(len(line) <= 100 for line in lines)
    assert "left out (not every side ran): lonely ran B" in r.stdout
    assert "t on the boards' log ratios (k - 1 df), 95% confidence; N = 4 boards" in r.stdout
    fleet_rows = [line for line in lines if "fleet (4 boards)" in line and "%" in line and "[" in line]
    assert fleet_rows and all(line.rstrip().endswith("slower") for line in fleet_rows)


def test_compare_fleet_commit_has_the_fleet_row_and_the_number_of_boards(cli, tmp_path):
    d = fleets.make_fleet(tmp_path / "f", SPEEDS, effect={"B": 0.95})
    r = cli("compare", d, "--format", "commit")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].split() == ["Stride", "Before", "After", "Speedup"]
    assert [line.split()[0] for line in lines[2:6]] == ["64K", "1M", "2M", "4M"]
    assert all(line.split()[3] == "-5%" for line in lines[2:6]), r.stdout
    assert "boards as blocks: 4 boards" in unwrap(r.stdout)
    rows = json.loads(cli("compare", d, "--format", "json").stdout)["rows"]
    assert {row["board"] for row in rows} == {*SPEEDS, "fleet"}
    assert all(row["n_base"] == 4 for row in rows if row["board"] == "fleet")


def test_compare_fleet_of_one_board_says_no_fleet_verdict(cli, tmp_path):
    d = fleets.make_fleet(tmp_path / "f", {"only": 1.0}, effect={"B": 0.8})
    r = cli("compare", d, "--fail-on", "5%")
    assert r.returncode == EXIT_NO_VERDICT
    assert "no fleet verdict: 1 board with both sides: a fleet verdict needs 2 or more" in unwrap(r.stdout)
    assert "git bisect's skip" in r.stderr


def test_fail_on_a_fleet(cli, tmp_path):
    slower = fleets.make_fleet(tmp_path / "s", SPEEDS, effect={"B": 0.9})
    assert cli("compare", slower, "--fail-on", "5%").returncode == EXIT_SLOWER
    assert cli("compare", slower, "--fail-on", "20%").returncode == 0
    faster = fleets.make_fleet(tmp_path / "q", SPEEDS, effect={"B": 1.1})
    assert cli("compare", faster, "--fail-on", "5%").returncode == 0


def test_fail_on_files(cli, fixtures):
    before, after = str(fixtures / "before.json"), str(fixtures / "after.json")
    r = cli("compare", after, before, "--fail-on", "5%")  # one session a side: no verdict
    assert r.returncode == EXIT_NO_VERDICT, r.stderr
    assert cli("compare", after, before, "--unit", "round", "--fail-on", "2%").returncode == EXIT_SLOWER
    assert cli("compare", before, after, "--unit", "round", "--fail-on", "2%").returncode == 0
    assert cli("compare", before, after).returncode == 0  # no --fail-on: 0 as before


def test_fail_on_replicate_lists(cli, fixtures, tmp_path):
    base = [str(fixtures / n) for n in ("before.json", "again.json")]
    new = []
    for i, path in enumerate(base):
        new.append(str(tmp_path / f"slow{i}.json"))
        fleets.scaled_copy(path, new[-1], 0.9)
    args = ["compare", ",".join(base), ",".join(new)]
    assert cli(*args, "--fail-on", "5").returncode == EXIT_SLOWER
    assert cli(*args, "--fail-on", "15%").returncode == 0


def test_fail_on_a_campaign_directory_follows_its_rows(cli, tmp_path):
    import campaign_fakes as fakes
    from atsdbench.campaign import step as steps

    images = (fakes.bzimage(tmp_path / "vmlinuz-a", fakes.A_BANNER), fakes.bzimage(tmp_path / "vmlinuz-b",
                                                                                   fakes.B_BANNER))
    d, proc = str(tmp_path / "c"), str(tmp_path / "proc")
    fakes.plan(d, [("old", fakes.A_BANNER, images[0]), ("new", fakes.B_BANNER, images[1])], boots=2)
    method, banner = fakes.Method(), fakes.A_BANNER
    for i in range(4):
        fakes.proc(proc, f"{i + 1:02d}aaaaaa-0000-4000-8000-000000000000", banner)
        steps.Step(d, method, proc=proc, runner=fakes.Runner(proc), out=lambda line: None)()
        banner = fakes.B_BANNER if method.arranged[-1] == "new" else fakes.A_BANNER
    rows = json.loads(cli("compare", d, "--format", "json").stdout)
    rows = [{k: float("nan") if v is None else v for k, v in row.items()} for row in rows]
    r = cli("compare", d, "--fail-on", "5%")
    assert r.returncode == gate.status(rows, 5.0) and "--fail-on 5%" in r.stderr, r.stderr


def test_fail_on_refuses_a_bad_threshold_in_one_line(cli, fixtures):
    before = str(fixtures / "before.json")
    for bad, said in (("lots", "is not a slowdown in percent"), ("150%", "from 0% up to below 100%")):
        r = cli("compare", before, before, "--fail-on", bad)
        assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli("compare", before, before, "--fail-on", "5", "--counts")
    assert r.returncode == 2 and "leave --counts out" in r.stderr


def test_compare_fleet_refuses_what_does_not_apply(cli, tmp_path):
    d = fleets.make_fleet(tmp_path / "f", SPEEDS)
    for extra, said in ((["--by", "threads"], "--by does not apply"), (["--format", "ministat"], "--format must be")):
        r = cli("compare", d, *extra)
        assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    os.remove(os.path.join(d, "fleet.json"))
    r = cli("compare", d)
    assert r.returncode == 2 and "one campaign directory alone" in r.stderr


def test_boards_of_one_file_a_side_have_no_verdict_of_their_own_but_count(cli, tmp_path):
    d = fleets.make_fleet(tmp_path / "f", SPEEDS, effect={"B": 0.9}, files=1)
    r = cli("compare", d, "--fail-on", "5%")
    assert r.returncode == EXIT_SLOWER, r.stdout + r.stderr
    assert "one session a side, no verdicts of their own; their speedups count in the fleet's: p9a, p9b, " \
        "x86a, x86b" in unwrap(r.stdout)
    board_lines = [line for line in r.stdout.splitlines() if line.split()[1:2] == ["p9a"] and "verdict" in line]
    assert board_lines and all("no verdict" in line for line in board_lines)


def test_a_fleet_with_no_board_on_both_sides_is_skipped(cli, tmp_path):
    d = fleets.make_fleet(tmp_path / "f", {"a": {"A": 1.0}, "b": {"B": 2.0}})
    r = cli("compare", d, "--fail-on", "5%")
    assert r.returncode == EXIT_NO_VERDICT and "nothing was compared" in r.stderr
    assert "no fleet verdict: 0 boards with both sides" in r.stdout
    assert "left out (not every side ran): a ran A" in r.stdout and "b ran B" in r.stdout


def test_a_board_s_bad_file_is_named_with_its_board(cli, tmp_path):
    d = fleets.make_fleet(tmp_path / "f", SPEEDS)
    manifest = json.load(open(os.path.join(d, "fleet.json")))
    job = next(j for j in manifest["jobs"] if j["board"] == "x86a")
    with open(os.path.join(d, job["results"][0]), "w") as f:
        f.write('{"format": "atsdbench-result"')
    r = cli("compare", d)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("atsdbench: board x86a: ") and "is not JSON" in r.stderr


def test_a_board_that_stands_out_is_named_in_its_rows_and_the_commit_footer(cli, tmp_path):
    effect = {b: {"B": 0.98} for b in "abcde"}
    effect["odd"] = {"B": 0.80}
    d = fleets.make_fleet(tmp_path / "f", dict(zip([*"abcde", "odd"], [1, 2, 0.5, 1.5, 3, 1])), effect=effect,
                          jitter=0.003)
    r = cli("compare", d)
    assert "odd (stands out)" in r.stdout and "stands out at 64K: odd" in unwrap(r.stdout)
    assert "stands out: odd" in unwrap(cli("compare", d, "--format", "commit").stdout).replace("\n", " ")


def test_an_emulated_fleet_gives_rates_and_no_verdict(cli, tmp_path):
    d = fleets.make_fleet(tmp_path / "f", SPEEDS, effect={"B": 0.8}, host={"virtualized": "qemu-tcg"})
    r = cli("compare", d, "--fail-on", "5%")
    assert r.returncode == EXIT_NO_VERDICT, r.stdout + r.stderr
    fleet_rows = [line for line in r.stdout.splitlines() if "fleet (4 boards)" in line and "Verdict" not in line]
    assert len([line for line in fleet_rows if line.rstrip().endswith("n/a (emulated (qemu-tcg))")]) == 4
    assert sum(1 for line in fleet_rows if re.search(r" -(19|20)\.\d%", line)) == 4  # the speedups stay
