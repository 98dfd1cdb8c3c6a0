"""The run table: per-call counter columns and the expected-flush column."""
import atsdbench
from atsdbench import report


def test_expected_flush_column_where_ceiling_known(fixtures):
    r = atsdbench.load(str(fixtures / "before.json"))
    r.host["tlb_single_page_flush_ceiling"] = 33
    table = report.run_table(r)
    assert "expected flush" in table
    lines = {line.split()[0]: line for line in table.splitlines()[2:]}
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
