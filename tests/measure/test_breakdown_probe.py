"""measure/breakdown.py: what the probe refuses (fake tracefs trees), and live on this machine a run
--breakdown whose tables add up, and a Ctrl-C during its traced passes that leaves no trace instance."""
import json
import os
import shutil
import sys

import pytest
from traced import SIGNAL_IN_TRACED_PASSES, in_namespace

from atsdbench.errors import UsageError
from atsdbench.measure import breakdown



def tree(root, *events, text="name: x\nID: 7\nformat:\n"):
    for e in events:
        os.makedirs(root / "events" / e, exist_ok=True)
        (root / "events" / e / "format").write_text(text)
    os.makedirs(root / "events", exist_ok=True)
    return root

ALL = ("syscalls/sys_enter_mprotect", "syscalls/sys_exit_mprotect", "tlb/tlb_flush", "csd/csd_function_entry",
       "csd/csd_function_exit", "ipi/ipi_send_cpu", "ipi/ipi_send_cpumask")


def test_not_root_is_refused_with_the_reason(tmp_path):
    with pytest.raises(UsageError, match=r"^--breakdown: tracefs needs root for syscalls:sys_enter_mprotect"):
        breakdown.Probe(["mprotect"], root=str(tree(tmp_path, *ALL)), euid=1000)


def test_no_syscall_tracepoint_is_refused(tmp_path):
    with pytest.raises(UsageError, match=r"^--breakdown: this kernel has no syscalls:sys_exit_madvise event"):
        breakdown.Probe(["madvise"], root=str(tree(tmp_path, "syscalls/sys_enter_madvise")), euid=0)


def test_a_tracefs_without_instances_is_refused_before_measuring(tmp_path):
    with pytest.raises(UsageError, match=r"^--breakdown: no trace instance in .*/instances: No such file"):
        breakdown.Probe(["mprotect"], root=str(tree(tmp_path, *ALL)), euid=0)


def test_optional_events_missing_are_one_line_and_the_rest_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(breakdown.Probe, "_try_instance", lambda self: None)
    p = breakdown.Probe(["mprotect"], root=str(tree(tmp_path, *ALL[:3])), euid=0)
    assert p.have == {"tlb"} and p.missing == ["csd:csd_function_entry", "csd:csd_function_exit",
                                               "ipi:ipi_send_cpu", "ipi:ipi_send_cpumask"]
    from atsdbench.render.breakdown import breakdown_missing

    note = breakdown_missing(p.missing)
    assert note.startswith("--breakdown: no csd, ipi events here") and len(note) <= 100
    assert "tlb/tlb_flush" in p.events and "syscalls/sys_enter_mprotect" in p.events


def test_on_power_tlb_flush_is_not_used_and_tlbie_is(tmp_path, monkeypatch):
    monkeypatch.setattr(breakdown.Probe, "_try_instance", lambda self: None)
    p = breakdown.Probe(["mprotect"], root=str(tree(tmp_path, *ALL[:2], "tlb/tlb_flush", "powerpc/tlbie")),
                        euid=0)
    assert "tlb/tlb_flush" not in p.events and "powerpc/tlbie" in p.events
    assert "tlb:tlb_flush" not in p.missing and "powerpc:hcall_entry" in p.missing
    hash_ = breakdown.Probe(["mprotect"], root=str(tree(tmp_path, "powerpc/hcall_entry", "powerpc/hcall_exit")),
                            euid=0)
    assert hash_.events["powerpc/hcall_entry"] == hash_.events["powerpc/hcall_exit"] == (
        "opcode == 4 || opcode == 8 || opcode == 16 || opcode == 20 || opcode == 24 || opcode == 292", "hcall")


def test_the_lockdown_mode_is_read():
    assert breakdown.lockdown_state("none integrity [confidentiality]\n") == "confidentiality"
    assert breakdown.lockdown_state("") is None


def test_the_instance_refusal_names_lockdown_where_it_is_the_reason():
    import errno

    from atsdbench.measure.core import instance_problem

    assert instance_problem("/t", errno.EPERM, "confidentiality") == (
        "no trace instance in /t/instances: Operation not permitted (kernel lockdown=confidentiality closes "
        "tracefs; boot with lockdown=integrity or none)")
    assert instance_problem("/t", errno.EROFS, "integrity") == "no trace instance in /t/instances: Read-only file system"


def test_the_buffers_hold_a_pass_and_the_bystanders_get_half():
    from atsdbench.measure.core import breakdown_sizes

    assert breakdown_sizes(2048, 1, [0]) == {1: 2048, 0: 1024}  # 16 events of 64 bytes a call
    assert breakdown_sizes(4, 1, [1, 2]) == {1: 1024, 2: 512}  # at least 1M; the measuring CPU not twice


