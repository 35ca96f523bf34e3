#define LOG_TAG "batch"

/*
 * Service jobs (docs/batch.md): SubmitServiceJob makes its training job
 * through ctrl_job_create(), as CreateTrainingJob does (same checks, the
 * caller as owner), and records the service job; the other operations
 * read its training job's state. A user key sees and acts on its own
 * service jobs only; another's is answered as one that does not exist.
 * The rows of the whole API are at the end.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "api/batch.h"
#include "controller/batch.h"
#include "controller/batch/batch_int.h"
#include "controller/ctrl.h"
#include "controller/ops.h"
#include "controller/route.h"
#include "db/batch.h"
#include "common/err.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define NO_JOB "Service job '%.64s' does not exist"

/* The queue's checks of a submission: its policy asks for a share
 * identifier or a quota share, and refuses the other. */
static int check_queue(struct ctrl_ctx *ctx, const struct api_batch_submit *s,
		       const struct db_batch_object *q, struct buf *err)
{
	struct db_batch_object p, share;
	const char *kind = NULL;
	int ret = 0;

	memset(&p, 0, sizeof(p));
	if (strcmp(q->state, "ENABLED")) {
		(void)buf_addf(err, "jobQueue: job queue '%s' is %s", q->name,
			       q->state);
		return ERR_INVALID;
	}
	if (q->policy_arn &&
	    !db_batch_object_find(ctx->db, "scheduling-policy", q->policy_arn,
				  NULL, &p, err))
		kind = p.policy_kind;
	buf_reset(err);
	if ((kind && !strcmp(kind, "FAIRSHARE")) != !!s->share_identifier) {
		(void)buf_addf(err,
			       "shareIdentifier is %s by job queue '%s': its "
			       "scheduling policy is %sfair share",
			       s->share_identifier ? "not taken" : "required",
			       q->name, s->share_identifier ? "not " : "");
		ret = ERR_INVALID;
	} else if ((kind && !strcmp(kind, "QUOTA_SHARE")) != !!s->quota_share) {
		(void)buf_addf(err,
			       "quotaShareName is %s by job queue '%s': its "
			       "scheduling policy is %sa quota-share policy",
			       s->quota_share ? "not taken" : "required",
			       q->name, s->quota_share ? "not " : "");
		ret = ERR_INVALID;
	}
	if (!ret && s->quota_share) {
		ret = db_batch_object_find(ctx->db, "quota-share",
					   s->quota_share, q->arn, &share, err);
		if (ret == ERR_NOTFOUND) {
			buf_reset(err);
			(void)buf_addf(err,
				       "quotaShareName: job queue '%s' has no "
				       "quota share '%.64s'",
				       q->name, s->quota_share);
		}
		if (!ret)
			db_batch_object_release(&share);
	}
	db_batch_object_release(&p);
	return ret;
}

static void new_job_id(char id[37])
{
	unsigned char b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		memset(b, 0x5a, sizeof(b));
	hex_uuid(b, id);
}

/* The training job of s and the service job's row; j's strings owned. */
static int make_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const struct api_batch_submit *s,
		    const struct db_batch_object *q, const char *body,
		    size_t len, struct db_service_job *j, struct buf *err)
{
	struct buf what = BUF_INIT, dflt = BUF_INIT;
	char *payload = NULL, *tj_arn = NULL;
	char id[37];
	int ret;

	new_job_id(id);
	(void)buf_addf(&dflt, "%.54s-%.8s", s->job_name, id);
	ret = api_batch_payload(s, dflt.data, &payload, &j->training_job, err);
	if (ret)
		goto out;
	(void)buf_addf(&what, "service-job/%s", id);
	j->job_id = xstrdup(id);
	j->arn = ctrl_batch_arn(ctx, what.data);
	j->name = xstrdup(s->job_name);
	j->queue_arn = xstrdup(q->arn);
	j->share_identifier =
		s->share_identifier ? xstrdup(s->share_identifier) : NULL;
	j->quota_share = s->quota_share ? xstrdup(s->quota_share) : NULL;
	j->priority = s->priority;
	j->owner = xstrdup(who->owner ? who->owner : "");
	j->created_ms = time_now_ms();
	j->client_token = s->client_token ? xstrdup(s->client_token) : NULL;
	j->request_json = xstrndup(body, len);
	j->attempts = s->attempts;
	j->timeout_s = s->timeout_s;
	j->preemption_retries = s->preemption_retries;
	/* Both rows in one transaction: a scheduling pass never sees the
	 * training job without its queue and share. */
	ret = ctrl_job_create_service(ctx, who, payload, strlen(payload), j,
				      &tj_arn, err);
	if (ret == ERR_CONFLICT && !err->len) {
		(void)buf_addf(err,
			       "serviceRequestPayload: a training job named "
			       "'%s' already exists",
			       j->training_job);
		ret = ERR_INVALID;
	} else if (ret == ERR_INVALID || ret == ERR_LIMIT ||
		   ret == ERR_NOTFOUND) {
		/* The training job's validator names the payload's member. */
		struct buf msg = BUF_INIT;

		(void)buf_addf(&msg, "serviceRequestPayload: %s", err->data);
		buf_reset(err);
		(void)buf_adds(err, msg.data);
		buf_release(&msg);
		ret = ERR_INVALID;
	}
out:
	free(payload);
	free(tj_arn);
	buf_release(&what);
	buf_release(&dflt);
	return ret;
}

