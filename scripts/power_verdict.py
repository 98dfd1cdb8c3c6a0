"""One power-check guest's verdict, from the console `atsdbench guest` kept (see scripts/power-check; the
console's markers are guest's /init's, atsdbench/guest/init.sh), or from guest's result files (--result).

Imports every atsd output of an untraced run with `atsdbench import` and checks page size, MMU, CPU and
rates; decodes the traced runs (mprotect syscall events around the kernel's tlbie or hcall events) per call
and checks the flush rule: radix flushes each page (tlbiel without a bystander, tlbie with one) up to the ceiling in
debugfs and the whole PID above it; hash removes page table entries through the hypervisor (H_REMOVE,
H_BULK_REMOVE of up to 4) and issues no tlbie.  Prints one line; exit 1 when the guest misbehaved.
"""
import argparse
import base64
import gzip
import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from statistics import median

try:  # the installed package: tlbie takes its filters from the compiled core
    import atsdbench.measure.core  # noqa: F401
except ImportError:  # else the checkout, built in place (pip install -e .)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import atsdbench  # noqa: E402
from atsdbench.measure import tlbie  # noqa: E402
from atsdbench.guest.console import attrs, parse_console, unpack  # noqa: E402,F401  (the console, as guest reads it)
from atsdbench.units import format_size, parse_size  # noqa: E402



# radix trims a process's CPU mask once every tlb_mm_cpumask_trim_timer flushes on a CPU (1073 in
# arch/powerpc/mm/book3s64/radix_tlb.c), flushing the whole PID with tlbiel on the CPUs it leaves
TRIM_EVERY = 1073


class Bad(Exception):
    """The guest misbehaved: the message says how, in one line."""


def decode_trace(block):
    if block["end"] is None:
        raise Bad(f"trace with bystanders={block['attrs'].get('bystanders')} did not end")
    if block["end"].get("rc") != "0":
        raise Bad(f"the traced atsd run failed (rc {block['end'].get('rc')})")
    if block["end"].get("overrun", "0") != "0":
        raise Bad(f"the trace buffer overran ({block['end']['overrun']} events lost)")
    try:
        return gzip.decompress(base64.b64decode("".join(block["lines"]))).decode().splitlines()
    except (ValueError, OSError) as e:
        raise Bad(f"trace with bystanders={block['attrs'].get('bystanders')} came back damaged: {e}") from None


def check_output(block, args, page_size):
    """Import one atsd output and check it; returns the stride list."""
    a = block["attrs"]
    tag = f"size={a.get('size')} bystanders={a.get('bystanders')}"
    if block["end"] is None or block["end"].get("rc") != "0":
        raise Bad(f"atsd {tag} failed (rc {block['end'] and block['end'].get('rc')})")
    stem = os.path.join(args.out, f"atsd-{a.get('size')}-b{a.get('bystanders')}")
    with open(stem + ".txt", "w") as f:
        f.write("\n".join(block["lines"]) + "\n")
    stem = os.path.abspath(stem)
    # cwd: not the checkout, whose atsdbench/ has no compiled core after a plain `pip install .`
    imp = subprocess.run([sys.executable, "-m", "atsdbench", "import", stem + ".txt", "-o", stem + ".json",
                          "--force"],  # this script's own folder: each check writes it afresh
                         capture_output=True, text=True, cwd=os.path.dirname(stem))
    if imp.returncode:
        raise Bad(f"atsdbench import of atsd {tag}: {imp.stderr.strip().splitlines()[-1:]}")
    r = atsdbench.load(stem + ".json")
    if not r.complete:
        raise Bad(f"atsd {tag}: the run is not complete")
    if r.host["page_size"] != page_size or page_size != 65536:
        raise Bad(f"atsd {tag}: page size {r.host['page_size']}, the kernel says {page_size}, expected 65536")
    if r.host["mmu"] != args.mmu:
        raise Bad(f"atsd {tag}: MMU {r.host['mmu']}, booted as {args.mmu}")
    if r.config["size"] != parse_size(a["size"]) or r.config["bystanders"] != int(a["bystanders"]):
        raise Bad(f"atsd {tag}: the output is of another plan ({r.config['size']}, {r.config['bystanders']})")
    m = r.measured
    for stride in r.config["strides"]:
        rates = m[m["stride_bytes"] == stride]["gbps"]
        if rates.empty or not (rates > 0).all():
            raise Bad(f"atsd {tag}: no positive rate at stride {format_size(stride)}")
    return r.config["strides"], r


