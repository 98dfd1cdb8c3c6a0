"""run --verify's loud lines: one per (op, stride, CPUs) that read a stale translation, on stderr after
the save, in run, show, compare and guest.  atsd prints the same sentences from C (csrc/atsd_verify.c):
the pure side words them again because it renders files where no compiled core is (a parity test holds
the two alike)."""
from .notes import hang


def stale_translation(stale, checks, op, stride, invalidators, checkers):
    """The loud line, one per (op, stride, CPUs) with a stale read; stride is its text ('64K').  atsd
    prints the same sentence (csrc/atsd_verify.c, held equal by a parity test).  One line even past
    WIDTH: it is grepped for, and stale_lines() wraps it for the terminal."""
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
