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
#include <sys/resource.h>
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

/* "0-3,8" -> CPUs into out (at most cap); the count, or -1 for text that is not a CPU list. */
static int32_t parse_cpulist(const char *text, int32_t *out, int32_t cap)
{
	int32_t n = 0;
	const char *q = text;

	while (*q && *q != '\n') {
		char *end;
		long lo = strtol(q, &end, 10), hi, c;
		if (end == q || lo < 0)
			return -1;
		hi = lo;
		q = end;
		if (*q == '-') {
			hi = strtol(q + 1, &end, 10);
			if (end == q + 1 || hi < lo)
				return -1;
			q = end;
		}
		for (c = lo; c <= hi && n < cap; c++)
			out[n++] = (int32_t)c;
		if (*q == ',')
			q++;
		else if (*q && *q != '\n')
			return -1;
	}
	return n;
}

/* ---- Flush counts: the same tracepoints, filters and columns as atsdbench's counters.py ----
 *
 * perf counters on the tracepoints (atsd_counter_open), opened around warm-up passes only: an
 * attached tracepoint slows every flush, so no timed pass is traced.  x86: tlb:tlb_flush ->
 * flushes (every reason but the sender's 'remote IPI send' note), full_flushes (pages ==
 * TLB_FLUSH_ALL), flushes_<reason>.  POWER (tlb:tlb_flush never fires there): powerpc:tlbie ->
 * tlbie, tlbie_global (local == 0), tlbie_full (whole-PID flushes of a process, the kernel filter of
 * atsdbench/measure/tlbie.py FILTERS), powerpc:tlbia -> tlbia, and on a hash MMU powerpc:hcall_entry by
 * opcode -> h_remove, h_bulk_remove, ...  POWER9's errata workarounds (tlbie_fixup) are not counted:
 * "the same page again" is no field test, and atsdbench run reads them from the trace in order. */
enum { MAX_COLUMNS = 32 };

struct column {
	char name[48];
	uint64_t id;
	char filter[256];
	struct atsd_counter *c;
	uint64_t before;
};

struct counting {
	int n;                      /* columns; 0 when nothing can be counted */
	struct column col[MAX_COLUMNS];
	int32_t ncpus;
	int32_t cpus[ATSD_MAX_CPUS];
	int32_t scope;              /* 1: every CPU, 0: this thread */
	char events[128];           /* "tlb:tlb_flush" or "powerpc:tlbie,powerpc:tlbia" */
	char error[256];            /* why there are no counts */
};

static const char *const tracefs_roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

static const char *tracefs_root(void)
{
	char path[128];
	size_t i;

	for (i = 0; i < sizeof(tracefs_roots) / sizeof(tracefs_roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/events", tracefs_roots[i]);
		if (!access(path, R_OK | X_OK))
			return tracefs_roots[i];
	}
	return NULL;
}

/* The tracepoint's id (events/SYSTEM/NAME/id), 0 where it is absent. */
static uint64_t event_id(const char *root, const char *event)
{
	char path[256], line[64];
	uint64_t id = 0;
	FILE *f;

	if (!root)
		return 0;
	snprintf(path, sizeof(path), "%s/events/%s/id", root, event);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f))
		id = strtoull(line, NULL, 10);
	fclose(f);
	return id;
}

static int is_power(void)
{
	struct utsname u;

	return !uname(&u) && (!strncmp(u.machine, "ppc64", 5) || !strncmp(u.machine, "powerpc", 7));
}

static void add_column(struct counting *k, const char *name, uint64_t id, const char *filter)
{
	struct column *c;

	if (k->n >= MAX_COLUMNS)
		return;
	c = &k->col[k->n++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->id = id;
	snprintf(c->filter, sizeof(c->filter), "%s", filter ? filter : "");
	c->c = NULL;
}

/* "remote IPI send" -> "flushes_remote_ipi_send", as counters.reason_column. */
static void reason_column(const char *reason, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, "flushes_");
	int gap = 0;

	for (; *reason && n + 2 < len; reason++) {
		char ch = *reason;
		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) {
			if (gap && out[n - 1] != '_')
				out[n++] = '_';
			out[n++] = ch;
			gap = 0;
		} else {
			gap = 1;
		}
	}
	out[n] = 0;
}