def atsd_counts(r, args, values, bystanders, page_size):
    """atsd's own counts (perf counters with kernel filters, on its warm-up passes) against the rule."""
    tag = f"atsd size={format_size(r.config['size'])} bystanders={bystanders}"
    try:
        if args.mmu == "Radix":
            limit = int(values["local_ceiling"] if bystanders == 0 else values["ceiling"])
            return flush_columns(r, bystanders, limit, page_size, tag=tag)
        return hash_columns(r, bystanders, page_size, tag=tag)
    except Bad as e:
        raise Bad(f"{e} (atsd's counts)") from None


def hash_columns(r, bystanders, page_size, tag):
    """On hash, no tlbie; the page-table entries of each call are removed through the hypervisor."""
    s = r.samples
    if "h_remove" not in s or s["h_remove"].isna().all():
        raise Bad(f"{tag}: no hypervisor call columns ({r.config.get('trace_error') or 'not counted'})")
    parts = []
    for stride, rows in s[s["h_remove"].notna()].groupby("stride_bytes"):
        n = stride // page_size
        remove, bulk, tlbies = (median(rows[c] / rows["calls"]) for c in ("h_remove", "h_bulk_remove", "tlbie"))
        if tlbies or not (math.ceil(n / 4) <= remove + bulk <= n and remove + 4 * bulk >= n):
            raise Bad(f"{tag}: {format_size(stride)} ({n} page{'s' * (n > 1)}): {remove:g} H_REMOVE, {bulk:g} H_BULK_REMOVE, "
                      f"{tlbies:g} tlbie per call")
        parts.append(f"{format_size(stride)} {remove:g}+{bulk:g}")
    return f"b{bystanders}: " + ", ".join(parts)


def radix_rule(per_stride, bystanders, ceiling, page_size):
    """Check each call against the rule; returns a summary of the median call per stride."""
    local = bystanders == 0
    parts, pids = [], set()
    for stride, found in sorted(per_stride.items()):
        for events, _ in found:
            pids.update(e.pid for e, label in zip(events, tlbie.classify(events)) if label == "page")
    if len(pids) > 1:
        raise Bad(f"bystanders={bystanders}: page flushes name several PIDs {sorted(pids)}")
    pid = pids.pop() if pids else None
    for stride, found in sorted(per_stride.items()):
        n = stride // page_size
        full = n > ceiling
        words = []
        for events, _ in found:
            labels = tlbie.classify(events, pid)
            c = tlbie.tally(events, labels=labels)
            kind = "tlbiel" if local else "tlbie"
            if any(bool(e.local) != local for e in events):
                raise Bad(f"{format_size(stride)} with bystanders={bystanders}: "
                          f"{'a global tlbie' if local else 'a local tlbiel'} (expected {kind} only)")
            want = (0, 1) if full else (n, 0)
            if (c["tlbie_page"], c["tlbie_full"]) != want or c["tlbie_other"]:
                raise Bad(f"{format_size(stride)} with bystanders={bystanders} ({n} pages, ceiling {ceiling}): "
                          f"{c['tlbie_page']} page and {c['tlbie_full']} whole-PID flushes in a call, "
                          f"expected {want[0]} and {want[1]}: " + "; ".join(e.describe() for e in events[:6]))
            if full and pid is not None and not any(e.scope == "pid" and e.pid == pid and lab == "full"
                                                    for e, lab in zip(events, labels)):
                raise Bad(f"{format_size(stride)}: the whole-PID flush is not of the process's PID {pid}")
            words.append(c)
        fix = median(c["tlbie_fixup"] for c in words)
        what = "whole PID" if full else f"{n} page{'s' * (n > 1)}"
        parts.append(f"{format_size(stride)} {what}" + (f" +{fix:g} fixup" if fix else ""))
    return ", ".join(parts) + (" (tlbiel)" if local else " (tlbie)")


