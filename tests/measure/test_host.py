"""Parsers of /proc and sysfs, on committed fixtures (x86, POWER9 radix/hash with NPU2, arm64)."""
import os
import shutil

import pytest

from atsdbench.measure import core, host, procfs
from atsdbench.render import info

PROC = "proc"


def text(fixtures, name):
    return (fixtures / PROC / name).read_text()


def test_cpuinfo_power9_radix_and_hash(fixtures):
    radix = host.parse_cpuinfo(text(fixtures, "cpuinfo-power9-radix"))
    assert radix["cpu_model"] == "POWER9, altivec supported" and radix["mmu"] == "Radix"
    assert radix["platform"] == "PowerNV"
    hsh = host.parse_cpuinfo(text(fixtures, "cpuinfo-power9-hash"))
    assert hsh["mmu"] == "Hash" and hsh["platform"] == "pSeries"


def test_cpuinfo_arm64_and_x86(fixtures):
    arm = host.parse_cpuinfo(text(fixtures, "cpuinfo-arm64"))
    assert arm["cpu_model"] == "arm64 implementer 0x41 part 0xd4f" and arm["mmu"] == "unknown"
    assert "sve2" in arm["cpu_flags"]
    x86 = host.parse_cpuinfo(text(fixtures, "cpuinfo-x86"))
    assert x86["cpu_model"].startswith("Intel(R) Xeon(R) Gold 6148")
    assert {"pcid", "invpcid", "pti", "hypervisor"} <= set(x86["cpu_flags"])


def test_hypervisor_from_cpuinfo(fixtures):
    assert host.hypervisor(["hypervisor"]) in ("yes (cpuinfo flag)",) or host.read("/sys/hypervisor/type")
    if not host.read("/sys/hypervisor/type"):
        assert host.hypervisor([], text(fixtures, "cpuinfo-power9-hash")).startswith("PowerVM/KVM")
        assert host.hypervisor([], text(fixtures, "cpuinfo-power9-radix")) == "none detected"


def test_interrupts(fixtures):
    assert procfs.parse_interrupts(text(fixtures, "interrupts-x86")) == 553 + 634 + 1200 + 13
    assert procfs.parse_interrupts(text(fixtures, "interrupts-x86"), "CAL") == 12033 + 13371 + 11034 + 9866
    assert procfs.parse_interrupts(text(fixtures, "interrupts-power9")) is None  # no TLB row on POWER


def test_vmstat(fixtures):
    assert procfs.parse_vmstat_tlb(text(fixtures, "vmstat-debug-tlbflush")) == {
        "tlb_remote_flush": 1204, "tlb_remote_flush_received": 3612, "tlb_local_flush_all": 99,
        "tlb_local_flush_one": 40210}
    assert procfs.parse_vmstat_tlb("nr_free_pages 1\n") == {}


def test_tracepoint_format(fixtures):
    tp_id, reasons = core.parse_tracepoint_format(text(fixtures, "tlb_flush-format-x86"))
    assert isinstance(tp_id, int) and reasons[3] == "local MM shootdown" and reasons[0] == "flush on task switch"
    assert core.reason_column(reasons[4]) == "flushes_remote_ipi_send"


def test_pci_power9_npu2_and_nvidia(fixtures, tmp_path):
    # sysfs names a device's driver by a symlink, which an sdist cannot carry: it is made here
    tree = tmp_path / "pci-power9"
    shutil.copytree(fixtures / "pci-power9", tree)
    (tree / "0004:04:00.0" / "driver").symlink_to("../../../bus/pci/drivers/nvidia")
    devs = host.pci_devices(str(tree))
    kinds = [(d["address"], d["vendor"], d["kind"], d["driver"]) for d in devs]
    assert kinds == [("0004:04:00.0", "NVIDIA", "GPU", "nvidia"),
                     ("0007:00:00.0", "IBM", "NPU2 (NVLink 2, POWER9)", None),
                     ("0007:00:00.1", "IBM", "NPU2 (NVLink 2, POWER9)", None)]


