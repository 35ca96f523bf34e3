/*
 * Planned moves (controller/moves.h): a job's attempt ends without
 * spending a retry and the next one starts elsewhere or larger: off
 * drained hosts, off a host that failed its infrastructure checks, and an
 * elastic job growing back to its instance count.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctrl.h"
#include "controller/elastic.h"
#include "controller/hosts.h"
#include "controller/job_state.h"
#include "controller/jobrt.h"
#include "controller/jobrun.h"
#include "controller/moves.h"
#include "controller/placement.h"
#include "controller/plan.h"
#include "db/db.h"
#include "db/run.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Ends job's attempt as a planned move (no retry spent); 0 on error. */
static int end_as_move(struct ctrl_ctx *ctx, const struct db_job *job,
		       const char *msg)
{
	struct buf err = BUF_INIT;
	int ok = !db_attempt_end(ctx->db, job->name, job->attempt, msg,
				 time_now_ms(), &err) &&
		 !db_attempt_set_planned(ctx->db, job->name, job->attempt,
					 DB_ATTEMPT_MOVED, &err);

	if (!ok)
		log_error("job '%s': %s", job->name, err.data);
	buf_release(&err);
	return ok;
}

/* The job goes Restarting for its move, message saying why. */
static void restarting_for_move(struct ctrl_ctx *ctx, const struct db_job *job,
				enum ctrl_job_state cur, const char *msg)
{
	struct buf err = BUF_INIT;

	if (ctrl_job_transition(ctx, job->name, cur, CTRL_JOB_RESTARTING, msg,
				NULL, &err))
		log_error("job '%s': %s", job->name, err.data);
	log_info("job '%s': %s", job->name, msg);
	buf_release(&err);
}

/* A planned move begins: the attempt ends (no retry spent), its ranks
 * stop (a checkpoint now, SIGTERM, the grace period) and the job goes
 * Restarting. Returns 1 when it began. */
static int begin_move(struct ctrl_ctx *ctx, const struct db_job *job,
		      enum ctrl_job_state cur, const struct db_assignment *as,
		      size_t n, const char *msg)
{
	if (!end_as_move(ctx, job, msg))
		return 0;
	ctrl_job_set_actions(ctx, job, as, n, "stop");
	restarting_for_move(ctx, job, cur, msg);
	return 1;
}

/*
 * A job with a host that was drained moves, when a free host can take
 * each of its drained places: its attempt stops (SIGTERM, the grace
 * period, a last checkpoint sync, as Stop does) and the next one starts
 * on the spares, as a planned move that spends no retry. With no spare
 * free the job trains on where it is (the host shows "draining") and
 * moves once one is. Returns 1 when the move began.
 */
int ctrl_move_off_drained(struct ctrl_ctx *ctx, const struct db_job *job,
			  enum ctrl_job_state cur,
			  const struct db_assignment *as, size_t n)
{
	const char **chosen = xcalloc(n + 1, sizeof(*chosen));
	struct buf msg = BUF_INIT, err = BUF_INIT, names = BUF_INIT;
	struct ctrl_jobrt *rt;
	size_t i, drained = 0, found = 0;
	int ret = 0;

	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < n; i++) {
		const struct ctrl_host *h = ctrl_hosts_find(ctx, as[i].host);

		if (!h || !h->drained || !ctrl_place_host_live(h) ||
		    (size_t)as[i].host_index >= n)
			continue;
		drained++;
		chosen[as[i].host_index] =
			ctrl_place_spare(ctx, rt, as[i].host_index, chosen, n);
		found += chosen[as[i].host_index] != NULL;
		(void)buf_addf(&names, "%s'%s' (algo-%d)",
			       names.len ? ", " : "", h->name,
			       as[i].host_index + 1);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	pthread_mutex_unlock(&ctx->jobs_lock);
	if (!drained || found < drained ||
	    !ctrl_job_transition_allowed(cur, CTRL_JOB_RESTARTING))
		goto out;
	(void)buf_addf(&msg,
		       "Planned move: host %s drained. Stopping attempt %d "
		       "(SIGTERM, then its last checkpoint) to start attempt "
		       "%d on another host; no retry spent",
		       names.data, job->attempt, job->attempt + 1);
	ret = begin_move(ctx, job, cur, as, n, msg.data);
out:
	free(chosen);
	buf_release(&msg);
	buf_release(&err);
	buf_release(&names);
	return ret;
}

/*
 * An elastic job training on fewer hosts than it asked for, now that
 * enough are free: a planned move whose next attempt fills every place
 * (controller/elastic.c). Returns 1 when it began.
 */
int ctrl_move_grow_back(struct ctrl_ctx *ctx, const struct db_job *job,
			enum ctrl_job_state cur, const struct db_assignment *as,
			size_t n)
{
	struct buf msg = BUF_INIT;
	int want, ret = 0;

	if (!ctrl_elastic_can_grow(ctx, job, n, &want) ||
	    !ctrl_job_transition_allowed(cur, CTRL_JOB_RESTARTING))
		return 0;
	(void)buf_addf(&msg,
		       "Elastic: %d hosts are free again. Stopping attempt %d "
		       "on %zu hosts (a checkpoint now, then SIGTERM) to "
		       "start attempt %d on all %d; no retry spent",
		       want - (int)n, job->attempt, n, job->attempt + 1, want);
	ret = begin_move(ctx, job, cur, as, n, msg.data);
	buf_release(&msg);
	return ret;
}

/*
 * A host failed its infrastructure checks (s->check_failed) before the
 * program started: it is drained with the reason, and the attempt ends
 * as a planned move that spends no retry, the next one on a spare in
 * its place. Returns 0 when no spare is free: then it is an ordinary
 * failure (retried on the same hosts while retries last).
 */
int ctrl_move_replace_failed_check(struct ctrl_ctx *ctx,
				   const struct db_job *job,
				   enum ctrl_job_state cur,
				   const struct ctrl_plan_summary *s,
				   const struct db_assignment *as, size_t n)
{
	const char **chosen = xcalloc(n + 1, sizeof(*chosen));
	const struct db_assignment *bad = NULL;
	struct buf msg = BUF_INIT, err = BUF_INIT;
	const char *spare = NULL, *why;
	size_t i;
	int ret = 0;

	for (i = 0; i < n; i++) {
		if ((size_t)as[i].host_index < n)
			chosen[as[i].host_index] = as[i].host;
		if (as[i].host_index + 1 == s->check_failed)
			bad = &as[i];
	}
	if (bad) {
		pthread_mutex_lock(&ctx->jobs_lock);
		pthread_mutex_lock(&ctx->hosts_lock);
		spare = ctrl_place_spare(ctx, ctrl_jobrt_get(ctx, job->name),
					 bad->host_index, chosen, n);
		pthread_mutex_unlock(&ctx->hosts_lock);
		pthread_mutex_unlock(&ctx->jobs_lock);
	}
	if (!spare)
		goto out;
	/* "InternalServerError: Infrastructure check failed on ..." */
	why = strstr(s->reason.data, "Infrastructure");
	(void)buf_addf(&msg, "%s; replaced by %s", why ? why : s->reason.data,
		       spare);
	if (db_host_drain_set(ctx->db, bad->host, why, time_now_ms(), &err)) {
		log_error("job '%s': %s", job->name, err.data);
		goto out;
	}
	if (end_as_move(ctx, job, msg.data)) {
		ctrl_hosts_load_drains(ctx);
		restarting_for_move(ctx, job, cur, msg.data);
		ret = 1;
	}
out:
	free(chosen);
	buf_release(&msg);
	buf_release(&err);
	return ret;
}
