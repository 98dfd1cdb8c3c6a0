"""The sentences compare, model, run, show and calibrate print around their tables, worded once.

Analysis gives its reasons as codes (a Comparison's `withheld` is ONE_SESSION, a side's
`incomplete`), and render turns them into these lines.  Each line is at most WIDTH columns and a
table has at most MAX_NOTES notes under it, each naming the docs/ anchor that tells the long story
(tests/render/test_text.py holds both, and that every anchor exists).  Figures measured on the
project's own machines are evidence in docs/methodology.md, never printed as if they were the
user's: where the user's own data has a figure (a noise profile, the file's own spread), that is
the one printed."""

WIDTH = 100
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
PLACEMENT = "docs/methodology.md#placement"
ANCHORS = (SESSION, WITHIN, BOOTS, MIXED, PROFILES, PAIRED, UNREADABLE, TESTS, CALIBRATE, BATCHES, MODEL,
           PROFILE_TABLE, VERIFY, VERIFY_HELD, PLACEMENT)


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
    import textwrap

    if len(line) <= WIDTH:
        return line
    return "\n".join(textwrap.wrap(line, WIDTH, subsequent_indent=" " * indent, break_on_hyphens=False,
                                   break_long_words=False))


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
    return see(f"--gap {gap:g}s under {floor:g}s: less of the host's drift in the profile", CALIBRATE)


def interrupted_calibration(output):
    return f"no noise profile written (interrupted): atsdbench calibrate --from {output} makes one of what finished"


# ---- run and show ----

UNITS = "GB/s = 10^9 bytes/s; sizes are binary (1G = 2^30 bytes)"
RUN_UNITS = "Median, Min, Max: of single passes; CV% within: of a round's passes, between: of round means"


def show_units(unit):
    if unit == "round":
        return "GB/s per round (N = rounds); run's Median, Min and Max are of passes (show --unit pass)"
    return "GB/s per pass (N = passes): Median, Min and Max as run prints them"


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


def stale_lines(groups, name=None):
    """The loud lines of a result's stale groups (data/results.stale_groups), each wrapped to WIDTH;
    name: the file it is in (show, compare)."""
    from ..units import format_size

    out = []
    for g in groups:
        line = stale_translation(g["stale"], g["checks"], g["op"], format_size(g["stride_bytes"]),
                                 g["invalidator_cpus"], g["checker_cpus"])
        out.append(hang(f"{name}: {line}" if name else line, 2))
    return out


def verified(summary):
    """Above run's and show's table, for a file with verify passes: what they checked, and how many of
    the checks proved something (the checker held the translation while the call ran)."""
    checks, held = summary["checks"], summary["held"]
    share = f"{100.0 * held / checks:.1f}%" if checks else "none"
    line = f"verify: {summary['stale']} stale in {plural(checks, 'check')}; held in the call: {share}"
    if checks - held:
        line += f", {checks - held} proved nothing"
    return see(line, VERIFY_HELD)


def verify_gpu():
    """run --verify --gpu: what the checkers cannot see."""
    return see("--verify checks the CPUs, not the GPU's device TLBs (ATS, HMM)", VERIFY)


def guest_verify_smp(smp):
    """guest --smp 1 with a --verify run: refused before anything boots."""
    return f"--verify in a guest checks each call from another vCPU: give --smp 2 or more (got --smp {smp})"


def placement_varied(placements, regions, medians=None, contig=None, nodes=None):
    """show/run, under the table, where rounds' regions sat on different physical pages (issue 35).
    medians and contig are (low, high) already formatted (render/numbers.py), None without root;
    nodes is None where one node held them all.  What does not fit in WIDTH is left to the columns."""
    parts = ([f"nodes {nodes}"] if nodes else []) + ([f"median PFN {medians[0]}-{medians[1]}"] if medians else []) + \
        ([f"2M runs {contig[0]}-{contig[1]}"] if contig else [])
    while True:
        line = see(f"placement: {placements} in {regions} rounds" + "".join(f", {p}" for p in parts), PLACEMENT)
        if len(line) <= WIDTH or not parts:
            return line
        parts.pop()


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
    return f"round (over {'/'.join(map(str, ks))} placements)"
