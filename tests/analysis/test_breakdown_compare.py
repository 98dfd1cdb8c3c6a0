"""analysis/breakdown.compare_stages: compare's rows of stages, from files with run --breakdown and
--profile sections (Results made in memory)."""
import pytest

from atsdbench.analysis import breakdown as b
from atsdbench.data.results import Result


def _result(path, syscall, local, pt_share_profile=0.5):
    config = {"size": 1 << 20, "strides": [65536], "rounds": 1, "reps": 1, "pages": "base",
              "breakdown": {"complete": True, "passes": [
                  {"stride_bytes": 65536, "calls": 16, "syscall_us": syscall, "local_flush_us": local,
                   "page_table_us": syscall - local, "tlbie_us": 0.0, "ipi_send_us": 0.0, "remote_wait_us": 0.0}]},
              "profile": {"event": "cpu-clock", "complete": True, "passes": [
                  {"stride_bytes": 65536, "samples": 100, "stages": {"page_table": pt_share_profile, "flush": 0.2}}]}}
    return Result(host={}, config=config, samples=[], path=path)


def test_one_file_a_side_gives_changes_without_intervals():
    rows = b.compare_stages([[_result("a", 10.0, 1.0)], [_result("b", 8.0, 2.0)]], ["a", "b"])
    by = {(r["kind"], r["stage"]): r for r in rows}
    assert ("breakdown", "tlbie") not in by  # neither side has it
    local = by[("breakdown", "local_flush")]
    assert local["change_us"] == pytest.approx(1.0) and local["change_pp"] == pytest.approx(25.0 - 10.0)
    assert local["us_interval"] is None and local["pp_interval"] is None
    assert by[("breakdown", "syscall")]["change_us"] == pytest.approx(-2.0)
    assert by[("profile", "page_table")]["change_pp"] == 0 and ("profile", "notifier") not in by


def test_replicate_files_give_an_interval_that_holds_the_change():
    base = [_result(f"a{i}", 10.0 + d, 1.0 + d / 10) for i, d in enumerate((-0.2, 0.0, 0.2))]
    new = [_result(f"b{i}", 8.0 + d, 2.0 + d / 10) for i, d in enumerate((-0.3, 0.1, 0.2))]
    rows = b.compare_stages([base, new], ["a", "b"])
    local = next(r for r in rows if r["kind"] == "breakdown" and r["stage"] == "local_flush")
    low, high = local["us_interval"]
    assert low < local["change_us"] < high and local["n_base"] == 3 and local["n_new"] == 3
    assert local["pp_interval"][0] < local["change_pp"] < local["pp_interval"][1]


def test_files_without_sections_give_no_rows():
    plain = Result(host={}, config={"size": 1, "strides": [1], "rounds": 1, "reps": 1, "pages": "base"}, samples=[])
    assert b.compare_stages([[plain], [plain]], ["a", "b"]) == []
