/*
 * atsd_summary.c - the table atsd prints after the run: run's per-stride table, so a run on a
 * minimal system reads like `atsdbench run` without the import.
 */
#include "atsd_main.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* One block of shared memory, zeroed: with --runs each sub-run's process fills in its passes and
 * the parent prints the table of them all. */
int summary_init(struct summary *t, const struct atsd_plan *p)
{
	uint64_t cap = (uint64_t)p->runs * (uint64_t)p->rounds * (uint64_t)p->reps;
	size_t n, bytes;
	char *m;
	int i;

	t->ncells = atsd_plan_cells(p);
	t->nstrides = p->nstrides;
	t->s = NULL;
	if (cap > INT_MAX / 2)
		return -ENOMEM;
	t->cap = (int)cap;
	n = (size_t)(t->ncells * t->nstrides);
	bytes = n * (sizeof(*t->s) + 2 * sizeof(double) * (size_t)t->cap);
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	t->s = (struct stride_stats *)(void *)m;
	t->bytes = bytes;
	for (i = 0; i < t->ncells * t->nstrides; i++) {
		t->s[i].gbps = (double *)(void *)(m + n * sizeof(*t->s)) + (size_t)i * 2 * (size_t)t->cap;
		t->s[i].us = t->s[i].gbps + t->cap;
	}
	return 0;
}

struct stride_stats *summary_at(struct summary *t, const struct atsd_plan *p, int32_t cell, uint64_t stride)
{
	int i;

	for (i = 0; i < p->nstrides && p->strides[i] != stride; i++)
		;
	return &t->s[cell * t->nstrides + i];
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

/* The per-call titles of run's table (atsdbench/render/tables.py COUNTER_COLUMNS); quiet ones only where non-zero. */
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
void print_summary(FILE *f, const struct atsd_plan *p, struct summary *t, const struct counting *k)
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
	for (i = 0; i < p->nworkloads; i++)  /* will-it-scale's loops: GB/s of the pages they zapped */
		fprintf(f, "%s%s", i ? "," : "", atsd_workload_name(p->workloads[i]));
	for (i = 0; !p->nworkloads && i < p->nops; i++)  /* one op: its call; an axis of ops: their names */
		fprintf(f, "%s%s", i ? "," : "", p->nops > 1 ? atsd_op_name(p->ops[i]) : atsd_op_call(p->ops[i]));
	fprintf(f, p->nworkloads ? " loops (will-it-scale, GB/s = loops/s x page size) over %s a task, " : " rate over %s, ",
		atsd_format_size(p->size, size, sizeof(size)));
	if (p->runs > 1)
		fprintf(f, "%d sub-runs (fresh processes, --gap %gs) x ", p->runs, p->gap);
	fprintf(f, "%d rounds x %d reps, CPU %d; page size %s\n", p->rounds, p->reps, p->cpu,
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
			if (p->nops > 1)
				fprintf(f, " op=%s", atsd_op_name(c.op));
			if (p->nthreads > 1)
				fprintf(f, " threads=%d", c.threads);
			if (p->nbystanders > 1)
				fprintf(f, " bystanders=%d", c.bystanders);
			if (p->npages > 1)
				fprintf(f, " pages=%s", page_names[c.pages]);
			fputc('\n', f);
		}
		table_print(&tb, f);
		free(tb.cells);
	}
	if (k->n || k->error[0]) {
		char line[2048];
		if (k->n)
			snprintf(line, sizeof(line), "flush counts: %s (%s-wide), counted on warm-up passes so no timed "
				 "pass is traced", k->events, k->scope ? "system" : "thread");
		else
			snprintf(line, sizeof(line), "no flush counts: %s", k->error);
		put_wrapped(f, line, 2);
	}
}

void summary_free(struct summary *t)
{
	if (t->s)
		munmap(t->s, t->bytes);
	t->s = NULL;
}
