#define LOG_TAG "ctrl"

#include <stdlib.h>
#include <string.h>

#include "api/job_spec.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/job_state.h"
#include "controller/placement.h"
#include "controller/warmpool.h"
#include "db/db.h"
#include "db/run.h"
#include "db/warmpool.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* The longest period the service model allows. */
#define KEEP_ALIVE_MAX 21600

int64_t ctrl_warm_pool_billable_s(const struct db_job *j, int64_t now_ms)
{
	int64_t end;

	if (!j->wp_status || !j->wp_since_ms)
		return -1;
	end = j->wp_end_ms ? j->wp_end_ms : now_ms;
	return end > j->wp_since_ms ? (end - j->wp_since_ms) / 1000 : 0;
}

/*
 * Whether a pool may keep a host: it is known and neither lost, drained
 * nor removed. A host whose agent has not registered again since a
 * restart of the controller is kept until its deadline says it is lost.
 */
static int host_keepable(const struct ctrl_host *h)
{
	return h && !h->lost && !h->removed && !h->drained;
}

/*
 * SageMaker keeps the pool of a job that completed, that was stopped
 * after its hosts were given, or that failed through the algorithm or the
 * request (ClientError); an internal failure ends it.
 */
static int keeps_pool(const char *primary, const char *reason)
{
	if (!strcmp(primary, "Completed") || !strcmp(primary, "Stopped"))
		return 1;
	return !strcmp(primary, "Failed") && !ctrl_failure_internal(reason);
}

void ctrl_warm_pool_job_end(struct ctrl_ctx *ctx, const struct db_job *job,
			    int to, const char *reason,
			    const struct db_assignment *as, size_t n)
{
	const char **hosts = xcalloc(n + 1, sizeof(*hosts));
	struct buf err = BUF_INIT;
	size_t i, k = 0;
	int keep, ret;

	if (!job->wp_status || strcmp(job->wp_status, "InUse"))
		goto out;
	keep = job->keep_alive_s > 0 && n > 0 &&
	       keeps_pool(ctrl_job_state_primary((enum ctrl_job_state)to),
			  reason);
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; keep && i < n; i++) {
		const struct ctrl_host *h = ctrl_hosts_find(ctx, as[i].host);

		if (!host_keepable(h) || (size_t)as[i].host_index >= n)
			keep = 0;
		else
			hosts[as[i].host_index] = h->name;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	for (i = 0; keep && i < n; i++)
		k += hosts[i] != NULL;
	if (k != n)
		keep = 0;
	ret = db_warm_pool_end_job(ctx->db, job->name, hosts, keep ? n : 0,
				   time_now_ms(), &err);
	if (ret && ret != ERR_CONFLICT)
		log_error("job '%s': warm pool: %s", job->name, err.data);
	else if (!ret && keep)
		log_info("job '%s': warm pool Available on %zu host%s for %d s",
			 job->name, n, n == 1 ? "" : "s", job->keep_alive_s);
	else if (!ret)
		log_info("job '%s': warm pool Terminated", job->name);
out:
	free(hosts);
	buf_release(&err);
}

/* Why an Available pool must end now, or NULL. Caller holds hosts_lock. */
static const char *pool_ends(struct ctrl_ctx *ctx, const struct db_warm_pool *p,
			     int64_t now_ms)
{
	size_t i;

	if (now_ms >= p->since_ms + (int64_t)p->keep_alive_s * 1000)
		return "its keep-alive period ran out";
	if (!p->n_hosts)
		return "it holds no host";
	for (i = 0; i < p->n_hosts; i++)
		if (!host_keepable(ctrl_hosts_find(ctx, p->hosts[i])))
			return "a host of it was lost, drained or removed";
	return NULL;
}

