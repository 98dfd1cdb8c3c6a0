"""scripts/power_verdict.py (the per-guest verdict of scripts/power-check) on real guests' consoles (the traced
runs' and the Python CLI's, as `atsdbench guest` keeps them)."""
import base64
import gzip
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import atsdbench

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "power_verdict.py"


def verdict_process(tmp_path, console_text, *args):
    """The script as power-check runs it: its exit status and its one line."""
    log = tmp_path / "console.log"
    log.write_text(console_text)
    p = subprocess.run([sys.executable, str(SCRIPT), str(log), "--guest", "power9-radix", "--cpu", "POWER9",
                        "--out", str(tmp_path / "out"), "--timeout", "120", *args],
                       capture_output=True, text=True)
    lines = p.stdout.splitlines()
    assert len(lines) == 1 and p.stderr == "", (p.stdout, p.stderr)
    return p.returncode, lines[0]


@pytest.fixture
def verdict(tmp_path, script, cli, monkeypatch, capsys):
    """verdict(CONSOLE, ARGS...): the script's main() in this process, its `atsdbench import`s through the
    in-process cli fixture, so a check starts no interpreter; verdict_process runs the script whole."""
    module = script("power_verdict")

    def run(cmd, capture_output, text, cwd):
        assert cmd[:3] == [sys.executable, "-m", "atsdbench"] and capture_output and text, cmd
        return cli(*cmd[3:], cwd=cwd)

    monkeypatch.setattr(module, "subprocess", types.SimpleNamespace(run=run))

    def check(console_text, *args):
        log = tmp_path / "console.log"
        log.write_text(console_text)
        monkeypatch.setattr(sys, "argv", ["power_verdict.py", str(log), "--guest", "power9-radix", "--cpu", "POWER9",
                                          "--out", str(tmp_path / "out"), "--timeout", "120", *args])
        capsys.readouterr()
        rc = module.main()
        out, err = capsys.readouterr()
        lines = out.splitlines()
        assert len(lines) == 1 and err == "", (out, err)
        return rc, lines[0]
    return check


def console(fixtures):
    return (fixtures / "power" / "power9-radix.console").read_text()


@pytest.mark.slow
def test_radix_guest_passes_with_the_kernel_rule(tmp_path, fixtures):
    rc, line = verdict_process(tmp_path, console(fixtures), "--mmu", "Radix")
    assert rc == 0 and line.startswith("power9-radix ok: MMU Radix, 64K pages")
    assert "4M whole PID" in line and "64K 1 page" in line
    # every output came back and was imported
    assert len(list((tmp_path / "out").glob("atsd-*.json"))) == 4


def test_radix_guest_checks_atsd_s_own_counts(verdict, tmp_path, fixtures):
    rc, line = verdict(console(fixtures), "--mmu", "Radix")
    # atsd's perf counters (kernel filters) on its warm-up passes: tlbie / whole-PID flushes per call;
    # 1M without a bystander shows the kernel's own trim of the CPU mask (a tlbiel walk, 1 of 64 calls)
    assert rc == 0 and "atsd's counts tlbie/full PID per call, b0 (ceiling 256): 64K 1/0, 1M 18/0.0156" in line
    assert "b1 (ceiling 33): 64K 3.12/0.000977, 1M 18/0, 2M 34/0, 4M 3/1" in line
    assert (tmp_path / "out" / "atsd-64M-b1.table").read_text().startswith("mprotect(PROT_NONE) rate over 64M")


def atsd_sample_edit(text, size, bystanders, stride, field, value):
    """The console with one field of atsd's traced samples of one run and stride set to value."""
    out, inside = [], False
    for line in text.split("\n"):
        if line.startswith("@@ begin atsd "):
            inside = line.endswith(f"size={size} bystanders={bystanders}")
        if inside and line.startswith("sample") and "traced=1" in line and f"stride_bytes={stride}\t" in line:
            line = "\t".join(f"{field}={value}" if part.startswith(f"{field}=") else part for part in line.split("\t"))
        out.append(line)
    return "\n".join(out)


