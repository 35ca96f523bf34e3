/*
 * Host and rank telemetry (agent/telemetry.h). A sample costs a handful
 * of reads of small /proc files, plus one /proc/<pid>/stat per process
 * and one schedstat per thread while a job runs here (its ranks are found
 * by their session: each rank leads its own, and its children stay in
 * it), and an NVML query per GPU.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/assignment.h"
#include "agent/telemetry.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* The biggest /proc file read whole (/proc/stat on a large host). */
#define READ_MAX (1u << 20)

/* ---- parsers ---- */

static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');

	return nl ? nl + 1 : p + strlen(p);
}

int agent_tm_parse_stat(const char *text, struct agent_cpu_times *t, int *cpus)
{
	unsigned long long v[10];
	const char *p;
	int found = 0, n, i;

	memset(t, 0, sizeof(*t));
	*cpus = 0;
	for (p = text; *p; p = next_line(p)) {
		if (!strncmp(p, "cpu ", 4)) {
			memset(v, 0, sizeof(v));
			n = sscanf(p + 4,
				   "%llu %llu %llu %llu %llu %llu %llu %llu "
				   "%llu %llu",
				   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
				   &v[6], &v[7], &v[8], &v[9]);
			if (n < 4)
				return ERR_INVALID;
			/* guest and guest_nice (8, 9) are already counted in
			 * user and nice. */
			for (i = 0; i < 8 && i < n; i++)
				t->total += v[i];
			t->idle = v[3] + (n > 4 ? v[4] : 0);
			found = 1;
		} else if (!strncmp(p, "cpu", 3) &&
			   isdigit((unsigned char)p[3])) {
			(*cpus)++;
		}
	}
	return found ? 0 : ERR_INVALID;
}

int agent_tm_parse_meminfo(const char *text, int64_t *total, int64_t *available)
{
	unsigned long long kb;
	const char *p;
	int have = 0;

	*total = 0;
	*available = 0;
	for (p = text; *p; p = next_line(p)) {
		if (sscanf(p, "MemTotal: %llu kB", &kb) == 1) {
			*total = (int64_t)kb * 1024;
			have |= 1;
		} else if (sscanf(p, "MemAvailable: %llu kB", &kb) == 1) {
			*available = (int64_t)kb * 1024;
			have |= 2;
		}
	}
	return have == 3 ? 0 : ERR_INVALID;
}

int agent_tm_parse_diskstats(const char *text,
			     int (*is_disk)(const char *name, void *arg),
			     void *arg, int64_t *read, int64_t *write)
{
	unsigned long long rd_sec, wr_sec, x;
	unsigned maj, min;
	char name[64];
	const char *p;

	*read = 0;
	*write = 0;
	for (p = text; *p; p = next_line(p)) {
		/* major minor name reads merged sectors ms writes merged
		 * sectors ... */
		if (sscanf(p, "%u %u %63s %llu %llu %llu %llu %llu %llu %llu",
			   &maj, &min, name, &x, &x, &rd_sec, &x, &x, &x,
			   &wr_sec) != 10)
			continue;
		if (is_disk && !is_disk(name, arg))
			continue;
		*read += (int64_t)rd_sec * 512;
		*write += (int64_t)wr_sec * 512;
	}
	return 0;
}

int agent_tm_parse_net_dev(const char *text, int64_t *rx, int64_t *tx)
{
	unsigned long long r, t, x;
	const char *p, *colon;
	char name[64];
	size_t len;

	*rx = 0;
	*tx = 0;
	for (p = text; *p; p = next_line(p)) {
		/* "  eth0: rxbytes packets errs drop fifo frame compressed
		 * multicast txbytes ..."; the two header lines have no
		 * colon before their first '|'. */
		colon = strchr(p, ':');
		if (!colon || colon > next_line(p))
			continue;
		while (*p == ' ')
			p++;
		len = (size_t)(colon - p);
		if (!len || len >= sizeof(name))
			continue;
		memcpy(name, p, len);
		name[len] = '\0';
		if (sscanf(colon + 1,
			   "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &r,
			   &x, &x, &x, &x, &x, &x, &x, &t) != 9)
			continue;
		if (!strcmp(name, "lo"))
			continue;
		*rx += (int64_t)r;
		*tx += (int64_t)t;
	}
	return 0;
}

