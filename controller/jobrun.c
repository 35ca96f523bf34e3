#define LOG_TAG "ctrl"

#include <stdlib.h>
#include <string.h>

#include "api/distribution.h"
#include "api/agent_proto.h"
#include "controller/rendezvous.h"
#include "controller/artifacts.h"
#include "controller/ctrl.h"
#include "controller/elastic.h"
#include "controller/hosts.h"
#include "controller/jobrt.h"
#include "controller/job_state.h"
#include "controller/jobrun.h"
#include "controller/moves.h"
#include "controller/netcheck.h"
#include "controller/obs/logs.h"
#include "controller/obs/rulerun.h"
#include "controller/placement.h"
#include "controller/plan.h"
#include "controller/quarantine.h"
#include "controller/sched/pass.h"
#include "controller/wake.h"
#include "controller/warmpool.h"
#include "db/warmpool.h"
#include "db/db.h"
#include "db/run.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

static int job_is_mpi(const struct api_job_spec *spec)
{
	return api_hp_true(api_job_spec_hp(spec, "sagemaker_mpi_enabled"));
}

static void bump_hosts(struct ctrl_ctx *ctx, const struct db_assignment *as,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		ctrl_hosts_bump(ctx, as[i].host);
}

/*
 * When hosts' model files collided as they were merged: the controller's
 * log, the job's (algo-1's stream) and the end's transition say so. The
 * message is message with the warning after it, in warn (which the
 * caller releases).
 */
static const char *model_warning(struct ctrl_ctx *ctx, const struct db_job *job,
				 const char *message, struct buf *warn)
{
	struct buf note = BUF_INIT;

	log_warn("job '%s': %s", job->name, warn->data);
	(void)buf_addf(&note, "trainctl: warning: %s", warn->data);
	ctrl_logs_note(ctx, job->name, job->attempt, note.data);
	buf_reset(&note);
	(void)buf_addf(&note, "%s. Warning: %s", message, warn->data);
	buf_reset(warn);
	(void)buf_add(warn, note.data, note.len);
	buf_release(&note);
	return warn->data;
}

static void finish(struct ctrl_ctx *ctx, const struct db_job *job,
		   enum ctrl_job_state from, enum ctrl_job_state to,
		   const char *message, const char *reason,
		   const struct db_assignment *as, size_t n, int upload);

static int host_lost(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_host *h;
	int lost;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, name);
	lost = !h || h->lost;
	pthread_mutex_unlock(&ctx->hosts_lock);
	return lost;
}

static const char *default_message(enum ctrl_job_state s, int container)
{
	switch (s) {
	case CTRL_JOB_DOWNLOADING:
		return container ? "Downloading the training image" :
				   "Downloading input data";
	case CTRL_JOB_TRAINING:
		return "Training image download completed. Training in "
		       "progress.";
	case CTRL_JOB_UPLOADING:
		return "Uploading generated training model";
	default:
		return NULL;
	}
}

/*
 * Walks the job forward along Starting -> [Downloading ->] Training ->
 * Uploading until it reaches to (a quick job may pass several states
 * between two looks).
 */
static void advance(struct ctrl_ctx *ctx, const char *name,
		    enum ctrl_job_state *cur, enum ctrl_job_state to,
		    const struct ctrl_plan_summary *s)
{
	struct buf err = BUF_INIT, msg = BUF_INIT;
	struct ctrl_jobrt *rt;
	int container;

	/* A pinned image is a container's (placement.c). */
	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, name);
	container = rt && rt->image;
	pthread_mutex_unlock(&ctx->jobs_lock);
	while (*cur != to) {
		enum ctrl_job_state next;

		if (*cur == CTRL_JOB_STARTING && to == CTRL_JOB_DOWNLOADING)
			next = CTRL_JOB_DOWNLOADING;
		else if (*cur == CTRL_JOB_STARTING ||
			 *cur == CTRL_JOB_DOWNLOADING)
			next = CTRL_JOB_TRAINING;
		else if (*cur == CTRL_JOB_TRAINING)
			next = CTRL_JOB_UPLOADING;
		else
			break;
		if (next > to)
			break;
		buf_reset(&msg);
		/* Every host runs: every host passed its checks, if any. */
		if (next == CTRL_JOB_TRAINING && s->n && s->checked == s->n)
			(void)buf_addf(&msg,
				       "Infrastructure checks passed on %zu "
				       "host%s in %.1f s. ",
				       s->n, s->n == 1 ? "" : "s",
				       (double)s->check_ms / 1000.0);
		if (next == CTRL_JOB_TRAINING && s->n && s->checked == s->n &&
		    s->net_hosts)
			(void)buf_addf(&msg,
				       "Network: round trip %.2f ms, %lld "
				       "Mbit/s (the hosts' median). ",
				       (double)s->net_rtt_us / 1000.0,
				       (long long)s->net_mbps);
		(void)buf_adds(&msg, default_message(next, container));
		/* Script mode: which Python and framework really run. */
		if (next == CTRL_JOB_TRAINING && s->runtime.len)
			(void)buf_addf(&msg, " %s", s->runtime.data);
		if (ctrl_job_transition(ctx, name, *cur, next, msg.data, NULL,
					&err))
			break;
		*cur = next;
	}
	buf_release(&err);
	buf_release(&msg);
}

