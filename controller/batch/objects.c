#define LOG_TAG "batch"

/*
 * Service environments, job queues, scheduling policies and quota shares
 * (docs/batch.md). A create or update is parsed by api/batch.h, its names
 * resolved to the ARNs of objects that exist, and stored as its canonical
 * request with the columns a scheduler reads (db/batch.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/batch.h"
#include "controller/batch/batch_int.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "db/batch.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

void ctrl_batch_reply_err(struct ctrl_response *resp, int code, const char *msg)
{
	if (code == ERR_INVALID || code == ERR_NOTFOUND ||
	    code == ERR_CONFLICT || code == ERR_AUTH || code == ERR_LIMIT) {
		ctrl_reply_err(resp, CTRL_E_CLIENT,
			       msg && *msg ? msg : "Invalid request");
		return;
	}
	log_error("batch: %s", msg ? msg : "");
	ctrl_reply_err(resp, CTRL_E_SERVER,
		       "We encountered an internal error. Please try again.");
}

char *ctrl_batch_arn(const struct ctrl_ctx *ctx, const char *what)
{
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, "arn:aws:batch:%s:%s:%s", ctx->cfg.region,
		       ctx->cfg.account_id, what);
	return buf_detach(&b, NULL);
}

static const char *const policy_kinds[] = { NULL, "FAIRSHARE", "QUOTA_SHARE" };

/* An object's ARN: kind/name, a quota share's under its queue's. */
static char *object_arn(const struct ctrl_ctx *ctx,
			const struct api_batch_object *o, const char *qname)
{
	struct buf w = BUF_INIT;
	char *arn;

	if (o->kind == API_BATCH_SHARE)
		(void)buf_addf(&w, "job-queue/%s/quota-share/%s", qname,
			       o->name);
	else
		(void)buf_addf(&w, "%s/%s", api_batch_kind_name(o->kind),
			       o->name);
	arn = ctrl_batch_arn(ctx, w.data);
	buf_release(&w);
	return arn;
}

/* Whether unit is NUM_INSTANCES or an instance type some host serves. */
static int unit_known(struct ctrl_ctx *ctx, const char *unit)
{
	size_t i;
	int ok = !strcmp(unit, "NUM_INSTANCES");

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts && !ok; i++) {
		const struct ctrl_host *h = ctx->hosts[i];

		ok = !h->removed &&
		     (h->instance_type ? !strcmp(h->instance_type, unit) :
					 !strncmp(unit, "ml.", 3));
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	return ok;
}

static int check_units(struct ctrl_ctx *ctx, const struct api_batch_object *o,
		       struct buf *err)
{
	size_t i;

	for (i = 0; i < o->n_limits; i++)
		if (!unit_known(ctx, o->limits[i].unit)) {
			(void)buf_addf(err,
				       "capacityLimits[%zu].capacityUnit "
				       "'%.64s' is neither NUM_INSTANCES nor "
				       "an instance type of this cluster's "
				       "hosts",
				       i, o->limits[i].unit);
			return ERR_INVALID;
		}
	return 0;
}

/* Replaces *ident (a name or ARN of kind) by the ARN of the object. */
static int resolve(struct ctrl_ctx *ctx, const char *kind, const char *member,
		   char **ident, struct db_batch_object *found, struct buf *err)
{
	struct db_batch_object o;
	int ret = db_batch_object_find(ctx->db, kind, *ident, NULL, &o, err);

	if (ret == ERR_NOTFOUND) {
		buf_reset(err);
		(void)buf_addf(err, "%s: %s '%.200s' does not exist", member,
			       kind, *ident);
	}
	if (ret)
		return ret;
	free(*ident);
	*ident = xstrdup(o.arn);
	if (found)
		*found = o;
	else
		db_batch_object_release(&o);
	return 0;
}

static int resolve_queue(struct ctrl_ctx *ctx, struct api_batch_object *o,
			 struct buf *err)
{
	size_t i;
	int ret = 0;

	if (o->policy_arn)
		ret = resolve(ctx, "scheduling-policy", "schedulingPolicyArn",
			      &o->policy_arn, NULL, err);
	for (i = 0; i < o->n_envs && !ret; i++)
		ret = resolve(ctx, "service-environment",
			      "serviceEnvironmentOrder", &o->envs[i], NULL,
			      err);
	return ret;
}