def test_atsd_s_counts_that_break_the_rule_are_named(verdict, fixtures):
    text = atsd_sample_edit(console(fixtures), "256M", 1, 4 << 20, "tlbie_full", 0)
    rc, line = verdict(text, "--mmu", "Radix")
    assert rc == 1 and line == ("power9-radix FAILED: atsd size=256M bystanders=1: tlbie_full 0 per call at 4M "
                                "(64 pages, ceiling 33), the kernel's rule says 1 (atsd's counts)")


def test_hash_guest_counts_hypervisor_calls(verdict, fixtures):
    text = (fixtures / "power" / "power9-hash.console").read_text()
    rc, line = verdict(text, "--mmu", "Hash")
    assert rc == 0 and line.startswith("power9-radix ok: MMU Hash, 64K pages;")
    # atsd's own counts: one H_REMOVE for one page, H_BULK_REMOVE of four entries for more
    assert "atsd's counts H_REMOVE+H_BULK_REMOVE per call, b0: 64K 1+0, 1M 0+4, 2M 0+8, 4M 0+16" in line
    rc, line = verdict(atsd_sample_edit(text, "64M", 0, 2 << 20, "h_bulk_remove", 0), "--mmu", "Hash")
    assert rc == 1 and "atsd size=64M bystanders=0: 2M (32 pages): 0 H_REMOVE, 0 H_BULK_REMOVE" in line
    rc, line = verdict(atsd_sample_edit(text, "64M", 1, 64 << 10, "tlbie", 1024), "--mmu", "Hash")
    assert rc == 1 and line.endswith("64K (1 page): 1 H_REMOVE, 0 H_BULK_REMOVE, 1 tlbie per call (atsd's counts)")


def test_wrong_mmu_fails_in_one_line(verdict, fixtures):
    rc, line = verdict(console(fixtures), "--mmu", "Hash")
    assert rc == 1 and line == "power9-radix FAILED: /proc/cpuinfo says MMU Radix, expected Hash"


def test_a_guest_that_stops_early_or_hangs_fails(verdict, fixtures):
    text = console(fixtures)
    cut = text[:text.index("@@ begin trace")]
    rc, line = verdict(cut, "--mmu", "Radix")
    assert rc == 1 and "stopped before the end" in line
    rc, line = verdict(cut, "--mmu", "Radix", "--qemu-rc", "124")
    assert rc == 1 and "timed out after 120 s" in line
    rc, line = verdict(text[:text.index("@@ guest")], "--mmu", "Radix", "--qemu-rc", "1")
    assert rc == 1 and "did not reach /init (qemu exit 1)" in line


def test_a_flush_that_breaks_the_rule_is_named(verdict, fixtures):
    # Pretend the ceiling were 100: 4M (64 pages) would then have to be flushed page by page.
    text = console(fixtures).replace("@@ ceiling 33", "@@ ceiling 100")
    rc, line = verdict(text, "--mmu", "Radix")
    assert rc == 1 and "4M with bystanders=1 (64 pages, ceiling 100): 0 page and 1 whole-PID" in line


def python_console(fixtures, edit=None, name="power9-radix-python-tlbie.console"):
    """The Python guest's console; `edit(samples, bystanders)` rewrites the result files it carries (the files
    its command left in /out, run-bN.json)."""
    text = (fixtures / "power" / name).read_text()
    if edit is None:
        return text
    out, block = [], None
    for line in text.replace("\r", "").split("\n"):
        if line.startswith("@@ begin file path=run-b"):
            bystanders, block = int(line.rsplit("-b", 1)[1].split(".")[0]), []
            out.append(line)
        elif block is not None and line.startswith("@@ end file"):
            data = json.loads(gzip.decompress(base64.b64decode("".join(block))))
            edit(data["samples"], bystanders)
            out += base64.encodebytes(gzip.compress(json.dumps(data).encode())).decode().split()
            out.append(line)
            block = None
        elif block is not None:
            block.append(line)
        else:
            out.append(line)
    return "\n".join(out)