static void cleanup(struct ctrl_ctx *ctx, const struct db_job *job,
		    const struct db_assignment *as, size_t n)
{
	const char *name = job->name;
	struct buf err = BUF_INIT;

	if (db_assignments_delete(ctx->db, name, 0, &err))
		log_error("job '%s': %s", name, err.data);
	/* Its hosts are free: the queue gets a look (and busy marks are
	 * read again before anything is picked). */
	__atomic_store_n(&ctx->hosts_freed, 1, __ATOMIC_RELAXED);
	bump_hosts(ctx, as, n);
	ctrl_jobrt_drop(ctx, name);
	ctrl_rdzv_forget(ctx, name, job->uid, job->attempt);
	buf_release(&err);
}

static void finish(struct ctrl_ctx *ctx, const struct db_job *job,
		   enum ctrl_job_state from, enum ctrl_job_state to,
		   const char *message, const char *reason,
		   const struct db_assignment *as, size_t n, int upload)
{
	struct buf err = BUF_INIT;
	struct buf warn = BUF_INIT;
	char *model = NULL;
	struct ctrl_jobrt *rt;
	char *output_path = NULL;
	int uncompressed = 0;
	int stored;

	if (upload) {
		pthread_mutex_lock(&ctx->jobs_lock);
		rt = ctrl_jobrt_get(ctx, job->name);
		if (rt) {
			output_path = xstrdup(rt->spec.output_path);
			uncompressed = rt->spec.model_uncompressed;
		}
		pthread_mutex_unlock(&ctx->jobs_lock);
		if (!output_path)
			stored = 0;
		else if (uncompressed)
			stored = ctrl_artifacts_store_files(ctx, job->name,
							    job->attempt, as, n,
							    output_path, &model,
							    &warn, &err);
		else
			stored = ctrl_artifacts_collect(ctx, job->name,
							job->attempt, as, n,
							output_path,
							"model.tar.gz", &model,
							&warn, &err);
		if (stored) {
			log_error("job '%s': cannot store the model: %s",
				  job->name, err.data);
			if (to == CTRL_JOB_COMPLETED) {
				struct buf why = BUF_INIT;

				to = CTRL_JOB_FAILED;
				message = "Training job failed";
				(void)buf_addf(&why,
					       "ClientError: could not "
					       "store the model: %s",
					       err.data);
				buf_reset(&err);
				(void)buf_add(&err, why.data,
					      why.len > CTRL_REASON_MAX ?
						      CTRL_REASON_MAX :
						      why.len);
				buf_release(&why);
				reason = err.data;
			}
		}
		if (output_path) {
			struct buf e2 = BUF_INIT;

			if (ctrl_artifacts_collect(ctx, job->name, job->attempt,
						   as, n, output_path,
						   "output.tar.gz", NULL, NULL,
						   &e2))
				log_warn("job '%s': cannot store output: %s",
					 job->name, e2.data);
			buf_release(&e2);
		}
	}
	if (warn.len)
		message = model_warning(ctx, job, message, &warn);
	if (ctrl_job_end(ctx, job->name, from, to, message, reason,
			 to == CTRL_JOB_FAILED ? NULL : model, &err)) {
		log_error("job '%s': %s", job->name, err.data);
		goto out;
	}
	(void)db_attempt_end(ctx->db, job->name, job->attempt,
			     reason ? reason : ctrl_job_state_secondary(to),
			     time_now_ms(), &err);
	ctrl_warm_pool_job_end(ctx, job, (int)to, reason, as, n);
	if (job->rule_statuses)
		ctrl_rules_job_end(ctx, job->name,
				   to != CTRL_JOB_COMPLETED &&
					   to != CTRL_JOB_FAILED);
	cleanup(ctx, job, as, n);
out:
	free(model);
	free(output_path);
	buf_release(&err);
	buf_release(&warn);
}

void ctrl_job_set_actions(struct ctrl_ctx *ctx, const struct db_job *job,
			  const struct db_assignment *as, size_t n,
			  const char *action)
{
	struct buf err = BUF_INIT;
	size_t i;
	int change = 0;

	for (i = 0; i < n; i++)
		change |= strcmp(as[i].action, action) != 0;
	if (!change)
		return;
	if (db_assignments_set_action(ctx->db, job->name, job->attempt, action,
				      &err))
		log_error("job '%s': %s", job->name, err.data);
	bump_hosts(ctx, as, n);
	buf_release(&err);
}

