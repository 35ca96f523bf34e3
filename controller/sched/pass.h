#ifndef CTRL_SCHED_PASS_H
#define CTRL_SCHED_PASS_H

/*
 * The scheduler on the reconciler's thread (docs/queues.md): one pass
 * reads every unfinished job and the capacity limits from the store,
 * turns them into a decision's input (controller/sched/decide.h), asks
 * for the decision and carries it out: starts on the chosen hosts,
 * preemptions (ctrl_job_preempt()), and each waiting job's message.
 *
 * A job sent directly (CreateTrainingJob) is in the default queue, fair
 * shared between the users who own jobs, best effort (a job that cannot
 * start holds nothing back). A service job is in its job queue, under
 * that queue's policy (docs/batch.md). InstanceGroups jobs are placed as
 * before, in creation order, by controller/placement.c.
 */
#include <stdint.h>

struct ctrl_ctx;
struct api_job_spec;

/* Fair-share usage, kept between passes (freed by ctrl_ctx_release()). */
struct ctrl_sched_mem;

/*
 * One pass. busy_valid: the hosts' busy marks are current (see
 * ctrl_place_busy_refresh()). Unless urgent (hosts were freed, or the
 * periodic full pass) or a host is free, a pass within
 * CTRL_SCHED_PASS_GAP_MS of the last one is put off: returns 0, and the
 * caller asks again later; else 1.
 */
int ctrl_sched_pass(struct ctrl_ctx *ctx, int *busy_valid, int urgent);

/* Whether a job of spec waits for the scheduler rather than placement. */
int ctrl_sched_owns(const struct api_job_spec *spec);

void ctrl_sched_mem_free(struct ctrl_sched_mem *m);

/* The default queue's fair-share half-life: a day. */
#define CTRL_SCHED_DEFAULT_DECAY_S 86400
/* Passes for new jobs alone are at most this often. */
#define CTRL_SCHED_PASS_GAP_MS 100
/* No job is preempted before its attempt ran this long. */
#define CTRL_SCHED_MIN_RUN_MS 10000

#endif
