/*
 * Forked workers: staging (checkpoint, channels, code) and packing
 * (model.tar.gz, output.tar.gz) run in a child of the agent that does not
 * exec, reports through a pipe and exits.
 *
 * Why a process and not a thread: storage/ does blocking libcurl and
 * libarchive work that we cannot interrupt from outside, but an abort must
 * stop a download at once; a process is killed with one kill(2) and takes
 * its half-open sockets and temp files' descriptors with it. A crash in a
 * decompressor or a bad archive cannot take the daemon (and the jobs it
 * supervises) down. And nothing is shared, so the poll loop needs no
 * locks. The cost is a fork of a small daemon, well under a millisecond.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/ident.h"
#include "agent/lines.h"
#include "agent/proc.h"
#include "agent/task.h"
#include "common/err.h"
#include "common/log.h"
#include "common/banned.h"

#define REPORT_FD 3

void agent_task_init(struct agent_task *t)
{
	t->pid = -1;
	t->start_ticks = 0;
	t->fd = -1;
	t->reaped = 0;
	t->status = 0;
	agent_lines_init(&t->lines, 0);
}

int agent_task_start(struct agent_task *t, agent_task_fn *fn, void *arg,
		     const struct agent_ident *id, struct buf *err)
{
	pid_t parent = getpid();
	int p[2];
	pid_t pid;
	int rc;

	if (pipe2(p, O_CLOEXEC)) {
		(void)buf_addf(err, "pipe: %s", strerror(errno));
		return ERR_IO;
	}
	pid = fork();
	if (pid < 0) {
		(void)buf_addf(err, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return ERR_IO;
	}
	if (pid == 0) {
		close(p[0]);
		(void)setpgid(0, 0);
		/* A worker never outlives the agent that would read it. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		/* Writes to a closed socket must fail, not kill the worker. */
		agent_proc_reset_signals(1);
		if (p[1] != REPORT_FD) {
			if (dup2(p[1], REPORT_FD) < 0)
				_exit(1);
			close(p[1]);
		}
		/* Drop the agent's pipes, sockets and pidfds. */
		if (syscall(SYS_close_range, REPORT_FD + 1, ~0U, 0))
			for (rc = REPORT_FD + 1; rc < 1024; rc++)
				(void)close(rc);
		if (agent_ident_become(id)) {
			agent_task_say(REPORT_FD,
				       "error cannot run as the job's user: "
				       "%s",
				       strerror(errno));
			_exit(1);
		}
		rc = fn(arg, REPORT_FD);
		_exit(rc & 0xff);
	}
	close(p[1]);
	(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
	/* Also in the parent, against a race with the child's setpgid. */
	(void)setpgid(pid, pid);
	t->pid = pid;
	t->fd = p[0];
	t->reaped = 0;
	t->status = 0;
	return 0;
}

int agent_task_reap(struct agent_task *t)
{
	int status;
	pid_t r;

	if (t->pid <= 0 || t->reaped)
		return t->reaped;
	do {
		r = waitpid(t->pid, &status, WNOHANG);
	} while (r < 0 && errno == EINTR);
	if (r == t->pid) {
		t->reaped = 1;
		t->status = status;
	} else if (r < 0) {
		t->reaped = 1;
		t->status = 1 << 8;
	}
	return t->reaped;
}

void agent_task_kill(struct agent_task *t)
{
	if (t->pid > 0 && !t->reaped)
		(void)kill(-t->pid, SIGKILL);
}

int agent_task_busy(const struct agent_task *t)
{
	return t->pid > 0 && (!t->reaped || t->fd >= 0);
}

void agent_task_release(struct agent_task *t)
{
	if (t->fd >= 0)
		close(t->fd);
	agent_lines_release(&t->lines);
	agent_task_init(t);
}

void agent_task_say(int fd, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	const char *s;
	size_t n;
	ssize_t w;
	va_list ap;

	va_start(ap, fmt);
	(void)buf_vaddf(&b, fmt, ap);
	va_end(ap);
	/* One report per line: newlines inside become spaces. */
	for (n = 0; n < b.len; n++)
		if (b.data[n] == '\n' || b.data[n] == '\r')
			b.data[n] = ' ';
	(void)buf_addch(&b, '\n');
	s = b.data;
	n = b.len;
	while (n > 0) {
		w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		s += w;
		n -= (size_t)w;
	}
	buf_release(&b);
}
