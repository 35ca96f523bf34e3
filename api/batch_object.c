/*
 * Service environments, job queues, scheduling policies and quota shares
 * on the wire (api/batch.h): create and update requests, their canonical
 * stored form, and the items of Describe and List.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/batch.h"
#include "api/batch_check.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

static const char *const kind_names[API_BATCH_NKINDS] = {
	"service-environment", "job-queue", "scheduling-policy", "quota-share"
};

static const char *const create_ops[API_BATCH_NKINDS] = {
	"CreateServiceEnvironment", "CreateJobQueue", "CreateSchedulingPolicy",
	"CreateQuotaShare"
};

static const char *const update_ops[API_BATCH_NKINDS] = {
	"UpdateServiceEnvironment", "UpdateJobQueue", "UpdateSchedulingPolicy",
	"UpdateQuotaShare"
};

/* The member of an Update that names its object. */
static const char *const update_idents[API_BATCH_NKINDS] = {
	"serviceEnvironment", "jobQueue", "arn", "quotaShareArn"
};

static const char *const name_members[API_BATCH_NKINDS] = {
	"serviceEnvironmentName", "jobQueueName", "name", "quotaShareName"
};

const char *api_batch_kind_name(enum api_batch_kind k)
{
	return kind_names[k];
}

static char *dup_member(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? xstrdup(s) : NULL;
}

static int name_ok(const char *name, struct buf *err, const char *member)
{
	size_t i, n = strlen(name);

	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_'))
			break;
	}
	if (n && n <= 128 && i == n)
		return 0;
	return api__invalid(err,
			    "%s must be 1..128 letters, digits, hyphens or "
			    "underscores",
			    member);
}

static int parse_limits(const json_t *arr, struct api_batch_object *o,
			struct buf *err)
{
	json_t *e;
	size_t i, j;

	if (!json_array_size(arr))
		return api__invalid(err, "capacityLimits must name at least "
					 "one capacityUnit");
	o->limits = xcalloc(json_array_size(arr), sizeof(*o->limits));
	json_array_foreach(arr, i, e)
	{
		const char *u =
			json_string_value(json_object_get(e, "capacityUnit"));
		json_t *max = json_object_get(e, "maxCapacity");

		if (!u || !max)
			return api__invalid(err,
					    "capacityLimits[%zu] needs "
					    "maxCapacity and capacityUnit",
					    i);
		for (j = 0; j < o->n_limits; j++)
			if (!strcmp(o->limits[j].unit, u))
				return api__invalid(
					err,
					"capacityLimits names "
					"capacityUnit '%.64s' twice",
					u);
		o->limits[o->n_limits].unit = xstrdup(u);
		o->limits[o->n_limits].max = json_integer_value(max);
		o->n_limits++;
	}
	return 0;
}

static int cmp_order(const void *a, const void *b)
{
	json_int_t x = json_integer_value(
		json_object_get(*(json_t *const *)a, "order"));
	json_int_t y = json_integer_value(
		json_object_get(*(json_t *const *)b, "order"));

	return x < y ? -1 : x > y;
}

static int parse_queue(const json_t *root, struct api_batch_object *o,
		       struct buf *err)
{
	const json_t *envs = json_object_get(root, "serviceEnvironmentOrder");
	const char *type =
		json_string_value(json_object_get(root, "jobQueueType"));
	json_t **sorted;
	size_t i;

	if (json_array_size(json_object_get(root, "computeEnvironmentOrder")))
		return api__invalid(err,
				    "computeEnvironmentOrder is not supported: "
				    "queues of SAGEMAKER_TRAINING take "
				    "serviceEnvironmentOrder");
	if (json_array_size(json_object_get(root, "jobStateTimeLimitActions")))
		return api__invalid(err, "jobStateTimeLimitActions is not "
					 "supported");
	if (!type || strcmp(type, "SAGEMAKER_TRAINING"))
		return api__invalid(err,
				    "jobQueueType must be SAGEMAKER_TRAINING");
	if (!json_array_size(envs))
		return api__invalid(err, "serviceEnvironmentOrder must name "
					 "at least one service environment");
	/* One pool of hosts serves a queue: a second environment's limits
	 * would not be applied, so it is refused (docs/queues.md). */
	if (json_array_size(envs) > 1)
		return api__invalid(err, "serviceEnvironmentOrder names %zu "
					 "service environments: a queue takes "
					 "one here",
				    json_array_size(envs));
	o->priority =
		(int)json_integer_value(json_object_get(root, "priority"));
	o->policy_arn = dup_member(root, "schedulingPolicyArn");
	sorted = xcalloc(json_array_size(envs), sizeof(*sorted));
	for (i = 0; i < json_array_size(envs); i++)
		sorted[i] = json_array_get(envs, i);
	qsort(sorted, json_array_size(envs), sizeof(*sorted), cmp_order);
	o->envs = xcalloc(json_array_size(envs), sizeof(*o->envs));
	for (i = 0; i < json_array_size(envs); i++) {
		if (i && !cmp_order(&sorted[i - 1], &sorted[i])) {
			free(sorted);
			return api__invalid(err, "serviceEnvironmentOrder "
						 "names one order twice");
		}
		o->envs[o->n_envs++] =
			dup_member(sorted[i], "serviceEnvironment");
	}
	free(sorted);
	return 0;
}

