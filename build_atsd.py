"""cffi build script (API mode).  Lives outside the package so it is never imported at run time.

The cdef is cut from the marked block of csrc/atsd.h: the header is the one declaration of the C API.
"""
import pathlib

from cffi import FFI

CSRC = pathlib.Path(__file__).resolve().parent / "csrc"
BEGIN, END = "/* ATSD-CDEF-BEGIN */", "/* ATSD-CDEF-END */"


def cdef_from_header(text):
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:stop]


ffibuilder = FFI()
ffibuilder.cdef(cdef_from_header((CSRC / "atsd.h").read_text()))
ffibuilder.set_source(
    "atsdbench._atsd",
    '#include "atsd.h"',
    sources=["csrc/atsd.c", "csrc/atsd_ops.c", "csrc/atsd_plan.c", "csrc/atsd_host.c", "csrc/atsd_trace.c",
             "csrc/atsd_instance.c", "csrc/atsd_verify.c", "csrc/atsd_device.c", "csrc/atsd_profile.c", "csrc/atsd_kexec.c"],
    include_dirs=["csrc"],
    extra_compile_args=["-O2", "-Wall", "-Wextra"],
    libraries=["pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
