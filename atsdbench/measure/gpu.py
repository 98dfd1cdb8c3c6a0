"""--gpu: make a GPU hold translations of the region, so every mprotect must invalidate them too.

The CUDA driver API is loaded at run time through cffi's ABI mode (libcuda.so.1): building or
installing atsdbench needs no CUDA toolkit.  The GPU reads one word per base page of the region
with a small PTX kernel (JIT-compiled by the driver) before each timed pass, after the CPU re-touch;
that touch is timed separately and never inside the mprotect timing.  This works only where the
GPU reaches pageable memory: ATS (POWER9 NVLink NPUs, Grace C2C) or HMM (x86 with NVIDIA's open
kernel modules); elsewhere it stops with one clear line.  ATSDBENCH_LIBCUDA names another library.
"""
import os
import time

from ..errors import UsageError

CDEF = """
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int *version);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxSynchronize(void);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleUnload(CUmodule hmod);
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);
CUresult cuGetErrorName(CUresult error, const char **pStr);
CUresult cuGetErrorString(CUresult error, const char **pStr);
"""

# cuda.h's CUdevice_attribute values (stable ABI).
ATTR_CC_MAJOR, ATTR_CC_MINOR = 75, 76
ATTR_PAGEABLE_MEMORY_ACCESS = 88
ATTR_PAGEABLE_USES_HOST_PAGE_TABLES = 100

KERNEL = "atsd_touch"
# sm_70 (Volta, the POWER9 NVLink GPU) is the lowest target: the driver JIT-compiles this PTX for
# any newer GPU.  Grid-stride loop; volatile loads so none is optimised away.
PTX = r"""
.version 6.0
.target sm_70
.address_size 64

.visible .entry atsd_touch(
	.param .u64 atsd_touch_base,
	.param .u64 atsd_touch_npages,
	.param .u64 atsd_touch_step
)
{
	.reg .pred	%p<2>;
	.reg .b32	%r<5>;
	.reg .b64	%rd<10>;

	ld.param.u64	%rd1, [atsd_touch_base];
	ld.param.u64	%rd2, [atsd_touch_npages];
	ld.param.u64	%rd3, [atsd_touch_step];
	mov.u32	%r1, %ctaid.x;
	mov.u32	%r2, %ntid.x;
	mov.u32	%r3, %tid.x;
	mov.u32	%r4, %nctaid.x;
	mul.wide.u32	%rd4, %r1, %r2;
	cvt.u64.u32	%rd5, %r3;
	add.u64	%rd4, %rd4, %rd5;
	mul.wide.u32	%rd6, %r4, %r2;
LOOP:
	setp.ge.u64	%p1, %rd4, %rd2;
	@%p1 bra	DONE;
	mul.lo.u64	%rd7, %rd4, %rd3;
	add.u64	%rd8, %rd1, %rd7;
	ld.volatile.global.u64	%rd9, [%rd8];
	add.u64	%rd4, %rd4, %rd6;
	bra.uni	LOOP;
DONE:
	ret;
}
"""
THREADS = 256
MAX_BLOCKS = 4096


class CudaError(UsageError):
    pass


class Driver:
    def __init__(self, path=None):
        from cffi import FFI

        self.ffi = FFI()
        self.ffi.cdef(CDEF)
        path = path or os.environ.get("ATSDBENCH_LIBCUDA") or "libcuda.so.1"
        try:
            self.lib = self.ffi.dlopen(path)
        except OSError as e:
            from .._cli import WIDTH, cause

            room = WIDTH - len("atsdbench: ")
            why = cause(e, max(room - len(f"--gpu: cannot load {path}: "), 30))
            said = f"--gpu: cannot load {path} (the NVIDIA driver's library): {why}"
            raise CudaError(said if len(said) <= room else f"--gpu: cannot load {path}: {why}") from None

    def check(self, rc, call):
        if rc != 0:
            name, text = self.ffi.new("const char **"), self.ffi.new("const char **")
            try:
                ok = self.lib.cuGetErrorName(rc, name) == 0 and self.lib.cuGetErrorString(rc, text) == 0
            except AttributeError:
                ok = False
            string = self.ffi.string
            detail = f"{string(name[0]).decode()} ({string(text[0]).decode()})" if ok else f"error {rc}"
            raise CudaError(f"--gpu: {call} failed: {detail}")

    def call(self, name, *args):
        try:
            fn = getattr(self.lib, name)
        except AttributeError:
            raise CudaError(f"--gpu: the CUDA driver has no {name} (driver too old?)") from None
        self.check(fn(*args), name)


