#define LOG_TAG "ctrl"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/distribution.h"
#include "api/job_record.h"
#include "api/job_config.h"
#include "api/job_spec.h"
#include "api/requests.h"
#include "api/tuning.h"
#include "controller/ctrl.h"
#include "controller/files.h"
#include "controller/hosts.h"
#include "controller/job_state.h"
#include "controller/jobrt.h"
#include "controller/jobrun.h"
#include "controller/obs/rulerun.h"
#include "controller/obs/rules.h"
#include "controller/placement.h"
#include "controller/search.h"
#include "controller/tags.h"
#include "controller/tuning.h"
#include "controller/update.h"
#include "controller/uris.h"
#include "controller/warmpool.h"
#include "controller/ops.h"
#include "controller/route.h"
#include "db/db.h"
#include "db/run.h"
#include "storage/storage.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define NOT_FOUND_MSG CTRL_NOT_FOUND_MSG

/*
 * Another user's job is answered as a job that does not exist: an answer
 * of its own would tell which names other users took.
 */
static int denied(void)
{
	return ERR_NOTFOUND;
}

/*
 * A job that asks for more hosts than the controller has can never run:
 * ResourceLimitExceeded now rather than a job that waits forever. With no
 * hosts at all (an inventory to come) jobs wait.
 */
static int check_capacity(struct ctrl_ctx *ctx, const struct api_job_spec *spec,
			  struct buf *err)
{
	size_t groups = spec->n_groups ? spec->n_groups : 1;
	size_t g, i;
	int ret = 0;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (g = 0; g < groups && !ret && ctx->n_hosts; g++) {
		const char *type = spec->n_groups ?
					   spec->groups[g].instance_type :
					   spec->instance_type;
		size_t want = (size_t)(spec->n_groups ? spec->groups[g].count :
							spec->instance_count);
		size_t have = 0;

		for (i = 0; i < ctx->n_hosts; i++) {
			const struct ctrl_host *h = ctx->hosts[i];

			have += !h->removed &&
				(!h->instance_type ||
				 !strcmp(h->instance_type, type));
		}
		if (want > have) {
			(void)buf_addf(err,
				       "The job asks for %zu instances of "
				       "type %s but the cluster has only %zu "
				       "such hosts.",
				       want, type, have);
			ret = ERR_LIMIT;
		}
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	return ret;
}

/* The Debugger and Profiler rules are ones the controller evaluates. */
static int check_rules(const struct api_job_spec *spec, struct buf *err)
{
	struct ctrl_rule *r;
	size_t n;
	int ret = ctrl_rules_parse(spec, &r, &n, err);

	ctrl_rules_free(r, n);
	return ret;
}

/*
 * Parses and checks a CreateTrainingJob body as who may send it: the spec
 * and its distribution (both empty on failure).
 */
static int parse_checked(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const char *body, size_t len,
			 struct api_job_spec *spec,
			 struct api_distribution *dist, struct buf *err)
{
	int ret = api_job_spec_parse(body, len, spec, err);

	memset(dist, 0, sizeof(*dist));
	if (ret)
		return ret;
	ret = ctrl_uris_check(ctx, who, spec, err);
	if (!ret)
		ret = check_rules(spec, err);
	if (!ret)
		ret = api_distribution_parse(spec, dist, err);
	if (!ret)
		ret = check_capacity(ctx, spec, err);
	if (ret) {
		api_distribution_release(dist);
		api_job_spec_release(spec);
	}
	return ret;
}

int ctrl_job_check(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		   const char *body, size_t len, struct buf *err)
{
	struct api_job_spec spec;
	struct api_distribution dist;
	int ret = parse_checked(ctx, who, body, len, &spec, &dist, err);

	if (!ret) {
		api_distribution_release(&dist);
		api_job_spec_release(&spec);
	}
	return ret;
}

/*
 * ctrl_job_create(), but on ERR_CONFLICT *arn_out is the ARN of the name
 * taken (caller frees it either way).
 */
static int create(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		  const char *body, size_t len, const char *tuning_arn,
		  const struct db_service_job *service, char **arn_out,
		  struct buf *err)
{
	struct api_job_spec spec;
	struct api_distribution dist;
	struct db_job job;
	struct buf first = BUF_INIT;
	struct db_tag *tags = NULL;
	struct buf wkey = BUF_INIT;
	char *request = NULL;
	char *name = NULL;
	int ret;

