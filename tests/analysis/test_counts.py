"""compare --counts (analysis/counts.py, render/counts.py) on real guest results (tests/fixtures/guest: Debian's
ppc64el 6.1 kernel as POWER9 radix and hash, Debian's amd64 6.1 and 6.12, all under qemu-tcg)."""
import json
import math
import os

import numpy as np
import pytest

import atsdbench
from atsdbench.analysis import compare as comparison, compare_by, counts
from atsdbench.data import sides

RADIX, HASH = "guest/6.1.0-57-powerpc64le.json", "guest/6.1.0-57-powerpc64le-power9-hash.json"
X61, X612 = "guest/6.1.0-50-amd64.json", "guest/6.12.107+deb12-amd64.json"


def cmp_of(fixtures, *names, **kw):
    return comparison.compare(sides.load([str(fixtures / n) for n in names]), **kw)


def row(cmp, cell, stride, counter):
    [r] = [r for r in cmp.counts if (r["cell"], r["stride"], r["counter"]) == (cell, stride, counter)]
    return r


def test_changed_only_beyond_the_pass_to_pass_spread():
    same, moved = np.array([1.0, 1.02, 1.0]), np.array([1.01, 1.0])
    assert counts.changed(same, moved) is False
    assert counts.changed(np.array([16.0, 16.0]), np.array([17.0, 17.0])) is True
    assert counts.changed(np.array([3.0]), np.array([3.0])) is False
    assert counts.changed(np.array([]), np.array([1.0])) is None


def test_radix_against_hash_shows_the_flush_change(fixtures):
    cmp = cmp_of(fixtures, RADIX, HASH, labels=["radix", "hash"])
    r = row(cmp, "bystanders=0", "4M", "tlbie")
    assert (r["base_per_call"], r["new_per_call"], r["changed"]) == (64.0, 0.0, True)  # 64 pages, each a tlbiel
    r = row(cmp, "bystanders=1", "4M", "tlbie_full")
    assert (r["base_per_call"], r["new_per_call"], r["changed"]) == (1.0, 0.0, True)  # above the ceiling: whole PID
    # the kernel's occasional whole-PID flush (a CPU-mask trim) is within the spread: not a change
    r = row(cmp, "bystanders=0", "64K", "tlbie_full")
    assert r["base_per_call"] > 0 and r["changed"] is False and r["base_min"] == 0
    # hash's hypervisor calls, which radix does not count: shown, n/a
    r = row(cmp, "bystanders=0", "2M", "h_bulk_remove")
    assert r["new_per_call"] == 8.0 and math.isnan(r["base_per_call"]) and r["changed"] is None
    assert not [r for r in cmp.counts if r["counter"] == "tlbia"]  # zero on every pass of both: left out


def test_x86_kernels_counts_are_the_same(fixtures):
    cmp = cmp_of(fixtures, X61, X612)
    assert cmp.counts and not any(r["changed"] for r in cmp.counts)
    assert {r["counter"] for r in cmp.counts} == {"flushes", "full_flushes", "ipis"}
    assert row(cmp, "bystanders=1", "64K", "flushes")["base_per_call"] == pytest.approx(2, abs=0.01)


def test_emulated_sides_get_no_rate_verdict(fixtures):
    cmp = cmp_of(fixtures, X61, X612)
    assert cmp.emulated == ["6.1.0-50-amd64", "6.12.107+deb12-amd64"]
    assert all(math.isnan(r["p_value"]) and not r["significant"] and r["note"] == "emulated (qemu-tcg)"
               for r in cmp.rows)
    assert all(r["new_gbps"] > 0 for r in cmp.rows)  # the rates are still shown
    assert any("emulated (qemu-tcg): rates get no verdict" in w for w in cmp.warnings)


def test_bare_metal_files_are_not_emulated(fixtures):
    cmp = cmp_of(fixtures, "before.json", "after.json")
    assert cmp.emulated == [] and all(not math.isnan(r["p_value"]) and r["note"] != "emulated (qemu-tcg)"
                                      for r in cmp.rows)


