"""Writing an output file so that nothing is clobbered and nothing is half-written (reading an input
file is inputs.py's): check_writable refuses what is not a regular file, and a file that exists unless
asked to replace it (a command's --force), before anything is measured, and creates nothing; claim
holds an advisory lock beside the target while this process means to write it; write_atomically writes a temporary file beside it, fsyncs it and renames it over the target;
recover_leftovers makes a killed writer's temporary file visible; write_rescue puts data that could
not reach its file in $TMPDIR or the current directory.  The whole story: docs/result-file.md.
"""
import errno
import fcntl
import os
import stat
import tempfile

from ..errors import UsageError
from .inputs import KINDS, read_json


def _folder(path):
    return os.path.dirname(path) or "."


def _denied(folder):
    """The errno text of a folder we may not write to: read-only file system or permission."""
    try:
        readonly = os.statvfs(folder).f_flag & os.ST_RDONLY
    except OSError:
        readonly = False
    return os.strerror(errno.EROFS if readonly else errno.EACCES)


def check_writable(path, replace=False):
    """Raise UsageError unless `path` can be created, or is a regular file that can be replaced and
    `replace` says it may be: the one rule of every file a command is told to write (a name the tool
    picks in a folder takes -2, -3 instead; docs/result-file.md)."""
    if path == "":
        raise UsageError("the output file name is empty")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise UsageError(f"cannot write output {path}: {e.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = next(name for test, name in KINDS if test(st.st_mode))
        raise UsageError(f"output {path} is {kind}, not a regular file: refusing to replace it")
    folder = _folder(path)
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write output {path}: no directory {folder}")
    if not os.access(folder, os.W_OK | os.X_OK) or (st is not None and not os.access(path, os.W_OK)):
        raise UsageError(f"cannot write output {path}: {_denied(folder)}")
    if st is not None and not replace:
        raise UsageError(f"output {path} exists: --force replaces it")


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


def claim(path, size=0, replace=False):
    """check_writable (and check_space for `size` bytes), then hold an advisory lock on `path` until
    release(path) or the process ends: a second writer of the same path, in this process or another,
    gets a UsageError naming the holder.  Leftovers of killed writers in its folder are reported first.
    A path this process holds already is its own to write (its check was made when it was claimed)."""
    key = os.path.realpath(path)
    if key in _claimed:
        return
    check_writable(path, replace)
    if size:
        check_space(path, size)
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
# module (results, noise_profile) so that this one, which they import, imports neither.
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


def write_atomically(path, write, binary=False, replace=True):
    """Call write(f) on a temporary file beside `path`, fsync it, rename it to `path`, under
    claim(path) (taken here unless the caller holds it, released after).  An OSError names `path`.
    replace=False: never over a file there, a FileExistsError instead (the name taken by a hard link,
    or, where the file system has none, a rename after a look)."""
    mine = os.path.realpath(path) not in _claimed
    claim(path, replace=True)  # replacing is what it is for: the command's claim applied the rule
    try:
        _write_atomically(path, write, binary, replace)
    except OSError as e:
        e.filename, e.filename2 = path, None  # the target, not the temporary file, is what the user named
        raise
    finally:
        if mine:
            release(path)


def _rename_new(tmp, path):
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV):
            raise
        if os.path.lexists(path):  # no hard links here (vfat, some 9p): a look, then the rename
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path) from None
        os.replace(tmp, path)
        return
    try:
        os.unlink(tmp)
    except OSError:  # the file is written; the temporary name is a stray the journal names
        pass


def _write_atomically(path, write, binary, replace=True):
    folder = _folder(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{TMP_PREFIX}{os.getpid()}-", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as open() would create it; mkstemp makes it 0600
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            fd = None
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            _rename_new(tmp, path)
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