static int parse_policy(const json_t *root, struct api_batch_object *o,
			struct buf *err)
{
	const json_t *fair = json_object_get(root, "fairsharePolicy");
	const json_t *quota = json_object_get(root, "quotaSharePolicy");
	const json_t *dist;
	json_t *e;
	size_t i, j;

	if (fair && quota && !json_is_null(fair) && !json_is_null(quota))
		return api__invalid(err, "give fairsharePolicy or "
					 "quotaSharePolicy, not both");
	if (quota && !json_is_null(quota)) {
		o->policy_kind = API_BATCH_POLICY_QUOTA;
		return 0;
	}
	o->policy_kind = API_BATCH_POLICY_FAIRSHARE;
	o->decay_s =
		json_integer_value(json_object_get(fair, "shareDecaySeconds"));
	o->reservation = (int)json_integer_value(
		json_object_get(fair, "computeReservation"));
	dist = json_object_get(fair, "shareDistribution");
	o->weights = xcalloc(json_array_size(dist) + 1, sizeof(*o->weights));
	json_array_foreach(dist, i, e)
	{
		const char *id = json_string_value(
			json_object_get(e, "shareIdentifier"));
		json_t *w = json_object_get(e, "weightFactor");

		for (j = 0; j < o->n_weights; j++)
			if (!strcmp(o->weights[j].id, id))
				return api__invalid(
					err,
					"fairsharePolicy.shareDistribution "
					"names shareIdentifier '%.64s' twice",
					id);
		o->weights[o->n_weights].id = xstrdup(id);
		o->weights[o->n_weights].weight = w ? json_number_value(w) :
						      1.0;
		if (o->weights[o->n_weights].weight <= 0)
			o->weights[o->n_weights].weight = 1.0;
		o->n_weights++;
	}
	return 0;
}

static int parse_share(const json_t *root, struct api_batch_object *o,
		       struct buf *err)
{
	const json_t *rs =
		json_object_get(root, "resourceSharingConfiguration");
	const json_t *bl = json_object_get(rs, "borrowLimit");
	int ret = parse_limits(json_object_get(root, "capacityLimits"), o, err);

	if (ret)
		return ret;
	o->queue = dup_member(root, "jobQueue");
	o->strategy = dup_member(rs, "strategy");
	o->borrow_limit = bl ? json_integer_value(bl) : -1;
	if (bl && strcmp(o->strategy, "LEND_AND_BORROW"))
		return api__invalid(err,
				    "resourceSharingConfiguration.borrowLimit "
				    "is only for strategy LEND_AND_BORROW");
	o->in_share_preemption =
		dup_member(json_object_get(root, "preemptionConfiguration"),
			   "inSharePreemption");
	return 0;
}

static int parse_kind(const json_t *root, struct api_batch_object *o,
		      struct buf *err)
{
	switch (o->kind) {
	case API_BATCH_ENV:
		return parse_limits(json_object_get(root, "capacityLimits"), o,
				    err);
	case API_BATCH_QUEUE:
		return parse_queue(root, o, err);
	case API_BATCH_POLICY:
		return parse_policy(root, o, err);
	default:
		return parse_share(root, o, err);
	}
}

int api_batch_object_parse(enum api_batch_kind k, const char *json, size_t len,
			   struct api_batch_object *o, struct buf *err)
{
	json_t *root = NULL;
	json_t *tags;
	int ret;

	memset(o, 0, sizeof(*o));
	o->kind = k;
	ret = api__json_load_object(json, len, &root, err);
	if (!ret)
		ret = api__batch_check(root, api__batch_shape(create_ops[k]),
				       "", err);
	if (!ret) {
		o->name = dup_member(root, name_members[k]);
		ret = name_ok(o->name, err, name_members[k]);
	}
	if (!ret)
		ret = parse_kind(root, o, err);
	if (!ret) {
		o->state = dup_member(root, "state");
		if (!o->state)
			o->state = xstrdup("ENABLED");
		tags = json_object_get(root, "tags");
		if (json_object_size(tags))
			o->tags_json =
				json_dumps(tags, JSON_COMPACT | JSON_SORT_KEYS);
	}
	json_decref(root);
	if (ret)
		api_batch_object_release(o);
	return ret;
}