/* Every host of a stopping attempt has uploaded, failed or is gone. */
static int all_settled(const struct db_assignment *as, const int *lost,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(as[i].phase, "done") &&
		    strcmp(as[i].phase, "error") && !lost[i])
			return 0;
	return 1;
}

/* Restarts of a failed attempt the job may still make. */
static int retries_left(struct ctrl_ctx *ctx, const struct db_job *job)
{
	struct ctrl_jobrt *rt;
	struct buf err = BUF_INIT;
	int budget = ctx->cfg.max_retries, planned = 0;

	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	if (rt && rt->spec.max_retry_attempts > 0)
		budget = rt->spec.max_retry_attempts;
	pthread_mutex_unlock(&ctx->jobs_lock);
	/* Planned moves off drained hosts spend no retry. */
	(void)db_job_planned_moves(ctx->db, job->name, &planned, &err);
	buf_release(&err);
	return budget - (job->attempt - 1 - planned);
}

/*
 * A failure worth another attempt: not a mistake in the request. SageMaker
 * retries InternalServerError only; by default trainctl also retries the
 * algorithm's failures (a dead rank, a killed process), which is what
 * makes checkpoints and retries a fault-tolerance tool here.
 */
static int retryable(const struct ctrl_ctx *ctx, const char *reason)
{
	if (ctx->cfg.retry_sagemaker)
		return ctrl_failure_internal(reason);
	return !reason || strncmp(reason, "ClientError", 11);
}

/*
 * Attempt N failed and the job has restarts left: every process of the
 * attempt is killed at once (abort: no waiting for collectives to time
 * out, nothing uploaded; the agents still push their last complete
 * checkpoints) and the job moves to Restarting.
 */
static void begin_restart(struct ctrl_ctx *ctx, const struct db_job *job,
			  enum ctrl_job_state cur,
			  const struct ctrl_plan_summary *s,
			  const char *message, int elastic)
{
	struct buf err = BUF_INIT;

	(void)db_attempt_end(ctx->db, job->name, job->attempt, s->reason.data,
			     time_now_ms(), &err);
	/* An elastic job's lost host spends no retry. */
	if (elastic && db_attempt_set_planned(ctx->db, job->name, job->attempt,
					      DB_ATTEMPT_ELASTIC, &err))
		log_error("job '%s': %s", job->name, err.data);
	if (ctrl_job_transition(ctx, job->name, cur, CTRL_JOB_RESTARTING,
				message, NULL, &err))
		log_error("job '%s': %s", job->name, err.data);
	buf_release(&err);
}

/*
 * Attempt N+1 started on chosen[0..n): when none is the host attempt N's
 * failure was laid at, the job left that host, and how it fares from now
 * on tells whether the host was to blame (controller/quarantine.c).
 */
static void note_left(struct ctrl_ctx *ctx, const struct db_job *job,
		      const char **chosen, size_t n)
{
	struct buf err = BUF_INIT;
	char *suspect = NULL;
	size_t i;

	if (db_attempt_failed_host(ctx->db, job->name, job->attempt, &suspect,
				   &err) ||
	    !suspect)
		goto out;
	for (i = 0; i < n; i++)
		if (chosen[i] && !strcmp(chosen[i], suspect))
			goto out;
	if (db_attempt_set_failed_host_left(ctx->db, job->name, job->attempt,
					    &err))
		log_error("job '%s': %s", job->name, err.data);
out:
	free(suspect);
	buf_release(&err);
}

/*
 * Restarting, settled, a host for every place (or, for an elastic job,
 * for at least its minimum of them): attempt N+1 starts.
 */
static void start_next_attempt(struct ctrl_ctx *ctx, const struct db_job *job,
			       const struct db_assignment *as, size_t n,
			       const char **chosen, int *busy_valid)
{
	struct buf err = BUF_INIT, msg = BUF_INIT;
	size_t slots = ctrl_elastic_slots(ctx, job, n);
	size_t m = ctrl_elastic_compact(chosen, slots), i;

	if (db_assignments_delete(ctx->db, job->name, job->attempt, &err) ||
	    db_attempt_start(ctx->db, job->name, job->attempt + 1,
			     ctrl_place_ports(2 * (int)m + 2), chosen, m,
			     time_now_ms(), &err)) {
		log_error("job '%s': cannot start attempt %d: %s", job->name,
			  job->attempt + 1, err.data);
		goto out;
	}
	note_left(ctx, job, chosen, m);
	bump_hosts(ctx, as, n);
	for (i = 0; i < m; i++)
		ctrl_hosts_bump(ctx, chosen[i]);
	ctrl_rdzv_forget(ctx, job->name, job->uid, job->attempt);
	(void)buf_addf(&msg, "Starting attempt %d of the training job",
		       job->attempt + 1);
	if (m < (size_t)job->instance_count)
		(void)buf_addf(&msg,
			       " on %zu of its %d hosts (elastic: no spare "
			       "was free)",
			       m, job->instance_count);
	if (ctrl_job_transition(ctx, job->name, CTRL_JOB_RESTARTING,
				CTRL_JOB_STARTING, msg.data, NULL, &err))
		log_error("job '%s': %s", job->name, err.data);
	log_info("job '%s': attempt %d on %zu host%s", job->name,
		 job->attempt + 1, m, m == 1 ? "" : "s");
	/* Hosts left behind are free, the new ones busy. */
	*busy_valid = 0;
	__atomic_store_n(&ctx->hosts_freed, 1, __ATOMIC_RELAXED);
out:
	buf_release(&err);
	buf_release(&msg);
}

