/*
 * atsd_plan.c - the plan of a run as given: the option table, and each option's value parsed into the
 * plan (sizes, durations, counts, lists); atsd_check.c checks the whole against the host,
 * atsd_schedule.c orders it.
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

int atsd_plan_fail(int err, char *msg, uint64_t msglen, const char *fmt, ...)
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
		return atsd_plan_fail(-EINVAL, msg, msglen, "%s '%s' is not a size (a whole number, optional K, M, G or "
			    "T: binary, 1G = 2^30)", what, cut(text, c1, sizeof(c1)));
	if (decimal)
		return atsd_plan_fail(-EINVAL, msg, msglen, "%s '%s': sizes are binary: write %.*s%c or %.*s%ciB (2^%d), "
			    "not %cB (10^%d to many)", what, cut(text, c1, sizeof(c1)), digits > 20 ? 20 : digits,
			    num, unit, digits > 20 ? 20 : digits, num, unit, shift, unit, shift * 3 / 10);
	if (big || (shift && v > (UINT64_MAX >> shift)))
		return atsd_plan_fail(-ERANGE, msg, msglen, "%s '%s' is too large (a size must fit in 64 bits)", what,
			    cut(text, c1, sizeof(c1)));
	if (v == 0)
		return atsd_plan_fail(-EINVAL, msg, msglen, "%s must not be zero", what);
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
		return atsd_plan_fail(-EINVAL, msg, msglen, "--%s '%s' is not a whole number", field, cut(text, c1, sizeof(c1)));
	if (errno == ERANGE || v > hi)
		return atsd_plan_fail(-ERANGE, msg, msglen, "--%s '%s' is too large (at most %lld)", field,
			    cut(text, c1, sizeof(c1)), hi);
	if (v < lo)
		return atsd_plan_fail(-EINVAL, msg, msglen, "--%s must be at least %lld (got %lld)", field, lo, v);
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
		return atsd_plan_fail(-ENOMEM, msg, msglen, "out of memory");
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
			err = atsd_plan_fail(-E2BIG, msg, msglen, "--%s takes at most %d values", field, max);
			break;
		}
		err = one(p, tok, (*n)++, msg, msglen);
	}
	free(copy);
	if (!err && *n == 0)
		err = atsd_plan_fail(-EINVAL, msg, msglen, "no %s given", strcmp(field, "strides") ? field : "stride");
	if (!err && empty)
		err = atsd_plan_fail(-EINVAL, msg, msglen, "--%s '%s' has an empty value (a comma at an end or doubled)",
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
	return atsd_plan_fail(-EINVAL, msg, msglen, "--pages must be base, thp or hugetlb (got '%s')", cut(tok, c1, sizeof(c1)));
}

static int one_op(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	int k = atsd_op_parse(tok);
	char c1[48];

	if (k < 0)
		return atsd_plan_fail(-EINVAL, msg, msglen, "--op must be mprotect, madvise or munmap (got '%s')",
			    cut(tok, c1, sizeof(c1)));
	p->ops[i] = k;
	return 0;
}

static int one_device(struct atsd_plan *p, const char *tok, int i, char *msg, uint64_t msglen)
{
	int k = atsd_device_parse(tok);
	char c1[48];

	if (k < 0)
		return atsd_plan_fail(-EINVAL, msg, msglen, "--device must be none or hmm (got '%s')", cut(tok, c1, sizeof(c1)));
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
		return atsd_plan_fail(-EINVAL, msg, msglen, "--%s '%s' is not a number", field, cut(text, c1, sizeof(c1)));
	if ((open_lo ? v <= lo : v < lo) || v >= hi)
		return atsd_plan_fail(-EINVAL, msg, msglen, "--%s must be %s %g and below %g (got %s)", field,
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
		return atsd_plan_fail(-EINVAL, msg, msglen, "--%s '%s' is not a duration (e.g. 90s, 5m, 1h; at most 1e7 s)", what,
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
	return atsd_plan_fail(-EINVAL, msg, msglen, "%s must be 0 or 1 (got '%s')", field, cut(value, c1, sizeof(c1)));
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

int atsd_plan_given(const struct atsd_plan *p, const char *field)
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
		return atsd_plan_fail(-EINVAL, msg, msglen, "--workload must be tlb_flush1, tlb_flush2 or tlb_flush3 (got '%s')",
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
		return atsd_plan_fail(-EINVAL, msg, msglen, "no value given");
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
				return atsd_plan_fail(-EINVAL, msg, msglen, "stride %s is given twice",
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
		return atsd_plan_fail(-EINVAL, msg, msglen, "--tasks must be threads or processes (got '%s')", cut(value, c1, sizeof(c1)));
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
		return atsd_plan_fail(-EINVAL, msg, msglen, "trace must be auto, on or off (got '%s')", cut(value, c1, sizeof(c1)));
	}
	if (!strcmp(field, "seed")) {
		char *end;
		unsigned long long s;
		errno = 0;
		s = strtoull(value, &end, 10);
		if (end == value || *end || errno || strchr(value, '-'))
			return atsd_plan_fail(-EINVAL, msg, msglen, "--seed '%s' is not a whole number from 0 to 2^64-1",
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
			return atsd_plan_fail(-EINVAL, msg, msglen, "--max-time must be above 0 (got '%s')", cut(value, c1, sizeof(c1)));
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
			return atsd_plan_fail(-E2BIG, msg, msglen, "--label is longer than %d bytes", (int)sizeof(p->label) - 1);
		memcpy(p->label, value, len + 1);
		p->label_set = 1;
		return 0;
	}
	return atsd_plan_fail(-EINVAL, msg, msglen, "unknown option '%s'", cut(field, c1, sizeof(c1)));
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

const char *atsd_option_default(const char *field)
{
	int i;

	for (i = 0; i < NOPTIONS; i++)
		if (options[i].field && !strcmp(options[i].field, field))
			return options[i].default_value;
	return NULL;
}
