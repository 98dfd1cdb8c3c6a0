"""`atsdbench campaign install DIR`: a systemd unit that runs `campaign step` once at each boot (after
the system has settled) until the plan is done, when the step disables it."""
import hashlib
import os
import shlex
import subprocess
import sys

from ..errors import UsageError

UNIT_DIR = "/etc/systemd/system"
MAX_SETTLE = 3600  # an hour: past it a boot's step waits longer than any boot settles


def unit_name(directory):
    digest = hashlib.sha256(os.path.abspath(directory).encode()).hexdigest()[:8]
    return f"atsdbench-campaign-{digest}.service"


def _word(word, command=False, quote=True):
    """One word of the unit: systemd expands %-specifiers in every setting used here and $VARIABLES in
    ExecStart, so both are doubled; its quoting has no shell-style concatenation, so a word that would
    need one (a quote or a backslash in it) or a control character is refused."""
    if any(c in word for c in "'\"\\") or any(ord(c) < 32 or ord(c) == 127 for c in word):
        raise UsageError(f"campaign install: a unit cannot hold {word!r} (quote, backslash, control)")
    word = (shlex.quote(word) if quote else word).replace("%", "%%")
    return word.replace("$", "$$") if command else word


def check_settle(settle):
    """--settle: whole seconds from 0 to MAX_SETTLE (sleep -5 would fail the unit at every boot)."""
    if isinstance(settle, bool) or not isinstance(settle, int) or not 0 <= settle <= MAX_SETTLE:
        raise UsageError(f"campaign install: --settle must be 0 to {MAX_SETTLE} seconds (got {settle!r})")
    return settle


def unit_text(directory, name, python=None, settle=60):
    """The unit: oneshot, after multi-user.target (the boot's own work done), `settle` seconds of sleep
    first (a fresh boot's services still start and stop), then the step, which disables `name` at the end."""
    check_settle(settle)
    python = python or sys.executable
    where = os.path.abspath(directory)
    step = " ".join(_word(w, command=True) for w in (python, "-m", "atsdbench", "campaign", "step", "--disable",
                                                      name, where))
    return (f"[Unit]\nDescription=atsdbench campaign in {_word(where, quote=False)}\n"
            "After=multi-user.target local-fs.target\nRequiresMountsFor=" + _word(where)
            + "\n\n[Service]\nType=oneshot\n"
            + (f"ExecStartPre=/bin/sleep {settle}\n" if settle else "")
            + f"ExecStart={step}\nStandardOutput=journal+console\nTimeoutStartSec=infinity\n\n"
            "[Install]\nWantedBy=multi-user.target\n")


def install(directory, unit_dir=UNIT_DIR, run=subprocess.run, settle=60, python=None):
    """Write the unit (atomically), reload systemd and enable it; returns (unit path, name).  Every
    option is checked before anything is written; where a later step fails, what was written goes
    (the unit file as it was before, or none) and systemd is reloaded again, so a failed install
    leaves no unit that runs at the next boot."""
    from ..data import files

    name = unit_name(directory)
    path = os.path.join(unit_dir, name)
    body = unit_text(directory, name, python=python, settle=settle)
    try:
        with open(path, encoding="utf-8") as f:
            before = f.read()
    except OSError:
        before = None
    try:
        files.write_atomically(path, lambda f: f.write(body))
    except OSError as e:
        raise UsageError(f"campaign install: cannot write {path}: {e.strerror} (as root?)") from None
    try:
        for cmd in (["systemctl", "daemon-reload"], ["systemctl", "enable", name]):
            try:
                p = run(cmd, capture_output=True, text=True)
            except FileNotFoundError:
                raise UsageError("campaign install: no systemctl here: run campaign step DIR at each boot (cron "
                                 "@reboot)") from None
            if p.returncode:
                why = (p.stderr or "").strip().splitlines()
                raise UsageError(f"campaign install: {' '.join(cmd)} failed: {why[-1] if why else p.returncode}"
                                 f" ({path} {'put back' if before is not None else 'removed'})")
    except BaseException:
        _undo(path, before, run)
        raise
    return path, name


def _undo(path, before, run):
    from ..data import files

    try:
        if before is None:
            os.unlink(path)
        else:
            files.write_atomically(path, lambda f: f.write(before))
    except OSError:
        pass
    try:
        run(["systemctl", "daemon-reload"], capture_output=True, text=True)
    except OSError:
        pass