/*
 * Every host of the attempt passed its infrastructure checks: their agents
 * hold the program until they hear it (controller/work.c), once.
 */
static void release_checked(struct ctrl_ctx *ctx, const struct db_job *job,
			    const struct ctrl_plan_summary *s,
			    const struct db_assignment *as, size_t n)
{
	struct ctrl_jobrt *rt;
	int tell = 0;

	if (!s->n || s->checked < s->n || s->check_failed)
		return;
	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	if (rt && rt->checks_released != job->attempt) {
		rt->checks_released = job->attempt;
		tell = 1;
	}
	pthread_mutex_unlock(&ctx->jobs_lock);
	if (tell)
		bump_hosts(ctx, as, n);
}

/*
 * Every host passed its own checks: the network part is judged across
 * them (controller/netcheck.h), and a host far from the others fails
 * the attempt's checks as if its own had failed.
 */
static void judge_network(struct ctrl_ctx *ctx, const struct db_assignment *as,
			  size_t n, struct ctrl_plan_summary *s)
{
	struct ctrl_net_limits lim;
	struct ctrl_net_median med;
	struct buf why = BUF_INIT;
	int k;
	size_t i;

	if (s->failed || s->n < 2 || s->checked < s->n || !ctx->cfg.infra_net)
		return;
	ctrl_netcheck_limits(&ctx->cfg, &lim);
	k = ctrl_netcheck_verdict(as, n, &lim, &med, &why);
	s->net_hosts = med.hosts;
	s->net_rtt_us = med.rtt_us;
	s->net_mbps = med.mbps;
	for (i = 0; k && i < n; i++) {
		if (as[i].host_index + 1 != k)
			continue;
		s->failed = 1;
		s->check_failed = k;
		s->culprit = as[i].host;
		buf_reset(&s->reason);
		(void)buf_addf(&s->reason,
			       "InternalServerError: Infrastructure check "
			       "failed on algo-%d (host %s): network: %s",
			       k, as[i].host, why.data);
	}
	buf_release(&why);
}

/*
 * Whether the job ran longer than MaxRuntimeInSeconds: from its first
 * start, less the time it waited in the queue after preemptions (a
 * requeued job gets back what it had not used, as Slurm's requeue does).
 */
static int runtime_exceeded(struct ctrl_ctx *ctx, const struct db_job *job,
			    int64_t max_ms)
{
	int64_t now = time_now_ms(), away = 0;
	struct buf err = BUF_INIT;

	if (!job->start_ms || !max_ms || now - job->start_ms <= max_ms)
		return 0;
	if (db_job_requeued_ms(ctx->db, job->name, now, &away, &err))
		log_error("job '%s': %s", job->name, err.data);
	buf_release(&err);
	return now - job->start_ms - away > max_ms;
}

/*
 * What ctrl_plan() needs about job's current attempt (attempt > 0): its
 * reports added up, its hosts, its clock and its retry budget. chosen
 * gets the next attempt's hosts when the job is restarting and settled.
 */
static void gather(struct ctrl_ctx *ctx, const struct db_job *job,
		   const struct db_assignment *as, size_t n,
		   struct ctrl_plan_summary *s, const char **chosen,
		   int *busy_valid, struct ctrl_plan_in *in)
{
	struct buf err = BUF_INIT;
	struct ctrl_jobrt *rt;
	int64_t max_ms = 0;
	int *lost = xcalloc(n + 1, sizeof(*lost));
	int stop_on_stall = 0, fixed;
	int mpi;
	size_t i;

	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	mpi = rt && job_is_mpi(&rt->spec);
	in->elastic_min = rt ? rt->spec.min_instances : 0;
	if (rt)
		max_ms = rt->spec.max_runtime_s * 1000;
	if (rt)
		(void)ctrl_rules_hang_ms(&rt->spec, 0, &stop_on_stall, &fixed);
	pthread_mutex_unlock(&ctx->jobs_lock);
	for (i = 0; i < n; i++)
		lost[i] = host_lost(ctx, as[i].host);
	ctrl_plan_summarize(as, lost, n, mpi, s);
	judge_network(ctx, as, n, s);
	in->s = s;
	in->settled = all_settled(as, lost, n);
	free(lost);
	in->runtime_exceeded = runtime_exceeded(ctx, job, max_ms);
	in->any_drained = ctrl_place_any_drained(ctx, as, n);
	in->stop_on_stall = stop_on_stall;
	if (s->failed) {
		in->retryable = retryable(ctx, s->reason.data);
		in->retries_left = retries_left(ctx, job);
	}
	if (in->cur == CTRL_JOB_RESTARTING) {
		(void)db_attempt_planned(ctx->db, job->name, job->attempt,
					 &in->planned_move, &err);
		if (in->settled) {
			char *suspect = NULL;

			/* The next attempt avoids the host this one failed
			 * on, when another is free. */
			(void)db_attempt_failed_host(ctx->db, job->name,
						     job->attempt, &suspect,
						     &err);
			ctrl_place_busy_refresh(ctx, busy_valid);
			in->slots = ctrl_elastic_slots(ctx, job, n);
			in->restart_missing = ctrl_place_replacements(
				ctx, job, as, n, in->slots, suspect, chosen);
			free(suspect);
		}
		in->restart_wait_over = time_now_ms() - job->last_modified_ms >
					ctx->cfg.restart_wait_ms;
		in->restart_wait_s = ctx->cfg.restart_wait_ms / 1000;
		in->elastic_wait_over = time_now_ms() - job->last_modified_ms >
					ctx->cfg.elastic_wait_ms;
	}
	buf_release(&err);
}