	*arn_out = NULL;
	memset(&job, 0, sizeof(job));
	ret = parse_checked(ctx, who, body, len, &spec, &dist, err);
	if (ret)
		return ret;
	job.name = spec.name;
	job.spec_json = (char *)body;
	job.arn = ctrl_job_arn(ctx, spec.name);
	job.status = (char *)ctrl_job_state_primary(CTRL_JOB_STARTING);
	job.secondary_status =
		(char *)ctrl_job_state_secondary(CTRL_JOB_STARTING);
	job.request_json = spec.request_json;
	if (tuning_arn) {
		ret = api_request_add_string(spec.request_json, "TuningJobArn",
					     tuning_arn, &request);
		if (ret) {
			(void)buf_adds(err, "cannot record the tuning job");
			goto out;
		}
		job.request_json = request;
	}
	job.instance_type = spec.instance_type;
	job.instance_count = spec.instance_count;
	job.creation_ms = time_now_ms();
	job.rule_statuses = ctrl_rules_initial(&spec, job.creation_ms);
	job.owner = (char *)who->owner;
	job.run_as = (char *)who->run_as;
	job.service = service;
	if (spec.keep_alive_s > 0 && spec.warm_key) {
		/* Pools are matched within one owner only. */
		(void)buf_addf(&wkey, "%s\n%s", who->owner ? who->owner : "",
			       spec.warm_key);
		job.keep_alive_s = spec.keep_alive_s;
		job.wp_key = wkey.data;
	}
	if (spec.n_tags) {
		size_t i;

		tags = xcalloc(spec.n_tags, sizeof(*tags));
		for (i = 0; i < spec.n_tags; i++) {
			tags[i].key = spec.tags[i].key;
			tags[i].value = spec.tags[i].value;
		}
		job.tags = tags;
		job.n_tags = spec.n_tags;
	}
	/*
	 * With every host busy the job is queued as it is stored, with the
	 * message the reconciler would give it, so that a burst of creates
	 * into a full cluster costs the reconciler nothing. A host that
	 * frees up wakes the reconciler, which reads the queue in order.
	 */
	if (spec.instance_type && !job.wp_key &&
	    __atomic_load_n(&ctx->no_host_free, __ATOMIC_RELAXED)) {
		job.waiting = 1;
		ctrl_wait_message(&first, spec.instance_count,
				  spec.instance_type, 0);
	} else {
		(void)buf_adds(&first, "Starting the training job");
	}
	ret = db_job_insert_uid(ctx->db, &job, first.data, &job.uid, err);
	if (ret)
		goto out;
	ctrl_jobs_changed(ctx);
	log_info("job '%s' created (%s x%d)", spec.name,
		 spec.instance_type ? spec.instance_type : "groups",
		 spec.instance_count);
	name = xstrdup(spec.name);
	/* Placement, images and work builds use what was parsed here. A
	 * job queued as it is stored holds no memory until a pass looks at
	 * it: a long queue of creates costs nothing more. */
	if (!job.waiting) {
		job.name = name;
		job.owner = (char *)(who->owner ? who->owner : "");
		ctrl_jobrt_put(ctx, &job, &spec, &dist);
	}
	/* A queued job is found by the look at the queue that a freed host
	 * wakes (or the next full pass); naming it would only have it
	 * marked queued again, a write per create. Named anyway when a
	 * pass saw a free host while it was stored. */
	if (!job.waiting ||
	    !__atomic_load_n(&ctx->no_host_free, __ATOMIC_RELAXED))
		ctrl_reconciler_wake_job(ctx, name);
out:
	*arn_out = job.arn;
	free(job.rule_statuses);
	free(name);
	free(job.uid);
	free(tags);
	free(request);
	buf_release(&wkey);
	api_distribution_release(&dist);
	api_job_spec_release(&spec);
	buf_release(&first);
	return ret;
}

/* A create that failed answers no ARN. */
static int no_arn_on_error(int ret, char **arn_out)
{
	if (ret) {
		free(*arn_out);
		*arn_out = NULL;
	}
	return ret;
}

int ctrl_job_create(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *body, size_t len, const char *tuning_arn,
		    char **arn_out, struct buf *err)
{
	return no_arn_on_error(
		create(ctx, who, body, len, tuning_arn, NULL, arn_out, err),
		arn_out);
}

int ctrl_job_create_service(struct ctrl_ctx *ctx,
			    const struct ctrl_caller *who, const char *body,
			    size_t len, const struct db_service_job *service,
			    char **arn_out, struct buf *err)
{
	return no_arn_on_error(
		create(ctx, who, body, len, NULL, service, arn_out, err),
		arn_out);
}

void ctrl_op_create(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *body, size_t len, struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	char *arn = NULL;
	int ret = create(ctx, who, body, len, NULL, NULL, &arn, &err);

	if (ret == ERR_CONFLICT) {
		buf_reset(&err);
		(void)buf_addf(&err,
			       "Training job names must be unique within "
			       "an AWS account and region, and a training job "
			       "with this name already exists (%s)",
			       arn ? arn : "");
		ctrl_reply_err(resp, CTRL_E_IN_USE, err.data);
	} else if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
	} else {
		if (api_create_response(arn, &out))
			BUG("create response too big");
		ctrl_reply_json(resp, &out);
	}
	free(arn);
	buf_release(&err);
	buf_release(&out);
}

