"""Formatting every command shares on the terminal: the column limit and warnings wrapped to it.  It imports
nothing of the package, so any room may print through it."""
import sys
import textwrap

WIDTH = 100  # a commit message, an 80-column terminal's wrapped line, a review's quoted text: all paste it
INDENT = 2   # a warning's continuation lines, under its first word


def wrapped(line, indent=INDENT, width=WIDTH):
    """A long line as lines of at most `width` columns, broken at spaces, the rest indented by `indent`
    (a path or URL longer than the width stays whole on its own line)."""
    if len(line) <= width:
        return line
    return "\n".join(textwrap.wrap(line, width, subsequent_indent=" " * indent, break_on_hyphens=False,
                                   break_long_words=False))


def warn(message, stream=None):
    """`atsdbench: warning: MESSAGE` on stderr, wrapped to WIDTH with a hanging indent."""
    print(wrapped(f"atsdbench: warning: {message}"), file=stream or sys.stderr)