/*
 * A preempted attempt has settled (its ranks stopped after the grace
 * period, its last checkpoint mirrored): its hosts are free and the job
 * waits in the queue again; placed, it starts attempt N+1, which restores
 * that checkpoint. The attempt spent no retry (db_attempt_set_planned()).
 */
static void requeue(struct ctrl_ctx *ctx, const struct db_job *job,
		    const struct db_assignment *as, size_t n)
{
	struct buf err = BUF_INIT, msg = BUF_INIT;

	if (db_assignments_delete(ctx->db, job->name, job->attempt, &err)) {
		log_error("job '%s': %s", job->name, err.data);
		goto out;
	}
	__atomic_store_n(&ctx->hosts_freed, 1, __ATOMIC_RELAXED);
	bump_hosts(ctx, as, n);
	ctrl_rdzv_forget(ctx, job->name, job->uid, job->attempt);
	(void)buf_addf(&msg,
		       "Preempted attempt %d ended with its last checkpoint "
		       "saved; waiting in the queue for hosts again",
		       job->attempt);
	if (ctrl_job_transition(ctx, job->name, CTRL_JOB_INTERRUPTED,
				CTRL_JOB_STARTING, msg.data, NULL, &err))
		log_error("job '%s': %s", job->name, err.data);
	log_info("job '%s': %s", job->name, msg.data);
out:
	buf_release(&err);
	buf_release(&msg);
}

int ctrl_job_preempt(struct ctrl_ctx *ctx, const char *name, const char *why,
		     struct buf *err)
{
	struct db_assignment *as = NULL;
	struct buf msg = BUF_INIT;
	enum ctrl_job_state cur;
	struct db_job job;
	size_t n = 0;
	int ret;

	ret = db_job_get(ctx->db, name, &job, err);
	if (ret)
		return ret;
	ret = ctrl_job_state_parse(job.secondary_status, &cur);
	if (!ret && job.attempt > 0)
		ret = db_assignments_list(ctx->db, name, NULL, job.attempt, &as,
					  &n, err);
	if (ret)
		goto out;
	if (!n || !ctrl_job_transition_allowed(cur, CTRL_JOB_INTERRUPTED)) {
		(void)buf_addf(err,
			       "The training job is not running (%s): only a "
			       "job that holds hosts and is not uploading can "
			       "be preempted.",
			       job.secondary_status);
		ret = ERR_INVALID;
		goto out;
	}
	(void)buf_addf(&msg,
		       "Preempted: %s. Stopping attempt %d (SIGTERM, the grace "
		       "period, then its last checkpoint); the job waits in "
		       "the queue again and spends no retry",
		       why, job.attempt);
	ret = db_attempt_end(ctx->db, name, job.attempt, msg.data,
			     time_now_ms(), err);
	if (!ret)
		ret = db_attempt_set_planned(ctx->db, name, job.attempt,
					     DB_ATTEMPT_PREEMPTED, err);
	if (!ret)
		ret = ctrl_job_transition(ctx, name, cur, CTRL_JOB_INTERRUPTED,
					  msg.data, NULL, err);
	if (ret)
		goto out;
	/* The reconciler tells the ranks to stop (plan_interrupted()). */
	ctrl_reconciler_wake_job(ctx, name);
	log_info("job '%s': %s", name, msg.data);
out:
	db_assignments_free(as, n);
	db_job_release(&job);
	buf_release(&msg);
	return ret;
}

static int pool_matches(const struct db_warm_pool *pools, size_t n,
			const char *key);

/*
 * Whether the scheduler places job: one instance type, and no Available
 * warm pool made for it (placement.c gives it that pool's hosts).
 */
