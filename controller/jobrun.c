#define LOG_TAG "ctrl"

#include <openssl/rand.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/distribution.h"
#include "api/agent_proto.h"
#include "controller/rendezvous.h"
#include "controller/artifacts.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/images.h"
#include "controller/jobrt.h"
#include "controller/job_state.h"
#include "controller/jobrun.h"
#include "controller/plan.h"
#include "db/db.h"
#include "db/run.h"
#include "common/err.h"
#include "common/log.h"
#include "common/netutil.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"


/*
 * Hosts that hold any assignment are busy: marks each host from the list
 * of busy hosts just read, once per read instead of a walk of every
 * assignment for every host looked at.
 */
static void mark_busy(struct ctrl_ctx *ctx, char *const *busy, size_t n)
{
	size_t i;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++)
		ctx->hosts[i]->busy = 0;
	for (i = 0; i < n; i++) {
		struct ctrl_host *h = ctrl_hosts_find(ctx, busy[i]);

		if (h)
			h->busy = 1;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

/*
 * Makes the hosts' busy marks current, unless *valid says they are (a
 * pass reads the assignments only when it is about to pick hosts).
 */
static void ensure_busy(struct ctrl_ctx *ctx, int *valid)
{
	struct buf err = BUF_INIT;
	char **busy = NULL;
	size_t i, n = 0;

	if (*valid)
		return;
	if (db_assignment_hosts(ctx->db, &busy, &n, &err))
		log_error("reconciler: %s", err.data);
	else
		*valid = 1;
	mark_busy(ctx, busy, n);
	for (i = 0; i < n; i++)
		free(busy[i]);
	free(busy);
	buf_release(&err);
}

/* The hosts of a new attempt are busy from now on. */
static void set_busy(struct ctrl_ctx *ctx, const char **hosts, size_t n)
{
	size_t i;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < n; i++) {
		struct ctrl_host *h = hosts[i] ? ctrl_hosts_find(ctx, hosts[i]) :
						 NULL;

		if (h)
			h->busy = 1;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

/* Whether a host of the attempt is drained (it may have to move). */
static int any_drained(struct ctrl_ctx *ctx, const struct db_assignment *as,
		       size_t n)
{
	size_t i;
	int d = 0;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < n && !d; i++) {
		const struct ctrl_host *h = ctrl_hosts_find(ctx, as[i].host);

		d = h && h->drained;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	return d;
}

/*
 * The attempt's ports: `count` consecutive ports from a fresh random base
 * each attempt (MASTER_PORT is the first; parameter servers use two per
 * host). They come from below the kernel's ephemeral range (32768 and up
 * on Linux), so outgoing connections never happen to take them, and are
 * checked free here; hosts with their own network check again as they
 * start (the agent of algo-1 refuses a port it cannot bind).
 */
static int pick_ports(int count)
{
	unsigned char r[2];
	int tries, base = 0, k;

	if (count < 1)
		count = 1;
	for (tries = 0; tries < 16; tries++) {
		if (RAND_bytes(r, sizeof(r)) != 1)
			break;
		base = 20000 + (int)((r[0] << 8 | r[1]) % (12000 - count));
		for (k = 0; k < count && net_port_bindable(base + k) == 1; k++)
			;
		if (k == count)
			return base;
	}
	return base ? base : 29500;
}

static int job_is_mpi(const struct api_job_spec *spec)
{
	return api_hp_true(api_job_spec_hp(spec, "sagemaker_mpi_enabled"));
}

static int job_instance_count(const struct api_job_spec *spec)
{
	size_t i;
	int n = spec->instance_count;

	for (i = 0; i < spec->n_groups; i++)
		n += spec->groups[i].count;
	return n;
}

static void bump_hosts(struct ctrl_ctx *ctx, const struct db_assignment *as,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		ctrl_hosts_bump(ctx, as[i].host);
}

static void finish(struct ctrl_ctx *ctx, const struct db_job *job,
		   enum ctrl_job_state from, enum ctrl_job_state to,
		   const char *message, const char *reason,
		   const struct db_assignment *as, size_t n, int upload);

/* Local hosts serve any instance type; inventory hosts their own. */
static int host_fits(const struct ctrl_host *h, const char *type)
{
	return !h->instance_type || !strcmp(h->instance_type, type);
}

static int host_live(const struct ctrl_host *h)
{
	return h->registered && !h->lost && !h->removed;
}

/* Live and not drained: it may take work. */
static int host_usable(const struct ctrl_host *h)
{
	return host_live(h) && !h->drained;
}

/* Usable, of type (NULL: any) and holding no assignment (mark_busy()). */
static int host_free(const struct ctrl_host *h, const char *type)
{
	return host_usable(h) && (!type || host_fits(h, type)) && !h->busy;
}

/*
 * The first free host of type from ctx->hosts[*from] on that is not among
 * chosen[0..n) (entries may be NULL), or NULL; *from moves past it.
 * Caller holds hosts_lock.
 */
static const char *pick_free(struct ctrl_ctx *ctx, const char *type,
			     size_t *from, const char **chosen, size_t n)
{
	size_t i, c;

	for (i = *from; i < ctx->n_hosts; i++) {
		const struct ctrl_host *h = ctx->hosts[i];
		int taken = 0;

		if (!host_free(h, type))
			continue;
		for (c = 0; c < n && !taken; c++)
			taken = chosen[c] && !strcmp(chosen[c], h->name);
		if (!taken) {
			*from = i + 1;
			return h->name;
		}
	}
	*from = ctx->n_hosts;
	return NULL;
}

/*
 * Picks free, live hosts for every instance of spec (group after group),
 * in inventory order. Returns how many were found; when not all, msg says
 * what the job waits for. Caller holds hosts_lock.
 */
static size_t choose_hosts(struct ctrl_ctx *ctx,
			   const struct api_job_spec *spec, const char **chosen,
			   struct buf *msg)
{
	size_t groups = spec->n_groups ? spec->n_groups : 1;
	size_t g, k = 0;

	for (g = 0; g < groups; g++) {
		const char *type = spec->n_groups ?
					   spec->groups[g].instance_type :
					   spec->instance_type;
		int want = spec->n_groups ? spec->groups[g].count :
					    spec->instance_count;
		int got = 0;
		size_t from = 0;

		while (got < want) {
			const char *h = pick_free(ctx, type, &from, chosen, k);

			if (!h)
				break;
			chosen[k++] = h;
			got++;
		}
		if (got < want) {
			ctrl_wait_message(msg, want, type, got);
			return k;
		}
	}
	return k;
}

void ctrl_wait_message(struct buf *b, int want, const char *type, int free)
{
	(void)buf_addf(b, "Waiting for %d free host%s of type %s (%d free now)",
		       want, want == 1 ? "" : "s", type, free);
}

static void place(struct ctrl_ctx *ctx, const struct db_job *job,
		  int *busy_valid)
{
	const char **chosen = NULL;
	struct ctrl_jobrt *rt;
	struct buf err = BUF_INIT;
	struct buf msg = BUF_INIT;
	size_t i, k = 0;
	struct ctrl_launch launch;
	int bad_image;
	int need;
	int ret;

	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	need = rt ? job_instance_count(&rt->spec) : 0;
	pthread_mutex_unlock(&ctx->jobs_lock);
	if (need < 1)
		return;
	chosen = xcalloc((size_t)need, sizeof(*chosen));
	ensure_busy(ctx, busy_valid);
	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	pthread_mutex_lock(&ctx->hosts_lock);
	if (rt)
		k = choose_hosts(ctx, &rt->spec, chosen, &msg);
	pthread_mutex_unlock(&ctx->hosts_lock);
	pthread_mutex_unlock(&ctx->jobs_lock);
	if (k < (size_t)need) {
		const char *nm = job->name;
		const char *mm = msg.data;

		(void)db_jobs_set_waiting(ctx->db, &nm, &mm, 1, &err);
		/* Parsed again when it can run; queued jobs hold no memory. */
		ctrl_jobrt_drop(ctx, job->name);
		goto out;
	}
	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	bad_image = rt && ctrl_image_resolve(&rt->spec, &launch, &err);
	if (rt && !bad_image)
		ctrl_launch_release(&launch);
	pthread_mutex_unlock(&ctx->jobs_lock);
	if (bad_image) {
		/* As SageMaker does with an image it cannot pull: the job
		 * was accepted and fails as it starts. */
		enum ctrl_job_state cur = CTRL_JOB_STARTING;

		buf_reset(&msg);
		(void)buf_addf(&msg, "ClientError: %s", err.data);
		ctrl_job_state_parse(job->secondary_status, &cur);
		finish(ctx, job, cur, CTRL_JOB_FAILED, "Training job failed",
		       msg.data, NULL, 0, 0);
		goto out;
	}
	ret = db_attempt_start(ctx->db, job->name, job->attempt + 1,
			       pick_ports(2 * need + 2), chosen, (size_t)need,
			       time_now_ms(), &err);
	if (ret) {
		log_error("job '%s': cannot start attempt: %s", job->name,
			  err.data);
		goto out;
	}
	log_info("job '%s': attempt %d on %d host%s", job->name,
		 job->attempt + 1, need, need == 1 ? "" : "s");
	set_busy(ctx, chosen, (size_t)need);
	for (i = 0; i < (size_t)need; i++)
		ctrl_hosts_bump(ctx, chosen[i]);
out:
	free(chosen);
	buf_release(&err);
	buf_release(&msg);
}

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

static const char *default_message(enum ctrl_job_state s)
{
	switch (s) {
	case CTRL_JOB_DOWNLOADING:
		return "Downloading input data";
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
		    enum ctrl_job_state *cur, enum ctrl_job_state to)
{
	struct buf err = BUF_INIT;

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
		if (ctrl_job_transition(ctx, name, *cur, next,
					default_message(next), NULL, &err))
			break;
		*cur = next;
	}
	buf_release(&err);
}

static void cleanup(struct ctrl_ctx *ctx, const char *name,
		    const struct db_assignment *as, size_t n)
{
	struct buf err = BUF_INIT;

	if (db_assignments_delete(ctx->db, name, 0, &err))
		log_error("job '%s': %s", name, err.data);
	/* Its hosts are free: the queue gets a look (and busy marks are
	 * read again before anything is picked). */
	__atomic_store_n(&ctx->hosts_freed, 1, __ATOMIC_RELAXED);
	bump_hosts(ctx, as, n);
	ctrl_jobrt_drop(ctx, name);
	ctrl_rdzv_forget(ctx, name);
	buf_release(&err);
}

static void finish(struct ctrl_ctx *ctx, const struct db_job *job,
		   enum ctrl_job_state from, enum ctrl_job_state to,
		   const char *message, const char *reason,
		   const struct db_assignment *as, size_t n, int upload)
{
	struct db_state_change ch = { 0 };
	struct buf err = BUF_INIT;
	char *model = NULL;
	struct ctrl_jobrt *rt;
	char *output_path = NULL;

	if (upload) {
		pthread_mutex_lock(&ctx->jobs_lock);
		rt = ctrl_jobrt_get(ctx, job->name);
		if (rt)
			output_path = xstrdup(rt->spec.output_path);
		pthread_mutex_unlock(&ctx->jobs_lock);
		if (output_path &&
		    ctrl_artifacts_collect(ctx, job->name, job->attempt, as, n,
					   output_path, "model.tar.gz", &model,
					   &err)) {
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
						   "output.tar.gz", NULL, &e2))
				log_warn("job '%s': cannot store output: %s",
					 job->name, e2.data);
			buf_release(&e2);
		}
	}
	if (!ctrl_job_transition_allowed(from, to)) {
		log_error("job '%s': %s -> %s not allowed", job->name,
			  ctrl_job_state_secondary(from),
			  ctrl_job_state_secondary(to));
		goto out;
	}
	ch.expect_status = ctrl_job_state_primary(from);
	ch.expect_secondary = ctrl_job_state_secondary(from);
	ch.status = ctrl_job_state_primary(to);
	ch.secondary = ctrl_job_state_secondary(to);
	ch.message = message;
	ch.failure_reason = reason;
	ch.model_artifacts = to == CTRL_JOB_FAILED ? NULL : model;
	ch.now_ms = time_now_ms();
	ch.set_end = 1;
	if (db_job_change_state(ctx->db, job->name, &ch, &err)) {
		log_error("job '%s': %s", job->name, err.data);
		goto out;
	}
	ctrl_jobs_changed(ctx);
	(void)db_attempt_end(ctx->db, job->name, job->attempt,
			     reason ? reason : ctrl_job_state_secondary(to),
			     ch.now_ms, &err);
	log_info("job '%s' %s -> %s%s%s", job->name,
		 ctrl_job_state_secondary(from), ctrl_job_state_secondary(to),
		 reason ? ": " : "", reason ? reason : "");
	cleanup(ctx, job->name, as, n);
out:
	free(model);
	free(output_path);
	buf_release(&err);
}

