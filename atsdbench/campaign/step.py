"""One boot's work in a campaign (`atsdbench campaign step DIR`): under the step lock, find which
planned kernel is running, refuse a boot already used, run the plan's run into DIR/NAME/BOOT_ID.json,
journal what happened, pick the next kernel and arrange the next boot.

Every event is written to the journal before the next thing is done (data/campaign.py), and nothing
already written is ever replaced: a crash or power cut mid-run leaves a `start` with no end, which
the next step closes as `unfinished` (its file kept where there is one) before redoing the slot.
The identity of the running system comes from `proc` (boot_id, osrelease, version), so the tests
give a fake /proc."""
import fcntl
import os
import subprocess
import sys
import time

from .. import signals
from ..data import campaign as store, files
from ..errors import UsageError
from .._cli import warn
from . import plan as plans

LOCK = ".step.lock"


def read_identity(proc="/proc"):
    """(boot_id, release, version) of the running system."""
    def read(rel):
        try:
            with open(os.path.join(proc, rel), encoding="utf-8", errors="replace") as f:
                return f.read().strip()
        except OSError as e:
            raise UsageError(f"campaign step: cannot read {os.path.join(proc, rel)}: {e.strerror}") from None
    return read("sys/kernel/random/boot_id"), read("sys/kernel/osrelease"), read("sys/kernel/version")


RECORD = 64  # the lock file's record: "PID\n", or "PID ERRNO START\n" where a step's last event failed


def last_word(raw):
    """(errno, start seq) where the step before noted that it could not journal a slot's end, else None."""
    words = raw.decode("ascii", "replace").split()
    if len(words) == 3 and all(w.isdigit() for w in words):
        return int(words[1]), int(words[2])
    return None


class Lock:
    """An flock on DIR/.step.lock held for the whole step: a second step (two units, a user and the unit)
    refuses at once instead of both running into one slot."""

    held = ()  # the fd of the lock this process holds, which its run inherits (supervise)

    def __init__(self, directory):
        self.path = os.path.join(directory, LOCK)
        self.fd = None

    def __enter__(self):
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise UsageError(f"campaign {os.path.dirname(self.path)}: cannot lock it: {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = (os.read(fd, 32).decode("ascii", "replace").split() or [""])[0]
            os.close(fd)
            pid = f" (pid {holder})" if holder.isdigit() else ""
            raise UsageError(f"campaign {os.path.dirname(self.path)}: another step is running{pid}: "
                             "not running a second") from None
        try:
            self.last_word = last_word(os.pread(fd, RECORD, 0))
            # a fixed width written in place (never truncated), so the note (below) goes where the file
            # already has its space
            os.pwrite(fd, f"{os.getpid()}\n".ljust(RECORD).encode(), 0)
        except OSError:
            self.last_word = None
        self.fd = fd
        Lock.held = (fd,)
        return self

    def note(self, errno_, start):
        """Say, for the next step, that the close of the slot started at `start` could not be journaled
        (errno_): written over the lock file's own record, so it needs no space a full disk lacks."""
        if self.fd is None:
            return
        try:
            os.pwrite(self.fd, f"{os.getpid()} {int(errno_)} {int(start)}\n".ljust(RECORD).encode(), 0)
            os.fsync(self.fd)
        except (OSError, ValueError, TypeError):
            pass

    def __exit__(self, *exc):
        fd, self.fd = self.fd, None
        Lock.held = ()
        if fd is not None:
            os.close(fd)


def _die_with_step(step_pid):
    """In the child, before exec: SIGTERM when the step dies (even by SIGKILL), so no run outlives its
    step and writes into a slot the journal has closed; SIGTERM, not SIGKILL, so it saves what it
    measured first.  A step already gone before this ran is the same case.  prctl is looked up here,
    in the step, not after the fork; a Python without ctypes (a minimal guest's) cannot ask for it."""
    import signal

    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        prctl = None

    def arm():
        # the step's handlers only record a signal (held): in the child, before exec, they would swallow
        # the death signal, so the default action is put back first
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_DFL)
        if prctl is not None:
            prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != step_pid:
            os._exit(143)  # the step is gone already: no run
    return arm


