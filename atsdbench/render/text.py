"""The sentences compare, model, run, show and calibrate print around their tables, worded once.

Analysis gives its reasons as codes (a Comparison's `withheld` is ONE_SESSION, a side's
`incomplete`), and render turns them into these lines.  Each line is at most WIDTH columns and a
table has at most MAX_NOTES notes under it, each naming the docs/ anchor that tells the long story
(tests/render/test_text.py holds both, and that every anchor exists).  Figures measured on the
project's own machines are evidence in docs/methodology.md, never printed as if they were the
user's: where the user's own data has a figure (a noise profile, the file's own spread), that is
the one printed.  The one-line failures (usage errors) and the warnings on stderr are in the sibling
render/messages.py, templates by name; a new one may go in either file (tests/render/test_messages.py
scans the package: no other module words its own)."""

from .._cli import WIDTH  # noqa: F401  (render's tables and notes are held to it)
MAX_NOTES = 3

# The long stories, one anchor each (docs/compare.md "What the notes say", docs/methodology.md).
SESSION = "docs/compare.md#sessions"
WITHIN = "docs/compare.md#within-session"
BOOTS = "docs/compare.md#boots"
MIXED = "docs/compare.md#mixed-sides"
PROFILES = "docs/compare.md#profiles"
PAIRED = "docs/compare.md#paired-by-round"
UNREADABLE = "docs/compare.md#intervals-too-wide-to-read"
TESTS = "docs/compare.md#rules-and-options"
CALIBRATE = "docs/calibrate.md#what-it-does"
BATCHES = "docs/methodology.md#drift-and-autocorrelation"
MODEL = "docs/model.md#cost-model-atsdbench-model"
PROFILE_TABLE = "docs/calibrate.md#report"
VERIFY = "docs/verify.md#what-a-pass-proves"
VERIFY_HELD = "docs/verify.md#held"
SCALING = "docs/workloads.md#scaling"
COUNTED = "docs/guest.md#what-changed-means"
PLACEMENT = "docs/methodology.md#placement"
ANCHORS = (SESSION, WITHIN, BOOTS, MIXED, PROFILES, PAIRED, UNREADABLE, TESTS, CALIBRATE, BATCHES, MODEL,
           PROFILE_TABLE, VERIFY, VERIFY_HELD, SCALING, COUNTED, PLACEMENT)


def see(text, anchor):
    """A note and where its long story is: 'text (docs/compare.md#x)'."""
    return f"{text} ({anchor})"


def wrap(line):
    """A long single-line footer (commit formats) as lines of at most WIDTH columns, broken after '; '
    where it can be, else at spaces."""
    import textwrap

    out, current = [], ""
    for part in line.split("; "):
        joined = f"{current}; {part}" if current else part
        if len(joined) < WIDTH:  # room for the ';' a broken line ends with
            current = joined
            continue
        if current:
            out.append(current + ";")
        current = part
        if len(current) >= WIDTH:  # one part too long alone: at spaces, its last piece carried on
            *whole, current = textwrap.wrap(current, WIDTH - 1, break_on_hyphens=False)
            out += whole
    out.append(current)
    return "\n".join(out)


def hang(line, indent):
    """One fact a line, as lines of at most WIDTH columns, the rest of it under its value."""
    from .._cli import wrapped

    return wrapped(line, indent)


def plural(n, one, many=None):
    """'1 round', '5 rounds'; many for irregular plurals ('pass', 'passes')."""
    return f"{n} {one if n == 1 else many or one + 's'}"


# ---- compare and model: what a verdict or a CI does not cover ----

FOR_A_VERDICT = "replicate runs (5 a side) or noise profiles"

def withheld(what="verdict"):
    """One session a side, the unit left to us: no `what` (compare: verdict; model: CI)."""
    return see(f"no {what}: one session a side; the interval is this pair's", SESSION)


def for_a_verdict(what="verdict"):
    return see(f"for a {what}: {FOR_A_VERDICT}", CALIBRATE)


def within_session(boot=True):
    """A CI from the rounds (or sub-runs) of one file a side: the drift between sessions is not in it."""
    return see("one file a side: the CI leaves out drift between sessions" + (" and boots" if boot else ""), WITHIN)


def one_boot():
    return see("boot-to-boot not measured: one boot a side", BOOTS)


def mixed(student):
    return see("one side replicated: the single run is " + ("assumed to vary as those runs" if student else
                                                          "one observation"), MIXED)


def profiled(runs, boot=True):
    """Where one-process sides took their between-run variance: runs = the profiles' sub-run counts."""
    return see(f"between-run variance: noise profiles ({'/'.join(map(str, runs))} sub-runs)"
               + ("; boots not covered" if boot else ""), PROFILES)


def paired():
    return see("paired by round: drift cancels; the CI is this run's own noise", PAIRED)


