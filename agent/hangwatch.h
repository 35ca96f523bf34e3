#ifndef AGENT_HANGWATCH_H
#define AGENT_HANGWATCH_H

/*
 * Hang detection for a running assignment (agent/hangwatch.c): samples
 * its ranks' CPU time and state from /proc, feeds the rule of
 * agent/hang.h and, when a rank is hung, writes its state into its log,
 * asks a Python rank for its stacks (SIGABRT with faulthandler on) and
 * kills it. A native process's threads are written by gdb's batch mode
 * when the host has gdb. The assignment then fails like any other with
 * a->hw.reason.
 */
#include <stdint.h>

struct agent_ctx;
struct agent_assign;

#define AGENT_HANGWATCH_GDB 4

struct agent_hangwatch {
	int64_t sample_at; /* monotonic: the next look at the ranks */
	int64_t kill_at;   /* monotonic: SIGKILL for the culprit (0: none) */
	int fired;
	size_t culprit; /* index into a->ranks, once fired */
	char *reason;	/* the failure reason, once fired */
	/* gdb's output files, read into the log before the SIGKILL. */
	char *gdb_out[AGENT_HANGWATCH_GDB];
	int gdb_pid[AGENT_HANGWATCH_GDB];
	size_t n_gdb;
};

/*
 * One look at a's ranks when due (a->spec.hang_ms > 0, a running and not
 * being stopped): may fire on a hung rank, and after firing kills the
 * culprit once its stacks had time to drain.
 */
void agent_hangwatch_step(struct agent_ctx *ctx, struct agent_assign *a,
			  int64_t now);

/* When agent_hangwatch_step() has something to do (INT64_MAX: never). */
int64_t agent_hangwatch_next(const struct agent_assign *a);

/* A file completed in a's checkpoint folder: progress for its ranks. */
void agent_hangwatch_checkpoint(struct agent_assign *a, int64_t now);

void agent_hangwatch_release(struct agent_hangwatch *w);

#endif
