"""measure/profile.py: the probe's refusals, and live a run --profile whose shares are shares."""
import errno
import os

import pytest

from atsdbench.errors import UsageError
from atsdbench.measure import core, profile


def test_hidden_symbols_are_refused_with_the_sysctl():
    with pytest.raises(UsageError, match=r"^--profile: kallsyms hides kernel addresses"):
        profile.Probe([0], kallsyms="0000000000000000 T _text\n0000000000000000 T x\n")


def test_a_refused_perf_event_open_names_the_paranoid_sysctl(monkeypatch):
    class Refused:
        def __init__(self, *a):
            raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(core, "Profile", Refused)
    with pytest.raises(UsageError, match=r"^--profile: perf_event_open EACCES, paranoid .*: needs root or "
                                         r"kernel.perf_event_paranoid=0$"):
        profile.Probe([0], kallsyms="ffffffff81000000 T _text\n")


def test_no_pmu_falls_back_to_cpu_clock(monkeypatch):
    tried = []

    class NoPmu:
        def __init__(self, cpus, cycles, freq, pages):
            tried.append(cycles)
            if cycles:
                raise OSError(errno.ENOENT, "No such file or directory")

        def close(self):
            pass

    monkeypatch.setattr(core, "Profile", NoPmu)
    assert profile.Probe([0], kallsyms="ffffffff81000000 T _text\n").event == "cpu-clock" and tried == [1, 0]


@pytest.mark.live
@pytest.mark.skipif(os.geteuid() != 0, reason="system-wide perf_event_open and kallsyms need root here")
def test_a_live_profile_gives_shares(cli, tmp_path):
    from atsdbench.data import results

    p = cli("run", "--size", "16M", "--strides", "64K,2M", "--rounds", "1", "--reps", "1", "--profile",
            "-o", str(tmp_path / "r.json"))
    assert p.returncode == 0, p.stderr
    assert "Kernel profile of the calls" in p.stdout
    section = results.load(str(tmp_path / "r.json")).config["profile"]
    assert section["complete"] and section["event"] in ("cycles", "cpu-clock")
    for q in section["passes"]:
        assert q["passes"] >= 1 and q["samples"] > 0
        assert all(0 <= v <= 1 for v in q["stages"].values())
        assert dict(q["inclusive"]).get("do_mprotect_pkey", 0) > 0.5  # the samples are of the calls


def test_the_hidden_symbols_line_fits_the_sysctl():
    from atsdbench.measure import profile as text

    assert "run as root" in text.symbols_hidden(0) and "kptr_restrict=0" in text.symbols_hidden(2)
    assert all(len("atsdbench: --profile: " + text.symbols_hidden(k)) <= 100 for k in (0, 1, 2, None))
    assert len("atsdbench: --profile: " + text.perf_refused("EACCES", 4)) <= 100



@pytest.mark.live
def test_the_profiled_passes_regions_are_on_the_runs_mem_node(monkeypatch):
    """--mem-node binds the timed passes' regions; the sampled passes' were left to the kernel's policy."""
    import types

    from atsdbench.measure import plan as plans

    nodes, real = [], core.Region

    def region(size, align, pages="base", node=None):
        nodes.append(node)
        return real(size, align, pages, node)

    class NoPerf:
        def __init__(self, *args):
            pass

        def enable(self, on):
            pass

        def read(self, cap=0):
            return [], 0

        def close(self):
            pass

    monkeypatch.setattr(core, "Profile", NoPerf)
    monkeypatch.setattr(core, "Region", region)
    plan = plans.make_plan(size="2M", strides="1M", mem_node="0")
    out = profile.run(plan, types.SimpleNamespace(event="cpu-clock", symbols=None))
    assert out["complete"] and nodes and set(nodes) == {0}
