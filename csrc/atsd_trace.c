/*
 * atsd_trace.c - where the flush tracepoints are and what their counts are called.  See atsd.h.
 *
 * Compiled into both atsd and atsdbench's core: the column names end up in result files written by
 * either, and `atsdbench import` reads atsd's, so one copy keeps the two readable alike.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first is where current kernels mount it, so it is also the one the mount advice names. */
static const char *const tracefs_paths[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

int atsd_tracefs_root(const char *sysroot, char *out, uint64_t len)
{
	char events[4096];
	struct stat st;
	size_t i;

	if (!sysroot)
		sysroot = "";
	for (i = 0; i < sizeof(tracefs_paths) / sizeof(tracefs_paths[0]); i++) {
		snprintf(events, sizeof(events), "%s%s/events", sysroot, tracefs_paths[i]);
		if (!stat(events, &st) && S_ISDIR(st.st_mode) && !access(events, R_OK | X_OK)) {
			snprintf(out, (size_t)len, "%s%s", sysroot, tracefs_paths[i]);
			return 0;
		}
	}
	if (len)
		out[0] = 0;
	return -ENOENT;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static const char *skip_space(const char *p)
{
	while (is_space(*p))
		p++;
	return p;
}

/* One `{ 3, "local mm shootdown" }` at p: the character after it, or NULL where p holds none. */
static const char *reason_at(const char *p, struct atsd_reason *r)
{
	const char *name;
	int64_t code = 0;

	p = skip_space(p + 1);
	if (!is_digit(*p))
		return NULL;
	for (; is_digit(*p); p++)
		code = code * 10 + (*p - '0');
	if (*p++ != ',')
		return NULL;
	p = skip_space(p);
	if (*p++ != '"')
		return NULL;
	name = p;
	while (*p && *p != '"')
		p++;
	if (*p != '"' || p == name)
		return NULL;
	r->code = code;
	snprintf(r->name, sizeof(r->name), "%.*s", (int)(p - name), name);
	p = skip_space(p + 1);
	return *p == '}' ? p + 1 : NULL;
}

int atsd_tracepoint_parse(const char *text, struct atsd_tracepoint *t)
{
	const char *p;

	memset(t, 0, sizeof(*t));
	for (p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, "ID:", 3)) {
			const char *d = skip_space(p + 3);
			if (is_digit(*d)) {
				t->id = strtoull(d, NULL, 10);
				break;
			}
		}
	}
	/* the print fmt's symbol list; a code named twice keeps its first place and its last name */
	for (p = strchr(text, '{'); p; p = strchr(p, '{')) {
		struct atsd_reason r;
		const char *end = reason_at(p, &r);
		int32_t i;

		if (!end) {
			p++;
			continue;
		}
		p = end;
		for (i = 0; i < t->nreasons && t->reasons[i].code != r.code; i++)
			;
		if (i < ATSD_MAX_REASONS) {
			t->reasons[i] = r;
			t->nreasons += i == t->nreasons;
		}
	}
	return 0;
}

int atsd_tracepoint_find(const char *root, const char *event, struct atsd_tracepoint *t)
{
	char path[4096], *text = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int err;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/events/%s/format", root, event);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	len = getdelim(&text, &cap, 0, f);  /* tracefs files say size 0: read to the end */
	err = len < 0 ? (ferror(f) ? -EIO : -ENOENT) : 0;
	fclose(f);
	if (!err)
		err = atsd_tracepoint_parse(text, t);
	free(text);
	return err;
}

const char *atsd_reason_column(const char *reason, char *out, uint64_t len)
{
	size_t n = (size_t)snprintf(out, (size_t)len, "flushes_");
	int gap = 0;

	/* lower-case letters and digits; every other run becomes one '_', none at either end */
	for (; *reason && n + 2 < len; reason++) {
		char ch = *reason;
		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		if ((ch >= 'a' && ch <= 'z') || is_digit(ch)) {
			if (gap && out[n - 1] != '_')
				out[n++] = '_';
			out[n++] = ch;
			gap = 0;
		} else {
			gap = 1;
		}
	}
	out[n] = 0;
	return out;
}

static int names_send(const char *name)
{
	for (; *name; name++)
		if (!strncasecmp(name, "send", 4))
			return 1;
	return 0;
}

/* Two reasons that clean to one column are one column, with the last reason's filter. */
static int32_t put_column(struct atsd_count_column *out, int32_t n, int32_t cap, const char *name, const char *filter)
{
	int32_t i;

	for (i = 0; i < n && strcmp(out[i].name, name); i++)
		;
	if (i >= cap)
		return n;
	snprintf(out[i].name, sizeof(out[i].name), "%s", name);
	snprintf(out[i].filter, sizeof(out[i].filter), "%s", filter);
	return i == n ? n + 1 : n;
}

