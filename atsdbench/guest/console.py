"""The console of an `atsdbench guest` boot, as text: what its /init (guest/init.sh) printed.

"@@ key value" lines and "@@ begin NAME attrs" .. "@@ end NAME attrs" blocks, between kernel messages,
with what comes home from them: each run's atsd output, table and trace, a command's output and files,
and why a guest that never reached /init did not (a hang, the kernel's own words).  Pure: it reads
text only (scripts/power_verdict.py reads consoles with it too).
"""
import base64
import gzip
import re

from ..errors import UsageError


def parse_console(text):
    """Values ("@@ key value"), blocks ("@@ begin name attrs" .. "@@ end name attrs") and atsd errors,
    from a console log (kernel messages and \\r between them are ignored)."""
    values, blocks, errors, block = {}, [], [], None
    for raw in text.replace("\r", "").split("\n"):
        at = raw.find("@@ ")
        line = raw[at + 3:] if at >= 0 else None
        if block is not None:
            if line is not None and line.startswith(f"end {block['name']}"):
                words = line.split(None, 2)
                block["end"] = attrs(words[2] if len(words) > 2 else "")
                blocks.append(block)
                block = None
            else:
                block["lines"].append(raw)
            continue
        if line is None:
            continue
        key, _, rest = line.partition(" ")
        if key == "begin":
            name, _, rest = rest.partition(" ")
            block = {"name": name, "attrs": attrs(rest), "lines": [], "end": None}
        elif key == "atsd-error":
            errors.append(rest)
        elif key == "cpuinfo":
            k, _, v = rest.partition(":")
            values[k.strip()] = v.strip()
        else:
            values[key] = rest.strip()
    return values, blocks, errors  # a block cut off before its end line is left out


def attrs(text):
    return dict(part.split("=", 1) for part in text.split() if "=" in part)


def tail(text, lines=8):
    """The console's last lines, for a guest that hung or failed."""
    kept = [line.rstrip() for line in text.replace("\r", "").split("\n") if line.strip()]
    return kept[-lines:]


def _end(text):
    return "; console tail:\n  " + "\n  ".join(tail(text) or ["(nothing)"])


def _hung(timeout, rest):
    return UsageError(f"the guest hung: killed after {timeout:g} s{rest}")


def reached_init(text, qemu_rc=0, timeout=None, qemu_messages=""):
    """The guest's values ("@@ key value") once its /init ran, or UsageError: it hung before, or the kernel
    never got there (qemu's own last message with it, and the kernel's line where it could not unpack
    the initramfs)."""
    values, _, _ = parse_console(text)
    if "guest" in values:
        return values
    said = kernel_said(text)
    said = f"; the kernel said {said!r}" if said else ""
    if qemu_rc is None:
        raise _hung(timeout, said + _end(text))
    qemu = (tail(qemu_messages, 1) or [""])[0]
    qemu = f": {qemu}" if qemu else ""
    raise UsageError(f"the kernel did not reach /init (qemu exit {qemu_rc}{qemu})" + said + _end(text))


# The kernel's own words for an initramfs it could not unpack (init/initramfs.c prints them at
# KERN_EMERG, so `quiet` keeps them); the panic that follows, which the tail shows, does not say why.
UNPACKING_FAILED = "Initramfs unpacking failed"


def kernel_said(text):
    """The console's line saying why the kernel could not start /init, or None."""
    at = text.find(UNPACKING_FAILED)
    return None if at < 0 else text[at:].split("\n", 1)[0].replace("\r", "").strip()


def _segment(text, run):
    """The console lines of one run: from its "@@ running run=K" to the next "@@ running" or the kernel log
    (a console without the markers, from an older /init, is one run)."""
    lines = text.replace("\r", "").split("\n")
    marks = [i for i, line in enumerate(lines) if "@@ running" in line or "@@ begin kernel-log" in line]
    start = next((i for i in marks if lines[i].split("@@ running", 1)[-1].split() == [f"run={run}"]), None)
    if start is None:
        return text if run == 1 and not any("@@ running run=" in line for line in lines) else ""
    end = next((i for i in marks if i > start), len(lines))
    return "\n".join(lines[start:end])


