"""The samples of a result, column by column: one numpy array a field, never one dict a pass.

A loaded file of 10^6 passes held as dicts takes about 1 KB a pass; as columns it takes the bytes of
its values (8 a number, 1 a flag), filled a batch of records at a time as results.load streams the
file (docs/result-file.md, "Loading is columnar and bounded").  Each column keeps what a reader of
the records could tell (a `present` mask where a field is absent from some passes, whole numbers
with gaps remembered as whole), so `records` gives back the dicts that were written and `frame`
has the dtypes pandas.DataFrame.from_records gave them (tests/data/test_columns.py holds them
equal).  A new per-pass field needs nothing here: any key of the records becomes a column.
"""
import math

import numpy as np

# records a batch: bounds what a streaming load holds as dicts at once (10^6 passes: 8192 a batch
# peaked 16 MiB above 1024)
BATCH = 1024

_MISSING = object()


class _Column:
    """One field: its values (numpy), where it is present (None: everywhere), whether a float64
    column holds whole numbers (given back as int), and which rows hold an explicit null."""

    __slots__ = ("values", "present", "ints", "nulls")

    def __init__(self, values, present=None, ints=False, nulls=None):
        self.values, self.present, self.ints, self.nulls = values, present, ints, nulls


def _batch_column(values):
    """(kind, array, nulls) of one field over a batch; values hold _MISSING where a record lacks it.
    kind: 'i' whole numbers, 'f' numbers with nulls or fractions, 'b' flags, 'o' anything else."""
    types = set(map(type, values))
    missing = object in types and any(v is _MISSING for v in values)
    plain = types - {object, type(None)}
    has_null = type(None) in types
    if plain == {int} and not has_null and not missing:
        try:
            return "i", _narrow(np.array(values, dtype=np.int64)), None
        except OverflowError:
            pass
    elif plain and plain <= {int, float}:
        try:
            arr = np.array([math.nan if v is None or v is _MISSING else v for v in values], dtype=np.float64)
            return ("fi" if plain == {int} else "f"), arr, _nulls(values) if has_null else None
        except OverflowError:
            pass
    elif not plain:  # nulls only: from_records makes them float NaN
        return "n", np.full(len(values), math.nan), _nulls(values) if has_null else None
    elif plain == {bool} and not has_null and not missing:
        return "b", np.array(values, dtype=bool), None
    arr = np.empty(len(values), dtype=object)
    arr[:] = [math.nan if v is _MISSING else v for v in values]
    return "o", arr, _nulls(values) if has_null else None


_NARROW = (np.int8, np.int16, np.int32)


def _narrow(arr):
    """A batch of whole numbers in the narrowest integer type that holds them, until the column is
    put together (widened to int64 there): a file's batches are all held at once before that, beside
    the columns of the files loaded before it (most of a pass's fields fit in 1-4 bytes)."""
    if len(arr):
        lo, hi = int(arr.min()), int(arr.max())
        for t in _NARROW:
            info = np.iinfo(t)
            if info.min <= lo and hi <= info.max:
                return arr.astype(t)
    return arr


def _nulls(values):
    return np.fromiter((v is None for v in values), dtype=bool, count=len(values))


# passes from which each column's batches are given back as the column is made (trim_heap): below
# it they are some 10 MiB at most, given back once the file is loaded (results.load); each trim walks
# the whole heap (8 us with numpy, scipy and matplotlib loaded), and a small file made one a column
TRIM_EACH_FROM = 64 * BATCH


class Builder:
    """Columns filled batch by batch: add(records) for each batch, then columns()."""

    def __init__(self):
        self.n = 0
        self.parts = {}  # key -> [(start row, kind, array, nulls)], keys in order of first appearance

    def add(self, records):
        keys = {}
        for r in records:
            for k in r:
                keys[k] = None
        uniform = all(len(r) == len(keys) for r in records)  # every pass has every field: no gaps
        for k in keys:
            if uniform:
                values = [r[k] for r in records]
            else:
                values = [r.get(k, _MISSING) for r in records]
            present = None
            if not uniform and any(v is _MISSING for v in values):
                present = np.fromiter((v is not _MISSING for v in values), dtype=bool, count=len(values))
            kind, arr, nulls = _batch_column(values)
            self.parts.setdefault(k, []).append((self.n, kind, arr, nulls, present))
        self.n += len(records)

    def columns(self):
        """The Columns; each batch's arrays are freed as they are copied in (one column at a time)."""
        n, out = self.n, {}
        for k in list(self.parts):
            parts = self.parts.pop(k)
            kinds = {p[1] for p in parts}
            covered = sum(len(p[2]) for p in parts) == n and all(p[4] is None for p in parts)
            if kinds == {"i"} and covered:
                dtype, ints = np.int64, False
            elif kinds <= {"i", "fi", "f", "n"}:
                dtype, ints = np.float64, "f" not in kinds
            elif kinds == {"b"} and covered:
                dtype, ints = bool, False
            else:
                dtype, ints = object, False
            values = np.full(n, math.nan, dtype=dtype) if dtype in (np.float64, object) else np.empty(n, dtype=dtype)
            present = None if covered else np.zeros(n, dtype=bool)
            nulls = None
            while parts:
                start, kind, arr, batch_nulls, batch_present = parts.pop(0)
                end = start + len(arr)
                if dtype is object and kind != "o":
                    arr = _as_objects(arr, kind, batch_nulls, batch_present)
                if batch_present is None:
                    values[start:end] = arr
                else:
                    values[start:end][batch_present] = arr[batch_present]
                if present is not None:
                    present[start:end] = True if batch_present is None else batch_present
                if batch_nulls is not None:
                    if nulls is None:
                        nulls = np.zeros(n, dtype=bool)
                    nulls[start:end] = batch_nulls
            out[k] = _Column(values, present, ints, nulls)
            if n >= TRIM_EACH_FROM:
                trim_heap()
        return Columns(out, n)