static int resolve_share(struct ctrl_ctx *ctx, struct api_batch_object *o,
			 char **qname, struct buf *err)
{
	struct db_batch_object q, p;
	int ret = check_units(ctx, o, err);

	if (!ret)
		ret = resolve(ctx, "job-queue", "jobQueue", &o->queue, &q, err);
	if (ret)
		return ret;
	*qname = xstrdup(q.name);
	memset(&p, 0, sizeof(p));
	if (q.policy_arn)
		ret = db_batch_object_find(ctx->db, "scheduling-policy",
					   q.policy_arn, NULL, &p, err);
	if (!ret && (!p.policy_kind || strcmp(p.policy_kind, "QUOTA_SHARE"))) {
		buf_reset(err);
		(void)buf_addf(
			err,
			"jobQueue: job queue '%s' has no quotaSharePolicy "
			"scheduling policy; quota shares belong to such "
			"queues",
			q.name);
		ret = ERR_INVALID;
	}
	db_batch_object_release(&p);
	db_batch_object_release(&q);
	return ret;
}

static int resolve_refs(struct ctrl_ctx *ctx, struct api_batch_object *o,
			char **qname, struct buf *err)
{
	switch (o->kind) {
	case API_BATCH_ENV:
		return check_units(ctx, o, err);
	case API_BATCH_QUEUE:
		return resolve_queue(ctx, o, err);
	case API_BATCH_SHARE:
		return resolve_share(ctx, o, qname, err);
	default:
		return 0;
	}
}

/* The row of o (arn given), with pointers into o for its children. */
static void row_of(const struct api_batch_object *o, const char *arn,
		   const char *request, struct db_batch_object *r,
		   const char **units, int64_t *maxes, const char **ids,
		   double *weights)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	r->arn = (char *)arn;
	r->kind = (char *)api_batch_kind_name(o->kind);
	r->name = o->name;
	r->queue_arn = o->queue;
	r->policy_arn = o->policy_arn;
	r->policy_kind = (char *)(o->kind == API_BATCH_POLICY ?
					  policy_kinds[o->policy_kind] :
					  NULL);
	r->state = o->state;
	r->strategy = o->strategy;
	r->in_share_preemption = o->in_share_preemption;
	r->request_json = (char *)request;
	r->priority = o->priority;
	r->reservation = o->reservation;
	r->decay_s = o->decay_s;
	r->borrow_limit = o->borrow_limit;
	r->created_ms = time_now_ms();
	for (i = 0; i < o->n_limits; i++) {
		units[i] = o->limits[i].unit;
		maxes[i] = o->limits[i].max;
	}
	r->limit_units = units;
	r->limit_max = maxes;
	r->n_limits = o->n_limits;
	for (i = 0; i < o->n_weights; i++) {
		ids[i] = o->weights[i].id;
		weights[i] = o->weights[i].weight;
	}
	r->weight_ids = ids;
	r->weights = weights;
	r->n_weights = o->n_weights;
	r->envs = (const char *const *)o->envs;
	r->n_envs = o->n_envs;
}

/* Resolves and stores o (arn NULL: a new object). *out_arn: its ARN. */
static int store(struct ctrl_ctx *ctx, struct api_batch_object *o,
		 const char *arn, char **out_arn, struct buf *err)
{
	const char **units = xcalloc(o->n_limits + 1, sizeof(*units));
	int64_t *maxes = xcalloc(o->n_limits + 1, sizeof(*maxes));
	const char **ids = xcalloc(o->n_weights + 1, sizeof(*ids));
	double *weights = xcalloc(o->n_weights + 1, sizeof(*weights));
	struct buf request = BUF_INIT;
	struct db_batch_object row;
	char *qname = NULL;
	int ret = resolve_refs(ctx, o, &qname, err);

	*out_arn = NULL;
	if (ret)
		goto out;
	*out_arn = arn ? xstrdup(arn) : object_arn(ctx, o, qname);
	if (api_batch_object_request(o, &request)) {
		ret = ERR_INVALID;
		(void)buf_adds(err, "the request is too big");
		goto out;
	}
	row_of(o, *out_arn, request.data, &row, units, maxes, ids, weights);
	ret = db_batch_object_put(ctx->db, &row, !arn, err);
	if (ret == ERR_CONFLICT) {
		buf_reset(err);
		(void)buf_addf(err, "%s '%s' already exists",
			       api_batch_kind_name(o->kind), o->name);
	}
out:
	if (ret) {
		free(*out_arn);
		*out_arn = NULL;
	}
	free(qname);
	free(units);
	free(maxes);
	free(ids);
	free(weights);
	buf_release(&request);
	return ret;
}

