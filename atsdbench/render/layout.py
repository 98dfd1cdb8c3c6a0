"""Text tables at most render/notes.WIDTH columns: `fitted`, which run, show, compare, its counts and the
scaling tables share (its own module: render/tables and render/scaling both use it)."""
from tabulate import tabulate

from . import notes


# A header's lines where a table cut by column names each column's side (fitted's `names`): a label of
# sides.LABEL_WIDTH characters over two lines, so that the lead and a column fit beside each other.
NAMED_WIDTH = 30


def _named(headers, lead, groups, names):
    """The headers of a table cut by column, each naming its side: the group's name over the
    column's own header (kept as is where it names the side already), every header wrapped to
    NAMED_WIDTH and bottom-aligned, so the statistic is the last line of every column."""
    import textwrap

    def wrap(text):
        return textwrap.wrap(text, NAMED_WIDTH, break_on_hyphens=True) or [""]

    out = list(headers)
    for group, name in zip(groups, names):
        for i in group:
            out[i] = wrap(headers[i]) if str(name) in str(headers[i]) else wrap(str(name)) + wrap(headers[i])
    for i in range(lead):
        out[i] = wrap(headers[i])
    height = max(len(h) for h in out)
    return ["\n".join([""] * (height - len(h)) + h) for h in out]


def fitted(body, headers, tablefmt="simple", lead=1, groups=None, names=None, **options):
    """tabulate's table as text a commit message takes: columns two spaces apart (no padding beyond
    the widest cell), and where that is wider than notes.WIDTH, blocks of it one under another, each
    repeating the first `lead` columns (the stride; compare's base rate too) and holding whole
    `groups` (lists of column indexes: compare's columns of one side stay together; by default each
    column alone).  tablefmt "commit" is a commit message's table: the header and rows left-aligned,
    two spaces apart, no rule and no trailing spaces, cut the same way.  Other formats (markdown, csv)
    are never cut.  `names`, one a group (compare's sides): where a group must be cut to fit, every
    column's header names its side (_named), so no block holds a column of no side named."""
    import tabulate as tab

    def one(columns):
        tops = [str(headers[i]).split("\n") for i in columns]
        while len(tops[0]) > 1 and not any(t[0] for t in tops):  # a block's headers as high as its own
            tops = [t[1:] for t in tops]
        if tablefmt == "commit":
            rows = [list(line) for line in zip(*tops)] + [[str(row[i]) for i in columns] for row in body]
            w = [max(len(r[j]) for r in rows) for j in range(len(columns))]
            return "\n".join("  ".join(c.ljust(x) for c, x in zip(r, w)).rstrip() for r in rows)
        saved, tab.MIN_PADDING = tab.MIN_PADDING, 0
        try:
            return tabulate([[row[i] for i in columns] for row in body], headers=["\n".join(t) for t in tops],
                            tablefmt=tablefmt, disable_numparse=True, **options)
        finally:
            tab.MIN_PADDING = saved

    if tablefmt not in ("simple", "commit"):
        return tabulate(body, headers=headers, tablefmt=tablefmt, disable_numparse=True, **options)
    def measure():
        return [max([len(x) for x in str(h).split("\n")] + [len(str(row[i])) for row in body])
                for i, h in enumerate(headers)]

    widths = measure()

    def span(columns):
        return sum(widths[i] for i in columns) + 2 * (len(columns) - 1)

    groups = groups or [[i] for i in range(lead, len(headers))]
    if any(span(list(range(lead)) + g) > notes.WIDTH for g in groups):  # a group too wide alone: by column
        if names is not None:
            headers = _named(headers, lead, groups, names)
            widths = measure()
        groups = [[i] for g in groups for i in g]

    def pack(limit):
        blocks, current = [], list(range(lead))
        for group in groups:
            if len(current) > lead and span(current + group) > limit:
                blocks.append(current)
                current = list(range(lead))
            current = current + group
        return blocks + [current]

    blocks = pack(notes.WIDTH)
    # as few blocks as fit, and of even widths: not a last block of one column
    limit = next(w for w in range(span(range(lead)), notes.WIDTH + 1) if len(pack(w)) <= len(blocks))
    return "\n\n".join(one(columns) for columns in pack(limit))
