"""What the notes under every table share: the column limit, how many notes a table takes, the docs/
anchors they name (ANCHORS, each checked to exist), the helpers that lay a note out, and the notes
compare's and model's tables both print (what a verdict or a CI does not cover).  Every other note
is in the render module of the table it annotates.

Analysis gives its reasons as codes (a Comparison's `withheld`, a Model's `why_no_ci`) and render
words them.  Figures measured on the project's own machines are evidence in docs/methodology.md,
never printed as if they were the user's: where the user's own data has a figure (a noise profile,
the file's own spread), that is the one printed (tests/render/test_text.py holds all of this)."""

from .._cli import WIDTH  # noqa: F401  (render's tables and notes are held to it)

MAX_NOTES = 3

# The long stories, one anchor each (docs/compare.md "What the notes say", docs/methodology.md).
SESSION = "docs/compare.md#sessions"
WITHIN = "docs/compare.md#within-session"
BOOTS = "docs/compare.md#boots"
MIXED = "docs/compare.md#mixed-sides"
NOISE_PROFILES = "docs/compare.md#profiles"
PAIRED = "docs/compare.md#paired-by-round"
CALIBRATE = "docs/calibrate.md#what-it-does"
NOISE_PROFILE_TABLE = "docs/calibrate.md#report"
VERIFY = "docs/verify.md#what-a-pass-proves"
VERIFY_HELD = "docs/verify.md#held"
SCALING = "docs/workloads.md#scaling"
COUNTED = "docs/guest.md#what-changed-means"
PLACEMENT = "docs/methodology.md#placement"
BREAKDOWN = "docs/breakdown.md#stages"
PERMISSIONS = "docs/breakdown.md#permissions"
PROFILE = "docs/breakdown.md#profile"  # run --profile's: perf sampling
GUEST_BREAKDOWN = "docs/breakdown.md#inside-a-guest"
ANCHORS = (SESSION, WITHIN, BOOTS, MIXED, NOISE_PROFILES, PAIRED, CALIBRATE, NOISE_PROFILE_TABLE, VERIFY,
           VERIFY_HELD, SCALING, COUNTED, PLACEMENT, BREAKDOWN, PERMISSIONS, PROFILE, GUEST_BREAKDOWN)


def see(text, anchor):
    """A note and where its long story is: 'text (docs/compare.md#sessions)'."""
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


def one_session_a_side(what="verdict"):
    """One session a side, the unit left to us: no `what` (compare: verdict; model: CI)."""
    return see(f"no {what}: one session a side; the interval is this pair's", SESSION)


def what_gives_a_verdict(what="verdict"):
    return see(f"for a {what}: {FOR_A_VERDICT}", CALIBRATE)


def leaves_out_sessions(boot=True):
    """A CI from the rounds (or sub-runs) of one file a side: the drift between sessions is not in it."""
    return see("one file a side: the CI leaves out drift between sessions" + (" and boots" if boot else ""), WITHIN)


def boots_not_measured():
    return see("boot-to-boot not measured: one boot a side", BOOTS)


def one_side_replicated(student):
    return see("one side replicated: the single run is " + ("assumed to vary as those runs" if student else
                                                          "one observation"), MIXED)