def hash_rule(per_stride, bystanders, page_size):
    parts = []
    for stride, found in sorted(per_stride.items()):
        n = stride // page_size
        per_name = defaultdict(list)
        for events, ops in found:
            if events:
                raise Bad(f"hash: {len(events)} tlbie events in a {format_size(stride)} call "
                          f"(bystanders={bystanders}), expected none: {events[0].describe()}")
            named = {tlbie.hcall_name(op): k for op, k in ops.items()}
            removes = {k: v for k, v in named.items() if k in tlbie.HPTE_INVALIDATE}
            capacity = sum(tlbie.HPTE_INVALIDATE[k] * v for k, v in removes.items())
            if not (math.ceil(n / 4) <= sum(removes.values()) <= n and capacity >= n):
                raise Bad(f"hash: a {format_size(stride)} call ({n} pages, bystanders={bystanders}) made "
                          f"{named or 'no hypervisor calls'}; expected {n} page table entries removed")
            for k in tlbie.HPTE_INVALIDATE:
                per_name[k].append(removes.get(k, 0))
        parts.append(f"{format_size(stride)} " + " + ".join(
            f"{median(v):g} {k}" for k, v in per_name.items() if median(v)))
    return ", ".join(parts)


def guest(args, text):
    """The console's values and blocks once the guest booted, ran to the end, and is the one asked for."""
    if args.qemu_rc == 124 or args.qemu_rc == 137:
        raise Bad(f"timed out after {args.timeout} s; last console line: {last_line(text)!r}")
    values, blocks, errors = parse_console(text)
    if "guest" not in values:
        qemu = last_line(open(args.qemu_log).read()) if args.qemu_log and os.path.exists(args.qemu_log) else ""
        raise Bad(f"the kernel did not reach /init (qemu exit {args.qemu_rc}{': ' + qemu if qemu else ''}); "
                  f"last console line: {last_line(text)!r}")
    if "done" not in values:
        raise Bad(f"the guest stopped before the end; last console line: {last_line(text)!r}")
    if errors:
        raise Bad(f"atsd: {errors[0]}")
    if values.get("MMU") != args.mmu:
        raise Bad(f"/proc/cpuinfo says MMU {values.get('MMU')}, expected {args.mmu}")
    if args.cpu not in values.get("cpu", ""):
        raise Bad(f"/proc/cpuinfo says cpu {values.get('cpu')!r}, expected {args.cpu}")
    kernel_log = [b for b in blocks if b["name"] == "kernel-log"]
    if kernel_log and any(line.strip() for line in kernel_log[0]["lines"]):
        raise Bad(f"kernel log: {kernel_log[0]['lines'][0].strip()}")
    os.makedirs(args.out, exist_ok=True)
    return values, blocks


def untraced(block):
    """An atsd run without --tracepoints: one pass per stride of a traced run is not a timed run."""
    return "tracepoints" not in block["attrs"]