static void set_actions(struct ctrl_ctx *ctx, const struct db_job *job,
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
static int all_settled(struct ctrl_ctx *ctx, const struct db_assignment *as,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(as[i].phase, "done") &&
		    strcmp(as[i].phase, "error") && !host_lost(ctx, as[i].host))
			return 0;
	return 1;
}

/* The instance type of algo-(index+1), group after group. */
static const char *type_of_index(const struct api_job_spec *spec, int index)
{
	size_t g;
	int k = 0;

	if (!spec->n_groups)
		return spec->instance_type;
	for (g = 0; g < spec->n_groups; g++) {
		k += spec->groups[g].count;
		if (index < k)
			return spec->groups[g].instance_type;
	}
	return spec->groups[spec->n_groups - 1].instance_type;
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
		return reason && !strncmp(reason, "InternalServerError", 19);
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
			  const char *message)
{
	struct buf err = BUF_INIT;

	(void)db_attempt_end(ctx->db, job->name, job->attempt, s->reason.data,
			     time_now_ms(), &err);
	if (ctrl_job_transition(ctx, job->name, cur, CTRL_JOB_RESTARTING,
				message, NULL, &err))
		log_error("job '%s': %s", job->name, err.data);
	buf_release(&err);
}

/*
 * The hosts of the next attempt: each host of the failed one while it is
 * usable, a lost or drained one replaced by a free live host of its
 * instance type (or kept, when drained and no spare is free). Fills
 * chosen[host_index] and returns how many places found no host.
 */
