"""scripts/power_verdict.py (the per-guest verdict of scripts/power-check) on a real radix guest's console."""
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