/* The members an answer names an object by, per kind. */
static const char *const name_keys[API_BATCH_NKINDS] = {
	"serviceEnvironmentName", "jobQueueName", "name", "quotaShareName"
};
static const char *const arn_keys[API_BATCH_NKINDS] = { "serviceEnvironmentArn",
							"jobQueueArn", "arn",
							"quotaShareArn" };

static void answer_named(enum api_batch_kind k, const char *name,
			 const char *arn, struct ctrl_response *resp)
{
	struct buf out = BUF_INIT;

	if (api_batch_answer3(name_keys[k], name, arn_keys[k], arn, NULL, NULL,
			      &out))
		ctrl_batch_reply_err(resp, ERR_INTERNAL, "answer too big");
	else
		ctrl_reply_json(resp, &out);
	buf_release(&out);
}

static void create(struct ctrl_ctx *ctx, enum api_batch_kind k,
		   const char *body, size_t len, struct ctrl_response *resp)
{
	struct api_batch_object o;
	struct buf err = BUF_INIT;
	char *arn = NULL;
	int ret = api_batch_object_parse(k, body, len, &o, &err);

	if (!ret)
		ret = store(ctx, &o, NULL, &arn, &err);
	if (ret) {
		ctrl_batch_reply_err(resp, ret, err.data);
	} else {
		log_info("%s '%s' created", api_batch_kind_name(k), o.name);
		answer_named(k, o.name, arn, resp);
	}
	free(arn);
	api_batch_object_release(&o);
	buf_release(&err);
}

static const char *const kinds[API_BATCH_NKINDS] = {
	"service-environment", "job-queue", "scheduling-policy", "quota-share"
};

/* The object named by ident, or a ClientException saying it is not. */
static int find(struct ctrl_ctx *ctx, enum api_batch_kind k, const char *ident,
		struct db_batch_object *o, struct buf *err)
{
	int ret = db_batch_object_find(ctx->db, kinds[k], ident, NULL, o, err);

	if (ret == ERR_NOTFOUND) {
		buf_reset(err);
		(void)buf_addf(err, "%s '%.200s' does not exist", kinds[k],
			       ident);
	}
	return ret;
}

static void update(struct ctrl_ctx *ctx, enum api_batch_kind k,
		   const char *body, size_t len, struct ctrl_response *resp)
{
	struct api_batch_object o;
	struct db_batch_object cur;
	struct buf err = BUF_INIT;
	char *ident = NULL, *merged = NULL, *arn = NULL;
	int ret;

	memset(&o, 0, sizeof(o));
	memset(&cur, 0, sizeof(cur));
	ret = api_batch_update_merge(k, body, len, NULL, &ident, &merged, &err);
	if (!ret)
		ret = find(ctx, k, ident, &cur, &err);
	free(ident);
	if (!ret)
		ret = api_batch_update_merge(k, body, len, cur.request_json,
					     &ident, &merged, &err);
	if (!ret)
		ret = api_batch_object_parse(k, merged, strlen(merged), &o,
					     &err);
	if (!ret)
		ret = store(ctx, &o, cur.arn, &arn, &err);
	if (ret) {
		ctrl_batch_reply_err(resp, ret, err.data);
	} else if (k == API_BATCH_POLICY) {
		log_info("%s '%s' updated", kinds[k], o.name);
		resp->status = 200;
		buf_reset(&resp->body);
		(void)buf_adds(&resp->body, "{}");
	} else {
		log_info("%s '%s' updated", kinds[k], o.name);
		answer_named(k, o.name, arn, resp);
	}
	free(ident);
	free(merged);
	free(arn);
	api_batch_object_release(&o);
	db_batch_object_release(&cur);
	buf_release(&err);
}

