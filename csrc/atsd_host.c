/*
 * atsd_host.c - the host facts a plan is checked against (struct atsd_host), read from this
 * system: page sizes, memory, the CPUs this process may run on and their cores, the quiet ones.
 *
 * Apart from the plan (atsd_plan.c), which takes them as given, so its tests inject them.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int64_t meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t n = strlen(key);
	int64_t v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, n) && line[n] == ':') {
			long long x;
			char unit[8] = "";
			if (sscanf(line + n + 1, "%lld %7s", &x, unit) >= 1)
				v = (int64_t)x * (strcmp(unit, "kB") ? 1 : 1024);
			break;
		}
	}
	fclose(f);
	return v;
}

static int read_int(const char *path, int fallback)
{
	FILE *f = fopen(path, "r");
	int v = fallback;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = fallback;
		fclose(f);
	}
	return v;
}

/* Is cpu in the kernel's CPU list file ("1-3,8"; empty or missing: no)? */
static int in_cpulist(const char *path, int cpu)
{
	char buf[4096], *s, *end;
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (s = buf; *s && *s != '\n';) {
		long lo = strtol(s, &end, 10), hi = lo;
		if (end == s)
			return 0;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (cpu >= lo && cpu <= hi)
			return 1;
		s = *end == ',' ? end + 1 : end;
		if (*s && *s != '\n' && (*s < '0' || *s > '9'))
			return 0;
	}
	return 0;
}

int atsd_host_probe(struct atsd_host *h)
{
	cpu_set_t mask;
	int64_t hps = atsd_hugepage_size(), ps = atsd_page_size();
	int i;

	memset(h, 0, sizeof(*h));
	h->cpu0_core = -1;
	if (ps < 0)
		return (int)ps;
	h->page_size = (uint64_t)ps;
	h->hugepage_size = hps > 0 ? (uint64_t)hps : 0;
	{
		FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
		unsigned long long t = 0;
		if (f) {
			if (fscanf(f, "%llu", &t) != 1 || (t & (t - 1)))
				t = 0;
			fclose(f);
		}
		h->thp_size = t;
	}
	h->mem_available = meminfo("MemAvailable");
	h->hmm_device = access(atsd_device_path(), R_OK | W_OK) == 0;
	h->hugepages_free = meminfo("HugePages_Free");
	CPU_ZERO(&mask);
	if (sched_getaffinity(0, sizeof(mask), &mask))
		return -errno;
	for (i = 0; i < CPU_SETSIZE && i < ATSD_MAX_CPUS; i++) {
		char path[96];
		int pkg, core;
		if (!CPU_ISSET((size_t)i, &mask))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_id", i);
		core = read_int(path, -1);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", i);
		pkg = read_int(path, 0);
		h->affinity[h->naffinity] = i;
		h->quiet[h->naffinity] = in_cpulist("/sys/devices/system/cpu/isolated", i) ||
					 in_cpulist("/sys/devices/system/cpu/nohz_full", i);
		h->core[h->naffinity++] = core < 0 ? -1 : (pkg & 0x7fff) << 16 | (core & 0xffff);
	}
	{
		int core = read_int("/sys/devices/system/cpu/cpu0/topology/core_id", -1);
		int pkg = read_int("/sys/devices/system/cpu/cpu0/topology/physical_package_id", 0);
		h->cpu0_core = core < 0 ? -1 : (pkg & 0x7fff) << 16 | (core & 0xffff);
	}
	return 0;
}