static void answer_job(const struct db_service_job *j,
		       struct ctrl_response *resp)
{
	struct buf out = BUF_INIT;

	if (api_batch_answer3("jobArn", j->arn, "jobName", j->name, "jobId",
			      j->job_id, &out))
		ctrl_batch_reply_err(resp, ERR_INTERNAL, "answer too big");
	else
		ctrl_reply_json(resp, &out);
	buf_release(&out);
}

/* An earlier submission of who with the same clientToken: 1 answered. */
static int idempotent(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      const struct api_batch_submit *s, const char *body,
		      size_t len, struct ctrl_response *resp)
{
	struct db_service_job j;
	struct buf err = BUF_INIT;

	if (!s->client_token ||
	    db_service_job_get(ctx->db, NULL, who->owner ? who->owner : "",
			       s->client_token, &j, &err)) {
		buf_release(&err);
		return 0;
	}
	if (strlen(j.request_json) == len && !memcmp(j.request_json, body, len))
		answer_job(&j, resp);
	else
		ctrl_reply_err(resp, CTRL_E_CLIENT,
			       "clientToken was used for a different request");
	db_service_job_release(&j);
	buf_release(&err);
	return 1;
}

static void submit(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		   const char *body, size_t len, struct ctrl_response *resp)
{
	struct api_batch_submit s;
	struct db_batch_object q;
	struct db_service_job j;
	struct buf err = BUF_INIT;
	int ret = api_batch_submit_parse(body, len, &s, &err);

	memset(&q, 0, sizeof(q));
	memset(&j, 0, sizeof(j));
	if (!ret && idempotent(ctx, who, &s, body, len, resp))
		goto out;
	if (!ret) {
		ret = db_batch_object_find(ctx->db, "job-queue", s.queue, NULL,
					   &q, &err);
		if (ret == ERR_NOTFOUND) {
			buf_reset(&err);
			(void)buf_addf(&err,
				       "jobQueue: job queue '%.200s' does not "
				       "exist",
				       s.queue);
		}
	}
	if (!ret && who->cred &&
	    !api_credential_queue_allowed(who->cred, q.name)) {
		(void)buf_addf(&err,
			       "this key may not submit to job queue '%s': "
			       "its profile's trainctl_batch_queues does not "
			       "name it",
			       q.name);
		ctrl_reply_err(resp, CTRL_E_ACCESS_DENIED, err.data);
		goto out;
	}
	if (!ret)
		ret = check_queue(ctx, &s, &q, &err);
	if (!ret)
		ret = make_job(ctx, who, &s, &q, body, len, &j, &err);
	if (ret) {
		ctrl_batch_reply_err(resp, ret, err.data);
		goto out;
	}
	log_info("service job '%s' (%s) submitted to '%s': training job '%s'",
		 j.name, j.job_id, q.name, j.training_job);
	answer_job(&j, resp);
out:
	db_service_job_release(&j);
	db_batch_object_release(&q);
	api_batch_submit_release(&s);
	buf_release(&err);
}

/* The service job of job_id as who may see it: 0 or ERR_NOTFOUND. */
static int get_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		   const char *job_id, struct db_service_job *j,
		   struct buf *err)
{
	int ret = db_service_job_get(ctx->db, job_id, NULL, NULL, j, err);

	if (!ret && !ctrl_caller_sees(who, j->owner)) {
		db_service_job_release(j);
		ret = ERR_NOTFOUND;
	}
	if (ret == ERR_NOTFOUND) {
		buf_reset(err);
		(void)buf_addf(err, NO_JOB, job_id);
	}
	return ret;
}