/* Moves the strings of a db_job into an api_job_record (no copies). */
static void job_to_record(struct db_job *j, struct api_job_record *r)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	r->name = j->name;
	r->arn = j->arn;
	r->status = j->status;
	r->secondary_status = j->secondary_status;
	r->failure_reason = j->failure_reason;
	r->model_artifacts = j->model_artifacts;
	r->request_json = j->request_json;
	r->creation_ms = j->creation_ms;
	r->last_modified_ms = j->last_modified_ms;
	r->start_ms = j->start_ms;
	r->end_ms = j->end_ms;
	r->training_s = j->training_s;
	r->billable_s = j->billable_s;
	r->wp_status = j->wp_status;
	r->wp_reused_by = j->wp_reused_by;
	r->wp_billable_s = ctrl_warm_pool_billable_s(j, time_now_ms());
	r->rule_statuses_json = j->rule_statuses;
	if (j->n_transitions) {
		r->transitions =
			xcalloc(j->n_transitions, sizeof(*r->transitions));
		for (i = 0; i < j->n_transitions; i++) {
			r->transitions[i].status = j->transitions[i].status;
			r->transitions[i].start_ms = j->transitions[i].start_ms;
			r->transitions[i].end_ms = j->transitions[i].end_ms;
			r->transitions[i].message = j->transitions[i].message;
		}
		r->n_transitions = j->n_transitions;
		free(j->transitions);
	}
	if (j->n_metrics) {
		r->metrics = xcalloc(j->n_metrics, sizeof(*r->metrics));
		for (i = 0; i < j->n_metrics; i++) {
			r->metrics[i].name = j->metrics[i].name;
			r->metrics[i].value = j->metrics[i].value;
			r->metrics[i].timestamp_ms = j->metrics[i].timestamp_ms;
		}
		r->n_metrics = j->n_metrics;
		free(j->metrics);
	}
	free(j->instance_type);
	free(j->spec_json);
	free(j->stop_reason);
	free(j->uid);
	free(j->owner);
	free(j->run_as);
	free(j->image);
	free(j->wp_key);
	memset(j, 0, sizeof(*j));
}

/*
 * Answers of DescribeTrainingJob, kept while nothing was committed since
 * they were made (db_write_seq): clients poll Describe (the SDK's and
 * boto3's waiters every few seconds, status pages), and an unchanged job
 * then costs a copy instead of three queries and a JSON build. One slot
 * per name hash, locked in stripes.
 */
#define DCACHE_MAX_BODY (64 << 10)
#define DCACHE_MAX_BYTES (32 << 20) /* all cached answers together */

static size_t dcache_index(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h % CTRL_DCACHE_SLOTS;
}