int agent_tm_parse_pid_stat(const char *text, struct agent_pid_stat *st)
{
	unsigned long long utime, stime, x;
	long long cutime, cstime, rss, lx;
	int pid, ppid, pgrp, session;
	const char *close = strrchr(text, ')');
	char state;

	memset(st, 0, sizeof(*st));
	if (sscanf(text, "%d", &pid) != 1 || !close)
		return ERR_INVALID;
	/* After "pid (comm)": state ppid pgrp session tty_nr tpgid flags
	 * minflt cminflt majflt cmajflt utime stime cutime cstime priority
	 * nice num_threads itrealvalue starttime vsize rss */
	if (sscanf(close + 1,
		   " %c %d %d %d %lld %lld %llu %llu %llu %llu %llu %llu %llu "
		   "%lld %lld %lld %lld %lld %lld %llu %llu %lld",
		   &state, &ppid, &pgrp, &session, &lx, &lx, &x, &x, &x, &x, &x,
		   &utime, &stime, &cutime, &cstime, &lx, &lx, &lx, &lx, &x, &x,
		   &rss) != 22)
		return ERR_INVALID;
	st->pid = pid;
	st->pgrp = pgrp;
	st->session = session;
	st->ticks = utime + stime + (uint64_t)(cutime > 0 ? cutime : 0) +
		    (uint64_t)(cstime > 0 ? cstime : 0);
	st->rss_pages = rss > 0 ? rss : 0;
	return 0;
}

int agent_tm_parse_schedstat(const char *text, int64_t *run_ns,
			     int64_t *wait_ns)
{
	unsigned long long run, wait;

	*run_ns = 0;
	*wait_ns = 0;
	if (!isdigit((unsigned char)*text) ||
	    sscanf(text, "%llu %llu", &run, &wait) != 2 || run > (1ULL << 62) ||
	    wait > (1ULL << 62))
		return ERR_INVALID;
	*run_ns = (int64_t)run;
	*wait_ns = (int64_t)wait;
	return 0;
}

int agent_tm_parse_cgroup_max(const char *text, int64_t *out)
{
	unsigned long long v;
	char *end;

	*out = -1;
	if (!strncmp(text, "max", 3))
		return 0;
	if (!isdigit((unsigned char)*text))
		return ERR_INVALID;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || (*end && *end != '\n') || v > (1ULL << 60))
		return ERR_INVALID;
	*out = (int64_t)v;
	return 0;
}

int agent_tm_parse_cgroup_path(const char *text, struct buf *out)
{
	const char *p, *end;

	for (p = text; *p; p = next_line(p)) {
		if (strncmp(p, "0::", 3))
			continue;
		p += 3;
		end = strchr(p, '\n');
		buf_reset(out);
		(void)buf_add(out, p, end ? (size_t)(end - p) : strlen(p));
		return 0;
	}
	return ERR_NOTFOUND;
}

/* ---- reading files ---- */

/* Reads a small file whole into out (reset first). 0 or ERR_IO. */
static int slurp(const char *path, struct buf *out)
{
	char chunk[4096];
	ssize_t n;
	int fd, ret = 0;

	buf_reset(out);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ERR_IO;
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? ERR_IO : 0;
			break;
		}
		if (out->len + (size_t)n > READ_MAX ||
		    buf_add(out, chunk, (size_t)n)) {
			ret = ERR_IO;
			break;
		}
	}
	close(fd);
	return ret;
}

static int slurpf(struct buf *out, struct buf *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int slurpf(struct buf *out, struct buf *path, const char *fmt, ...)
{
	va_list ap;
	int ret;

	buf_reset(path);
	va_start(ap, fmt);
	ret = buf_vaddf(path, fmt, ap);
	va_end(ap);
	return ret ? ERR_IO : slurp(path->data, out);
}

/* A whole disk: listed in /sys/block and not a stacked or virtual one
 * (loop, ram, zram, device mapper, md), whose I/O a disk below counts. */
static int is_disk(const char *name, void *arg)
{
	const struct agent_telemetry *t = arg;
	static const char *const skip[] = { "loop", "ram", "zram",
					    "dm-",  "md",  "nbd" };
	char path[512];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(skip); i++)
		if (!strncmp(name, skip[i], strlen(skip[i])))
			return 0;
	(void)snprintf(path, sizeof(path), "%s/block/%s", t->sys, name);
	return access(path, F_OK) == 0;
}

