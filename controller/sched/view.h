#ifndef CTRL_SCHED_VIEW_H
#define CTRL_SCHED_VIEW_H

/*
 * The queues view (docs/queues.md, "Watching the queues"): what each
 * scheduling pass saw, per job queue, share and user: guarantee, hosts
 * in use, borrowed and lent per instance type, running and waiting jobs
 * with each waiting job's place and reason, and per share a bounded
 * series of those figures over time. GET /v1/queues, `trainctl queue`
 * and the page's queues view read it; a user key sees every share's
 * counts but the names of its own jobs only.
 *
 * The pass records a view on the reconciler's thread; the HTTP threads
 * answer from the latest one under a lock. Building a view and cutting
 * an answer from it are pure (tests/controller/test_sched_view.c).
 */
#include <stdint.h>

#include "api/queues_json.h"

struct ctrl_ctx;
struct ctrl_caller;
struct ctrl_response;
struct ctrl_sched_in;
struct ctrl_sched_out;

/* A job of the decision's input, as the view names it. */
struct ctrl_sched_view_job {
	const char *name;
	const char *owner; /* NULL: none */
	int placed;	   /* a queued job the pass started */
};

/* Samples kept per share, and how far apart (a 20-minute window). */
#define CTRL_SCHED_VIEW_SAMPLES 240
#define CTRL_SCHED_VIEW_INTERVAL_MS 5000
/* Waiting jobs listed per share (the rest are counted). */
#define CTRL_SCHED_VIEW_JOBS_MAX 100

/* One pass's view; it owns every string it points at. */
struct ctrl_sched_view;

/*
 * The view of one decision: in and out as ctrl_sched_decide() left them,
 * queued[in->n_queued] and running[in->n_running] naming their jobs. The
 * series of prev (NULL: none) go on: a share gets a sample when its last
 * is interval_ms old, and a share of prev with no job now stays, idle,
 * while it had one within the series' window. Nothing of the arguments
 * is kept. The caller frees the view with ctrl_sched_view_free().
 */
struct ctrl_sched_view *
ctrl_sched_view_build(const struct ctrl_sched_in *in,
		      const struct ctrl_sched_out *out,
		      const struct ctrl_sched_view_job *queued,
		      const struct ctrl_sched_view_job *running,
		      const struct ctrl_sched_view *prev, int64_t interval_ms);
void ctrl_sched_view_free(struct ctrl_sched_view *v);

/*
 * What who may see of v, in *ans: every queue (queue NULL) or the one
 * named. Another user's job has no name and no user, other users' counts
 * are one row with no user, and a share of the default queue (one per
 * owner) is nameless unless it is who's. *ans points into v and holds
 * arrays of its own: release it with ctrl_sched_view_answer_release()
 * before v is freed. Returns 0, or ERR_NOTFOUND when there is no such
 * queue (nothing to release then).
 */
int ctrl_sched_view_answer(const struct ctrl_sched_view *v,
			   const struct ctrl_caller *who, const char *queue,
			   struct api_queues *ans);
void ctrl_sched_view_answer_release(struct api_queues *ans);

/* Records the view of this pass as the latest (reconciler's thread). */
void ctrl_sched_view_record(const struct ctrl_sched_in *in,
			    const struct ctrl_sched_out *out,
			    const struct ctrl_sched_view_job *queued,
			    const struct ctrl_sched_view_job *running);

/*
 * GET /v1/queues (queue NULL) and GET /v1/queues/NAME: the latest view
 * as who may see it; a queue it does not hold is 404 ResourceNotFound.
 */
void ctrl_sched_view_route(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const char *queue, struct ctrl_response *resp);

#endif
