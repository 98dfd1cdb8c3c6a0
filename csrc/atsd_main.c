/*
 * atsd - the standalone atsdbench runner for minimal systems (no Python).
 *
 * A thin front end: its options come from the option table (atsd_options.h), the plan is parsed,
 * checked and ordered by the same C code as `atsdbench run` (atsd_plan.c), and measured through the
 * same core (atsd.c).  It writes a line-oriented text file that `atsdbench import` turns into a
 * result file.  Format: "atsd-output 1", then "host", "config", "sample" lines and one "end" line;
 * each line is a keyword and tab-separated key=value fields.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

/* SIGINT and SIGTERM alike: finish the pass under way, write what is finished. */
static void on_signal(int sig)
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

static int cmp_lat(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
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
	struct atsd_option o;
	int i;

	fputs("usage: atsd [options] -o FILE\n"
	      "Measures mprotect(PROT_NONE) over a populated region in strides (GB/s = 10^9 bytes/s;\n"
	      "sizes binary) and writes FILE for `atsdbench import FILE`.  Options:\n", f);
	for (i = 0; atsd_option_get(i, &o) == 0; i++) {
		char left[64];
		if (!(o.fronts & ATSD_FRONT_ATSD))
			continue;
		if (o.short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", (char)o.short_name, o.name, o.metavar ? " " : "",
				 o.metavar ? o.metavar : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o.name, o.metavar ? " " : "", o.metavar ? o.metavar : "");
		fprintf(f, "  %-28s %s", left, o.help);
		if (o.metavar && o.default_value)
			fprintf(f, " (default %s)", o.default_value);
		fputc('\n', f);
	}
}

