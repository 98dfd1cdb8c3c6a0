/*
 * atsd - the standalone atsdbench runner for minimal systems (no Python).
 *
 * Runs the same plan as `atsdbench run` (rounds of fresh allocations, warm-up rounds and passes,
 * repetition-major order with strides shuffled by the seed, bystanders, latency) through the same
 * C core (atsd.h), and writes a line-oriented text file that `atsdbench import` turns into a
 * result file.  Format: "atsd-output 1", then "host", "config", "sample" lines and one "end" line;
 * each line is a keyword and tab-separated key=value fields.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_STRIDES 64

struct plan {
	uint64_t size;
	uint64_t strides[MAX_STRIDES];
	int nstrides;
	long rounds, reps, warmup, warmup_rounds, bystanders, cpu;
	int pages, latency, retouch;
	uint64_t seed;
	const char *label, *output;
	int32_t bystander_cpus[CPU_SETSIZE];
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("atsd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static const char *fmt_size(uint64_t n, char *buf, size_t len)
{
	static const char suffix[] = "TGMK";
	int shift;

	for (shift = 40; shift >= 10; shift -= 10) {
		if (n >= (1ULL << shift) && n % (1ULL << shift) == 0) {
			snprintf(buf, len, "%" PRIu64 "%c", n >> shift, suffix[(40 - shift) / 10]);
			return buf;
		}
	}
	snprintf(buf, len, "%" PRIu64, n);
	return buf;
}

static uint64_t parse_size(const char *text, const char *what)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (end == text || errno || text[0] == '-')
		die("%s '%s' is not a size (use a number with an optional K, M, G suffix, binary: 1G = 2^30)", what, text);
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if ((end[0] == 'i' || end[0] == 'I') && (end[1] == 'b' || end[1] == 'B'))
		end += 2;
	else if (end[0] == 'b' || end[0] == 'B')
		end++;
	if (*end)
		die("%s '%s' is not a size (use a number with an optional K, M, G suffix, binary: 1G = 2^30)", what, text);
	if (v == 0)
		die("%s must not be zero", what);
	return (uint64_t)v << shift;
}

static long parse_count(const char *text, const char *name, long minimum)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (end == text || *end || errno)
		die("--%s '%s' is not a whole number", name, text);
	if (v < minimum)
		die("--%s must be at least %ld (got %ld)", name, minimum, v);
	return v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* splitmix64: the stride order generator, shared with atsdbench.sweep (same seed, same order). */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

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

/* Sum of the /proc/interrupts "TLB" row (x86 shootdown IPIs received), -1 where absent. */
static int64_t tlb_ipis(void)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[8192];
	int64_t sum = -1;
	int ncpu = 0;

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {
		char *tok = strtok(line, " \t\n");
		for (; tok; tok = strtok(NULL, " \t\n"))
			ncpu++;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		while (*p == ' ')
			p++;
		if (!strncmp(p, "TLB:", 4)) {
			int i;
			char *end;
			p += 4;
			sum = 0;
			for (i = 0; i < ncpu; i++) {
				long long v = strtoll(p, &end, 10);
				if (end == p)
					break;
				sum += v;
				p = end;
			}
			break;
		}
	}
	fclose(f);
	return sum;
}

static void clean(char *s)
{
	for (; *s; s++)
		if (*s == '\t' || *s == '\n')
			*s = ' ';
}

static void read_line_of(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	snprintf(buf, len, "unknown");
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}

static void cpuinfo_field(const char *key, char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[1024];
	size_t n = strlen(key);

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, n) && (line[n] == ' ' || line[n] == '\t' || line[n] == ':')) {
			char *v = strchr(line, ':');
			if (v) {
				v++;
				while (*v == ' ' || *v == '\t')
					v++;
				v[strcspn(v, "\n")] = 0;
				snprintf(buf, len, "%s", v);
				break;
			}
		}
	}
	fclose(f);
}

