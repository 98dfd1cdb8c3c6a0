"""scripts/device-check's verdict on what its guests brought home: one line per check, exit 1 on any failure.

WORK/mirror: atsd with the mirror-only test_hmm, --device none,hmm --verify per op, --threads 2 and
  --breakdown (the driver's callback a stage of its own in the hmm cells, none in the others).
  Every file complete; every device read after a call refused (mprotect, munmap) or zero (madvise), none
  stale, none on a CPU either; on traced passes one driver callback (device_invalidates) per call where
  the device holds the range and none where no device is open; the notifier chain (notifier_starts)
  called once per call in every cell (the axis's none cells run the same mm: csrc/atsd_device.c's
  prime); a device touch timed before every hmm pass.
WORK/stale: the control, test_hmm-stale.ko (its callback erases nothing): guest exit 3, and every device
  check of every pass stale.
WORK/python: the Python CLI's run of the same in the guest, checked as the mirror files are.
Rates are not asserted: they are emulated.
"""
import glob
import os
import sys

import atsdbench
from atsdbench.analysis import stats

# a call's own callback, plus the rare one from elsewhere in the mm (a page reclaimed, a THP split):
# 256 calls have been seen to give 263
PER_CALL = (0.95, 1.5)


def check_counts(r, name):
    bad = []
    s = r.samples
    cells = r.config.get("cells") or [{}]
    for i, cell in enumerate(cells):
        here = s[s["cell"] == i] if "cell" in s else s
        device = cell.get("device", r.config.get("device", "none"))
        for stride in r.config["strides"]:
            c = stats.per_call_counters(here, stride)
            where = f"{name} {cell or ''} stride {stride}"
            inval, starts = c.get("device_invalidates_per_call"), c.get("notifier_starts_per_call")
            if inval is None or starts is None:
                bad.append(f"{where}: no device counts ({r.config.get('device_count_error')})")
                continue
            if device == "hmm" and not PER_CALL[0] <= inval <= PER_CALL[1]:
                bad.append(f"{where}: {inval:.3g} driver callbacks per call with the device holding the range")
            if device == "none" and inval != 0:
                bad.append(f"{where}: {inval:.3g} driver callbacks per call with no device open")
            if not PER_CALL[0] <= starts <= PER_CALL[1]:
                bad.append(f"{where}: {starts:.3g} notifier starts per call")
        if device == "hmm":
            touched = here[~here["warmup"]] if "warmup" in here else here
            if "device_touch_ns" not in touched or touched["device_touch_ns"].isna().any():
                bad.append(f"{name} {cell}: a pass without its device touch")
    return bad


def check_reads(r, name, stale_wanted):
    bad, checked = [], 0
    for v in r.verify:
        where = f"{name} {v['op']} stride {v['stride_bytes']}"
        if v.get("device_checks") is None:
            if v.get("device", r.config.get("device")) == "hmm":
                bad.append(f"{where}: a device cell's verify pass without device checks")
            continue
        checked += v["device_checks"]
        if v["device_checks"] != v["calls"] or not v["calls"]:
            bad.append(f"{where}: {v['device_checks']} device checks of {v['calls']} calls")
        if stale_wanted:
            if v["device_stale"] != v["device_checks"]:
                bad.append(f"{where}: the control was stale in {v['device_stale']} of {v['device_checks']}")
            continue
        must = v["device_zeros"] if v["op"] == "madvise" else v["device_failed"]
        if v["device_stale"] or must != v["device_checks"] or v["stale"]:
            bad.append(f"{where}: {v['device_stale']} stale, {must} of {v['device_checks']} device reads as they "
                       f"must be, {v['stale']} stale on a CPU")
    if not checked:
        bad.append(f"{name}: no device check at all")
    return bad, checked


def check_stage(r, name):
    """--breakdown: the driver's callback as a stage in the hmm cells' passes, 0 in the none cells'."""
    bad, found = [], 0
    cells = r.config.get("cells") or [{}]
    for p in r.config["breakdown"].get("passes", []):
        device = cells[p.get("cell", 0)].get("device", r.config.get("device", "none"))
        us = p.get("device_us")
        if us is None:
            bad.append(f"{name} breakdown {device} {p['stride_bytes']}: no device stage "
                       f"({r.config['breakdown'].get('missing')})")
        elif device == "hmm" and not 0 < us < p["syscall_us"]:
            bad.append(f"{name} breakdown {p['stride_bytes']}: device stage {us:.3g} of {p['syscall_us']:.3g} µs")
        elif device == "none" and us:
            bad.append(f"{name} breakdown {p['stride_bytes']}: device stage {us:.3g} µs with no device open")
        found += device == "hmm" and us is not None
    return bad, found


def main(work):
    lines, failed = [], 0

    def verdict(what, bad, detail):
        nonlocal failed
        failed += bool(bad)
        lines.append(f"{what}: FAILED: {'; '.join(bad[:6])}" if bad else f"{what}: ok ({detail})")

    mirror = sorted(glob.glob(os.path.join(work, "mirror", "*.json")))
    bad, checks, stages = ([] if len(mirror) == 5 else [f"{len(mirror)} result files of 5"]), 0, 0
    for path in mirror:
        r = atsdbench.load(path)
        name = os.path.basename(path)
        if not r.complete:
            bad.append(f"{name} incomplete")
        more, n = check_reads(r, name, False)
        bad += more + check_counts(r, name)
        checks += n
        if r.config.get("breakdown"):
            more, stages = check_stage(r, name)
            bad += more
    if not stages:
        bad.append("no breakdown pass with the device stage")
    verdict("atsd --device hmm (mirror-only test_hmm)", bad, f"{checks} device reads after the calls, 0 stale; "
            "one driver callback per call where the device holds the range, none without it; "
            f"the device stage in {stages} breakdown passes")

    rc = open(os.path.join(work, "stale.rc")).read().strip()
    stale = sorted(glob.glob(os.path.join(work, "stale", "*.json")))
    bad, checks = ([] if rc == "3" else [f"guest exit {rc}, not 3"]) + ([] if len(stale) == 3 else
                                                                      [f"{len(stale)} result files of 3"]), 0
    for path in stale:
        more, n = check_reads(atsdbench.load(path), os.path.basename(path), True)
        bad += more
        checks += n
    verdict("the control (test_hmm-stale.ko)", bad, f"stale in all {checks} device reads, exit 3")

    if os.path.isdir(os.path.join(work, "python")):
        found = glob.glob(os.path.join(work, "python", "**", "run.json"), recursive=True)
        bad, checks = [], 0
        if not found:
            out = glob.glob(os.path.join(work, "python", "*.out"))
            tail = open(out[0]).read().strip().splitlines()[-3:] if out else ["no output"]
            bad.append(f"no run.json: {' | '.join(tail)}")
        for path in found:
            r = atsdbench.load(path)
            more, checks = check_reads(r, "python run.json", False)
            bad += more + check_counts(r, "python run.json")
            more, stages = check_stage(r, "python run.json")
            bad += more + ([] if stages == 6 else [f"the device stage in {stages} breakdown passes of 6"])
            if r.host.get("device", {}).get("driver") != "test_hmm":
                bad.append(f"host device {r.host.get('device')}")
        verdict("atsdbench run --device none,hmm in the guest", bad, f"{checks} device reads, 0 stale; the device "
                "stage in every hmm cell's breakdown")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