def test_the_counts_are_per_call_of_the_op_the_files_timed(cli, fixtures, tmp_path):
    """A madvise file's counts are per madvise call: the title and the commit footer say so."""
    for name in (RADIX, HASH):
        data = json.loads((fixtures / name).read_text())
        data["config"]["op"] = "madvise"
        (tmp_path / os.path.basename(name)).write_text(json.dumps(data))
    args = ["compare", "--counts", os.path.basename(RADIX), os.path.basename(HASH)]
    p = cli(*args, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("kernel invalidation events per madvise call") and "mprotect" not in p.stdout
    commit = cli(*args, "--format", "commit", cwd=tmp_path).stdout
    assert "Counts per madvise call" in commit and "mprotect" not in commit


def test_counts_in_every_format(cli, fixtures):
    args = ["compare", "--counts", RADIX, HASH, "--labels", "radix,hash"]
    text = cli(*args, cwd=fixtures)
    assert text.returncode == 0
    lines = text.stdout.splitlines()
    assert lines[0].startswith("kernel invalidation events per mprotect call (IPIs from timed passes, the others")
    assert "13 of 25 counts changed" in lines[1]
    assert any(line.split() == ["bystanders=0", "4M", "tlbie", "64", "0", "-64", "(-100%)", "changed"]
               for line in lines)
    assert "emulated (qemu-tcg): radix, hash" in text.stdout
    commit = cli(*args, "--format", "commit", cwd=fixtures).stdout.splitlines()
    # --labels hold in the commit format with two files too
    assert commit[0] == "Kernel invalidations" and commit[1].split() == ["Cell", "Stride", "Per", "call", "radix",
                                                                         "hash", "Change"]
    assert all(line == line.rstrip() for line in commit) and commit[-5].startswith("Counts per mprotect call")
    assert commit[-2].startswith("passes (base/new): tlbie, tlbie full PID, tlbie global 4/4; H_REMOVE")
    assert max(map(len, commit)) <= 100
    data = json.loads(cli(*args, "--format", "json", cwd=fixtures).stdout)
    assert {d["counter"] for d in data} >= {"tlbie", "tlbie_global", "tlbie_full", "h_remove", "h_bulk_remove"}
    csv = cli(*args, "--format", "csv", cwd=fixtures).stdout.splitlines()
    assert csv[0] == ",".join(counts.COLUMNS) and len(csv) == 1 + len(data)
    md = cli(*args, "--format", "markdown", cwd=fixtures).stdout
    assert md.startswith("| Cell") and "| changed   |" in md


def test_a_plain_compare_adds_the_changed_counts(cli, fixtures):
    p = cli("compare", RADIX, HASH, "--labels", "radix,hash", cwd=fixtures)
    assert p.returncode == 0 and "emulated (qemu-tcg): radix, hash" in p.stdout
    assert "invalidation counts per call: 13 of 25 counts changed (compare --counts shows every count)" in p.stdout
    commit = cli("compare", RADIX, HASH, "--format", "commit", cwd=fixtures).stdout
    assert "% emulated" in commit and "Kernel invalidations" in commit and " n.s." not in commit.split("\n")[2]
    # machine formats keep their shape, with the counts beside each rate row
    rows = json.loads(cli("compare", RADIX, HASH, "--format", "json", cwd=fixtures).stdout)
    assert isinstance(rows, list) and len(rows) == 8 and all("speedup_pct" in r for r in rows)
    [r] = [r for r in rows if (r["cell"], r["stride"]) == ("bystanders=0", "4M")]
    assert r["counts"]["tlbie"] == {"base": 64.0, "new": 0.0, "change": -64.0, "changed": True}
    assert r["counts"]["h_bulk_remove"] == {"base": None, "new": 16.0, "change": None, "changed": None}
    assert "tlbia" not in r["counts"] and "tlbie_global" not in r["counts"]  # 0 on every pass of both: left out
    csv = cli("compare", RADIX, HASH, "--format", "csv", cwd=fixtures).stdout.splitlines()
    header = csv[0].split(",")
    assert header[:len(comparison.COLUMNS)] == comparison.COLUMNS and len(csv) == 1 + len(rows)
    assert header[len(comparison.COLUMNS):len(comparison.COLUMNS) + 4] == ["tlbie_base", "tlbie_new", "tlbie_change",
                                                                           "tlbie_changed"]
    line = dict(zip(header, next(x for x in csv[1:] if x.startswith("bystanders=0,4M,")).split(",")))
    assert (line["tlbie_base"], line["tlbie_new"], line["tlbie_changed"], line["tlbie_global_base"]) == \
        ("64.0", "0.0", "true", "")


def test_counts_need_counts(cli, fixtures, tmp_path):
    r = atsdbench.load(str(fixtures / "before.json"))
    data = r.to_dict()
    for s in data["samples"]:
        for k in ("flushes", "full_flushes", "ipis"):
            s.pop(k, None)
    (tmp_path / "a.json").write_text(json.dumps(data))
    p = cli("compare", "--counts", tmp_path / "a.json", tmp_path / "a.json", "--labels", "a,b")
    assert p.returncode == 2 and "have no invalidation counts" in p.stderr
    # a plain compare of them: the rows as they were, no counts field or columns
    rows = json.loads(cli("compare", tmp_path / "a.json", tmp_path / "a.json", "--labels", "a,b", "--format",
                          "json").stdout)
    assert rows and not any("counts" in r for r in rows)
    csv = cli("compare", tmp_path / "a.json", tmp_path / "a.json", "--labels", "a,b", "--format", "csv").stdout
    assert csv.splitlines()[0] == ",".join(comparison.COLUMNS + ["centre"])


def test_compare_by_of_an_emulated_file_gives_no_verdict(fixtures):
    cmp = compare_by.compare_by(sides.load([str(fixtures / X61)]), "bystanders")
    assert cmp.rows and all(math.isnan(r["p_value"]) and not r["significant"] for r in cmp.rows)
    assert all(r["note"] == "emulated (qemu-tcg)" and r["base_gbps"] > 0 for r in cmp.rows)
    assert any("emulated (qemu-tcg)" in w for w in cmp.warnings)


def test_counts_by_axis_of_one_guest_file(cli, fixtures):
    cmp = compare_by.compare_by(sides.load([str(fixtures / RADIX)]), "bystanders")
    r = row(cmp, "", "4M", "tlbie_full")
    assert (r["base_label"], r["new_label"], r["base_per_call"], r["new_per_call"], r["changed"]) == \
        ("bystanders=0", "bystanders=1", 0.0, 1.0, True)
    assert row(cmp, "", "2M", "tlbie_global")["changed"] and not row(cmp, "", "64K", "tlbie_full")["changed"]
    assert row(cmp, "", "1M", "tlbie_full")["changed"]  # 0 on every pass, then 0.0039 a call: one appeared
    p = cli("compare", RADIX, "--by", "bystanders", "--counts", cwd=fixtures)
    assert p.returncode == 0 and "10 of 11 counts changed" in p.stdout
    assert p.stdout.count("emulated (qemu-tcg):") == 1
    plain = cli("compare", RADIX, "--by", "bystanders", cwd=fixtures).stdout
    assert plain.count("emulated (qemu-tcg):") == 1 and "10 of 11 counts changed" in plain
    rows = json.loads(cli("compare", RADIX, "--by", "bystanders", "--format", "json", cwd=fixtures).stdout)
    [r] = [r for r in rows if r["stride"] == "4M"]
    assert r["counts"]["tlbie_full"] == {"base": 0.0, "new": 1.0, "change": 1.0, "changed": True}


def test_a_change_from_a_near_zero_base_has_no_percentage(cli, fixtures, tmp_path):
    """A stray IPI in 10^4 calls against one a call: +1 alone, not +1151100%."""
    from atsdbench.render import counts as shown

    r = {"change": 0.999, "change_pct": math.nan, "base_per_call": 8.68e-05}
    assert shown._change(r) == "+0.999"
    for name, ipi in (("stray", 0), ("every", 1)):
        data = json.loads((fixtures / X61).read_text())
        data["host"]["virtualized"] = None
        timed = [s for s in data["samples"] if not s["warmup"] and s["stride_bytes"] == 65536 and s["cell"] == 0]
        for i, s in enumerate(timed):
            s["ipis"] = s["calls"] * ipi if ipi else (1 if i == 0 else 0)
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    p = cli("compare", "--counts", "stray.json", "every.json", "--labels", "stray,every", cwd=tmp_path)
    [line] = [ln for ln in p.stdout.splitlines() if ln.startswith("bystanders=0  64K") and "IPIs" in ln]
    assert "%" not in line and line.split()[-2] == "+1", line
    c = cmp_of(tmp_path, "stray.json", "every.json")
    [r] = [r for r in c.counts if (r["cell"], r["stride"], r["counter"]) == ("bystanders=0", "64K", "ipis")]
    assert 0 < r["base_per_call"] < counts.NEAR_ZERO and math.isnan(r["change_pct"])


def test_a_count_is_changed_where_it_appears_or_goes_away():
    zero, some = np.zeros(4), np.array([0.0, 0.24, 0.48, 0.24])
    assert counts.changed(zero, some) is True  # 0 against 0.24 a call: the ranges meet at 0, still a change
    assert counts.changed(some, zero) is True
    assert counts.changed(np.array([0.0, 0.001]), zero) is False  # a stray gone: below one event in 100 calls
    assert counts.changed(some, some[::-1]) is False


def _ipis(fixtures, tmp_path, name, timed, warm):
    """X61 with `timed` IPIs a call on its timed passes and `warm` on its untraced warm-ups."""
    data = json.loads((fixtures / X61).read_text())
    data["host"]["virtualized"] = None
    for s in data["samples"]:
        if not s.get("traced"):
            s["ipis"] = s["calls"] * (warm if s["warmup"] else timed)
    (tmp_path / name).write_text(json.dumps(data))
    return name


def test_ipis_are_the_timed_passes_in_run_show_and_compare(cli, fixtures, tmp_path):
    a, b = _ipis(fixtures, tmp_path, "a.json", 2, 10), _ipis(fixtures, tmp_path, "b.json", 3, 10)
    found, header = [], []
    for line in cli("show", a, cwd=tmp_path).stdout.splitlines():
        header = line.split() if line.startswith("Stride") else header
        if line[:1].isdigit() and "IPIs/call" in header:
            found.append(line.split()[header.index("IPIs/call")])
    assert len(found) == 8 and set(found) == {"2.00"}
    rows = json.loads(cli("compare", "--counts", a, b, "--format", "json", cwd=tmp_path).stdout)
    ipis = [r for r in rows if r["counter"] == "ipis"]
    assert ipis and {(r["base_per_call"], r["new_per_call"], r["changed"]) for r in ipis} == {(2.0, 3.0, True)}
    text = cli("compare", "--counts", a, b, cwd=tmp_path).stdout.replace("\n", " ")
    # N per count: the IPIs' timed passes apart from the flushes' traced warm-ups
    assert "IPIs from timed passes, the others from traced warm-ups" in text
    assert "passes (base/new): flushes, full flushes 4/4; IPIs 9/9" in text
