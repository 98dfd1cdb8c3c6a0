"""scripts/build-test-hmm (the mirror-only changes it makes to the kernel's lib/test_hmm.c) on a source
shaped as the kernel's, scripts/device_verdict.py on guests that brought nothing home, and
scripts/device-check whole (slow: downloads Debian's packages, boots three guests under qemu)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "scripts" / "build-test-hmm"

# the five functions the changes touch, as lib/test_hmm.c has them (6.1 and 6.12 alike)
SOURCE = """\
static void dmirror_do_update(struct dmirror *dmirror, unsigned long start,
			      unsigned long end)
{
	unsigned long pfn;
	void *entry;

	xa_for_each_range(&dmirror->pt, pfn, entry, start >> PAGE_SHIFT,
			  end >> PAGE_SHIFT)
		xa_erase(&dmirror->pt, pfn);
}

static int dmirror_allocate_chunk(struct dmirror_device *mdevice,
				   struct page **ppage)
{
	struct dmirror_chunk *devmem;
	int ret = -ENOMEM;

	return ret;
}

static int dmirror_exclusive(struct dmirror *dmirror,
			     struct hmm_dmirror_cmd *cmd)
{
	for (addr = start; addr < end; addr = next) {
		ret = make_device_exclusive_range(mm, addr, next, pages, NULL);
	}
}

static int dmirror_device_init(struct dmirror_device *mdevice, int id)
{
	/* Build a list of free ZONE_DEVICE struct pages */
	return dmirror_allocate_chunk(mdevice, NULL);
}
"""


def build(*args):
    return subprocess.run([sys.executable, str(BUILD), *map(str, args)], capture_output=True, text=True, timeout=60)


def tree(tmp_path, text):
    (tmp_path / "lib").mkdir(exist_ok=True)
    (tmp_path / "lib" / "test_hmm.c").write_text(text)
    return tmp_path


def test_the_changes_apply_to_the_kernels_shape(tmp_path):
    p = build("--source", tree(tmp_path, SOURCE), "--quick")
    assert p.returncode == 0 and "the changes apply" in p.stdout, p.stderr


def test_the_changes_made_are_the_described_ones():
    ns = {"__name__": "build_test_hmm"}
    exec(compile(BUILD.read_text(), str(BUILD), "exec"), ns)
    mirror = ns["apply"](SOURCE, ns["MIRROR_ONLY"])
    assert "#ifdef CONFIG_DEVICE_PRIVATE\n\t\tret = make_device_exclusive_range" in mirror
    assert "if (!IS_ENABLED(CONFIG_DEVICE_PRIVATE))\n\t\treturn -EOPNOTSUPP;" in mirror
    assert "return ret == -EOPNOTSUPP ? 0 : ret;" in mirror
    assert "xa_erase(&dmirror->pt, pfn);" in mirror  # the mirror-only driver still erases
    stale = ns["apply"](mirror, ns["STALE"])
    assert "xa_erase(&dmirror->pt, pfn);" not in stale.split("dmirror_do_update")[1].split("\n}\n")[0]


@pytest.mark.parametrize("moved, named", [
    (SOURCE.replace("make_device_exclusive_range(mm", "make_device_exclusive(mm"), "dmirror_exclusive()"),
    (SOURCE.replace("static int dmirror_device_init", "static int dmirror_dev_init"), "no function dmirror_device_init"),
])
def test_a_moved_source_stops_the_build_naming_the_function(tmp_path, moved, named):
    p = build("--source", tree(tmp_path, moved), "--quick")
    assert p.returncode == 2 and p.stdout == "" and named in p.stderr, p
    assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("build-test-hmm: "), p.stderr


def test_bad_inputs_are_one_line(tmp_path):
    for args in (["--source", tmp_path / "none"], ["--source", tree(tmp_path, SOURCE)],
                 ["--image", "not-an-image", "--cache", tmp_path]):
        p = build(*args)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (args, p.stderr)


@pytest.mark.live
@pytest.mark.slow
def test_device_check_boots_the_driver_and_its_control(tmp_path):
    """scripts/device-check whole: the mirror-only driver gives one callback per call and 0 stale for the
    three ops in atsd and in the Python CLI; the control is stale in every check and exits 3."""
    for tool in ("qemu-system-x86_64", "apt-get", "dpkg-deb", "make", "cc"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed")
    if os.geteuid() != 0:
        pytest.skip("the Python guest's root is built as root")
    keep = tmp_path / "keep"
    env = dict(os.environ, PYTHON=sys.executable, ATSD_DEVICE_KEEP=str(keep))
    p = subprocess.run(["bash", str(ROOT / "scripts" / "device-check")], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=1800)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [line for line in p.stdout.splitlines() if ": ok (" in line]
    assert len(lines) == 3, p.stdout
    stale = sorted((keep / "stale").glob("*.json"))
    assert len(stale) == 3 and all(v["device_stale"] == v["device_checks"] > 0
                                   for f in stale for v in json.loads(f.read_text())["verify"])


def test_device_verdict_fails_each_check_on_guests_that_brought_nothing(script, tmp_path, capsys):
    """device_verdict.py (device-check's verdict, run whole by the test above) in this process: no result
    files from the mirror guest, none from the control though it exited 3: one FAILED line each, exit 1."""
    for d in ("mirror", "stale"):
        (tmp_path / d).mkdir()
    (tmp_path / "stale.rc").write_text("3\n")
    assert script("device_verdict").main(str(tmp_path)) == 1
    assert capsys.readouterr().out.splitlines() == [
        "atsd --device hmm (mirror-only test_hmm): FAILED: 0 result files of 5; no breakdown pass with the device "
        "stage", "the control (test_hmm-stale.ko): FAILED: 0 result files of 3"]
