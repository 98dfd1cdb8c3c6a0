"""The words measure/, campaign/ and the run, calibrate, guest and campaign commands still take from
render: run --verify's loud lines and exit status, --breakdown's and --profile's refusals, the
campaign's and its steps' lines, guest's.  They move to where they are raised as those packages stop
importing render (tests/test_layout.py); the notes under tables are each beside their table
(render/compare.py, tables.py, counts.py, breakdown.py, model.py, scaling.py, noise_profile.py, and
render/notes.py for what several share)."""

from .notes import PERMISSIONS, VERIFY, WIDTH, hang, plural, see  # noqa: F401  (WIDTH: measure/ reads it here)


# ---- run --verify (docs/verify.md) ----

# The exit status of a run that found a stale translation (after it saved every pass); a --workload's
# own read-back failure exits with the same status.
EXIT_STALE = 3


def stale_translation(stale, checks, op, stride, invalidators, checkers):
    """The loud line, one per (op, stride, CPUs) with a stale read; stride is its text ('64K').  atsd
    prints the same sentence (csrc/atsd_verify.c, held equal by a parity test).  One line even past
    WIDTH: it is grepped for, and stale_lines() wraps it for the terminal."""
    cpus = f"{','.join(map(str, invalidators))} -> {','.join(map(str, checkers))}"
    return (f"STALE TRANSLATION: {stale} of {checks} checks read through a translation after the invalidation "
            f"returned ({op}, {stride}, CPUs {cpus})")


def stale_device_translation(stale, checks, op, stride):
    """The device's loud line (--device hmm): atsd prints the same sentence (csrc/atsd_verify.c, held
    equal by a parity test)."""
    return (f"STALE DEVICE TRANSLATION: {stale} of {checks} device reads went through a translation after the "
            f"invalidation returned ({op}, {stride}, test_hmm)")


def stale_lines(groups, name=None):
    """The loud lines of a result's stale groups (data/results.stale_groups), each wrapped to WIDTH;
    name: the file it is in (show, compare)."""
    from ..units import format_size

    out = []
    for g in groups:
        if g.get("device"):
            line = stale_device_translation(g["stale"], g["checks"], g["op"], format_size(g["stride_bytes"]))
        else:
            line = stale_translation(g["stale"], g["checks"], g["op"], format_size(g["stride_bytes"]),
                                     g["invalidator_cpus"], g["checker_cpus"])
        out.append(hang(f"{name}: {line}" if name else line, 2))
    return out


def verify_gpu():
    """run --verify --gpu: what the checkers cannot see."""
    return see("--verify checks the CPUs, not the GPU's device TLBs (ATS, HMM)", VERIFY)


def guest_verify_smp(smp):
    """guest --smp 1 with a --verify run: refused before anything boots."""
    return f"--verify in a guest checks each call from another vCPU: give --smp 2 or more (got --smp {smp})"


# run --workload: a loop's read-back differed (csrc/atsd_ops.c, -EBADMSG).  Exit 3, never a rate.
READBACK_EXIT = EXIT_STALE  # one status for every failed correctness check


def readback_failed(workload, loops):
    """One line (with "atsdbench: " at most 100 columns up to 10^9 loops)."""
    return f"{workload}: read-back check failed after {loops} loops (a page read wrong after DONTNEED)"


# ---- run --breakdown and --profile (docs/breakdown.md) ----

def breakdown_refused(why, option="--breakdown"):
    """Asked for and impossible here: exit 2 before anything is measured."""
    return f"{option}: {why}"


def breakdown_not_calibrate():
    return "calibrate measures noise: --breakdown and --profile are run's (extra passes per stride)"


def breakdown_missing(events):
    """Optional tracepoints this kernel lacks, by system ('csd, ipi')."""
    systems = ", ".join(dict.fromkeys(e.split(":")[0] for e in events))
    return see(f"--breakdown: no {systems} events here: those stages not measured", PERMISSIONS)


def symbols_hidden(kptr_restrict=None):
    """kallsyms reads 0 addresses: kptr_restrict above 0 hides them; at 0 only root (CAP_SYSLOG) sees them."""
    if kptr_restrict == 0:
        return "kallsyms hides kernel addresses from non-root (CAP_SYSLOG): run as root"
    return "kallsyms hides kernel addresses (as root: sysctl kernel.kptr_restrict=0)"


def perf_refused(err, paranoid):
    """err: the errno's name (EACCES); paranoid: kernel.perf_event_paranoid, or None."""
    said = f", paranoid {paranoid}" if paranoid is not None else ""
    return f"perf_event_open {err}{said}: needs root or kernel.perf_event_paranoid=0"


