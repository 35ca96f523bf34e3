#ifndef CTRL_GOODPUT_H
#define CTRL_GOODPUT_H

/*
 * Goodput accounting (docs/goodput.md): where a job's wall time went,
 * from its creation to its end (or now), split into categories from its
 * attempt records and the progress its ranks reported in their log
 * lines. ctrl_goodput_split() is the pure rule; the rest reads the store
 * and feeds it.
 *
 * To add a category (an elastic shrink, a restore from a peer's memory),
 * add its enum constant before CTRL_GOODPUT_N and its name to
 * ctrl_goodput_names[] (controller/obs/goodput.c), then let the split
 * charge the spans it owns to it: Describe, /metrics, the job page and
 * trainctl describe show every category in the list.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/agent_proto.h"
#include "common/buf.h"
#include "db/goodput.h"

struct ctrl_ctx;

enum ctrl_goodput_cat {
	/* From the job's creation to its first attempt. */
	CTRL_GOODPUT_QUEUED,
	/* From the first attempt's start to its first step report. */
	CTRL_GOODPUT_STARTUP,
	/* Steps the job had not made before, and the tail of the attempt
	 * that ended the job. */
	CTRL_GOODPUT_PRODUCTIVE,
	/* Checkpoint stalls the program reported (moved out of the
	 * productive or redone time they fell in). */
	CTRL_GOODPUT_CHECKPOINT,
	/* Steps an earlier attempt had reached already, made again after a
	 * restart from an older checkpoint. */
	CTRL_GOODPUT_REDONE,
	/* From a failed (or moved) attempt's last step report to the next
	 * attempt's first one: detection, teardown, waiting for hosts,
	 * launch, restore. */
	CTRL_GOODPUT_RESTART,
	/* From a preempted attempt's last step report to the next
	 * attempt's start: the Interrupted spell and the wait in the queue. */
	CTRL_GOODPUT_PREEMPTED,
	/* After the last attempt of a job that ended, until its end. */
	CTRL_GOODPUT_OTHER,
	CTRL_GOODPUT_N
};

/* The categories' names as Describe shows them ("Productive", ...). */
extern const char *const ctrl_goodput_names[CTRL_GOODPUT_N];
/* The same as /metrics labels them ("productive", ...). */
extern const char *const ctrl_goodput_labels[CTRL_GOODPUT_N];

/* A job's split. The ms[] add up to wall_ms exactly. */
struct ctrl_goodput {
	int64_t ms[CTRL_GOODPUT_N];
	int64_t wall_ms;
	int64_t step;	      /* the furthest step reported, -1: none */
	int64_t steps_redone; /* steps made again after restarts */
	int attempts;
	int reporting; /* attempts that reported a step */
};

/*
 * Splits the time from created_ms to end_ms (the job's end when ended,
 * else now) over the attempts a[0..n) (in order; an attempt with
 * ended_ms 0 runs until end_ms) into out. After the last attempt, a job
 * that ended is in Other; one that did not waits for its next attempt
 * (Restart, or Preempted after a preemption). Before any attempt, it is
 * Queued. An attempt without step reports is charged whole:
 * when no attempt of the job reported a step (nothing tells an attempt's
 * parts apart), the last to Productive and earlier ones to Redone (their
 * work is taken as lost); when others did, it failed or waits before its
 * first step: Startup for the first attempt, Restart (Preempted when it
 * was preempted) for later ones.
 */
void ctrl_goodput_split(int64_t created_ms, int64_t end_ms, int ended,
			const struct db_goodput_attempt *a, size_t n,
			struct ctrl_goodput *out);

/* What ctrl_goodput_line() found in a line. */
#define CTRL_GOODPUT_STEP 1
#define CTRL_GOODPUT_CKPT 2

/*
 * Reads one log line for progress: "trainctl_step=N" anywhere (not
 * preceded by a name character), or a libtrainer metric line
 * "#metric <name>=<value> step=N" (trainer/trainer.h) gives *step; the
 * metric line "#metric trainctl_checkpoint_seconds=S step=N" gives
 * *ckpt_ms (S seconds) instead (a stall, not a step). Returns the
 * CTRL_GOODPUT_* bits found.
 */
int ctrl_goodput_line(const char *text, int64_t *step, int64_t *ckpt_ms);

/* Stores the progress that the lines of b report (controller/obs/logs.c). */
void ctrl_goodput_ingest(struct ctrl_ctx *ctx, const struct api_log_batch *b);

/*
 * job's split. A job that has not ended is taken up to now_ms, or with
 * now_ms 0 up to the last event the store knows of it (a state change,
 * an attempt's start or end, a step report), so that the figures change
 * only when the store does: Describe's answer stays the same between
 * writes, as its cache and the REST face's wait=/etag= expect. Returns
 * 0, ERR_NOTFOUND or ERR_DB with err.
 */
int ctrl_goodput_job(struct ctrl_ctx *ctx, const char *job, int64_t now_ms,
		     struct ctrl_goodput *out, struct buf *err);

/*
 * Appends {"TrainctlGoodput": {...}} for g (api/goodput.h) to out.
 * Returns 0 or ERR_NOMEM.
 */
int ctrl_goodput_json(const struct ctrl_goodput *g, struct buf *out);

/*
 * Appends the cluster's per-category counters to a /metrics page:
 * ended jobs are settled into the store's totals first (a bounded number
 * per call), then jobs that run or wait now are added as they stand.
 */
void ctrl_goodput_render(struct ctrl_ctx *ctx, struct buf *out);

#endif