def test_cpulists():
    assert host.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert host.format_cpulist([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"


def test_warnings():
    facts = {"cpufreq_governor": "powersave", "boost": "on", "hypervisor": "kvm", "thp_enabled": "always",
             "loadavg": [5.0], "online_cpus": [0, 1], "affinity": [0, 1]}
    w = host.warnings(facts, pages="base", bystanders=3)
    assert len(w) == 6 and any("powersave" in x for x in w) and any("virtual machine" in x for x in w)
    assert host.warnings({"cpufreq_governor": "performance", "boost": "off", "hypervisor": "none detected",
                          "loadavg": [0.0], "online_cpus": [0, 1]}) == []


def test_info_on_this_machine(cli):
    p = cli("info")
    assert p.returncode == 0 and "base page size:" in p.stdout and "TLB single-page flush ceiling:" in p.stdout
    import json

    data = json.loads(cli("info", "--json").stdout)
    assert data["host"]["page_size"] > 0 and isinstance(data["warnings"], list)


def test_unknown_stays_unknown():
    assert host.int_or_unknown(None) == "unknown" and host.int_or_unknown("33\n") == 33
    facts = host.full()
    ceiling = facts["tlb_single_page_flush_ceiling"]
    assert ceiling == "unknown" or isinstance(ceiling, int)
    assert info.render(facts, [])


def test_smaps_huge_share_of_a_range():
    from atsdbench.measure import procfs

    text = ("7f0000000000-7f0000400000 rw-p 00000000 00:00 0\nSize: 4096 kB\nAnonHugePages: 2048 kB\n"
            "7f0000400000-7f0000600000 rw-p 00000000 00:00 0\nAnonHugePages: 2048 kB\n")
    assert procfs.smaps_huge_share(text, 0x7f0000000000, 0x7f0000400000) == 0.5
    assert procfs.smaps_huge_share(text, 0x7f0000000000, 0x7f0000600000) == 4 / 6
    assert procfs.smaps_huge_share(text, 0x1000, 0x2000) is None


@pytest.mark.live
def test_thp_run_records_the_share_it_got():
    import atsdbench

    r = atsdbench.run(size="16M", strides="2M", rounds=1, reps=1, warmup_rounds=0, pages="thp", trace="off")
    shares = r.measured["thp_share"]
    assert ((shares >= 0) & (shares <= 1)).all()


def test_tracepoint_states_on_power_name_tlbie_not_tlb_flush(monkeypatch):
    # tlb:tlb_flush exists on POWER but never fires: info must not call it the flush counter there
    monkeypatch.setattr(core, "find_tracepoint", lambda event="tlb/tlb_flush", root=None:
                        (30, {}) if event in ("powerpc/tlbie", "tlb/tlb_flush") else (None, {}))
    states = host.tracepoint_states("ppc64le")
    assert states == {"tlb_flush_tracepoint": "not used: it never fires on POWER",
                      "tlbie_tracepoint": "readable (flushes counted from it)"}
    assert host.tracepoint_states("x86_64") == {"tlb_flush_tracepoint": "readable"}
    monkeypatch.setattr(core, "find_tracepoint", lambda event="tlb/tlb_flush", root=None: (None, {}))
    assert host.tracepoint_states("ppc64le")["tlbie_tracepoint"] == core.tracepoint_problem("powerpc:tlbie")


def test_info_shows_both_power_ceilings_and_the_tlbie_tracepoint(monkeypatch):
    facts = host.full()
    facts.update({"arch": "ppc64le", "mmu": "Radix", "tlb_single_page_flush_ceiling": 33,
                  "tlb_local_single_page_flush_ceiling": 256, "tlb_flush_tracepoint": "not used: it never fires on POWER",
                  "tlbie_tracepoint": "readable (flushes counted from it)"})
    lines = dict(line.split(": ", 1) for line in info.render(facts, []).splitlines()
                 if not line.startswith(" "))  # a long value's continuation hangs under it
    assert lines["TLB single-page flush ceiling"].strip() == "33"
    assert lines["TLB local single-page flush ceiling"].strip() == "256"
    assert lines["powerpc:tlbie tracepoint"].strip() == "readable (flushes counted from it)"
    del facts["tlbie_tracepoint"]
    assert "powerpc:tlbie" not in info.render(facts, [])


def test_memory_nodes_from_fixture_sysfs():
    fixtures = os.path.join(os.path.dirname(__file__), "..", "fixtures")
    assert host.memory_nodes(os.path.join(fixtures, "sys-node-2")) == [0, 1]
    assert host.memory_nodes(os.path.join(fixtures, "sys-node-1")) == [0]
    assert host.memory_nodes(os.path.join(fixtures, "no-such-tree")) == []


def test_numa_warning_when_several_nodes_and_memory_not_pinned():
    quiet = {"cpufreq_governor": "performance", "boost": "off", "hypervisor": "none detected", "loadavg": [0.0],
             "online_cpus": [0, 1]}
    fixtures = os.path.join(os.path.dirname(__file__), "..", "fixtures")
    two = {**quiet, "numa_memory_nodes": host.memory_nodes(os.path.join(fixtures, "sys-node-2"))}
    warned = "memory on NUMA nodes 0-1: a run's region is not pinned (run --mem-node N binds it)"
    assert host.warnings(two) == [warned] and len(warned) <= 100
    assert host.warnings(two, mem_node=1) == []
    one = {**quiet, "numa_memory_nodes": host.memory_nodes(os.path.join(fixtures, "sys-node-1"))}
    assert host.warnings(one) == [] and host.warnings({**quiet, "numa_memory_nodes": "unknown"}) == []


def test_info_prints_the_numa_warning(cli, monkeypatch):
    from atsdbench.measure import host as host_module

    real = host_module.full
    monkeypatch.setattr(host_module, "full", lambda: {**real(), "numa_memory_nodes": [0, 1]})
    p = cli("info")
    assert p.returncode == 0 and "memory on NUMA nodes 0-1: a run's region is not pinned" in p.stdout
