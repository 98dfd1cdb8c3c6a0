import os
import re

import pytest

from atsdbench.errors import UsageError
from atsdbench.measure import plan as plans
from atsdbench.measure.plan import make_plan, round_order

MEM = {"MemAvailable": 8 << 30, "Hugepagesize": 2 << 20, "HugePages_Free": 0}
HOST = dict(meminfo=MEM, affinity=[0, 1, 2, 3], page_size=4096)


def plan(**kw):
    return make_plan(**{**HOST, **kw})


def test_defaults():
    p = plan()
    assert p.size == 1 << 30 and p.strides == [64 << 10, 1 << 20, 2 << 20, 4 << 20]
    assert (p.rounds, p.reps, p.warmup, p.warmup_rounds, p.cpu) == (5, 4, 1, 1, 1)  # --cpu auto: not CPU 0
    assert p.cpu_reason == "auto: not CPU 0 nor its SMT siblings"
    assert p.align == 4 << 20


@pytest.mark.parametrize("kw,message", [
    (dict(strides="6K"), "not a multiple of the page size"),
    (dict(size="64M", strides="128M"), "larger than the size"),
    (dict(size="65M", strides="2M"), "not a multiple of stride"),
    (dict(size="0"), "must not be zero"),
    (dict(strides="0"), "must not be zero"),
    (dict(size="zz"), "is not a size"),
    (dict(size="16G"), "more than MemAvailable"),
    (dict(rounds=0), "--rounds must be at least 1"),
    (dict(reps=0), "--reps must be at least 1"),
    (dict(bystanders=4), "needs 4 other CPUs"),
    (dict(cpu=9), "not in this process's CPU affinity 0-3"),
    (dict(pages="hugetlb", strides="2M"), "the pool has 0 free 2M pages"),
    (dict(pages="hugetlb", strides="64K"), "not a multiple of the huge page size"),
    (dict(pages="huge"), "--pages must be"),
    (dict(trace="on", warmup=0), "needs --warmup 1"),
])
def test_bad_plans(kw, message):
    with pytest.raises(UsageError, match=message):
        plan(**kw)


def test_page_size_comes_from_the_host():
    # POWER: 64K base pages make a 4K stride invalid.
    with pytest.raises(UsageError, match=r"page size \(64K\)"):
        make_plan(strides="4K,64K", meminfo=MEM, affinity=[0], page_size=65536)
    assert make_plan(strides="64K", meminfo=MEM, affinity=[0], page_size=65536).strides == [65536]


def test_bystanders_take_other_cpus():
    p = plan(cpu=2, bystanders=2)
    assert p.cpu == 2 and p.bystander_cpus == [0, 1]


def test_round_order_is_repetition_major_shuffled_and_seeded():
    p = plan(seed=7, reps=3, warmup=1)
    order = round_order(p, 1)
    assert len(order) == 4 * 4
    for rep in range(4):
        chunk = order[rep * 4:(rep + 1) * 4]
        assert {r for r, _, _ in chunk} == {rep}
        assert sorted(s for _, _, s in chunk) == p.strides
        assert all(w == (rep == 0) for _, w, _ in chunk)
    assert order == round_order(p, 1)
    assert len({tuple(s for _, _, s in round_order(p, r)) for r in range(6)}) > 1


