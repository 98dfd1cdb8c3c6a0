"""Result files carried out of a LAVA job in its log (docs/lab.md): the test definition
(lava/atsdbench.yaml) prints each one gzipped and base64-encoded between two marker lines,

    ATSDBENCH-RESULT-BEGIN NAME BYTES
    H4sIA... (base64 lines of the gzipped file)
    ATSDBENCH-RESULT-END NAME SHA256

and `atsdbench import --lava-log LOG` reads them back from the log as LAVA writes it (one YAML/JSON
record a line) or a plain console log, each checked against its size and digest (a serial line
drops and mangles bytes) and against the result schema."""
import base64
import binascii
import hashlib
import json
import os
import re
import zlib

from ..errors import UsageError

# at the start of a line: the shell's `set -x` trace of the echo ("+ echo ATSDBENCH-...") is no marker
BEGIN = re.compile(r"ATSDBENCH-RESULT-BEGIN ([A-Za-z0-9._+-]{1,200}) ([0-9]{1,12})$")
END = re.compile(r"ATSDBENCH-RESULT-END ([A-Za-z0-9._+-]{1,200}) ([0-9a-f]{64})$")
BASE64 = re.compile(r"[A-Za-z0-9+/=]+")


def _messages(text):
    """The log's lines as the device printed them: a LAVA log line's `msg`, or the line itself."""
    for line in text.splitlines():
        line = line.rstrip("\r")
        entry_text = line[2:] if line.startswith("- {") else line  # output.yaml's list, lava-run's stdout
        if entry_text.startswith("{") and '"msg"' in entry_text:
            try:
                entry = json.loads(entry_text)
            except ValueError:
                entry = None
            if isinstance(entry, dict):
                msg = entry.get("msg")
                if isinstance(msg, str):
                    yield from msg.replace("\r", "").split("\n")
                continue
        yield line


def damaged(name, why):
    return f"result {name} in the log is damaged ({why}): left out"


def extract(text):
    """([(name, bytes of the result file)], [why each damaged one was left out])."""
    found, problems, current = [], [], None

    def cut_off(name):
        problems.append(f"result {name}: its end marker is missing (the job was cut off): left out")

    for line in _messages(text):
        line = line.strip()
        begin, end = BEGIN.match(line), END.match(line)
        if begin:
            if current is not None:
                cut_off(current[0])
            current = (begin.group(1), int(begin.group(2)), [])
        elif end and current is not None:
            name, size, parts = current
            current = None
            try:  # no more than the marker says (a garbled or hostile log is no gzip bomb)
                inflate = zlib.decompressobj(31)
                raw = inflate.decompress(base64.b64decode("".join(parts), validate=True), size + 1)
            except (binascii.Error, OSError, EOFError, ValueError, zlib.error):
                problems.append(damaged(name, "not base64 of a gzip stream"))
                continue
            if end.group(1) != name or len(raw) != size or hashlib.sha256(raw).hexdigest() != end.group(2):
                problems.append(damaged(name, "its size or digest differs"))
                continue
            found.append((name, raw))
        elif current is not None and BASE64.fullmatch(line):
            current[2].append(line)
    if current is not None:
        cut_off(current[0])
    return found, problems


def read(path):
    """The result files in the LAVA log at path: ([(name, Result)], warnings); none is exit 2."""
    from . import results

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None
    found, warnings = extract(text)
    out = []
    for name, raw in found:
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            warnings.append(damaged(name, "not JSON"))
            continue
        try:
            out.append((name, results.from_dict(data, f"{path}: {name}")))
        except UsageError as e:
            warnings.append(str(e))
    if not out:
        raise UsageError(f"{path}: no whole atsdbench result between markers ({len(found)} found whole)")
    return out, warnings


def output_folder(output):
    """import --lava-log's -o DIR (default: here), made where missing."""
    folder = output or "."
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{folder}: {e.strerror}") from None
    return folder


def free_path(folder, name):
    """FOLDER/NAME.json, else NAME-2.json, NAME-3.json, ...: the first that no file there has."""
    stem = os.path.join(folder, name[:-5] if name.endswith(".json") else name)
    path, k = stem + ".json", 1
    while os.path.lexists(path):
        k += 1
        path = f"{stem}-{k}.json"
    return path