int ctrl_warm_pool_tick(struct ctrl_ctx *ctx)
{
	struct db_warm_pool *pools = NULL;
	struct buf err = BUF_INIT;
	const char **why = NULL;
	int64_t now = time_now_ms();
	size_t i, n = 0;
	int ended = 0;

	if (db_warm_pools_available(ctx->db, &pools, &n, &err)) {
		log_error("reconciler: %s", err.data);
		goto out;
	}
	if (!n)
		goto out;
	why = xcalloc(n, sizeof(*why));
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < n; i++)
		why[i] = pool_ends(ctx, &pools[i], now);
	pthread_mutex_unlock(&ctx->hosts_lock);
	for (i = 0; i < n; i++) {
		if (!why[i])
			continue;
		buf_reset(&err);
		if (db_warm_pool_terminate(ctx->db, pools[i].job, now, &err))
			continue; /* reused or ended meanwhile */
		log_info("job '%s': warm pool Terminated: %s", pools[i].job,
			 why[i]);
		ended++;
	}
	if (ended) {
		__atomic_store_n(&ctx->hosts_freed, 1, __ATOMIC_RELAXED);
		ctrl_jobs_changed(ctx);
		ctrl_reconciler_wake(ctx);
	}
out:
	free(why);
	db_warm_pools_free(pools, n);
	buf_release(&err);
	return ended;
}

int ctrl_warm_pool_set_keep_alive(struct ctrl_ctx *ctx, const char *name,
				  int seconds, struct buf *err)
{
	struct db_job job;
	struct buf req = BUF_INIT;
	const char *expect;
	int ret;

	if (seconds < 0 || seconds > KEEP_ALIVE_MAX) {
		(void)buf_addf(err,
			       "1 validation error detected: Value '%d' at "
			       "'resourceConfig.keepAlivePeriodInSeconds' "
			       "failed to satisfy constraint: Member must have "
			       "value %s than or equal to %d",
			       seconds, seconds < 0 ? "greater" : "less",
			       seconds < 0 ? 0 : KEEP_ALIVE_MAX);
		return ERR_INVALID;
	}
	ret = db_job_get(ctx->db, name, &job, err);
	if (ret)
		return ret;
	if (!job.wp_status) {
		(void)buf_addf(err,
			       "Training job %s was not created with a "
			       "KeepAlivePeriodInSeconds: it has no warm pool "
			       "to update",
			       name);
		ret = ERR_INVALID;
		goto out;
	}
	if (!strcmp(job.wp_status, "InUse") &&
	    !strcmp(job.status, "InProgress")) {
		expect = "InUse";
	} else if (!strcmp(job.wp_status, "Available")) {
		expect = "Available";
	} else {
		(void)buf_addf(err,
			       "The keep-alive period of training job %s "
			       "cannot be updated: the job is %s and its warm "
			       "pool %s",
			       name, job.status, job.wp_status);
		ret = ERR_INVALID;
		goto out;
	}
	if (api_request_set_keep_alive(job.request_json, seconds, &req)) {
		(void)buf_adds(err, "stored request is corrupt");
		ret = ERR_INTERNAL;
		goto out;
	}
	ret = db_warm_pool_set_keep_alive(ctx->db, job.name, expect, seconds,
					  req.data, time_now_ms(), err);
	if (ret == ERR_CONFLICT)
		(void)buf_addf(err,
			       "The warm pool of training job %s changed "
			       "state meanwhile; try again",
			       name);
	if (ret)
		goto out;
	log_info("job '%s': keep-alive period set to %d s%s", job.name, seconds,
		 !seconds && !strcmp(expect, "Available") ?
			 ": warm pool Terminated" :
			 "");
	if (!strcmp(expect, "Available")) {
		/* A shorter period may end it now, 0 has: look again. */
		__atomic_store_n(&ctx->hosts_freed, 1, __ATOMIC_RELAXED);
		ctrl_reconciler_wake(ctx);
	}
	ctrl_jobs_changed(ctx);
out:
	db_job_release(&job);
	buf_release(&req);
	return ret;
}