/* getopt_long's table, built from the option table: the option's index is its value. */
static const char *parse(struct atsd_plan *p, int argc, char **argv)
{
	struct option opts[64];
	struct atsd_option o;
	const char *output = NULL;
	char msg[512];
	int i, n = 0, c, idx;

	atsd_plan_init(p);
	for (i = 0; atsd_option_get(i, &o) == 0 && n < 62; i++) {
		if (!(o.fronts & ATSD_FRONT_ATSD))
			continue;
		opts[n++] = (struct option){o.name, o.metavar ? (o.const_value ? optional_argument : required_argument)
					    : no_argument, NULL, 1000 + i};
	}
	opts[n++] = (struct option){"help", no_argument, NULL, 'h'};
	opts[n] = (struct option){NULL, 0, NULL, 0};
	while ((c = getopt_long(argc, argv, "o:h", opts, &idx)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == 'o') {
			output = optarg;
			continue;
		}
		if (c < 1000 || atsd_option_get(c - 1000, &o)) {
			usage(stderr);
			exit(2);
		}
		if (!o.field) {  /* the front end's own: only output */
			output = optarg;
			continue;
		}
		if (atsd_plan_set(p, o.field, o.metavar ? (optarg ? optarg : o.const_value) : o.const_value, msg,
				  sizeof(msg)))
			die("%s", msg);
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	if (!output)
		die("-o FILE is required (the output for `atsdbench import`)");
	if (!*output)
		die("-o: the output path is empty");
	return output;
}

static void write_config(FILE *out, const struct atsd_plan *p)
{
	static const char *pages[] = {"base", "thp", "hugetlb"};
	int i;

	fprintf(out, "config\tsize=%" PRIu64 "\tstrides=", p->size);
	for (i = 0; i < p->nstrides; i++)
		fprintf(out, "%s%" PRIu64, i ? "," : "", p->strides[i]);
	fprintf(out, "\trounds=%d\treps=%d\twarmup=%d\twarmup_rounds=%d\tpages=", p->rounds, p->reps, p->warmup,
		p->warmup_rounds);
	for (i = 0; i < p->npages; i++)  /* a list: an axis */
		fprintf(out, "%s%s", i ? "," : "", pages[p->pages[i]]);
	fputs("\tbystanders=", out);
	for (i = 0; i < p->nbystanders; i++)
		fprintf(out, "%s%d", i ? "," : "", p->bystanders[i]);
	fprintf(out, "\tcpu=%d\tbystander_cpus=", p->cpu);
	for (i = 0; i < p->nbystander_cpus; i++)
		fprintf(out, "%s%d", i ? "," : "", p->bystander_cpus[i]);
	fprintf(out, "\tlatency=%d\tretouch=%d\tseed=%" PRIu64 "\tspread=%g", p->latency, p->retouch, p->seed,
		p->spread);
	if (p->label_set) {
		char label[sizeof(p->label)];
		memcpy(label, p->label, sizeof(label));
		clean(label);
		fprintf(out, "\tlabel=%s", label);
	}
	fputc('\n', out);
}

/* The output is built in memory and written once at the end: two atsd writing one path cannot
 * interleave (a regular file is replaced by rename), and when writing fails the finished samples
 * go to stdout instead of being lost. */
struct output {
	const char *path;
	char *buf;
	size_t len;
	FILE *mem;
};

static int regular_or_absent(const char *path)
{
	struct stat st;

	return lstat(path, &st) ? errno == ENOENT : S_ISREG(st.st_mode);
}

/* The same checks, in the same words, as atsdbench's outfile.check_writable, except that a
 * character device or FIFO (a console, a pipe in an initramfs) is written through, not refused. */
static void output_open(struct output *o, const char *path)
{
	struct stat st;
	char *dir = strdup(path), *slash;
	const char *folder;

	o->path = path;
	if (!dir)
		die("out of memory");
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	folder = slash ? dir : ".";
	if (!lstat(path, &st) && !S_ISREG(st.st_mode)) {
		int fd;
		if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
			die("output %s is %s, not a regular file: refusing to replace it", path,
			    S_ISDIR(st.st_mode) ? "a directory" : S_ISLNK(st.st_mode) ? "a symbolic link" :
			    S_ISBLK(st.st_mode) ? "a block device" : "a socket");
		fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK);
		if (fd < 0)
			die("cannot write output %s: %s", path, strerror(errno));
		close(fd);
	} else if (stat(folder, &st) || !S_ISDIR(st.st_mode)) {
		die("cannot write output %s: no directory %s", path, folder);
	} else if (access(folder, W_OK | X_OK) || (!access(path, F_OK) && access(path, W_OK))) {
		struct statvfs vfs;
		int rdonly = !statvfs(folder, &vfs) && (vfs.f_flag & ST_RDONLY);
		die("cannot write output %s: %s", path, strerror(rdonly ? EROFS : EACCES));
	}
	free(dir);
	o->mem = open_memstream(&o->buf, &o->len);
	if (!o->mem)
		die("open_memstream: %s", strerror(errno));
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* 0, or -errno with the output dumped to stdout. */
static int output_close(struct output *o)
{
	char tmp[4096];
	int fd, err = 0, regular = regular_or_absent(o->path);

	if (fclose(o->mem))
		return -errno;
	if (regular) {
		snprintf(tmp, sizeof(tmp), "%s.tmp%ld", o->path, (long)getpid());
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	} else {
		fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	}
	if (fd < 0)
		err = -errno;
	if (!err)
		err = write_all(fd, o->buf, o->len);
	if (!err && regular && fsync(fd))
		err = -errno;
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	if (!err && regular && rename(tmp, o->path))
		err = -errno;
	if (err && regular && fd >= 0)
		unlink(tmp);
	if (err) {
		fprintf(stderr, "atsd: cannot write %s: %s; the output follows on stdout\n", o->path, strerror(-err));
		fwrite(o->buf, 1, o->len, stdout);
		fflush(stdout);
	}
	free(o->buf);
	return err;
}
static uint64_t pct(const uint64_t *sorted, uint64_t n, double q)
{
	/* nearest rank */
	uint64_t k = (uint64_t)(q * (double)n + 0.999999);
	return sorted[(k ? k : 1) - 1];
}

static const char *const page_names[] = {"base", "thp", "hugetlb"};

/* One cell of one round: a fresh region with the cell's pages, its passes in the order of
 * atsd_round_order(round * ncells + cell).  first: the round position of its first pass. */
static int run_cell(FILE *out, const struct atsd_plan *p, int32_t round, int warmup_round, int32_t cell,
		    const struct atsd_cell *c, int first)
{
	struct atsd_region r;
	uint64_t *order, *lat = NULL;
	int err, dirty = 0, n, i;

	n = (p->warmup + p->reps) * p->nstrides;
	order = malloc(sizeof(*order) * (size_t)n);
	if (!order)
		return -ENOMEM;
	atsd_round_order(p, round * atsd_plan_cells(p) + cell, order, (uint64_t)n);
	err = atsd_region_map(&r, p->size, p->align, c->pages);
	if (err) {
		free(order);
		return err;
	}
	if (p->latency) {
		lat = malloc(sizeof(*lat) * (size_t)(p->size / p->strides[0]));
		if (!lat) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (i = 0; i < n && !interrupted; i++) {
		uint64_t ns, done, calls = p->size / order[i];
		int rep = i / p->nstrides;
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
		fprintf(out, "sample\tround=%d\trep=%d\torder=%d\tstride_bytes=%" PRIu64 "\twarmup=%d\tns=%" PRIu64
			"\tcalls=%" PRIu64, round, rep, first + i, order[i], warmup_round || rep < p->warmup, ns, calls);
		if (atsd_plan_cells(p) > 1)
			fprintf(out, "\tcell=%d\tbystanders=%d\tpages=%s", cell, c->bystanders, page_names[c->pages]);
		if (ipi0 >= 0 && ipi1 >= 0)
			fprintf(out, "\tipis=%" PRId64, ipi1 - ipi0);
		if (lat) {
			qsort(lat, calls, sizeof(*lat), cmp_lat);
			fprintf(out, "\tlat_p50_ns=%" PRIu64 "\tlat_p90_ns=%" PRIu64 "\tlat_p99_ns=%" PRIu64
				"\tlat_max_ns=%" PRIu64, pct(lat, calls, .50), pct(lat, calls, .90),
				pct(lat, calls, .99), lat[calls - 1]);
		}
		fputc('\n', out);
	}
out:
	free(lat);
	free(order);
	atsd_region_unmap(&r);
	return err;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps between rounds, never inside one; a signal ends the wait (and the run). */
static void sleep_until(double t)
{
	double left = t - now_s();

	if (left > 0) {
		struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	struct atsd_plan p;
	struct atsd_host h;
	struct atsd_bystanders *b = NULL;
	struct output o;
	char msg[512];
	int32_t round, cells[256], ncells, i, nrunning = -1;
	int err = 0;
	double first = 0;

	o.path = parse(&p, argc, argv);
	if ((err = atsd_host_probe(&h)))
		die("reading the host's facts: %s", strerror(-err));
	if (atsd_plan_check(&p, &h, msg, sizeof(msg)))
		die("%s", msg);
	output_open(&o, o.path);  /* before measuring: an unwritable output loses nothing */
	fprintf(o.mem, "atsd-output 1\n");
	write_host(o.mem);
	write_config(o.mem, &p);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if ((err = atsd_pin_self(p.cpu))) {
		fprintf(stderr, "atsd: pinning to CPU %d: %s\n", p.cpu, strerror(-err));
		fprintf(o.mem, "end\tcomplete=0\n");
		output_close(&o);
		return 2;
	}
	for (round = 0; round < p.warmup_rounds + p.rounds && !interrupted && !err; round++) {
		int32_t k = round - p.warmup_rounds;  /* measured round k, paced over --spread */
		if (k == 0)
			first = now_s();
		else if (k > 0 && p.spread > 0)
			sleep_until(first + k * p.spread / p.rounds);
		if (interrupted)
			break;
		ncells = atsd_cell_order(&p, round, cells, 256);
		for (i = 0; i < ncells && !interrupted && !err; i++) {
			struct atsd_cell c;
			atsd_plan_cell(&p, ncells > 1 ? cells[i] : 0, &c);
			if (!b || nrunning != c.bystanders) {  /* between cells, never inside a pass */
				atsd_bystanders_stop(b, NULL);
				b = NULL;
				nrunning = c.bystanders;
				if ((err = atsd_bystanders_start(&b, p.bystander_cpus, c.bystanders))) {
					fprintf(stderr, "atsd: starting %d bystanders: %s\n", c.bystanders, strerror(-err));
					break;
				}
			}
			err = run_cell(o.mem, &p, round, round < p.warmup_rounds, ncells > 1 ? cells[i] : 0, &c,
				       i * (p.warmup + p.reps) * p.nstrides);
		}
		if (err && err != -EINTR && !interrupted)
			break;
	}
	atsd_bystanders_stop(b, NULL);
	fprintf(o.mem, "end\tcomplete=%d\n", !err && !interrupted);
	if (output_close(&o))
		return 2;
	if (err) {
		fprintf(stderr, "atsd: wrote the finished samples to %s\n", o.path);
		return 2;
	}
	if (interrupted) {
		fprintf(stderr, "atsd: interrupted; wrote the finished samples to %s\n", o.path);
		return 130;
	}
	printf("wrote %s (atsdbench import %s)\n", o.path, o.path);
	return 0;
}