/* 1: out holds the answer; 0: not cached; -1: cached, another's job. */
static int dcache_get(struct ctrl_dcache *dc, const char *name, uint64_t seq,
		      const struct ctrl_caller *who, struct buf *out)
{
	size_t i = dcache_index(name);
	struct ctrl_dcache_slot *s = &dc->slots[i];
	int hit;

	pthread_mutex_lock(&dc->lock[i % CTRL_DCACHE_STRIPES]);
	hit = s->name && s->seq == seq && !strcmp(s->name, name);
	if (hit && !ctrl_caller_sees(who, s->owner))
		hit = -1;
	else if (hit)
		(void)buf_add(out, s->body, s->len);
	pthread_mutex_unlock(&dc->lock[i % CTRL_DCACHE_STRIPES]);
	return hit;
}

static void dcache_put(struct ctrl_dcache *dc, const char *name, uint64_t seq,
		       const char *owner, const struct buf *b)
{
	size_t i = dcache_index(name);
	struct ctrl_dcache_slot *s = &dc->slots[i];

	if (b->len > DCACHE_MAX_BODY)
		return;
	pthread_mutex_lock(&dc->lock[i % CTRL_DCACHE_STRIPES]);
	if (atomic_load(&dc->bytes) - s->len + b->len > DCACHE_MAX_BYTES) {
		pthread_mutex_unlock(&dc->lock[i % CTRL_DCACHE_STRIPES]);
		return;
	}
	atomic_fetch_sub(&dc->bytes, s->len);
	atomic_fetch_add(&dc->bytes, b->len);
	free(s->name);
	free(s->owner);
	free(s->body);
	s->name = xstrdup(name);
	s->owner = owner ? xstrdup(owner) : NULL;
	s->body = xmalloc(b->len + 1);
	memcpy(s->body, b->data, b->len);
	s->len = b->len;
	s->seq = seq;
	pthread_mutex_unlock(&dc->lock[i % CTRL_DCACHE_STRIPES]);
}

int ctrl_describe_body(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		       const char *name, struct buf *out, struct buf *err)
{
	struct api_job_record rec;
	struct db_job job;
	char *owner = NULL;
	uint64_t seq;
	int hit;
	int ret;

	memset(&rec, 0, sizeof(rec));
	/* Read before the job: see db_write_seq(). */
	seq = db_write_seq(ctx->db);
	hit = dcache_get(ctx->dcache, name, seq, who, out);
	if (hit > 0)
		return 0;
	ret = hit < 0 ? denied() : db_job_get(ctx->db, name, &job, err);
	if (!ret && !ctrl_caller_sees(who, job.owner)) {
		ret = denied();
		db_job_release(&job);
	}
	if (ret)
		return ret;
	owner = job.owner ? xstrdup(job.owner) : NULL;
	job_to_record(&job, &rec);
	ret = api_describe_response(&rec, out);
	if (ret) {
		(void)buf_adds(err, "stored request is corrupt");
		ret = ERR_INTERNAL;
	} else if (!rec.wp_status || strcmp(rec.wp_status, "Available")) {
		/* An Available pool's retained time grows without a write. */
		dcache_put(ctx->dcache, name, seq, owner, out);
	}
	api_job_record_release(&rec);
	free(owner);
	return ret;
}

void ctrl_job_describe(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		       const char *name, struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	int ret = ctrl_describe_body(ctx, who, name, &out, &err);

	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		ctrl_reply_json(resp, &out);
	buf_release(&err);
	buf_release(&out);
}

static void list_run(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		     const struct api_list_request *req,
		     struct ctrl_response *resp)
{
	struct db_list_query q = { 0 };
	struct db_job *jobs = NULL;
	struct api_job_record *recs = NULL;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	char *next = NULL;
	size_t n = 0;
	size_t i;
	int ret;