/* x86: the reasons named in the format file's __print_symbolic list, { code, "name" }. */
static void setup_tlb_flush(struct counting *k, const char *root, uint64_t id)
{
	char path[256], not_send[256] = "", flt[256], *text = NULL, *p;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	struct { long code; char name[64]; } reasons[16];
	int nreasons = 0, i;

	snprintf(path, sizeof(path), "%s/events/tlb/tlb_flush/format", root);
	f = fopen(path, "r");
	if (f) {
		len = getdelim(&text, &cap, 0, f);
		fclose(f);
		if (len < 0) {
			free(text);
			text = NULL;
		}
	}
	for (p = text ? strstr(text, "__print_symbolic") : NULL; p && nreasons < 16; ) {
		char *open = strchr(p, '{'), *q, *end;
		long code;
		if (!open)
			break;
		code = strtol(open + 1, &end, 10);
		q = strchr(end, '"');
		p = q ? strchr(q + 1, '"') : NULL;
		if (end == open + 1 || !q || !p)
			break;
		reasons[nreasons].code = code;
		snprintf(reasons[nreasons].name, sizeof(reasons[nreasons].name), "%.*s", (int)(p - q - 1), q + 1);
		nreasons++;
		p++;
	}
	free(text);
	/* x86 also traces the sender of a shootdown ('remote IPI send'): a note, not a flush */
	for (i = 0; i < nreasons; i++) {
		if (strstr(reasons[i].name, "send")) {
			size_t used = strlen(not_send);
			snprintf(not_send + used, sizeof(not_send) - used, "%sreason != %ld", used ? " && " : "",
				 reasons[i].code);
		}
	}
	add_column(k, "flushes", id, not_send[0] ? not_send : NULL);
	snprintf(flt, sizeof(flt), "pages == %" PRIu64 "%s%s", UINT64_MAX, not_send[0] ? " && " : "", not_send);
	add_column(k, "full_flushes", id, flt);
	for (i = 0; i < nreasons; i++) {
		char name[48];
		reason_column(reasons[i].name, name, sizeof(name));
		snprintf(flt, sizeof(flt), "reason == %ld", reasons[i].code);
		add_column(k, name, id, flt);
	}
	snprintf(k->events, sizeof(k->events), "tlb:tlb_flush");
}

static const struct { int op; const char *name; } hcalls[] = {
	/* PAPR hypervisor calls that change the hash page table (tlbie.py HCALL_COLUMNS) */
	{4, "h_remove"}, {8, "h_enter"}, {16, "h_clear_mod"}, {20, "h_clear_ref"}, {24, "h_protect"},
	{292, "h_bulk_remove"},
};

static void setup_power(struct counting *k, const char *root, uint64_t tlbie)
{
	uint64_t tlbia = event_id(root, "powerpc/tlbia"), hcall = event_id(root, "powerpc/hcall_entry");
	char mmu[64], flt[64];
	size_t i;

	add_column(k, "tlbie", tlbie, NULL);
	add_column(k, "tlbie_global", tlbie, "local == 0");
	/* IS=1 (rb 0x400, TLB set 0: a tlbiel walk over the sets counts once), process scoped, PID != 0 */
	add_column(k, "tlbie_full", tlbie, "rb == 1024 && prs == 1 && rs >= 4294967296");
	snprintf(k->events, sizeof(k->events), "powerpc:tlbie");
	if (tlbia) {
		add_column(k, "tlbia", tlbia, NULL);
		strcat(k->events, ",powerpc:tlbia");
	}
	cpuinfo_field("MMU", mmu, sizeof(mmu));
	if (hcall && !strcmp(mmu, "Hash")) {
		for (i = 0; i < sizeof(hcalls) / sizeof(hcalls[0]); i++) {
			snprintf(flt, sizeof(flt), "opcode == %d", hcalls[i].op);
			add_column(k, hcalls[i].name, hcall, flt);
		}
		strcat(k->events, ",powerpc:hcall_entry");
	}
}

