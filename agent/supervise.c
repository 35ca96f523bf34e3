/*
 * Supervision: reading the ranks' output into the log queue, their exits
 * (SIGCHLD, waitid), the workers' reports, and after a restart finding the
 * processes of the previous agent again (adoption through pidfds and the
 * ranks' named pipes).
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/assign.h"
#include "agent/assignment.h"
#include "agent/hang.h"
#include "agent/images.h"
#include "agent/jobdir.h"
#include "agent/lines.h"
#include "agent/logq.h"
#include "agent/pipe.h"
#include "agent/proc.h"
#include "agent/supervise.h"
#include "agent/task.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* --- output, exits, workers ---------------------------------------------- */

struct line_ctx {
	struct agent_ctx *ctx;
	struct agent_assign *a;
	struct agent_rank *r;
	int rank;
	int is_stderr;
	int64_t ts_ms; /* one clock reading per read, not per line */
	int64_t mono_ms;
};

static void on_line(void *arg, const char *line, size_t len)
{
	struct line_ctx *lc = arg;
	struct agent_assign *a = lc->a;
	struct agent_rank *r = lc->r;
	size_t n = len > AGENT_TAIL_LEN ? AGENT_TAIL_LEN : len;

	agent_logq_push(&lc->ctx->logq, a->job, a->job_uid, a->attempt, a->algo,
			lc->rank, lc->is_stderr, lc->ts_ms, line, len,
			lc->mono_ms);
	/* Blank lines say nothing about a failure. */
	if (!n)
		return;
	memcpy(r->tail[r->tail_next], line, n);
	r->tail[r->tail_next][n] = '\0';
	r->tail_next = (r->tail_next + 1) % AGENT_TAIL_LINES;
	if (r->tail_n < AGENT_TAIL_LINES)
		r->tail_n++;
}

static void read_pipe(struct agent_ctx *ctx, struct agent_assign *a,
		      struct agent_rank *r, int is_stderr, int drain)
{
	struct line_ctx lc = { ctx,	      a,	 r,
			       r->rank,	      is_stderr, time_now_ms(),
			       time_mono_ms() };
	int *fd = is_stderr ? &r->proc.err_fd : &r->proc.out_fd;
	struct agent_lines *l = is_stderr ? &r->err : &r->out;
	struct pollfd pfd;
	int ret;

	if (*fd < 0)
		return;
	ret = agent_lines_read(l, *fd, on_line, &lc);
	/*
	 * After the process ended (and its group was killed) what is left
	 * in the pipe is all there will be, unless an escaped grandchild
	 * still holds it open: then we stop listening.
	 */
	while (drain && ret == 0) {
		pfd.fd = *fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, 0) <= 0)
			break;
		ret = agent_lines_read(l, *fd, on_line, &lc);
	}
	if (ret == 0 && !drain)
		return;
	if (ret != 1)
		agent_lines_flush(l, on_line, &lc);
	close(*fd);
	*fd = -1;
}

void agent_sup_on_output(struct agent_ctx *ctx, struct agent_assign *a,
			 size_t rank, int is_stderr)
{
	if (rank >= a->n_ranks)
		return;
	/* Any output is progress, a progress bar's partial line too. */
	agent_hang_progress(&a->ranks[rank].hang, AGENT_HANG_OUTPUT,
			    time_mono_ms());
	read_pipe(ctx, a, &a->ranks[rank], is_stderr, 0);
}

static void rank_ended(struct agent_ctx *ctx, struct agent_assign *a,
		       struct agent_rank *r)
{
	read_pipe(ctx, a, r, 0, 1);
	read_pipe(ctx, a, r, 1, 1);
	if (r->proc.term_signal)
		log_info("%s/%d/%s: rank %d (pid %d) killed by signal %d",
			 a->job, a->attempt, a->algo, r->rank, (int)r->proc.pid,
			 r->proc.term_signal);
	else
		log_info("%s/%d/%s: rank %d (pid %d) exited with %d", a->job,
			 a->attempt, a->algo, r->rank, (int)r->proc.pid,
			 r->proc.exit_code);
	agent_assign_mark(ctx, a);
}

/*
 * An adopted process ended. It is not our child, so its exit status came
 * to its keeper, which wrote it to the rank's exit file. Without one (a
 * keeper that was killed too) we know a signal when we sent it, and
 * otherwise go by the files the toolkit writes: output/success means 0,
 * anything else counts as a failure (exit 1), which the controller may
 * retry from a checkpoint.
 */