/* ---- the sampler ---- */

void agent_telemetry_init(struct agent_ctx *ctx)
{
	struct agent_telemetry *t = &ctx->tm;
	struct buf text = BUF_INIT, cg = BUF_INIT;
	int64_t max = -1;

	t->interval_ms = ctx->cfg.telemetry_ms;
	t->proc = xstrdup("/proc");
	t->sys = xstrdup("/sys");
	t->fs_path = xstrdup(ctx->cfg.work_dir ? ctx->cfg.work_dir : "/");
	t->clk_tck = sysconf(_SC_CLK_TCK);
	if (t->clk_tck <= 0)
		t->clk_tck = 100;
	t->page_size = sysconf(_SC_PAGESIZE);
	if (t->page_size <= 0)
		t->page_size = 4096;
	/* The memory limit of the agent's cgroup (a container, a systemd
	 * slice) is what its jobs may use; the host's total otherwise. */
	if (!slurp("/proc/self/cgroup", &text) &&
	    !agent_tm_parse_cgroup_path(text.data, &cg)) {
		struct buf path = BUF_INIT;

		(void)buf_addf(&path, "/sys/fs/cgroup%s/memory.max",
			       strcmp(cg.data, "/") ? cg.data : "");
		if (!slurp(path.data, &text) &&
		    !agent_tm_parse_cgroup_max(text.data, &max))
			t->memory_max = buf_detach(&path, NULL);
		buf_release(&path);
	}
	buf_release(&text);
	buf_release(&cg);
}

void agent_telemetry_release(struct agent_ctx *ctx)
{
	struct agent_telemetry *t = &ctx->tm;
	size_t i;

	for (i = 0; i < t->n; i++)
		tm_host_sample_release(&t->queue[i]);
	if (t->nvml)
		agent_nvml_close(t->nvml);
	free(t->proc);
	free(t->sys);
	free(t->fs_path);
	free(t->memory_max);
	memset(t, 0, sizeof(*t));
}

/* The assignments whose ranks run, and the ticks of their trees. */
struct tree {
	struct agent_assign *a;
	uint64_t ticks;
	int64_t rss_pages;
	int procs;
	int64_t run_ns, wait_ns;
	int64_t *rank_ns; /* run + wait per rank */
};

/* The index of the rank of a whose tree holds s, or -1. */
static int in_tree(const struct agent_assign *a, const struct agent_pid_stat *s)
{
	size_t i;

	for (i = 0; i < a->n_ranks; i++) {
		pid_t p = a->ranks[i].proc.pid;

		if (p > 0 && (s->session == p || s->pgrp == p || s->pid == p))
			return (int)i;
	}
	return -1;
}

/*
 * Adds the scheduler's figures of every thread of pid (its
 * task/<tid>/schedstat) to tree's, and to its rank's.
 */
static void add_sched(struct agent_telemetry *t, const char *pid,
		      struct tree *tree, int rank)
{
	struct buf text = BUF_INIT, path = BUF_INIT;
	int64_t run, wait;
	struct dirent *de;
	DIR *d;

	(void)buf_addf(&path, "%s/%s/task", t->proc, pid);
	d = opendir(path.data);
	while (d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]) ||
		    slurpf(&text, &path, "%s/%s/task/%s/schedstat", t->proc,
			   pid, de->d_name) ||
		    agent_tm_parse_schedstat(text.data, &run, &wait))
			continue; /* it ended meanwhile */
		tree->run_ns += run;
		tree->wait_ns += wait;
		tree->rank_ns[rank] += run + wait;
	}
	if (d)
		closedir(d);
	buf_release(&text);
	buf_release(&path);
}

/* The rank of tree that ran and waited the most (-1: none). */
static int top_rank(const struct tree *tree)
{
	size_t i;
	int top = -1;

	for (i = 0; i < tree->a->n_ranks; i++)
		if (tree->rank_ns[i] > 0 &&
		    (top < 0 || tree->rank_ns[i] > tree->rank_ns[top]))
			top = (int)i;
	return top;
}

