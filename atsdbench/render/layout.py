"""Text tables at most render/notes.WIDTH columns: `fitted`, which run, show, compare, its counts and the
scaling tables share (its own module: render/tables and render/scaling both use it)."""
from tabulate import tabulate

from . import notes


def fitted(body, headers, tablefmt="simple", lead=1, groups=None, **options):
    """tabulate's table as text a commit message takes: columns two spaces apart (no padding beyond
    the widest cell), and where that is wider than notes.WIDTH, blocks of it one under another, each
    repeating the first `lead` columns (the stride; compare's base rate too) and holding whole
    `groups` (lists of column indexes: compare's columns of one side stay together; by default each
    column alone).  tablefmt "commit" is a commit message's table: the header and rows left-aligned,
    two spaces apart, no rule and no trailing spaces, cut the same way.  Other formats (markdown, csv)
    are never cut."""
    import tabulate as tab

    def one(columns):
        if tablefmt == "commit":
            rows = [[str(headers[i]) for i in columns]] + [[str(row[i]) for i in columns] for row in body]
            w = [max(len(r[j]) for r in rows) for j in range(len(columns))]
            return "\n".join("  ".join(c.ljust(x) for c, x in zip(r, w)).rstrip() for r in rows)
        saved, tab.MIN_PADDING = tab.MIN_PADDING, 0
        try:
            return tabulate([[row[i] for i in columns] for row in body], headers=[headers[i] for i in columns],
                            tablefmt=tablefmt, disable_numparse=True, **options)
        finally:
            tab.MIN_PADDING = saved

    if tablefmt not in ("simple", "commit"):
        return tabulate(body, headers=headers, tablefmt=tablefmt, disable_numparse=True, **options)
    widths = [max([len(str(h))] + [len(str(row[i])) for row in body]) for i, h in enumerate(headers)]

    def span(columns):
        return sum(widths[i] for i in columns) + 2 * (len(columns) - 1)

    groups = groups or [[i] for i in range(lead, len(headers))]
    if any(span(list(range(lead)) + g) > notes.WIDTH for g in groups):  # a group too wide alone: by column
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