static void adopted_ended(struct agent_ctx *ctx, struct agent_assign *a,
			  struct agent_rank *r, int watched)
{
	struct buf path = BUF_INIT;
	char *exit_file = agent_fifo_path(a->dir, r->rank, "exit");
	int code, sig, known, tries;

	known = !agent_proc_read_exit(exit_file, &code, &sig);
	/*
	 * A keeper that reaped its rank a moment ago may be writing the
	 * file (or a rank watched itself, its keeper not found, just ended).
	 */
	for (tries = 0; !known && tries < 100; tries++) {
		struct timespec ms = { 0, 1000000L };

		nanosleep(&ms, NULL);
		known = !agent_proc_read_exit(exit_file, &code, &sig);
	}
	/*
	 * No stragglers here either. The keeper killed them before it
	 * wrote the file; else the leader we watched was reaped by someone
	 * else, but its pid is only handed out again after the pid space
	 * wraps. One found dead at start-up may have been reused already:
	 * leave that alone.
	 */
	if (!known && watched && r->proc.pid > 0)
		(void)kill(-r->proc.pid, SIGKILL);
	read_pipe(ctx, a, r, 0, 1);
	read_pipe(ctx, a, r, 1, 1);
	r->proc.exited = 1;
	r->proc.exited_ms = time_now_ms();
	if (known) {
		r->proc.exit_code = code;
		r->proc.term_signal = sig;
		agent_assign_note(ctx, a, "rank %d (pid %d) ended %s: %s %d",
				  r->rank, (int)r->proc.pid,
				  watched ? "while adopted" :
					    "while no agent ran",
				  sig ? "killed by signal" : "exit status",
				  sig ? sig : code);
	} else if (a->kill_sent) {
		r->proc.term_signal = SIGKILL;
		r->proc.exit_code = 128 + SIGKILL;
	} else if (a->term_sent) {
		r->proc.term_signal = SIGTERM;
		r->proc.exit_code = 128 + SIGTERM;
	} else {
		(void)buf_addf(&path, "%s/output/success", a->dir);
		r->proc.exit_code = access(path.data, F_OK) ? 1 : 0;
		agent_assign_note(
			ctx, a,
			"rank %d (pid %d) ended while adopted; its exit status "
			"is unknown, taken as %d from output/success",
			r->rank, (int)r->proc.pid, r->proc.exit_code);
	}
	if (r->pidfd >= 0)
		close(r->pidfd);
	r->pidfd = -1;
	free(exit_file);
	buf_release(&path);
	agent_assign_mark(ctx, a);
}

void agent_sup_on_pidfd(struct agent_ctx *ctx, struct agent_assign *a,
			size_t rank)
{
	if (rank < a->n_ranks && !a->ranks[rank].proc.exited)
		adopted_ended(ctx, a, &a->ranks[rank], 1);
}

void agent_sup_on_pipe(struct agent_ctx *ctx, struct agent_assign *a)
{
	struct strvec notes = STRVEC_INIT;
	size_t i;

	agent_pipe_on_report(a, &notes);
	for (i = 0; i < notes.n; i++)
		agent_assign_note(ctx, a, "%s", notes.v[i]);
	strvec_release(&notes);
}

struct task_line {
	struct agent_ctx *ctx;
	struct agent_assign *a;
};

static void on_task_line(void *arg, const char *line, size_t len)
{
	struct task_line *tl = arg;
	struct agent_assign *a = tl->a;

	if (!strcmp(line, "phase downloading")) {
		if (a->phase == API_PHASE_PREPARING)
			agent_assign_set_phase(tl->ctx, a,
					       API_PHASE_DOWNLOADING);
	} else if (!strncmp(line, "log ", 4)) {
		log_info("%s/%d/%s: %s", a->job, a->attempt, a->algo, line + 4);
	} else if (!strncmp(line, "note ", 5)) {
		agent_assign_note(tl->ctx, a, "%s", line + 5);
	} else if (!strncmp(line, "stdout ", 7) && len >= 7) {
		/* A command the worker ran (pip): the job's log. */
		agent_assign_log(tl->ctx, a, 0, 0, line + 7, len - 7);
	} else if (!strncmp(line, "stderr ", 7) && len >= 7) {
		agent_assign_log(tl->ctx, a, 0, 1, line + 7, len - 7);
	} else if (!strncmp(line, "runtime ", 8)) {
		free(a->runtime_note);
		a->runtime_note = xstrdup(line + 8);
	} else if (!strncmp(line, "error ", 6)) {
		free(a->task_error);
		a->task_error = xstrdup(line + 6);
	} else if (!strcmp(line, "ok")) {
		a->task_ok = 1;
	} else if (!strcmp(line, "pulled")) {
		/* The host's image list changed. */
		tl->ctx->images.refresh = 1;
	}
}

