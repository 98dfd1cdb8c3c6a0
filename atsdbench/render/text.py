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
COUNTED = "docs/guest.md#what-changed-means"
ANCHORS = (SESSION, WITHIN, BOOTS, MIXED, PROFILES, PAIRED, UNREADABLE, TESTS, CALIBRATE, BATCHES, MODEL,
           PROFILE_TABLE, COUNTED)


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


INTERRUPTED = "interrupted: only finished passes are shown and saved (complete: false)"


def idle_bystanders(idle, of, busy):
    return f"warning: {idle} of {of} timed passes had a bystander under {busy:.0%} of the pass: fewer remote flushes"


def disturbed(n, of, busy):
    return f"warning: {n} of {of} timed passes disturbed (preempted, under {busy:.0%} on CPU, or steal): cpu_share"


def thp_short(low, high):
    return f"warning: --pages thp: huge pages backed {low} to {high} of the region (fragmented, or THP off)"


def show_units(unit):
    if unit == "round":
        return "Min to Stddev: GB/s of round means (N = rounds); run's Median, Min, Max: of passes (--unit pass)"
    return "Min to Stddev: GB/s of single passes (N = passes), as run prints them"


def detects_alone(found):
    """Under run's and show's table, where one session a side gets no verdict: found = the range
    --unit run detects within a --runs file's session ('2.0-2.4%'), or ''."""
    if found:
        return see(f"no verdict alone for two such files; --unit run detects >= {found}", SESSION)
    return see("two files like this give no verdict alone: one session a side", SESSION)


def detects_profiled(found, n):
    """A one-process file with a noise profile: what a compare of two like it detects."""
    return see(f"two runs like this: detects >= {found} (80% power, {plural(n, 'round')} a side)", PROFILES)


# ---- compare --counts ----

COUNTS_TITLE = "kernel invalidation events per mprotect call (IPIs from timed passes)"
def counts_rule(sizes):
    """Under compare --counts' table: sizes = 'N = 6/6' (passes counted, base/new)."""
    return "\n".join([wrap(f"changed: the sides' per-call counts do not overlap beyond their spread; {sizes} passes "
                            "(base/new)"), see("n/a: not counted; counters at 0 in every pass left out", COUNTED)])


def counts_emulated(names):
    return (f"emulated (qemu-tcg): {', '.join(names)}: the counts are the kernel's own, the rates are not the "
            "hardware's, so no rate gets a verdict")
