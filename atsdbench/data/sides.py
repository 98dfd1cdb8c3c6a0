"""The sides of a comparison as compare, model and plot are given them, and the labels they print.

A side is one result file, or replicate runs of one thing: 'a.json,b.json' on the command line, a
list in Python; a Result stands for itself.  load() reads them; analysis takes the Results."""
import os

from . import results
from ..errors import UsageError
from .schema import cut


def count(item):
    """How many files a side names, without reading any ('a.json,b.json': 2)."""
    if isinstance(item, str):
        return len(item.split(","))
    return len(item) if isinstance(item, (list, tuple)) else 1


def names(item):
    """One side's files as given: a Result, a path, a list of them, or 'a.json,b.json'."""
    if isinstance(item, str) and "," in item:
        parts = item.split(",")
        if not any(parts):
            raise UsageError(f"{item!r} names no file (a.json,b.json = replicate runs of one side)")
        if not all(parts):
            # Skipping it would make a side of fewer runs than typed, without a word.
            raise UsageError(f"{cut(item)} has an empty file name (name {parts.index('') + 1} of {len(parts)}: a "
                             "stray comma?)")
        return parts
    return list(item) if isinstance(item, (list, tuple)) else [item]


def replicate_hint(items):
    """Where the baseline's name and other sides' differ only in their digits (a1.json a2.json b1.json
    b2.json, what a shell glob gives), those files likely are one side's replicate runs made several
    sides, each against the baseline: the line that shows the a1.json,a2.json syntax, else []."""
    import re

    if len(items) < 3 or not all(isinstance(x, str) and "," not in x for x in items):
        return []
    groups = {}
    for name in items:
        groups.setdefault(re.sub(r"[0-9]+", "#", name), []).append(name)
    base = groups[re.sub(r"[0-9]+", "#", items[0])]
    if len(base) < 2:
        return []
    words = " ".join(",".join(g) if len(g) < 4 else f"{g[0]},...,{g[-1]}" for g in groups.values())
    return [f"{len(items)} files make {len(items)} sides, each against {items[0]}; replicate runs of one side "
            f"are one word joined by commas: compare {shown_label(words)}"]


def files(item):
    """One side's files, each a Result (read where it is a path)."""
    return [x if isinstance(x, results.Result) else results.load(x) for x in names(item)]


def load(items):
    """Every side: a list of Results each, in the order given."""
    return [files(item) for item in items]


# How much of a label compare, model and plot print: a 10 MB --label printed whole, six times by
# compare, is 1.2 GB of output.  The result file keeps it whole, and so do compare's json rows
# (whole_labels).
LABEL_WIDTH = 60


def escaped(text):
    """Text with its control and other unprintable characters escaped as Python writes them (a
    newline as \\n, an escape sequence's ESC as \\x1b): a label that would break a table's row or
    move a terminal's cursor is shown, never obeyed."""
    if text.isprintable():
        return text
    # a byte that is not UTF-8 (a surrogate escape of it) is printed as the byte it was
    return "".join(c if c.isprintable() or "\udc80" <= c <= "\udcff" else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def shown_label(text):
    """A label escaped (escaped) and cut to LABEL_WIDTH characters, the cut marked with an ellipsis."""
    text = escaped(str(text))
    return text if len(text) <= LABEL_WIDTH else text[:LABEL_WIDTH - 3] + "..."


def choose_labels(groups, labels=None, whole=None):
    """The user's labels, else each side's label (its --label or kernel), else file names when those repeat;
    each cut to LABEL_WIDTH (shown_label).  `whole`, a dict, gets {label as cut: label as given}."""
    if labels is not None:
        if len(labels) != len(groups):
            raise UsageError(f"--labels gives {len(labels)} labels for {len(groups)} files")
        full = list(labels)
    else:
        full = [g[0].label if isinstance(g, list) else g.label for g in groups]
    if labels is None and len(set(map(shown_label, full))) < len(full):
        full = short_names(groups) or [_joined_paths(g) if isinstance(g, list) else (g.path or f"file {i + 1}")
                                       for i, g in enumerate(groups)]
    shown = [shown_label(x) for x in full]
    if labels is not None:
        distinct(shown)
    if whole is not None:
        whole.update(zip(shown, full))
    return shown


def distinct(labels):
    """The labels given, refused where two are the same (as shown): the renderers find each side's rows,
    ministat's pairs and compare --by threads' thread counts by label."""
    seen = set()
    for label in labels:
        if label in seen:
            raise UsageError(f"--labels: {cut(label)} names two sides; give each its own")
        seen.add(label)
    return labels


def _joined_paths(group):
    return ",".join(dict.fromkeys(r.path or "?" for r in group))  # a --runs file once, not once per sub-run


SEPARATORS = "-_."


def _cuts_at(text, i):
    """Whether a name may be cut before text[i]: after a separator, not inside a version (6.12)."""
    if text[i - 1] not in SEPARATORS:
        return False
    return not (text[i - 1] == "." and i >= 2 and text[i - 2].isdigit() and i < len(text) and text[i].isdigit())


def common_cut(stems):
    """How many leading and trailing characters every stem shares, backed off to a separator (-, _, .)
    so a cut never splits a word or a number: atsdbench-host-6.12-T1 and -T2 keep T1 and T2, and
    -6.12.0- against -6.13.0- keeps 6.12.0 and 6.13.0 whole."""
    if len(set(stems)) < 2:
        return 0, 0
    head = len(os.path.commonprefix(stems))
    while head and not _cuts_at(stems[0], head):
        head -= 1
    tails = [x[head:][::-1] for x in stems]
    tail = len(os.path.commonprefix(tails))
    while tail and not _cuts_at(tails[0], tail):
        tail -= 1
    return head, tail


def short_names(groups):
    """Each side named by its files as briefly as they stay apart: the directory and .json dropped, the
    part every file's name shares cut (common_cut), a side of several files as its first..last
    (a1..a3); None where two sides would read the same."""
    paths = [list(dict.fromkeys(r.path or "?" for r in g)) if isinstance(g, list) else [g.path or "?"]
             for g in groups]
    stems = [[os.path.basename(f)[:-5] if f.endswith(".json") else os.path.basename(f) for f in fs]
             for fs in paths]
    flat = [x for fs in stems for x in fs]
    head, tail = common_cut(flat)
    cut_stems = [[x[head:len(x) - tail] for x in fs] for fs in stems]
    if any(not x for fs in cut_stems for x in fs):
        cut_stems = stems
    shown = [fs[0] if len(fs) == 1 else f"{fs[0]}..{fs[-1]}" for fs in cut_stems]
    return shown if len(set(shown)) == len(shown) else None


def fleet_sides(directory):
    """compare FLEET: (the fleet's side names, {board: [its paths per side]} of every board that ran each
    side, {board: [the sides it ran]} of the boards that lack one), boards in the manifest's order."""
    from . import fleet

    data = fleet.load(directory)
    names = data["sides"]
    complete, one_sided = {}, {}
    for board, found in fleet.by_board(directory, data).items():
        if all(found.get(side) for side in names):
            complete[board] = [found[side] for side in names]
        else:
            one_sided[board] = [side for side in names if found.get(side)]
    return names, complete, one_sided