void agent_sup_on_task(struct agent_ctx *ctx, struct agent_assign *a)
{
	struct task_line tl = { ctx, a };
	int ret;

	if (a->task.fd < 0)
		return;
	ret = agent_lines_read(&a->task.lines, a->task.fd, on_task_line, &tl);
	if (ret != 0) {
		close(a->task.fd);
		a->task.fd = -1;
	}
}

void agent_sup_reap(struct agent_ctx *ctx)
{
	struct agent_assign *a;
	siginfo_t si;
	size_t i;
	int guard, found;

	/*
	 * Peek at one ended child at a time (WNOWAIT) and let its owner
	 * reap it, so that a rank is always reaped by agent_proc_reap(),
	 * which kills the rest of its group while its pid is still taken.
	 * We are a child subreaper, so orphaned grandchildren land here too.
	 */
	for (guard = 0; guard < 4096; guard++) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
		    si.si_pid == 0)
			break;
		found = 0;
		for (a = ctx->assigns; a && !found; a = a->next) {
			for (i = 0; i < a->n_ranks; i++) {
				struct agent_rank *r = &a->ranks[i];

				if (r->adopted || r->proc.exited ||
				    (r->proc.pid != si.si_pid &&
				     r->proc.keeper != si.si_pid))
					continue;
				if (agent_proc_reap(&r->proc))
					rank_ended(ctx, a, r);
				found = 1;
				break;
			}
			if (!found && a->task.pid == si.si_pid &&
			    !a->task.reaped) {
				(void)agent_task_reap(&a->task);
				agent_sup_on_task(ctx, a);
				found = 1;
			}
			if (!found && a->pipe.pid == si.si_pid &&
			    !a->pipe.reaped) {
				(void)agent_task_reap(&a->pipe);
				agent_sup_on_pipe(ctx, a);
				found = 1;
			}
		}
		if (!found && !agent_images_reap(ctx, si.si_pid))
			(void)waitpid(si.si_pid, NULL, 0);
	}
}

/* --- adoption after a restart --------------------------------------------- */

