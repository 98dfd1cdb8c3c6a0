"""Writing an output file so that nothing is clobbered and nothing is half-written.

- check_writable refuses, before anything is measured, an output that is not a regular file (a
  device node, FIFO, socket, symbolic link or directory: replacing it by rename would destroy it)
  or that cannot be written.  It probes with lstat and access(2) and creates nothing, so two
  processes checking the same name cannot race.
- write_atomically writes a temporary file beside the target, fsyncs it and renames it over the
  target: a reader sees the old file or the whole new one, never a prefix.  The temporary file is
  removed on any failure (full disk, Ctrl-C).
- write_rescue puts data that could not reach its file somewhere else: $TMPDIR, then the current
  directory.
"""
import errno
import json
import math
import os
import stat
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


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path, write, binary=False):
    """Call write(f) on a temporary file beside `path`, fsync it, rename it to `path`."""
    check_writable(path)
    folder = _folder(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".atsdbench-", suffix=".tmp")
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
    folders = [tempfile.gettempdir()]
    try:
        folders.append(os.getcwd())
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


def read_input(path):
    """(text, name) of an input file, or of stdin for "-" (bytes that are not UTF-8 replaced, a
    closed stdin read as empty); a file that cannot be read is one UsageError line."""
    import sys

    with reading(path):
        if path == "-":
            stream = getattr(sys.stdin, "buffer", None)
            return (stream.read().decode("utf-8", errors="replace") if stream else ""), "<stdin>"
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(), path


def _refuse_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]}{'...' if len(text) > 20 else ''} is out of range")
    return value


def read_json(path, what):
    """A JSON file atsdbench reads (`what`: "a result file", "a noise profile"), parsed with one rule
    for numbers (NaN, Infinity and overflowing ones refused); anything wrong is one UsageError line."""
    try:
        with reading(path), open(path, encoding="utf-8") as f:
            return json.load(f, parse_constant=_refuse_constant, parse_float=_finite)
    except UsageError:  # reading's own line (a UsageError is a ValueError: not "not JSON")
        raise
    except RecursionError:
        raise UsageError(f"{path} is not {what} (JSON nested too deeply)") from None
    except (ValueError, UnicodeDecodeError) as e:
        from .schema import shorten

        raise UsageError(f"{path} is not JSON ({shorten(str(e))})") from None
