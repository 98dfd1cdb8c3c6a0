"""Booting: one image under qemu with the runs' initramfs (its console read back), and guest --boots,
fresh qemu boots of two or more kernels alternating into a campaign directory."""
import os
import sys
import tempfile

from .._cli import wrote
from ..errors import UsageError
from . import console, initramfs, qemu


def boot_one(args, image, machine, bases, runs, trace_kb):
    """One boot of one image under qemu: (console text, (qemu's exit, seconds, messages)), or None where
    it could not start (said on stderr)."""
    arch = qemu.MACHINES[machine]["arch"]
    label = f"{os.path.basename(image)} ({machine})"
    try:
        with tempfile.TemporaryDirectory(prefix="atsdbench-guest-") as tmp:
            log = os.path.join(tmp, "console.log")
            initrd = initramfs.run_initramfs(bases[arch], runs, tmp, command=args.guest_command,
                                                   trace_buffer_kb=trace_kb, archives=args.initrd,
                                                   modules=args.module)
            cmd = qemu.qemu_command(machine, image, initrd, log, smp=args.smp, mem=args.mem,
                                          append=args.append, accel=args.accel)
            rc, seconds, qemu_said = qemu.boot(cmd, log, args.timeout, qemu.tty_progress(label))
            if sys.stderr.isatty():
                sys.stderr.write("\n")
            try:
                with open(log, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except FileNotFoundError:  # qemu stopped before it opened the console
                text = ""
    except OSError as e:  # a full or unwritable temporary directory: this kernel only, the next boots
        where = f" ({e.filename})" if e.filename else ""
        print(f"atsdbench: guest {label}: could not boot: {e.strerror or e}{where}", file=sys.stderr)
        return None
    return text, (rc, seconds, qemu_said)


def boots(args, machines, runs, bases, trace_kb):
    """guest --boots N: fresh qemu boots of the kernels alternating (A,B,A,B,...), N each, every boot's
    result file in a campaign directory (-o DIR: DIR/NAME/BOOT_ID.json, the journal; docs/lab.md), so
    `compare DIR` reads them as the replicate design.  Host-driven: no kexec, each boot is a new qemu."""
    import json
    import time

    from ..campaign import plan as plans, step as steps
    from ..data import atsd_output as importer, campaign as store, files, results
    from .home import keep

    if len(args.kernel) < 2:
        raise UsageError("guest --boots alternates two or more kernels: give --kernel A --kernel B")
    if len(runs) != 1 or args.guest_command is not None or runs[0]["tracepoints"]:
        raise UsageError("guest --boots: one result file per boot, one run (no --command, --tracepoints, second --)")
    if args.boots < 1 or args.boots > 1000:
        raise UsageError(f"--boots must be 1 to 1000 (got {args.boots})")
    directory = args.output
    if store.is_campaign(directory) or os.listdir(directory):
        raise UsageError(f"guest --boots: -o {directory} is not empty (a campaign gets a directory of its own)")
    kernels, machine_of = [], {}
    for image, machine in zip(args.kernel, machines):
        release, version = plans.image_identity(image)
        name = release or os.path.splitext(os.path.basename(image))[0]
        name = name if store.NAME.fullmatch(name) else "kernel"
        while name in [k["name"] for k in kernels]:
            name += "-2"
        kernels.append({"name": name, "image": os.path.abspath(image), "initrd": None, "append": args.append or None,
                        "release": release or name, "version": version})
        machine_of[name] = machine
    plan = {"format": store.FORMAT, "version": store.VERSION, "created": time.time(), "kernels": kernels,
            "boots": args.boots, "schedule": "alternate", "method": "qemu", "run_options": runs[0]["words"]}
    store.check_plan(plan, store.plan_path(directory))
    body = json.dumps(plan, indent=1) + "\n"
    files.write_atomically(store.plan_path(directory), lambda f: f.write(body))
    accel = qemu.accel_name(args.accel)
    failed = 0
    with steps.Lock(directory):
        for name in plans.planned_order(plan):
            k, machine = next(x for x in kernels if x["name"] == name), machine_of[name]
            booted = boot_one(args, k["image"], machine, bases, runs, trace_kb)
            why = None
            if booted is not None:
                text, (rc, seconds, qemu_said) = booted
                try:
                    console.reached_init(text, rc, args.timeout, qemu_said)
                    got = console.run_output(text, 1, rc, args.timeout)
                    result = importer.to_result(got["output"], f"{k['image']}'s atsd output")
                except UsageError as e:
                    why = str(e)
            else:
                why = "qemu could not start"
            if why is not None:
                store.append_event(directory, {"event": "missed", "expected": name, "booted": None, "boot_id": "-",
                                               "why": why, "time": time.time()})
                print(f"atsdbench: guest {name}: {why.splitlines()[0]} (a missed boot)", file=sys.stderr)
                failed += 1
                continue
            result.host.update({"virtualized": accel, "qemu_machine": machine, "kernel_image": k["image"]})
            boot_id = result.host.get("boot_id") or f"boot-{len(store.load(directory).done) + 1}"
            path = store.free_result_path(directory, name, boot_id)
            try:
                results.save_or_rescue(result, path)
            except UsageError as e:
                print(f"atsdbench: guest {name}: {e}", file=sys.stderr)
                failed += 1
                continue
            keep(path[:-5] + ".console", text)
            store.append_event(directory, {"event": "done", "kernel": name, "boot_id": boot_id,
                                           "file": os.path.relpath(path, directory), "time": time.time(),
                                           "sha256": store.file_digest(path)})
            print(wrote(path, f" ({k['release']}, {machine}, {accel}, {seconds:.0f} s)"))
    n = len(store.load(directory).done)
    print(f"campaign {directory}: {n} boot{'s' * (n != 1)}; atsdbench compare {directory}")
    return 1 if failed else 0