static void view_of(const struct db_service_job *j, struct api_batch_job *v)
{
	memset(v, 0, sizeof(*v));
	v->job_id = j->job_id;
	v->arn = j->arn;
	v->name = j->name;
	v->queue_arn = j->queue_arn;
	v->share_identifier = j->share_identifier;
	v->quota_share = j->quota_share;
	v->priority = j->priority;
	v->request_json = j->request_json;
	v->created_ms = j->created_ms;
	v->tj_arn = j->tj_arn ? j->tj_arn : "";
	v->tj_status = j->tj_status;
	v->tj_secondary = j->tj_secondary;
	v->tj_reason = j->tj_reason;
	v->tj_start_ms = j->tj_start_ms;
	v->tj_end_ms = j->tj_end_ms;
}

static void job_op(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		   const char *op, const char *body, size_t len,
		   struct ctrl_response *resp)
{
	struct api_batch_job_req r;
	struct api_batch_job v;
	struct db_service_job j;
	struct buf err = BUF_INIT, out = BUF_INIT;
	int ret = api_batch_job_req_parse(op, body, len, &r, &err);

	memset(&j, 0, sizeof(j));
	if (!ret)
		ret = get_job(ctx, who, r.job_id, &j, &err);
	if (!ret && op[0] == 'U')
		ret = db_service_job_set_priority(ctx->db, j.job_id, r.priority,
						  &err);
	if (!ret && op[0] == 'T') {
		ret = ctrl_job_stop_with(ctx, j.training_job, r.reason, &err);
		if (ret == ERR_INVALID) { /* already ended: nothing to do */
			ret = 0;
			buf_reset(&err);
		}
	}
	if (ret) {
		ctrl_batch_reply_err(resp, ret, err.data);
	} else if (op[0] == 'D') {
		view_of(&j, &v);
		if (api_batch_job_write(&v, 0, &out))
			ctrl_batch_reply_err(resp, ERR_INTERNAL,
					     "a stored service job is corrupt");
		else
			ctrl_reply_json(resp, &out);
	} else if (op[0] == 'U') {
		answer_job(&j, resp);
	} else {
		log_info("service job '%s' terminated: %s", j.job_id, r.reason);
		resp->status = 200;
		buf_reset(&resp->body);
		(void)buf_adds(&resp->body, "{}");
	}
	db_service_job_release(&j);
	api_batch_job_req_release(&r);
	buf_release(&err);
	buf_release(&out);
}

/* Appends the entries of js that pass r's status (at most room). */
static size_t add_entries(const struct db_service_job *js, size_t n,
			  const struct api_batch_jobs_list *r, size_t room,
			  int64_t *last_seq, struct buf *items)
{
	struct api_batch_job v;
	size_t i, added = 0;

	for (i = 0; i < n && added < room; i++) {
		*last_seq = js[i].seq;
		view_of(&js[i], &v);
		if (r->status &&
		    strcmp(api_batch_job_status(v.tj_status, v.tj_secondary),
			   r->status))
			continue;
		if (items->len)
			(void)buf_addch(items, ',');
		if (!api_batch_job_write(&v, 1, items))
			added++;
	}
	return added;
}

static int list_jobs(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		     const struct api_batch_jobs_list *r, struct buf *out,
		     struct buf *err)
{
	struct db_service_job_query q = { 0 };
	struct db_batch_object queue;
	struct db_service_job *js = NULL;
	struct buf items = BUF_INIT, tok = BUF_INIT;
	size_t n = 0, have = 0;
	int ret = 0;

	memset(&queue, 0, sizeof(queue));
	if (r->queue)
		ret = db_batch_object_find(ctx->db, "job-queue", r->queue, NULL,
					   &queue, err);
	if (ret == ERR_NOTFOUND) {
		buf_reset(err);
		(void)buf_addf(err,
			       "jobQueue: job queue '%.200s' does not "
			       "exist",
			       r->queue);
	}
	q.queue_arn = queue.arn;
	q.owner = who->admin ? NULL : who->owner;
	q.name = r->name;
	q.before_ms = r->before_ms;
	q.after_ms = r->after_ms;
	q.after_seq = r->next_token ? strtoll(r->next_token, NULL, 10) : 0;
	q.limit = 500;
	while (!ret && have < (size_t)r->max_results) {
		ret = db_service_job_list(ctx->db, &q, &js, &n, err);
		if (ret || !n)
			break;
		have += add_entries(js, n, r, (size_t)r->max_results - have,
				    &q.after_seq, &items);
		db_service_jobs_free(js, n);
		js = NULL;
		if (n < (size_t)q.limit && have < (size_t)r->max_results) {
			q.after_seq = 0;
			break;
		}
	}
	if (!ret && have == (size_t)r->max_results)
		(void)buf_addf(&tok, "%lld", (long long)q.after_seq);
	if (!ret && api_batch_items_answer("jobSummaryList", items.data,
					   tok.len ? tok.data : NULL, out))
		ret = ERR_INTERNAL;
	db_service_jobs_free(js, n);
	db_batch_object_release(&queue);
	buf_release(&items);
	buf_release(&tok);
	return ret;
}

