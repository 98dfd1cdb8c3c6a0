"""The run table: per-call counter columns and the expected-flush column."""
import pytest

import atsdbench
from atsdbench.render import tables as report


def test_expected_flush_column_where_ceiling_known(fixtures):
    r = atsdbench.load(str(fixtures / "before.json"))
    r.host["tlb_single_page_flush_ceiling"] = 33
    table = report.run_table(r)
    assert "expected flush" in table
    lines = {line.split()[0]: line for line in table.splitlines()[2:] if line.strip()}  # the last block's
    # 64K pages: a 64K stride is 1 page (per-page), 4M is 64 pages (> 33: full)
    assert lines["64K"].rstrip().endswith("per-page") and lines["4M"].rstrip().endswith("full")
    r.host["tlb_single_page_flush_ceiling"] = "unknown"
    assert "expected flush" not in report.run_table(r)


def test_per_call_counters(fixtures):
    r = atsdbench.load(str(fixtures / "before.json"))
    table = report.run_table(r)
    assert "IPIs/call" in table and "flushes/call" in table
    row = [line for line in table.splitlines() if line.strip().startswith("64K")][0].split()
    assert row[-2] == "0.00" and row[-1] == "1.00"  # 0 IPIs, one flush per call (fixture)


def test_expected_flush_on_power_uses_the_local_ceiling_without_bystanders():
    host = {"page_size": 64 << 10, "tlb_single_page_flush_ceiling": 33, "tlb_local_single_page_flush_ceiling": 256,
            "mmu": "Radix"}
    # 4M = 64 pages: above the global ceiling, under the local one
    assert report.flush_expectation(4 << 20, host, bystanders=1) == "full"
    assert report.flush_expectation(4 << 20, host, bystanders=0) == "per-page"
    assert report.flush_expectation(32 << 20, host, bystanders=0) == "full"      # 512 pages > 256
    assert report.flush_expectation(4 << 20, host) == "full"                     # bystanders unknown: global
    x86 = {"page_size": 4096, "tlb_single_page_flush_ceiling": 33}
    assert report.flush_expectation(64 << 12, x86, bystanders=0) == "full"       # x86 has one ceiling
    # the ceilings are radix's: the hash MMU removes every page's entry
    assert report.flush_expectation(4 << 20, {**host, "mmu": "Hash"}, bystanders=1) == "per-page"


def power_result(fixtures, bystanders, hcalls=False):
    """before.json as a POWER run: its traced passes carry tlbie columns instead of flushes."""
    r = atsdbench.load(str(fixtures / "before.json"))
    data = r.to_dict()
    data["host"].update({"arch": "ppc64le", "mmu": "Hash" if hcalls else "Radix", "page_size": 65536,
                         "tlb_single_page_flush_ceiling": 33, "tlb_local_single_page_flush_ceiling": 256})
    data["config"]["bystanders"] = bystanders
    for s in data["samples"]:
        for k in [k for k in s if "flush" in k or k == "ipis"]:
            del s[k]
        if s["traced"]:
            pages = s["stride_bytes"] // 65536
            s.update({"tlbie": (pages + 2) * s["calls"], "tlbie_global": (pages + 2) * s["calls"] * bystanders,
                      "tlbie_full": 0, "tlbie_fixup": 2 * s["calls"], "tlbia": 0})
            if hcalls:
                s.update({"h_remove": s["calls"], "h_bulk_remove": 0, "h_protect": 0})
    return type(r)(data["host"], data["config"], data["samples"], data["complete"])


def test_power_counter_columns(fixtures):
    table = report.run_table(power_result(fixtures, 1))
    head = " ".join(line for line in table.splitlines() if line.startswith("Stride"))  # every block's
    assert "tlbie/call" in head and "global/call" in head and "full PID/call" in head and "fixup/call" in head
    assert "flushes/call" not in head and "tlbia/call" not in head and "H_REMOVE" not in head  # none occurred
    row = [x for line in table.splitlines() if line.strip().startswith("64K") for x in line.split()[1:]]
    assert row[-5:] == ["3.00", "3.00", "0.00", "2.00", "per-page"]
    hash_table = report.run_table(power_result(fixtures, 0, hcalls=True))
    assert "H_REMOVE/call" in hash_table and "H_BULK_REMOVE/call" not in hash_table


def _columns(text, names):
    """{stride: {column: cell}} of a table whose header holds `names` (split on 2+ spaces)."""
    import re

    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("Stride"))
    head = re.split(r"\s{2,}", lines[i].strip())
    out = {}
    for line in lines[i + 2:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != len(head) or not cells[0][0].isdigit():
            break
        out[cells[0]] = {n: cells[head.index(n)] for n in names}
    return out


def test_run_and_show_say_which_unit_and_agree_on_passes(fixtures):
    """run printed 64K Min 5.45 and show Min 5.58 under the same name: one is of passes, the other of
    round means.  Now show names the unit over its table and with --unit pass prints run's numbers."""
    from atsdbench.render import tables

    r = atsdbench.load(str(fixtures / "before.json"))
    run = report.run_report(r)
    assert "Median, Min, Max: of single passes" in run
    by_round, _ = tables.show_table(r)
    assert "GB/s of round means (N = rounds); run's Median, Min, Max: of passes" in by_round
    by_pass, _ = tables.show_table(r, unit="pass")
    assert "GB/s of single passes (N = passes), as run prints them" in by_pass
    ran = _columns(run, ["Median GB/s", "Min", "Max", "CV% between"])
    passes = _columns(by_pass, ["Median", "Min", "Max"])
    rounds = _columns(by_round, ["Min", "CV%"])
    assert set(ran) == set(passes) == {"64K", "1M", "2M", "4M"}
    for stride, row in ran.items():
        for mine, theirs in (("Median GB/s", "Median"), ("Min", "Min"), ("Max", "Max")):
            # the same number, printed to 2 and 3 decimals
            assert float(passes[stride][theirs]) == pytest.approx(float(row[mine]), abs=0.0051), (stride, mine)
        assert row["CV% between"] == rounds[stride]["CV%"]  # the spread of round means, in both
        assert float(rounds[stride]["Min"]) > float(row["Min"])  # a round mean is above its worst pass
    csv, _ = tables.show_table(r, fmt="csv")
    assert csv.splitlines()[0].startswith("stride,n,min,max,median,mean,")  # machine names unchanged
