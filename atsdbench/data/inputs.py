"""Reading an input file: regular files only (a FIFO would hang a reader, /dev/zero fill the memory),
at most MAX_INPUT bytes, each problem one UsageError line naming the file; JSON parsed with one rule
for numbers (NaN, Infinity and overflowing ones refused); a result's samples array streamed a batch
of records at a time (stream_json)."""
import json
import math
import os
import re
import stat
import sys

from ..errors import UsageError

# what a path that is not a regular file is, by its mode
KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
         (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _a_directory(path):
    return UsageError(f"{path} is a directory")


class reading:
    """`with reading(path):` an input file that cannot be opened or read is one UsageError line
    naming it (no such file, a directory, the kernel's words for anything else)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is FileNotFoundError:
            raise UsageError(f"{self.path}: no such file") from None
        if kind is IsADirectoryError:
            raise _a_directory(self.path) from None
        if kind is not None and issubclass(kind, OSError):
            raise UsageError(f"{self.path}: {value.strerror}") from None
        return False


# The largest input read (docs/result-file.md): a result file takes about 300 bytes a pass, so 1 GiB
# is over three million passes; a result's samples are streamed into columns (results.load), so
# loading one takes a fraction of its size in memory (about 80 bytes a plain pass).
MAX_INPUT = 1 << 30


def _too_big(path, limit):
    return UsageError(f"{path} is over {limit >> 20} MiB: larger than any file atsdbench reads")


def _open_regular(path, limit):
    """(fd, size) of a regular file of at most `limit` bytes, opened for reading; anything else is one
    UsageError line before anything is read (call inside reading(path))."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens without a writer
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in KINDS if test(st.st_mode)), "not a file")
            if stat.S_ISDIR(st.st_mode):
                raise _a_directory(path)
            raise UsageError(f"{path} is {kind}, not a regular file: atsdbench reads only files")
        if st.st_size > limit:
            raise _too_big(path, limit)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read_bytes(path, limit=MAX_INPUT):
    """The bytes of a regular file, at most `limit` of them: a FIFO, a device (/dev/zero, also through a
    symbolic link), a socket or a directory is one UsageError line, before anything blocks or fills the
    memory; so is a larger file."""
    with reading(path):
        fd, size = _open_regular(path, limit)
        try:
            return _read_to_end(fd, size, limit, path)
        finally:
            os.close(fd)


def _read_to_end(fd, size, limit, path):
    """The bytes of an open file to its end, `size` its length when opened; more than `limit` is one
    UsageError line."""
    chunks, got, want = [], 0, size + 1
    while True:  # to the end, not st_size: a file written while read still ends where read ends
        chunk = os.read(fd, max(want - got, 1 << 20))  # mostly one read of the whole file: no copy
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
        if got > limit:
            raise _too_big(path, limit)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_input(path, limit=MAX_INPUT):
    """(text, name) of an input file, or of stdin for "-" (bytes that are not UTF-8 replaced, a
    closed stdin read as empty); a file that cannot be read is one UsageError line."""
    if path == "-":
        with reading(path):
            stream = getattr(sys.stdin, "buffer", None)
            data = stream.read(limit + 1) if stream else b""
        if len(data) > limit:
            raise _too_big("<stdin>", limit)
        return data.decode("utf-8", errors="replace"), "<stdin>"
    return read_bytes(path, limit).decode("utf-8", errors="replace"), path


# The longest line a line-by-line reader keeps (import --lava-log, stat): a longer one is named and
# skipped, so that memory is bounded whatever the input's line lengths (/dev/zero has no newline).
MAX_LINE = 1 << 20


def open_stream(path, limit=MAX_INPUT):
    """(binary file, name) of an input read from start to end once: "-" is stdin (whatever it is: a
    terminal, a pipe, a file), a path a regular file of at most `limit` bytes or a pipe (`<(zcat
    LOG.gz)`, a FIFO); a device, a socket or a directory is one UsageError line."""
    if path == "-":
        with reading(path):
            try:
                fd = os.dup(sys.stdin.fileno())
            except (AttributeError, ValueError, OSError):  # no stdin at all: read as empty
                import io

                return io.BytesIO(b""), "<stdin>"
        return os.fdopen(fd, "rb", buffering=0), "<stdin>"
    with reading(path):
        try:
            fd, _ = _open_regular(path, limit)
        except UsageError:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            st = os.fstat(fd)
            if not stat.S_ISFIFO(st.st_mode):
                os.close(fd)
                raise
            os.set_blocking(fd, True)
    return os.fdopen(fd, "rb", buffering=0), path


