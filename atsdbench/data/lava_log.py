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
import tempfile
import zlib

from . import inputs
from ..errors import UsageError

# at the start of a line: the shell's `set -x` trace of the echo ("+ echo ATSDBENCH-...") is no marker
BEGIN = re.compile(r"ATSDBENCH-RESULT-BEGIN ([A-Za-z0-9._+-]{1,200}) ([0-9]{1,12})$")
END = re.compile(r"ATSDBENCH-RESULT-END ([A-Za-z0-9._+-]{1,200}) ([0-9a-f]{64})$")
BASE64 = re.compile(r"[A-Za-z0-9+/=]+")
NAME_CHARS = re.compile(r"[A-Za-z0-9._+-]+")
MAX_NAME = 200


def _fuzzy(word):
    """The marker word, or it with one byte mangled (a serial line's damage)."""
    return re.compile("|".join(re.escape(word[:i]) + "." + re.escape(word[i + 1:]) for i in range(len(word))))


MARKERS = {"begin": ("ATSDBENCH-RESULT-BEGIN", _fuzzy("ATSDBENCH-RESULT-BEGIN")),
           "end": ("ATSDBENCH-RESULT-END", _fuzzy("ATSDBENCH-RESULT-END"))}

# The largest result file a block may inflate to, whatever its begin marker claims (a gzip bomb is
# refused at this size): the largest file any reader takes (data/inputs.py).
MAX_RESULT = inputs.MAX_INPUT


def _messages(line):
    """A log line as the device printed it: a LAVA log line's `msg` (its lines), or the line itself."""
    line = line.rstrip("\r")
    entry_text = line[2:] if line.startswith("- {") else line  # output.yaml's list, lava-run's stdout
    if entry_text.startswith("{") and '"msg"' in entry_text:
        try:
            entry = json.loads(entry_text)
        except (ValueError, RecursionError):
            entry = None
        if isinstance(entry, dict):
            msg = entry.get("msg")
            if isinstance(msg, str):
                return msg.replace("\r", "").split("\n")
            return []
    return [line]


def shown(name):
    """A name from the log as a message shows it: control characters escaped, at most 40 columns."""
    text = name.encode("unicode_escape").decode("ascii") if not name.isprintable() else name
    return text if len(text) <= 40 else text[:37] + "..."


def left_out(name, why):
    return f"result {shown(name)} in the log is left out: {why}"


def damaged(name, why):
    return left_out(name, f"damaged ({why})")