static int sched_owns(struct ctrl_ctx *ctx, const struct db_job *job)
{
	struct db_warm_pool *pools = NULL;
	struct buf err = BUF_INIT;
	struct ctrl_jobrt *rt;
	size_t n = 0;
	int owns;

	if (job->attempt == 0 && job->wp_key && job->wp_status &&
	    !strcmp(job->wp_status, "InUse") &&
	    !db_warm_pools_available(ctx->db, &pools, &n, &err)) {
		owns = !pool_matches(pools, n, job->wp_key);
		db_warm_pools_free(pools, n);
		if (!owns)
			return 0;
	}
	buf_release(&err);
	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	owns = rt && ctrl_sched_owns(&rt->spec);
	pthread_mutex_unlock(&ctx->jobs_lock);
	return owns;
}

void ctrl_job_place(struct ctrl_ctx *ctx, const char *name,
		    const char *const *hosts, size_t n, int *busy_valid)
{
	struct buf err = BUF_INIT;
	enum ctrl_job_state cur;
	struct db_job job;

	if (db_job_get(ctx->db, name, &job, &err))
		goto out;
	if (!ctrl_job_state_parse(job.secondary_status, &cur) &&
	    ctrl_place_job_on(ctx, &job, hosts, n, busy_valid, &err))
		finish(ctx, &job, cur, CTRL_JOB_FAILED, "Training job failed",
		       err.data, NULL, 0, 0);
	db_job_release(&job);
out:
	buf_release(&err);
}

/*
 * A job that arrived while no host of its kind is free says so at once;
 * the scheduler's next pass gives it its place in the queue (a message
 * of the scheduler's is left alone).
 */
static void note_wait(struct ctrl_ctx *ctx, const struct db_job *job)
{
	const struct db_transition *t =
		job->n_transitions ? &job->transitions[job->n_transitions - 1] :
				     NULL;
	struct ctrl_jobrt *rt;
	struct buf m = BUF_INIT;
	char *type = NULL;
	int need = 0, free_now;

	if (t && t->message && strstr(t->message, " in queue "))
		return;
	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	if (rt && rt->spec.instance_type) {
		type = xstrdup(rt->spec.instance_type);
		need = rt->spec.instance_count;
	}
	pthread_mutex_unlock(&ctx->jobs_lock);
	free_now = type ? ctrl_place_free_count(ctx, type) : 0;
	if (type && free_now < need) {
		(void)buf_addf(&m, "Queued; waiting for %d host%s (%d free)",
			       need, need == 1 ? "" : "s", free_now);
		if (!t || !t->message || strcmp(t->message, m.data))
			ctrl_sched_note_wait(ctx, job->name, m.data);
	}
	free(type);
	buf_release(&m);
}

/*
 * What the quarantine of bad hosts learns from what was decided: a failed
 * attempt is laid at its culprit's host (a restart that found no host
 * noted its failure already), and a job that failed before and now
 * completes may confirm that host's fault at once.
 */
static void tell_quarantine(struct ctrl_ctx *ctx, const struct db_job *job,
			    enum ctrl_job_state cur,
			    const struct ctrl_plan_out *o,
			    const struct ctrl_plan_summary *s)
{
	int failed = o->act == CTRL_PLAN_RESTART ||
		     (o->act == CTRL_PLAN_FINISH && o->to == CTRL_JOB_FAILED &&
		      cur != CTRL_JOB_RESTARTING);

	if (failed && s->failed && s->culprit)
		ctrl_quarantine_note(ctx, job->name, job->attempt, s->culprit);
	else if (o->act == CTRL_PLAN_ADVANCE && o->then_complete &&
		 job->attempt > 1)
		ctrl_quarantine_tick(ctx, 1);
}