def lines(f, name, limit=MAX_INPUT, max_line=MAX_LINE, too_long=None):
    """The lines of a binary stream (bytes, without their newline), read STREAM_CHUNK at a time: the
    memory is one chunk and one line of at most `max_line` bytes; a longer line is skipped, with
    too_long(its line number) called; more than `limit` bytes in all is one UsageError line."""
    got, part, skipping, number = 0, [], False, 0
    held = 0
    while True:
        chunk = f.read(STREAM_CHUNK)
        if not chunk:
            break
        got += len(chunk)
        if got > limit:
            raise _too_big(name, limit)
        pieces = chunk.split(b"\n")
        for piece in pieces[:-1]:
            number += 1
            if skipping or held + len(piece) > max_line:
                if too_long:
                    too_long(number)
                skipping, part, held = False, [], 0
                continue
            yield (b"".join(part) + piece) if part else piece
            part, held = [], 0
        last = pieces[-1]
        if skipping:
            continue
        if held + len(last) > max_line:
            skipping, part, held = True, [], 0
        elif last:
            part.append(last)
            held += len(last)
    if skipping or part:
        number += 1
        if skipping:
            if too_long:
                too_long(number)
        else:
            yield b"".join(part)


def _refuse_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]}{'...' if len(text) > 20 else ''} is out of range")
    return value


def read_json(path, what, limit=MAX_INPUT):
    """A JSON file atsdbench reads (`what`: "a result file", "a noise profile"), parsed with one rule
    for numbers (NaN, Infinity and overflowing ones refused); anything wrong is one UsageError line."""
    data = read_bytes(path, limit)
    size = len(data)
    try:
        text = data.decode("utf-8")
        del data  # the bytes go before the parse: the memory peak is the text and what it parses into
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except UsageError:  # reading's own line (a UsageError is a ValueError: not "not JSON")
        raise
    except RecursionError:
        raise UsageError(f"{path} is not {what} (JSON nested too deeply)") from None
    except MemoryError:
        raise UsageError(f"{path}: not enough memory to read it ({size >> 20} MiB)") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise UsageError(not_json(path, what, text if isinstance(e, json.JSONDecodeError) else None, e)) from None


# atsd's text output (csrc/atsd_output.c) begins with this word; a CSV table of show's or compare's
# with its header of column names
ATSD_OUTPUT_MAGIC = "atsd-output"
_CSV_HEADER = re.compile(r"[a-z_]+(,[a-z_]+)+")


def not_json(path, what, text, error):
    """The line for a file that does not parse, with the way out where it is a file of another kind:
    empty, atsd's text output, a CSV table (show's, compare's) or other text each say what to do; a
    file that starts as JSON says where it breaks."""
    from .schema import shorten

    if text is None:  # not UTF-8
        return f"{path} is not JSON ({shorten(str(error))})"
    first = text.lstrip("\ufeff").split("\n", 1)[0].strip()
    if what == "a result file":
        if not first and not text.strip():
            return f"{path} is empty, not a result file (`atsdbench import` reads atsd's output)"
        if first.startswith(ATSD_OUTPUT_MAGIC):
            return f"{path} is atsd's text output, not a result file: `atsdbench import {path}`"
        if _CSV_HEADER.fullmatch(first):
            return f"{path} is a CSV table, not a result file (a rate table: `atsdbench import --table`)"
        if not first.startswith(("{", "[")):
            return f"{path} is not JSON, not a result file (atsd's output: `atsdbench import`)"
    elif not text.strip():
        return f"{path} is empty, not {what}"
    return f"{path} is not JSON ({shorten(str(error))})"


# Streaming: a result file's samples array is read one record at a time (json's C scanner on a
# window of the file), so a load holds neither the file's text nor all its records as dicts.
STREAM_CHUNK = 1 << 20
_SPACE = re.compile(r"[ \t\n\r]*")


# The longest single value the streaming reader decodes (a record, a top-level field such as config):
# a result's largest is some MiB; a longer one (a 1 GB string) is refused, not decoded into GBs.
MAX_VALUE = 64 << 20


class _Unusual(Exception):
    """The streaming reader met something it leaves to read_json (invalid JSON, not an object at
    the top): that reads the whole file and says what is wrong in its usual words; where `why` is
    given (nesting too deep), the file is not read again whole."""

    def __init__(self, why=None):
        super().__init__(why)
        self.why = why