int atsd_tlb_flush_columns(const struct atsd_tracepoint *t, struct atsd_count_column *out, int32_t cap)
{
	char not_send[ATSD_FILTER_MAX] = "", flt[ATSD_FILTER_MAX], name[ATSD_COLUMN_NAME];
	int32_t i, n = 0;

	/* x86 also traces the sender of a shootdown ('remote IPI send'): a note, not a flush */
	for (i = 0; i < t->nreasons; i++) {
		if (names_send(t->reasons[i].name)) {
			size_t used = strlen(not_send);
			snprintf(not_send + used, sizeof(not_send) - used, "%sreason != %" PRId64, used ? " && " : "",
				 t->reasons[i].code);
		}
	}
	n = put_column(out, n, cap, "flushes", not_send);
	/* pages is an unsigned long; TLB_FLUSH_ALL (-1) flushes the whole mm */
	snprintf(flt, sizeof(flt), "pages == %" PRIu64 "%s%s", UINT64_MAX, not_send[0] ? " && " : "", not_send);
	n = put_column(out, n, cap, "full_flushes", flt);
	for (i = 0; i < t->nreasons; i++) {
		snprintf(flt, sizeof(flt), "reason == %" PRId64, t->reasons[i].code);
		n = put_column(out, n, cap, atsd_reason_column(t->reasons[i].name, name, sizeof(name)), flt);
	}
	return n;
}

/* Each filter on the event's raw fields.  tlbie_full: IS=1 (rb 0x400, TLB set 0: a tlbiel walk over
 * the 128 sets counts once), process scoped, PID (rs >> 32) not 0, the kernel's.  The hypervisor
 * calls are those that change the hash page table (H_READ does not). */
static const struct {
	const char *name, *event, *filter;
	int32_t opcode;
} power_columns[] = {
	{"tlbie", "powerpc/tlbie", "", -1},
	{"tlbie_global", "powerpc/tlbie", "local == 0", -1},
	{"tlbie_full", "powerpc/tlbie", "rb == 1024 && prs == 1 && rs >= 4294967296", -1},
	{"tlbia", "powerpc/tlbia", "", -1},
	{"h_remove", "powerpc/hcall_entry", NULL, 4},
	{"h_enter", "powerpc/hcall_entry", NULL, 8},
	{"h_clear_mod", "powerpc/hcall_entry", NULL, 16},
	{"h_clear_ref", "powerpc/hcall_entry", NULL, 20},
	{"h_protect", "powerpc/hcall_entry", NULL, 24},
	{"h_bulk_remove", "powerpc/hcall_entry", NULL, 292},
};

int atsd_power_columns(struct atsd_power_column *out, int32_t cap)
{
	int32_t i, n = (int32_t)(sizeof(power_columns) / sizeof(power_columns[0]));

	for (i = 0; i < n && i < cap; i++) {
		struct atsd_power_column *c = &out[i];
		memset(c, 0, sizeof(*c));
		snprintf(c->name, sizeof(c->name), "%s", power_columns[i].name);
		snprintf(c->event, sizeof(c->event), "%s", power_columns[i].event);
		c->opcode = power_columns[i].opcode;
		c->hash = c->opcode >= 0;
		if (c->hash)
			snprintf(c->filter, sizeof(c->filter), "opcode == %d", c->opcode);
		else
			snprintf(c->filter, sizeof(c->filter), "%s", power_columns[i].filter);
	}
	return i;
}

int atsd_tracefs_mounted(const char *mounts)
{
	char *text = NULL, *line, *save = NULL, fs[64];
	int mounted = 0;

	if (!mounts) {
		FILE *f = fopen("/proc/mounts", "r");
		size_t cap = 0;
		if (!f)
			return 0;
		if (getdelim(&text, &cap, 0, f) < 0) {
			free(text);
			text = NULL;
		}
		fclose(f);
	} else {
		text = strdup(mounts);
	}
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line && !mounted; line = strtok_r(NULL, "\n", &save))
		mounted = sscanf(line, "%*s %*s %63s", fs) == 1 && !strcmp(fs, "tracefs");
	free(text);
	return mounted;
}

/* The tool never mounts anything itself: it tells root the command. */
const char *atsd_tracepoint_problem(const char *event, int32_t euid, int32_t mounted, char *out, uint64_t len)
{
	if (euid < 0)
		euid = (int32_t)geteuid();
	if (mounted < 0)
		mounted = atsd_tracefs_mounted(NULL);
	/* short enough that "atsdbench: --breakdown: " and the longest event name fit 100 columns; where
	 * tracefs is not mounted no event reads, so the sentence names none */
	if (euid)
		snprintf(out, (size_t)len, "tracefs needs root for %s (run as root)", event);
	else if (!mounted)
		snprintf(out, (size_t)len, "tracefs not mounted (as root: mount -t tracefs nodev %s)", tracefs_paths[0]);
	else
		snprintf(out, (size_t)len, "this kernel has no %s event in tracefs", event);
	return out;
}