class Toucher:
    """A GPU context that reads one word per base page of a region on demand.  Nothing is
    registered: with ATS or HMM the GPU reaches the region by its CPU address."""

    def __init__(self, ordinal=0, path=None):
        self._retained, self._module = False, None
        d = self.driver = Driver(path)
        ffi = d.ffi
        d.call("cuInit", 0)
        count = ffi.new("int *")
        d.call("cuDeviceGetCount", count)
        if ordinal >= count[0]:
            raise CudaError(f"--gpu {ordinal}: this machine has {count[0]} CUDA device(s)")
        dev = ffi.new("CUdevice *")
        d.call("cuDeviceGet", dev, ordinal)
        self.device = dev[0]
        name = ffi.new("char[256]")
        d.call("cuDeviceGetName", name, 256, self.device)
        version = ffi.new("int *")
        d.call("cuDriverGetVersion", version)

        def attr(a):
            out = ffi.new("int *")
            d.call("cuDeviceGetAttribute", out, a, self.device)
            return out[0]

        self.facts = {"index": ordinal, "name": ffi.string(name).decode(errors="replace"),
                      "driver_version": f"{version[0] // 1000}.{version[0] % 1000 // 10}",
                      "compute_capability": f"{attr(ATTR_CC_MAJOR)}.{attr(ATTR_CC_MINOR)}",
                      "pageable_memory_access": bool(attr(ATTR_PAGEABLE_MEMORY_ACCESS)),
                      "uses_host_page_tables": bool(attr(ATTR_PAGEABLE_USES_HOST_PAGE_TABLES))}
        self.facts["path"] = ("ATS (GPU walks the CPU page tables)" if self.facts["uses_host_page_tables"]
                              else "HMM (driver mirrors the page tables; mmu notifier)"
                              if self.facts["pageable_memory_access"] else "none")
        if not self.facts["pageable_memory_access"]:
            # no pageable-memory access: the GPU holds no translation of the region
            raise CudaError(f"--gpu {ordinal} ({self.facts['name']}): neither ATS nor HMM, nothing for mprotect to "
                            "flush")
        self._ctx = ffi.new("CUcontext *")
        d.call("cuDevicePrimaryCtxRetain", self._ctx, self.device)
        self._retained = True
        try:
            d.call("cuCtxSetCurrent", self._ctx[0])
            module = ffi.new("CUmodule *")
            d.call("cuModuleLoadData", module, ffi.new("char[]", PTX.encode()))
            self._module = module
            self._func = ffi.new("CUfunction *")
            d.call("cuModuleGetFunction", self._func, self._module[0], KERNEL.encode())
        except BaseException:
            self.close()
            raise

    def touch(self, region):
        """Read one word per base page from the GPU; returns the wall time of launch + sync in ns."""
        ffi, d = self.driver.ffi, self.driver
        r = region._r
        npages = r.size // r.page_size
        base = ffi.new("uint64_t *", int(ffi.cast("uintptr_t", r.addr)))
        count = ffi.new("uint64_t *", npages)
        step = ffi.new("uint64_t *", r.page_size)
        params = ffi.new("void *[3]", [base, count, step])
        blocks = max(1, min(MAX_BLOCKS, (npages + THREADS - 1) // THREADS))
        t0 = time.perf_counter_ns()
        d.call("cuLaunchKernel", self._func[0], blocks, 1, 1, THREADS, 1, 1, 0, ffi.NULL, params, ffi.NULL)
        d.call("cuCtxSynchronize")
        return time.perf_counter_ns() - t0

    def close(self):
        from ..signals import held

        d = self.driver
        with held():  # each handle is cleared before it is released: a second close releases nothing
            module, self._module = self._module, None
            if module is not None:
                d.lib.cuModuleUnload(module[0])
            retained, self._retained = self._retained, False
            if retained:
                try:
                    d.lib.cuDevicePrimaryCtxRelease_v2(self.device)
                except AttributeError:
                    pass


def open_toucher(ordinal=0):
    return Toucher(ordinal)