void api_batch_object_release(struct api_batch_object *o)
{
	size_t i;

	free(o->name);
	free(o->state);
	free(o->tags_json);
	for (i = 0; i < o->n_limits; i++)
		free(o->limits[i].unit);
	free(o->limits);
	free(o->policy_arn);
	for (i = 0; i < o->n_envs; i++)
		free(o->envs[i]);
	free(o->envs);
	for (i = 0; i < o->n_weights; i++)
		free(o->weights[i].id);
	free(o->weights);
	free(o->queue);
	free(o->strategy);
	free(o->in_share_preemption);
	memset(o, 0, sizeof(*o));
}

static json_t *limits_json(const struct api_batch_object *o)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < o->n_limits; i++)
		json_array_append_new(a, json_pack("{s:I,s:s}", "maxCapacity",
						   (json_int_t)o->limits[i].max,
						   "capacityUnit",
						   o->limits[i].unit));
	return a;
}

static json_t *policy_json(const struct api_batch_object *o)
{
	json_t *d;
	size_t i;

	if (o->policy_kind == API_BATCH_POLICY_QUOTA)
		return json_pack("{s:s}", "idleResourceAssignmentStrategy",
				 "FIFO");
	d = json_array();
	for (i = 0; i < o->n_weights; i++)
		json_array_append_new(
			d, json_pack("{s:s,s:f}", "shareIdentifier",
				     o->weights[i].id, "weightFactor",
				     o->weights[i].weight));
	return json_pack("{s:I,s:i,s:o}", "shareDecaySeconds",
			 (json_int_t)o->decay_s, "computeReservation",
			 o->reservation, "shareDistribution", d);
}

static void set_kind_members(json_t *r, const struct api_batch_object *o)
{
	json_t *a;
	size_t i;

	switch (o->kind) {
	case API_BATCH_ENV:
		json_object_set_new(r, "serviceEnvironmentType",
				    json_string("SAGEMAKER_TRAINING"));
		json_object_set_new(r, "capacityLimits", limits_json(o));
		break;
	case API_BATCH_QUEUE:
		json_object_set_new(r, "priority", json_integer(o->priority));
		json_object_set_new(r, "jobQueueType",
				    json_string("SAGEMAKER_TRAINING"));
		if (o->policy_arn)
			json_object_set_new(r, "schedulingPolicyArn",
					    json_string(o->policy_arn));
		a = json_array();
		for (i = 0; i < o->n_envs; i++)
			json_array_append_new(
				a, json_pack("{s:i,s:s}", "order", (int)i + 1,
					     "serviceEnvironment", o->envs[i]));
		json_object_set_new(r, "serviceEnvironmentOrder", a);
		break;
	case API_BATCH_POLICY:
		json_object_set_new(r,
				    o->policy_kind == API_BATCH_POLICY_QUOTA ?
					    "quotaSharePolicy" :
					    "fairsharePolicy",
				    policy_json(o));
		break;
	default:
		json_object_set_new(r, "jobQueue", json_string(o->queue));
		json_object_set_new(r, "capacityLimits", limits_json(o));
		a = json_pack("{s:s}", "strategy", o->strategy);
		if (o->borrow_limit >= 0 ||
		    !strcmp(o->strategy, "LEND_AND_BORROW"))
			json_object_set_new(a, "borrowLimit",
					    json_integer(o->borrow_limit));
		json_object_set_new(r, "resourceSharingConfiguration", a);
		json_object_set_new(r, "preemptionConfiguration",
				    json_pack("{s:s}", "inSharePreemption",
					      o->in_share_preemption));
		break;
	}
}

int api_batch_object_request(const struct api_batch_object *o, struct buf *out)
{
	json_t *r = json_object();

	json_object_set_new(r, name_members[o->kind], json_string(o->name));
	if (o->kind != API_BATCH_POLICY)
		json_object_set_new(r, "state", json_string(o->state));
	set_kind_members(r, o);
	if (o->tags_json)
		json_object_set_new(r, "tags",
				    json_loads(o->tags_json, 0, NULL));
	return api__json_finish(r, 0, out);
}

int api_batch_update_merge(enum api_batch_kind k, const char *body, size_t len,
			   const char *stored, char **ident, char **merged,
			   struct buf *err)
{
	json_t *up = NULL, *st = NULL;
	const char *key;
	json_t *v;
	int ret;

