"""What every command shares on the terminal: the column limit, warnings wrapped to it, and the progress
bar of a run.  It imports nothing of the package at load, so any room may print through it."""
import os
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


def wrote(path, rest=""):
    """`wrote PATH` and what follows it (" (...)", ": ..."): the path whole beside the word (pasteable
    whatever its length), the rest on the same line where it fits, else wrapped under it."""
    head = f"wrote {path}"
    if not rest.strip():
        return head
    if len(head) + len(rest) <= WIDTH:
        return head + rest
    if rest.startswith(":"):
        head, rest = head + ":", rest[1:]
    return head + "\n" + wrapped(" " * INDENT + rest.strip(), indent=INDENT)


def cause(error, room):
    """A wrapped library's error (cffi's, ctypes', a dlopen's) cut to its cause, for one line with
    `room` columns left: its first line and sentence, then its leading "where: " parts dropped while
    longer than room (the last part is the cause), cut to room at worst."""
    lines = str(error).strip().splitlines()
    text = lines[0].split(".  ")[0].rstrip(".") if lines else type(error).__name__
    parts = text.split(": ")
    while len(parts) > 1 and len(": ".join(parts)) > room:
        parts.pop(0)
    text = ": ".join(parts)
    return text if len(text) <= room else text[:max(room, 4) - 3] + "..."


def warn(message, stream=None):
    """`atsdbench: warning: MESSAGE` on stderr, wrapped to WIDTH with a hanging indent."""
    print(wrapped(f"atsdbench: warning: {message}"), file=stream or sys.stderr)


# Consoles a board's or a VM's serial line logs: a carriage return there is no redraw but one endless
# line in the lab's log (LAVA keeps every byte of it)
SERIAL = ("/dev/ttyS", "/dev/ttyAMA", "/dev/ttyUSB", "/dev/ttymxc", "/dev/hvc", "/dev/console", "/dev/ttySIF")


def shows_progress(when="auto", stream=None, environ=None):
    """--progress: always, never, or auto: where stderr is a terminal a person watches: not TERM=dumb,
    not a serial console (SERIAL), not inside LAVA's test shell (it exports LAVA_RESULT_DIR)."""
    if when in ("always", "never"):
        return when == "always"
    if when not in (None, "auto"):
        from .errors import UsageError

        raise UsageError(f"--progress must be never, auto or always (got {when!r})")
    stream = stream or sys.stderr
    environ = os.environ if environ is None else environ
    try:
        if not stream.isatty():
            return False
        name = os.ttyname(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return environ.get("TERM") != "dumb" and "LAVA_RESULT_DIR" not in environ and not name.startswith(SERIAL)


def progress_option(args):
    """run's and calibrate's --progress, refused now where it is none of the three (before measuring)."""
    when = getattr(args, "progress", None)
    shows_progress(when)
    return when


def progress_bar(total, when="auto"):
    """A one-line progress bar on stderr where shows_progress says so.  An adaptive run's total is
    unknown: it shows passes so far.  Waits between spread rounds are shown as such."""
    if not shows_progress(when):
        return None
    done, shown = [0], [0]

    def show(text):
        """The line rewritten in place, padded over the whole of what it replaces (a shorter line
        leaves no residue of a longer one)."""
        sys.stderr.write(f"\r{text}{' ' * (shown[0] - len(text))}\r{text}")
        shown[0] = len(text)

    def tick(event):
        if "adaptive" in event:  # after each measured round of --until: round k, time, worst half-width
            show(f"{done[0]} passes, {event['adaptive']}")
            sys.stderr.flush()
            return
        if "wait" in event:
            show(f"waiting {event['wait']:.1f} s before {event['before']}")
            sys.stderr.flush()
            return
        done[0] += 1
        width = 30
        if total:
            filled = width * min(done[0], total) // total
            show(f"[{'#' * filled}{' ' * (width - filled)}] {done[0]}/{total} passes")
        else:
            show(f"{done[0]} passes, round {event.get('round', 0) + 1}")
        if total and done[0] == total:
            sys.stderr.write("\n")
            shown[0] = 0
        sys.stderr.flush()

    def end():
        """After the run: where the bar did not fill (an adaptive or interrupted run) its line is still
        open, and the table would start on it."""
        if not (total and done[0] == total):
            sys.stderr.write("\n")
            sys.stderr.flush()
    tick.end = end
    return tick
