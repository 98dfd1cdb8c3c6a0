"""Writing an output file so that nothing is clobbered and nothing is half-written.

- check_writable refuses, before anything is measured, an output that is not a regular file (a
  device node, FIFO, socket, symbolic link or directory: replacing it by rename would destroy it)
  or that cannot be written.  It probes with lstat and access(2) and creates nothing, so two
  processes checking the same name cannot race.
- write_atomically writes a temporary file beside the target, fsyncs it and renames it over the
  target: a reader sees the old file or the whole new one, never a prefix.  The temporary file is
  removed on any failure (full disk, Ctrl-C).
- claim takes an advisory lock (fcntl.flock on a hidden lock file beside the target) for as long as
  this process means to write the target: a second atsdbench writing the same path refuses to start
  instead of one of the two results being lost.
- Leftovers: a writer killed between mkstemp and the rename (SIGKILL, the OOM killer, a power cut)
  leaves a hidden .atsdbench-PID-*.tmp; the next write to that folder finds it, makes it visible
  under a name of its own (a complete result or profile as atsdbench-recovered-*.json) and says so.
- write_rescue puts data that could not reach its file somewhere else: $TMPDIR, then the current
  directory; where neither takes it the caller prints it on stdout (results.save_or_rescue).
- Readers (read_input, read_json) read regular files only, up to MAX_INPUT bytes: a FIFO would hang
  them, /dev/zero would fill the memory.
"""
import errno
import fcntl
import json
import math
import os
import re
import stat
import sys
import tempfile

from ..errors import UsageError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _folder(path):
    return os.path.dirname(path) or "."


def _denied(folder):
    """The errno text of a folder we may not write to: read-only file system or permission."""
    try:
        readonly = os.statvfs(folder).f_flag & os.ST_RDONLY
    except OSError:
        readonly = False
    return os.strerror(errno.EROFS if readonly else errno.EACCES)


