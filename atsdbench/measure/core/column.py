"""`atsdbench stat`'s reader (csrc/atsd_column.c): numbers read as ministat reads them."""
import errno

from . import ffi, lib, _check


def read_column(data, column=1, delim=" \t", reads=None):
    """Numbers from bytes as ministat reads them: (numpy array, None) or (None, bad line number).
    With `reads` (a list), the number of lines (fgets reads) the bytes held is appended to it: a
    stream read in pieces that each end with a newline counts its lines on across them."""
    import numpy as np

    # One number per fgets() read at most; a read ends at a newline or after 8191 bytes (ministat's
    # BUFSIZ buffer), so a long line is several reads, each read as a line.
    cap = data.count(b"\n") + 2 + len(data) // 8191
    out = np.empty(cap, dtype=np.float64)
    bad = ffi.new("int64_t *")
    n = lib.atsd_read_column(data, len(data), column, delim.encode("latin-1"),
                             ffi.cast("double *", ffi.from_buffer(out)), cap, bad)
    if n == -errno.EINVAL:
        return None, bad[0]
    _check(n, "reading numbers")
    if reads is not None:
        reads.append(bad[0])
    return out[:n], None