static size_t choose_replacements(struct ctrl_ctx *ctx,
				  const struct db_job *job,
				  const struct db_assignment *as, size_t n,
				  const char **chosen)
{
	struct ctrl_jobrt *rt;
	size_t i, missing = 0;

	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < n; i++) {
		struct ctrl_host *h = ctrl_hosts_find(ctx, as[i].host);
		const char *type;
		size_t from;

		if ((size_t)as[i].host_index >= n)
			continue;
		if (h && host_usable(h)) {
			chosen[as[i].host_index] = h->name;
			continue;
		}
		type = rt ? type_of_index(&rt->spec, as[i].host_index) : NULL;
		from = 0;
		chosen[as[i].host_index] =
			type ? pick_free(ctx, type, &from, chosen, n) : NULL;
		if (chosen[as[i].host_index])
			log_info("job '%s': algo-%d moves from %s host '%s' "
				 "to '%s'",
				 job->name, as[i].host_index + 1,
				 h && h->drained ? "drained" : "lost",
				 as[i].host, chosen[as[i].host_index]);
		else if (h && host_live(h))
			/* Drained, and the spare was taken meanwhile: back on
			 * it rather than failing a job that did nothing
			 * wrong. */
			chosen[as[i].host_index] = h->name;
	}
	/* The chosen names stay valid: hosts are never freed while the
	 * controller runs. */
	pthread_mutex_unlock(&ctx->hosts_lock);
	pthread_mutex_unlock(&ctx->jobs_lock);
	for (i = 0; i < n; i++)
		missing += !chosen[i];
	return missing;
}

