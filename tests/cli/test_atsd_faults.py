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


# The fake tracefs: its events made by hand for the pid the shell hands to atsd by exec, as the kernel
# would make them on the probe's line; kprobe_events a plain file that keeps every line written.
MAKE_EVENTS = """set -e
for column in notifier_starts device_invalidates; do
    mkdir -p "$TRACEFS/events/atsdbench_$$/$column"
    printf 'name: %s\\nID: 4242\\nformat:\\n' "$column" > "$TRACEFS/events/atsdbench_$$/$column/format"
done
exec "$@"
"""


@pytest.mark.parametrize("fault, status", [(None, None), ("sigterm", 130), ("die", 2), ("pin", 2)])
def test_the_kprobes_go_on_every_way_out(atsd_doubles, tmp_path, fault, status):
    root = tmp_path / "root"
    tracefs = root / "sys" / "kernel" / "tracing"
    (tracefs / "events").mkdir(parents=True)
    (tracefs / "kprobe_events").write_text("")
    device = tmp_path / "hmm_dmirror0"  # read-write, as the host probe asks; no pass gets to use it
    device.write_text("")
    env = {**os.environ, "ATSD_TEST_SYSROOT": str(root), "TRACEFS": str(tracefs), "ATSD_HMM_DEVICE": str(device)}
    if fault:
        env["ATSD_TEST_FAULT"] = fault
    p = subprocess.run(["sh", "-c", MAKE_EVENTS, "sh", atsd_doubles, "--device", "hmm", "--size", "4M",
                        "--strides", "1M", "--rounds", "1", "--reps", "1", "-o", str(tmp_path / "o.txt")],
                       capture_output=True, text=True, env=env, timeout=120)
    if status is not None:
        assert p.returncode == status, p.stderr
    lines = (tracefs / "kprobe_events").read_text().splitlines()
    made = [line.split()[0][2:] for line in lines if line.startswith("p:")]
    assert sorted(e.split("/")[1] for e in made) == ["device_invalidates", "notifier_starts"], lines
    for event in made:  # each made, then removed after it
        assert f"-:{event}" in lines[lines.index(next(x for x in lines if x.startswith(f"p:{event} "))):], lines
