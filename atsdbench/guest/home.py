"""What a guest brings home, under -o DIR: the directory checked before anything boots, each guest's
files under a stem no earlier guest took (nothing is overwritten), the result files, traces, the
command's output and files, and the console; every finished run kept whatever came after it."""
import os
import re
import sys

from .._cli import warn, wrapped, wrote
from ..data import files
from ..errors import UsageError
from . import console as console_log
from .qemu import DEFAULT_MACHINE, MACHINES, accel_name


def result_name(release, machine, arch):
    """KERNEL-RELEASE.json, with -MACHINE where the machine is not the arch's default."""
    safe = "".join(c if c.isalnum() or c in "._+-" else "_" for c in release) or "unknown"
    return f"{safe}.json" if DEFAULT_MACHINE[arch] == machine else f"{safe}-{machine}.json"


def _family(stem):
    """The names of one guest's files under its stem: NAME.json, NAME-runK.json and .trace, NAME.console,
    NAME.out, NAME/ (the command's files)."""
    s = re.escape(stem)
    return re.compile(rf"{s}(-run[0-9]+)?\.(json|trace)|{s}(\.console|\.out)?")


def claim(folder, name, taken, suffix=".console"):
    """The path stem, under folder, for one guest's files, overwriting nothing: NAME, else NAME-2,
    NAME-3, ...: the first that no file there has (NAME.json, NAME-runK.json, NAME.console, ...) and
    that this invocation has not `taken`.  NAME+suffix is created empty at once (O_EXCL), so another
    guest writing into the same folder at the same time takes the next one."""
    try:
        names = os.listdir(folder)
    except OSError:  # the folder went bad since the check: the writes will say so, and rescue
        names = []
    k = 1
    while True:
        stem = name if k == 1 else f"{name}-{k}"
        k += 1
        family = _family(stem) if suffix == ".console" else re.compile(re.escape(stem + suffix))
        if stem in taken or any(family.fullmatch(n) for n in names):
            continue
        try:
            os.close(os.open(os.path.join(folder, stem + suffix), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        except OSError:
            pass  # unwritable now: the writes name the path and rescue
        taken.add(stem)
        return os.path.join(folder, stem)


GUEST_BYTES = 1 << 20  # one boot's console and a command's output, with room (tens of KB as docs/guest.md's)
RUN_BYTES = 1 << 20  # one run's result file and its part of the console, with room (the same)
TRACE_COPIES = 4  # a traced run's events as text: its trace file, the console's gzip+base64 copy, room


def expected_bytes(runs, traced, trace_kb, smp):
    """About what one guest's files under -o take: its console, its runs' result files, and for each
    traced run what a full trace buffer on every CPU holds."""
    return GUEST_BYTES + runs * RUN_BYTES + traced * TRACE_COPIES * trace_kb * 1024 * smp


def check_output_dir(path, need):
    """-o DIR, before anything boots: a directory, or one that can be made, that this process can write
    in, with about `need` bytes free on its file system.  UsageError naming what is wrong otherwise."""
    import errno
    import stat

    if not path:
        raise UsageError("-o needs a directory (got an empty name)")
    probe = os.path.abspath(path)
    while True:
        try:
            st = os.stat(probe)
            break
        except FileNotFoundError:
            if os.path.lexists(probe):
                raise UsageError(f"-o {path}: {probe} is a symbolic link to nothing") from None
            probe = os.path.dirname(probe)
        except OSError as e:  # a file where a directory should be, a loop of links, no permission
            raise UsageError(f"-o {path}: {e.strerror}") from None
    made = probe != os.path.abspath(path)  # DIR is to be made in probe
    if not stat.S_ISDIR(st.st_mode):
        kind = next((name for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISFIFO, "a FIFO"),
                                             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                                             (stat.S_ISSOCK, "a socket")) if test(st.st_mode)), "not a directory")
        raise UsageError(f"-o {path}{(': ' + probe if made else '')} is {kind}, not a directory")
    try:
        fs = os.statvfs(probe)
    except OSError as e:
        raise UsageError(f"-o {path}: {e.strerror}") from None
    if not os.access(probe, os.W_OK | os.X_OK):
        denied = os.strerror(errno.EROFS if fs.f_flag & os.ST_RDONLY else errno.EACCES)
        raise UsageError(f"-o {path}: cannot make it in {probe}: {denied}" if made else
                         f"-o {path}: cannot write in it: {denied}")
    free = fs.f_bavail * fs.f_frsize
    if free < need:
        raise UsageError(f"-o {path}: {free / 2 ** 20:.1f} MiB free, guests need about {need / 2 ** 20:.0f} MiB")