/* Restarting, settled, a host for every place: attempt N+1 starts. */
static void start_next_attempt(struct ctrl_ctx *ctx, const struct db_job *job,
			       const struct db_assignment *as, size_t n,
			       const char **chosen, int *busy_valid)
{
	struct buf err = BUF_INIT, msg = BUF_INIT;
	size_t i;

	if (db_assignments_delete(ctx->db, job->name, job->attempt, &err) ||
	    db_attempt_start(ctx->db, job->name, job->attempt + 1,
			     pick_ports(2 * (int)n + 2), chosen, n,
			     time_now_ms(), &err)) {
		log_error("job '%s': cannot start attempt %d: %s", job->name,
			  job->attempt + 1, err.data);
		goto out;
	}
	bump_hosts(ctx, as, n);
	for (i = 0; i < n; i++)
		ctrl_hosts_bump(ctx, chosen[i]);
	ctrl_rdzv_forget(ctx, job->name);
	(void)buf_addf(&msg, "Starting attempt %d of the training job",
		       job->attempt + 1);
	if (ctrl_job_transition(ctx, job->name, CTRL_JOB_RESTARTING,
				CTRL_JOB_STARTING, msg.data, NULL, &err))
		log_error("job '%s': %s", job->name, err.data);
	log_info("job '%s': attempt %d on %zu host%s", job->name,
		 job->attempt + 1, n, n == 1 ? "" : "s");
	/* Hosts left behind are free, the new ones busy. */
	*busy_valid = 0;
	__atomic_store_n(&ctx->hosts_freed, 1, __ATOMIC_RELAXED);
out:
	buf_release(&err);
	buf_release(&msg);
}