static void write_host(FILE *out)
{
	struct utsname u;
	char model[256], mmu[64], online[256], thp[128];

	uname(&u);
	cpuinfo_field("model name", model, sizeof(model));
	if (!strcmp(model, "unknown"))
		cpuinfo_field("cpu", model, sizeof(model));
	cpuinfo_field("MMU", mmu, sizeof(mmu));
	read_line_of("/sys/devices/system/cpu/online", online, sizeof(online));
	read_line_of("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp));
	clean(u.version);
	clean(model);
	fprintf(out, "host\thostname=%s\tarch=%s\tkernel_release=%s\tkernel_version=%s\tcpu_model=%s\tmmu=%s"
		"\tonline_cpus=%s\tpage_size=%" PRId64 "\thugepage_size=%" PRId64 "\tthp_enabled=%s\n",
		u.nodename, u.machine, u.release, u.version, model, mmu, online, atsd_page_size(),
		atsd_hugepage_size(), thp);
}

static void usage(FILE *f)
{
	fputs("usage: atsd [--size 1G] [--strides 64K,1M,2M,4M] [--rounds 5] [--reps 4] [--warmup 1]\n"
	      "            [--warmup-rounds 1] [--pages base|thp|hugetlb] [--bystanders N] [--cpu N]\n"
	      "            [--latency] [--no-retouch] [--label TEXT] [--seed N] -o FILE\n"
	      "Measures mprotect(PROT_NONE) over a populated region in strides (GB/s = 10^9 bytes/s;\n"
	      "sizes binary) and writes FILE for `atsdbench import FILE`.\n", f);
}

static void parse(struct plan *p, int argc, char **argv)
{
	static const struct option opts[] = {
		{"size", required_argument, 0, 's'}, {"strides", required_argument, 0, 'S'},
		{"rounds", required_argument, 0, 'r'}, {"reps", required_argument, 0, 'n'},
		{"warmup", required_argument, 0, 'w'}, {"warmup-rounds", required_argument, 0, 'W'},
		{"pages", required_argument, 0, 'p'}, {"bystanders", required_argument, 0, 'b'},
		{"cpu", required_argument, 0, 'c'}, {"latency", no_argument, 0, 'l'},
		{"no-retouch", no_argument, 0, 'R'}, {"label", required_argument, 0, 'L'},
		{"seed", required_argument, 0, 'e'}, {"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	const char *strides = "64K,1M,2M,4M", *pages = "base";
	char *list, *tok;
	int c;

	memset(p, 0, sizeof(*p));
	p->size = 1ULL << 30;
	p->rounds = 5;
	p->reps = 4;
	p->warmup = 1;
	p->warmup_rounds = 1;
	p->cpu = -1;
	p->retouch = 1;
	p->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	p->seed &= 0x7fffffff;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': p->size = parse_size(optarg, "size"); break;
		case 'S': strides = optarg; break;
		case 'r': p->rounds = parse_count(optarg, "rounds", 1); break;
		case 'n': p->reps = parse_count(optarg, "reps", 1); break;
		case 'w': p->warmup = parse_count(optarg, "warmup", 0); break;
		case 'W': p->warmup_rounds = parse_count(optarg, "warmup-rounds", 0); break;
		case 'p': pages = optarg; break;
		case 'b': p->bystanders = parse_count(optarg, "bystanders", 0); break;
		case 'c': p->cpu = parse_count(optarg, "cpu", 0); break;
		case 'l': p->latency = 1; break;
		case 'R': p->retouch = 0; break;
		case 'L': p->label = optarg; break;
		case 'e': p->seed = (uint64_t)parse_count(optarg, "seed", 0); break;
		case 'o': p->output = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	if (!p->output)
		die("-o FILE is required (the output for `atsdbench import`)");
	if (!strcmp(pages, "base"))
		p->pages = ATSD_PAGES_BASE;
	else if (!strcmp(pages, "thp"))
		p->pages = ATSD_PAGES_THP;
	else if (!strcmp(pages, "hugetlb"))
		p->pages = ATSD_PAGES_HUGETLB;
	else
		die("--pages must be base, thp or hugetlb (got '%s')", pages);
	list = strdup(strides);
	for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		uint64_t s = parse_size(tok, "stride");
		int i, dup = 0;
		for (i = 0; i < p->nstrides; i++)
			dup |= p->strides[i] == s;
		if (dup)
			continue;
		if (p->nstrides == MAX_STRIDES)
			die("at most %d strides", MAX_STRIDES);
		p->strides[p->nstrides++] = s;
	}
	free(list);
	if (!p->nstrides)
		die("no stride given");
	qsort(p->strides, (size_t)p->nstrides, sizeof(p->strides[0]), cmp_u64);
}

/* The same checks, in the same words, as atsdbench.sweep.make_plan. */
static void validate(struct plan *p)
{
	uint64_t unit = (uint64_t)atsd_page_size();
	const char *unit_name = "page";
	char a[32], b[32];
	cpu_set_t mask;
	int i, others = 0;

	if (p->pages == ATSD_PAGES_HUGETLB) {
		int64_t hps = atsd_hugepage_size();
		if (hps <= 0)
			die("--pages hugetlb: this kernel has no hugetlb pages (no Hugepagesize in /proc/meminfo)");
		unit = (uint64_t)hps;
		unit_name = "huge page";
	}
	for (i = 0; i < p->nstrides; i++) {
		uint64_t s = p->strides[i];
		if (s % unit)
			die("stride %s is not a multiple of the %s size (%s)", fmt_size(s, a, sizeof(a)), unit_name,
			    fmt_size(unit, b, sizeof(b)));
		if (s > p->size)
			die("stride %s is larger than the size %s", fmt_size(s, a, sizeof(a)), fmt_size(p->size, b, sizeof(b)));
		if (p->size % s)
			die("size %s is not a multiple of stride %s", fmt_size(p->size, a, sizeof(a)), fmt_size(s, b, sizeof(b)));
	}
	if (p->size % unit)
		die("size %s is not a multiple of the %s size (%s)", fmt_size(p->size, a, sizeof(a)), unit_name,
		    fmt_size(unit, b, sizeof(b)));
	if (p->pages == ATSD_PAGES_HUGETLB) {
		int64_t free_pages = meminfo("HugePages_Free");
		uint64_t need = p->size / unit;
		if (free_pages < 0 || (uint64_t)free_pages < need)
			die("--pages hugetlb: the pool has %" PRId64 " free %s pages, %" PRIu64
			    " are needed (e.g. echo %" PRIu64 " > /proc/sys/vm/nr_hugepages)",
			    free_pages < 0 ? 0 : free_pages, fmt_size(unit, a, sizeof(a)), need, need);
	} else {
		int64_t avail = meminfo("MemAvailable");
		if (avail >= 0 && p->size > (uint64_t)avail)
			die("size %s is more than the memory available (%.1f GiB MemAvailable)",
			    fmt_size(p->size, a, sizeof(a)), (double)avail / (double)(1ULL << 30));
	}
	CPU_ZERO(&mask);
	if (sched_getaffinity(0, sizeof(mask), &mask))
		die("sched_getaffinity: %s", strerror(errno));
	if (p->cpu < 0) {
		for (i = 0; i < CPU_SETSIZE && !CPU_ISSET((size_t)i, &mask); i++)
			;
		p->cpu = i;
	} else if (p->cpu >= CPU_SETSIZE || !CPU_ISSET((size_t)p->cpu, &mask)) {
		die("--cpu %ld is not in this process's CPU affinity", p->cpu);
	}
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (CPU_ISSET((size_t)i, &mask) && i != p->cpu) {
			if (others < p->bystanders)
				p->bystander_cpus[others] = i;
			others++;
		}
	}
	if (p->bystanders > others)
		die("--bystanders %ld needs %ld other CPUs, but the affinity mask has %d besides CPU %ld",
		    p->bystanders, p->bystanders, others, p->cpu);
}

static void write_config(FILE *out, const struct plan *p)
{
	static const char *pages[] = {"base", "thp", "hugetlb"};
	int i;

	fprintf(out, "config\tsize=%" PRIu64 "\tstrides=", p->size);
	for (i = 0; i < p->nstrides; i++)
		fprintf(out, "%s%" PRIu64, i ? "," : "", p->strides[i]);
	fprintf(out, "\trounds=%ld\treps=%ld\twarmup=%ld\twarmup_rounds=%ld\tpages=%s\tbystanders=%ld\tcpu=%ld"
		"\tbystander_cpus=", p->rounds, p->reps, p->warmup, p->warmup_rounds, pages[p->pages],
		p->bystanders, p->cpu);
	for (i = 0; i < p->bystanders; i++)
		fprintf(out, "%s%d", i ? "," : "", p->bystander_cpus[i]);
	fprintf(out, "\tlatency=%d\tretouch=%d\tseed=%" PRIu64, p->latency, p->retouch, p->seed);
	if (p->label) {
		char *label = strdup(p->label);
		clean(label);
		fprintf(out, "\tlabel=%s", label);
		free(label);
	}
	fputc('\n', out);
}

static int cmp_lat(const void *a, const void *b)
{
	return cmp_u64(a, b);
}

static uint64_t pct(const uint64_t *sorted, uint64_t n, double q)
{
	/* nearest rank */
	uint64_t k = (uint64_t)(q * (double)n + 0.999999);
	return sorted[(k ? k : 1) - 1];
}

static int run_round(FILE *out, const struct plan *p, long round, int warmup_round)
{
	struct atsd_region r;
	uint64_t align = 2ULL << 20, state = p->seed * 1000003ULL + (uint64_t)round, order[MAX_STRIDES];
	uint64_t *lat = NULL;
	int err, dirty = 0, i;
	long rep, position = 0;

	if (p->strides[p->nstrides - 1] > align)
		align = p->strides[p->nstrides - 1];
	err = atsd_region_map(&r, p->size, align, p->pages);
	if (err)
		return err;
	if (p->latency) {
		lat = malloc(sizeof(*lat) * (size_t)(p->size / p->strides[0]));
		if (!lat) {
			atsd_region_unmap(&r);
			return -ENOMEM;
		}
	}
	for (rep = 0; rep < p->warmup + p->reps && !interrupted; rep++) {
		memcpy(order, p->strides, sizeof(order[0]) * (size_t)p->nstrides);
		for (i = p->nstrides - 1; i > 0; i--) {  /* Fisher-Yates */
			int j = (int)(splitmix64(&state) % (uint64_t)(i + 1));
			uint64_t t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < p->nstrides && !interrupted; i++, position++) {
			uint64_t ns, done, calls = p->size / order[i];
			int64_t ipi0, ipi1;

			if (dirty && (err = atsd_region_restore(&r, p->retouch)))
				goto out;
			ipi0 = tlb_ipis();
			err = atsd_pass(&r, order[i], &ns, lat, &done);
			ipi1 = tlb_ipis();
			dirty = 1;
			if (err) {
				char a[32];
				fprintf(stderr, "atsd: mprotect(PROT_NONE) failed at call %" PRIu64 " of stride %s: %s\n",
					done + 1, fmt_size(order[i], a, sizeof(a)), strerror(-err));
				goto out;
			}
			fprintf(out, "sample\tround=%ld\trep=%ld\torder=%ld\tstride_bytes=%" PRIu64 "\twarmup=%d\tns=%" PRIu64
				"\tcalls=%" PRIu64, round, rep, position, order[i], warmup_round || rep < p->warmup, ns, calls);
			if (ipi0 >= 0 && ipi1 >= 0)
				fprintf(out, "\tipis=%" PRId64, ipi1 - ipi0);
			if (lat) {
				qsort(lat, calls, sizeof(*lat), cmp_lat);
				fprintf(out, "\tlat_p50_ns=%" PRIu64 "\tlat_p90_ns=%" PRIu64 "\tlat_p99_ns=%" PRIu64
					"\tlat_max_ns=%" PRIu64, pct(lat, calls, .50), pct(lat, calls, .90),
					pct(lat, calls, .99), lat[calls - 1]);
			}
			fputc('\n', out);
			fflush(out);
		}
	}
out:
	free(lat);
	atsd_region_unmap(&r);
	return err;
}

int main(int argc, char **argv)
{
	struct plan p;
	struct atsd_bystanders *b = NULL;
	FILE *out;
	long round;
	int err = 0;

	parse(&p, argc, argv);
	validate(&p);
	out = fopen(p.output, "w");  /* before measuring: an unwritable output loses nothing */
	if (!out)
		die("cannot write output %s: %s", p.output, strerror(errno));
	fprintf(out, "atsd-output 1\n");
	write_host(out);
	write_config(out, &p);
	signal(SIGINT, on_sigint);
	if ((err = atsd_pin_self((int32_t)p.cpu)) || (err = atsd_bystanders_start(&b, p.bystander_cpus, (int32_t)p.bystanders))) {
		fprintf(out, "end\tcomplete=0\n");
		fclose(out);
		die("setting up CPU %ld and bystanders: %s", p.cpu, strerror(-err));
	}
	for (round = 0; round < p.warmup_rounds + p.rounds && !interrupted && !err; round++) {
		err = run_round(out, &p, round, round < p.warmup_rounds);
		if (err && err != -EINTR && !interrupted)
			break;
	}
	atsd_bystanders_stop(b, NULL);
	fprintf(out, "end\tcomplete=%d\n", !err && !interrupted);
	fclose(out);
	if (err) {
		fprintf(stderr, "atsd: wrote the finished samples to %s\n", p.output);
		return 2;
	}
	if (interrupted) {
		fprintf(stderr, "atsd: interrupted; wrote the finished samples to %s\n", p.output);
		return 130;
	}
	printf("wrote %s (atsdbench import %s)\n", p.output, p.output);
	return 0;
}
