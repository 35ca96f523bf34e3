/*
 * Hang detection (docs/distributed.md, "Hangs"). Output and
 * checkpoint files are seen where they arrive (supervise.c, assign.c);
 * here the ranks' CPU time and state are read from /proc now and then,
 * the rule of hang.c gives the verdict, and a hung rank's state and
 * stacks go into its log before it is killed.
 *
 * A rank's processes are those of its session or process group (the rank
 * leads both, agent/proc.h), plus, for a container's rank, the session of
 * the container's init. A scan of /proc costs a read per process, so it
 * runs every twentieth of the timeout, at least every 250 ms and at most
 * every 2 s.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/assignment.h"
#include "agent/hang.h"
#include "agent/hangwatch.h"
#include "agent/logq.h"
#include "agent/proc.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/strvec.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define SAMPLE_MIN_MS 250
#define SAMPLE_MAX_MS 2000
/*
 * After SIGABRT, how long faulthandler has to write the stacks, or gdb
 * to attach and write the threads' backtraces; gdb itself gets twice
 * that (an alarm) before it is killed.
 */
#define DRAIN_MS 5000
#define GDB_MS 10000
/* The most of a gdb output file copied into the log. */
#define GDB_OUT_MAX (64 * 1024)
/* The most processes of a hung rank described in its log. */
#define DUMP_MAX 16

struct pstat {
	int pid;
	char state;
	int pgrp;
	int session;
	uint64_t ticks; /* utime + stime + cutime + cstime */
	char comm[32];
};

/* Reads a small /proc file into out (NUL-terminated); its length or -1. */
static ssize_t read_small(const char *path, char *out, size_t size)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, out, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	out[n] = '\0';
	return n;
}

static int read_pstat(int pid, struct pstat *st)
{
	char path[64], text[1024], *open_p, *close_p;
	unsigned long long ut, stt;
	long long cut, cst;
	size_t n;

	(void)snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_small(path, text, sizeof(text)) < 0)
		return -1;
	/* The command may hold spaces and parentheses. */
	open_p = strchr(text, '(');
	close_p = strrchr(text, ')');
	if (!open_p || !close_p || close_p < open_p)
		return -1;
	n = (size_t)(close_p - open_p - 1);
	if (n >= sizeof(st->comm))
		n = sizeof(st->comm) - 1;
	memcpy(st->comm, open_p + 1, n);
	st->comm[n] = '\0';
	st->pid = pid;
	if (sscanf(close_p + 1,
		   " %c %*d %d %d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
		   "%lld %lld",
		   &st->state, &st->pgrp, &st->session, &ut, &stt, &cut,
		   &cst) != 7)
		return -1;
	st->ticks = ut + stt + (uint64_t)(cut > 0 ? cut : 0) +
		    (uint64_t)(cst > 0 ? cst : 0);
	return 0;
}

/* The session of a container rank's init, from its pid file (0: none). */
static int container_session(const struct agent_rank *r)
{
	char text[32];
	struct pstat st;
	long pid;

	if (!r->proc.container_pidfile ||
	    read_small(r->proc.container_pidfile, text, sizeof(text)) < 0)
		return 0;
	pid = strtol(text, NULL, 10);
	if (pid <= 1 || read_pstat((int)pid, &st))
		return 0;
	return st.session;
}

static int rank_watched(const struct agent_rank *r)
{
	return r->proc.pid > 0 && !r->proc.exited && !r->proc.start_errno;
}

static int in_rank(const struct agent_rank *r, int csess,
		   const struct pstat *st)
{
	int pid = (int)r->proc.pid;

	return st->session == pid || st->pgrp == pid || st->pid == pid ||
	       (csess > 0 && st->session == csess);
}

/*
 * Calls fn for every process of the watched ranks (one scan of /proc for
 * them all): fn gets the rank's index.
 */
static void scan(struct agent_assign *a,
		 void (*fn)(void *arg, size_t i, const struct pstat *st),
		 void *arg)
{
	int *csess = xcalloc(a->n_ranks ? a->n_ranks : 1, sizeof(*csess));
	struct dirent *de;
	struct pstat st;
	size_t i;
	DIR *d;

	for (i = 0; i < a->n_ranks; i++)
		csess[i] = container_session(&a->ranks[i]);
	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]) ||
		    read_pstat(atoi(de->d_name), &st))
			continue; /* it ended meanwhile */
		for (i = 0; i < a->n_ranks; i++) {
			if (!rank_watched(&a->ranks[i]) ||
			    !in_rank(&a->ranks[i], csess[i], &st))
				continue;
			fn(arg, i, &st);
			break;
		}
	}
	if (d)
		closedir(d);
	free(csess);
}

