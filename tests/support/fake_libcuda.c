/*
 * A fake libcuda.so.1 for tests (a test double, not a driver): records every call in
 * $FAKE_CUDA_LOG, returns the error $FAKE_CUDA_FAIL="cuName=code" names (after
 * $FAKE_CUDA_FAIL_AFTER successful calls of it, default 0), reports pageable
 * memory access unless FAKE_CUDA_PAGEABLE=0, and "launches" the touch kernel on the CPU:
 * it reads one word per page from the parameters it was given.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static char errname[64], errtext[64];

static CUresult rec(const char *call, const char *fmt, unsigned long long a, unsigned long long b)
{
	const char *log = getenv("FAKE_CUDA_LOG"), *fail = getenv("FAKE_CUDA_FAIL");
	if (log) {
		FILE *f = fopen(log, "a");
		if (f) {
			fprintf(f, "%s", call);
			if (fmt)
				fprintf(f, fmt, a, b);
			fputc('\n', f);
			fclose(f);
		}
	}
	if (fail) {
		static int matched;
		const char *after = getenv("FAKE_CUDA_FAIL_AFTER");
		size_t n = strlen(call);
		if (!strncmp(fail, call, n) && fail[n] == '=' && ++matched > (after ? atoi(after) : 0))
			return atoi(fail + n + 1);
	}
	return 0;
}

CUresult cuInit(unsigned int flags) { (void)flags; return rec("cuInit", NULL, 0, 0); }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return rec("cuDriverGetVersion", NULL, 0, 0); }
CUresult cuDeviceGetCount(int *c) { *c = 1; return rec("cuDeviceGetCount", NULL, 0, 0); }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return rec("cuDeviceGet", NULL, 0, 0); }
CUresult cuDeviceGetName(char *name, int len, int dev)
{
	(void)dev;
	snprintf(name, (size_t)len, "Fake GPU");
	return rec("cuDeviceGetName", NULL, 0, 0);
}
CUresult cuDeviceGetAttribute(int *pi, int attrib, int dev)
{
	const char *pageable = getenv("FAKE_CUDA_PAGEABLE");
	(void)dev;
	switch (attrib) {
	case 75: *pi = 9; break;
	case 76: *pi = 0; break;
	case 88: *pi = !(pageable && !strcmp(pageable, "0")); break;
	case 100: *pi = 0; break;
	default: *pi = 0;
	}
	return rec("cuDeviceGetAttribute", " %llu", (unsigned long long)attrib, 0);
}
static int ctx_token;
CUresult cuDevicePrimaryCtxRetain(void **pctx, int dev) { (void)dev; *pctx = &ctx_token; return rec("cuDevicePrimaryCtxRetain", NULL, 0, 0); }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return rec("cuDevicePrimaryCtxRelease_v2", NULL, 0, 0); }
CUresult cuCtxSetCurrent(void *ctx) { (void)ctx; return rec("cuCtxSetCurrent", NULL, 0, 0); }
CUresult cuCtxSynchronize(void) { return rec("cuCtxSynchronize", NULL, 0, 0); }
static int module_token, func_token;
CUresult cuModuleLoadData(void **mod, const void *image)
{
	*mod = &module_token;
	return rec("cuModuleLoadData", strstr(image, ".entry atsd_touch") ? " ptx-ok" : " ptx-bad", 0, 0);
}
CUresult cuModuleUnload(void *mod) { (void)mod; return rec("cuModuleUnload", NULL, 0, 0); }
CUresult cuModuleGetFunction(void **f, void *mod, const char *name)
{
	(void)mod;
	*f = &func_token;
	return rec("cuModuleGetFunction", strcmp(name, "atsd_touch") ? " wrong-name" : NULL, 0, 0);
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
			unsigned shared, void *stream, void **params, void **extra)
{
	uint64_t base = *(uint64_t *)params[0], n = *(uint64_t *)params[1], step = *(uint64_t *)params[2], i;
	volatile uint64_t sum = 0;
	CUresult rc = rec("cuLaunchKernel", " npages=%llu step=%llu", (unsigned long long)n, (unsigned long long)step);
	(void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)stream; (void)extra;
	if (rc)
		return rc;
	for (i = 0; i < n; i++)
		sum += *(volatile uint64_t *)(uintptr_t)(base + i * step);
	return 0;
}
CUresult cuGetErrorName(CUresult e, const char **s) { snprintf(errname, sizeof(errname), "CUDA_ERROR_FAKE_%d", e); *s = errname; return 0; }
CUresult cuGetErrorString(CUresult e, const char **s) { snprintf(errtext, sizeof(errtext), "fake error %d", e); *s = errtext; return 0; }
