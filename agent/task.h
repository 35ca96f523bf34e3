#ifndef AGENT_TASK_H
#define AGENT_TASK_H

/*
 * A forked worker reporting through a pipe (agent/task.c). Staging and
 * packing run in a forked child of the agent (no exec) so the poll loop
 * never blocks on a download or on compressing a model. The child writes
 * text lines into its report pipe ("phase downloading", "log ...",
 * "error ...", "ok") and exits; see task.c for why a process rather than
 * a thread.
 */
#include <stdint.h>
#include <sys/types.h>

#include "agent/lines.h"
#include "common/buf.h"

struct agent_ident;

typedef int agent_task_fn(void *arg, int report_fd);

struct agent_task {
	pid_t pid;	      /* -1 when none */
	uint64_t start_ticks; /* kernel start time (lease.c); 0: unknown */
	int fd;		      /* report pipe read end, -1 after EOF */
	int reaped;	      /* 1 once waited for */
	int status;	      /* wait status */
	struct agent_lines lines;
};

void agent_task_init(struct agent_task *t);
/* Runs fn(arg) in a worker process, as id when id is set. */
int agent_task_start(struct agent_task *t, agent_task_fn *fn, void *arg,
		     const struct agent_ident *id, struct buf *err);
/* Reaps without blocking; returns 1 once reaped. */
int agent_task_reap(struct agent_task *t);
/* SIGKILLs the worker's process group. */
void agent_task_kill(struct agent_task *t);
/* 1 when a worker exists and has not finished (pipe open or not reaped). */
int agent_task_busy(const struct agent_task *t);
void agent_task_release(struct agent_task *t);
/* In the worker: writes one report line ("%s\n"). */
void agent_task_say(int fd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