# glibc's malloc serves a block of this many bytes or more from its own mmap, given back to the system
# when freed.  By default the threshold rises to the largest block freed (up to 32 MiB), so numpy's
# arrays of a few MiB (a column's temporaries, a bootstrap chunk) came from the heap after the first,
# and the heap kept what they freed: plot at 10^6 passes a side held 60-75 MiB of it.
# Fixing the threshold keeps it where it is; smaller blocks (Python's objects) are unaffected.
MMAP_THRESHOLD = 1 << 20
_M_MMAP_THRESHOLD = -3  # glibc's malloc.h


def bound_heap():
    """For the commands that read result files (show, compare, model, plot): large blocks from mmap,
    freed to the system (see MMAP_THRESHOLD).  glibc only; elsewhere (musl, macOS) nothing is done."""
    libc = _libc()
    if libc and hasattr(libc, "mallopt"):
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def _libc():
    global _libc_handle
    if _libc_handle is None:
        try:
            import ctypes

            _libc_handle = ctypes.CDLL(None)
            _libc_handle.malloc_trim  # noqa: B018  (glibc's: the test that this is glibc)
        except (OSError, AttributeError):
            _libc_handle = False
    return _libc_handle


_libc_handle = None


def trim_heap():
    """Give the freed batches back to the system.  A batch's arrays (64 KiB) live on the C heap,
    where free memory between live blocks is kept, not returned: without this a file's batches and
    its columns were both resident at the end of a load (twice the columns' memory, 148 MiB at
    10^6 passes).  glibc's malloc_trim releases such pages; elsewhere nothing is done."""
    libc = _libc()
    if libc:
        libc.malloc_trim(0)


def _as_objects(arr, kind, nulls, present):
    """A typed batch as the Python values it was read as (for a column of mixed kinds)."""
    out = np.empty(len(arr), dtype=object)
    vals = arr.tolist()
    if kind in ("fi", "i"):
        vals = [v if v != v else int(v) for v in vals]
    if nulls is not None:
        vals = [None if z else v for v, z in zip(vals, nulls.tolist())]
    out[:] = vals
    return out