static const char *const delete_ops[API_BATCH_NKINDS] = {
	"DeleteServiceEnvironment", "DeleteJobQueue", "DeleteSchedulingPolicy",
	"DeleteQuotaShare"
};

static void delete (struct ctrl_ctx *ctx, enum api_batch_kind k,
		    const char *body, size_t len, struct ctrl_response *resp)
{
	struct db_batch_object cur;
	struct buf err = BUF_INIT;
	struct buf msg = BUF_INIT;
	char *ident = NULL;
	int ret = api_batch_ident_parse(delete_ops[k], body, len, &ident, &err);

	memset(&cur, 0, sizeof(cur));
	if (!ret)
		ret = find(ctx, k, ident, &cur, &err);
	if (!ret)
		ret = db_batch_object_delete(ctx->db, kinds[k], cur.arn, &err);
	if (ret == ERR_CONFLICT) {
		(void)buf_addf(&msg, "%s '%s' cannot be deleted: %s", kinds[k],
			       cur.name, err.data);
		ctrl_batch_reply_err(resp, ret, msg.data);
	} else if (ret) {
		ctrl_batch_reply_err(resp, ret, err.data);
	} else {
		log_info("%s '%s' deleted", kinds[k], cur.name);
		resp->status = 200;
		buf_reset(&resp->body);
		(void)buf_adds(&resp->body, "{}");
	}
	free(ident);
	db_batch_object_release(&cur);
	buf_release(&err);
	buf_release(&msg);
}

/* Appends the items of objs (comma-separated) to items. */
static int items_of(const struct db_batch_object *objs, size_t n,
		    enum api_batch_kind k, int list_form, struct buf *items)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < n && !ret; i++) {
		if (items->len)
			(void)buf_addch(items, ',');
		ret = api_batch_object_item(objs[i].request_json, k,
					    objs[i].arn, list_form, items);
	}
	return ret;
}

static const char *const list_members[API_BATCH_NKINDS] = {
	"serviceEnvironments", "jobQueues", "schedulingPolicies", "quotaShares"
};

/* The named objects (missing ones left out, as AWS does), or a page. */
static int collect(struct ctrl_ctx *ctx, enum api_batch_kind k,
		   const struct api_batch_list_req *r, const char *queue_arn,
		   struct db_batch_object **objs, size_t *n, char **next,
		   struct buf *err)
{
	int limit = r->max_results ? r->max_results : 100;
	size_t i;
	int ret = 0;

	*next = NULL;
	if (r->n_names) {
		*objs = xcalloc(r->n_names, sizeof(**objs));
		*n = 0;
		for (i = 0; i < r->n_names && !ret; i++) {
			ret = db_batch_object_find(ctx->db, kinds[k],
						   r->names[i], NULL,
						   &(*objs)[*n], err);
			if (!ret)
				(*n)++;
			else if (ret == ERR_NOTFOUND)
				ret = 0;
		}
		return ret;
	}
	ret = db_batch_object_list(ctx->db, kinds[k], queue_arn, r->next_token,
				   limit + 1, objs, n, err);
	if (!ret && *n > (size_t)limit) {
		db_batch_object_release(&(*objs)[limit]);
		*n = (size_t)limit;
		*next = xstrdup((*objs)[limit - 1].arn);
	}
	return ret;
}