def supervise(argv):
    """Run argv as the step's child, in the step's process group, dying with the step (_die_with_step);
    a SIGINT or SIGTERM the step gets while it runs (held, so the step is not cut off) is passed on to
    the child once, which stops and saves as on a Ctrl-C.  Returns the child's exit status."""
    # the step lock goes to the child too: a step killed while its run still saves holds off the next
    # step until the run is gone
    proc = subprocess.Popen(argv, preexec_fn=_die_with_step(os.getpid()), pass_fds=Lock.held)
    passed = set()
    while True:
        try:
            return proc.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            for signum in signals.pending_signals():
                if signum not in passed:
                    passed.add(signum)
                    proc.send_signal(signum)


def run_subprocess(words, output):
    """The real runner: `atsdbench run WORDS -o OUTPUT` in a child process (its Ctrl-C saves what it
    measured, as any run does).  Returns its exit status."""
    return supervise([sys.executable, "-m", "atsdbench", "run", *words, "-o", output])


def run_atsd(words, output, atsd=None):
    """The minimal systems' runner (a plan of `--runner atsd`): the standalone atsd (C only: on PATH, else
    built from the package's sources)
    writes its output to BOOT_ID.atsd.txt beside the result (kept: atsd's own record, whatever follows),
    its table on stdout, and the output is imported as the result file (no numpy or pandas needed).
    Returns atsd's exit status (2 where its output did not import)."""
    import shutil

    from ..data import atsd_output as importer, results

    atsd = atsd or shutil.which("atsd")
    if atsd is None:  # the package carries atsd's sources: this machine's static atsd, built once (cached)
        from ..guest import initramfs, qemu

        atsd = initramfs.static_atsd(qemu.host_arch())
    raw = output[:-len(".json")] + store.ATSD_RECORD
    rc = supervise([atsd, *words, "-o", raw])
    if rc not in (0, 3):  # 3: finished, with a stale translation (said on stderr): imported as any finished run
        return rc
    try:
        with open(raw, encoding="utf-8", errors="replace") as f:
            text = f.read()
        results.save_or_rescue(importer.to_result(text, raw), output)
        return rc
    except (OSError, UsageError) as e:
        print(f"atsdbench: {e.strerror if isinstance(e, OSError) else e}", file=sys.stderr)
        return 2


def _signal_name(signum):
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