class Columns:
    """The samples of a result as {field: column}, n passes."""

    def __init__(self, cols, n):
        self._cols, self.n = cols, n

    @classmethod
    def from_records(cls, records):
        b = Builder()
        for i in range(0, len(records), BATCH):
            b.add(records[i:i + BATCH])
        return b.columns()

    def __len__(self):
        return self.n

    def keys(self):
        return list(self._cols)

    def __contains__(self, key):
        return key in self._cols

    def get(self, key):
        """The numpy array of a field (NaN where absent in a float or object column), or None."""
        c = self._cols.get(key)
        return None if c is None else c.values

    def __getitem__(self, key):
        """A field's numpy array, as get(), but KeyError where no pass has it (a frame's column)."""
        return self._cols[key].values

    def fields(self, keys):
        """These columns with only the fields named (those there are): no copy, for a reader that
        picks passes by a mask and needs a few fields of them."""
        return Columns({k: self._cols[k] for k in keys if k in self._cols}, self.n)

    def with_fields(self, arrays):
        """These columns with the fields of {field: array of every pass} put in (replaced in place
        or added at the end): the same arrays, not copies."""
        cols = dict(self._cols)
        cols.update((k, _Column(np.asarray(v))) for k, v in arrays.items())
        return Columns(cols, self.n)

    def present(self, key):
        """Bool mask: the passes that have the field."""
        c = self._cols.get(key)
        if c is None:
            return np.zeros(self.n, dtype=bool)
        return np.ones(self.n, dtype=bool) if c.present is None else c.present

    def slice(self, lo, hi):
        """The passes lo..hi-1 as new Columns that are views of these (no copy): what take(arange(lo,
        hi)) gives, fields absent from all of them left out.  A `--runs` file's sub-runs are such
        ranges; copying each would take show of 10^6 passes from 231 to 420 MiB."""
        cols = {}
        for k, c in self._cols.items():
            present = None if c.present is None else c.present[lo:hi]
            if present is not None and not present.any():
                continue
            if present is not None and present.all():
                present = None
            cols[k] = _Column(c.values[lo:hi], present, c.ints, None if c.nulls is None else c.nulls[lo:hi])
        return Columns(cols, hi - lo)

    def take(self, index, keep_absent=False):
        """The passes at `index` (an integer array), as new Columns; a field none of them has is left
        out, unless keep_absent (rows())."""
        cols = {}
        for k, c in self._cols.items():
            present = None if c.present is None else c.present[index]
            if present is not None and not present.any() and not keep_absent:
                continue
            if present is not None and present.all():
                present = None
            cols[k] = _Column(c.values[index], present, c.ints, None if c.nulls is None else c.nulls[index])
        return Columns(cols, len(index))

    def rows(self, mask):
        """The passes where `mask` is true, every field kept: a frame's frame[mask], for the readers."""
        mask = np.asarray(mask, dtype=bool)
        return self if mask.all() else self.take(np.flatnonzero(mask), keep_absent=True)

    def frame(self):
        """A DataFrame of the columns (sharing their memory; pandas' copy-on-write keeps them)."""
        import pandas as pd

        data = {}
        for k, c in self._cols.items():
            v = c.values
            data[k] = pd.Series(v) if v.dtype == object else v  # pandas' own inference: text is `str`
        return pd.DataFrame(data, copy=False) if data else pd.DataFrame(index=pd.RangeIndex(self.n))

    def records(self):
        return RecordView(self)

    def iter_records(self, start=0, stop=None):
        """The passes as the dicts they were written as, a batch at a time (save, RecordView)."""
        stop = self.n if stop is None else min(stop, self.n)
        keys = list(self._cols)
        for lo in range(start, stop, BATCH):
            hi = min(lo + BATCH, stop)
            lists = []
            for k in keys:
                c = self._cols[k]
                vals = c.values[lo:hi].tolist()
                if c.values.dtype == np.float64:
                    if c.ints:
                        vals = [None if v != v else int(v) for v in vals]
                    else:
                        vals = [None if v != v else v for v in vals]
                elif c.values.dtype == object:
                    vals = [None if type(v) is float and v != v else v for v in vals]
                lists.append((vals, None if c.present is None else c.present[lo:hi].tolist()))
            for i in range(hi - lo):
                yield {k: vals[i] for k, (vals, present) in zip(keys, lists) if present is None or present[i]}


class RecordView:
    """The passes as dicts, made one batch at a time: len(), iteration, view[i] (no list of them
    is ever held)."""

    def __init__(self, columns):
        self._c = columns

    def __len__(self):
        return self._c.n

    def __bool__(self):
        return self._c.n > 0

    def __iter__(self):
        return self._c.iter_records()

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(self._c.iter_records(*i.indices(self._c.n)[:2])) if (i.step or 1) == 1 else list(self)[i]
        if i < 0:
            i += self._c.n
        if not 0 <= i < self._c.n:
            raise IndexError(i)
        return next(self._c.iter_records(i, i + 1))


def as_columns(samples):
    """Columns of a Result, a RecordView, Columns, or a list of sample dicts (a run's, a test's)."""
    if isinstance(samples, Columns):
        return samples
    if isinstance(samples, RecordView):
        return samples._c
    if hasattr(samples, "columns") and not isinstance(samples, list):
        return samples.columns
    return Columns.from_records(list(samples))


def timed(columns, key, warmup=False):
    """(mask, values): the timed passes (not warm-up, unless `warmup`) that have `key` (not null),
    and its values there."""
    values = columns.get(key)
    if values is None:
        return np.zeros(columns.n, dtype=bool), np.empty(0)
    mask = columns.present(key) if warmup else columns.present(key) & ~flag(columns, "warmup")
    if values.dtype == np.float64:
        mask &= ~np.isnan(values)
    elif values.dtype == object:
        mask &= np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    return mask, values[mask]


def known(values):
    """Bool mask: where a column holds a value (not NaN for an absent or null number, not None): a
    frame's notna()."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return ~np.isnan(values)
    if values.dtype == object:
        return np.fromiter((v is not None and v == v for v in values), dtype=bool, count=len(values))
    return np.ones(len(values), dtype=bool)


def numbers(table, key):
    """A field as float64: NaN where absent, null or not a number (pandas' to_numeric, coerced)."""
    if key not in table:
        return np.full(len(table), np.nan)
    values = table[key]
    if values.dtype.kind in "iufb":
        return values.astype(np.float64)
    return np.array([v if type(v) in (int, float) else np.nan for v in values], dtype=np.float64)


def flag(columns, key):
    """A true/false field as a bool mask (false where absent or null): `s.get(key)` read as a flag."""
    values = columns.get(key)
    if values is None:
        return np.zeros(columns.n, dtype=bool)
    if values.dtype == bool:
        return values
    if values.dtype == object:
        return np.fromiter((bool(v) and v == v for v in values), dtype=bool, count=len(values))
    return np.nan_to_num(values.astype(np.float64)) != 0