# ---- warnings compare and model give about their inputs ----

def incomplete(name):
    return f"{name} is an interrupted run (complete: false): its last round may be short"


def same_file(name, places):
    return f"{name} is given {plural(places, 'time')}: the same data against itself"


def size_mismatch(names_sizes):
    listing = ", ".join(f"{s} in {n}" for n, s in names_sizes)
    return f"the files differ in size ({listing}): per-call costs differ for that reason alone"


def batched(labels, rounds, batches):
    """Sides of many rounds compared as batch means (analysis/compare._time_order)."""
    return see(f"{', '.join(labels)}: {rounds}+ rounds: {batches} batch means a side (slow drift not absorbed)",
               BATCHES)


def autocorrelated(places):
    return see(f"round means autocorrelated: {'; '.join(places)}; the CI is too narrow (run --spread, or "
               "replicate runs)", BATCHES)


# ---- calibrate ----

def short_gap(gap, floor):
    from .numbers import general

    return see(f"--gap {general(gap, 6)}s under {general(floor, 6)}s: less of the host's drift in the profile",
               CALIBRATE)


def interrupted_calibration(output):
    return f"no noise profile written (interrupted): atsdbench calibrate --from {output} makes one of what finished"


# ---- run and show ----

UNITS = "GB/s = 10^9 bytes/s; sizes are binary (1G = 2^30 bytes)"
RUN_UNITS = "Median, Min, Max: of single passes; CV% within: of a round's passes, between: of round means"


INTERRUPTED = "interrupted: only finished passes are shown and saved (complete: false)"


def idle_bystanders(idle, of, busy):
    from .numbers import pct

    return (f"warning: {idle} of {of} timed passes had a bystander under {pct(100 * busy, 0, sign=False)} of the "
            "pass: fewer remote flushes")


def disturbed(n, of, busy):
    from .numbers import pct

    return (f"warning: {n} of {of} timed passes disturbed (preempted, under {pct(100 * busy, 0, sign=False)} on "
            "CPU, or steal): cpu_share")


def thp_short(low, high):
    return f"warning: --pages thp: huge pages backed {low} to {high} of the region (fragmented, or THP off)"


def show_units(unit, rate="GB/s"):
    if unit == "round":
        return f"Min to Stddev: {rate} of round means (N = rounds); run's Median, Min, Max: of passes (--unit pass)"
    return f"Min to Stddev: {rate} of single passes (N = passes), as run prints them"


def detects_alone(found):
    """Under run's and show's table, where one session a side gets no verdict: found = the range
    --unit run detects within a --runs file's session ('2.0-2.4%'), or ''."""
    if found:
        return see(f"no verdict alone for two such files; --unit run detects >= {found}", SESSION)
    return see("two files like this give no verdict alone: one session a side", SESSION)


def detects_profiled(found, n):
    """A one-process file with a noise profile: what a compare of two like it detects."""
    return see(f"two runs like this: detects >= {found} (80% power, {plural(n, 'round')} a side)", PROFILES)


# ---- run --verify (docs/verify.md) ----

# The exit status of a run that found a stale translation (after it saved every pass).  ISSUE 31 /
# --workload: the workload's own read-back failure exits with the same status.
EXIT_STALE = 3


def stale_translation(stale, checks, op, stride, invalidators, checkers):
    """The loud line, one per (op, stride, CPUs) with a stale read, as the issue words it; stride is its
    text ('64K').  atsd prints the same sentence (csrc/atsd_verify.c, held equal by a parity test).
    One line even past WIDTH: it is grepped for, and stale_lines() wraps it for the terminal."""
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


def verified(summary, workload=False):
    """Above run's and show's table, for a file with verify passes: what they checked, and how many of
    the checks proved something (the checker held the translation while the call ran).  workload: a
    --workload run, which takes them unasked (its loop's read-back is checked the same way)."""
    checks, held = summary["checks"], summary["held"]
    why = ", on by default for --workload (--no-verify skips them)" if workload else ""
    line = (f"verify: untimed passes after each round's timed ones{why}: {summary['stale']} stale in "
            f"{plural(checks, 'check')}; {held} of {checks} held the translation while the call ran")
    if checks - held:
        line += f" (the other {checks - held} proved nothing)"
    if summary.get("device_checks") is not None:  # --device hmm: the device's read after each call
        must = summary["device_failed"] + summary["device_zeros"]
        line += (f"; device (test_hmm): {summary['device_stale']} stale in {plural(summary['device_checks'], 'read')}, "
                 f"{must} refused or zero as they must be")
    return hang(see(line, VERIFY_HELD), 2)


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


# ---- scaling: a threads sweep by thread count (render/scaling.py) ----