class Step:
    """A step with its world injected: proc (the fake /proc of the tests), the runner, the boot method,
    the clock, and where lines go."""

    def __init__(self, directory, method, proc="/proc", runner=run_subprocess, clock=time.time, out=None,
                 disable=None):
        self.directory, self.method, self.proc = directory, method, proc
        self.runner, self.clock = runner, clock
        self.out = out or (lambda line: print(line, flush=True))
        self.disable = disable  # (unit name, run) where the systemd unit runs the step

    lock = None

    def event(self, **e):
        e.setdefault("time", self.clock())
        with signals.held():  # a Ctrl-C waits until the event is whole
            try:
                return store.append_event(self.directory, e)
            except OSError as err:  # a full disk: the next step journals the slot's end as what it was
                if self.lock is not None and isinstance(e.get("start"), int) and err.errno:
                    self.lock.note(err.errno, e["start"])
                raise

    def done(self, **e):
        """A done event, with its file's sha256: what load checks the file against from now on."""
        return self.event(event="done", sha256=store.file_digest(os.path.join(self.directory, e["file"])), **e)

    def __call__(self, dry_run=False):
        with Lock(self.directory) as lock:
            self.lock = lock
            try:
                return self._step(dry_run)
            finally:
                self.lock = None

    def _cut_off(self, start, boot_id):
        """Why a slot left open ended: what the step before noted (its end could not be journaled),
        else what the boot says."""
        said = self.lock.last_word if self.lock is not None else None
        if said is not None and said[1] == start["seq"]:
            import errno

            full = " (the disk was full)" if said[0] in (errno.ENOSPC, errno.EDQUOT) else ""
            return f"its end could not be journaled: {os.strerror(said[0])}{full}"
        return "the boot ended before its run did" if start["boot_id"] != boot_id else "its step was killed"

    def _step(self, dry_run):
        c = store.load(self.directory)
        for w in c.warnings:
            warn(w)
        boot_id, release, version = read_identity(self.proc)
        act = (lambda **e: self.out(f"would record {e['event']}")) if dry_run else self.event
        counted, recovered = {d["boot_id"] for d in c.done}, set()
        for e in c.open_starts():  # a crash, a power cut or a killed step left this slot open
            kept = e.get("file") if e.get("file") and os.path.exists(os.path.join(self.directory, e["file"])) else None
            why = self._cut_off(e, boot_id)
            if kept and e["boot_id"] not in counted and store.complete_result(os.path.join(self.directory, kept)):
                slot = {"boot_id": e["boot_id"], "kernel": e["kernel"], "file": kept}
                wrong = store.done_problem(self.directory, slot, c.kernels)
                if wrong is None:
                    # the run finished and saved; only its done event is missing (lost, deleted, or the
                    # step died after the run): the observation is kept, not redone
                    if dry_run:
                        act(event="done", **slot, start=e["seq"], recovered=True)
                    else:
                        self.done(**slot, start=e["seq"], recovered=True)
                    counted.add(e["boot_id"])
                    recovered.add(e["boot_id"])
                    self.out(f"slot of {e['kernel']} in boot {e['boot_id'][:8]}: its run had finished ({kept}): "
                             "counted, not redone")
                    continue
                why = wrong  # complete, but not this slot's run (copied in, another boot's)
            act(event="unfinished", boot_id=e["boot_id"], kernel=e["kernel"], file=kept, why=why, start=e["seq"])
            its_file = f"; its file {kept} is kept" if kept else ""
            self.out(f"slot of {e['kernel']} in boot {e['boot_id'][:8]} unfinished ({why}): redone{its_file}")
        c = store.load(self.directory) if not dry_run else c
        if c.complete:
            self.out(plans.complete_line(self.directory))
            self._disable(dry_run)
            return 0
        last = c.events[-1] if c.events else {}
        if boot_id in recovered or (last.get("event"), last.get("boot_id")) == ("stopped", boot_id):
            # this boot's run had finished (its step cut off, or stopped before it arranged): the next boot
            return self._arrange(c, dry_run)
        used = c.boots_done().get(boot_id)
        if used is not None:
            event = used["event"] + (" " + used["kernel"] if used.get("kernel") else "")
            raise UsageError(f"campaign {self.directory}: boot {boot_id[:8]} already used ({event}): "
                             "reboot for the next")
        name = plans.identify(c.plan["kernels"], release, version)
        expected = c.expected()
        if name is None:
            act(event="foreign", boot_id=boot_id, release=release, version=version)
            if expected:
                act(event="missed", boot_id=boot_id, expected=expected, booted=None)
            self.out(f"the running kernel {release} {version} is not in the plan: recorded, not measured")
            return self._arrange(store.load(self.directory) if not dry_run else c, dry_run, code=1)
        if expected and expected != name:
            act(event="missed", boot_id=boot_id, expected=expected, booted=name)
            self.out(f"{expected} was arranged but {name} booted: a missed slot of {expected} (the plan re-balances)")
        if c.remaining()[name] == 0:
            act(event="skipped", boot_id=boot_id, kernel=name, why="its boots are done")
            self.out(f"{name} has all its boots: this boot is not measured")
            return self._arrange(store.load(self.directory) if not dry_run else c, dry_run)
        slot = len(c.done) + 1
        total = c.plan["boots"] * len(c.names)
        if dry_run:
            self.out(f"would run {name} (boot {slot} of {total}) into "
                     f"{os.path.join(self.directory, name, boot_id + '.json')}")
            return self._arrange(c, dry_run, after=name)
        path = store.free_result_path(self.directory, name, boot_id)
        files.check_space(path, 1 << 20)  # the journal and a result of a small plan; run checks its own
        rel = os.path.relpath(path, self.directory)
        started = self.event(event="start", boot_id=boot_id, kernel=name, release=release, version=version,
                             file=rel, slot=slot)["seq"]
        self.out(f"campaign {self.directory}: {name} (boot {slot} of {total}, boot_id {boot_id[:8]})")
        with signals.held():  # the run's Ctrl-C is the child's to handle: it saves what it measured
            rc = self.runner(c.plan["run_options"], path)
            asked = signals.pending_signals()
            interrupted = signals.take() or bool(asked)
        # exit 3: the run finished and saved, and its verify passes read a stale translation (a finding about
        # the kernel, not a failed run: redoing the slot would only find it again); compare DIR says it
        # the file is checked as every later read checks it: a done that would not count is never written
        # (its slot would reopen at every boot), the slot is unfinished and nothing is arranged
        wrong = store.done_problem(self.directory, {"boot_id": boot_id, "kernel": name, "file": rel}, c.kernels) \
            if rc in (0, 3) and store.complete_result(path) else None
        if rc in (0, 3) and store.complete_result(path) and wrong is None:
            self.done(boot_id=boot_id, kernel=name, file=rel, start=started, **({"stale": True} if rc else {}))
            self.out(f"saved {path}" if rc == 0 else f"saved {path}: STALE TRANSLATION in its verify passes (kept as a "
                     "finished run; compare says it)")
            if interrupted:  # asked to stop: the finished run counts, but no next boot is arranged
                why = "interrupted by " + ("/".join(_signal_name(s) for s in dict.fromkeys(asked)) or "a signal")
                self.event(event="stopped", boot_id=boot_id, why=why)
                self.out(f"stopped ({why}): the run is saved and counted; no next boot arranged (campaign step DIR goes "
                         "on)")
                return 130
        else:
            kept = rel if os.path.exists(path) else None
            why = "interrupted" if rc == 130 or interrupted else f"the run exited {rc}"
            if wrong is not None:
                why = f"its file does not bear the slot out: {wrong}"
            self.event(event="unfinished", boot_id=boot_id, kernel=name, file=kept, why=why, rc=rc, start=started)
            is_kept = f" ({kept} is kept)" if kept else ""
            self.out(f"{name}'s run in this boot is unfinished ({why}); the next step redoes the slot{is_kept}")
            return 130 if rc == 130 or interrupted else 1
        return self._arrange(store.load(self.directory), dry_run)

    def _arrange(self, c, dry_run, code=0, after=None):
        """Pick the next kernel and arrange its boot (then reboot into it, the journal written first)."""
        if after is not None:  # dry run: as if this boot's run were done
            c = store.Campaign(c.directory, c.plan, c.events + [{"event": "done", "kernel": after, "boot_id": "-"}])
        if c.complete:
            self.out(plans.complete_line(self.directory))
            self._disable(dry_run)
            return code
        nxt = plans.next_kernel(c)
        if nxt is None:
            stuck = ", ".join(c.stuck())
            raise UsageError(f"campaign {self.directory}: {stuck} missed {store.MAX_MISSES} slots in a row (no "
                             "boot?): boot it by hand")
        kernel = c.kernels[nxt]
        if dry_run:
            self.out(f"would arrange {nxt}: {self.method.describe(kernel)}")
            return code
        action = self.method.arrange(kernel)
        self.event(event="arranged", kernel=nxt, method=self.method.name, action=action)
        self.out(action if self.method.name == "manual" else f"next: {nxt} ({action}); rebooting")
        self.method.reboot()
        return code

    def _disable(self, dry_run):
        if self.disable is None or dry_run:
            return
        unit, run = self.disable
        p = run(["systemctl", "disable", unit], capture_output=True, text=True)
        self.out(f"disabled {unit}" if p.returncode == 0 else f"could not disable {unit} (systemctl exit "
                 f"{p.returncode}): it will find the plan done at each boot")
