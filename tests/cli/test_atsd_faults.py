"""atsd's own faults, through a test build (-DATSD_TEST_DOUBLES: each double behind an environment
variable; the atsd a user builds has none): /proc/interrupts of any line length, and the kprobe
events it makes gone after every way out."""
import os
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.live  # builds atsd

CSRC = os.path.join(os.path.dirname(__file__), "..", "..", "csrc")


@pytest.fixture(scope="module")
def atsd_doubles(tmp_path_factory):
    if not shutil.which("make") or not shutil.which("cc"):
        pytest.skip("make or cc not installed")
    exe = tmp_path_factory.mktemp("atsd-doubles") / "atsd"
    subprocess.run(["make", "-s", "-C", CSRC, f"OUT={exe}", "CFLAGS=-O2 -DATSD_TEST_DOUBLES"], check=True)
    return str(exe)


def _interrupts(ncpu, counts):
    """An /proc/interrupts of ncpu CPUs, as the kernel prints it (a 10-wide column a CPU)."""
    header = " " * 11 + "".join(f"CPU{c:<7}" for c in range(ncpu)).rstrip()
    rows = [f"{'LOC':>4}:" + "".join(f"{7:>11}" for _ in range(ncpu)) + "   Local timer interrupts",
            f"{'TLB':>4}:" + "".join(f"{v:>11}" for v in counts) + "   TLB shootdowns",
            f"{'ERR':>4}:{0:>11}"]
    return "\n".join([header, *rows]) + "\n"


@pytest.mark.parametrize("ncpu", [2, 700, 1024, 4096])
def test_the_tlb_row_is_summed_whatever_its_length(atsd_doubles, tmp_path, ncpu):
    from atsdbench.measure import procfs

    counts = [1000000000 + c for c in range(ncpu)]  # ten digits each: a 4096-CPU line is 45K
    f = tmp_path / "interrupts"
    f.write_text(_interrupts(ncpu, counts))
    p = subprocess.run([atsd_doubles], capture_output=True, text=True, env={**os.environ,
                                                                           "ATSD_TEST_INTERRUPTS": str(f)})
    assert p.returncode == 0, p.stderr
    assert int(p.stdout) == sum(counts) == procfs.parse_interrupts(f.read_text())


def test_no_tlb_row_is_none(atsd_doubles, tmp_path):
    f = tmp_path / "interrupts"
    f.write_text(_interrupts(4, [1, 2, 3, 4]).replace("TLB:", "XYZ:"))
    p = subprocess.run([atsd_doubles], capture_output=True, text=True, env={**os.environ,
                                                                           "ATSD_TEST_INTERRUPTS": str(f)})
    assert p.stdout == "-1\n"
