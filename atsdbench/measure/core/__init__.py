"""The only importer of the compiled C core, cut as csrc/ is: one module a C file's job.

Turns -errno into OSError and owns every buffer; every C object is owned through one slot that its
C release clears before it frees.  The names imported below are the package's API: the rest of
atsdbench calls `core.Region(...)`, `core.page_size()`, ... and never a module of it directly.
"""
import os

from ...errors import CoreMissing

# The ABI (csrc/atsd.h's ATSD_ABI_VERSION) this Python side is written against.  It cannot be read
# from the compiled module, which may be older than the sources it is imported with (a checkout
# pulled since its `pip install -e`); tests/measure/test_core.py holds it equal to the header.
ABI_VERSION = 27

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    from ..._atsd import ffi, lib  # not `from ... import _atsd`, whose error names the package, not the module
except ImportError as e:  # absent; or there, but built for another Python, or cffi is missing
    from ..._cli import cause

    # the loader's error cut to its cause ("undefined symbol: ...", not the .so's path again)
    raise CoreMissing.explain(_PACKAGE, None if e.name == "atsdbench._atsd" else cause(e, 50)) from None

_found = getattr(lib, "atsd_abi_version", lambda: None)()
if _found != ABI_VERSION:
    raise CoreMissing.stale(_PACKAGE, "unknown" if _found is None else _found, ABI_VERSION)

PAGES = {"base": lib.ATSD_PAGES_BASE, "thp": lib.ATSD_PAGES_THP, "hugetlb": lib.ATSD_PAGES_HUGETLB}


def _strerror(rc):
    """A negative errno as the C core words it (atsd_strerror: ECHILD is a helper process that died)."""
    return ffi.string(lib.atsd_strerror(rc)).decode("utf-8", "replace")


def _check(rc, what):
    if rc < 0:
        raise OSError(-rc, f"{what}: {_strerror(rc)}")
    return rc


def _text(ptr):
    return ffi.string(ptr).decode("utf-8", "replace") if ptr != ffi.NULL else None


def abi_version():
    return lib.atsd_abi_version()


# The modules below import the names above from this package, so they come after them.
from .bystanders import Bystanders, pin_self  # noqa: E402
from .canary import CANARY_BYTES, CANARY_CHASE, CANARY_COMPUTE, Canary  # noqa: E402
from .column import read_column  # noqa: E402
from .device import (Device, Kprobe, breakdown_device, breakdown_device_remove, device_kprobes,  # noqa: E402
                     device_name, device_path, device_stale_text)
from .instance import (BREAKDOWN_CALLS, INSTANCE_SMALL_KB, TraceInstance, breakdown_probe,  # noqa: E402
                       breakdown_region, breakdown_sizes, breakdown_thread_filter, hcall_filter, instance_problem,
                       remove_stale_instances, trace_lost)
from .kexec import kexec_file_supported, kexec_load, kexec_reboot, kexec_unload  # noqa: E402
from .loop import Passes, cell_passes, cell_verify, latency_percentiles  # noqa: E402
from .ops import aslr_state, no_aslr, op_call, op_name, workload_name  # noqa: E402
from .perf import TracepointCounter  # noqa: E402
from .plan import host_probe, options, parse_size, plan_check, plan_new, plan_set  # noqa: E402
from .profile import Profile, perf_parse  # noqa: E402
from .region import Region, hugepage_size, page_size  # noqa: E402
from .schedule import cell_order, cells, least_sleep, round_order, round_start, sub_run_start  # noqa: E402
from .self_state import self_delta, self_state, steal_ticks  # noqa: E402
from .threads import Threads  # noqa: E402
from .trace import (find_tracepoint, parse_tracepoint_format, power_columns, reason_column,  # noqa: E402
                    tlb_flush_columns, tracefs_mounted, tracefs_root, tracepoint_problem)
from .verify import Verifier, stale_text, verify_checkers, verify_workload_size  # noqa: E402

__all__ = ["ABI_VERSION", "PAGES", "abi_version", "ffi", "lib", "BREAKDOWN_CALLS", "Bystanders", "CANARY_BYTES",
           "CANARY_CHASE", "CANARY_COMPUTE", "Canary", "Device", "INSTANCE_SMALL_KB", "Kprobe", "Passes",
           "Profile", "Region", "Threads", "TraceInstance", "TracepointCounter", "Verifier", "aslr_state",
           "breakdown_device", "breakdown_device_remove", "breakdown_probe", "breakdown_region", "breakdown_sizes",
           "breakdown_thread_filter", "cell_order", "cell_passes", "cell_verify", "cells", "device_kprobes",
           "device_name", "device_path", "device_stale_text", "find_tracepoint", "hcall_filter", "host_probe",
           "hugepage_size", "instance_problem", "kexec_file_supported", "kexec_load", "kexec_reboot", "kexec_unload",
           "latency_percentiles", "least_sleep", "no_aslr", "op_call", "op_name", "options", "page_size",
           "parse_size", "parse_tracepoint_format", "perf_parse", "pin_self", "plan_check", "plan_new", "plan_set",
           "power_columns", "read_column", "reason_column", "remove_stale_instances", "round_order", "round_start",
           "self_delta", "self_state", "stale_text", "steal_ticks", "sub_run_start", "tlb_flush_columns",
           "trace_lost", "tracefs_mounted", "tracefs_root", "tracepoint_problem", "verify_checkers",
           "verify_workload_size", "workload_name"]