static void describe(struct ctrl_ctx *ctx, enum api_batch_kind k,
		     const char *op, int list_form, const char *body,
		     size_t len, struct ctrl_response *resp)
{
	struct api_batch_list_req r;
	struct db_batch_object q;
	struct db_batch_object *objs = NULL;
	struct buf err = BUF_INIT;
	struct buf items = BUF_INIT;
	struct buf out = BUF_INIT;
	char *next = NULL;
	size_t n = 0;
	int ret = api_batch_list_parse(op, body, len, &r, &err);

	memset(&q, 0, sizeof(q));
	if (!ret && r.queue)
		ret = find(ctx, API_BATCH_QUEUE, r.queue, &q, &err);
	if (!ret)
		ret = collect(ctx, k, &r, q.arn, &objs, &n, &next, &err);
	if (!ret && items_of(objs, n, k, list_form, &items)) {
		ret = ERR_INTERNAL;
		(void)buf_adds(&err, "a stored object is corrupt");
	}
	if (!ret &&
	    api_batch_items_answer(list_members[k], items.data, next, &out))
		ret = ERR_INTERNAL;
	if (ret)
		ctrl_batch_reply_err(resp, ret, err.data);
	else
		ctrl_reply_json(resp, &out);
	db_batch_objects_free(objs, n);
	db_batch_object_release(&q);
	api_batch_list_req_release(&r);
	free(next);
	buf_release(&err);
	buf_release(&items);
	buf_release(&out);
}

void ctrl_batch_describe_share(struct ctrl_ctx *ctx,
			       const struct ctrl_caller *who, const char *body,
			       size_t len, struct ctrl_response *resp)
{
	struct db_batch_object o;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	char *ident = NULL;
	int ret = api_batch_ident_parse("DescribeQuotaShare", body, len, &ident,
					&err);

	(void)who;
	memset(&o, 0, sizeof(o));
	if (!ret)
		ret = find(ctx, API_BATCH_SHARE, ident, &o, &err);
	if (!ret && api_batch_object_item(o.request_json, API_BATCH_SHARE,
					  o.arn, 0, &out)) {
		ret = ERR_INTERNAL;
		(void)buf_adds(&err, "a stored object is corrupt");
	}
	if (ret)
		ctrl_batch_reply_err(resp, ret, err.data);
	else
		ctrl_reply_json(resp, &out);
	free(ident);
	db_batch_object_release(&o);
	buf_release(&err);
	buf_release(&out);
}

#define OBJ_OP(fn, call)                                                      \
	void ctrl_batch_##fn(struct ctrl_ctx *ctx,                            \
			     const struct ctrl_caller *who, const char *body, \
			     size_t len, struct ctrl_response *resp)          \
	{                                                                     \
		(void)who;                                                    \
		call;                                                         \
	}

OBJ_OP(create_env, create(ctx, API_BATCH_ENV, body, len, resp))
OBJ_OP(update_env, update(ctx, API_BATCH_ENV, body, len, resp))
OBJ_OP(delete_env, delete (ctx, API_BATCH_ENV, body, len, resp))
OBJ_OP(describe_envs,
       describe(ctx, API_BATCH_ENV, "DescribeServiceEnvironments", 0, body, len,
		resp))
OBJ_OP(create_queue, create(ctx, API_BATCH_QUEUE, body, len, resp))
OBJ_OP(update_queue, update(ctx, API_BATCH_QUEUE, body, len, resp))
OBJ_OP(delete_queue, delete (ctx, API_BATCH_QUEUE, body, len, resp))
OBJ_OP(describe_queues,
       describe(ctx, API_BATCH_QUEUE, "DescribeJobQueues", 0, body, len, resp))
OBJ_OP(create_policy, create(ctx, API_BATCH_POLICY, body, len, resp))
OBJ_OP(update_policy, update(ctx, API_BATCH_POLICY, body, len, resp))
OBJ_OP(delete_policy, delete (ctx, API_BATCH_POLICY, body, len, resp))
OBJ_OP(describe_policies,
       describe(ctx, API_BATCH_POLICY, "DescribeSchedulingPolicies", 0, body,
		len, resp))
OBJ_OP(list_policies, describe(ctx, API_BATCH_POLICY, "ListSchedulingPolicies",
			       1, body, len, resp))
OBJ_OP(create_share, create(ctx, API_BATCH_SHARE, body, len, resp))
OBJ_OP(update_share, update(ctx, API_BATCH_SHARE, body, len, resp))
OBJ_OP(delete_share, delete (ctx, API_BATCH_SHARE, body, len, resp))
OBJ_OP(list_shares,
       describe(ctx, API_BATCH_SHARE, "ListQuotaShares", 1, body, len, resp))
