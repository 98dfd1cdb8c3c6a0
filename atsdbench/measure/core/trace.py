"""tracefs (csrc/atsd_trace.c): the tracepoints both front ends count, found and named in C."""
from . import ffi, lib, _text


def tracefs_root(sysroot=None):
    """The tracefs whose events can be listed (under sysroot, for tests), or None."""
    out = ffi.new("char[]", 4096)
    if lib.atsd_tracefs_root(sysroot.encode() if sysroot else ffi.NULL, out, 4096) < 0:
        return None
    return _text(out)


def _tracepoint(t):
    return (t.id or None), {t.reasons[i].code: _text(t.reasons[i].name) for i in range(t.nreasons)}


def parse_tracepoint_format(text):
    """(id or None, {reason code: name}) from a format file's text."""
    t = ffi.new("struct atsd_tracepoint *")
    lib.atsd_tracepoint_parse((text or "").encode("utf-8", "surrogateescape"), t)
    return _tracepoint(t)


def find_tracepoint(event="tlb/tlb_flush", root=None):
    """(id, reasons) of ROOT/events/EVENT, (None, {}) where there is no tracefs or no such event."""
    root = root or tracefs_root()
    t = ffi.new("struct atsd_tracepoint *")
    if root is None or lib.atsd_tracepoint_find(root.encode(), event.encode(), t) < 0:
        return None, {}
    return _tracepoint(t)


def reason_column(name):
    """'remote IPI send' -> 'flushes_remote_ipi_send'."""
    out = ffi.new("char[]", lib.ATSD_COLUMN_NAME)
    return _text(lib.atsd_reason_column(name.encode("utf-8", "surrogateescape"), out, lib.ATSD_COLUMN_NAME))


def tlb_flush_columns(tp_id, reasons):
    """{column: filter or None} counted from tlb:tlb_flush with these reasons, in atsd's order."""
    t = ffi.new("struct atsd_tracepoint *")
    t.id = tp_id
    for i, (code, name) in enumerate(list(reasons.items())[:lib.ATSD_MAX_REASONS]):
        t.reasons[i].code = code
        t.reasons[i].name = name.encode("utf-8", "surrogateescape")[:lib.ATSD_REASON_NAME - 1]
        t.nreasons = i + 1
    cap = lib.ATSD_MAX_REASONS + 2
    cols = ffi.new("struct atsd_count_column[]", cap)
    n = lib.atsd_tlb_flush_columns(t, cols, cap)
    return {_text(cols[i].name): _text(cols[i].filter) or None for i in range(n)}


def tracefs_mounted(mounts_text=None):
    return bool(lib.atsd_tracefs_mounted(mounts_text.encode() if mounts_text is not None else ffi.NULL))


def tracepoint_problem(event="tlb:tlb_flush", euid=None, mounted=None):
    """Why a tracepoint that could not be read is not readable, in one sentence with the way out."""
    out = ffi.new("char[]", 512)
    return _text(lib.atsd_tracepoint_problem(event.encode(), -1 if euid is None else euid,
                                             -1 if mounted is None else int(bool(mounted)), out, 512))


def power_columns():
    """POWER's flush-count columns (csrc/atsd_trace.c) as dicts: name, event, filter (None for
    none), hash (a hypervisor call, hash MMU only) and opcode (its PAPR number, None else)."""
    cap = 16
    out = ffi.new("struct atsd_power_column[]", cap)
    n = lib.atsd_power_columns(out, cap)
    return [{"name": _text(c.name), "event": _text(c.event), "filter": _text(c.filter) or None,
             "hash": bool(c.hash), "opcode": c.opcode if c.opcode >= 0 else None} for c in out[0:n]]