static void list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		 const char *body, size_t len, struct ctrl_response *resp)
{
	struct api_batch_jobs_list r;
	struct buf err = BUF_INIT, out = BUF_INIT;
	int ret = api_batch_jobs_list_parse(body, len, &r, &err);

	if (!ret)
		ret = list_jobs(ctx, who, &r, &out, &err);
	if (ret)
		ctrl_batch_reply_err(resp, ret, err.data);
	else
		ctrl_reply_json(resp, &out);
	api_batch_jobs_list_release(&r);
	buf_release(&err);
	buf_release(&out);
}

static void describe_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const char *body, size_t len,
			 struct ctrl_response *resp)
{
	job_op(ctx, who, "DescribeServiceJob", body, len, resp);
}

static void update_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		       const char *body, size_t len, struct ctrl_response *resp)
{
	job_op(ctx, who, "UpdateServiceJob", body, len, resp);
}

static void terminate_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			  const char *body, size_t len,
			  struct ctrl_response *resp)
{
	job_op(ctx, who, "TerminateServiceJob", body, len, resp);
}

#define ADMIN_ONLY                                                         \
	"creating, updating and deleting AWS Batch service environments, " \
	"job queues, scheduling policies and quota shares needs an admin " \
	"key"

/* An operation by anyone with a key, signed for service batch. */
#define BATCH_ROW(path_, op_)                                             \
	{                                                                 \
		CTRL_ROW(CTRL_LISTEN_API, "POST", CTRL_MATCH_PATH, path_, \
			 CTRL_AUTH_API, CTRL_BODY_BUFFERED, NULL),        \
			.op = op_, .service = "batch"                     \
	}
/* The same, by an admin key only. */
#define BATCH_ADMIN_ROW(path_, op_)                                       \
	{                                                                 \
		CTRL_ROW(CTRL_LISTEN_API, "POST", CTRL_MATCH_PATH, path_, \
			 CTRL_AUTH_ADMIN, CTRL_BODY_BUFFERED, NULL),      \
			.op = op_, .service = "batch", .deny = ADMIN_ONLY \
	}

static const struct ctrl_route rows[] = {
	BATCH_ADMIN_ROW("/v1/createserviceenvironment", ctrl_batch_create_env),
	BATCH_ADMIN_ROW("/v1/updateserviceenvironment", ctrl_batch_update_env),
	BATCH_ADMIN_ROW("/v1/deleteserviceenvironment", ctrl_batch_delete_env),
	BATCH_ROW("/v1/describeserviceenvironments", ctrl_batch_describe_envs),
	BATCH_ADMIN_ROW("/v1/createjobqueue", ctrl_batch_create_queue),
	BATCH_ADMIN_ROW("/v1/updatejobqueue", ctrl_batch_update_queue),
	BATCH_ADMIN_ROW("/v1/deletejobqueue", ctrl_batch_delete_queue),
	BATCH_ROW("/v1/describejobqueues", ctrl_batch_describe_queues),
	BATCH_ADMIN_ROW("/v1/createschedulingpolicy", ctrl_batch_create_policy),
	BATCH_ADMIN_ROW("/v1/updateschedulingpolicy", ctrl_batch_update_policy),
	BATCH_ADMIN_ROW("/v1/deleteschedulingpolicy", ctrl_batch_delete_policy),
	BATCH_ROW("/v1/describeschedulingpolicies",
		  ctrl_batch_describe_policies),
	BATCH_ROW("/v1/listschedulingpolicies", ctrl_batch_list_policies),
	BATCH_ADMIN_ROW("/v1/createquotashare", ctrl_batch_create_share),
	BATCH_ADMIN_ROW("/v1/updatequotashare", ctrl_batch_update_share),
	BATCH_ADMIN_ROW("/v1/deletequotashare", ctrl_batch_delete_share),
	BATCH_ROW("/v1/describequotashare", ctrl_batch_describe_share),
	BATCH_ROW("/v1/listquotashares", ctrl_batch_list_shares),
	BATCH_ROW("/v1/submitservicejob", submit),
	BATCH_ROW("/v1/describeservicejob", describe_job),
	BATCH_ROW("/v1/listservicejobs", list),
	BATCH_ROW("/v1/updateservicejob", update_job),
	BATCH_ROW("/v1/terminateservicejob", terminate_job),
};

const struct ctrl_route_block ctrl_batch_routes = CTRL_ROUTE_BLOCK(rows);