class _Window:
    """The file's text from `pos` on, read STREAM_CHUNK at a time (UTF-8, strictly)."""

    def __init__(self, fd, limit, path):
        import codecs

        self.fd, self.limit, self.path, self.got = fd, limit, path, 0
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf, self.pos, self.eof = "", 0, False

    def more(self, at_least=STREAM_CHUNK):
        """Read on (at least `at_least` bytes unless the file ends); False at the end of the file."""
        if self.eof:
            return False
        want = max(at_least, STREAM_CHUNK)
        data = os.read(self.fd, want)
        self.got += len(data)
        if self.got > self.limit:
            raise _too_big(self.path, self.limit)
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise _Unusual() from None
        if not data:
            self.eof = True
        self.buf = self.buf[self.pos:] + text
        self.pos = 0
        return True

    def skip(self):
        """Past white space; the next character ("" at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos:self.pos + 1]

    def expect(self, chars):
        c = self.skip()
        if not c or c not in chars:
            raise _Unusual()
        self.pos += 1
        return c

    def value(self, decode):
        """The next JSON value, whole: a value that reaches the end of the window (a number cut in
        two, an unterminated string) is decoded again with more of the file."""
        self.skip()
        while True:
            try:
                value, end = decode(self.buf, self.pos)
                if end < len(self.buf) or self.eof:
                    self.pos = end
                    return value
            except RecursionError:
                raise _Unusual("JSON nested too deeply") from None
            except ValueError:  # JSONDecodeError, a refused number, too many digits
                if self.eof:
                    raise _Unusual() from None
            if len(self.buf) - self.pos > MAX_VALUE:
                raise UsageError(f"{self.path}: a JSON value over {MAX_VALUE >> 20} MiB (near byte "
                                 f"{self.got - len(self.buf) + self.pos}): none is that long")
            self.more(len(self.buf) - self.pos)  # doubling: a long value is decoded O(1) times


def _whole_window(fd, size, limit, path, decoder, key, sink, batch):
    """stream_json of a file that fits one window: decoded whole by json's C parser, the array handed
    on as batches.  A repeated top-level key is json's last one here, the value read_json gives."""
    data = _read_to_end(fd, size, limit, path)
    try:
        text = data.decode("utf-8")
        value, end = decoder.raw_decode(text, _SPACE.match(text).end())
    except (ValueError, RecursionError):  # UnicodeDecodeError too: read_json says it in its words
        raise _Unusual() from None
    if _SPACE.match(text, end).end() != len(text) or type(value) is not dict:
        raise _Unusual()
    items = value.get(key)
    if type(items) is list:
        value[key] = []
        for i in range(0, len(items), batch):
            sink(items[i:i + batch])
    return value, True


def stream_json(path, what, key, sink, limit=MAX_INPUT):
    """A JSON file whose top is an object, parsed as read_json parses it, but the array under the
    top-level `key` is handed to sink(batch) a batch of items at a time (columns.BATCH) instead of
    being kept: returns (the object without those items, True) (`key` maps to [] where it was an
    array).  A file of one window (STREAM_CHUNK) or less is decoded whole, then handed on the same
    way.  Anything else (bad JSON, a top that is not an object, a repeated key in a streamed file) is
    read again by read_json: one UsageError line in its words, or (data, False), the whole parse for
    the caller."""
    from .columns import BATCH

    decoder = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite)
    decode = decoder.raw_decode
    try:
        with reading(path):
            fd, size = _open_regular(path, limit)
            try:
                if size <= STREAM_CHUNK:  # a third less time; the window's records as dicts: a few MiB
                    return _whole_window(fd, size, limit, path, decoder, key, sink, BATCH)
                w = _Window(fd, limit, path)
                out = {}
                w.expect("{")
                if w.skip() == "}":
                    w.pos += 1
                else:
                    while True:
                        if w.skip() != '"':
                            raise _Unusual()
                        name = w.value(decode)
                        w.expect(":")
                        if name in out:  # json keeps the last of a repeated key: left to it
                            raise _Unusual()
                        if name == key and w.skip() == "[":
                            w.pos += 1
                            out[name] = []
                            batch = []
                            if w.skip() == "]":
                                w.pos += 1
                            else:
                                while True:
                                    batch.append(w.value(decode))
                                    if len(batch) == BATCH:
                                        sink(batch)
                                        batch = []
                                    if w.expect(",]") == "]":
                                        break
                            if batch:
                                sink(batch)
                        else:
                            out[name] = w.value(decode)
                        if w.expect(",}") == "}":
                            break
                if w.skip():
                    raise _Unusual()
                return out, True
            finally:
                os.close(fd)
    except _Unusual as e:
        if e.why:
            raise UsageError(f"{path} is not {what} ({e.why})") from None
    return read_json(path, what, limit), False  # says what is wrong, or (a bug here) parses it whole