def unpack(block):
    """The bytes of a gzip+base64 block, or None where they came back damaged."""
    try:
        return gzip.decompress(base64.b64decode("".join(block["lines"])))
    except (ValueError, OSError, EOFError):
        return None


def run_output(text, run=1, qemu_rc=0, timeout=None):
    """Run `run`'s atsd output, its table and its trace, from one guest's console: {"output", "table",
    "trace": None (not traced) or {"text" (None: it came back damaged), "events" (those the kernel has),
    "lost"}}, or UsageError saying in one line what went wrong (the console's tail after it)."""
    segment = _segment(text, run)
    _, blocks, errors = parse_console(segment)
    found = [b for b in blocks if b["name"] == "atsd"]
    if not found or found[0]["end"] is None:
        if qemu_rc is None:
            raise _hung(timeout, _end(text))
        raise UsageError("the guest stopped before atsd's output was complete" + _end(segment or text))
    b = found[0]
    if b["end"].get("rc") not in ("0", "3"):  # 3: atsd --verify found a stale translation, after its output
        why = errors[0] if errors else f"exit {b['end'].get('rc')}"
        raise UsageError(f"atsd in the guest failed: {why}" + _end(segment))
    table = next((bl["lines"] for bl in blocks if bl["name"] == "table"), [])
    trace = None
    if "tracepoints" in b["attrs"]:
        t = next((bl for bl in blocks if bl["name"] == "trace"), None)
        data = unpack(t) if t is not None and t["end"] is not None else None
        lost = (t["end"] or {}).get("overrun", "0") if t is not None else "0"
        trace = {"text": None if data is None else data.decode("utf-8", "replace"),
                 "lost": int(lost) if lost.isdigit() else 0,
                 "events": [e for e in t["attrs"].get("events", "").split(",") if e] if t is not None else []}
    return {"output": "\n".join(b["lines"]) + "\n", "table": "\n".join(table), "trace": trace}


def atsd_output(text, qemu_rc=0, timeout=None, qemu_messages=""):
    """(values, atsd's output text, its table) of the first run of one guest's console (UsageError as
    reached_init and run_output say)."""
    values = reached_init(text, qemu_rc, timeout, qemu_messages)
    run = run_output(text, 1, qemu_rc, timeout)
    return values, run["output"], run["table"]


SAFE_PATH = re.compile(r"[A-Za-z0-9_+.-]+(/[A-Za-z0-9_+.-]+)*")  # INIT sends no other names


def command_output(text, qemu_rc=0, timeout=None):
    """The command's exit status, its output, the files it left in /out ({path: bytes}) and the ones that
    did not come back (names with other characters, damaged); UsageError where it did not finish."""
    _, blocks, _ = parse_console(text)
    found = [b for b in blocks if b["name"] == "command"]
    if not found:
        if qemu_rc is None:
            raise _hung(timeout, " before the command finished" + _end(text))
        raise UsageError("the guest stopped before the command finished" + _end(text))
    files = {}
    left = [raw.split("@@ skipped-file ", 1)[1].strip() for raw in text.replace("\r", "").split("\n")
            if "@@ skipped-file " in raw]  # names the markers cannot carry
    for b in blocks:
        if b["name"] != "file":
            continue
        path = b["attrs"].get("path", "")
        data = unpack(b) if b["end"] is not None else None
        if not SAFE_PATH.fullmatch(path) or ".." in path.split("/") or data is None:
            left.append(path or "?")
        else:
            files[path] = data
    if qemu_rc is None or "done" not in parse_console(text)[0]:
        left.append("(the guest stopped before every file came back)")
    return int(found[0]["end"].get("rc", "1")), "\n".join(found[0]["lines"]) + "\n", files, left
