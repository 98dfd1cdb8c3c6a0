/*
 * atsd - the standalone atsdbench runner for minimal systems (no Python).
 *
 * A thin front end: its options come from the option table (atsd_options.h), the plan is parsed,
 * checked and ordered by the same C code as `atsdbench run` (atsd_plan.c, atsd_check.c,
 * atsd_schedule.c), each cell's passes run by the same loop (atsd_loop.c, through atsd_pass.c) and
 * counted from the same tracepoints under the same names (atsd_trace.c).  This file is the options,
 * the rounds and --runs' sub-runs (a fork each); counting, the output file and the table after the
 * run are atsd_count.c, atsd_output.c and atsd_summary.c, --breakdown's traced passes
 * atsd_breakdown.c.
 */
#define _GNU_SOURCE
#include "atsd_main.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t interrupted;
/* The process of the sub-run under way (--runs), 0 when there is none: a SIGTERM sent to atsd
 * alone must stop it too, and a Ctrl-C reaches it from the terminal anyway (twice is harmless). */
static volatile sig_atomic_t child;

/* SIGINT and SIGTERM alike: finish the pass under way, write what is finished. */
static void on_signal(int sig)
{
	int saved = errno;

	interrupted = 1;
	if (child > 0)
		kill((pid_t)child, sig);
	errno = saved;
}


const char *sysroot(void)
{
#ifdef ATSD_TEST_DOUBLES
	return getenv("ATSD_TEST_SYSROOT");
#else
	return NULL;
#endif
}

/* The kprobe events this process made (--device hmm's counts, --breakdown's device stage) go on
 * every way out, die() included; a forked sub-run that dies leaves its parent's in place. */
static struct counting *probes_counting;
static pid_t probes_owner;

static void remove_probes(void)
{
	if (!probes_owner || probes_owner != getpid())
		return;
	if (probes_counting)
		counting_device_remove(probes_counting);
	breakdown_remove();
	probes_owner = 0;
}

