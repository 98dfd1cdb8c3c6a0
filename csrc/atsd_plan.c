/*
 * atsd_plan.c - the plan of a run: option table, parsing, checking and stride order (the host facts
 * it is checked against are read by atsd_host.c).
 *
 * One copy for both front ends (`atsdbench run` through cffi, the standalone atsd directly), so a
 * plan one accepts the other accepts, with the same words when it does not.  See atsd.h.
 */
#define _GNU_SOURCE
#include "atsd.h"
#include "atsd_options.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define RUN ATSD_FRONT_RUN
#define ATSD ATSD_FRONT_ATSD
#define BOTH (ATSD_FRONT_RUN | ATSD_FRONT_ATSD)

static const struct atsd_option options[] = {
#define X(name, short_name, fronts, field, metavar, const_value, def, help) \
	{name, short_name, fronts, field, metavar, const_value, def, help},
	ATSD_OPTIONS(X)
#undef X
};

#define NOPTIONS ((int)(sizeof(options) / sizeof(options[0])))

int atsd_option_count(void)
{
	return NOPTIONS;
}

int atsd_option_get(int32_t i, struct atsd_option *out)
{
	if (i < 0 || i >= NOPTIONS)
		return -EINVAL;
	*out = options[i];
	return 0;
}

static int fail(int err, char *msg, uint64_t msglen, const char *fmt, ...)
{
	va_list ap;

	if (msg && msglen) {
		va_start(ap, fmt);
		vsnprintf(msg, (size_t)msglen, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* A bad value is echoed, but never a megabyte of it. */
static const char *cut(const char *text, char *buf, size_t len)
{
	size_t n = strlen(text);

	if (n <= 40)
		return text;
	snprintf(buf, len, "%.37s...", text);
	return buf;
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

const char *atsd_format_size(uint64_t n, char *buf, uint64_t len)
{
	return fmt_size(n, buf, (size_t)len);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Sizes are binary: K, M, G, T are 2^10 .. 2^40, alone or as KiB .. TiB; B alone is bytes.  KB, MB,
 * GB and TB are refused, since to many they mean 10^3 .. 10^12: a silent 256MB = 256M would measure
 * 5% (1TB = 1T: 10%) more than the user meant.  Only ASCII digits and white space, and the syntax is
 * checked before the value, so a text is "not a size" or "too large" for the same reason in both
 * front ends (atsdbench/units.py's parse_size is the rule's pure twin, held to this one by
 * tests/test_units.py). */
int atsd_parse_size(const char *text, const char *what, uint64_t *out, char *msg, uint64_t msglen)
{
	const char *s = text, *num;
	uint64_t v = 0;
	int shift = 0, digits = 0, big = 0, decimal = 0;
	char unit = 0, c1[48];

	while (is_space(*s))
		s++;
	for (num = s; *s >= '0' && *s <= '9'; s++, digits++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			big = 1;
		else
			v = v * 10 + d;
	}
	while (is_space(*s))
		s++;
	switch (*s) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	}
	if (shift)
		unit = "KMGT"[shift / 10 - 1], s++;
	if (shift && (s[0] == 'i' || s[0] == 'I') && (s[1] == 'b' || s[1] == 'B'))
		s += 2;
	else if (s[0] == 'b' || s[0] == 'B')
		decimal = shift, s++;
	while (is_space(*s))
		s++;
	if (!digits || *s)
		return fail(-EINVAL, msg, msglen, "%s '%s' is not a size (a whole number, optional K, M, G or "
			    "T: binary, 1G = 2^30)", what, cut(text, c1, sizeof(c1)));
	if (decimal)
		return fail(-EINVAL, msg, msglen, "%s '%s': sizes are binary: write %.*s%c or %.*s%ciB (2^%d), "
			    "not %cB (10^%d to many)", what, cut(text, c1, sizeof(c1)), digits > 20 ? 20 : digits,
			    num, unit, digits > 20 ? 20 : digits, num, unit, shift, unit, shift * 3 / 10);
	if (big || (shift && v > (UINT64_MAX >> shift)))
		return fail(-ERANGE, msg, msglen, "%s '%s' is too large (a size must fit in 64 bits)", what,
			    cut(text, c1, sizeof(c1)));
	if (v == 0)
		return fail(-EINVAL, msg, msglen, "%s must not be zero", what);
	*out = v << shift;
	return 0;
}

static int parse_count(const char *field, const char *text, long long lo, long long hi, long long *out,
		       char *msg, uint64_t msglen)
{
	char *end, c1[48];
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	while (end != text && is_space(*end))
		end++;
	if (end == text || *end)
		return fail(-EINVAL, msg, msglen, "--%s '%s' is not a whole number", field, cut(text, c1, sizeof(c1)));
	if (errno == ERANGE || v > hi)
		return fail(-ERANGE, msg, msglen, "--%s '%s' is too large (at most %lld)", field,
			    cut(text, c1, sizeof(c1)), hi);
	if (v < lo)
		return fail(-EINVAL, msg, msglen, "--%s must be at least %lld (got %lld)", field, lo, v);
	*out = v;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static const char *const page_names[] = {"base", "thp", "hugetlb"};

/* Calls one(p, token, index) for each comma-separated token; at most `max` of them.  An empty token
 * ("0,,1", "0,", ",0") is refused rather than skipped: it is a value left out, and running without it
 * would measure a plan that was not typed. */
static int each_token(const char *field, const char *value, int max, int *n,
		      int (*one)(struct atsd_plan *, const char *, int, char *, uint64_t),
		      struct atsd_plan *p, char *msg, uint64_t msglen)
{
	char *copy = strdup(value), *tok, *next, c1[48];
	int err = 0, empty = 0;

	if (!copy)
		return fail(-ENOMEM, msg, msglen, "out of memory");
	*n = 0;
	for (tok = copy; tok && !err; tok = next) {
		const char *t = tok;
		next = strchr(tok, ',');
		if (next)
			*next++ = 0;
		while (is_space(*t))
			t++;
		if (!*t) {
			empty = 1;
			continue;
		}
		if (*n == max) {
			err = fail(-E2BIG, msg, msglen, "--%s takes at most %d values", field, max);
			break;
		}
		err = one(p, tok, (*n)++, msg, msglen);
	}
	free(copy);
	if (!err && *n == 0)
		err = fail(-EINVAL, msg, msglen, "no %s given", strcmp(field, "strides") ? field : "stride");
	if (!err && empty)
		err = fail(-EINVAL, msg, msglen, "--%s '%s' has an empty value (a comma at an end, or two in a row)",
			   field, cut(value, c1, sizeof(c1)));
	return err;
}

static int one_stride(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	return atsd_parse_size(tok, "stride", &p->strides[i], msg, msglen);
}

static int one_pages(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	int k;
	char c1[48];

	for (k = 0; k < 3; k++) {
		if (!strcmp(tok, page_names[k])) {
			p->pages[i] = k;
			return 0;
		}
	}
	return fail(-EINVAL, msg, msglen, "--pages must be base, thp or hugetlb (got '%s')", cut(tok, c1, sizeof(c1)));
}

static int one_op(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	int k = atsd_op_parse(tok);
	char c1[48];

	if (k < 0)
		return fail(-EINVAL, msg, msglen, "--op must be mprotect, madvise or munmap (got '%s')",
			    cut(tok, c1, sizeof(c1)));
	p->ops[i] = k;
	return 0;
}

static int one_device(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	int k = atsd_device_parse(tok);
	char c1[48];

	if (k < 0)
		return fail(-EINVAL, msg, msglen, "--device must be none or hmm (got '%s')", cut(tok, c1, sizeof(c1)));
	p->devices[i] = k;
	return 0;
}

static int one_threads(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	long long v;
	int err = parse_count("threads", tok, 1, 1 << 20, &v, msg, msglen);  /* the check holds it to the CPUs */

	p->threads[i] = (int32_t)v;
	return err;
}

static int one_bystanders(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	long long v;
	int err = parse_count("bystanders", tok, 0, 1 << 20, &v, msg, msglen);

	p->bystanders[i] = (int32_t)v;
	return err;
}

static int one_gpu(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	long long v = -1;
	int err = 0;

	if (strcmp(tok, "none"))
		err = parse_count("gpu", tok, 0, 1 << 20, &v, msg, msglen);
	p->gpu[i] = (int32_t)v;
	return err;
}

static int one_ceiling(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	long long v = -1;
	int err = 0;

	if (strcmp(tok, "kernel"))
		err = parse_count("ceiling", tok, 1, 1 << 30, &v, msg, msglen);
	p->ceiling[i] = (int32_t)v;
	return err;
}

static int parse_real(const char *field, const char *text, const char *suffix, double lo, double hi, int open_lo,
		      double *out, char *msg, uint64_t msglen)
{
	char *end, c1[48];
	double v;
	size_t n = strlen(suffix);

	errno = 0;
	v = strtod(text, &end);
	while (end != text && is_space(*end))
		end++;
	if (end != text && n && !strncmp(end, suffix, n))
		end += n;
	if (end == text || *end || errno || v != v)
		return fail(-EINVAL, msg, msglen, "--%s '%s' is not a number", field, cut(text, c1, sizeof(c1)));
	if ((open_lo ? v <= lo : v < lo) || v >= hi)
		return fail(-EINVAL, msg, msglen, "--%s must be %s %g and below %g (got %s)", field,
			    open_lo ? "above" : "at least", lo, hi, cut(text, c1, sizeof(c1)));
	*out = v;
	return 0;
}

int atsd_parse_duration(const char *text, const char *what, double *out, char *msg, uint64_t msglen)
{
	char *end, c1[48];
	double v, unit = 1;

	errno = 0;
	v = strtod(text, &end);
	if (end != text) {
		while (is_space(*end))
			end++;
		if (*end == 's' || *end == 'm' || *end == 'h') {
			unit = *end == 'm' ? 60 : *end == 'h' ? 3600 : 1;
			end++;
		}
		while (is_space(*end))
			end++;
	}
	if (end == text || *end || errno || v != v || v < 0 || v * unit > 1e7 || strchr(text, 'x') ||
	    strchr(text, 'X'))
		return fail(-EINVAL, msg, msglen, "--%s '%s' is not a duration (e.g. 90s, 5m, 1h; at most 1e7 s)", what,
			    cut(text, c1, sizeof(c1)));
	*out = v * unit;
	return 0;
}

static int parse_flag(const char *field, const char *value, int32_t *out, char *msg, uint64_t msglen)
{
	char c1[48];

	if (!strcmp(value, "1") || !strcasecmp(value, "true")) {
		*out = 1;
		return 0;
	}
	if (!strcmp(value, "0") || !strcasecmp(value, "false")) {
		*out = 0;
		return 0;
	}
	return fail(-EINVAL, msg, msglen, "%s must be 0 or 1 (got '%s')", field, cut(value, c1, sizeof(c1)));
}

static int plan_set(struct atsd_plan *p, const char *field, const char *value, char *msg, uint64_t msglen);

/* The table index of a plan field (its first option), -1 for none. */
static int field_index(const char *field)
{
	int i;

	for (i = 0; field && i < NOPTIONS && i < 64; i++)
		if (options[i].field && !strcmp(options[i].field, field))
			return i;
	return -1;
}

static int has_device(const struct atsd_plan *p, int32_t kind)
{
	int i;

	for (i = 0; i < p->ndevices; i++)
		if (p->devices[i] == kind)
			return 1;
	return 0;
}

static int given(const struct atsd_plan *p, const char *field)
{
	int i = field_index(field);
	return i >= 0 && (p->given >> i) & 1;
}

int atsd_plan_set(struct atsd_plan *p, const char *field, const char *value, char *msg, uint64_t msglen)
{
	int err = plan_set(p, field, value, msg, msglen), i = field_index(field);

	if (!err && i >= 0)
		p->given |= 1ULL << i;
	return err;
}

static int one_workload(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	int k = atsd_workload_parse(tok);
	char c1[48];

	if (k < 0)
		return fail(-EINVAL, msg, msglen, "--workload must be tlb_flush1, tlb_flush2 or tlb_flush3 (got '%s')",
			    cut(tok, c1, sizeof(c1)));
	p->workloads[i] = k;
	return 0;
}

static int plan_set(struct atsd_plan *p, const char *field, const char *value, char *msg, uint64_t msglen)
{
	long long v;
	int err, n;
	char c1[48];

	if (!field || !value)
		return fail(-EINVAL, msg, msglen, "no value given");
	if (!strcmp(field, "size"))
		return atsd_parse_size(value, "size", &p->size, msg, msglen);
	if (!strcmp(field, "strides")) {
		int i;
		err = each_token(field, value, ATSD_MAX_STRIDES, &n, one_stride, p, msg, msglen);
		if (err)
			return err;
		qsort(p->strides, (size_t)n, sizeof(p->strides[0]), cmp_u64);
		for (i = 1; i < n; i++)  /* a stride is measured once per repetition: a repeat is a typo */
			if (p->strides[i - 1] == p->strides[i])
				return fail(-EINVAL, msg, msglen, "stride %s is given twice",
					    fmt_size(p->strides[i], c1, sizeof(c1)));
		p->nstrides = n;
		return 0;
	}
	if (!strcmp(field, "pages"))
		return each_token(field, value, ATSD_MAX_AXIS, &p->npages, one_pages, p, msg, msglen);
	if (!strcmp(field, "tasks")) {
		if (!strcmp(value, "threads") || !strcmp(value, "processes")) {
			p->tasks = value[0] == 'p' ? ATSD_TASKS_PROCESSES : ATSD_TASKS_THREADS;
			return 0;
		}
		return fail(-EINVAL, msg, msglen, "--tasks must be threads or processes (got '%s')", cut(value, c1, sizeof(c1)));
	}
	if (!strcmp(field, "threads"))
		return each_token(field, value, ATSD_MAX_AXIS, &p->nthreads, one_threads, p, msg, msglen);
	if (!strcmp(field, "op"))
		return each_token(field, value, ATSD_MAX_AXIS, &p->nops, one_op, p, msg, msglen);
	if (!strcmp(field, "workload")) {
		if (!strcmp(value, "none")) {  /* a plan's record of no workload, read back */
			p->nworkloads = 0;
			return 0;
		}
		return each_token(field, value, ATSD_MAX_AXIS, &p->nworkloads, one_workload, p, msg, msglen);
	}
	if (!strcmp(field, "bystanders"))
		return each_token(field, value, ATSD_MAX_AXIS, &p->nbystanders, one_bystanders, p, msg, msglen);
	if (!strcmp(field, "gpu"))
		return each_token(field, value, ATSD_MAX_AXIS, &p->ngpu, one_gpu, p, msg, msglen);
	if (!strcmp(field, "device"))
		return each_token(field, value, ATSD_MAX_AXIS, &p->ndevices, one_device, p, msg, msglen);
	if (!strcmp(field, "ceiling"))
		return each_token(field, value, ATSD_MAX_AXIS, &p->nceiling, one_ceiling, p, msg, msglen);
	if (!strcmp(field, "rounds") || !strcmp(field, "reps") || !strcmp(field, "warmup") ||
	    !strcmp(field, "warmup-rounds") || !strcmp(field, "cpu")) {
		if (!strcmp(field, "cpu") && !strcmp(value, "auto")) {
			p->cpu = -1;
			return 0;
		}
		int lo = !strcmp(field, "rounds") || !strcmp(field, "reps");
		err = parse_count(field, value, lo, !strcmp(field, "cpu") ? 1 << 20 : 1000000, &v, msg, msglen);
		if (err)
			return err;
		p->rounds_given |= !strcmp(field, "rounds");
		*(!strcmp(field, "rounds") ? &p->rounds : !strcmp(field, "reps") ? &p->reps :
		  !strcmp(field, "warmup") ? &p->warmup : !strcmp(field, "cpu") ? &p->cpu : &p->warmup_rounds) = (int32_t)v;
		return 0;
	}
	if (!strcmp(field, "latency"))
		return parse_flag("latency", value, &p->latency, msg, msglen);
	if (!strcmp(field, "retouch"))
		return parse_flag("retouch", value, &p->retouch, msg, msglen);
	if (!strcmp(field, "processes"))
		return parse_flag("processes", value, &p->processes, msg, msglen);
	if (!strcmp(field, "verify")) {
		if (!strcmp(value, "auto")) {
			p->verify = -1;
			return 0;
		}
		return parse_flag("verify", value, &p->verify, msg, msglen);
	}
	if (!strcmp(field, "trace")) {
		static const char *const modes[] = {"auto", "on", "off"};
		int k;
		for (k = 0; k < 3; k++) {
			if (!strcmp(value, modes[k])) {
				p->trace = k;
				return 0;
			}
		}
		return fail(-EINVAL, msg, msglen, "trace must be auto, on or off (got '%s')", cut(value, c1, sizeof(c1)));
	}
	if (!strcmp(field, "seed")) {
		char *end;
		unsigned long long s;
		errno = 0;
		s = strtoull(value, &end, 10);
		if (end == value || *end || errno || strchr(value, '-'))
			return fail(-EINVAL, msg, msglen, "--seed '%s' is not a whole number from 0 to 2^64-1",
				    cut(value, c1, sizeof(c1)));
		p->seed = s;
		p->seed_set = 1;
		return 0;
	}
	if (!strcmp(field, "until"))
		return parse_real("until", value, "%", 0, 100, 1, &p->until, msg, msglen);
	if (!strcmp(field, "confidence"))
		return parse_real("confidence", value, "%", 50, 100, 0, &p->confidence, msg, msglen);
	if (!strcmp(field, "runs")) {
		err = parse_count("runs", value, 1, 1000, &v, msg, msglen);
		p->runs = err ? p->runs : (int32_t)v;
		return err;
	}
	if (!strcmp(field, "mem-node")) {
		if (!strcmp(value, "none")) {
			p->mem_node = -1;
			return 0;
		}
		err = parse_count("mem-node", value, 0, 1023, &v, msg, msglen);
		p->mem_node = err ? p->mem_node : (int32_t)v;
		return err;
	}
	if (!strcmp(field, "placements")) {
		err = parse_count("placements", value, 1, 64, &v, msg, msglen);
		p->placements = err ? p->placements : (int32_t)v;
		return err;
	}
	if (!strcmp(field, "gap"))
		return atsd_parse_duration(value, field, &p->gap, msg, msglen);
	if (!strcmp(field, "max-time") || !strcmp(field, "spread")) {
		int is_spread = field[0] == 's';
		err = atsd_parse_duration(value, field, is_spread ? &p->spread : &p->max_time, msg, msglen);
		if (!err && !is_spread && p->max_time <= 0)
			return fail(-EINVAL, msg, msglen, "--max-time must be above 0 (got '%s')", cut(value, c1, sizeof(c1)));
		return err;
	}
	if (!strcmp(field, "max-rounds")) {
		err = parse_count("max-rounds", value, 1, 1000000, &v, msg, msglen);
		p->max_rounds = err ? p->max_rounds : (int32_t)v;
		return err;
	}
	if (!strcmp(field, "label")) {
		size_t len = strlen(value);
		if (len >= sizeof(p->label))
			return fail(-E2BIG, msg, msglen, "--label is longer than %d bytes", (int)sizeof(p->label) - 1);
		memcpy(p->label, value, len + 1);
		p->label_set = 1;
		return 0;
	}
	return fail(-EINVAL, msg, msglen, "unknown option '%s'", cut(field, c1, sizeof(c1)));
}

void atsd_plan_init(struct atsd_plan *p)
{
	int i;

	memset(p, 0, sizeof(*p));
	p->cpu = -1;
	for (i = 0; i < NOPTIONS; i++)
		if (options[i].field && options[i].default_value)
			atsd_plan_set(p, options[i].field, options[i].default_value, NULL, 0);
	p->rounds_given = 0;
	p->given = 0;
	/* 0 until given: the check refuses a --confidence without --until (it would change nothing), and
	 * puts the table's default back for every plan it passes. */
	p->confidence = 0;
}

static const char *table_default(const char *field)
{
	int i;

	for (i = 0; i < NOPTIONS; i++)
		if (options[i].field && !strcmp(options[i].field, field))
			return options[i].default_value;
	return NULL;
}

/* --cpu auto: a CPU with no housekeeping first (isolated, nohz_full); else one that is neither CPU 0
 * nor its SMT siblings (CPU 0 takes IRQs, timers and RCU work, which land inside passes); else the
 * first allowed. */
static void choose_cpu(struct atsd_plan *p, const struct atsd_host *h)
{
	int i;

	for (i = 0; i < h->naffinity; i++) {
		if (h->quiet[i]) {
			p->cpu = h->affinity[i];
			snprintf(p->cpu_reason, sizeof(p->cpu_reason), "auto: isolated or nohz_full");
			return;
		}
	}
	for (i = 0; i < h->naffinity; i++) {
		if (h->affinity[i] != 0 && (h->cpu0_core < 0 || h->core[i] != h->cpu0_core)) {
			p->cpu = h->affinity[i];
			snprintf(p->cpu_reason, sizeof(p->cpu_reason), "auto: not CPU 0 nor its SMT siblings");
			return;
		}
	}
	p->cpu = h->affinity[0];
	snprintf(p->cpu_reason, sizeof(p->cpu_reason), "auto: no CPU allowed but CPU 0 and its siblings");
}

static void fmt_cpulist(const int32_t *cpus, int n, char *buf, size_t len)
{
	size_t used = 0;
	int i = 0, j;

	buf[0] = 0;
	while (i < n && used < len) {
		for (j = i; j + 1 < n && cpus[j + 1] == cpus[j] + 1; j++)
			;
		used += (size_t)snprintf(buf + used, len - used, i == j ? "%s%d" : "%s%d-%d", used ? "," : "",
					 cpus[i], cpus[j]);
		i = j + 1;
	}
}

static int max_of(const int32_t *v, int n)
{
	int i, m = 0;

	for (i = 0; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

static int has_pages(const struct atsd_plan *p, int kind)
{
	int i;

	for (i = 0; i < p->npages; i++)
		if (p->pages[i] == kind)
			return 1;
	return 0;
}

/* Bystanders go to CPUs on other cores first, SMT siblings last: a sibling shares the core's TLB. */
static int choose_bystanders(struct atsd_plan *p, const struct atsd_host *h, int want)
{
	int32_t used_core[ATSD_MAX_CPUS];
	int i, k, nused = 0, n = 0, pass, cpu_core = -1;

	for (i = 0; i < h->naffinity; i++)
		if (h->affinity[i] == p->cpu)
			cpu_core = h->core[i];
	if (cpu_core >= 0)
		used_core[nused++] = cpu_core;
	for (pass = 0; pass < 2 && n < want; pass++) {
		for (i = 0; i < h->naffinity && n < want; i++) {
			int c = h->affinity[i], core = h->core[i], dup = 0, taken = 0;
			if (c == p->cpu)
				continue;
			for (k = 0; k < n; k++)
				taken |= p->bystander_cpus[k] == c;
			if (taken)
				continue;
			for (k = 0; core >= 0 && k < nused; k++)
				dup |= used_core[k] == core;
			if (pass == 0 && dup)
				continue;
			p->bystander_cpus[n++] = c;
			if (core >= 0 && !dup && nused < ATSD_MAX_CPUS)
				used_core[nused++] = core;
		}
	}
	p->nbystander_cpus = n;
	return n;
}

static uint64_t random_seed(void)
{
	uint32_t s;

	if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
		s = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16);
	return s & 0x7fffffffu;
}

/* A file workload's tasks each make a file of its unit in atsd_workload_dir(): that folder must be
 * there, writable and have room for every task's (the largest --threads), or the run is refused now,
 * naming it, rather than failing (or dying of SIGBUS) at its first pass. */
static int workload_room(const struct atsd_plan *p, uint64_t unit, const char *name, char *msg, uint64_t msglen)
{
	const char *dir = atsd_workload_dir();
	struct statvfs st;
	char a[32], b[32], c[32];
	int i, tasks = 1;
	uint64_t need, room;

	for (i = 0; i < p->nthreads; i++)
		if (p->threads[i] > tasks)
			tasks = p->threads[i];
	if (statvfs(dir, &st) || access(dir, W_OK | X_OK))
		return fail(-errno, msg, msglen, "--workload %s makes its files in TMPDIR (%s): %s", name, dir,
			    strerror(errno));
	need = unit * (uint64_t)tasks;
	room = (uint64_t)st.f_bavail * st.f_frsize;
	if (room < need)
		return fail(-ENOSPC, msg, msglen, "--workload %s needs %s in TMPDIR (%s), a %s file a task: it has %s "
			    "free", name, fmt_size(need, a, sizeof(a)), dir, fmt_size(unit, b, sizeof(b)),
			    fmt_size(room & ~1023ULL, c, sizeof(c)));
	return 0;
}

int atsd_plan_check(struct atsd_plan *p, const struct atsd_host *h, char *msg, uint64_t msglen)
{
	uint64_t unit = h->page_size;
	char unit_name[64], a[32], b[32], list[256];
	int i, hugetlb = has_pages(p, ATSD_PAGES_HUGETLB), others, want, threads;

	if (!unit)
		return fail(-EINVAL, msg, msglen, "the page size of this system is unknown");
	if (p->nworkloads > 0) {
		/* will-it-scale's loop, as its source runs it: one base page a loop, its own unit of mapping,
		 * nothing to put back between passes.  What it cannot take is refused, never ignored. */
		static const char *const fixed[] = {"op", "strides", "latency", "retouch", "pages", "gpu", "placements",
						     "mem-node", "device"};
		uint64_t unit = 0;
		for (i = 0; i < (int)(sizeof(fixed) / sizeof(fixed[0])); i++)
			if (given(p, fixed[i]) && (strcmp(fixed[i], "gpu") || p->ngpu > 1 || p->gpu[0] >= 0) &&
			    (strcmp(fixed[i], "device") || p->ndevices > 1 || p->devices[0] != ATSD_DEVICE_NONE) &&
			    (strcmp(fixed[i], "pages") || p->npages > 1 || p->pages[0] != ATSD_PAGES_BASE))
				return fail(-EINVAL, msg, msglen, "--workload runs will-it-scale's loop as it is (one base page "
					    "a loop, written, madvise(MADV_DONTNEED), read back): it takes no --%s",
					    !strcmp(fixed[i], "retouch") ? "no-retouch" : fixed[i]);
		for (i = 0; i < p->nworkloads; i++)
			if (atsd_workload_unit(p->workloads[i]) > unit)
				unit = atsd_workload_unit(p->workloads[i]);
		if (p->size % unit)
			return fail(-EINVAL, msg, msglen, "--workload: size %s (the pages each task goes through a pass) is "
				    "not a multiple of %s, the unit %s maps at a time", fmt_size(p->size, a, sizeof(a)),
				    fmt_size(unit, b, sizeof(b)), unit == atsd_workload_unit(ATSD_WORKLOAD_TLB_FLUSH2) ?
				    "tlb_flush2" : "tlb_flush1/3");
		if (unit < h->page_size)
			return fail(-EINVAL, msg, msglen, "--workload: the page size %s is larger than the unit %s",
				    fmt_size(h->page_size, a, sizeof(a)), fmt_size(unit, b, sizeof(b)));
		p->strides[0] = h->page_size;  /* a loop's call: one page */
		p->nstrides = 1;
		for (i = 0; i < p->nworkloads; i++)
			if (p->workloads[i] != ATSD_WORKLOAD_TLB_FLUSH2) {
				int err = workload_room(p, atsd_workload_unit(p->workloads[i]), atsd_workload_name(p->workloads[i]),
							msg, msglen);
				if (err)
					return err;
			}
	}
	if (p->nstrides < 1)
		return fail(-EINVAL, msg, msglen, "no stride given");
	if (atsd_plan_cells(p) > 256)
		return fail(-E2BIG, msg, msglen, "the axes make %d cells: at most 256", atsd_plan_cells(p));
	snprintf(unit_name, sizeof(unit_name), "the page size (%s)", fmt_size(unit, a, sizeof(a)));
	if (hugetlb) {
		if (!h->hugepage_size)
			return fail(-EINVAL, msg, msglen, "--pages hugetlb: this kernel has no hugetlb pages "
				    "(no Hugepagesize in /proc/meminfo)");
		unit = h->hugepage_size;
		snprintf(unit_name, sizeof(unit_name), "the huge page size (%s)", fmt_size(unit, a, sizeof(a)));
	}
	for (i = 0; i < p->nstrides; i++) {
		uint64_t s = p->strides[i];
		if (s % unit)
			return fail(-EINVAL, msg, msglen, "stride %s is not a multiple of %s", fmt_size(s, a, sizeof(a)),
				    unit_name);
		if (s > p->size)
			return fail(-EINVAL, msg, msglen, "stride %s is larger than the size %s",
				    fmt_size(s, a, sizeof(a)), fmt_size(p->size, b, sizeof(b)));
		if (p->size % s)
			return fail(-EINVAL, msg, msglen, "size %s is not a multiple of stride %s",
				    fmt_size(p->size, a, sizeof(a)), fmt_size(s, b, sizeof(b)));
	}
	if (p->size % unit)
		return fail(-EINVAL, msg, msglen, "size %s is not a multiple of %s", fmt_size(p->size, a, sizeof(a)),
			    unit_name);
	if (hugetlb) {
		uint64_t need = p->size / unit;
		int64_t free_pages = h->hugepages_free < 0 ? 0 : h->hugepages_free;
		if ((uint64_t)free_pages < need)
			return fail(-ENOMEM, msg, msglen, "--pages hugetlb: the pool has %" PRId64 " free %s pages, %"
				    PRIu64 " are needed (e.g. echo %" PRIu64 " > /proc/sys/vm/nr_hugepages)", free_pages,
				    fmt_size(unit, a, sizeof(a)), need, need);
	}
	{
		/* the region in base or THP pages, and the canary's buffer (timed before every round); with
		 * --placements two regions at least: the next one is mapped while the last is still held */
		uint64_t one = p->nworkloads ? 0 : !hugetlb || p->npages > 1 ? p->size : 0;
		int twice = p->placements > 1 && one;
		char c[32];
		/* compared a term at a time: size x 2 + the canary wrapped past 2^64 for a size of 2^63 */
		if (h->mem_available >= 0 && (one > (uint64_t)h->mem_available / (twice ? 2 : 1) ||
					      one * (twice ? 2 : 1) + ATSD_CANARY_BYTES > (uint64_t)h->mem_available))
			return fail(-ENOMEM, msg, msglen, "%s%s%s%sthe canary's %s %s more than the memory available "
				    "(%.1f GiB MemAvailable)", one ? "size " : "", one ? fmt_size(one, a, sizeof(a)) : "",
				    twice ? " twice (--placements)" : "", one ? " and " : "", fmt_size(ATSD_CANARY_BYTES, c, sizeof(c)),
				    one ? "are" : "is", (double)h->mem_available / (double)(1ULL << 30));
	}
	if (h->naffinity < 1)
		return fail(-EINVAL, msg, msglen, "this process may run on no CPU");
	fmt_cpulist(h->affinity, h->naffinity, list, sizeof(list));
	if (p->cpu < 0) {
		choose_cpu(p, h);
	} else {
		snprintf(p->cpu_reason, sizeof(p->cpu_reason), "given");
		int found = 0;
		for (i = 0; i < h->naffinity; i++)
			found |= h->affinity[i] == p->cpu;
		if (!found)
			return fail(-EINVAL, msg, msglen, "--cpu %d is not in this process's CPU affinity %s", p->cpu, list);
	}
	want = max_of(p->bystanders, p->nbystanders);
	others = h->naffinity - 1;
	threads = max_of(p->threads, p->nthreads);
	if (threads > h->naffinity)
		return fail(-EINVAL, msg, msglen, "--threads %d needs %d CPUs (one a thread), but the affinity mask has "
			    "%d (%s)", threads, threads, h->naffinity, list);
	if (want > others)
		return fail(-EINVAL, msg, msglen, "--bystanders %d needs %d other CPUs, but the affinity mask has %d "
			    "besides CPU %d", want, want, others, p->cpu);
	if (threads - 1 + want > others)
		return fail(-EINVAL, msg, msglen, "--threads %d and --bystanders %d need %d CPUs besides CPU %d, but the "
			    "affinity mask has %d", threads, want, threads - 1 + want, p->cpu, others);
	for (i = 0; !p->nworkloads && i < p->nthreads; i++) {  /* a workload's size is each task's */
		int s;
		for (s = 0; s < p->nstrides; s++)
			if (p->size % ((uint64_t)p->threads[i] * p->strides[s]))
				return fail(-EINVAL, msg, msglen, "size %s is not a multiple of --threads %d x stride %s: each "
					    "thread takes an equal part of the region in whole strides",
					    fmt_size(p->size, a, sizeof(a)), p->threads[i], fmt_size(p->strides[s], b, sizeof(b)));
	}
	if (p->tasks == ATSD_TASKS_PROCESSES && threads < 2 && !p->nworkloads)  /* will-it-scale's -t 1 */
		return fail(-EINVAL, msg, msglen, "--tasks processes makes the --threads processes: it needs --threads 2 "
			    "or more");
	/* helper threads take the CPUs bystanders would (other cores first), bystanders the ones after */
	choose_bystanders(p, h, threads - 1 + want);
	p->thread_cpus[0] = p->cpu;
	for (i = 1; i < threads; i++)
		p->thread_cpus[i] = p->bystander_cpus[i - 1];
	p->nthread_cpus = threads;
	for (i = 0; i < want; i++)
		p->bystander_cpus[i] = p->bystander_cpus[i + threads - 1];
	p->nbystander_cpus = want;
	for (i = 0; i < p->nops; i++) {
		int k;
		for (k = 0; p->ops[i] == ATSD_OP_MUNMAP && k < p->ngpu; k++)
			if (p->gpu[k] >= 0)
				return fail(-EINVAL, msg, msglen, "--op munmap with --gpu: the GPU toucher is not made for "
					    "a region unmapped and mapped anew every pass; give --op mprotect or madvise");
	}
	if (has_device(p, ATSD_DEVICE_HMM)) {
		for (i = 0; i < p->ngpu; i++)
			if (p->gpu[i] >= 0)
				return fail(-EINVAL, msg, msglen, "--device hmm with --gpu: one device path a run; give one of "
					    "them");
		if (p->tasks == ATSD_TASKS_PROCESSES && threads > 1)
			return fail(-EINVAL, msg, msglen, "--device hmm mirrors one mm: --tasks processes gives each task "
				    "its own; use --tasks threads");
		if (!h->hmm_device)
			return fail(-ENODEV, msg, msglen, "--device hmm: no %s (read-write): load the test_hmm driver "
				    "(docs/device.md)", atsd_device_path());
		if (h->mem_available >= 0 && p->size + ATSD_CANARY_BYTES + atsd_device_mirror_bytes(p->size, unit) >
					     (uint64_t)h->mem_available)
			return fail(-ENOMEM, msg, msglen, "--device hmm: size %s, the canary and the mirror's %s are more "
				    "than the memory available (%.1f GiB MemAvailable)", fmt_size(p->size, a, sizeof(a)),
				    fmt_size(atsd_device_mirror_bytes(p->size, unit) & ~1023ULL, b, sizeof(b)),
				    (double)h->mem_available / (double)(1ULL << 30));
	}
	/* --verify: a checker on every allowed CPU; the invalidator's sits out each call, so one CPU has
	 * nothing to check from.  auto (neither --verify nor --no-verify) is off, but on for --workload
	 * (will-it-scale asserts its read-back) where another CPU is allowed: a workload on one CPU runs
	 * unchecked. */
	if (p->verify < 0)
		p->verify = p->nworkloads > 0 && h->naffinity > 1;
	if (p->verify && h->naffinity < 2)
		return fail(-EINVAL, msg, msglen, "--verify checks each call from another CPU, but the affinity mask "
			    "has one (%s): nothing to check from", list);
	p->nverify_cpus = 0;
	for (i = 0; p->verify && i < h->naffinity; i++)
		p->verify_cpus[p->nverify_cpus++] = h->affinity[i];
	if (p->trace == ATSD_TRACE_ON && p->warmup < 1)
		return fail(-EINVAL, msg, msglen, "--trace counts flushes on warm-up passes, so no timed pass is "
			    "traced: it needs --warmup 1 or more");
	if (p->until <= 0 && (p->max_time > 0 || p->max_rounds > 0 || p->confidence > 0))
		return fail(-EINVAL, msg, msglen, "--%s applies to adaptive runs: give --until P%% too",
			    p->max_time > 0 ? "max-time" : p->max_rounds > 0 ? "max-rounds" : "confidence");
	if (p->confidence <= 0)
		atsd_plan_set(p, "confidence", table_default("confidence"), NULL, 0);
	if (p->runs > 1 && p->processes)
		return fail(-EINVAL, msg, msglen, "--runs %d already runs each sub-run in a fresh process; --processes "
			    "makes every round one: give one of them", p->runs);
	if (p->placements > 1 && p->processes)
		return fail(-EINVAL, msg, msglen, "--placements %d rotates the rounds of one process over its regions; "
			    "--processes gives every round a process of its own: give one of them", p->placements);
	if (p->placements > 1 && (p->nops > 1 || p->ops[0] != ATSD_OP_MPROTECT))
		return fail(-EINVAL, msg, msglen, "--placements %d keeps each region's pages from round to round; "
			    "madvise and munmap free them at every pass: use it with --op mprotect", p->placements);
	if (p->placements > 1 && (p->nthreads > 1 || p->threads[0] > 1))
		return fail(-EINVAL, msg, msglen, "--placements %d: the --threads' regions are not pooled; give one of "
			    "them", p->placements);
	if (p->runs > 1 && p->spread > 0)
		return fail(-EINVAL, msg, msglen, "--spread paces the rounds of one process; with --runs each sub-run "
			    "runs its rounds back to back and --gap spaces the sub-runs: give one of them");
	if (p->until > 0 && p->runs > 1) {
		/* --until --runs M adds sub-runs of --rounds each: M of them are the minimum, and --max-rounds
		 * caps the measured rounds of the whole file */
		if (p->max_rounds > 0 && p->max_rounds < p->runs * p->rounds)
			return fail(-EINVAL, msg, msglen, "--max-rounds %d is below the %d rounds of --runs %d x --rounds "
				    "%d, the minimum of an adaptive run of sub-runs", p->max_rounds, p->runs * p->rounds,
				    p->runs, p->rounds);
	} else if (p->until > 0) {
		/* --rounds is the minimum, 3 at least (a CI from fewer says nothing), and 3 unless given */
		if (p->rounds < 3 || !p->rounds_given)
			p->rounds = 3;
		if (p->max_rounds > 0 && p->max_rounds < p->rounds)
			return fail(-EINVAL, msg, msglen, "--max-rounds %d is below --rounds %d, the minimum of an adaptive "
				    "run", p->max_rounds, p->rounds);
	}
	if (p->until > 0) {
		if (p->max_time <= 0)
			p->max_time = 600;
	}
	p->align = h->thp_size ? h->thp_size : 2ULL << 20;
	if (hugetlb && h->hugepage_size > p->align)
		p->align = h->hugepage_size;
	if (p->strides[p->nstrides - 1] > p->align)
		p->align = p->strides[p->nstrides - 1];
	if (!p->seed_set) {
		p->seed = random_seed();
		p->seed_set = 1;
	}
	return 0;
}

/* splitmix64: the stride-order generator (same seed, same order in both front ends). */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

int atsd_round_order(const struct atsd_plan *p, int32_t round, uint64_t *out, uint64_t cap)
{
	uint64_t state = p->seed * 1000003ULL + (uint64_t)(uint32_t)round, n = 0;
	int rep, i;

	if (p->nstrides < 1 || p->warmup < 0 || p->reps < 1 ||
	    (uint64_t)(p->warmup + p->reps) * (uint64_t)p->nstrides > cap)
		return -ENOSPC;
	for (rep = 0; rep < p->warmup + p->reps; rep++) {
		uint64_t *order = out + n;
		memcpy(order, p->strides, sizeof(order[0]) * (size_t)p->nstrides);
		for (i = p->nstrides - 1; i > 0; i--) {  /* Fisher-Yates */
			int j = (int)(splitmix64(&state) % (uint64_t)(i + 1));
			uint64_t t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		n += (uint64_t)p->nstrides;
	}
	return (int)n;
}

int atsd_plan_cells(const struct atsd_plan *p)
{
	return (p->nworkloads ? p->nworkloads : 1) * p->nops * p->nthreads * p->nbystanders * p->npages * p->ngpu *
	       p->ndevices * p->nceiling;
}

int atsd_plan_cell(const struct atsd_plan *p, int32_t index, struct atsd_cell *out)
{
	int32_t i = index;

	if (index < 0 || index >= atsd_plan_cells(p))
		return -EINVAL;
	out->ceiling = p->ceiling[i % p->nceiling];
	i /= p->nceiling;
	out->device = p->devices[i % p->ndevices];
	i /= p->ndevices;
	out->gpu = p->gpu[i % p->ngpu];
	i /= p->ngpu;
	out->pages = p->pages[i % p->npages];
	i /= p->npages;
	out->bystanders = p->bystanders[i % p->nbystanders];
	i /= p->nbystanders;
	out->threads = p->threads[i % p->nthreads];
	i /= p->nthreads;
	out->op = p->ops[i % p->nops];
	i /= p->nops;
	out->workload = p->nworkloads ? p->workloads[i] : -1;
	return 0;
}

int atsd_cell_order(const struct atsd_plan *p, int32_t round, int32_t *out, int32_t cap)
{
	/* Its own stream (the seed's bits inverted), so adding cells leaves the stride order alone. */
	uint64_t state = ~p->seed * 1000003ULL + (uint64_t)(uint32_t)round;
	int i, n = atsd_plan_cells(p);

	if (n > cap)
		return -ENOSPC;
	for (i = 0; i < n; i++)
		out[i] = i;
	for (i = n - 1; i > 0; i--) {
		int j = (int)(splitmix64(&state) % (uint64_t)(i + 1));
		int32_t t = out[i];
		out[i] = out[j];
		out[j] = t;
	}
	return n;
}

double atsd_sub_run_start(int32_t first, double previous, double gap, double now)
{
	return first || previous + gap < now ? now : previous + gap;
}

double atsd_round_start(double first_start, int32_t r, double spread, int32_t rounds)
{
	return spread > 0 && rounds > 0 && r > 0 ? first_start + r * spread / rounds : first_start;
}

double atsd_least_sleep(int32_t runs, double gap, int32_t rounds, double spread)
{
	double start = 0.0, end = 0.0;
	int32_t i;

	for (i = 0; i < runs; i++) {
		start = atsd_sub_run_start(i == 0, start, gap, end);
		end = atsd_round_start(start, rounds - 1, spread, rounds);  /* its passes take no time */
	}
	return end;
}
