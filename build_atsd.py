"""cffi build script (API mode).  Lives outside the package so it is never imported at run time.

The cdef is cut from the marked blocks of csrc/atsd.h and csrc/atsd_trace.h: the headers are the one
declaration of the C API.
"""
import pathlib

from cffi import FFI

CSRC = pathlib.Path(__file__).resolve().parent / "csrc"
BEGIN, END = "/* ATSD-CDEF-BEGIN */", "/* ATSD-CDEF-END */"
HEADERS = ("atsd.h", "atsd_trace.h")


def cdef_from_header(text):
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:stop]


def cdef(csrc=CSRC):
    """Every header's block, in HEADERS' order."""
    return "".join(cdef_from_header((csrc / name).read_text()) for name in HEADERS)


# The pass loop's hooks as Python callbacks (atsdbench/measure/core/loop.py): cffi's own syntax, so they
# are declared here, not in the header that the C compilers read too.
PYTHON_HOOKS = """
extern "Python" int32_t atsd_py_before(void *, struct atsd_pass_record *);
extern "Python" int32_t atsd_py_after(void *, struct atsd_pass_record *);
"""

ffibuilder = FFI()
ffibuilder.cdef(cdef() + PYTHON_HOOKS)
ffibuilder.set_source(
    "atsdbench._atsd",
    '#include "atsd.h"',
    sources=[f"csrc/{name}.c" for name in (
        "atsd", "atsd_region", "atsd_bystanders", "atsd_perf", "atsd_self", "atsd_canary", "atsd_column",
        "atsd_loop", "atsd_ops", "atsd_threads", "atsd_workload", "atsd_plan", "atsd_check", "atsd_schedule",
        "atsd_host", "atsd_trace", "atsd_instance", "atsd_verify", "atsd_device", "atsd_profile", "atsd_kexec")],
    include_dirs=["csrc"],
    extra_compile_args=["-O2", "-Wall", "-Wextra"],
    libraries=["pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