/* Carries out what ctrl_plan() decided for job. */
static void carry_out(struct ctrl_ctx *ctx, const struct db_job *job,
		      enum ctrl_job_state cur, const struct ctrl_plan_out *o,
		      const struct ctrl_plan_summary *s,
		      const struct db_assignment *as, size_t n,
		      const char **chosen, int *busy_valid)
{
	enum ctrl_job_state in_cur = cur;
	struct buf err = BUF_INIT;

	if (o->actions)
		ctrl_job_set_actions(ctx, job, as, n, o->actions);
	if (o->stop_followers)
		ctrl_job_set_actions(ctx, job, as, n, "stop");
	switch (o->act) {
	case CTRL_PLAN_PLACE:
		/* The scheduler's pass places it (sched/pass.h). */
		if (sched_owns(ctx, job)) {
			ctx->sched_wanted = 1;
			note_wait(ctx, job);
			break;
		}
		if (ctrl_place_job(ctx, job, busy_valid, &err))
			finish(ctx, job, cur, CTRL_JOB_FAILED,
			       "Training job failed", err.data, NULL, 0, 0);
		break;
	case CTRL_PLAN_FINISH:
		if (s->hung && job->rule_statuses)
			ctrl_rules_stalled(ctx, job->name, s->reason.data);
		finish(ctx, job, cur, o->to, o->message,
		       o->has_reason ? o->text.data : NULL, as, n, o->upload);
		break;
	case CTRL_PLAN_TIME_OUT:
		(void)db_job_set_stop_reason(ctx->db, job->name,
					     "MaxRuntimeExceeded", &err);
		if (!ctrl_job_transition(ctx, job->name, cur, CTRL_JOB_STOPPING,
					 "MaxRuntimeInSeconds exceeded: "
					 "stopping the training job",
					 NULL, &err))
			ctrl_job_set_actions(ctx, job, as, n, "stop");
		break;
	case CTRL_PLAN_RESTART:
		if (s->hung && job->rule_statuses)
			ctrl_rules_stalled(ctx, job->name, s->reason.data);
		begin_restart(ctx, job, cur, s, o->text.data, o->elastic);
		break;
	case CTRL_PLAN_STALL_STOP:
		ctrl_rules_stalled(ctx, job->name, s->reason.data);
		(void)db_job_set_stop_reason(ctx->db, job->name,
					     "StalledTrainingRule", &err);
		(void)db_attempt_end(ctx->db, job->name, job->attempt,
				     s->reason.data, time_now_ms(), &err);
		if (ctrl_job_transition(ctx, job->name, cur, CTRL_JOB_STOPPING,
					o->text.data, NULL, &err))
			log_error("job '%s': %s", job->name, err.data);
		break;
	case CTRL_PLAN_NEXT_ATTEMPT:
		start_next_attempt(ctx, job, as, n, chosen, busy_valid);
		break;
	case CTRL_PLAN_REQUEUE:
		requeue(ctx, job, as, n);
		break;
	case CTRL_PLAN_ADVANCE:
		advance(ctx, job->name, &cur, o->to, s);
		if (o->then_complete && cur == CTRL_JOB_UPLOADING)
			finish(ctx, job, cur, CTRL_JOB_COMPLETED,
			       "Training job completed", NULL, as, n, 1);
		break;
	case CTRL_PLAN_MOVE:
	case CTRL_PLAN_REPLACE:
	case CTRL_PLAN_NOTHING:
		break;
	}
	tell_quarantine(ctx, job, in_cur, o, s);
	buf_release(&err);
}

/* Looks at job name once: gathers the facts, plans, acts. */
static void step(struct ctrl_ctx *ctx, const char *name, int *busy_valid)
{
	struct ctrl_plan_summary s;
	struct ctrl_plan_in in;
	struct ctrl_plan_out out;
	struct db_assignment *as = NULL;
	const char **chosen = NULL;
	struct buf err = BUF_INIT;
	enum ctrl_job_state cur;
	struct db_job job;
	size_t n = 0;

	memset(&s, 0, sizeof(s));
	memset(&in, 0, sizeof(in));
	memset(&out, 0, sizeof(out));
	buf_init(&s.reason, 0);
	if (db_job_get(ctx->db, name, &job, &err) ||
	    ctrl_job_state_parse(job.secondary_status, &cur)) {
		buf_release(&err);
		return;
	}
	in.cur = cur;
	in.attempt = job.attempt;
	in.stop_max_runtime = job.stop_reason &&
			      !strcmp(job.stop_reason, "MaxRuntimeExceeded");
	if (job.attempt > 0) {
		(void)db_assignments_list(ctx->db, name, NULL, job.attempt, &as,
					  &n, &err);
		chosen = xcalloc(ctrl_elastic_slots(ctx, &job, n) + 1,
				 sizeof(*chosen));
		gather(ctx, &job, as, n, &s, chosen, busy_valid, &in);
		release_checked(ctx, &job, &s, as, n);
		/* A preempted job's hosts went back with its attempt. */
		in.queued_again = !n && (cur == CTRL_JOB_STARTING ||
					 cur == CTRL_JOB_STOPPING);
	}
	ctrl_plan(&in, &out);
	if (out.act == CTRL_PLAN_REPLACE) {
		ctrl_place_busy_refresh(ctx, busy_valid);
		if (ctrl_move_replace_failed_check(ctx, &job, cur, &s, as, n)) {
			ctrl_job_set_actions(ctx, &job, as, n, out.actions);
			goto out;
		}
		in.check_replace_failed = 1;
		ctrl_plan(&in, &out);
	}
	/* Training on, every rank running: an elastic job may grow. */
	if (cur == CTRL_JOB_TRAINING && out.act == CTRL_PLAN_ADVANCE &&
	    out.to == CTRL_JOB_TRAINING && ctrl_move_grow_back(ctx, &job, cur, as, n))
		goto out;
	if (out.act == CTRL_PLAN_MOVE) {
		ctrl_place_busy_refresh(ctx, busy_valid);
		if (ctrl_move_off_drained(ctx, &job, cur, as, n))
			goto out;
		/* No spare for every drained place: train on, and look at
		 * the rest. */
		in.drain_move_failed = 1;
		ctrl_plan(&in, &out);
	}
	if (cur == CTRL_JOB_TRAINING && job.rule_statuses &&
	    strstr(job.rule_statuses, "\"InProgress\""))
		ctrl_rules_tick(ctx, name);
	carry_out(ctx, &job, cur, &out, &s, as, n, chosen, busy_valid);
out:
	free(chosen);
	buf_release(&out.text);
	buf_release(&s.reason);
	buf_release(&s.runtime);
	db_assignments_free(as, n);
	db_job_release(&job);
	buf_release(&err);
}