def verdict(args, text):
    values, blocks = guest(args, text)
    page_size = int(values["page_size"])
    outputs = [b for b in blocks if b["name"] == "atsd" and untraced(b)]
    if not outputs:
        raise Bad("no atsd output came back")
    checked = [check_output(b, args, page_size) for b in outputs]
    strides = checked[0][0]
    for b in (b for b in blocks if b["name"] == "table" and untraced(b)):  # atsd's own table, kept for reading
        with open(os.path.join(args.out, f"atsd-{b['attrs'].get('size')}-b{b['attrs'].get('bystanders')}.table"),
                  "w") as f:
            f.write("\n".join(line.replace("\r", "") for line in b["lines"]) + "\n")
    traces = [b for b in blocks if b["name"] == "trace"]
    if not traces:
        raise Bad("no trace came back")
    summary = []
    ceiling, local_ceiling = values.get("ceiling"), values.get("local_ceiling")
    for block in traces:
        lines = decode_trace(block)
        with open(os.path.join(args.out, f"trace-b{block['attrs']['bystanders']}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        bystanders = int(block["attrs"]["bystanders"])
        per_stride = defaultdict(list)
        for length, events, ops in tlbie.mprotect_calls(lines):
            per_stride[length].append((events, ops))
        if sorted(per_stride) != sorted(strides):
            raise Bad(f"trace bystanders={bystanders}: mprotect(PROT_NONE) calls of "
                      f"{[format_size(s) for s in sorted(per_stride)]}, expected {[format_size(s) for s in strides]}")
        who = "no bystander" if bystanders == 0 else f"{bystanders} bystander{'s' * (bystanders > 1)}"
        if args.mmu == "Radix":
            limit = int(local_ceiling if bystanders == 0 else ceiling)
            summary.append(f"{who}: {radix_rule(per_stride, bystanders, limit, page_size)}")
        else:
            summary.append(f"{who}: {hash_rule(per_stride, bystanders, page_size)}")
    counted = []
    for b, (_, r) in zip(outputs, checked):  # every run checked, the first size's shown
        line = atsd_counts(r, args, values, int(b["attrs"]["bystanders"]), page_size)
        if b["attrs"].get("size") == outputs[0]["attrs"].get("size"):
            counted.append(line)
    runs = ", ".join(f"{b['attrs']['size']}/b{b['attrs']['bystanders']}" for b in outputs)
    ceilings = f", ceiling {ceiling} (local {local_ceiling})" if args.mmu == "Radix" else ""
    head = (f"MMU {args.mmu}, {page_size >> 10}K pages{ceilings}; "
            f"imported {runs}, rate > 0 at {','.join(format_size(s) for s in strides)}")
    flushes = "; ".join(summary)
    own = ("atsd's counts tlbie/full PID per call, " if args.mmu == "Radix" else
           "atsd's counts H_REMOVE+H_BULK_REMOVE per call, ") + "; ".join(counted)
    if args.mmu == "Radix":
        return f"{head}; {own}; traced flushes per call, {flushes}"
    return f"{head}; {own}; no tlbie (the hypervisor invalidates), traced hcalls per call, {flushes}"


def cli_block(blocks, name):
    found = [b for b in blocks if b["name"] == f"cli-{name}"]
    if not found or found[0]["end"] is None:
        raise Bad(f"atsdbench {name} did not finish")
    b = found[0]
    if b["end"].get("rc") != "0":
        last = last_line("\n".join(b["lines"]))
        raise Bad(f"atsdbench {name} exited {b['end'].get('rc')}: {last}")
    if not any(line.strip() for line in b["lines"]):
        raise Bad(f"atsdbench {name} printed nothing")
    return [line.replace("\r", "") for line in b["lines"]]


def python_verdict(args, text):
    """The Python CLI in the radix guest (guest's --command, whose output marks each CLI command's): info's
    facts, run's result files (back on the host from its /out) and their flush columns, show and compare."""
    values, blocks = guest(args, text)
    command = [b for b in blocks if b["name"] == "command"]
    if not command:
        raise Bad("the command did not finish")
    blocks = blocks + parse_console("\n".join(command[0]["lines"]))[1]
    ceiling = values.get("ceiling")
    facts = {k.strip(): v.strip() for k, _, v in (line.partition(": ") for line in cli_block(blocks, "info"))}
    want = {"MMU": args.mmu, "base page size": format_size(int(values["page_size"])),
            "TLB single-page flush ceiling": ceiling, "TLB local single-page flush ceiling": values.get("local_ceiling"),
            "powerpc:tlbie tracepoint": "readable (flushes counted from it)"}
    for key, value in want.items():
        if facts.get(key) != value:
            raise Bad(f"atsdbench info says {key}: {facts.get(key, 'nothing')}, the guest has {value}")
    flushes = []
    files = {int(m.group(1)): b for b in blocks if b["name"] == "file"
             for m in [re.fullmatch(r"run-b([0-9]+)\.json", b["attrs"].get("path", ""))] if m}
    for bystanders, b in sorted(files.items()):  # in the guest's /out order otherwise
        cli_block(blocks, f"run-b{bystanders}")
        path = os.path.join(args.out, f"run-b{bystanders}.json")
        data = unpack(b) if b["end"] is not None else None
        if data is None:
            raise Bad(f"the result of run --bystanders {bystanders} came back damaged")
        with open(path, "wb") as f:
            f.write(data)
        r = atsdbench.load(path)
        if not r.complete:
            raise Bad(f"run --bystanders {bystanders}: the result is not complete")
        host = r.host
        if (host["mmu"], host["page_size"]) != (args.mmu, int(values["page_size"])):
            raise Bad(f"run --bystanders {bystanders}: host MMU {host['mmu']}, page size {host['page_size']}")
        if str(host.get("tlb_single_page_flush_ceiling")) != ceiling:
            raise Bad(f"run --bystanders {bystanders}: the result's flush ceiling is "
                      f"{host.get('tlb_single_page_flush_ceiling')}, debugfs has {ceiling}")
        m = r.measured
        for stride in r.config["strides"]:
            if not (m[m["stride_bytes"] == stride]["gbps"] > 0).all():
                raise Bad(f"run --bystanders {bystanders}: no positive rate at {format_size(stride)}")
        limit = int(values["local_ceiling"] if bystanders == 0 else ceiling)
        flushes.append(flush_columns(r, bystanders, limit, int(values["page_size"])))
    if not flushes:
        raise Bad("no result file came back")
    if not any("full PID/call" in line for line in cli_block(blocks, "show")):
        raise Bad("atsdbench show printed no per-call tlbie columns")
    cli_block(blocks, "compare")
    return (f"info: MMU {args.mmu}, {format_size(int(values['page_size']))} pages, ceiling {ceiling}; "
            f"run results back and complete, rate > 0 per stride; tlbie/full/fixup per call, "
            f"{'; '.join(flushes)}; show and compare ran")


def flush_columns(r, bystanders, ceiling, page_size, tag=None):
    """Flush counts in a result must be the kernel's: no `flushes` column (tlb:tlb_flush never fires on
    POWER), and the tlbie columns of the traced passes following the rule.  Per stride, the median
    traced pass: the kernel also flushes the whole PID now and then on its own (radix trims a process's
    CPU mask every thousand or so flushes, with a tlbiel walk on the other CPU), which adds a fraction
    of a flush per call to one pass (TRIM_EVERY)."""
    s = r.samples
    tag = tag or f"run --bystanders {bystanders}"
    fixups = "tlbie_fixup" in s  # atsd does not count them (no kernel filter tells a repeat apart)
    if "flushes" in s and not s["flushes"].isna().all() and (s["flushes"].fillna(0) == 0).all():
        raise Bad(f"{tag}: the flushes column reads 0 on every pass, but the kernel flushed "
                  f"(tlbie per page on radix): absent must mean not measured")
    if "flushes" in s and s["flushes"].notna().any():
        raise Bad(f"{tag}: a flushes column on POWER, where tlb:tlb_flush never fires")
    if "tlbie_full" not in s or s["tlbie_full"].isna().all():
        raise Bad(f"{tag}: no tlbie columns: the run did not count flushes ({r.config.get('trace_error')})")
    parts = []
    for stride, rows in s[s["tlbie_full"].notna()].groupby("stride_bytes"):
        per_call = {c: median(rows[c] / rows["calls"]) for c in ("tlbie", "tlbie_global", "tlbie_full", "tlbie_fixup")
                    if c in rows}
        n = stride // page_size
        want = 1 if n > ceiling else 0
        at = f"at {format_size(stride)} ({n} pages, ceiling {ceiling})"
        calls = int(rows["calls"].iloc[0])
        trims = 1 + calls // TRIM_EVERY  # whole-PID flushes the kernel may add to a pass of these calls
        if not want <= per_call["tlbie_full"] <= want + trims / calls:
            raise Bad(f"{tag}: tlbie_full {per_call['tlbie_full']:g} per call {at}, the kernel's rule says {want}")
        if not want and per_call["tlbie"] < n:
            raise Bad(f"{tag}: {per_call['tlbie']:g} tlbie per call {at}, fewer than one per page")
        if want and bystanders and per_call["tlbie_global"] >= n:
            raise Bad(f"{tag}: {per_call['tlbie_global']:g} tlbie per call {at}, the whole PID should be one")
        if bool(bystanders) != (per_call["tlbie_global"] > 0):
            raise Bad(f"{tag}: tlbie_global {per_call['tlbie_global']:g} per call {at}")
        if fixups and bool(bystanders) != (per_call["tlbie_fixup"] > 0):  # POWER9's workarounds follow a tlbie
            raise Bad(f"{tag}: tlbie_fixup {per_call['tlbie_fixup']:g} per call {at}")
        parts.append(f"{format_size(stride)} " + "/".join(f"{per_call[c]:.3g}" for c in ("tlbie", "tlbie_full",
                                                                                              "tlbie_fixup") if c in per_call))
    return f"b{bystanders} (ceiling {ceiling}): " + ", ".join(parts)


def result_verdict(args):
    """Result files from `atsdbench guest` (one run with bystanders 0,1 as cells, or one run per bystander
    count): complete, emulated, the MMU and CPU booted, 64K pages, a positive rate per stride, and atsd's
    counts per bystander count against the flush rule (the ceilings are the guest's debugfs, recorded in
    the result)."""
    from types import SimpleNamespace

    import pandas as pd

    cells, loaded = {}, []
    for path in args.result:
        try:
            r = atsdbench.load(path)
        except (OSError, ValueError) as e:
            raise Bad(f"no result from atsdbench guest: {e}") from None
        loaded.append(r)
        h = r.host
        if not r.complete:
            raise Bad("atsdbench guest's result is not complete")
        if h.get("virtualized") != "qemu-tcg":
            raise Bad(f"host.virtualized is {h.get('virtualized')!r}, expected qemu-tcg")
        if h.get("mmu") != args.mmu or args.cpu not in h.get("cpu_model", ""):
            raise Bad(f"the guest booted MMU {h.get('mmu')}, CPU {h.get('cpu_model')!r}; expected {args.mmu}, "
                      f"{args.cpu}")
        if h["page_size"] != 65536:
            raise Bad(f"page size {h['page_size']}, expected 65536")
        s = r.samples
        m = r.measured
        for stride in r.config["strides"]:
            if not (m[m["stride_bytes"] == stride]["gbps"] > 0).all():
                raise Bad(f"no positive rate at stride {format_size(stride)}")
        for b in sorted(int(x) for x in s["bystanders"].unique()) if "bystanders" in s else [r.config["bystanders"]]:
            cells.setdefault(b, []).append((r, s[s["bystanders"] == b] if "bystanders" in s else s))
    first = loaded[0]
    parts = []
    for b, found in sorted(cells.items()):
        r = found[0][0]
        cell = SimpleNamespace(samples=pd.concat([f[1] for f in found], ignore_index=True), config=r.config)
        h, page_size = r.host, r.host["page_size"]
        tag = f"guest bystanders={b}"
        if args.mmu == "Radix":
            limit = h.get("tlb_local_single_page_flush_ceiling" if b == 0 else "tlb_single_page_flush_ceiling")
            if not isinstance(limit, int):
                raise Bad("the result has no flush ceilings (debugfs in the guest)")
            parts.append(flush_columns(cell, b, limit, page_size, tag=tag))
        else:
            parts.append(hash_columns(cell, b, page_size, tag=tag))
    return (f"atsdbench guest: {first.host['kernel_release']} MMU {args.mmu}, 64K pages, rate > 0 at "
            f"{','.join(format_size(x) for x in first.config['strides'])}; "
            + ("tlbie/full PID per call, " if args.mmu == "Radix" else "H_REMOVE+H_BULK_REMOVE per call, ")
            + "; ".join(parts))


def last_line(text):
    lines = [line.strip() for line in text.replace("\r", "").split("\n") if line.strip()]
    return lines[-1][:120] if lines else ""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", nargs="?", default="", help="the console log (not with --result)")
    p.add_argument("--guest", required=True)
    p.add_argument("--mmu", required=True, choices=("Radix", "Hash"))
    p.add_argument("--cpu", required=True)
    p.add_argument("--timeout", type=int, default=0)
    p.add_argument("--qemu-rc", type=int, default=0)
    p.add_argument("--qemu-log")
    p.add_argument("--out", required=True)
    p.add_argument("--python", action="store_true", help="the guest ran the Python CLI (power-check's --command)")
    p.add_argument("--result", action="append", help="check result files of `atsdbench guest` instead of a console "
                   "(repeat: one run per bystander count)")
    args = p.parse_args()
    if args.result:
        try:
            print(f"{args.guest} ok: {result_verdict(args)}")
        except Bad as e:
            print(f"{args.guest} FAILED: {e}")
            return 1
        return 0
    try:
        with open(args.log, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    try:
        print(f"{args.guest} ok: {(python_verdict if args.python else verdict)(args, text)}")
    except Bad as e:
        print(f"{args.guest} FAILED: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