def test_python_cli_counts_tlbie_by_the_kernel_rule(verdict, tmp_path, fixtures):
    # the guest as it runs now: no flushes column, tlbie columns on the traced passes
    rc, line = verdict(python_console(fixtures), "--mmu", "Radix", "--python")
    assert rc == 0 and line.startswith("power9-radix ok: info: MMU Radix, 64K pages, ceiling 33")
    # tlbie/full PID/fixup per call: local per page up to the local ceiling (256), a tlbiel walk of the
    # whole PID above it (32M); with a bystander global, the whole PID above 33 pages, two workarounds
    assert "b0 (ceiling 256): 64K 1/0/0, 1M 16/0/0, 2M 32/0/0, 4M 64/0/0, 32M 128/1/0" in line
    assert "b1 (ceiling 33): " in line and "2M 34/0/2, 4M 3/1/2, 32M 3/1/2" in line
    assert "show and compare ran" in line
    for b in (0, 1):
        r = atsdbench.load(str(tmp_path / "out" / f"run-b{b}.json"))
        assert "flushes" not in r.samples and r.config["trace_events"].startswith("powerpc:tlbie")
        assert r.samples[~r.samples["traced"]]["tlbie"].isna().all()  # counted on warm-up passes only


def test_python_cli_zero_flush_column_is_named(verdict, fixtures):
    # as the guest ran it before POWER was counted: tlb:tlb_flush exists there but never fires
    old = python_console(fixtures, name="power9-radix-python.console")
    rc, line = verdict(old, "--mmu", "Radix", "--python")
    assert rc == 1 and line.endswith("atsdbench info says powerpc:tlbie tracepoint: nothing, "
                                     "the guest has readable (flushes counted from it)")
    # with info as it is now, the result files' column of zeros is what fails
    info = "tlb:tlb_flush tracepoint:            readable\n"
    assert info in old
    rc, line = verdict(old.replace(info, info + "powerpc:tlbie tracepoint: readable (flushes counted from it)\n"),
                       "--mmu", "Radix", "--python")
    assert rc == 1 and "the flushes column reads 0 on every pass" in line and "absent must mean not measured" in line


def drop_counts(samples, bystanders):
    for s in samples:
        for key in [k for k in s if k.startswith(("flush", "tlbie", "full_flush"))]:
            del s[key]


def test_python_cli_without_flush_columns_fails(verdict, fixtures):
    # the guest is root with tracefs mounted: a run that counted nothing did not work
    rc, line = verdict(python_console(fixtures, drop_counts), "--mmu", "Radix", "--python")
    assert rc == 1 and "run --bystanders 0: no tlbie columns" in line


def edit_stride(stride, column, value):
    def edit(samples, bystanders):
        for s in samples:
            if s["traced"] and s["stride_bytes"] == stride and bystanders:
                s[column] = value(s)
    return edit


@pytest.mark.parametrize("stride, column, value, message", [
    (4 << 20, "tlbie_full", lambda s: 0, "tlbie_full 0 per call at 4M (64 pages, ceiling 33), the kernel's rule says 1"),
    (2 << 20, "tlbie_full", lambda s: s["calls"], "tlbie_full 1 per call at 2M (32 pages, ceiling 33)"),
    (2 << 20, "tlbie", lambda s: s["calls"], "1 tlbie per call at 2M (32 pages, ceiling 33), fewer than one per page"),
    (4 << 20, "tlbie_global", lambda s: 64 * s["calls"], "64 tlbie per call at 4M (64 pages, ceiling 33), the whole PID"),
    (1 << 20, "tlbie_fixup", lambda s: 0, "tlbie_fixup 0 per call at 1M"),
])
def test_python_cli_tlbie_columns_that_break_the_rule_are_named(verdict, fixtures, stride, column, value, message):
    rc, line = verdict(python_console(fixtures, edit_stride(stride, column, value)), "--mmu", "Radix",
                       "--python")
    assert rc == 1 and line.startswith("power9-radix FAILED: run --bystanders 1: ") and message in line, line