struct sample {
	uint64_t *ticks;
	int *frozen;
};

static void add_sample(void *arg, size_t i, const struct pstat *st)
{
	struct sample *s = arg;

	s->ticks[i] += st->ticks;
	/* Stopped by a signal, or by a tracer. */
	if (st->state == 'T' || st->state == 't')
		s->frozen[i] = 1;
}

/* The rank's log (its stderr), as its own lines go there. */
static void rank_log(struct agent_ctx *ctx, const struct agent_assign *a,
		     const struct agent_rank *r, const char *text)
{
	agent_logq_push(&ctx->logq, a->job, a->job_uid, a->attempt, a->algo,
			r->rank, 1, time_now_ms(), text, strlen(text),
			time_mono_ms());
}

struct dump {
	size_t want;
	int pids[DUMP_MAX];
	char python[DUMP_MAX];
	size_t n;
	int more;
};

/*
 * Whether pid runs a Python interpreter: its executable is python*
 * (a script started through its #! line shows the script's name as
 * its command).
 */
static int is_python(int pid)
{
	char path[64], exe[512];
	const char *base;
	ssize_t n;

	(void)snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	return !strncmp(base, "python", 6);
}

static void add_dump(void *arg, size_t i, const struct pstat *st)
{
	struct dump *d = arg;

	if (i != d->want)
		return;
	if (d->n == DUMP_MAX) {
		d->more++;
		return;
	}
	d->python[d->n] = (char)is_python(st->pid);
	d->pids[d->n++] = st->pid;
}

/* "state S, wchan W, syscall ..." of one process, from /proc. */
static void describe_pid(int pid, struct buf *out)
{
	char path[64], text[256];
	struct pstat st;
	char *nl;

	if (read_pstat(pid, &st)) {
		(void)buf_addf(out, "pid %d: gone", pid);
		return;
	}
	(void)buf_addf(out, "pid %d (%s): state %c", pid, st.comm, st.state);
	(void)snprintf(path, sizeof(path), "/proc/%d/wchan", pid);
	if (read_small(path, text, sizeof(text)) > 0)
		(void)buf_addf(out, ", wchan %s", text);
	(void)snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	if (read_small(path, text, sizeof(text)) > 0) {
		nl = strchr(text, '\n');
		if (nl)
			*nl = '\0';
		(void)buf_addf(out, ", syscall %s", text);
	}
}

/*
 * Starts `gdb -batch -p pid` for the threads' backtraces, its output into
 * out_path, with a minimal environment and in a session of its own (the
 * rank's SIGKILL must not reach it, nor it the agent's terminal). Returns
 * its pid, or -1 when it could not start. The agent reaps it like any
 * unknown child (supervise.c).
 */
static pid_t start_gdb(const char *gdb, int pid, const char *out_path)
{
	static char *const envp[] = { (char *)"PATH=/usr/bin:/bin",
				      (char *)"HOME=/", (char *)"LANG=C",
				      NULL };
	char pidarg[24];
	pid_t child;
	int fd, nul;

	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	(void)snprintf(pidarg, sizeof(pidarg), "%d", pid);
	child = fork();
	if (child == 0) {
		agent_proc_reset_signals(0);
		(void)setsid();
		nul = open("/dev/null", O_RDONLY);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(fd, 1) < 0 ||
		    dup2(fd, 2) < 0)
			_exit(127);
		/* An alarm outlives exec: a gdb that hangs ends. */
		(void)alarm(2 * GDB_MS / 1000);
		execle(gdb, "gdb", "-nx", "-batch", "-p", pidarg, "-ex",
		       "thread apply all bt", (char *)NULL, envp);
		_exit(127);
	}
	close(fd);
	return child > 0 ? child : -1;
}