def _marker(line, kind):
    """(where, the marker as printed) of a begin or end marker in the line, exact or with one byte
    mangled, or None; the shell's `set -x` trace of the echo is none."""
    word, fuzzy = MARKERS[kind]
    at = line.find(word)
    found = (at, word) if at >= 0 else None
    if found is None and (word[:len(word) // 2] in line or word[len(word) // 2:] in line):
        m = fuzzy.search(line)
        found = (m.start(), m.group(0)) if m else None
    if found is None or line[:found[0]].rstrip().endswith(("echo", '"', "'")):
        return None
    return found


def _name_problem(name):
    if len(name) > MAX_NAME:
        return f"its name is over {MAX_NAME} characters"
    if " " in name:
        return "its name holds a space"
    bad = next((c for c in name if not NAME_CHARS.fullmatch(c)), None)
    if bad is not None:
        return f"its name holds {bad!r}"
    if name.startswith("."):
        return "its name begins with '.' (a hidden file, or one of atsdbench's own)"
    return None


def _parse_marker(line, kind):
    """(name or None, the second field, why it is damaged or None) of a line holding a marker."""
    at, printed = _marker(line, kind)
    word = MARKERS[kind][0]
    rest = line[at + len(printed):]
    name, _, field = rest[1:].rpartition(" ")
    if not rest.startswith(" ") or not name:
        name, field = None, None
    problems = []
    if at > 0:
        problems.append("serial noise before its marker")
    if printed != word:
        problems.append(f"a mangled byte in its marker ({shown(printed)})")
    if name is None:
        problems.append("serial noise glued to its marker" if rest and not rest.startswith(" ")
                        else "no name and " + ("size" if kind == "begin" else "digest") + " after its marker")
        return None, None, "; ".join(problems)
    named = _name_problem(name)
    if named:
        problems.append(named)
    if kind == "begin":
        digits = re.match(r"[0-9]*", field).group(0)
        if not digits:
            problems.append(f"its size {shown(field)} is not a number")
        elif digits != field:
            problems.append("serial noise after its size")
        elif len(digits) > 12:
            problems.append("its size has over 12 digits")
    else:
        hexed = re.match(r"[0-9a-f]*", field).group(0)
        if len(hexed) >= 64 and hexed != field or len(hexed) > 64:
            problems.append("serial noise after its digest")
        elif hexed != field or len(field) != 64:
            problems.append("its digest is not 64 hex digits")
    return name, field, "; ".join(problems) or None


class _Block:
    """One result between its markers, checked as it is read: base64 decoded and inflated a line at
    a time into an unnamed temporary file, its size capped (MAX_RESULT, and what the begin marker
    claims) and its digest taken on the way."""

    def __init__(self, name, size, folder, problem=None):
        self.name, self.size, self.problem = name, size, problem
        self.rest, self.got, self.digest = "", 0, hashlib.sha256()
        self.file = self.inflate = None
        if problem is None and size > MAX_RESULT:
            self.problem = f"it claims {size} bytes, over the {MAX_RESULT >> 20} MiB any result file may have"
        if self.problem is None:
            self.inflate = zlib.decompressobj(31)
            self.folder = folder or tempfile.gettempdir()
            with self._writing():
                self.file = tempfile.TemporaryFile(dir=folder)

    def _writing(self):
        """A failed write of the temporary file (a full disk, a folder not writable) is one line."""
        import contextlib

        @contextlib.contextmanager
        def guard():
            try:
                yield
            except OSError as e:
                raise UsageError(f"cannot write a temporary file in {self.folder}: {e.strerror}") from None

        return guard()

    def close(self):
        if self.file is not None:
            self.file.close()
            self.file = None

    def fail(self, why):
        self.problem = self.problem or why
        self.close()

    def feed(self, text):
        if self.problem:
            return
        text = self.rest + text
        whole = len(text) // 4 * 4
        self.rest = text[whole:]
        try:
            data = base64.b64decode(text[:whole], validate=True)
        except (binascii.Error, ValueError):
            return self.fail("not base64")
        while data and not self.problem:
            if self.inflate.eof:
                return self.fail("data after its gzip stream")
            try:
                out = self.inflate.decompress(data, 1 << 20)
            except zlib.error:
                return self.fail("not a gzip stream")
            data = self.inflate.unconsumed_tail or self.inflate.unused_data
            self.got += len(out)
            if self.got > self.size:  # never past MAX_RESULT: a larger size is refused at the begin marker
                return self.fail(f"it inflates past the {self.size} bytes its begin marker says: a gzip bomb?")
            self.digest.update(out)
            with self._writing():
                self.file.write(out)

    def finish(self, name, digest):
        """Why the block is left out at its end marker, or None (its bytes are in self.file)."""
        if not self.problem:
            if self.rest:
                self.fail("its base64 is cut short")
            elif not self.inflate.eof:
                self.fail("its gzip stream is cut short")
            elif name != self.name:
                self.fail(f"its end marker names {shown(name)}")
            elif self.got != self.size:
                self.fail(f"{self.got} bytes where its begin marker says {self.size}")
            elif self.digest.hexdigest() != digest:
                self.fail("its digest differs")
        return self.problem


def blocks(f, source, folder, warn):
    """Each whole block of the log stream f as (name, its digest, a temporary file of its bytes),
    each damaged one said by warn(line) with its reason; returns the number left out."""
    current, lost, long_lines = None, [0], []

    def end_of(block, why):
        block.close()
        lost[0] += 1
        warn(damaged(block.name or "?", why))

    for raw in inputs.lines(f, source, too_long=long_lines.append):
        if current is None and b"ATSDBENCH-" not in raw and b"RESULT-" not in raw:
            continue  # no marker, even one with a mangled byte (one half of its word is whole)
        for line in _messages(raw.decode("utf-8", errors="replace")):
            line = line.strip()
            if "ATSDBENCH-" not in line and "RESULT-" not in line:
                if current is not None and BASE64.fullmatch(line):
                    current.feed(line)
                continue
            if _marker(line, "begin"):
                if current is not None:
                    end_of(current, current.problem or "its end marker is missing (the job was cut off)")
                name, size, why = _parse_marker(line, "begin")
                current = _Block(name, int(size) if why is None else 0, folder,
                                 None if why is None else f"its begin marker: {why}")
            elif _marker(line, "end"):
                name, digest, why = _parse_marker(line, "end")
                if current is None:
                    lost[0] += 1
                    warn(damaged(name or "?", "an end marker with no begin marker before it (the begin line "
                                 "is lost or damaged past recognition)"))
                    continue
                block, current = current, None
                if why is not None:
                    end_of(block, block.problem or f"its end marker: {why}")
                elif block.finish(name, digest):
                    end_of(block, block.problem)
                else:
                    with block._writing():
                        block.file.flush()
                    yield block.name, digest, block.file
                    block.close()
            elif current is not None and BASE64.fullmatch(line):
                current.feed(line)
    if current is not None:
        end_of(current, current.problem or "its end marker is missing (the job was cut off)")
    if long_lines:
        warn(f"{source}: {len(long_lines)} line(s) over {inputs.MAX_LINE >> 20} MiB skipped (the first: "
             f"line {long_lines[0]})")
    return lost[0]


def extract(text):
    """([(name, bytes of the result file)], [why each damaged one was left out]) of a log in memory."""
    import io

    found, problems = [], []
    stream = blocks(io.BytesIO(text.encode("utf-8", errors="replace")), "<log>", None, problems.append)
    for name, _, tmp in stream:
        tmp.seek(0)
        found.append((name, tmp.read()))
    return found, problems


def output_folder(output):
    """import --lava-log's -o DIR (default: here), made where missing."""
    if output == "":
        raise UsageError("the output folder name is empty")
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


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def already_written(folder, size, digest):
    """The file in folder with exactly these bytes (its size, then its SHA-256), or None."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    for n in names:
        path = os.path.join(folder, n)
        try:
            if n.endswith(".json") and not n.startswith(".") and os.path.isfile(path) \
                    and os.path.getsize(path) == size and _sha256(path) == digest:
                return path
        except OSError:
            continue
    return None


def _copy(tmp, path):
    from .files import write_atomically

    def write(out):
        tmp.seek(0)
        for chunk in iter(lambda: tmp.read(1 << 20), b""):
            out.write(chunk)

    write_atomically(path, write, binary=True)


def import_log(path, output, warn, say, prefix=""):
    """import --lava-log: every whole result in the log at path (or stdin for "-") checked against
    the result schema and written, byte for byte as the device wrote it, to OUTPUT/PREFIXNAME.json
    (-2, -3 where the name is taken by other bytes; a result already there is named and skipped).
    Each one left out is said by warn; returns (paths written, paths that held one already, number
    left out)."""
    from . import results

    f, source = inputs.open_stream(path)
    try:
        folder = output_folder(output)
    except UsageError:
        f.close()
        raise
    written, same_bytes, lost = [], [], 0
    with f:
        stream = blocks(f, source, folder, warn)
        while True:
            try:
                name, digest, tmp = next(stream)
            except StopIteration as stop:
                lost += stop.value
                break
            where = f"/proc/self/fd/{tmp.fileno()}"
            try:
                result = results.load(where)
            except UsageError as e:
                lost += 1
                warn(left_out(name, str(e).replace(f"{where}: ", "").replace(where, "it")))
                continue
            size = os.fstat(tmp.fileno()).st_size
            same = already_written(folder, size, digest)
            if same:
                warn(f"result {shown(name)} is already in {same} (the same bytes): not written again")
                same_bytes.append(same)
                continue
            target = free_path(folder, prefix + name)
            results.claim(target, len(result.records))
            try:
                _copy(tmp, target)
            except OSError:
                results.save_or_rescue(result, target)
            else:
                from .files import release

                release(target)
            written.append(target)
            say(f"wrote {target}")
    return written, same_bytes, lost