/*
 * A job with a host that was drained moves, when a free host can take
 * each of its drained places: its attempt stops (SIGTERM, the grace
 * period, a last checkpoint sync, as Stop does) and the next one starts
 * on the spares, as a planned move that spends no retry. With no spare
 * free the job trains on where it is (the host shows "draining") and
 * moves once one is. Returns 1 when the move began.
 */
static int move_off_drained(struct ctrl_ctx *ctx, const struct db_job *job,
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
		const char *type;
		size_t from;

		if (!h || !h->drained || !host_live(h) ||
		    (size_t)as[i].host_index >= n)
			continue;
		drained++;
		type = rt ? type_of_index(&rt->spec, as[i].host_index) : NULL;
		from = 0;
		chosen[as[i].host_index] =
			type ? pick_free(ctx, type, &from, chosen, n) : NULL;
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
	if (db_attempt_end(ctx->db, job->name, job->attempt, msg.data,
			   time_now_ms(), &err) ||
	    db_attempt_set_planned(ctx->db, job->name, job->attempt, &err)) {
		log_error("job '%s': %s", job->name, err.data);
		goto out;
	}
	set_actions(ctx, job, as, n, "stop");
	if (ctrl_job_transition(ctx, job->name, cur, CTRL_JOB_RESTARTING,
				msg.data, NULL, &err))
		log_error("job '%s': %s", job->name, err.data);
	log_info("job '%s': %s", job->name, msg.data);
	ret = 1;
out:
	free(chosen);
	buf_release(&msg);
	buf_release(&err);
	buf_release(&names);
	return ret;
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
	int mpi;
	size_t i;

	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	mpi = rt && job_is_mpi(&rt->spec);
	if (rt)
		max_ms = rt->spec.max_runtime_s * 1000;
	pthread_mutex_unlock(&ctx->jobs_lock);
	for (i = 0; i < n; i++)
		lost[i] = host_lost(ctx, as[i].host);
	ctrl_plan_summarize(as, lost, n, mpi, s);
	free(lost);
	in->s = s;
	in->settled = all_settled(ctx, as, n);
	in->runtime_exceeded = job->start_ms && max_ms &&
			       time_now_ms() - job->start_ms > max_ms;
	in->any_drained = any_drained(ctx, as, n);
	if (s->failed) {
		in->retryable = retryable(ctx, s->reason.data);
		in->retries_left = retries_left(ctx, job);
	}
	if (in->cur == CTRL_JOB_RESTARTING) {
		(void)db_attempt_planned(ctx->db, job->name, job->attempt,
					 &in->planned_move, &err);
		if (in->settled) {
			ensure_busy(ctx, busy_valid);
			in->restart_missing =
				choose_replacements(ctx, job, as, n, chosen);
		}
		in->restart_wait_over = time_now_ms() - job->last_modified_ms >
					ctx->cfg.restart_wait_ms;
		in->restart_wait_s = ctx->cfg.restart_wait_ms / 1000;
	}
	buf_release(&err);
}