# ---- campaign (docs/lab.md) ----

KEXEC_NO_CAP = ("kexec: this process lacks CAP_SYS_BOOT (run the step as root, or give the unit "
                "AmbientCapabilities=CAP_SYS_BOOT); or use --method grub or manual")


KEXEC_DISABLED = ("kexec: /proc/sys/kernel/kexec_load_disabled is 1 (it stays so until a reboot): use "
                  "--method grub or manual")


KEXEC_EPERM = "kexec: kexec_file_load: operation not permitted (no lockdown, CAP_SYS_BOOT held): see dmesg"


KEXEC_NOSYS = "kexec: this kernel has no kexec_file_load (CONFIG_KEXEC_FILE off): use --method grub or manual"


def kexec_lockdown(mode):
    return (f"kexec: refused under lockdown ({mode}; UEFI Secure Boot): the image must be signed by a key the "
            "kernel trusts (shim/MOK); or use --method grub")


def kexec_signature(image, why, lockdown):
    forced = f" and lockdown ({lockdown}) enforces it" if lockdown not in (None, "none") else ""
    return (f"kexec: {image}'s signature did not verify ({why}){forced}: sign it with an enrolled key "
            "(MOK), or use --method grub")


def campaign_grub_not_saved(default):
    return (f"--method grub: grub-reboot needs GRUB_DEFAULT=saved in {default} (then update-grub), or grub "
            "boots its default every time")


def campaign_manual_next(kernel, directory):
    return f"next: boot {kernel['name']} ({kernel['release']}), then run: atsdbench campaign step {directory}"


def campaign_planned(directory, plan, order):
    names = ",".join(k["name"] for k in plan["kernels"])
    return (f"wrote {directory}/campaign.json: {names}, {plan['boots']} boots each ({plan['schedule']}: "
            f"{','.join(order[:8])}{',...' if len(order) > 8 else ''}), by {plan['method']}")


def campaign_next_steps(directory, method):
    first = f"atsdbench campaign install {directory}, then reboot" if method != "manual" else \
        f"boot the first kernel, then atsdbench campaign step {directory}"
    return f"next: {first}; atsdbench campaign status {directory} shows progress"


def campaign_done(directory):
    return f"campaign {directory} is complete: atsdbench compare {directory}"


def campaign_installed(path, directory):
    """campaign install: the unit written and enabled."""
    return (f"wrote {path} and enabled it: reboot to start (it runs atsdbench campaign step {directory} at each "
            "boot until the plan is done)")


def campaign_boots_written(directory, boots):
    """guest --boots, at the end: the campaign directory's finished boots and how to compare them."""
    return f"campaign {directory}: {plural(boots, 'boot')}; atsdbench compare {directory}"


def duration(seconds):
    """A campaign's time left or between boots: hours past 90 minutes, minutes past 90 seconds."""
    from . import numbers

    if seconds >= 5400:
        return f"{numbers.fixed(seconds / 3600, 1)} h"
    return f"{numbers.fixed(seconds / 60, 0)} min" if seconds >= 90 else f"{numbers.fixed(seconds, 0)} s"


def campaign_status(c, directory):
    """campaign status's lines: the plan, each kernel's boots, their order, what went wrong, a step that
    started and has not ended (then campaign_done, campaign_stuck or campaign_next)."""
    plan = c.plan
    options = " ".join(plan["run_options"]) or "(defaults)"
    lines = [f"campaign {directory}: {', '.join(c.names)}, {plan['boots']} boots each ({plan['schedule']}), by "
             f"{plan['method']}; {plan.get('runner', 'run')} {options}"]
    counts = c.counts()
    width = max(len(n) for n in c.names)
    for n in c.names:
        ids = [e["boot_id"][:8] for e in c.done if e["kernel"] == n]
        lines.append(f"  {n:<{width}}  {c.kernels[n]['release']:<24}  {counts[n]}/{plan['boots']}  {' '.join(ids)}")
    lines.append(f"boots done in order: {','.join(e['kernel'] for e in c.done) or 'none'}")
    for e in c.events:
        if e["event"] == "missed":
            got = e.get("booted") or "a kernel not in the plan"
            lines.append(f"  missed: {e['expected']} was arranged, {got} booted (boot {e['boot_id'][:8]})")
        elif e["event"] == "foreign":
            lines.append(f"  not in the plan: {e['release']} (boot {e['boot_id'][:8]}), not measured")
        elif e["event"] == "unfinished":
            kept = f", {e['file']} kept" if e.get("file") else ""
            lines.append(f"  unfinished: {e['kernel']} in boot {e['boot_id'][:8]} ({e['why']}{kept}): redone")
        elif e["event"] == "stopped":
            lines.append(f"  stopped: boot {e['boot_id'][:8]} ({e['why']}): no next boot arranged")
        elif e["event"] == "done" and e.get("recovered"):
            lines.append(f"  recovered: {e['kernel']} in boot {e['boot_id'][:8]}: its done event was missing")
    opened = c.open_starts()
    if opened:
        e = opened[-1]
        lines.append(f"running or cut off: {e['kernel']} in boot {e['boot_id'][:8]} (the next step finds out)")
    return lines


