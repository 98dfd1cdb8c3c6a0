"""End to end, under qemu (TCG): a campaign of one boot per kernel between Debian's 6.1 and 6.12 amd64
kernels, driven by `atsdbench campaign step --method kexec` inside the guest at every boot (the campaign
directory on a 9p share), checked on the host: 2 files, 2 boot_ids, the second boot the other kernel's by
kexec, and compare DIR.  One boot each proves the path (boot, step, kexec into the other kernel, the
share kept, the campaign ended); the schedule's alternation over more boots is tests/campaign's, in
process.  Live, and minutes long under TCG: it runs where ATSD_CAMPAIGN_E2E=1 (.ci/run sets it),
fetching the kernels once (apt-get download, cached) and booting them.  No time is asserted."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import kexec_guest

pytestmark = pytest.mark.live

TIMEOUT = 1200  # seconds for the whole campaign before it is called hung (no timing is asserted)


def test_a_kexec_campaign_inside_qemu(tmp_path, cli):
    if os.environ.get("ATSD_CAMPAIGN_E2E") != "1":
        pytest.skip("the kexec campaign under qemu takes minutes: ATSD_CAMPAIGN_E2E=1 runs it")
    for tool in ("qemu-system-x86_64", "apt-get", "dpkg-deb"):
        if not shutil.which(tool):
            pytest.skip(f"no {tool}")
    try:
        kernels = [kexec_guest.kernel(p) for p in kexec_guest.KERNELS]
    except (subprocess.CalledProcessError, StopIteration) as e:
        pytest.skip(f"the Debian kernels could not be fetched ({e})")
    store = tmp_path / "store"
    store.mkdir()
    images = []
    for (vmlinuz, release, _), name in zip(kernels, ("old", "new")):
        images.append(store / f"vmlinuz-{release}")
        shutil.copy(vmlinuz, images[-1])
    initrd = kexec_guest.initramfs(store / "initrd.cpio", kernels)
    r = cli("campaign", "init", str(store / "camp"), "--kernel", f"old={images[0]},initrd={initrd}",
            "--kernel", f"new={images[1]},initrd={initrd}", "--boots", "1", "--method", "kexec", "--runner", "atsd",
            "--", "--size", "16M", "--rounds", "2", "--reps", "1", "--warmup", "0")
    assert r.returncode == 0, r.stderr
    console = tmp_path / "console.log"
    start = time.monotonic()
    try:
        p = kexec_guest.qemu(store, images[0], initrd, console, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p = None
    took = time.monotonic() - start
    text = console.read_text(errors="replace") if console.exists() else ""
    shown = "\n".join(text.splitlines()[-40:])
    assert p is not None, f"qemu ran past {TIMEOUT} s; console tail:\n{shown}"
    boots = [line.split() for line in text.splitlines() if line.startswith("@@ boot ")]
    assert [b[3] for b in boots] == [kernels[0][1], kernels[1][1]], shown
    assert "@@ step rc=0" in text, shown
    from atsdbench.data import campaign as store_format

    c = store_format.load(str(store / "camp"))
    assert [e["kernel"] for e in c.done] == ["old", "new"]
    assert len({e["boot_id"] for e in c.done}) == 2
    assert {e["boot_id"] for e in c.done} == {b[2] for b in boots}
    for e in c.done:
        data = json.loads((store / "camp" / e["file"]).read_text())
        assert data["complete"] and data["host"]["boot_id"] == e["boot_id"]
    r = cli("compare", str(store / "camp"))
    assert r.returncode == 0 and "boots in order AB;" in r.stdout, r.stdout + r.stderr
    print(f"2 boots by kexec in {took:.0f} s", file=sys.stderr)  # reported, not asserted: shared cores
