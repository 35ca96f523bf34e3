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
 * One pass, when it is worth reading every unfinished job: there are at
 * most CTRL_SCHED_LONG_QUEUE of them; with more, passes are at least
 * CTRL_SCHED_PASS_GAP_MS and twice the last one's time apart, and run
 * only when hosts were freed (freed), a host is free, quota shares may
 * preempt, or the waiting messages are CTRL_SCHED_REFRESH_MS old. Returns 1 when it ran, 0 when it was put off
 * (the caller asks again later). busy_valid: the hosts' busy marks are
 * current (ctrl_place_busy_refresh()).
 */
int ctrl_sched_pass(struct ctrl_ctx *ctx, int *busy_valid, int freed);

/*
 * A job that arrived while no host of its kind is free: message is its
 * waiting message until a pass gives it its place (written with the
 * next pass, run or put off).
 */
void ctrl_sched_note_wait(struct ctrl_ctx *ctx, const char *name,
			  const char *message);

/* Whether a job of spec waits for the scheduler rather than placement. */
int ctrl_sched_owns(const struct api_job_spec *spec);

void ctrl_sched_mem_free(struct ctrl_sched_mem *m);

/* The default queue's fair-share half-life: a day. */
#define CTRL_SCHED_DEFAULT_DECAY_S 86400
/* A long queue's passes are at most this often (unless hosts freed). */
#define CTRL_SCHED_PASS_GAP_MS 100
#define CTRL_SCHED_LONG_QUEUE 1000
/* With nothing to start or preempt, messages are refreshed this often. */
#define CTRL_SCHED_REFRESH_MS 5000
/* No job is preempted before its attempt ran this long. */
#define CTRL_SCHED_MIN_RUN_MS 10000

#endif