def scaling_rate(definition, rounds):
    """Above show's scaling table: the rate, its unit and N."""
    return f"scaling: {definition} of all tasks, geometric mean of round means; N = {rounds} rounds a cell"


def scaling_efficiency(references, confidence):
    """What efficiency is and what its CI leaves out (drift between sessions, boots)."""
    return (f"efficiency = rate / (N/N0 x rate at N0), N0 = {references}; {confidence} CI paired by round: "
            "this run, not sessions")


# What the last columns of show's scaling table are, and where the long story is.
SCALING_COLUMNS = see("spread: slowest/fastest task's loop - 1; disturbed: a task off its CPU", SCALING)


def scaling_panel(confidence, rounds):
    """plot's scaling panel title: the centre, its CI's N, and what that CI does not cover."""
    return (f"scaling: geometric mean of round means, {confidence} CI; dashed: linear\n"
            f"N = {rounds} rounds a cell; the CI covers the first file's own rounds, not sessions")


def scaling_by(references):
    """Above compare --by threads's table."""
    return see(f"efficiency = (1 + speedup) / (N/N0), N0 = {references}; CI: the paired speedup's", SCALING)


# ---- run --breakdown and --profile (docs/breakdown.md) ----

BREAKDOWN = "docs/breakdown.md#stages"
PERMISSIONS = "docs/breakdown.md#permissions"
PROFILE = "docs/breakdown.md#profile"
GUEST_BREAKDOWN = "docs/breakdown.md#inside-a-guest"
ANCHORS += (BREAKDOWN, PERMISSIONS, PROFILE, GUEST_BREAKDOWN)
BREAKDOWN_TITLE = "Where a call's time goes (run --breakdown: traced calls, µs per call)"


def breakdown_refused(why, option="--breakdown"):
    """Asked for and impossible here: exit 2 before anything is measured."""
    return f"{option}: {why}"


def breakdown_not_calibrate():
    return "calibrate measures noise: --breakdown and --profile are run's (extra passes per stride)"


def breakdown_missing(events):
    """Optional tracepoints this kernel lacks, by system ('csd, ipi')."""
    systems = ", ".join(dict.fromkeys(e.split(":")[0] for e in events))
    return see(f"--breakdown: no {systems} events here: those stages not measured", PERMISSIONS)


def breakdown_legend(traced_over):
    """Under the breakdown table: the unit, N, what it does not cover."""
    over = f"; tracing cost {traced_over}" if traced_over else ""
    return see(f"N = 1 pass's calls; stages sum to syscall{over}", BREAKDOWN)


def breakdown_local_untimed():
    """Under a breakdown whose local flushes were not timed (no bystander on x86)."""
    return see("untimed: no other CPU to reach, flushed in place, inside page tables", BREAKDOWN)


def breakdown_emulated(virtualized):
    """Under a breakdown or profile of a guest under full emulation: the shares hold, the µs do not."""
    return see(f"emulated ({virtualized}): the µs are the emulator's, read the shares", GUEST_BREAKDOWN)


def breakdown_lost(strides):
    return see(f"--breakdown: events lost at {strides}: no breakdown there", BREAKDOWN)


def breakdown_interrupted():
    return see("--breakdown interrupted: the strides shown were finished", BREAKDOWN)


def symbols_hidden(kptr_restrict=None):
    """kallsyms reads 0 addresses: kptr_restrict above 0 hides them; at 0 only root (CAP_SYSLOG) sees them."""
    if kptr_restrict == 0:
        return "kallsyms hides kernel addresses from non-root (CAP_SYSLOG): run as root"
    return "kallsyms hides kernel addresses (as root: sysctl kernel.kptr_restrict=0)"


def perf_refused(err, paranoid):
    """err: the errno's name (EACCES); paranoid: kernel.perf_event_paranoid, or None."""
    said = f", paranoid {paranoid}" if paranoid is not None else ""
    return f"perf_event_open {err}{said}: needs root or kernel.perf_event_paranoid=0"


PROFILE_TITLE = "Kernel profile of the calls (run --profile: share of the measuring thread's samples)"


def profile_legend(event, n):
    """Under the profile table: the event, N, and the caveat of a PMU-less (timer) profile."""
    if event == "cycles":
        return see(f"cycles samples, N = {n}; a stage: any frame of a sample in it", PROFILE)
    return see(f"cpu-clock, no PMU: time with IRQs off shows after them; N = {n}", PROFILE)


def profile_interrupted():
    return see("--profile interrupted: the strides shown were finished", PROFILE)


COMPARE_BREAKDOWN_TITLE = "Where a call's time went (run --breakdown: µs per traced call; % of the syscall)"
COMPARE_PROFILE_TITLE = "Kernel profile shares (run --profile: % of the measuring thread's samples)"