def keep(path, data):
    """One of guest's files written through the atomic writer: None, or why it was not (naming it)."""
    try:
        files.write_atomically(path, lambda f: f.write(data), binary=isinstance(data, bytes))
        return None
    except (OSError, UsageError) as e:
        return f"cannot write {path}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)


def keep_console(path, text):
    """The console written to `path` (the stem's placeholder), else to a rescue file, else nowhere:
    (where it is or None, the line saying why it is not at `path` or None)."""
    why = keep(path, text)
    if why is None:
        return path, None
    try:
        os.unlink(path)  # the empty placeholder that claimed the name
    except OSError:
        pass
    rescue = files.write_rescue(text, suffix=".console")
    if rescue:
        return rescue, f"{why}; the console was saved to {rescue} instead"
    return None, (f"{why}; no rescue file could be written either: the console is lost (the result files "
                  "hold atsd's output)")


def bring_home(args, image, machine, text, qemu, runs, taken, show):
    """What one boot brought home, written under -o: each run's result file (and trace), the command's
    output and files, the console; all under a stem no earlier guest used (nothing is overwritten).
    Every finished run is kept whatever came after it, rescued where it cannot be written, and a
    failed write is reported and the rest go on.  show(result, name): the caller's report of a saved
    run (its breakdown table, its stale lines).  Returns how many things failed (each said on stderr)."""
    from ..data import atsd_output as importer, results

    rc, seconds, qemu_said = qemu
    arch = MACHINES[machine]["arch"]
    label = f"{os.path.basename(image)} ({machine})"
    accel = accel_name(args.accel)

    def fail(why, console):
        shown = f"the whole console: {console}" if console else "no console kept"
        print(f"atsdbench: guest {label}: {why}\n({shown})", file=sys.stderr)

    try:
        values = console_log.reached_init(text, rc, args.timeout, qemu_said)
    except UsageError as e:
        kept = claim(args.output, f"{os.path.basename(image)}-{machine}", taken, ".failed.console")
        kept, why = keep_console(kept + ".failed.console", text)
        if why:
            print(f"atsdbench: guest {label}: {why}", file=sys.stderr)
        fail(e if args.accel != "kvm" else f"{e} (under KVM: try without --accel)", kept)
        return 1
    if values.get("module-failed"):  # the runs go on: one that needs the module says so itself
        print(f"atsdbench: guest {label}: insmod {values['module-failed']}", file=sys.stderr)
    release = values.get("release") or "unknown"
    stem = claim(args.output, result_name(release, machine, arch)[:-5], taken)
    console, why = keep_console(stem + ".console", text)  # the evidence: kernel messages, atsd's own tables
    failed = 0
    if why:
        print(f"atsdbench: guest {label}: {why}", file=sys.stderr)
        failed += 1
    held = f" (the console holds it: {console})" if console else ""
    for k, run in enumerate(runs, 1):
        name = stem + (f"-run{k}" if len(runs) > 1 else "")
        which = f"run {k}: " if len(runs) > 1 else ""
        try:
            got = console_log.run_output(text, k, rc, args.timeout)
            result = importer.to_result(got["output"], f"{image}'s atsd output")
        except UsageError as e:
            fail(f"{which}{e}", console)
            failed += 1
            continue
        result.host.update({"virtualized": accel, "qemu_machine": machine, "kernel_image": os.path.abspath(image)})
        for key, field in (("ceiling", "tlb_single_page_flush_ceiling"),
                           ("local_ceiling", "tlb_local_single_page_flush_ceiling")):
            if values.get(key, "").isdigit():  # debugfs in the guest
                result.host[field] = int(values[key])
        if values.get("MMU") and result.host.get("mmu") in (None, "unknown"):
            result.host["mmu"] = values["MMU"]
        if values.get("modules"):
            result.host["guest_modules"] = [re.sub(r"^[0-9]+-", "", m) for m in values["modules"].split(",")]
        try:
            results.save_or_rescue(result, name + ".json")
            saved = True
        except UsageError as e:  # rescued (or on stdout): said, and the next run and kernel go on
            print(f"atsdbench: guest {label}: {which}{e}", file=sys.stderr)
            failed += 1
            saved = False
        trace = got["trace"]
        trace_written = False
        if trace is not None and trace["text"] is None:
            fail(f"{which}the trace came back damaged (the result file is whole)", console)
            failed += 1
        elif trace is not None:
            why = keep(name + ".trace", trace["text"])
            if why:
                print(f"atsdbench: guest {label}: {which}{why}{held}", file=sys.stderr)
                failed += 1
            trace_written = why is None
            absent = [e for e in run["tracepoints"] if e not in trace["events"]]
            if absent:
                warn(f"guest {label}: {which}{', '.join(absent)}: no such tracepoint (not traced)")
            if trace["lost"]:
                warn(f"guest {label}: {which}trace lost {trace['lost']} events (grow --trace-buffer)")
        done = f"run {k} of {len(runs)}" if len(runs) > 1 else f"{seconds:.0f} s"
        if saved:
            its_trace = f", its trace {name}.trace" if trace_written else ""
            print(wrote(f"{name}.json", f" ({release}, {machine}, {accel}, {done}){its_trace}"))
        show(result, f"{name}.json")
    if args.guest_command is not None:
        try:
            code, output, made, left = console_log.command_output(text, rc, args.timeout)
        except UsageError as e:
            fail(e, console)
            failed += 1
        else:
            out_why = keep(stem + ".out", output)
            problems, brought = [out_why] if out_why else [], 0
            for path, data in made.items():
                target = os.path.join(stem, path)
                try:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                except OSError as e:
                    problems.append(f"cannot make {os.path.dirname(target)}: {e.strerror}")
                    continue
                why = keep(target, data)
                problems += [why] if why else []
                brought += why is None
            for why in problems:
                print(f"atsdbench: guest {label}: {why}{held}", file=sys.stderr)
            failed += len(problems)
            if left:
                warn(f"guest {label}: not brought home from /out: {', '.join(left)}")
            files_line = f"{brought} file{'s' * (brought != 1)} it left in /out under {stem}/" if brought else ""
            if out_why is None:
                and_files = f" and {files_line}" if brought else ""
                print(wrote(f"{stem}.out", f" (the command's output, exit {code}){and_files}"))
            elif brought:
                print(wrapped(f"wrote {files_line}"))
            if code:
                fail(f"the command exited {code} (its output: {stem}.out)", console)
                failed += 1
    kernel_log = [line.strip() for b in console_log.parse_console(text)[1] if b["name"] == "kernel-log"
                  for line in b["lines"] if line.strip()]
    if kernel_log:
        warn(f"guest {label}: the kernel logged {kernel_log[0]!r} (the console has it all)")
    if (len(runs) > 1 or args.guest_command is not None) and console == stem + ".console":
        print(wrote(console, f" ({release}, {machine}, {accel}, {seconds:.0f} s)"))
    return failed