/* Carries out what ctrl_plan() decided for job. */
static void carry_out(struct ctrl_ctx *ctx, const struct db_job *job,
		      enum ctrl_job_state cur, const struct ctrl_plan_out *o,
		      const struct ctrl_plan_summary *s,
		      const struct db_assignment *as, size_t n,
		      const char **chosen, int *busy_valid)
{
	struct buf err = BUF_INIT;

	if (o->actions)
		set_actions(ctx, job, as, n, o->actions);
	if (o->stop_followers)
		set_actions(ctx, job, as, n, "stop");
	switch (o->act) {
	case CTRL_PLAN_PLACE:
		place(ctx, job, busy_valid);
		break;
	case CTRL_PLAN_FINISH:
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
			set_actions(ctx, job, as, n, "stop");
		break;
	case CTRL_PLAN_RESTART:
		begin_restart(ctx, job, cur, s, o->text.data);
		break;
	case CTRL_PLAN_NEXT_ATTEMPT:
		start_next_attempt(ctx, job, as, n, chosen, busy_valid);
		break;
	case CTRL_PLAN_ADVANCE:
		advance(ctx, job->name, &cur, o->to);
		if (o->then_complete && cur == CTRL_JOB_UPLOADING)
			finish(ctx, job, cur, CTRL_JOB_COMPLETED,
			       "Training job completed", NULL, as, n, 1);
		break;
	case CTRL_PLAN_MOVE:
	case CTRL_PLAN_NOTHING:
		break;
	}
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
		chosen = xcalloc(n + 1, sizeof(*chosen));
		gather(ctx, &job, as, n, &s, chosen, busy_valid, &in);
	}
	ctrl_plan(&in, &out);
	if (out.act == CTRL_PLAN_MOVE) {
		ensure_busy(ctx, busy_valid);
		if (move_off_drained(ctx, &job, cur, as, n))
			goto out;
		/* No spare for every drained place: train on, and look at
		 * the rest. */
		in.drain_move_failed = 1;
		ctrl_plan(&in, &out);
	}
	carry_out(ctx, &job, cur, &out, &s, as, n, chosen, busy_valid);
out:
	free(chosen);
	buf_release(&out.text);
	buf_release(&s.reason);
	db_assignments_free(as, n);
	db_job_release(&job);
	buf_release(&err);
}

/* Free live hosts that can serve type, given the current assignments. */
static int free_hosts(struct ctrl_ctx *ctx, const char *type)
{
	size_t i;
	int n = 0;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		const struct ctrl_host *h = ctx->hosts[i];

		n += host_free(h, type);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	return n;
}

/* Queued jobs looked at per pass, per kind of free host. */
#define QUEUE_LOOK 64

/*
 * Which queued jobs are worth a look: those of every instance type with a
 * free host (copied into *types, to free with free_types()), of any type
 * when a free host serves every type. Returns whether any host is free.
 */
