"""scripts/power_verdict.py (the per-guest verdict of scripts/power-check) on a real radix guest's console."""
import base64
import gzip
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "power_verdict.py"


def verdict(tmp_path, console_text, *args):
    log = tmp_path / "console.log"
    log.write_text(console_text)
    p = subprocess.run([sys.executable, str(SCRIPT), str(log), "--guest", "power9-radix", "--cpu", "POWER9",
                        "--out", str(tmp_path / "out"), "--timeout", "120", *args],
                       capture_output=True, text=True)
    lines = p.stdout.splitlines()
    assert len(lines) == 1 and p.stderr == "", (p.stdout, p.stderr)
    return p.returncode, lines[0]


def console(fixtures):
    return (fixtures / "power" / "power9-radix.console").read_text()


def test_radix_guest_passes_with_the_kernel_rule(tmp_path, fixtures):
    rc, line = verdict(tmp_path, console(fixtures), "--mmu", "Radix")
    assert rc == 0 and line.startswith("power9-radix ok: MMU Radix, 64K pages")
    assert "4M whole PID" in line and "64K 1 page" in line
    # every output came back and was imported
    assert len(list((tmp_path / "out").glob("atsd-*.json"))) == 4


def test_wrong_mmu_fails_in_one_line(tmp_path, fixtures):
    rc, line = verdict(tmp_path, console(fixtures), "--mmu", "Hash")
    assert rc == 1 and line == "power9-radix FAILED: /proc/cpuinfo says MMU Radix, expected Hash"


def test_a_guest_that_stops_early_or_hangs_fails(tmp_path, fixtures):
    text = console(fixtures)
    cut = text[:text.index("@@ begin trace")]
    rc, line = verdict(tmp_path, cut, "--mmu", "Radix")
    assert rc == 1 and "stopped before the end" in line
    rc, line = verdict(tmp_path, cut, "--mmu", "Radix", "--qemu-rc", "124")
    assert rc == 1 and "timed out after 120 s" in line
    rc, line = verdict(tmp_path, text[:text.index("@@ guest")], "--mmu", "Radix", "--qemu-rc", "1")
    assert rc == 1 and "did not reach /init (qemu exit 1)" in line


def test_a_flush_that_breaks_the_rule_is_named(tmp_path, fixtures):
    # Pretend the ceiling were 100: 4M (64 pages) would then have to be flushed page by page.
    text = console(fixtures).replace("@@ ceiling 33", "@@ ceiling 100")
    rc, line = verdict(tmp_path, text, "--mmu", "Radix")
    assert rc == 1 and "4M with bystanders=1 (64 pages, ceiling 100): 0 page and 1 whole-PID" in line


def python_console(fixtures, edit=None):
    """The Python guest's console; `edit(samples, bystanders)` rewrites the result files it carries."""
    text = (fixtures / "power" / "power9-radix-python.console").read_text()
    if edit is None:
        return text
    out, block = [], None
    for line in text.replace("\r", "").split("\n"):
        if line.startswith("@@ begin result"):
            bystanders, block = int(line.rsplit("=", 1)[1]), []
            out.append(line)
        elif block is not None and line.startswith("@@ end result"):
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


def test_python_cli_zero_flush_column_is_named(tmp_path, fixtures):
    # as the guest ran it: tlb:tlb_flush exists on POWER but never fires, so `flushes` read 0
    rc, line = verdict(tmp_path, python_console(fixtures), "--mmu", "Radix", "--python")
    assert rc == 1 and "the flushes column reads 0 on every pass" in line and "absent must mean not measured" in line


def drop_flushes(samples, bystanders):
    for s in samples:
        for key in [k for k in s if "flush" in k]:
            del s[key]


def test_python_cli_without_flush_columns_passes(tmp_path, fixtures):
    rc, line = verdict(tmp_path, python_console(fixtures, drop_flushes), "--mmu", "Radix", "--python")
    assert rc == 0 and line.startswith("power9-radix ok: info: MMU Radix, 64K pages, ceiling 33")
    assert "b1: no flush columns (not measured)" in line and "show and compare ran" in line


def tlbie_columns(full_at_4m):
    def edit(samples, bystanders):
        drop_flushes(samples, bystanders)
        for s in samples:
            if s["traced"]:
                full = bystanders and s["stride_bytes"] == 4 << 20 and full_at_4m
                s["tlbie_full"] = s["calls"] if full else 0
                s["tlbie_global"] = 3 * s["calls"] if bystanders else 0
    return edit


def test_python_cli_tlbie_columns_follow_the_rule(tmp_path, fixtures):
    rc, line = verdict(tmp_path, python_console(fixtures, tlbie_columns(True)), "--mmu", "Radix", "--python")
    assert rc == 0 and "b1: tlbie_full per call 64K 0, 1M 0, 2M 0, 4M 1" in line
    rc, line = verdict(tmp_path, python_console(fixtures, tlbie_columns(False)), "--mmu", "Radix", "--python")
    assert rc == 1 and "tlbie_full 0 per call at 4M (64 pages, ceiling 33), the kernel's rule says 1" in line