static int named(const char *name, char *const *names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return 1;
	return 0;
}

/*
 * Whether an active job gets a look in a pass that is not full: it is
 * named, or hosts were freed and it may wait for some (queued, queued
 * again after a preemption, or restarting and short of a spare).
 */
static int wanted(const struct db_active_job *j, char *const *names,
		  size_t n_names, int queue)
{
	enum ctrl_job_state cur;

	if (queue && (j->attempt == 0 ||
		      (j->secondary_status &&
		       !ctrl_job_state_parse(j->secondary_status, &cur) &&
		       (cur == CTRL_JOB_RESTARTING ||
			cur == CTRL_JOB_STARTING))))
		return 1;
	return named(j->name, names, n_names);
}

/* Whether an Available pool was made for jobs like key (NULL: none). */
static int pool_matches(const struct db_warm_pool *pools, size_t n,
			const char *key)
{
	size_t i;

	for (i = 0; key && i < n; i++)
		if (!strcmp(pools[i].key, key))
			return 1;
	return 0;
}

/*
 * Steps the jobs named since this pass began. A full pass over hundreds of
 * running jobs takes a good part of a second with thousands of hosts; a
 * job created meanwhile is placed between two of its steps, not after it.
 */
static void step_named_since(struct ctrl_ctx *ctx, int *busy_valid)
{
	size_t n, i;
	char **names = ctrl_reconciler_take_named(ctx, &n);

	for (i = 0; i < n; i++)
		step(ctx, names[i], busy_valid);
	ctrl_reconciler_free_named(names, n);
}

void ctrl_jobs_reconcile(struct ctrl_ctx *ctx, char *const *names,
			 size_t n_names, int full)
{
	struct db_active_job *jobs = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0;
	size_t i;
	struct db_queue_look look;
	struct db_warm_pool *pools = NULL;
	size_t n_pools = 0;
	char **types = NULL;
	int some_free;
	int busy_valid = 0;
	int queue;

	/* Warm pools whose period ran out or that lost a host end here;
	 * their hosts are free for the look at the queue below. */
	if (full)
		(void)ctrl_warm_pool_tick(ctx);
	queue = __atomic_exchange_n(&ctx->hosts_freed, 0, __ATOMIC_RELAXED);

	/* Only reports or requests of a few jobs: nothing else is read,
	 * unless one of them waits for the scheduler. */
	if (!full && !queue) {
		for (i = 0; i < n_names; i++) {
			step(ctx, names[i], &busy_valid);
			step_named_since(ctx, &busy_valid);
		}
		if (ctx->sched_wanted &&
		    ctrl_sched_pass(ctx, &busy_valid, 0))
			ctx->sched_wanted = 0;
		return;
	}
	memset(&look, 0, sizeof(look));
	ctrl_place_busy_refresh(ctx, &busy_valid);
	some_free = ctrl_place_free_kinds(ctx, &look, &types);
	__atomic_store_n(&ctx->no_host_free, !some_free, __ATOMIC_RELAXED);
	if (some_free &&
	    db_warm_pools_available(ctx->db, &pools, &n_pools, &err)) {
		log_error("reconciler: %s", err.data);
		buf_reset(&err);
	}
	if (db_jobs_active(ctx->db, some_free ? &look : NULL, &jobs, &n,
			   &err)) {
		log_error("reconciler: %s", err.data);
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct db_active_job *j = &jobs[i];

		if (!full && !wanted(j, names, n_names, queue))
			continue;
		/* A queued job of one instance type is the scheduler's
		 * (below), unless a warm pool made for it is there. */
		if (j->attempt == 0 && !strcmp(j->status, "InProgress") &&
		    j->instance_type &&
		    !pool_matches(pools, n_pools, j->wp_key))
			continue;
		step(ctx, j->name, &busy_valid);
		step_named_since(ctx, &busy_valid);
	}
	/* Every queued job of one instance type, in one decision. */
	if (ctrl_sched_pass(ctx, &busy_valid, queue))
		ctx->sched_wanted = 0;
	/* Failures confirmed meanwhile (a later attempt ran long enough). */
	if (full)
		ctrl_quarantine_tick(ctx, 0);
out:
	ctrl_place_free_types(types, look.n_types);
	db_warm_pools_free(pools, n_pools);
	db_active_jobs_free(jobs, n);
	buf_release(&err);
}
