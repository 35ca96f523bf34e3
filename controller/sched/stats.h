#ifndef CTRL_SCHED_STATS_H
#define CTRL_SCHED_STATS_H

/*
 * The scheduler's figures for GET /metrics (docs/queues.md): how long
 * passes and decisions take, and each share's jobs, hosts and fair-share
 * usage as the last pass saw them. Passes run on the reconciler's thread;
 * /metrics reads from the HTTP threads.
 */
#include <stdint.h>

#include "common/buf.h"

struct ctrl_sched_in;
struct ctrl_sched_out;

/* One pass: its whole time (store read, decision, carrying it out) and
 * the decision's alone, in microseconds. */
void ctrl_sched_stats_pass(int64_t pass_us, int64_t decide_us);

/* The shares as the decision out left them (a start counts as running). */
void ctrl_sched_stats_shares(const struct ctrl_sched_in *in,
			     const struct ctrl_sched_out *out);

/* Appends the scheduler's families to out. */
void ctrl_sched_render_metrics(struct buf *out);

#endif