void die(const char *fmt, ...)
{
	va_list ap;

	fputs("atsd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	remove_probes();
	exit(2);
}

/* TEXT as lines of at most 100 columns, broken at spaces, the rest indented by indent (a word longer
 * than the width stays whole on its own line): atsdbench's _cli.wrapped, for atsd's own lines. */
void put_wrapped(FILE *f, const char *text, int indent)
{
	int first = 1;

	while (*text) {
		size_t room = (size_t)(first ? 100 : 100 - indent), len = strlen(text), cut = len;
		if (len > room) {
			for (cut = room; cut > 0 && text[cut] != ' '; cut--)
				;
			if (!cut)  /* a word longer than the line: whole, up to its end */
				cut = strspn(text, " ") + strcspn(text + strspn(text, " "), " ");
		}
		while (cut > 0 && text[cut - 1] == ' ')
			cut--;
		fprintf(f, "%*s%.*s\n", first ? 0 : indent, "", (int)cut, text);
		for (text += cut; *text == ' '; text++)
			;
		first = 0;
	}
}

static void usage(FILE *f)
{
	struct atsd_option o;
	int i;

	fputs("usage: atsd [options] [-o FILE]\n"
	      "Measures mprotect(PROT_NONE) (or --op's call) over a populated region in strides\n"
	      "(GB/s = 10^9 bytes/s; "
	      "sizes binary), prints a table per stride and, with -o, writes FILE for\n"
	      "`atsdbench import FILE`.  --breakdown (root, tracefs) adds, after the measured passes,\n"
	      "one untimed pass per stride traced in a private tracefs instance; its events go into FILE,\n"
	      "and `atsdbench import FILE` cuts them into where a call's time goes.  Options:\n", f);
	for (i = 0; atsd_option_get(i, &o) == 0; i++) {
		char left[64];
		if (!(o.fronts & ATSD_FRONT_ATSD))
			continue;
		if (o.short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", (char)o.short_name, o.name, o.metavar ? " " : "",
				 o.metavar ? o.metavar : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o.name, o.metavar ? " " : "", o.metavar ? o.metavar : "");
		char line[2048];
		int at = snprintf(line, sizeof(line), "  %-28s %s", left, o.help);
		if (o.metavar && o.default_value && at > 0 && at < (int)sizeof(line))
			snprintf(line + at, sizeof(line) - (size_t)at, " (default %s)", o.default_value);
		put_wrapped(f, line, 31);  /* continued under the help's first word */
	}
	/* the front end's rule for the file it writes, as atsdbench's --force: not a plan option */
	fprintf(f, "  %-28s %s\n", "    --force", "replace -o FILE where it exists (else an existing one is refused)");
}

/* getopt_long's table, built from the option table: the option's index is its value. */
static const char *parse(struct atsd_plan *p, int argc, char **argv, int *breakdown, int *force)
{
	struct option opts[64];
	struct atsd_option o;
	const char *output = NULL;
	char msg[512];
	int i, n = 0, c, idx;

	atsd_plan_init(p);
	for (i = 0; atsd_option_get(i, &o) == 0 && n < 61; i++) {
		if (!(o.fronts & ATSD_FRONT_ATSD))
			continue;
		opts[n++] = (struct option){o.name, o.metavar ? (o.const_value ? optional_argument : required_argument)
					    : no_argument, NULL, 1000 + i};
	}
	opts[n++] = (struct option){"help", no_argument, NULL, 'h'};
	opts[n++] = (struct option){"force", no_argument, NULL, 'f'};
	opts[n] = (struct option){NULL, 0, NULL, 0};
	opterr = 0;  /* its own line names argv[0], a path of any length: ours names the option */
	while ((c = getopt_long(argc, argv, ":o:h", opts, &idx)) != -1) {
		if (c == '?' || c == ':') {
			/* a short option's letter, else (a long one) the word itself */
			char letter[3] = {'-', (char)optopt, 0};
			const char *word = optopt > ' ' && optopt < 127 ? letter : argv[optind - 1];
			die("%s %.*s (atsd --help lists the options)", c == ':' ? "no value for" : "no option",
			    (int)(strcspn(word, "=") < 40 ? strcspn(word, "=") : 40), word);
		}
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == 'o') {
			output = optarg;
			continue;
		}
		if (c == 'f') {
			*force = 1;
			continue;
		}
		if (c < 1000 || atsd_option_get(c - 1000, &o)) {
			usage(stderr);
			exit(2);
		}
		if (!o.field) {  /* the front end's own: --breakdown and the output */
			if (!strcmp(o.name, "breakdown"))
				*breakdown = 1;
			else
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
	if (*breakdown && !output)
		die("--breakdown needs -o FILE: its traces go there; atsdbench import FILE cuts them into stages");
	return output;  /* NULL: no file, the table only */
}

/* The loud line of every cell and stride whose verify passes read a stale translation (on stderr,
 * after the output is saved); 1 where there was one. */
static int print_stale(FILE *f, const struct atsd_plan *p, struct summary *t)
{
	int cell, s, j, any = 0;

	for (cell = 0; cell < atsd_plan_cells(p); cell++) {
		struct atsd_cell c;
		atsd_plan_cell(p, cell, &c);
		for (s = 0; s < p->nstrides; s++) {
			struct stride_stats *st = summary_at(t, p, cell, p->strides[s]);
			const int32_t *inv = c.threads > 1 ? p->thread_cpus : &p->cpu;
			int32_t ninv = c.threads > 1 ? c.threads : 1, chk[ATSD_MAX_CPUS];
			char line[256 + 2 * 12 * ATSD_MAX_CPUS];  /* both CPU lists whole */
			if (st->device_stale) {
				fprintf(f, "%s\n", atsd_verify_device_stale_text(st->device_stale, st->device_checks,
										  st->verify_op, p->strides[s], line, sizeof(line)));
				any = 1;
			}
			if (!st->verify_stale)
				continue;
			j = atsd_verify_checkers(p->verify_cpus, p->nverify_cpus, inv, ninv, chk);
			/* the verify passes' op (a workload's: madvise, its loop's call), not the cell's --op */
			fprintf(f, "%s\n", atsd_verify_stale_text(st->verify_stale, st->verify_checks, st->verify_op, p->strides[s],
									inv, ninv, chk, j, line, sizeof(line)));
			any = 1;
		}
	}
	return any;
}

static int readback_said;  /* a sub-run said its read-back: the parent says nothing more */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps until t (now_s's clock) between rounds or sub-runs, never inside one.  The signals are
 * held but for the wait itself (ppoll), so one that comes just before it ends it too. */
static void sleep_until(double t)
{
	sigset_t old;
	double left;

	atsd_hold_signals(&old);
	while (!interrupted && (left = t - now_s()) > 0) {
		struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
		ppoll(NULL, 0, &ts, &old);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The rounds of sub-run `run` (0 without --runs): its own warm-up rounds first, numbered after the
 * previous sub-run's as atsdbench run numbers them (plan.round_kinds), so every round of the file
 * has its own stride and cell order; bystanders started for each cell that needs another count. */
static int run_rounds(FILE *out, const struct atsd_plan *p, int32_t run, struct counting *k, struct summary *t)
{
	struct atsd_bystanders *b = NULL;
	struct atsd_canary *canary = NULL;
	int32_t per_run = p->warmup_rounds + p->rounds, i, j, cells[256], ncells, nrunning = -1;
	int err;
	double first = 0;

	if ((err = atsd_device_prime(p)) < 0) {
		fprintf(stderr, "atsd: opening %s: %s\n", atsd_device_path(), strerror(-err));
		return err;
	}
	/* the host-drift canary, timed before every round as atsdbench run times it: round 0's too with
	 * the plan's first cell's bystanders running (Session starts them on entry) */
	if ((err = atsd_canary_new(&canary, ATSD_CANARY_BYTES, p->seed))) {
		fprintf(stderr, "atsd: building the canary's buffer: %s\n", strerror(-err));
		return err;
	}
	{
		struct atsd_cell c0;
		atsd_plan_cell(p, 0, &c0);
		nrunning = c0.bystanders;
		if ((err = atsd_bystanders_start(&b, p->bystander_cpus, c0.bystanders))) {
			fprintf(stderr, "atsd: starting %d bystanders: %s\n", c0.bystanders, strerror(-err));
			atsd_canary_free(&canary);
			return err;
		}
	}
	for (i = 0; i < per_run && !interrupted && !err; i++) {
		uint64_t timed[2];
		int32_t round = run * per_run + i, r = i - p->warmup_rounds;  /* measured round r, paced over --spread */
		if (r == 0)
			first = now_s();
		else if (r > 0)
			sleep_until(atsd_round_start(first, r, p->spread, p->rounds));
		if (interrupted)
			break;
		atsd_canary_run(canary, ATSD_CANARY_COMPUTE, ATSD_CANARY_CHASE, &timed[0], &timed[1]);
		if ((ncells = atsd_cell_order(p, round, cells, 256)) < 0) {  /* never zero cells: a round measures */
			fprintf(stderr, "atsd: ordering the cells: %s\n", strerror(-ncells));
			err = ncells;
			break;
		}
		for (j = 0; j < ncells && !interrupted && !err; j++) {
			struct atsd_cell c;
			atsd_plan_cell(p, ncells > 1 ? cells[j] : 0, &c);
			if (!b || nrunning != c.bystanders) {  /* between cells, never inside a pass */
				atsd_bystanders_stop(&b, NULL);
				nrunning = c.bystanders;
				if ((err = atsd_bystanders_start(&b, p->bystander_cpus, c.bystanders))) {
					fprintf(stderr, "atsd: starting %d bystanders: %s\n", c.bystanders, strerror(-err));
					break;
				}
			}
			err = run_cell(out, p, run, round, r < 0, ncells > 1 ? cells[j] : 0, &c,
				       j * (p->warmup + p->reps) * p->nstrides, timed, k, t, &b);
		}
	}
	atsd_bystanders_stop(&b, NULL);
	atsd_canary_free(&canary);
	return err;
}

/* Sub-run `run` of --runs in a fresh process: its own address space, region, bystanders and
 * counters, pinned there.  Its sample lines come back through a pipe as its passes finish and go
 * to out; its numbers for the table go to t, which is shared memory.  0 (also when it was
 * interrupted: then `interrupted` is set), or -errno when it failed, having said why on stderr. */
static int run_forked(FILE *out, const struct atsd_plan *p, int32_t run, struct counting *k, struct summary *t)
{
	sigset_t old;
	int fds[2], status, err;
	pid_t pid;
	FILE *in;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (pipe(fds)) {
		err = -errno;
		fprintf(stderr, "atsd: pipe for sub-run %d: %s\n", run, strerror(-err));
		return err;
	}
	fflush(NULL);
	/* Held over the fork, so none is handled between the fork and `child` being set: one that
	 * comes meanwhile stays pending in the parent and is passed on when released below. */
	atsd_hold_signals(&old);
	if (interrupted) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(fds[0]);
		close(fds[1]);
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		FILE *to;
		child = 0;
		close(fds[0]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (!(to = fdopen(fds[1], "w"))) {
			fprintf(stderr, "atsd: sub-run %d's output: %s\n", run, strerror(errno));
			_exit(2);
		}
		if ((err = atsd_pin_self(p->cpu)))
			fprintf(stderr, "atsd: pinning to CPU %d: %s\n", p->cpu, strerror(-err));
		else
			err = run_rounds(to, p, run, k, t);
		if (fclose(to) && !err)
			err = -errno;  /* the parent is gone: nothing it would keep */
		if (err == -EBADMSG)
			say_readback();  /* the parent, seeing exit 3, says nothing more */
		/* a read-back before an interruption, as main orders them: a signal during the failing pass
		 * must not turn its exit 3 into 130 */
		_exit(err == -EBADMSG ? 3 : interrupted ? 130 : err ? 2 : 0);
	}
	err = pid < 0 ? -errno : 0;
	child = pid > 0 ? pid : 0;
	sigprocmask(SIG_SETMASK, &old, NULL);  /* a signal held since the fork is passed on now */
	close(fds[1]);
	if (err) {
		close(fds[0]);
		fprintf(stderr, "atsd: starting sub-run %d: %s\n", run, strerror(-err));
		return err;
	}
	in = fdopen(fds[0], "r");
	if (!in) {
		close(fds[0]);  /* the child then stops at its first sample (EPIPE) */
		err = -errno;
	}
	while (in && (n = getline(&line, &cap, in)) > 0)
		if (line[n - 1] == '\n')  /* a line cut off by the child's death is no sample */
			fputs(line, out);
	free(line);
	if (in)
		fclose(in);
	child = 0;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return err ? err : -errno;
	if (err)
		fprintf(stderr, "atsd: reading sub-run %d: %s\n", run, strerror(-err));
	else if (WIFSIGNALED(status)) {
		fprintf(stderr, "atsd: sub-run %d was killed by signal %d (%s)\n", run, WTERMSIG(status),
			strsignal(WTERMSIG(status)));
		err = -ECHILD;
	} else if (WEXITSTATUS(status) == 3) {
		readback_said = 1;
		err = -EBADMSG;  /* a workload's read-back: the run stops, exit 3 */
	} else if (WEXITSTATUS(status) == 130) {
		interrupted = 1;  /* a signal sent to the sub-run alone stops the run too */
	} else if (WEXITSTATUS(status)) {
		err = -ECHILD;  /* it said why */
	}
	return err;
}

int main(int argc, char **argv)
{
	struct atsd_plan p;
	struct atsd_host h;
	struct output o = {NULL, NULL, 0, NULL, 0};
	struct sigaction sa;
	static struct counting k;
	struct summary t = {0, 0, 0, NULL, 0};
	char msg[512];
	int32_t run;
	int err = 0;
	double t0 = 0.0;  /* the last sub-run's start */
	char *stale_text = NULL;
	size_t stale_len = 0;
	FILE *stale_f;
	int stale, breakdown = 0, breakdown_done = 0, complete, code = 0;
	static struct atsd_breakdown_probe bd;

#ifdef ATSD_TEST_DOUBLES
	/* A test build only (tests/cli/test_workload.py: make CFLAGS=-DATSD_TEST_DOUBLES): no atsd a user
	 * builds has this, so no command line reaches the double. */
	if (getenv("ATSD_TEST_SKIP_MADVISE"))
		atsd_test_skip_madvise(atoi(getenv("ATSD_TEST_SKIP_MADVISE")));
	if (getenv("ATSD_TEST_INTERRUPTS")) {  /* the TLB row's sum of an /proc/interrupts fixture */
		printf("%" PRId64 "\n", tlb_ipis_of(getenv("ATSD_TEST_INTERRUPTS")));
		return 0;
	}
#endif
	/* before anything is made that a signal's default action would leave behind (kprobe events,
	 * the tracefs instance): a signal from here on ends the run through its cleanup */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;  /* the parent's read of a sub-run's pipe goes on to its end */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	o.path = parse(&p, argc, argv, &breakdown, &o.force);
	if ((err = atsd_host_probe(&h)))
		die("reading the host's facts: %s", strerror(-err));
	if (atsd_plan_check(&p, &h, msg, sizeof(msg)))
		die("%s", msg);
	if (p.nworkloads && atsd_no_aslr(0) == 0 && atsd_no_aslr(1) >= 0) {
		/* ASLR off as will-it-scale's runtest.py runs its binaries (setarch -R): a process's layout
		 * is chosen when it is executed, so atsd executes itself again with the flag set.  Where
		 * that fails it runs as it is, and its config says aslr=on. */
		execv("/proc/self/exe", argv);
		atsd_no_aslr(-1);
	}
	probes_owner = getpid();  /* after the exec above: what this process makes, it removes */
	probes_counting = &k;
	if (breakdown)  /* exit 2 before anything is measured where it cannot run */
		breakdown_probe(&p, &bd);
	if (o.path)
		output_open(&o, o.path);  /* before measuring: an unwritable output loses nothing */
	else if (!(o.mem = open_memstream(&o.buf, &o.len)))
		die("open_memstream: %s", strerror(errno));
	if (summary_init(&t, &p))
		die("out of memory");
	counting_probe(&k, &h);
	for (int32_t d = 0; d < p.ndevices; d++)
		if (p.devices[d] == ATSD_DEVICE_HMM && !k.nkprobes && !k.device_error[0])
			counting_device(&k);
#ifdef ATSD_TEST_DOUBLES
	/* the ways out after the probes are made, forced: a signal, a die(), a failed pin */
	if (getenv("ATSD_TEST_FAULT") && !strcmp(getenv("ATSD_TEST_FAULT"), "sigterm"))
		raise(SIGTERM);
	if (getenv("ATSD_TEST_FAULT") && !strcmp(getenv("ATSD_TEST_FAULT"), "die"))
		die("a test fault after the probes");
#endif
	fprintf(o.mem, "atsd-output %d\n", breakdown ? 2 : 1);  /* 1: what an older atsdbench imports */
	write_host(o.mem);
	write_config(o.mem, &p, &k, breakdown ? &bd : NULL);
	if (p.runs > 1) {
		/* each sub-run starts at least gap after the one before started (the core's schedule) */
		for (run = 0; run < p.runs && !interrupted && !err; run++) {
			sleep_until(atsd_sub_run_start(run == 0, t0, p.gap, now_s()));
			t0 = now_s();
			if (!interrupted)
				err = run_forked(o.mem, &p, run, &k, &t);
		}
	} else {
		err = atsd_pin_self(p.cpu);
#ifdef ATSD_TEST_DOUBLES
		if (getenv("ATSD_TEST_FAULT") && !strcmp(getenv("ATSD_TEST_FAULT"), "pin"))
			err = -EPERM;
#endif
		if (err) {
			fprintf(stderr, "atsd: pinning to CPU %d: %s\n", p.cpu, strerror(-err));
			fprintf(o.mem, "end\tcomplete=0\n");
			if (o.path)
				output_close(&o);
			remove_probes();
			return 2;
		}
		err = run_rounds(o.mem, &p, 0, &k, &t);
	}
	/* after the measured passes, never during them; a stopped run takes none */
	complete = !err && !interrupted;
	if (breakdown && complete)
		breakdown_done = !breakdown_run(o.mem, &p, &bd) && !interrupted;
	fprintf(o.mem, "end\tcomplete=%d", complete);
	if (breakdown)
		fprintf(o.mem, "\tbreakdown_complete=%d", breakdown_done);
	fputc('\n', o.mem);
	print_summary(stdout, &p, &t, &k);
	remove_probes();
	/* the loud lines are printed after the save; the summary they come from is freed here */
	if (!(stale_f = open_memstream(&stale_text, &stale_len)))
		die("open_memstream: %s", strerror(errno));
	stale = print_stale(stale_f, &p, &t);
	fclose(stale_f);
	summary_free(&t);
	fflush(stdout);
	if (o.path) {
		if (output_close(&o))
			code = 2;  /* it said so, and put the output on stdout */
	} else {
		fclose(o.mem);
		free(o.buf);
	}
	if (err == -EBADMSG) {  /* a workload's read-back: one line, never a rate */
		if (!readback_said)
			say_readback();
		code = code ? code : 3;
	} else if (code) {
		/* the output could not be written: nothing more to say of it */
	} else if (err) {
		if (o.path)
			fprintf(stderr, "atsd: wrote the finished samples to %s\n", o.path);
		code = 2;
	} else if (interrupted) {
		if (o.path)
			fprintf(stderr, "atsd: interrupted; wrote the finished samples to %s\n", o.path);
		else
			fprintf(stderr, "atsd: interrupted\n");
		code = 130;
	} else {
		/* the path whole beside "wrote", what follows under it where both do not fit (as
		 * atsdbench's _cli.wrote) */
		if (o.path)
			printf("wrote %s%s(atsdbench import %s)\n", o.path,
			       2 * strlen(o.path) + strlen("wrote  (atsdbench import )") > 100 ? "\n  " : " ", o.path);
		code = 0;
	}
	/* a stale read outweighs whatever else ended the run (an error, an interruption, an unwritable
	 * output, each said above): the finding is the status, as atsdbench run's */
	if (stale)
		code = 3;
	/* whatever else ended the run (a read-back, an unwritable output): a stale read is never left
	 * unsaid, as atsdbench run prints its lines in a finally */
	fflush(stdout);
	fputs(stale_text, stderr);
	free(stale_text);
	return code;
}
