"""`atsdbench info --cpus`: each allowed CPU measured briefly."""
import json
import os

import pytest

from atsdbench.measure import procfs
from atsdbench.render import info

INTERRUPTS = """           CPU0       CPU1
  0:         10          2   IO-APIC    2-edge      timer
LOC:       1000        300   Local timer interrupts
TLB:          5          7   TLB shootdowns
ERR:          0
"""


def test_interrupts_of_a_cpu_sum_its_column():
    assert procfs.interrupts_of_cpu(INTERRUPTS, 0) == 1015 and procfs.interrupts_of_cpu(INTERRUPTS, 1) == 309
    assert procfs.interrupts_of_cpu(INTERRUPTS, 2) is None and procfs.interrupts_of_cpu("", 0) is None


def test_the_table_names_units_and_the_auto_choice():
    rows = [{"cpu": 0, "gbps": 10.5, "cv_pct": 7.0, "irq_per_s": 280.0, "steal_per_s": 0.2, "canary_ms": 5.5},
            {"cpu": 1, "gbps": 14.5, "cv_pct": None, "irq_per_s": None, "steal_per_s": None, "canary_ms": 5.4}]
    text = info.render_cpus(rows, (1, "auto: not CPU 0 nor its SMT siblings"))
    assert "GB/s = 10^9 bytes/s" in text and "10.50" in text and "n/a" in text
    assert "--cpu auto takes CPU 1 (auto: not CPU 0 nor its SMT siblings)" in text


@pytest.mark.live
def test_info_cpus_measures_every_allowed_cpu(cli):
    p = cli("info", "--cpus", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert [r["cpu"] for r in data["cpus"]] == sorted(os.sched_getaffinity(0))
    assert all(r["gbps"] > 0 and r["canary_ms"] > 0 for r in data["cpus"])
    assert data["cpu_auto"]["cpu"] in os.sched_getaffinity(0) and data["cpu_auto"]["reason"].startswith("auto")