def test_a_pass_traces_at_most_calls_max_calls():
    from atsdbench.measure.plan import Plan

    plan = Plan(size=1 << 30, strides=[64 << 10, 4 << 20], region_align=4 << 20)
    from atsdbench.measure.core import BREAKDOWN_CALLS

    assert breakdown.region_bytes(plan, 64 << 10) == BREAKDOWN_CALLS * (64 << 10)
    assert breakdown.region_bytes(plan, 4 << 20) == 1 << 30
    assert breakdown.region_bytes(Plan(size=4 << 20, strides=[64 << 10], region_align=2 << 20), 64 << 10) == 4 << 20


# not the checkout root: there `-m atsdbench` and `import atsdbench` find the source tree, no core in it
NEUTRAL = os.path.dirname(os.path.abspath(__file__))
needs_tracefs = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")


LIVE_RUN = r"""
import os, sys, json
from atsdbench import cli
out = sys.argv[1]
code = cli.main(["run", "--size", "4M", "--strides", "64K,1M", "--rounds", "1", "--reps", "1", "--bystanders", "1",
                 "--breakdown", "-o", out])
left = [n for n in os.listdir("/sys/kernel/tracing/instances") if n == f"atsdbench-{os.getpid()}"]
print(json.dumps({"code": code, "left": left}))
"""


@pytest.mark.live
@needs_tracefs
def test_a_live_breakdown_adds_up_and_leaves_no_instance(in_tracefs, tmp_path):
    from atsdbench.analysis.breakdown import check_sum
    from atsdbench.data import results

    p = in_namespace(in_tracefs, LIVE_RUN, str(tmp_path / "r.json"), cwd=NEUTRAL)
    if p.returncode and "{" not in p.stdout:
        pytest.skip(f"no tracefs with the syscall tracepoints here: {p.stderr.strip()[-200:]}")
    end = json.loads(p.stdout.strip().splitlines()[-1])
    assert end == {"code": 0, "left": []}, p.stderr
    assert "Where a call's time goes" in p.stdout and "stages sum to syscall" in p.stdout
    section = results.load(str(tmp_path / "r.json")).config["breakdown"]
    assert section["complete"] and [q["stride_bytes"] for q in section["passes"]] == [64 << 10, 1 << 20]
    for q in section["passes"]:
        assert q["calls"] == (4 << 20) // q["stride_bytes"] and check_sum(q)
        assert q["untraced_us"] > 0 and q["flushes"] >= 1


@pytest.mark.live
@needs_tracefs
def test_ctrl_c_during_the_traced_passes_removes_the_instance(in_tracefs, tmp_path):
    from atsdbench.data import results

    p = in_namespace(in_tracefs, SIGNAL_IN_TRACED_PASSES, str(tmp_path / "r.json"), "SIGINT",
                     sys.executable, "-m", "atsdbench", "run", cwd=NEUTRAL)
    if p.returncode and not p.stdout:
        pytest.skip(f"no tracefs with the syscall tracepoints here: {p.stderr.strip()[-200:]}")
    seen, code, left, stderr = p.stdout.strip().split(" ", 3)
    assert seen == "True", p.stdout  # the signal came while the breakdown's instance was there
    assert code == "130" and left == "False"
    assert stderr == "''"  # as any run stopped between passes: exit 130, the table says so
    result = results.load(str(tmp_path / "r.json"))  # every timed pass kept; the breakdown as far as it got
    assert result.config["breakdown"]["complete"] is False


def test_calibrate_refuses_breakdown(cli):
    p = cli("calibrate", "--breakdown")
    assert p.returncode == 2 and p.stderr.startswith("atsdbench: calibrate measures noise: --breakdown and --profile")


@pytest.mark.live
def test_the_traced_passes_regions_are_on_the_runs_mem_node(monkeypatch):
    """--mem-node binds the timed passes' regions, whose untraced_us a traced pass is set against; the
    traced passes' regions were left to the kernel's policy."""
    import types

    from atsdbench.measure import core, plan as plans, tracebuf

    nodes, real = [], core.Region

    def region(size, align, pages="base", node=None):
        nodes.append(node)
        return real(size, align, pages, node)

    class NoTrace:
        def __init__(self, *args):
            pass

        def start(self):
            pass

        def mark(self, text):
            pass

        def mark_time(self, name):
            pass

        def stop(self):
            return [], 1  # lost: no arithmetic on an empty trace

        def close(self):
            pass

    monkeypatch.setattr(core, "Region", region)
    monkeypatch.setattr(tracebuf, "TraceBuffer", NoTrace)
    plan = plans.make_plan(size="2M", strides="1M", mem_node="0")
    probe = types.SimpleNamespace(clock=None, events={}, missing=[], have=set(), root="/nonexistent")
    out = breakdown.run(plan, probe)
    assert out["complete"] and nodes == [0]