def check_writable(path):
    """Raise UsageError unless `path` can be created, or is a regular file that can be replaced."""
    if path == "":
        raise UsageError("the output file name is empty")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise UsageError(f"cannot write output {path}: {e.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = next(name for test, name in _KINDS if test(st.st_mode))
        raise UsageError(f"output {path} is {kind}, not a regular file: refusing to replace it")
    folder = _folder(path)
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write output {path}: no directory {folder}")
    if not os.access(folder, os.W_OK | os.X_OK) or (st is not None and not os.access(path, os.W_OK)):
        raise UsageError(f"cannot write output {path}: {_denied(folder)}")


def check_space(path, size):
    """Raise UsageError when the file system that would hold `path` has less than `size` bytes free
    for us (statvfs' f_bavail: what a non-root writer may use).  A file system that gives no figure
    passes: the atomic write and its rescue still keep the data."""
    try:
        st = os.statvfs(_folder(path))
    except OSError:
        return
    free = st.f_bavail * st.f_frsize
    if st.f_blocks and free < size:
        raise UsageError(f"cannot write output {path}: {_mib(free)} free, about {_mib(size)} needed")


def _mib(n):
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n // 1024} KiB"


LOCK_PREFIX = ".atsdbench-lock-"
_claimed = {}  # realpath of a target -> (lock path, fd) while this process means to write it


def _lock_path(path):
    return os.path.join(_folder(path), LOCK_PREFIX + os.path.basename(path))


def claim(path, size=0):
    """check_writable (and check_space for `size` bytes), then hold an advisory lock on `path` until
    release(path) or the process ends: a second writer of the same path, in this process or another,
    gets a UsageError naming the holder.  Leftovers of killed writers in its folder are reported first."""
    check_writable(path)
    if size:
        check_space(path, size)
    key = os.path.realpath(path)
    if key in _claimed:
        return
    recover_leftovers(_folder(path))
    lock = _lock_path(key)  # one lock whatever name (a linked folder, ./) the path is given by
    while True:  # the holder removes the lock file when done: lock the file that is there, not one unlinked
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            raise UsageError(f"cannot write output {path}: {e.strerror} (its lock file {lock})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            busy = e.errno in (errno.EAGAIN, errno.EACCES)
            holder = os.read(fd, 32).decode("ascii", "replace").strip() if busy else ""
            os.close(fd)
            if busy:
                pid = f" (pid {holder})" if holder.isdigit() else ""
                raise UsageError(f"output {path} is being written by another atsdbench{pid}") from None
            raise UsageError(f"cannot write output {path}: {e.strerror} (locking {lock})") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    _claimed[key] = (lock, fd)
    try:  # who holds it, for the second writer's message; a full disk may refuse even these bytes
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError:
        pass


def release(path):
    """Drop the lock claim(path) took (unlinked before it is unlocked, so no one waits on a dead file)."""
    held = _claimed.pop(os.path.realpath(path), None)
    if held is None:
        return
    lock, fd = held
    try:
        os.unlink(lock)
    except OSError:
        pass
    os.close(fd)


def release_all():
    """Drop every claim of this process (a command's end; at exit, those still held)."""
    for key in list(_claimed):
        release(key)


import atexit  # noqa: E402  (beside what it cleans up)

atexit.register(release_all)

TMP_PREFIX = ".atsdbench-"
_searched = set()  # folders already searched for leftovers by this process


def _writer_alive(name):
    """Whether the writer that named a temporary file .atsdbench-PID-*.tmp still runs (None: the name
    holds no pid, as older versions wrote it)."""
    pid = name[len(TMP_PREFIX):].split("-", 1)[0]
    if not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return int(pid) != os.getpid() or None


# format -> from_dict(data, path) of each kind of file atsdbench writes as JSON, registered by its
# module (results, profile) so that this one, which they import, imports neither.
LOADERS = {}


def _complete_json(path):
    """True when the file is a whole result file or noise profile (it loads)."""
    try:
        data = read_json(path, "a result file")
        load = LOADERS.get(data.get("format")) if isinstance(data, dict) else None
        if load is None:
            return False
        load(data, path)
        return True
    except (UsageError, OSError):
        return False


def _drop_stale_lock(lock):
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(lock)  # while locked: one who opened it meanwhile finds it unlinked and tries again
    except OSError:
        pass
    finally:
        os.close(fd)


def recover_leftovers(folder):
    """Find the temporary files of killed writers in `folder` (once per folder and process): each is
    renamed to a visible name, a complete result or profile to atsdbench-recovered-*.json, anything
    else to atsdbench-partial-*.tmp, and said on stderr.  Returns [(leftover, new name, complete)]."""
    key = os.path.realpath(folder)
    if key in _searched:
        return []
    _searched.add(key)
    try:
        everything = os.listdir(folder)
    except OSError:
        return []
    for name in everything:  # a killed writer's lock file: free to take, so nobody holds it
        if name.startswith(LOCK_PREFIX) and os.path.realpath(os.path.join(folder, name[len(LOCK_PREFIX):])) \
                not in _claimed:
            _drop_stale_lock(os.path.join(folder, name))
    names = sorted(n for n in everything if n.startswith(TMP_PREFIX) and n.endswith(".tmp")
                   and not n.startswith(LOCK_PREFIX))
    found = []
    for name in names:
        path = os.path.join(folder, name)
        alive = _writer_alive(name)
        if alive:
            continue
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue
            if alive is None:  # no pid to ask: a writer still at work was seen in the last minute
                import time

                if time.time() - st.st_mtime < 60:
                    continue
            complete = _complete_json(path)
            stem = name[len(TMP_PREFIX):-len(".tmp")]
            target = os.path.join(folder, f"atsdbench-recovered-{stem}.json" if complete
                                  else f"atsdbench-partial-{stem}.tmp")
            if os.path.lexists(target):
                continue
            os.rename(path, target)
        except OSError:
            continue
        found.append((path, target, complete))
        what = "a complete file (" if complete else f"an incomplete file ({st.st_size} bytes; "
        what += "its writer was killed)"
        from .._cli import warn

        warn(f"{path} was left behind: {what}; kept as {os.path.basename(target)}")
    return found


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path, write, binary=False):
    """Call write(f) on a temporary file beside `path`, fsync it, rename it to `path`, under
    claim(path) (taken here unless the caller holds it, released after).  An OSError names `path`."""
    mine = os.path.realpath(path) not in _claimed
    claim(path)
    try:
        _write_atomically(path, write, binary)
    except OSError as e:
        e.filename, e.filename2 = path, None  # the target, not the temporary file, is what the user named
        raise
    finally:
        if mine:
            release(path)


def _write_atomically(path, write, binary):
    folder = _folder(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{TMP_PREFIX}{os.getpid()}-", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as open() would create it; mkstemp makes it 0600
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            fd = None
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if fd is not None:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # the rename itself reaches the disk with the folder
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def rescue_folders():
    """$TMPDIR (else /tmp, /var/tmp...) where one is usable, and the current directory."""
    folders = []
    try:
        folders.append(tempfile.gettempdir())
    except (OSError, FileNotFoundError):  # "No usable temporary directory found": every one full or read-only
        pass
    try:
        cwd = os.getcwd()
        if cwd not in folders:
            folders.append(cwd)
    except OSError:  # the current directory was removed
        pass
    return folders


def write_rescue(text, prefix="atsdbench-rescued-", suffix=".json"):
    """Write `text` to a new file in the first rescue folder that takes it; its path, or None."""
    for folder in rescue_folders():
        try:
            fd, path = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=suffix)
        except OSError:
            continue
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            return path
        except OSError:
            try:
                os.unlink(path)
            except OSError:
                pass
    return None


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
            raise UsageError(f"{self.path} is a directory") from None
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
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a file")
            if stat.S_ISDIR(st.st_mode):
                raise UsageError(f"{path} is a directory")
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
        from .schema import shorten

        raise UsageError(f"{path} is not JSON ({shorten(str(e))})") from None


# Streaming: a result file's samples array is read one record at a time (json's C scanner on a
# window of the file), so a load holds neither the file's text nor all its records as dicts.
STREAM_CHUNK = 1 << 20
_SPACE = re.compile(r"[ \t\n\r]*")


class _Unusual(Exception):
    """The streaming reader met something it leaves to read_json (invalid JSON, not an object at
    the top): that reads the whole file and says what is wrong in its usual words."""


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
                raise _Unusual() from None
            except ValueError:  # JSONDecodeError, a refused number, too many digits
                if self.eof:
                    raise _Unusual() from None
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
    except _Unusual:
        pass
    return read_json(path, what, limit), False  # says what is wrong, or (a bug here) parses it whole
