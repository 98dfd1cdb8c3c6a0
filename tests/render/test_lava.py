"""show/compare --format lava (lava/atsdbench.yaml turns each line into a lava-test-case call: tests/lab)."""
import re

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
