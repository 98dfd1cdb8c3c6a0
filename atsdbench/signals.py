"""SIGINT and SIGTERM: both end a run like Ctrl-C, and neither lands in the middle of anything.

Python runs a signal's handler between bytecodes, so an asynchronous KeyboardInterrupt can arrive
half-way through releasing a C object or assembling the result of a run.  So a run never takes one:
inside `held()` a signal is only recorded, and the run looks for it with `check()` at the points
where stopping is safe (between passes, between rounds, in `sleep`).  The C releases clear their
owner's handle before they free and block both signals while they run (csrc/atsd.c), so no
interrupt, even outside `held()`, can make one free twice.
"""
import os
import signal
import sys
import time

SIGNALS = (signal.SIGINT, signal.SIGTERM)

_depth = 0
_pending = []
_callers = {}  # what a signal does outside held(): the handler that was there before ours


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


_received = []  # every signal that reached _handler (a C extension may turn its interrupt into another error)


def _handler(signum, frame):
    _received.append(signum)
    if _depth:
        _pending.append(signum)
        return
    _deliver(signum, frame)


def _deliver(signum, frame=None):
    h = _callers.get(signum, signal.SIG_DFL)
    if callable(h):
        h(signum, frame)
    elif h != signal.SIG_IGN:  # the default action (SIGTERM's: end the process by the signal)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


_said = []


def say_interrupted():
    """The CLI's one line for an interrupt, said once however many signals came.  From here the
    process only finishes (a save, its exit with 130): later signals are ignored, so none can land
    where the interpreter has already put the default action back and end it by the signal."""
    if _main_thread():
        ignore()
    if not _said:
        _said.append(True)
        print("atsdbench: interrupted", file=sys.stderr)
        sys.stderr.flush()


def _excepthook(kind, value, tb, _previous=sys.excepthook):
    # A Ctrl-C while the CLI is still importing (or exiting) reaches no `except`: one line, exit 130.
    if issubclass(kind, KeyboardInterrupt):
        say_interrupted()
        try:
            sys.stdout.flush()  # what was written stays written (the round worker's reply)
        except (OSError, ValueError, AttributeError):
            pass
        os._exit(130)
    _previous(kind, value, tb)


def _unraisablehook(unraisable, _previous=sys.unraisablehook):
    # A Ctrl-C that lands in a callback Python cannot raise from (an import lock's weakref callback,
    # a __del__) would be printed as "Exception ignored" and lost: it is an interrupt all the same.
    # Inside held() a signal is only recorded, so this is start-up or a command with nothing to save.
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        _excepthook(unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback)
    _previous(unraisable)


def ignore():
    """Once the CLI's work is done and its exit status decided, a signal changes nothing."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)


def install():
    """For the CLI and the round worker, first thing: SIGTERM is Ctrl-C for the whole process, and
    an interrupt that no `except` catches exits 130 with one line.  The hooks go in before the
    handlers, so no interrupt can find ours without them."""
    sys.excepthook = _excepthook
    sys.unraisablehook = _unraisablehook
    for s in SIGNALS:
        _callers[s] = _raise_interrupt
        signal.signal(s, _handler)


def end(code):
    """How the CLI and the round worker exit, once `code` is decided: signals are ignored from here,
    and where one came at all the process leaves by os._exit after flushing its streams.

    Why: CPython (3.11) remembers a KeyboardInterrupt raised inside any eval or exec of a string,
    even one that was caught (namedtuple builds its __new__ that way, so a Ctrl-C while a module
    imports is enough), and where the interpreter ends through its main (`python -m`, as the worker
    and the tests run, always does) it kills itself by SIGINT instead of returning the status:
    exit -2 after "atsdbench: interrupted"."""
    ignore()
    if _received:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):  # a reader that left, or no stream at all
                pass
        os._exit(code)
    sys.exit(code)


def received():
    """Has a SIGINT or SIGTERM reached this process at all?"""
    return bool(_received)


def check():
    """Inside `held()`: raises KeyboardInterrupt here if a signal came since the last check."""
    if _pending:
        del _pending[:]
        raise KeyboardInterrupt


def pending():
    """Inside `held()`: has a signal come since the last check (without consuming it)?"""
    return bool(_pending)


def pending_signals():
    """Inside `held()`: the signals recorded since the last check, in order (not consumed)."""
    return list(_pending)


def take():
    """Consumes the signals recorded so far; True if there was one."""
    had = bool(_pending)
    del _pending[:]
    return had


def sleep(seconds, step=0.05):
    """time.sleep that a recorded signal ends (check() raises), for waits inside `held()`."""
    end = time.monotonic() + seconds
    while True:
        check()
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(step, left))


class held:
    """`with held():` records SIGINT and SIGTERM instead of acting on them (re-entrant); a signal
    that no check() took is acted on when the outermost one ends.

    Entering and leaving change one counter, so a signal between any two bytecodes finds a
    consistent state.  Where install() did not run (the Python API), the handler that was in place
    is kept as what a signal does outside held() (ours calls it), and ours stays: putting the old
    one back would open a moment where a signal lands half-way through the restore."""

    def __enter__(self):
        global _depth
        if _main_thread():
            for s in SIGNALS:
                h = signal.getsignal(s)
                if h is not _handler:
                    _callers[s] = h if h is not None else signal.SIG_DFL
                    signal.signal(s, _handler)
        _depth += 1
        return self

    def __exit__(self, kind, value, tb):
        global _depth
        _depth -= 1
        if _depth or not _pending:
            return False
        signums = sorted(set(_pending))
        del _pending[:]
        if kind is None:  # else an error is on its way out already
            for s in signums:
                _deliver(s)
        return False


def _main_thread():
    # No import here: the excepthook asks this for a Ctrl-C that came while the CLI was importing, and
    # a second signal landing inside an import of threading would be a traceback from the hook itself.
    # No threading module loaded yet means no thread started through it: this is the main one.
    threading = sys.modules.get("threading")
    return threading is None or threading.current_thread() is threading.main_thread()