def campaign_stuck(names, misses):
    return f"stuck: {', '.join(names)} missed {misses} slots in a row; boot it by hand and step"


def campaign_next(name, release, left, per=None):
    """campaign status's last line: the next kernel and the time left (per: the median seconds between
    boots so far, None before two boots)."""
    if per is None:
        eta = f"{plural(left, 'boot')} left (time left known after two boots)"
    else:
        eta = (f"about {duration(per * left)} left ({plural(left, 'boot')} at the median {duration(per)} between "
               "boots so far)")
    return f"next: {name} ({release}); {eta}"


# campaign step's lines (campaign/step.py), each on stdout as the step goes

def step_would_record(event):
    return f"would record {event}"


def step_slot_redone(kernel, boot_id, why, kept=None):
    """A slot a crash, a power cut or a killed step left open."""
    return f"slot of {kernel} in boot {boot_id[:8]} unfinished ({why}): redone" + (
        f"; its file {kept} is kept" if kept else "")


def step_stopped(why):
    """A step asked to stop while its run went on: the run's file is counted, no boot is arranged."""
    return f"stopped ({why}): the run is saved and counted; no next boot arranged (campaign step DIR goes on)"


def step_recovered(kernel, boot_id, kept):
    """A slot whose run finished and saved, left open by a lost done event or a step cut off after it."""
    return f"slot of {kernel} in boot {boot_id[:8]}: its run had finished ({kept}): counted, not redone"


def step_foreign(release, version):
    return f"the running kernel {release} {version} is not in the plan: recorded, not measured"


def step_missed(expected, name):
    return f"{expected} was arranged but {name} booted: a missed slot of {expected} (the plan re-balances)"


def step_skipped(name):
    return f"{name} has all its boots: this boot is not measured"


def step_would_run(name, slot, total, path):
    return f"would run {name} (boot {slot} of {total}) into {path}"


def step_started(directory, name, slot, total, boot_id):
    return f"campaign {directory}: {name} (boot {slot} of {total}, boot_id {boot_id[:8]})"


def step_saved(path):
    return f"saved {path}"


def step_saved_stale(path):
    return f"saved {path}: STALE TRANSLATION in its verify passes (kept as a finished run; compare says it)"


def step_unfinished(name, why, kept=None):
    return f"{name}'s run in this boot is unfinished ({why}); the next step redoes the slot" + (
        f" ({kept} is kept)" if kept else "")


def step_would_arrange(name, how):
    return f"would arrange {name}: {how}"


def step_rebooting(name, action):
    return f"next: {name} ({action}); rebooting"


def step_disabled(unit, rc):
    """The systemd unit disabled once the plan is done (rc: systemctl's exit status)."""
    return f"disabled {unit}" if rc == 0 else \
        f"could not disable {unit} (systemctl exit {rc}): it will find the plan done at each boot"


# ---- guest, and run's NUMA words ----

def guest_wrote(name, release, machine, accel, done, trace=None):
    """guest: a run's result file written (and its trace)."""
    return f"wrote {name} ({release}, {machine}, {accel}, {done})" + (f", its trace {trace}" if trace else "")


def guest_wrote_output(stem, code, files_line=None):
    """guest COMMAND: its output kept as STEM.out (and the files it left in /out)."""
    return f"wrote {stem}.out (the command's output, exit {code})" + (f" and {files_line}" if files_line else "")


def numa_unpinned(nodes):
    """info's warning on a machine of several NUMA nodes with memory."""
    return f"memory on NUMA nodes {nodes}: a run's region is not pinned (run --mem-node N binds it)"


def no_mem_node(node, nodes):
    """run --mem-node N where sysfs lists no node N with memory; nodes formatted as a kernel list."""
    return f"--mem-node {node}: no such NUMA node with memory (nodes with memory: {nodes})"