	q.limit = req->max_results;
	q.token = req->next_token;
	q.name_contains = req->name_contains;
	q.status = req->status_equals;
	q.warm_pool_status = req->warm_pool_status_equals;
	q.owner = who->admin ? NULL : who->owner;
	q.sort = req->sort_by == API_SORT_NAME	 ? DB_SORT_NAME :
		 req->sort_by == API_SORT_STATUS ? DB_SORT_STATUS :
						   DB_SORT_CREATION;
	q.descending = req->descending;
	q.created_after_ms = req->creation_after_ms;
	q.created_before_ms = req->creation_before_ms;
	q.modified_after_ms = req->modified_after_ms;
	q.modified_before_ms = req->modified_before_ms;
	ret = db_job_list(ctx->db, &q, &jobs, &n, &next, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		goto out;
	}
	recs = xcalloc(n ? n : 1, sizeof(*recs));
	for (i = 0; i < n; i++)
		job_to_record(&jobs[i], &recs[i]);
	if (api_list_response(recs, n, next, &out))
		BUG("list response too big");
	ctrl_reply_json(resp, &out);
out:
	for (i = 0; recs && i < n; i++)
		api_job_record_release(&recs[i]);
	free(recs);
	free(jobs);
	free(next);
	buf_release(&err);
	buf_release(&out);
}

/* Runs req, or answers why it was refused (ret, err); releases both. */
static void list_parsed(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			int ret, struct api_list_request *req, struct buf *err,
			struct ctrl_response *resp)
{
	if (ret)
		ctrl_reply_err_code(resp, ret, err->data);
	else
		list_run(ctx, who, req, resp);
	api_list_request_release(req);
	buf_release(err);
}

void ctrl_op_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		  const char *body, size_t len, struct ctrl_response *resp)
{
	struct api_list_request req;
	struct buf err = BUF_INIT;
	int ret = api_list_request_parse(body, len, &req, &err);

	list_parsed(ctx, who, ret, &req, &err, resp);
}

void ctrl_op_list_query(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			const struct api_query_arg *args, size_t n,
			struct ctrl_response *resp)
{
	struct api_list_request req;
	struct buf err = BUF_INIT;
	int ret = api_list_request_from_query(args, n, &req, &err);

	list_parsed(ctx, who, ret, &req, &err, resp);
}

static void reply_empty(struct ctrl_response *resp)
{
	resp->status = 200;
	buf_reset(&resp->body);
	if (buf_adds(&resp->body, "{}"))
		BUG("cannot write {}");
}

/* The current state of job name, for a handler's checks. */
static int current_state(struct ctrl_ctx *ctx, const char *name,
			 enum ctrl_job_state *state, char **status,
			 struct buf *err)
{
	struct db_job job;
	int ret = db_job_get(ctx->db, name, &job, err);

	if (ret)
		return ret;
	ret = ctrl_job_state_parse(job.secondary_status, state);
	*status = xstrdup(job.status);
	db_job_release(&job);
	if (ret)
		(void)buf_adds(err, "stored job has an unknown status");
	return ret ? ERR_INTERNAL : 0;
}

int ctrl_job_stop_with(struct ctrl_ctx *ctx, const char *name,
		       const char *message, struct buf *err)
{
	enum ctrl_job_state state;
	char *status = NULL;
	int ret = 0;
	int tries;

	/* A state may change between reading it and writing; retry then. */
	for (tries = 0; !ret && tries < 5; tries++) {
		free(status);
		status = NULL;
		ret = current_state(ctx, name, &state, &status, err);
		if (ret)
			break;
		if (strcmp(status, "InProgress")) {
			buf_reset(err);
			(void)buf_addf(err,
				       "The request was rejected because "
				       "the training job is in status %s.",
				       status);
			ret = ERR_INVALID;
			break;
		}
		buf_reset(err);
		ret = ctrl_job_transition(ctx, name, state, CTRL_JOB_STOPPING,
					  message, NULL, err);
		if (ret != ERR_CONFLICT)
			break;
		ret = 0;
		if (tries == 4)
			ret = ERR_CONFLICT;
	}
	if (!ret)
		ctrl_reconciler_wake_job(ctx, name);
	free(status);
	return ret;
}

void ctrl_job_stop(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		   const char *name, struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	int ret;

	ret = ctrl_caller_check_job(ctx, who, name, &err);
	if (!ret)
		ret = ctrl_job_stop_with(ctx, name, "Stopping the training job",
					 &err);
	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		reply_empty(resp);
	buf_release(&err);
}

