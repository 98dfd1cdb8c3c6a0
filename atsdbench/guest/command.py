"""`atsdbench guest`: boot each kernel image under qemu, run the static atsd (its runs) or a command
inside, and bring home what it made (docs/guest.md)."""
import os
import re
import sys

from ..errors import EXIT_STALE, UsageError


def cmd_guest(args):
    from ..measure import core
    from . import boot, home, image, initramfs, options, qemu

    if not args.kernel:
        raise UsageError("guest needs --kernel IMAGE (one per kernel to boot)")
    for module in args.module:
        initramfs.check_module(module)
    machines = [image.choose_machine(image.detect_image(k)[0], args.machine, k) for k in args.kernel]
    runs, waits = options.check_runs(options.split_runs(args.run_options), args.guest_command, core.options())
    args.timeout = options.guest_timeout(args.timeout, waits)
    if not re.fullmatch(r"[1-9][0-9]*[KMGT]?", args.mem or "") or args.smp < 1:
        raise UsageError(f"--mem must be a size such as 2G and --smp at least 1 (got {args.mem!r}, {args.smp})")
    if args.smp < 2 and any(run["verify"] for run in runs):  # the guest's atsd would refuse it after the boot
        raise UsageError("--verify in a guest checks each call from another vCPU: give --smp 2 or more "
                         f"(got {args.smp})")
    trace_kb = core.parse_size(args.trace_buffer, "--trace-buffer") // 1024
    if trace_kb < 4:
        raise UsageError("--trace-buffer must be a size of at least 4K per CPU, such as 8M (got "
                         f"{args.trace_buffer!r})")
    for archive in args.initrd:
        initramfs.check_archive(archive)
    _check_accel(args, machines)
    traced = sum(1 for run in runs if run["tracepoints"])
    need = home.expected_bytes(len(runs), traced, trace_kb, args.smp) + sum(run["breakdown"] for run in runs)
    home.check_output_dir(args.output, len(args.kernel) * need)
    missing = initramfs.missing_tools(machines)
    if missing:
        raise qemu.Missing(f"guest needs {' '.join(missing)} (apt-get install {' '.join(missing)})")
    problem = qemu.kvm_problem() if args.accel == "kvm" else None
    if problem:
        raise UsageError(f"--accel kvm: {problem}")
    bases = {a: initramfs.initramfs(a) for a in {qemu.MACHINES[m]["arch"] for m in machines}}
    try:
        os.makedirs(args.output, exist_ok=True)
    except OSError as e:
        raise UsageError(f"-o {args.output}: cannot make the directory: {e.strerror}") from None
    if args.boots is not None:
        return boot.boots(args, machines, runs, bases, trace_kb)
    failed, taken, stale = 0, set(), []

    def show(result, name):
        """A saved run's breakdown table, and a --verify that read a stale translation: as loud as on the
        host, the file named."""
        from ..commands import print_stale
        from ..render import breakdown

        if result.config.get("breakdown"):  # atsd --breakdown's traces, cut into stages by the import
            print(breakdown.table(result.config["breakdown"], config=result.config, host=result.host))
        if result.stale():
            print_stale(result.stale(), sys.stderr, name)
            stale.append(name)

    for kernel, machine in zip(args.kernel, machines):
        booted = boot.boot_one(args, kernel, machine, bases, runs, trace_kb)
        if booted is None:
            failed += 1
            continue
        failed += home.bring_home(args, kernel, machine, booted[0], booted[1], runs, taken, show)
    if stale:
        return EXIT_STALE
    return 1 if failed else 0


def cmd_atsd(args):
    """`atsdbench atsd`: the static atsd for --arch (default this machine's), for a system without Python:
    built from the package's sources once per source version into the cache guest uses, copied to -o."""
    from ..data import files
    from . import initramfs, qemu

    arch = args.arch or qemu.host_arch()
    files.claim(args.output, replace=args.force)
    try:
        with open(initramfs.static_atsd(arch), "rb") as f:
            program = f.read()
        files.write_atomically(args.output, lambda f: f.write(program), binary=True)
        os.chmod(args.output, 0o755)
    finally:
        files.release(args.output)
    print(f"wrote {args.output} (atsd for {arch}, static: copy it onto the system and run it there; "
          "atsd --help, docs/atsd.md)")
    return 0


def _check_accel(args, machines):
    """--accel: tcg anywhere; kvm only for guests of this machine's own arch."""
    from . import qemu

    if args.accel not in ("tcg", "kvm"):
        raise UsageError(f"--accel must be tcg or kvm (got {args.accel!r})")
    if args.accel != "kvm":
        return
    for kernel, machine in zip(args.kernel, machines):
        arch = qemu.MACHINES[machine]["arch"]
        if arch != qemu.host_arch():
            raise UsageError(f"--accel kvm runs guests of this machine's own arch ({qemu.host_arch()}): "
                             f"{kernel} is {arch}")