/* Wall-clock start of pid in ms, from /proc (0 when it is gone). */
static int64_t proc_start_ms(pid_t pid, char *state)
{
	static int64_t btime = -1;
	unsigned long long start = 0;
	char path[64], buf[1024], *p;
	long tck = sysconf(_SC_CLK_TCK);
	FILE *f;
	size_t n;
	int i;

	if (btime < 0) {
		f = fopen("/proc/stat", "re");
		while (f && fgets(buf, sizeof(buf), f))
			if (!strncmp(buf, "btime ", 6))
				btime = strtoll(buf + 6, NULL, 10);
		if (f)
			fclose(f);
		if (btime < 0)
			return 0;
	}
	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	p += 2;
	*state = *p;
	/* Field 3 is the state; starttime is field 22. */
	for (i = 3; i < 22 && p; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return 0;
	start = strtoull(p, NULL, 10);
	return btime * 1000 + (int64_t)(start * 1000 / (tck > 0 ? tck : 100));
}

/* Opens a pidfd for pid if it is still the process we started. */
static int adopt_pid(pid_t pid, int64_t started_ms)
{
	int64_t start;
	char state = '?';
	int fd;

	if (pid <= 0)
		return -1;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return -1;
	/* Checked after opening: the pidfd pins the pid. */
	start = proc_start_ms(pid, &state);
	if (!start || state == 'Z' || state == 'X' ||
	    llabs(start - started_ms) > 5000) {
		close(fd);
		return -1;
	}
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

/*
 * The keeper of a live rank: its parent, when that is `trainagent
 * keep-rank PID ...` for this very pid. Returns its pid or 0.
 */
static pid_t keeper_of(pid_t pid)
{
	char path[64], buf[512], *p;
	long ppid = 0;
	size_t n;
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %ld", &ppid) != 1 || ppid <= 1)
		return 0;
	(void)snprintf(path, sizeof(path), "/proc/%ld/cmdline", ppid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* argv: trainagent\0keep-rank\0PID\0FILE */
	p = buf + strlen(buf) + 1;
	if (p >= buf + n || strcmp(p, "keep-rank"))
		return 0;
	p += strlen(p) + 1;
	if (p >= buf + n || strtol(p, NULL, 10) != (long)pid)
		return 0;
	return (pid_t)ppid;
}

/*
 * The named pipes a rank writes to outlive the agent (the rank holds a
 * read end itself); open them again and go on reading.
 */
static void reopen_output(struct agent_rank *k, const char *dir)
{
	char *path;

	path = agent_fifo_path(dir, k->rank, "stdout");
	k->proc.out_fd = agent_proc_open_fifo(path);
	free(path);
	path = agent_fifo_path(dir, k->rank, "stderr");
	k->proc.err_fd = agent_proc_open_fifo(path);
	free(path);
}

static void adopt_one(void *data, const char *dir, const struct api_report *r)
{
	struct agent_ctx *ctx = data;
	struct agent_assign *a;
	struct agent_rank *k;
	pid_t keeper;
	size_t i;
	int alive = 0, kfd;

	if (!r->job || !r->algo ||
	    agent_assign_find(ctx, r->job, r->job_uid, r->attempt, r->algo))
		return;
	a = agent_assign_new(ctx, r->job, r->job_uid, r->attempt, r->algo);
	a->dir = xstrdup(dir);
	a->phase = r->phase;
	a->started_ms = r->started_ms;
	a->failure = r->failure ? xstrdup(r->failure) : NULL;
	a->error = r->error ? xstrdup(r->error) : NULL;
	a->check_ms = r->check_ms; /* passed before the restart */
	if (r->n_procs) {
		a->ranks = xcalloc(r->n_procs, sizeof(*a->ranks));
		a->n_ranks = r->n_procs;
	}
	for (i = 0; i < r->n_procs; i++) {
		k = &a->ranks[i];
		agent_proc_init(&k->proc);
		agent_lines_init(&k->out, 0);
		agent_lines_init(&k->err, 0);
		k->pidfd = -1;
		k->rank = r->procs[i].rank;
		k->proc.pid = (pid_t)r->procs[i].pid;
		k->proc.started_ms = r->procs[i].started_ms;
		k->proc.exited = r->procs[i].exited;
		k->proc.exit_code = r->procs[i].exit_code;
		k->proc.term_signal = r->procs[i].signal;
		k->proc.exited_ms = r->procs[i].exited_ms;
		k->adopted = 1;
		if (k->proc.exited)
			continue;
		/*
		 * Watch the keeper rather than the rank: it ends only once
		 * the exit file is written, and it is still there for a rank
		 * that just ended (a zombie, or reaped a moment ago).
		 */
		keeper = keeper_of(k->proc.pid);
		kfd = keeper ? adopt_pid(keeper, k->proc.started_ms) : -1;
		k->pidfd = adopt_pid(k->proc.pid, k->proc.started_ms);
		if (kfd >= 0) {
			if (k->pidfd >= 0)
				close(k->pidfd);
			k->pidfd = kfd;
		}
		if (k->pidfd >= 0) {
			alive++;
			reopen_output(k, dir);
			agent_assign_note(
				ctx, a,
				"agent restarted: rank %d (pid %d) adopted%s",
				k->rank, (int)k->proc.pid,
				k->proc.out_fd >= 0 || k->proc.err_fd >= 0 ?
					"" :
					"; its output is no longer captured");
		} else {
			adopted_ended(ctx, a, k, 0);
		}
	}
	switch (a->phase) {
	case API_PHASE_PREPARING:
	case API_PHASE_DOWNLOADING:
		/* The worker died with the old agent: stage again. */
		a->restage = 1;
		break;
	case API_PHASE_UPLOADING:
		a->up_step = AGENT_UP_NONE;
		break;
	case API_PHASE_RUNNING:
		/* Files completed while no agent watched go once quiet. */
		if (alive)
			agent_assign_watch_checkpoints(a);
		break;
	default:
		break;
	}
	log_info("%s/%d/%s: found in %s (%s, %d of %zu processes alive)",
		 a->job, a->attempt, a->algo, dir, api_phase_name(a->phase),
		 alive, a->n_ranks);
	agent_assign_mark(ctx, a);
}

void agent_sup_adopt_all(struct agent_ctx *ctx)
{
	agent_jobdir_scan(ctx->cfg.work_dir, adopt_one, ctx);
}