def compare_stages_legend(files, intervals):
    """Under compare's stage tables: N files a side, and what the interval covers (or that there is none)."""
    if intervals:
        return see(f"files a side {files}; [Welch CI over files] where both sides have 2+", BREAKDOWN)
    return see(f"files a side {files}: one traced pass each, no interval (replicate files give one)", BREAKDOWN)


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


def guest_wrote(name, release, machine, accel, done, trace=None):
    """guest: a run's result file written (and its trace)."""
    return f"wrote {name} ({release}, {machine}, {accel}, {done})" + (f", its trace {trace}" if trace else "")


def guest_wrote_output(stem, code, files_line=None):
    """guest COMMAND: its output kept as STEM.out (and the files it left in /out)."""
    return f"wrote {stem}.out (the command's output, exit {code})" + (f" and {files_line}" if files_line else "")


def campaign_legend(c):
    """The campaign's lines under compare's table: the boots' order, how often it switched kernel,
    and each side's boot_ids (8 characters)."""
    letters = {n: chr(ord("A") + i) if i < 26 else n for i, n in enumerate(c.names)}
    order = "".join(letters[e["kernel"]] for e in c.done)
    switches = sum(1 for a, b in zip(order, order[1:]) if a != b)
    lines = [f"campaign: one file per boot; boots in order {order or '-'}; {switches} of "
             f"{max(len(order) - 1, 0)} consecutive boots switch kernel"]
    for n in c.names:
        ids = [e["boot_id"][:8] for e in c.done if e["kernel"] == n]
        lines.append(f"{letters[n]} = {n}: boot_ids {', '.join(ids) or 'none'}")
    missed = [e for e in c.events if e["event"] in ("missed", "foreign")]
    if missed:
        lines.append(f"{len(missed)} missed slot{'s' * (len(missed) != 1)} (atsdbench campaign status lists them)")
    return [line if len(line) <= WIDTH else line[:WIDTH - 3] + "..." for line in lines]


# ---- compare --counts ----

def counts_title(ops):
    """Above compare --counts' table: per call of what the files timed (run --op, a --workload's loop)."""
    return f"kernel invalidation events per {'/'.join(ops)} call (IPIs from timed passes)"


def counts_rule(sizes):
    """Under compare --counts' table: sizes = 'N = 6/6' (passes counted, base/new)."""
    return "\n".join([wrap(f"changed: the sides' per-call counts do not overlap beyond their spread; {sizes} passes "
                            "(base/new)"), see("n/a: not counted; counters at 0 in every pass left out", COUNTED)])


def counts_emulated(names):
    return (f"emulated (qemu-tcg): {', '.join(names)}: the counts are the kernel's own, the rates are not the "
            "hardware's, so no rate gets a verdict")


def workload_units(page):
    """Under a --workload run's headline: what its GB/s column is."""
    return hang(f"workload: a loop writes, zaps (MADV_DONTNEED) and reads back one {page} page: rates in loops/s, "
                f"as will-it-scale counts them (show --gbps: GB/s = loops/s x {page}) "
                "(docs/workloads.md#will-it-scales-loops)", 2)


def placement_varied(placements, regions, medians=None, contig=None, nodes=None):
    """show/run, under the table, where rounds' regions sat on different physical pages.  medians and
    contig are (low, high) already formatted (render/numbers.py), None without root; nodes is None
    where one node held them all.  Wrapped under its first word where it is longer than WIDTH."""
    parts = ([f"NUMA nodes {nodes}"] if nodes else []) + \
        ([f"the median page frame number ranged {medians[0]} to {medians[1]}"] if medians else []) + \
        ([f"{contig[0]} to {contig[1]} of a region in 2M-contiguous runs"] if contig else [])
    head = f"placement: the rounds' regions sat on {placements} different sets of physical pages in {regions} rounds"
    return hang(see(head + "".join(f"; {p}" for p in parts), PLACEMENT), 2)


def placements_legend(k, mode):
    """Above run's and show's table for `run --placements K`: what the between-round spread holds."""
    if mode == "chained":
        return f"--placements {k}: too little memory for {k} at once; each round's region mapped beside the last"
    return f"--placements {k}: rounds rotate over {k} regions held at once; CV between includes placement"


def numa_unpinned(nodes):
    """info's warning on a machine of several NUMA nodes with memory (issue 35)."""
    return f"memory on NUMA nodes {nodes}: a run's region is not pinned (run --mem-node N binds it)"


def no_mem_node(node, nodes):
    """run --mem-node N where sysfs lists no node N with memory; nodes formatted as a kernel list."""
    return f"--mem-node {node}: no such NUMA node with memory (nodes with memory: {nodes})"


def rounds_over_placements(ks):
    """compare's unit where the files rotated their rounds over K placements (run --placements)."""
    return f"round (over {' or '.join(map(str, ks))} placements)"