@pytest.mark.parametrize("kw,message", [
    (dict(confidence=90), "--confidence applies to adaptive runs: give --until P% too"),
    (dict(confidence="95"), "--confidence applies to adaptive runs"),  # given, even at the default
    (dict(max_time="5s"), "--max-time applies to adaptive runs"),
    (dict(until="-1%"), "--until must be above 0 and below 100 (got -1%)"),
    (dict(until="2%", max_time="-5s"), "--max-time '-5s' is not a duration"),
])
def test_adaptive_options_need_until(kw, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        plan(**kw)


def test_confidence_defaults_and_is_kept_with_until():
    assert plan().confidence == 95.0 and plan(until="2%").confidence == 95.0
    assert plan(until="2%", confidence=90).confidence == 90.0


def test_op_defaults_to_mprotect_and_is_an_axis_numbered_as_the_c_cells():
    assert plan().op == "mprotect" and plan(op="munmap").op == "munmap" and not plan(op="madvise").axes
    p = plan(size="16M", strides="64K", op="mprotect,madvise,munmap", bystanders="0,1")
    assert p.axes == {"op": ["mprotect", "madvise", "munmap"], "bystanders": [0, 1]}
    from atsdbench.measure import core

    c = core.cells(p.to_c())
    ops = {core.lib.ATSD_OP_MPROTECT: "mprotect", core.lib.ATSD_OP_MADVISE: "madvise",
           core.lib.ATSD_OP_MUNMAP: "munmap"}
    assert [(cell["op"], cell["bystanders"]) for cell in p.cells] == [(ops[t[4]], t[0]) for t in c]
    assert p.config()["op"] == "mprotect" and p.config()["cells"][5] == {"op": "munmap", "bystanders": 1}


@pytest.mark.parametrize("kw,message", [
    (dict(op="munmap", gpu=0), "--op munmap with --gpu"),
    (dict(op="mprotect,munmap", gpu="none,0"), "--op munmap with --gpu"),
    (dict(op="unmap"), "--op must be mprotect, madvise or munmap"),
])
def test_bad_ops_are_refused_by_the_c_check(kw, message):
    with pytest.raises(UsageError, match=message):
        plan(**kw)
    assert plan(op="madvise", gpu=0).gpu == 0 and plan(op="munmap", gpu="none").gpu is None


def test_threads_take_the_cpu_then_further_cpus_and_bystanders_the_rest():
    p = plan(threads=2, bystanders=1)
    assert p.threads == 2 and p.thread_cpus == [1, 0] and p.bystander_cpus == [2]
    p = plan(threads="1,3", bystanders="0,1", size="12M", strides="64K")
    assert p.axes == {"threads": [1, 3], "bystanders": [0, 1]} and p.thread_cpus == [1, 0, 2]
    assert p.bystander_cpus == [3]
    assert [(c["threads"], c["bystanders"]) for c in p.cells] == [(1, 0), (1, 1), (3, 0), (3, 1)]
    from atsdbench.measure import core

    assert [(t[5], t[0]) for t in core.cells(p.to_c())] == [(c["threads"], c["bystanders"]) for c in p.cells]
    assert plan(threads=1).thread_cpus == [1] and plan(bystanders=3).bystander_cpus == [0, 2, 3]


@pytest.mark.parametrize("kw,message", [
    (dict(threads=0), r"--threads must be at least 1 \(got 0\)"),
    (dict(threads=5), r"--threads 5 needs 5 CPUs \(one a thread\), but the affinity mask has 4 \(0-3\)"),
    (dict(threads="1,5"), "--threads 5 needs 5 CPUs"),
    (dict(threads=3, bystanders=2), "--threads 3 and --bystanders 2 need 4 CPUs besides CPU 1; the mask has 3"),
    (dict(threads=3, size="64M", strides="64K,2M"), "size 64M is not a multiple of --threads 3 x stride 64K"),
    (dict(threads="2,4", size="4M", strides="2M"), "size 4M is not a multiple of --threads 4 x stride 2M"),
    (dict(tasks="processes"), "--tasks processes makes the --threads processes: it needs --threads 2 or more"),
    (dict(threads=2, tasks="fork"), "--tasks must be threads or processes"),
])
def test_bad_thread_plans_are_refused_before_measuring(kw, message):
    assert plan(threads="1,2", tasks="processes").tasks == "processes" and plan().tasks == "threads"
    with pytest.raises(UsageError, match=message):
        plan(**kw)


def test_ceiling_kernel_in_an_axis_reaches_the_c_plan():
    # "kernel" is None in the plan; its C plan must read it back as "kernel", not "none"
    p = plan(size="16M", strides="64K", ceiling="kernel,33")
    assert p.axes == {"ceiling": [None, 33]}
    c = p.to_c()
    assert list(c.ceiling[0:c.nceiling]) == [-1, 33]
    assert [s for _, _, s in round_order(p, 0)] == [65536] * 5
    p = plan(size="16M", strides="64K", gpu="none,0")
    c = p.to_c()
    assert list(c.gpu[0:c.ngpu]) == [-1, 0]


@pytest.mark.parametrize("argv,message", [
    (["--until", "-1%"], "--until must be above 0 and below 100 (got -1%)"),
    (["--max-time", "-5s", "--until", "2%"], "--max-time '-5s' is not a duration"),
    (["--spread", "-1s"], "--spread '-1s' is not a duration"),
    (["--rounds", "-3"], "--rounds must be at least 1 (got -3)"),
    (["--confidence", "90"], "--confidence applies to adaptive runs: give --until P% too"),
])
def test_run_gives_the_plan_s_sentence_for_negative_values(tmp_path, capsys, argv, message):
    from atsdbench import cli

    assert cli.main(["run", "--size", "16M", "-o", str(tmp_path / "x.json"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"atsdbench: {message}") and err.count("\n") == 1
    assert "expected one argument" not in err and not list(tmp_path.iterdir())


def test_only_values_of_run_options_are_joined():
    from atsdbench import cli

    assert cli._joined_values(["run", "--until", "-1%", "--label", "-x", "--", "--spread", "-1"]) == \
        ["run", "--until=-1%", "--label", "-x", "--", "--spread", "-1"]
    assert cli._joined_values(["show", "--unit", "-1"]) == ["show", "--unit", "-1"]
    assert cli._joined_values(["run", "-o", "-5.json"]) == ["run", "-o", "-5.json"]  # "-o=x" would be "=x"
    assert cli._joined_values(["run", "--output", "-5.json"]) == ["run", "--output=-5.json"]


@pytest.mark.parametrize("options,message", [
    ({"runs": "0"}, "--runs must be at least 1 (got 0)"),
    ({"runs": "2", "gap": "soon"}, "--gap 'soon' is not a duration"),
    ({"runs": "2", "processes": True}, "--runs 2 gives each sub-run a fresh process"),
    ({"runs": "2", "spread": "10s"}, "--spread paces the rounds of one process"),
    ({"runs": "1", "until": "5%"}, "--until with --runs 1: a CI over sub-runs needs two: give --runs 2+"),
    ({"runs": "3", "rounds": "4", "until": "5%", "max_rounds": "10"},
     "--max-rounds 10 is below --runs 3 x --rounds 4 (12 rounds, the adaptive minimum)"),
])
def test_runs_refused_with_one_sentence(options, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        plans.make_plan(size="16M", **options)


def test_until_with_runs_keeps_the_sub_runs_rounds():
    # --until --runs adds sub-runs: --rounds is each sub-run's, not a minimum forced to 3
    p = plans.make_plan(size="16M", runs="3", rounds="1", until="5%", max_rounds="3")
    assert (p.runs, p.rounds, p.until, p.max_rounds, p.max_time) == (3, 1, 5.0, 3, 600.0)
    assert plans.make_plan(size="16M", runs="2", until="5%").rounds == 5  # the table's default
    assert plans.make_plan(size="16M", until="5%").rounds == 3  # rounds of one process: 3 unless given


def test_runs_and_gap_reach_the_plan():
    p = plans.make_plan(size="16M", runs="4", gap="1m")
    assert (p.runs, p.gap) == (4, 60.0) and p.config()["runs"] == 4
    assert plans.round_kinds(p, 1)[0] == (p.warmup_rounds + p.rounds, True)



@pytest.mark.parametrize("facts,cpu,reason", [
    ({"affinity": {0, 1, 2, 3}, "quiet": {3}}, 3, "auto: isolated or nohz_full"),
    ({"affinity": {0, 1, 2, 3}, "cores": {0: 0, 1: 0, 2: 1, 3: 1}}, 2, "auto: not CPU 0 nor its SMT siblings"),
    ({"affinity": {0, 1}, "cores": {0: 0, 1: 0}}, 0, "auto: no CPU allowed but CPU 0 and its siblings"),
    ({"affinity": {2, 3}}, 2, "auto: not CPU 0 nor its SMT siblings"),
])
def test_cpu_auto_avoids_housekeeping(facts, cpu, reason):
    p = make_plan(size="16M", **facts)
    assert (p.cpu, p.cpu_reason) == (cpu, reason)
    p = make_plan(size="16M", cpu="1", affinity={0, 1}, quiet={0})
    assert (p.cpu, p.cpu_reason) == (1, "given")


def test_bystanders_go_elsewhere_than_the_auto_cpu():
    p = make_plan(size="16M", bystanders="2", affinity={0, 1, 2, 3}, cores={0: 0, 1: 1, 2: 2, 3: 3})
    assert p.cpu == 1 and 1 not in p.bystander_cpus and len(p.bystander_cpus) == 2


def test_verify_checks_from_every_allowed_cpu():
    p = plan(verify=True)
    assert p.verify is True and p.verify_cpus == [0, 1, 2, 3]
    assert plan().verify is False and plan().verify_cpus == []  # auto: off (the --workload hook is in C)
    assert plan(verify=False).verify is False
    c = p.to_c()
    assert c.verify == 1  # the plan a worker rebuilds keeps it


def test_verify_with_one_cpu_has_nothing_to_check_from():
    with pytest.raises(UsageError) as e:
        make_plan(meminfo=MEM, affinity=[3], page_size=4096, verify=True)
    assert str(e.value) == "--verify checks each call from another CPU; the affinity mask has one (3)"
    assert make_plan(meminfo=MEM, affinity=[3], page_size=4096).verify is False


def test_verify_cpus_are_the_checks_to_choose():
    with pytest.raises(UsageError, match="verify_cpus is chosen by the plan check; give verify=True"):
        plan(verify_cpus=[1])


@pytest.mark.parametrize("options,message", [
    ({"placements": "0"}, "--placements must be at least 1 (got 0)"),
    ({"placements": "65"}, "--placements '65' is too large (at most 64)"),
    ({"placements": "2", "processes": True}, "--placements 2 rotates one process's rounds over its regions"),
    ({"placements": "2", "op": "madvise"}, "--placements 2 keeps each region's pages across rounds: it takes --op mprotect only"),
    ({"placements": "2", "op": "mprotect,munmap"}, "it takes --op mprotect only"),
    ({"placements": "2", "threads": "2"}, "--placements 2: the --threads' regions are not pooled"),
    ({"placements": "2", "size": "1G"}, "size 1G twice (--placements) and the canary's 16M are more than MemAvailable"),
    # 2^63: size x 2 + the canary wrapped to 16M past 2^64, and the check passed
    ({"placements": "2", "size": "8388608T"}, "size 8388608T twice (--placements) and the canary's 16M are more than"),
])
def test_placements_refused_with_one_sentence(options, message):
    facts = {"meminfo": {"MemAvailable": 1536 << 20}} if options.get("size") else {}
    options = {"size": "16M", **options}
    with pytest.raises(UsageError, match=re.escape(message)):
        plans.make_plan(**facts, **options)


def test_placements_default_is_one_and_travels_in_the_config():
    assert plans.make_plan(size="16M").placements == 1
    p = plans.make_plan(size="16M", placements="4")
    assert p.placements == 4 and p.config()["placements"] == 4
    # two regions at once fit (the chained fallback), though four do not
    assert plans.make_plan(size="512M", placements="4", meminfo={"MemAvailable": 1536 << 20}).placements == 4


def test_mem_node_checked_against_the_nodes_with_memory():
    fixtures = os.path.join(os.path.dirname(__file__), "..", "fixtures")
    assert plans.make_plan(size="16M").mem_node is None
    p = plans.make_plan(size="16M", mem_node="1", node_root=os.path.join(fixtures, "sys-node-2"))
    assert p.mem_node == 1 and p.config()["mem_node"] == 1
    with pytest.raises(UsageError, match=re.escape("--mem-node 1: no such NUMA node with memory (nodes with "
                                                   "memory: 0)")):
        plans.make_plan(size="16M", mem_node="1", node_root=os.path.join(fixtures, "sys-node-1"))
    with pytest.raises(UsageError, match=re.escape("--mem-node 'x' is not")):
        plans.make_plan(size="16M", mem_node="x")
    with pytest.raises(UsageError, match=re.escape("--mem-node '1024' is too large (at most 1023)")):
        plans.make_plan(size="16M", mem_node="1024")


def test_the_cell_count_of_eight_full_axes_does_not_wrap():
    """Eight axes of 16 values make 2^32 cells, which a 32-bit product takes as 0 (and the 256-cell
    limit then lets through): the count is held at INT32_MAX instead."""
    from atsdbench.measure import core

    p = core.ffi.new("struct atsd_plan *")
    core.lib.atsd_plan_init(p)
    for axis in ("nworkloads", "nops", "nthreads", "nbystanders", "npages", "ngpu", "ndevices", "nceiling"):
        setattr(p, axis, 16)
    assert core.lib.atsd_plan_cells(p) == 2**31 - 1
    p.nthreads = p.nbystanders = p.npages = p.ngpu = p.ndevices = p.nceiling = 1
    assert core.lib.atsd_plan_cells(p) == 256