/* gdb for the native processes of the dump (at most AGENT_HANGWATCH_GDB). */
static void gdb_natives(struct agent_assign *a, const struct agent_rank *r,
			const struct dump *d)
{
	struct agent_hangwatch *w = &a->hw;
	struct strvec no_env = STRVEC_INIT; /* gdb from /usr/bin:/bin */
	char *gdb = agent_proc_which("gdb", &no_env);
	struct buf path = BUF_INIT;
	pid_t pid;
	size_t i;

	for (i = 0; gdb && a->dir && i < d->n && w->n_gdb < AGENT_HANGWATCH_GDB;
	     i++) {
		if (d->python[i])
			continue;
		buf_reset(&path);
		(void)buf_addf(&path, "%s/hang-rank%d-pid%d.gdb", a->dir,
			       r->rank, d->pids[i]);
		pid = start_gdb(gdb, d->pids[i], path.data);
		if (pid <= 0)
			continue;
		w->gdb_pid[w->n_gdb] = (int)pid;
		w->gdb_out[w->n_gdb++] = buf_detach(&path, NULL);
	}
	free(gdb);
	buf_release(&path);
}

/* Every gdb started has ended and was reaped. */
static int gdb_done(const struct agent_hangwatch *w)
{
	size_t i;

	for (i = 0; i < w->n_gdb; i++)
		if (kill(w->gdb_pid[i], 0) == 0 || errno != ESRCH)
			return 0;
	return 1;
}

/* Copies what gdb wrote into the culprit's log, then removes the files. */
static void gdb_collect(struct agent_ctx *ctx, struct agent_assign *a)
{
	struct agent_hangwatch *w = &a->hw;
	const struct agent_rank *r = &a->ranks[w->culprit];
	char *text = xmalloc(GDB_OUT_MAX + 1), *line, *nl;
	ssize_t n;
	size_t i;

	for (i = 0; i < w->n_gdb; i++) {
		n = read_small(w->gdb_out[i], text, GDB_OUT_MAX + 1);
		for (line = text; n > 0 && *line; line = nl + 1) {
			nl = strchr(line, '\n');
			if (!nl) {
				rank_log(ctx, a, r, line);
				break;
			}
			*nl = '\0';
			rank_log(ctx, a, r, line);
		}
		(void)unlink(w->gdb_out[i]);
		FREE_AND_NULL(w->gdb_out[i]);
	}
	w->n_gdb = 0;
	free(text);
}

/* "last output 12.3 s ago" or "no output since the start". */
static void ago(struct buf *out, const char *what, int64_t at, int64_t now)
{
	if (at)
		(void)buf_addf(out, "last %s %.1f s ago", what,
			       (double)(now - at) / 1000.0);
	else
		(void)buf_addf(out, "no %s since the start", what);
}

/* What the rank did not do, for the reason: "no output, no CPU time". */
static void silent_kinds(const struct agent_assign *a, int frozen,
			 struct buf *out)
{
	(void)buf_adds(out, "no output, no CPU time");
	if (a->watch.fd >= 0)
		(void)buf_adds(out, ", no checkpoint");
	if (frozen)
		(void)buf_adds(out, "; frozen: state T");
}

/*
 * The rank at index c is hung: its processes' state into its log, then
 * SIGABRT to its Python processes (faulthandler writes their stacks) and
 * SIGCONT to wake a frozen one, or SIGKILL at once when none is Python.
 */
static void fire(struct agent_ctx *ctx, struct agent_assign *a, size_t c,
		 int frozen, int64_t now)
{
	struct agent_hangwatch *w = &a->hw;
	struct agent_rank *r = &a->ranks[c];
	struct dump d = { .want = c };
	struct buf line = BUF_INIT, why = BUF_INIT;
	int64_t silent = now - r->hang.last_ms;
	size_t i, py = 0;

	scan(a, add_dump, &d);
	for (i = 0; i < d.n; i++)
		py += (size_t)d.python[i];
	(void)buf_addf(&why,
		       "%s (host %s) rank %d made no progress for "
		       "%lld s (",
		       a->algo, ctx->cfg.host, r->rank,
		       (long long)((silent + 500) / 1000));
	silent_kinds(a, frozen, &why);
	(void)buf_addf(&why, "); its %s in its log",
		       py ? "stacks are" : "state is");
	w->reason = buf_detach(&why, NULL);
	w->fired = 1;
	w->culprit = c;
	log_warn("%s/%d/%s: hang: %s", a->job, a->attempt, a->algo, w->reason);
	(void)buf_addf(&line, "trainagent: hang: %s", w->reason);
	rank_log(ctx, a, r, line.data);
	buf_reset(&line);
	(void)buf_adds(&line, "trainagent: hang: ");
	ago(&line, "output", r->hang.out_ms, now);
	(void)buf_adds(&line, ", ");
	ago(&line, "CPU time", r->hang.cpu_ms, now);
	if (a->watch.fd >= 0) {
		(void)buf_adds(&line, ", ");
		ago(&line, "checkpoint", r->hang.ckpt_ms, now);
	}
	rank_log(ctx, a, r, line.data);
	for (i = 0; i < d.n; i++) {
		buf_reset(&line);
		(void)buf_adds(&line, "trainagent: hang: ");
		describe_pid(d.pids[i], &line);
		rank_log(ctx, a, r, line.data);
	}
	if (d.more) {
		buf_reset(&line);
		(void)buf_addf(&line, "trainagent: hang: %d more processes",
			       d.more);
		rank_log(ctx, a, r, line.data);
	}
	for (i = 0; i < d.n; i++)
		if (d.python[i])
			(void)kill(d.pids[i], SIGABRT);
	/* A frozen process takes the SIGABRT when it runs again; gdb could
	 * not attach to it. */
	(void)agent_proc_signal(&r->proc, SIGCONT);
	gdb_natives(a, r, &d);
	if (w->n_gdb) {
		w->kill_at = now + GDB_MS;
	} else if (py) {
		w->kill_at = now + DRAIN_MS;
	} else {
		(void)agent_proc_signal(&r->proc, SIGKILL);
		w->kill_at = 0;
	}
	buf_release(&line);
}