static void counting_close(struct counting *k)
{
	int i;

	for (i = 0; i < k->n; i++)
		atsd_counter_close(&k->col[i].c);
}

static int counting_open(struct counting *k)
{
	int i, err;

	for (i = 0; i < k->n; i++) {
		err = atsd_counter_open(&k->col[i].c, k->col[i].id, k->col[i].filter[0] ? k->col[i].filter : NULL,
					k->cpus, k->ncpus, &k->scope);
		if (err) {
			counting_close(k);
			return err;
		}
	}
	return 0;
}

/* Reads every counter: before the pass keeps the values, after it writes the differences. */
static void counting_read(struct counting *k, FILE *out, uint64_t *sums)
{
	int i;

	for (i = 0; i < k->n; i++) {
		uint64_t v = 0;
		if (atsd_counter_read(k->col[i].c, &v))
			continue;
		if (!out) {
			k->col[i].before = v;
		} else {
			fprintf(out, "\t%s=%" PRIu64, k->col[i].name, v - k->col[i].before);
			sums[i] += v - k->col[i].before;
		}
	}
}

/* One perf fd per CPU per column: a big machine needs more than the usual 1024. */
static void allow_fds(rlim_t needed)
{
	struct rlimit r;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < needed) {
		r.rlim_cur = r.rlim_max == RLIM_INFINITY || r.rlim_max > needed ? needed : r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* The tracefs problem in counters.py's words (procfs.tracepoint_problem). */
static void tracepoint_problem(struct counting *k, const char *event)
{
	FILE *f = fopen("/proc/mounts", "r");
	char line[1024], fs[64];
	int mounted = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %63s", fs) == 1 && !strcmp(fs, "tracefs"))
			mounted = 1;
	if (f)
		fclose(f);
	if (geteuid())
		snprintf(k->error, sizeof(k->error), "the %s tracepoint is not readable: tracefs needs root (run as "
			 "root for flush counts)", event);
	else if (!mounted)
		snprintf(k->error, sizeof(k->error), "the %s tracepoint is not readable: tracefs is not mounted (as "
			 "root: mount -t tracefs nodev /sys/kernel/tracing)", event);
	else
		snprintf(k->error, sizeof(k->error), "the %s tracepoint is not readable: this kernel has no such "
			 "event in tracefs", event);
}

static void counting_probe(struct counting *k, const struct atsd_host *h)
{
	const char *root = tracefs_root();
	uint64_t tlbie = event_id(root, "powerpc/tlbie"), flush = event_id(root, "tlb/tlb_flush");
	char online[4096];
	int err;

	memset(k, 0, sizeof(*k));
	read_line_of("/sys/devices/system/cpu/online", online, sizeof(online));
	k->ncpus = parse_cpulist(online, k->cpus, ATSD_MAX_CPUS);
	if (k->ncpus <= 0) {
		k->ncpus = h->naffinity;
		memcpy(k->cpus, h->affinity, sizeof(int32_t) * (size_t)h->naffinity);
	}
	if (tlbie)
		setup_power(k, root, tlbie);
	else if (is_power())  /* tlb:tlb_flush exists there but never fires: zeros would not be counts */
		tracepoint_problem(k, "powerpc:tlbie");
	else if (flush)
		setup_tlb_flush(k, root, flush);
	else
		tracepoint_problem(k, "tlb:tlb_flush");
	if (!k->n)
		return;
	allow_fds((rlim_t)k->n * (rlim_t)k->ncpus + 64);
	err = counting_open(k);
	counting_close(k);
	if (err) {
		snprintf(k->error, sizeof(k->error), "perf_event_open on %s failed: %s", k->events, strerror(-err));
		k->n = 0;
	}
}

static void usage(FILE *f)
{
	struct atsd_option o;
	int i;

	fputs("usage: atsd [options] [-o FILE]\n"
	      "Measures mprotect(PROT_NONE) over a populated region in strides (GB/s = 10^9 bytes/s;\n"
	      "sizes binary), prints a table per stride and, with -o, writes FILE for\n"
	      "`atsdbench import FILE`.  Options:\n", f);
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
	if (output && !*output)
		die("-o: the output path is empty");
	return output;  /* NULL: no file, the table only */
}

static void write_config(FILE *out, const struct atsd_plan *p, const struct counting *k)
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
	if (k->n) {
		fprintf(out, "\ttrace_scope=%s\ttrace_events=%s", k->scope ? "system" : "thread", k->events);
	} else if (k->error[0]) {
		char error[sizeof(k->error)];
		memcpy(error, k->error, sizeof(error));
		clean(error);
		fprintf(out, "\ttrace_error=%s", error);
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

/* What the table after the run shows, per cell and stride: the measured passes' rates and times,
 * the traced passes' counts and calls, the timed passes' IPIs. */
struct stride_stats {
	double *gbps, *us;
	int n;
	uint64_t traced_calls, sums[MAX_COLUMNS];
	int64_t ipis;
	uint64_t ipi_calls;
};

struct summary {
	int ncells, nstrides, cap;
	struct stride_stats *s;
};

static int summary_init(struct summary *t, const struct atsd_plan *p)
{
	int i;

	t->ncells = atsd_plan_cells(p);
	t->nstrides = p->nstrides;
	t->cap = p->rounds * p->reps;
	t->s = calloc((size_t)(t->ncells * t->nstrides), sizeof(*t->s));
	if (!t->s)
		return -ENOMEM;
	for (i = 0; i < t->ncells * t->nstrides; i++) {
		t->s[i].gbps = malloc(sizeof(double) * (size_t)t->cap);
		t->s[i].us = malloc(sizeof(double) * (size_t)t->cap);
		if (!t->s[i].gbps || !t->s[i].us)
			return -ENOMEM;
	}
	return 0;
}

static struct stride_stats *summary_at(struct summary *t, const struct atsd_plan *p, int32_t cell, uint64_t stride)
{
	int i;

	for (i = 0; i < p->nstrides && p->strides[i] != stride; i++)
		;
	return &t->s[cell * t->nstrides + i];
}

/* One cell of one round: a fresh region with the cell's pages, its passes in the order of
 * atsd_round_order(round * ncells + cell).  first: the round position of its first pass.  Its
 * warm-up passes are counted (k) when counters can be opened; no timed pass is traced. */
static int run_cell(FILE *out, const struct atsd_plan *p, int32_t round, int warmup_round, int32_t cell,
		    const struct atsd_cell *c, int first, struct counting *k, struct summary *t)
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
		int rep = i / p->nstrides, warm = warmup_round || rep < p->warmup;
		int traced = rep < p->warmup && k->n > 0;
		struct stride_stats *st = summary_at(t, p, cell, order[i]);
		int64_t ipi0, ipi1;

		if (dirty && (err = atsd_region_restore(&r, p->retouch)))
			goto out;
		if (traced && counting_open(k))
			traced = 0;  /* a pass without counts, not a failed run */
		if (traced)
			counting_read(k, NULL, NULL);
		ipi0 = tlb_ipis();
		err = atsd_pass(&r, order[i], &ns, lat, &done);
		ipi1 = tlb_ipis();
		dirty = 1;
		if (err) {
			char a[32];
			counting_close(k);
			fprintf(stderr, "atsd: mprotect(PROT_NONE) failed at call %" PRIu64 " of stride %s: %s\n",
				done + 1, atsd_format_size(order[i], a, sizeof(a)), strerror(-err));
			goto out;
		}
		fprintf(out, "sample\tround=%d\trep=%d\torder=%d\tstride_bytes=%" PRIu64 "\twarmup=%d\tns=%" PRIu64
			"\tcalls=%" PRIu64 "\ttraced=%d", round, rep, first + i, order[i], warm, ns, calls, traced);
		if (atsd_plan_cells(p) > 1)
			fprintf(out, "\tcell=%d\tbystanders=%d\tpages=%s", cell, c->bystanders, page_names[c->pages]);
		if (ipi0 >= 0 && ipi1 >= 0)
			fprintf(out, "\tipis=%" PRId64, ipi1 - ipi0);
		if (traced) {
			counting_read(k, out, st->sums);
			counting_close(k);
			st->traced_calls += calls;
		}
		if (lat) {
			qsort(lat, calls, sizeof(*lat), cmp_lat);
			fprintf(out, "\tlat_p50_ns=%" PRIu64 "\tlat_p90_ns=%" PRIu64 "\tlat_p99_ns=%" PRIu64
				"\tlat_max_ns=%" PRIu64, pct(lat, calls, .50), pct(lat, calls, .90),
				pct(lat, calls, .99), lat[calls - 1]);
		}
		fputc('\n', out);
		if (!warm && st->n < t->cap && ns) {
			st->gbps[st->n] = (double)p->size / (double)ns;
			st->us[st->n++] = (double)ns / 1e3 / (double)calls;
		}
		if (!traced && ipi0 >= 0 && ipi1 >= 0) {
			st->ipis += ipi1 - ipi0;
			st->ipi_calls += calls;
		}
	}
out:
	free(lat);
	free(order);
	atsd_region_unmap(&r);
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* numpy's median: the mean of the two middle values of an even count. */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double min_of(const double *v, int n)
{
	double m = v[0];
	int i;

	for (i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static double max_of(const double *v, int n)
{
	double m = v[0];
	int i;

	for (i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/* The per-call titles of run's table (report.py COUNTER_COLUMNS); quiet ones only where non-zero. */
static const struct { const char *column, *title; int quiet; } titles[] = {
	{"flushes", "flushes/call", 0}, {"full_flushes", "full flush %", 0}, {"tlbie", "tlbie/call", 0},
	{"tlbie_global", "global/call", 0}, {"tlbie_full", "full PID/call", 0}, {"tlbia", "tlbia/call", 1},
	{"h_remove", "H_REMOVE/call", 1}, {"h_bulk_remove", "H_BULK_REMOVE/call", 1},
	{"h_protect", "H_PROTECT/call", 1}, {"h_enter", "H_ENTER/call", 1}, {"h_clear_mod", "H_CLEAR_MOD/call", 1},
	{"h_clear_ref", "H_CLEAR_REF/call", 1},
};

enum { MAX_TABLE_COLUMNS = 24, CELL_TEXT = 24 };

struct table {
	int ncols, nrows;
	const char *head[MAX_TABLE_COLUMNS];
	char (*cells)[MAX_TABLE_COLUMNS][CELL_TEXT];
};

/* A table as tabulate's "simple" format prints it: right-aligned, dashes under the titles. */
static void table_print(const struct table *tb, FILE *f)
{
	size_t w[MAX_TABLE_COLUMNS];
	int r, c;

	for (c = 0; c < tb->ncols; c++) {
		w[c] = strlen(tb->head[c]);
		for (r = 0; r < tb->nrows; r++)
			w[c] = strlen(tb->cells[r][c]) > w[c] ? strlen(tb->cells[r][c]) : w[c];
	}
	for (c = 0; c < tb->ncols; c++)
		fprintf(f, "%s%*s", c ? "  " : "", (int)w[c], tb->head[c]);
	fputc('\n', f);
	for (c = 0; c < tb->ncols; c++) {
		size_t d;
		fputs(c ? "  " : "", f);
		for (d = 0; d < w[c]; d++)
			fputc('-', f);
	}
	fputc('\n', f);
	for (r = 0; r < tb->nrows; r++) {
		for (c = 0; c < tb->ncols; c++)
			fprintf(f, "%s%*s", c ? "  " : "", (int)w[c], tb->cells[r][c]);
		fputc('\n', f);
	}
}

/* The table `run` prints: per cell (headed by its axis values) and stride, the median, min and max
 * rate of the measured passes, the median time per call, and per-call counts (IPIs from the timed
 * passes, flushes from the traced warm-up passes). */
static void print_summary(FILE *f, const struct atsd_plan *p, struct summary *t, const struct counting *k)
{
	char size[32], page[32];
	int cell, i, j, ipis = 0, show[MAX_COLUMNS] = {0};

	for (i = 0; i < t->ncells * t->nstrides; i++)
		ipis |= t->s[i].ipi_calls > 0;
	for (j = 0; j < k->n; j++) {
		size_t q;
		for (q = 0; q < sizeof(titles) / sizeof(titles[0]); q++) {
			if (strcmp(titles[q].column, k->col[j].name))
				continue;
			show[j] = (int)q + 1;
			if (titles[q].quiet) {
				show[j] = 0;
				for (i = 0; i < t->ncells * t->nstrides; i++)
					if (t->s[i].sums[j])
						show[j] = (int)q + 1;
			}
		}
	}
	fprintf(f, "mprotect(PROT_NONE) rate over %s, %d rounds x %d reps, CPU %d; page size %s\n",
		atsd_format_size(p->size, size, sizeof(size)), p->rounds, p->reps, p->cpu,
		atsd_format_size((uint64_t)atsd_page_size(), page, sizeof(page)));
	fputs("GB/s = 10^9 bytes/s; sizes are binary (1G = 2^30 bytes)\n", f);
	for (cell = 0; cell < t->ncells; cell++) {
		struct table tb = {0, 0, {0}, NULL};
		struct atsd_cell c;
		int full = -1;

		tb.cells = calloc((size_t)t->nstrides, sizeof(*tb.cells));
		if (!tb.cells)
			return;
		tb.head[tb.ncols++] = "Stride";
		tb.head[tb.ncols++] = "Median GB/s";
		tb.head[tb.ncols++] = "Min";
		tb.head[tb.ncols++] = "Max";
		tb.head[tb.ncols++] = "us/call";
		if (ipis)
			tb.head[tb.ncols++] = "IPIs/call";
		for (j = 0; j < k->n; j++)
			if (show[j] && tb.ncols < MAX_TABLE_COLUMNS)
				tb.head[tb.ncols++] = titles[show[j] - 1].title;
		for (j = 0; j < k->n; j++)
			full = !strcmp(k->col[j].name, "flushes") ? j : full;
		for (i = 0; i < t->nstrides; i++) {
			struct stride_stats *st = &t->s[cell * t->nstrides + i];
			char (*row)[CELL_TEXT] = tb.cells[tb.nrows];
			int col = 0;
			if (!st->n)
				continue;
			atsd_format_size(p->strides[i], row[col++], CELL_TEXT);
			snprintf(row[col++], CELL_TEXT, "%.2f", median(st->gbps, st->n));
			snprintf(row[col++], CELL_TEXT, "%.2f", min_of(st->gbps, st->n));
			snprintf(row[col++], CELL_TEXT, "%.2f", max_of(st->gbps, st->n));
			snprintf(row[col++], CELL_TEXT, "%.3f", median(st->us, st->n));
			if (ipis) {
				if (st->ipi_calls)
					snprintf(row[col++], CELL_TEXT, "%.2f", (double)st->ipis / (double)st->ipi_calls);
				else
					snprintf(row[col++], CELL_TEXT, "n/a");
			}
			for (j = 0; j < k->n && col < MAX_TABLE_COLUMNS; j++) {
				double v;
				if (!show[j])
					continue;
				if (!st->traced_calls) {
					snprintf(row[col++], CELL_TEXT, "n/a");
					continue;
				}
				v = (double)st->sums[j] / (double)st->traced_calls;
				if (!strcmp(k->col[j].name, "full_flushes"))  /* a share of the flushes, in % */
					v = full >= 0 && st->sums[full] ? 100.0 * (double)st->sums[j] / (double)st->sums[full]
						: -1;
				if (v < 0)
					snprintf(row[col++], CELL_TEXT, "n/a");
				else
					snprintf(row[col++], CELL_TEXT, "%.2f", v);
			}
			tb.nrows++;
		}
		if (t->ncells > 1) {
			atsd_plan_cell(p, cell, &c);
			fprintf(f, "\ncell %d:", cell);
			if (p->nbystanders > 1)
				fprintf(f, " bystanders=%d", c.bystanders);
			if (p->npages > 1)
				fprintf(f, " pages=%s", page_names[c.pages]);
			fputc('\n', f);
		}
		table_print(&tb, f);
		free(tb.cells);
	}
	if (k->n)
		fprintf(f, "flush counts: %s (%s-wide), counted on warm-up passes so no timed pass is traced\n", k->events,
			k->scope ? "system" : "thread");
	else if (k->error[0])
		fprintf(f, "no flush counts: %s\n", k->error);
}

static void summary_free(struct summary *t)
{
	int i;

	for (i = 0; t->s && i < t->ncells * t->nstrides; i++) {
		free(t->s[i].gbps);
		free(t->s[i].us);
	}
	free(t->s);
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
	struct output o = {NULL, NULL, 0, NULL};
	static struct counting k;
	struct summary t = {0, 0, 0, NULL};
	char msg[512];
	int32_t round, cells[256], ncells, i, nrunning = -1;
	int err = 0;
	double first = 0;

	o.path = parse(&p, argc, argv);
	if ((err = atsd_host_probe(&h)))
		die("reading the host's facts: %s", strerror(-err));
	if (atsd_plan_check(&p, &h, msg, sizeof(msg)))
		die("%s", msg);
	if (o.path)
		output_open(&o, o.path);  /* before measuring: an unwritable output loses nothing */
	else if (!(o.mem = open_memstream(&o.buf, &o.len)))
		die("open_memstream: %s", strerror(errno));
	if (summary_init(&t, &p))
		die("out of memory");
	counting_probe(&k, &h);
	fprintf(o.mem, "atsd-output 1\n");
	write_host(o.mem);
	write_config(o.mem, &p, &k);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if ((err = atsd_pin_self(p.cpu))) {
		fprintf(stderr, "atsd: pinning to CPU %d: %s\n", p.cpu, strerror(-err));
		fprintf(o.mem, "end\tcomplete=0\n");
		if (o.path)
			output_close(&o);
		return 2;
	}
	for (round = 0; round < p.warmup_rounds + p.rounds && !interrupted && !err; round++) {
		int32_t r = round - p.warmup_rounds;  /* measured round r, paced over --spread */
		if (r == 0)
			first = now_s();
		else if (r > 0 && p.spread > 0)
			sleep_until(first + r * p.spread / p.rounds);
		if (interrupted)
			break;
		ncells = atsd_cell_order(&p, round, cells, 256);
		for (i = 0; i < ncells && !interrupted && !err; i++) {
			struct atsd_cell c;
			atsd_plan_cell(&p, ncells > 1 ? cells[i] : 0, &c);
			if (!b || nrunning != c.bystanders) {  /* between cells, never inside a pass */
				atsd_bystanders_stop(&b, NULL);
				nrunning = c.bystanders;
				if ((err = atsd_bystanders_start(&b, p.bystander_cpus, c.bystanders))) {
					fprintf(stderr, "atsd: starting %d bystanders: %s\n", c.bystanders, strerror(-err));
					break;
				}
			}
			err = run_cell(o.mem, &p, round, round < p.warmup_rounds, ncells > 1 ? cells[i] : 0, &c,
				       i * (p.warmup + p.reps) * p.nstrides, &k, &t);
		}
		if (err && err != -EINTR && !interrupted)
			break;
	}
	atsd_bystanders_stop(&b, NULL);
	fprintf(o.mem, "end\tcomplete=%d\n", !err && !interrupted);
	print_summary(stdout, &p, &t, &k);
	summary_free(&t);
	fflush(stdout);
	if (o.path) {
		if (output_close(&o))
			return 2;
	} else {
		fclose(o.mem);
		free(o.buf);
	}
	if (err) {
		if (o.path)
			fprintf(stderr, "atsd: wrote the finished samples to %s\n", o.path);
		return 2;
	}
	if (interrupted) {
		if (o.path)
			fprintf(stderr, "atsd: interrupted; wrote the finished samples to %s\n", o.path);
		else
			fprintf(stderr, "atsd: interrupted\n");
		return 130;
	}
	if (o.path)
		printf("wrote %s (atsdbench import %s)\n", o.path, o.path);
	return 0;
}