static int free_kinds(struct ctrl_ctx *ctx, struct db_queue_look *look,
		      char ***types)
{
	size_t i, k, n = 0;

	memset(look, 0, sizeof(*look));
	*types = NULL;
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		const struct ctrl_host *h = ctx->hosts[i];
		int seen = 0;

		if (!host_free(h, NULL))
			continue;
		if (!h->instance_type) {
			look->any_type = 1;
			continue;
		}
		for (k = 0; k < n && !seen; k++)
			seen = !strcmp((*types)[k], h->instance_type);
		if (seen)
			continue;
		*types = xrealloc(*types, (n + 1) * sizeof(**types));
		(*types)[n++] = xstrdup(h->instance_type);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	look->types = (const char *const *)*types;
	look->n_types = n;
	look->per = QUEUE_LOOK;
	return look->any_type || n;
}

static void free_types(char **types, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(types[i]);
	free(types);
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
 * named, or hosts were freed and it waits for some (queued, or restarting
 * and short of a spare).
 */
static int wanted(const struct db_active_job *j, char *const *names,
		  size_t n_names, int queue)
{
	enum ctrl_job_state cur;

	if (queue && (j->attempt == 0 ||
		      (j->secondary_status &&
		       !ctrl_job_state_parse(j->secondary_status, &cur) &&
		       cur == CTRL_JOB_RESTARTING)))
		return 1;
	return named(j->name, names, n_names);
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
	const char **w_names = NULL;
	char **w_msgs = NULL;
	size_t n_wait = 0;
	size_t n = 0;
	size_t i;
	struct db_queue_look look;
	char **types = NULL;
	int some_free;
	int busy_valid = 0;
	int queue = __atomic_exchange_n(&ctx->hosts_freed, 0, __ATOMIC_RELAXED);

	/* Only reports or requests of a few jobs: nothing else is read. */
	if (!full && !queue) {
		for (i = 0; i < n_names; i++) {
			step(ctx, names[i], &busy_valid);
			step_named_since(ctx, &busy_valid);
		}
		return;
	}
	memset(&look, 0, sizeof(look));
	ensure_busy(ctx, &busy_valid);
	some_free = free_kinds(ctx, &look, &types);
	__atomic_store_n(&ctx->no_host_free, !some_free, __ATOMIC_RELAXED);
	if (db_jobs_active(ctx->db, some_free ? &look : NULL, &jobs, &n,
			   &err)) {
		log_error("reconciler: %s", err.data);
		goto out;
	}
	w_names = xcalloc(n + 1, sizeof(*w_names));
	w_msgs = xcalloc(n + 1, sizeof(*w_msgs));
	for (i = 0; i < n; i++) {
		const struct db_active_job *j = &jobs[i];

		if (!full && !wanted(j, names, n_names, queue))
			continue;
		/*
		 * A job that cannot be placed now is marked queued with a
		 * message saying what it waits for, in one write per pass;
		 * marked jobs are not read again until a host is free, so
		 * thousands of queued jobs cost nothing.
		 */
		if (j->attempt == 0 && !strcmp(j->status, "InProgress") &&
		    j->instance_type) {
			int free = free_hosts(ctx, j->instance_type);

			if (free < j->instance_count) {
				struct buf m = BUF_INIT;

				ctrl_wait_message(&m, j->instance_count,
						  j->instance_type, free);
				if (!j->message || strcmp(j->message, m.data)) {
					w_names[n_wait] = j->name;
					w_msgs[n_wait++] = buf_detach(&m, NULL);
				}
				buf_release(&m);
				continue;
			}
		}
		step(ctx, j->name, &busy_valid);
		step_named_since(ctx, &busy_valid);
	}
	if (db_jobs_set_waiting(ctx->db, w_names, (const char *const *)w_msgs,
				n_wait, &err))
		log_error("reconciler: %s", err.data);
out:
	for (i = 0; i < n_wait; i++)
		free(w_msgs[i]);
	free(w_msgs);
	free(w_names);
	free_types(types, look.n_types);
	db_active_jobs_free(jobs, n);
	buf_release(&err);
}