static int64_t sample_period(int64_t timeout)
{
	int64_t p = timeout / 20;

	return p < SAMPLE_MIN_MS ? SAMPLE_MIN_MS :
	       p > SAMPLE_MAX_MS ? SAMPLE_MAX_MS :
				   p;
}

static void sample_and_judge(struct agent_ctx *ctx, struct agent_assign *a,
			     int64_t now)
{
	int64_t timeout = a->spec.hang_ms;
	size_t n = a->n_ranks ? a->n_ranks : 1, i;
	struct sample s = { xcalloc(n, sizeof(*s.ticks)),
			    xcalloc(n, sizeof(*s.frozen)) };
	struct agent_hang_obs *obs = xcalloc(n, sizeof(*obs));
	long hz = sysconf(_SC_CLK_TCK);
	int c;

	scan(a, add_sample, &s);
	for (i = 0; i < a->n_ranks; i++) {
		struct agent_rank *r = &a->ranks[i];

		if (!r->hang.started)
			agent_hang_start(&r->hang, now);
		r->hang.fixed = a->spec.hang_fixed;
		obs[i].h = &r->hang;
		obs[i].watched = rank_watched(r);
		obs[i].frozen = s.frozen[i];
		if (obs[i].watched)
			(void)agent_hang_cpu(&r->hang, s.ticks[i], hz, now);
	}
	c = agent_hang_culprit(obs, a->n_ranks, now, timeout);
	if (c >= 0)
		fire(ctx, a, (size_t)c, s.frozen[c], now);
	free(obs);
	free(s.ticks);
	free(s.frozen);
}

void agent_hangwatch_step(struct agent_ctx *ctx, struct agent_assign *a,
			  int64_t now)
{
	struct agent_hangwatch *w = &a->hw;

	if (w->fired) {
		/* The stacks had their time: the culprit goes now. */
		struct agent_rank *r = &a->ranks[w->culprit];

		if (w->kill_at && (now >= w->kill_at || r->proc.exited ||
				   (w->n_gdb && gdb_done(w)))) {
			w->kill_at = 0;
			gdb_collect(ctx, a);
			if (!r->proc.exited)
				(void)agent_proc_signal(&r->proc, SIGKILL);
		}
		return;
	}
	if (a->spec.hang_ms <= 0 || now < w->sample_at)
		return;
	w->sample_at = now + sample_period(a->spec.hang_ms);
	sample_and_judge(ctx, a, now);
}

int64_t agent_hangwatch_next(const struct agent_assign *a)
{
	const struct agent_hangwatch *w = &a->hw;

	if (w->fired)
		return w->kill_at ? w->kill_at : INT64_MAX;
	return a->spec.hang_ms > 0 ? w->sample_at : INT64_MAX;
}

void agent_hangwatch_checkpoint(struct agent_assign *a, int64_t now)
{
	size_t i;

	for (i = 0; i < a->n_ranks; i++)
		if (rank_watched(&a->ranks[i]))
			agent_hang_progress(&a->ranks[i].hang,
					    AGENT_HANG_CHECKPOINT, now);
}

void agent_hangwatch_release(struct agent_hangwatch *w)
{
	size_t i;

	for (i = 0; i < w->n_gdb; i++)
		free(w->gdb_out[i]);
	free(w->reason);
	memset(w, 0, sizeof(*w));
}