static int running(const struct agent_assign *a)
{
	size_t i;

	if (a->phase != API_PHASE_RUNNING)
		return 0;
	for (i = 0; i < a->n_ranks; i++)
		if (a->ranks[i].proc.pid > 0 && !a->ranks[i].proc.exited)
			return 1;
	return 0;
}

static void sample_ranks(struct agent_ctx *ctx, int64_t now,
			 struct tm_host_sample *s)
{
	struct agent_telemetry *t = &ctx->tm;
	struct buf text = BUF_INIT, path = BUF_INIT;
	struct agent_pid_stat st;
	struct tree *trees;
	struct agent_assign *a;
	struct dirent *de;
	size_t n = 0, i;
	DIR *d;

	for (a = ctx->assigns; a; a = a->next)
		n += running(a);
	if (!n)
		return;
	trees = xcalloc(n, sizeof(*trees));
	n = 0;
	for (a = ctx->assigns; a; a = a->next)
		if (running(a)) {
			trees[n].rank_ns =
				xcalloc(a->n_ranks + 1, sizeof(int64_t));
			trees[n++].a = a;
		}
	d = opendir(t->proc);
	while (d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (slurpf(&text, &path, "%s/%s/stat", t->proc, de->d_name) ||
		    agent_tm_parse_pid_stat(text.data, &st))
			continue; /* it ended meanwhile */
		for (i = 0; i < n; i++) {
			int rank = in_tree(trees[i].a, &st);

			if (rank < 0)
				continue;
			trees[i].ticks += st.ticks;
			trees[i].rss_pages += st.rss_pages;
			trees[i].procs++;
			add_sched(t, de->d_name, &trees[i], rank);
			break;
		}
	}
	if (d)
		closedir(d);
	s->ranks = xcalloc(n + 1, sizeof(*s->ranks));
	for (i = 0; i < n && s->n_ranks < API_TELEMETRY_MAX_RANKS; i++) {
		struct tm_rank_sample *r = &s->ranks[s->n_ranks++];
		struct agent_tm_prev *p = &trees[i].a->tm_prev;

		a = trees[i].a;
		r->job = xstrdup(a->job);
		r->job_uid = a->job_uid ? xstrdup(a->job_uid) : NULL;
		r->attempt = a->attempt;
		r->algo = xstrdup(a->algo);
		r->rss_bytes = trees[i].rss_pages * t->page_size;
		r->procs = trees[i].procs;
		r->run_ns = trees[i].run_ns;
		r->wait_ns = trees[i].wait_ns;
		r->top_rank = top_rank(&trees[i]);
		/* A process that ended took its ticks along: never below
		 * zero. */
		if (p->mono_ms && now > p->mono_ms && trees[i].ticks > p->ticks)
			r->cpu_percent = (double)(trees[i].ticks - p->ticks) *
					 100000.0 / (double)t->clk_tck /
					 (double)(now - p->mono_ms);
		p->ticks = trees[i].ticks;
		p->mono_ms = now;
	}
	for (i = 0; i < n; i++)
		free(trees[i].rank_ns);
	free(trees);
	buf_release(&text);
	buf_release(&path);
}

int agent_telemetry_sample(struct agent_ctx *ctx, int64_t now,
			   struct tm_host_sample *s)
{
	struct agent_telemetry *t = &ctx->tm;
	struct buf text = BUF_INIT, path = BUF_INIT, err = BUF_INIT;
	struct agent_cpu_times cpu;
	struct tm_gpu_sample gpus[API_TELEMETRY_MAX_GPUS];
	struct statvfs vfs;
	int64_t avail = 0;
	size_t i;
	int ret;

