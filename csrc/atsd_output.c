/*
 * atsd_output.c - the file atsd writes for `atsdbench import`: "atsd-output 1", then "host",
 * "config", "sample" (and "verify") lines and one "end" line; each line is a keyword and
 * tab-separated key=value fields.  With --breakdown "atsd-output 2": the config's breakdown_*
 * fields, and after the samples per traced pass a "breakdown" line followed by its raw trace lines,
 * each a "trace" record (the rest of the line, as tracefs printed it).
 */
#define _GNU_SOURCE
#include "atsd_main.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

const char *const page_names[3] = {"base", "thp", "hugetlb"};

static void clean(char *s)
{
	for (; *s; s++)
		if (*s == '\t' || *s == '\n')
			*s = ' ';
}

void read_line_of(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	snprintf(buf, len, "unknown");
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}

void cpuinfo_field(const char *key, char *buf, size_t len)
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

void write_host(FILE *out)
{
	struct utsname u;
	char model[256], mmu[64], online[256], thp[128], boot[64];

	uname(&u);
	cpuinfo_field("model name", model, sizeof(model));
	if (!strcmp(model, "unknown"))
		cpuinfo_field("cpu", model, sizeof(model));
	cpuinfo_field("MMU", mmu, sizeof(mmu));
	read_line_of("/sys/devices/system/cpu/online", online, sizeof(online));
	read_line_of("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp));
	read_line_of("/proc/sys/kernel/random/boot_id", boot, sizeof(boot));  /* replicate files' boot level */
	clean(u.version);
	clean(model);
	clean(boot);
	fprintf(out, "host\thostname=%s\tarch=%s\tkernel_release=%s\tkernel_version=%s\tcpu_model=%s\tmmu=%s"
		"\tonline_cpus=%s\tpage_size=%" PRId64 "\thugepage_size=%" PRId64 "\tthp_enabled=%s\tboot_id=%s\n",
		u.nodename, u.machine, u.release, u.version, model, mmu, online, atsd_page_size(),
		atsd_hugepage_size(), thp, boot);
}

void write_config(FILE *out, const struct atsd_plan *p, const struct counting *k,
		  const struct atsd_breakdown_probe *bd)
{
	int i;

	fprintf(out, "config\tsize=%" PRIu64 "\tstrides=", p->size);
	for (i = 0; i < p->nstrides; i++)
		fprintf(out, "%s%" PRIu64, i ? "," : "", p->strides[i]);
	fprintf(out, "\trounds=%d\treps=%d\twarmup=%d\twarmup_rounds=%d\tpages=", p->rounds, p->reps, p->warmup,
		p->warmup_rounds);
	for (i = 0; i < p->npages; i++)  /* a list: an axis */
		fprintf(out, "%s%s", i ? "," : "", page_names[p->pages[i]]);
	fputs("\top=", out);
	for (i = 0; i < p->nops; i++)
		fprintf(out, "%s%s", i ? "," : "", atsd_op_name(p->ops[i]));
	fputs("\tthreads=", out);
	for (i = 0; i < p->nthreads; i++)
		fprintf(out, "%s%d", i ? "," : "", p->threads[i]);
	if (p->nworkloads) {
		fputs("\tworkload=", out);
		for (i = 0; i < p->nworkloads; i++)
			fprintf(out, "%s%s", i ? "," : "", atsd_workload_name(p->workloads[i]));
		fprintf(out, "\taslr=%s", atsd_aslr_state());
	}
	if (p->ndevices > 1 || p->devices[0] != ATSD_DEVICE_NONE) {  /* --device: a list is an axis */
		fputs("\tdevice=", out);
		for (i = 0; i < p->ndevices; i++)
			fprintf(out, "%s%s", i ? "," : "", atsd_device_name(p->devices[i]));
	}
	fprintf(out, "\ttasks=%s\tthread_cpus=", p->tasks ? "processes" : "threads");
	for (i = 0; i < p->nthread_cpus; i++)
		fprintf(out, "%s%d", i ? "," : "", p->thread_cpus[i]);
	if (p->verify) {  /* --verify: its passes are `verify` records */
		fprintf(out, "\tverify=1\tverify_cpus=");
		for (i = 0; i < p->nverify_cpus; i++)
			fprintf(out, "%s%d", i ? "," : "", p->verify_cpus[i]);
	}
	fputs("\tbystanders=", out);
	for (i = 0; i < p->nbystanders; i++)
		fprintf(out, "%s%d", i ? "," : "", p->bystanders[i]);
	fprintf(out, "\tcpu=%d\tcpu_reason=%s\tbystander_cpus=", p->cpu, p->cpu_reason);
	for (i = 0; i < p->nbystander_cpus; i++)
		fprintf(out, "%s%d", i ? "," : "", p->bystander_cpus[i]);
	fprintf(out, "\tlatency=%d\tretouch=%d\tseed=%" PRIu64 "\tspread=%g\truns=%d\tgap=%g", p->latency,
		p->retouch, p->seed, p->spread, p->runs, p->gap);
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
	if (k->device_error[0]) {
		char error[sizeof(k->device_error)];
		memcpy(error, k->device_error, sizeof(error));
		clean(error);
		fprintf(out, "\tdevice_count_error=%s", error);
	}
	if (bd)
		write_breakdown_config(out, bd);
	fputc('\n', out);
}

/* The output is built in memory and written once at the end: two atsd writing one path cannot
 * interleave (a regular file is replaced by rename), and when writing fails the finished samples
 * go to stdout instead of being lost. */
static int regular_or_absent(const char *path)
{
	struct stat st;

	return lstat(path, &st) ? errno == ENOENT : S_ISREG(st.st_mode);
}

/* The same checks, in the same words, as atsdbench's outfile.check_writable, except that a
 * character device or FIFO (a console, a pipe in an initramfs) is written through, not refused. */
void output_open(struct output *o, const char *path)
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
	} else if (!o->force && !lstat(path, &st)) {
		die("output %s exists: --force replaces it", path);  /* atsdbench's rule (data/files.py) */
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
int output_close(struct output *o)
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
	if (!err && regular && !o->force) {
		/* the name taken with O_EXCL (a file made there during the run is never replaced), then
		 * the whole output renamed over that empty file of ours: no reader sees a part of it */
		int mine = open(o->path, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0644);
		if (mine < 0)
			err = -errno;
		else
			close(mine);
		if (!err && rename(tmp, o->path)) {
			err = -errno;
			unlink(o->path);
		}
	} else if (!err && regular && rename(tmp, o->path)) {
		err = -errno;
	}
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

/* Sorts lat: the latency percentiles of one pass's calls (the core's rule, atsdbench's too). */
