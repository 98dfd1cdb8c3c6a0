"""show/compare --format lava, and lava/report.sh turning the lines into lava-test-case calls."""
import os
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
LINE = re.compile(r"[A-Za-z0-9_.-]+ (pass|fail) -?[0-9.e+-]+ (GB/s|%)|[A-Za-z0-9_.-]+ skip")


def test_show_lava_is_one_line_per_cell_and_stride(cli, fixtures):
    r = cli("show", str(fixtures / "guest" / "6.1.0-50-amd64.json"), "--format", "lava")
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 8 and all(LINE.fullmatch(x) for x in lines), r.stdout
    assert lines[0].startswith("rate-bystanders_0-64K pass ") and lines[0].endswith(" GB/s")
    r = cli("show", str(fixtures / "before.json"), "--format", "lava")
    assert r.stdout.splitlines()[0].startswith("rate-64K pass ")


def test_compare_lava_fails_a_proven_slowdown_only(cli, fixtures):
    r = cli("compare", str(fixtures / "after.json"), str(fixtures / "before.json"), "--unit", "round",
            "--format", "lava")
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 4 and all(LINE.fullmatch(x) for x in lines)
    js = cli("compare", str(fixtures / "after.json"), str(fixtures / "before.json"), "--unit", "round",
             "--format", "json")
    import json
    rows = json.loads(js.stdout)
    for line, row in zip(lines, rows):
        slower = row["significant"] and row["speedup_pct"] < 0
        assert line.split()[1] == ("fail" if slower else "pass")
    assert any(x.split()[1] == "fail" for x in lines)  # the fixtures' slowdown is proven at 4M at least
    # one session a side: no verdict, so nothing fails
    r = cli("compare", str(fixtures / "after.json"), str(fixtures / "before.json"), "--format", "lava")
    assert all(x.split()[1] == "pass" for x in r.stdout.splitlines())


def test_compare_lava_refuses_counts(cli, fixtures):
    r = cli("compare", str(fixtures / "before.json"), str(fixtures / "after.json"), "--counts", "--format", "lava")
    assert r.returncode == 2 and "leave --counts out" in r.stderr


def test_report_sh_calls_lava_test_case(tmp_path):
    fake = tmp_path / "lava-test-case"
    log = tmp_path / "calls"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    fake.chmod(0o755)
    lines = "rate-64K pass 5.86 GB/s\nspeedup-1M fail -7.5 %\nspeedup-2M skip\n"
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    subprocess.run(["sh", str(ROOT / "lava" / "report.sh")], input=lines, text=True, env=env, check=True)
    assert log.read_text().splitlines() == ["rate-64K --result pass --measurement 5.86 --units GB/s",
                                            "speedup-1M --result fail --measurement -7.5 --units %",
                                            "speedup-2M --result skip"]


def test_the_test_definition_has_the_linaro_layout():
    text = (ROOT / "lava" / "atsdbench.yaml").read_text()
    top = re.findall(r"^(\w+):", text, re.M)
    assert top == ["metadata", "params", "run"]
    assert re.search(r"^    format: Lava-Test Test Definition 1.0$", text, re.M)
    assert re.search(r"^    name: atsdbench$", text, re.M)
    for key in ("description", "maintainer", "os", "scope", "devices", "environment"):
        assert re.search(rf"^    {key}:", text, re.M), key
    steps = re.findall(r"^        - (.*)$", text[text.index("run:"):], re.M)
    assert any("atsdbench run ${RUN_OPTIONS}" in s for s in steps)
    assert any("--format lava | sh ./lava/report.sh" in s and "show" in s for s in steps)
    assert any("compare" in s and "--format lava" in s for s in steps)
    for s in steps:  # each step is one shell line LAVA runs: it must parse
        subprocess.run(["sh", "-n", "-c", s], check=True)