	memset(s, 0, sizeof(*s));
	s->ts_ms = time_now_ms();
	s->mem_limit = -1;
	ret = slurpf(&text, &path, "%s/stat", t->proc);
	ret = ret ? ret : agent_tm_parse_stat(text.data, &cpu, &s->cpus);
	if (ret) {
		ret = ERR_IO;
		goto out;
	}
	if (s->cpus < 1)
		s->cpus = 1;
	if (t->have_prev && cpu.total > t->prev.total) {
		uint64_t dt = cpu.total - t->prev.total;
		uint64_t di =
			cpu.idle >= t->prev.idle ? cpu.idle - t->prev.idle : 0;

		s->cpu_percent =
			di >= dt ? 0.0 : 100.0 * (double)(dt - di) / (double)dt;
	}
	t->prev = cpu;
	t->have_prev = 1;
	if (!slurpf(&text, &path, "%s/meminfo", t->proc) &&
	    !agent_tm_parse_meminfo(text.data, &s->mem_total, &avail))
		s->mem_used = avail < s->mem_total ? s->mem_total - avail : 0;
	if (t->memory_max && !slurp(t->memory_max, &text))
		(void)agent_tm_parse_cgroup_max(text.data, &s->mem_limit);
	if (!slurpf(&text, &path, "%s/diskstats", t->proc))
		(void)agent_tm_parse_diskstats(text.data, is_disk, t,
					       &s->disk_read, &s->disk_write);
	if (!slurpf(&text, &path, "%s/net/dev", t->proc))
		(void)agent_tm_parse_net_dev(text.data, &s->net_rx, &s->net_tx);
	if (!statvfs(t->fs_path, &vfs)) {
		s->fs_total = (int64_t)vfs.f_blocks * (int64_t)vfs.f_frsize;
		s->fs_used = ((int64_t)vfs.f_blocks - (int64_t)vfs.f_bfree) *
			     (int64_t)vfs.f_frsize;
	}
	if (!t->nvml_tried) {
		t->nvml_tried = 1;
		t->nvml = agent_nvml_open(&err);
		if (!t->nvml)
			log_info("telemetry: no GPU: %s", err.data);
	}
	if (t->nvml) {
		s->n_gpus = agent_nvml_sample(t->nvml, gpus,
					      API_TELEMETRY_MAX_GPUS);
		s->gpus = xcalloc(s->n_gpus + 1, sizeof(*s->gpus));
		for (i = 0; i < s->n_gpus; i++)
			s->gpus[i] = gpus[i];
	}
	sample_ranks(ctx, now, s);
out:
	buf_release(&text);
	buf_release(&path);
	buf_release(&err);
	return ret;
}

void agent_telemetry_tick(struct agent_ctx *ctx, int64_t now)
{
	struct agent_telemetry *t = &ctx->tm;
	struct tm_host_sample s;

	int first = !t->have_prev;

	if (t->interval_ms <= 0 || now < t->next_at)
		return;
	t->next_at = now + t->interval_ms;
	if (agent_telemetry_sample(ctx, now, &s) || first) {
		/* The first reading only sets the baselines of the CPU
		 * figures: the first sample follows it within a second. */
		if (first)
			t->next_at =
				now +
				(t->interval_ms < 1000 ? t->interval_ms : 1000);
		tm_host_sample_release(&s);
		return;
	}
	if (t->n == API_TELEMETRY_MAX_SAMPLES) {
		/* The controller has been away: keep the newest. */
		tm_host_sample_release(&t->queue[0]);
		memmove(&t->queue[0], &t->queue[1],
			(t->n - 1) * sizeof(t->queue[0]));
		t->n--;
		if (t->inflight)
			t->inflight--;
	}
	t->queue[t->n++] = s;
}

void agent_telemetry_set_interval(struct agent_ctx *ctx, int64_t ms)
{
	struct agent_telemetry *t = &ctx->tm;

	log_info("telemetry: every %lld ms, as the controller asks%s",
		 (long long)ms, ms ? "" : " (off)");
	t->interval_ms = ms;
	t->next_at = 0;
}

int64_t agent_telemetry_next(struct agent_ctx *ctx)
{
	const struct agent_telemetry *t = &ctx->tm;

	return t->interval_ms > 0 ? t->next_at : INT64_MAX;
}

void agent_telemetry_take(struct agent_ctx *ctx,
			  struct tm_host_sample **samples, size_t *n)
{
	struct agent_telemetry *t = &ctx->tm;

	t->inflight = t->n;
	*samples = t->n ? t->queue : NULL;
	*n = t->n;
}

void agent_telemetry_done(struct agent_ctx *ctx, int ok)
{
	struct agent_telemetry *t = &ctx->tm;
	size_t i;

	if (ok && t->inflight) {
		for (i = 0; i < t->inflight; i++)
			tm_host_sample_release(&t->queue[i]);
		memmove(&t->queue[0], &t->queue[t->inflight],
			(t->n - t->inflight) * sizeof(t->queue[0]));
		t->n -= t->inflight;
	}
	t->inflight = 0;
}
