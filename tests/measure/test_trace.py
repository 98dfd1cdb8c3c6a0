"""csrc/atsd_trace.c through the core: finding tracefs and the flush tracepoints, naming their columns,
and the sentence that says why one cannot be read, on fixture tracefs trees.  atsd and counters.py both
use these, so the last test holds atsd's words to them."""
import os
import re

import pytest

from atsdbench.measure import core, counters

X86 = "proc/tlb_flush-format-x86"


def tree(root, *events, text="name: x\nID: 7\nformat:\n"):
    for e in events:
        os.makedirs(root / "events" / e, exist_ok=True)
        (root / "events" / e / "format").write_text(text)
    os.makedirs(root / "events", exist_ok=True)
    return root


def test_the_tracefs_root_is_the_first_listable_one(tmp_path):
    assert core.tracefs_root(str(tmp_path)) is None
    tree(tmp_path / "sys/kernel/debug/tracing")
    assert core.tracefs_root(str(tmp_path)) == f"{tmp_path}/sys/kernel/debug/tracing"
    (tmp_path / "sys/kernel/tracing").mkdir()  # mounted nowhere: an empty directory
    assert core.tracefs_root(str(tmp_path)) == f"{tmp_path}/sys/kernel/debug/tracing"
    tree(tmp_path / "sys/kernel/tracing")
    assert core.tracefs_root(str(tmp_path)) == f"{tmp_path}/sys/kernel/tracing"


def test_a_file_named_events_is_no_tracefs(tmp_path):
    os.makedirs(tmp_path / "sys/kernel/tracing")
    (tmp_path / "sys/kernel/tracing/events").write_text("")
    assert core.tracefs_root(str(tmp_path)) is None


def _regex_format(text):
    """What the Python reader did before the rule moved to C, kept as the reference."""
    m = re.search(r"^ID:\s*(\d+)", text or "", re.MULTILINE)
    reasons = {int(code): name for code, name in re.findall(r'\{\s*(\d+),\s*"([^"]+)"\s*\}', text or "")}
    return (int(m.group(1)) if m else None), reasons


@pytest.mark.parametrize("text", [
    "", "name: tlb_flush\nID: 188\n", "ID:\n 9\n", "ID: x\nID: 12\n", "format:\n\tfield:int x;\n",
    'print fmt: "%s", __print_symbolic(REC->r, {0,"a"},{ 1 , "b" }, { 2, "" }, { -3, "c" }, {4, "d"  }, {5, "e" ,})',
    '{ 7, "first" } { 7, "last" } { 8, "x" }', '{ 1, "unterminated', "{{ 3, \"nested\" }}",
])
def test_a_format_file_reads_as_the_python_reader_read_it(text):
    assert core.parse_tracepoint_format(text) == _regex_format(text)


def test_the_x86_fixture(fixtures):
    text = (fixtures / X86).read_text()
    tp_id, reasons = core.parse_tracepoint_format(text)
    assert (tp_id, reasons) == _regex_format(text) and reasons[4] == "remote IPI send"


def test_find_reads_the_events_format_under_the_root(tmp_path, fixtures):
    root = tree(tmp_path / "tracing", "tlb/tlb_flush", text=(fixtures / X86).read_text())
    assert core.find_tracepoint("tlb/tlb_flush", str(root)) == _regex_format((fixtures / X86).read_text())
    assert core.find_tracepoint("powerpc/tlbie", str(root)) == (None, {})
    assert core.find_tracepoint("tlb/tlb_flush", str(root))[0] == 188  # the name host.py calls


@pytest.mark.parametrize("name", ["remote IPI send", "flush on task switch", "  Local--MM shootdown!! ", "x",
                                  "", "___", "CPU0 -> CPU1", "ümlaut send"])
def test_reason_columns(name):
    assert core.reason_column(name) == "flushes_" + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def test_the_tlb_flush_columns_and_filters(fixtures):
    tp_id, reasons = core.parse_tracepoint_format((fixtures / X86).read_text())
    cols = core.tlb_flush_columns(tp_id, reasons)
    assert list(cols)[:2] == ["flushes", "full_flushes"]
    # the sender's note is no flush; TLB_FLUSH_ALL is -1 in an unsigned long
    assert cols["flushes"] == "reason != 4"
    assert cols["full_flushes"] == f"pages == {(1 << 64) - 1} && reason != 4"
    assert {k: v for k, v in cols.items() if k.startswith("flushes_")} == {
        core.reason_column(name): f"reason == {code}" for code, name in reasons.items()}
    assert core.tlb_flush_columns(5, {}) == {"flushes": None, "full_flushes": f"pages == {(1 << 64) - 1}"}
    two = core.tlb_flush_columns(5, {1: "Send A", 2: "send b"})
    assert two["flushes"] == "reason != 1 && reason != 2"
    assert core.tlb_flush_columns(5, {1: "a b", 2: "a-b"}) == {  # one column: the last reason's filter
        "flushes": None, "full_flushes": f"pages == {(1 << 64) - 1}", "flushes_a_b": "reason == 2"}


def test_mounts():
    assert core.tracefs_mounted("none /sys/kernel/tracing tracefs rw 0 0\n")
    assert core.tracefs_mounted("proc /proc proc rw 0 0\n\ntracefs /t tracefs rw 0 0")
    assert not core.tracefs_mounted("tracefs /t tmpfs rw 0 0\n") and not core.tracefs_mounted("")


def test_the_problem_sentences():
    assert core.tracepoint_problem(euid=1000, mounted=False) == "tracefs needs root for tlb:tlb_flush (run as root)"
    assert core.tracepoint_problem(euid=0, mounted=False) == \
        "tracefs not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing)"
    assert core.tracepoint_problem("powerpc:tlbie", euid=0, mounted=True) == \
        "this kernel has no powerpc:tlbie event in tracefs"
    assert core.tracepoint_problem() == core.tracepoint_problem(euid=os.geteuid(), mounted=core.tracefs_mounted())


def test_atsd_says_what_counters_py_says(atsd, tmp_path):
    import subprocess

    out = tmp_path / "o.txt"
    p = subprocess.run([atsd, "--size", "4M", "--strides", "1M", "--rounds", "1", "--reps", "1", "-o", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    lines = out.read_text().splitlines()
    config = dict(f.split("=", 1) for f in lines[2].split("\t")[1:])
    c = counters.Counters([0])
    try:
        if "trace_events" in config:
            traced = [dict(f.split("=", 1) for f in line.split("\t")[1:]) for line in lines if "\ttraced=1" in line]
            if not counters.is_power():  # POWER: atsd counts with perf, atsdbench from a trace buffer
                assert config["trace_events"] == c.trace_events and traced
                assert all(set(c._tp[1]) <= set(s) for s in traced)
        else:
            assert config.get("trace_error") == c.trace_error, (config, c.trace_error)
    finally:
        c.close()
