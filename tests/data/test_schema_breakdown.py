"""data/schema.py's rule for config.breakdown (run --breakdown)."""
import pytest

from atsdbench.data import schema
from atsdbench.errors import UsageError


def _file(breakdown):
    return {"complete": True, "host": {}, "samples": [],
            "config": {"size": 1 << 20, "strides": [65536], "rounds": 1, "reps": 1, "pages": "base",
                       "breakdown": breakdown}}


GOOD = {"clock": "x86-tsc", "events": ["tlb:tlb_flush"], "missing": [], "calls_max": 2048, "complete": True,
        "passes": [{"stride_bytes": 65536, "region_bytes": 1 << 20, "lost": 0, "calls": 16, "syscall_us": 9.5,
                    "page_table_us": 8.0, "local_flush_us": 1.5, "tlbie_us": 0.0, "ipi_send_us": 0.0,
                    "remote_wait_us": 0.0, "remote_flush_us": {"0": 1.1}, "pages": 16.0, "ipis_sent": None,
                    "untraced_us": 7.0}]}


def test_a_breakdown_loads():
    schema.check(_file(GOOD), "r.json")
    schema.check(_file(None), "r.json")


@pytest.mark.parametrize("path,value,words", [
    (("passes", 0, "syscall_us"), -1.0, "passes[0].syscall_us must be at least 0"),
    (("passes", 0, "pages"), "16", "passes[0].pages must be a number or null"),
    (("passes", 0, "remote_flush_us"), {"cpu0": 1.0}, "remote_flush_us has a key 'cpu0' that is not a CPU number"),
    (("passes", 0, "local_flush_us"), float("nan"), "must be a finite number"),
    (("complete",), "yes", "breakdown.complete must be true or false"),
])
def test_a_bad_breakdown_is_one_line(path, value, words):
    import copy

    bad = copy.deepcopy(GOOD)
    where = bad
    for step in path[:-1]:
        where = where[step]
    where[path[-1]] = value
    with pytest.raises(UsageError, match=r"^r\.json: config\.breakdown\.") as e:
        schema.check(_file(bad), "r.json")
    assert words in str(e.value)


PROFILE = {"event": "cpu-clock", "freq": 4000, "complete": True, "passes": [
    {"stride_bytes": 65536, "passes": 3, "lost": 0, "samples": 313, "bystander_samples": 0, "seconds": 0.5,
     "self": [["change_pte_range", 0.441]], "inclusive": [["do_mprotect_pkey", 1.0]],
     "stages": {"page_table": 0.575}, "bystander_stages": {}}]}


def test_a_profile_loads_and_a_bad_share_is_one_line():
    import copy

    data = _file(None)
    data["config"]["profile"] = PROFILE
    schema.check(data, "r.json")
    bad = copy.deepcopy(data)
    bad["config"]["profile"]["passes"][0]["stages"]["page_table"] = 1.5
    with pytest.raises(UsageError, match=r"config\.profile\.passes\[0\]\.stages\.page_table must be at most"):
        schema.check(bad, "r.json")