void ctrl_job_delete(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		     const char *name, struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	struct buf msg = BUF_INIT;
	int ret;

	ret = ctrl_caller_check_job(ctx, who, name, &err);
	if (!ret)
		ret = db_job_delete(ctx->db, name, ctrl_job_status_terminal,
				    &err);
	if (ret == ERR_NOTFOUND) {
		ctrl_reply_err(resp, CTRL_E_JOB_NOT_FOUND, NOT_FOUND_MSG);
	} else if (ret == ERR_CONFLICT) {
		(void)buf_addf(&msg,
			       "Training job '%s' cannot be deleted: %s; "
			       "only Completed, Failed or Stopped jobs can be "
			       "deleted.",
			       name, err.data);
		ctrl_reply_err(resp, CTRL_E_IN_USE, msg.data);
	} else if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
	} else {
		ctrl_jobs_changed(ctx);
		log_info("job '%s' deleted", name);
		reply_empty(resp);
	}
	buf_release(&err);
	buf_release(&msg);
}

/* The JSON 1.1 form of an operation on one job: its name, then fn. */
static void by_name(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *shape, const char *body, size_t len,
		    struct ctrl_response *resp,
		    void (*fn)(struct ctrl_ctx *, const struct ctrl_caller *,
			       const char *, struct ctrl_response *))
{
	struct buf err = BUF_INIT;
	char *name = NULL;
	int ret = api_name_request_parse(shape, body, len, &name, &err);

	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		fn(ctx, who, name, resp);
	free(name);
	buf_release(&err);
}

void ctrl_op_describe(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      const char *body, size_t len, struct ctrl_response *resp)
{
	by_name(ctx, who, "DescribeTrainingJobRequest", body, len, resp,
		ctrl_job_describe);
}

void ctrl_op_stop(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		  const char *body, size_t len, struct ctrl_response *resp)
{
	by_name(ctx, who, "StopTrainingJobRequest", body, len, resp,
		ctrl_job_stop);
}

void ctrl_op_delete(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *body, size_t len, struct ctrl_response *resp)
{
	by_name(ctx, who, "DeleteTrainingJobRequest", body, len, resp,
		ctrl_job_delete);
}

/* The SageMaker JSON 1.1 operations, by X-Amz-Target. */
static const struct ctrl_route rows[] = {
	CTRL_ROUTE_OP("SageMaker.CreateTrainingJob", ctrl_op_create),
	CTRL_ROUTE_OP("SageMaker.DescribeTrainingJob", ctrl_op_describe),
	CTRL_ROUTE_OP("SageMaker.ListTrainingJobs", ctrl_op_list),
	CTRL_ROUTE_OP("SageMaker.StopTrainingJob", ctrl_op_stop),
	CTRL_ROUTE_OP("SageMaker.DeleteTrainingJob", ctrl_op_delete),
	CTRL_ROUTE_OP("SageMaker.AddTags", ctrl_op_add_tags),
	CTRL_ROUTE_OP("SageMaker.ListTags", ctrl_op_list_tags),
	CTRL_ROUTE_OP("SageMaker.DeleteTags", ctrl_op_delete_tags),
	CTRL_ROUTE_OP("SageMaker.Search", ctrl_op_search),
	CTRL_ROUTE_OP("SageMaker.UpdateTrainingJob", ctrl_op_update),
	CTRL_ROUTE_OP("SageMaker.CreateHyperParameterTuningJob",
		      ctrl_op_tuning_create),
	CTRL_ROUTE_OP("SageMaker.DescribeHyperParameterTuningJob",
		      ctrl_op_tuning_describe),
	CTRL_ROUTE_OP("SageMaker.ListHyperParameterTuningJobs",
		      ctrl_op_tuning_list),
	CTRL_ROUTE_OP("SageMaker.StopHyperParameterTuningJob",
		      ctrl_op_tuning_stop),
	CTRL_ROUTE_OP("SageMaker.DeleteHyperParameterTuningJob",
		      ctrl_op_tuning_delete),
	CTRL_ROUTE_OP("SageMaker.ListTrainingJobsForHyperParameterTuningJob",
		      ctrl_op_tuning_children),
};

const struct ctrl_route_block ctrl_op_routes = CTRL_ROUTE_BLOCK(rows);
