/*
 * atsd - the standalone atsdbench runner for minimal systems (no Python).
 *
 * A thin front end: its options come from the option table (atsd_options.h), the plan is parsed,
 * checked and ordered by the same C code as `atsdbench run` (atsd_plan.c), measured through the
 * same core (atsd.c) and counted from the same tracepoints under the same names (atsd_trace.c).
 * This file is the options and the round loop; counting, the output file and the table after the
 * run are atsd_count.c, atsd_output.c and atsd_summary.c.
 */
#define _GNU_SOURCE
#include "atsd_main.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile sig_atomic_t interrupted;

/* SIGINT and SIGTERM alike: finish the pass under way, write what is finished. */
static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

void die(const char *fmt, ...)
{
	va_list ap;

	fputs("atsd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
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
		if (lat)
			write_latency(out, lat, calls);
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
