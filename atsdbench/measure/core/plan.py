"""The plan of a run (csrc/atsd_plan.c, atsd_check.c, atsd_host.c): parsed and checked in C for both
front ends, with the option table both build their parsers from."""
import os

from . import ffi, lib, _check, _text
from ...errors import UsageError


def options():
    """The option table (csrc/atsd_options.h) as dicts, in declaration order."""
    out, o = [], ffi.new("struct atsd_option *")
    for i in range(lib.atsd_option_count()):
        lib.atsd_option_get(i, o)
        out.append({"name": _text(o.name), "short": chr(o.short_name) if o.short_name else None,
                    "run": bool(o.fronts & lib.ATSD_FRONT_RUN), "atsd": bool(o.fronts & lib.ATSD_FRONT_ATSD),
                    "field": _text(o.field), "metavar": _text(o.metavar), "const": _text(o.const_value),
                    "default": _text(o.default_value), "help": _text(o.help)})
    return out


def plan_new():
    p = ffi.new("struct atsd_plan *")
    lib.atsd_plan_init(p)
    return p


def _msg_call(fn, *args):
    msg = ffi.new("char[]", 512)
    rc = fn(*args, msg, 512)
    if rc < 0:
        raise UsageError(_text(msg) or os.strerror(-rc))


def plan_set(p, field, value):
    """Parse one option value (text) into the plan; UsageError with the C message."""
    _msg_call(lib.atsd_plan_set, p, field.encode(), str(value).encode("utf-8", "surrogateescape"))


def plan_check(p, host):
    _msg_call(lib.atsd_plan_check, p, host)


def host_probe():
    h = ffi.new("struct atsd_host *")
    _check(lib.atsd_host_probe(h), "reading the host's facts")
    return h


def parse_size(text, what="size"):
    """The size rule of both front ends (units.parse_size is its pure twin)."""
    text = str(text)
    if "\0" in text:  # a C string would end there and take the prefix
        from ...units import parse_size as pure

        return pure(text, what)
    out = ffi.new("uint64_t *")
    _msg_call(lib.atsd_parse_size, text.encode("utf-8", "surrogateescape"), what.encode(), out)
    return out[0]
