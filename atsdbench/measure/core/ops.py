"""The operations a pass times and will-it-scale's workloads, by name (csrc/atsd_ops.c, atsd_workload.c)."""
from . import lib, _check, _text


def op_name(op):
    """"mprotect" for ATSD_OP_MPROTECT (csrc/atsd_ops.c)."""
    return _text(lib.atsd_op_name(op))


def op_call(op):
    """"mprotect(PROT_NONE)" for ATSD_OP_MPROTECT: the call as tables and messages name it."""
    return _text(lib.atsd_op_call(op))


def workload_name(workload):
    """"tlb_flush2" for ATSD_WORKLOAD_TLB_FLUSH2 (csrc/atsd_ops.c)."""
    return _text(lib.atsd_workload_name(workload))


def no_aslr(change=0):
    """True when this process was executed with ADDR_NO_RANDOMIZE (its mappings not randomized);
    change 1 adds the flag for what it executes next, -1 takes it out (csrc/atsd_ops.c atsd_no_aslr)."""
    rc = lib.atsd_no_aslr(change)
    _check(rc, "personality")
    return bool(rc)


def aslr_state():
    """"off" where this process's mappings are not randomized (executed with ADDR_NO_RANDOMIZE, or
    the kernel randomizes nothing), "on" else (csrc/atsd_ops.c atsd_aslr_state, which atsd uses too)."""
    return _text(lib.atsd_aslr_state())