	*ident = *merged = NULL;
	ret = api__json_load_object(body, len, &up, err);
	if (!ret)
		ret = api__batch_check(up, api__batch_shape(update_ops[k]), "",
				       err);
	if (!ret && stored) {
		st = json_loads(stored, 0, NULL);
		if (!st)
			ret = api__invalid(err, "the stored object is corrupt");
	}
	if (!ret) {
		*ident = dup_member(up, update_idents[k]);
		json_object_del(up, update_idents[k]);
	}
	if (!ret && st) {
		/* A policy's kind is its one member: the new one replaces. */
		if (k == API_BATCH_POLICY &&
		    (json_object_get(up, "fairsharePolicy") ||
		     json_object_get(up, "quotaSharePolicy"))) {
			json_object_del(st, "fairsharePolicy");
			json_object_del(st, "quotaSharePolicy");
		}
		json_object_foreach(up, key, v)
		{
			if (!json_is_null(v))
				json_object_set(st, key, v);
		}
		*merged = json_dumps(st, JSON_COMPACT);
	}
	json_decref(up);
	json_decref(st);
	return ret;
}

int api_batch_ident_parse(const char *op, const char *body, size_t len,
			  char **ident, struct buf *err)
{
	const struct api__bshape *s = api__batch_shape(op);
	json_t *root = NULL;
	int ret;

	*ident = NULL;
	ret = api__json_load_object(body, len, &root, err);
	if (!ret)
		ret = api__batch_check(root, s, "", err);
	if (!ret)
		*ident = dup_member(root, s->m[0].name);
	json_decref(root);
	return ret;
}

int api_batch_list_parse(const char *op, const char *body, size_t len,
			 struct api_batch_list_req *r, struct buf *err)
{
	const struct api__bshape *s = api__batch_shape(op);
	json_t *root = NULL;
	json_t *names = NULL, *e;
	size_t i;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = api__json_load_object(body, len, &root, err);
	if (!ret)
		ret = api__batch_check(root, s, "", err);
	if (ret)
		goto out;
	if (s->m[0].type == BM_STR_LIST)
		names = json_object_get(root, s->m[0].name);
	r->names = xcalloc(json_array_size(names) + 1, sizeof(*r->names));
	json_array_foreach(names, i, e)
		r->names[r->n_names++] = xstrdup(json_string_value(e));
	r->queue = dup_member(root, "jobQueue");
	r->max_results =
		(int)json_integer_value(json_object_get(root, "maxResults"));
	r->next_token = dup_member(root, "nextToken");
	if (r->n_names > 100)
		ret = api__invalid(err, "%s names more than 100 objects",
				   s->m[0].name);
out:
	json_decref(root);
	if (ret)
		api_batch_list_req_release(r);
	return ret;
}

void api_batch_list_req_release(struct api_batch_list_req *r)
{
	size_t i;

	for (i = 0; i < r->n_names; i++)
		free(r->names[i]);
	free(r->names);
	free(r->queue);
	free(r->next_token);
	memset(r, 0, sizeof(*r));
}

static const char *const arn_members[API_BATCH_NKINDS] = {
	"serviceEnvironmentArn", "jobQueueArn", "arn", "quotaShareArn"
};

int api_batch_object_item(const char *stored, enum api_batch_kind k,
			  const char *arn, int list_form, struct buf *out)
{
	json_t *r = json_loads(stored, 0, NULL);

	if (!r)
		return ERR_INVALID;
	json_object_set_new(r, arn_members[k], json_string(arn));
	if (k == API_BATCH_POLICY && list_form) {
		json_decref(r);
		r = json_pack("{s:s}", "arn", arn);
	} else if (k != API_BATCH_POLICY) {
		json_object_set_new(r, "status", json_string("VALID"));
	}
	if (k == API_BATCH_QUEUE)
		json_object_set_new(r, "computeEnvironmentOrder", json_array());
	if (k == API_BATCH_SHARE) {
		json_object_set(r, "jobQueueArn",
				json_object_get(r, "jobQueue"));
		json_object_del(r, "jobQueue");
		if (list_form)
			json_object_del(r, "tags");
	}
	return api__json_finish(r, 0, out);
}

int api_batch_items_answer(const char *member, const char *items,
			   const char *next_token, struct buf *out)
{
	int ret = buf_addf(out, "{\"%s\":[%s]", member, items);

	if (!ret && next_token) {
		/* {"nextToken":"..."} with its first brace made a comma. */
		json_t *t = json_pack("{s:s}", "nextToken", next_token);
		size_t at = out->len;

		ret = api__json_dump_to(t, out);
		if (!ret)
			out->data[at] = ',';
		json_decref(t);
	} else if (!ret) {
		ret = buf_adds(out, "}");
	}
	return ret ? ERR_TOOBIG : 0;
}

int api_batch_answer3(const char *k1, const char *v1, const char *k2,
		      const char *v2, const char *k3, const char *v3,
		      struct buf *out)
{
	json_t *r = json_pack("{s:s,s:s}", k1, v1, k2, v2);

	if (k3 && v3)
		json_object_set_new(r, k3, json_string(v3));
	return api__json_finish(r, 0, out);
}
