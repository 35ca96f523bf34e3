/*
 * The tuning job commands' requests and the answers they read; see
 * api/tuning_reply.h. Members are read as the commands always read them:
 * a missing or mistyped member is NULL or 0, never an error.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/tuning_reply.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Appends the compact JSON of v (any value, not only a document) to out. */
static void dump_to(const json_t *v, struct buf *out)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	if (!s || buf_adds(out, s))
		BUG("cannot serialise a built document");
	free(s);
}

/* A copy of the string member key of o, or NULL. */
static char *str_dup(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? xstrdup(s) : NULL;
}

static int int_of(const json_t *o, const char *key)
{
	return (int)json_integer_value(json_object_get(o, key));
}

/* A JSON 1.1 timestamp (epoch seconds) as epoch milliseconds; 0 if none. */
static int64_t ms_of(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v))
		return 0;
	return (int64_t)llround(json_number_value(v) * 1000.0);
}

/*
 * Loads an answer that must be a JSON object; NULL with err holding the
 * parser's message (empty for a document that is not an object).
 */
static json_t *load_reply(const char *json, size_t len, struct buf *err)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, 0, &je);

	if (!json_is_object(root)) {
		json_decref(root);
		buf_reset(err);
		(void)buf_adds(err, je.text);
		return NULL;
	}
	return root;
}

int api_tuning_name_request_build(const char *name, struct buf *out)
{
	json_t *req = json_pack("{s:s}", "HyperParameterTuningJobName", name);

	if (!req)
		return ERR_INVALID;
	dump_to(req, out);
	json_decref(req);
	return 0;
}

char *api_tuning_request_name(const char *json, size_t len)
{
	json_t *req = json_loadb(json, len, 0, NULL);
	char *name = str_dup(req, "HyperParameterTuningJobName");

	json_decref(req);
	return name;
}

void api_tuning_list_request_build(const struct api_tuning_list_query *q,
				   const char *token, struct buf *out)
{
	json_t *req = json_object();

	if (q->tuning)
		json_object_set_new(req, "HyperParameterTuningJobName",
				    json_string(q->tuning));
	if (q->status_equals)
		json_object_set_new(req, "StatusEquals",
				    json_string(q->status_equals));
	if (q->name_contains)
		json_object_set_new(req, "NameContains",
				    json_string(q->name_contains));
	if (q->sort_by)
		json_object_set_new(req, "SortBy", json_string(q->sort_by));
	if (q->sort_order)
		json_object_set_new(req, "SortOrder",
				    json_string(q->sort_order));
	if (q->max_results)
		json_object_set_new(req, "MaxResults",
				    json_integer(q->max_results));
	if (token)
		json_object_set_new(req, "NextToken", json_string(token));
	buf_reset(out);
	dump_to(req, out);
	json_decref(req);
}

int api_tuning_page_read(const char *json, size_t len, const char *member,
			 struct buf *items, char **token_out, struct buf *err)
{
	json_t *page = load_reply(json, len, err);
	json_t *list = json_object_get(page, member), *e;
	size_t i;

	if (!page)
		return ERR_INVALID;
	if (!json_is_array(list)) {
		json_decref(page);
		buf_reset(err);
		(void)buf_addf(err, "no %s", member);
		return ERR_INVALID;
	}
	json_array_foreach(list, i, e)
	{
		if (items->len && buf_addch(items, ','))
			BUG("unbounded buffer refused a string");
		dump_to(e, items);
	}
	*token_out = str_dup(page, "NextToken");
	json_decref(page);
	return 0;
}

int api_tuning_list_doc_build(const char *member, const char *items,
			      const char *token, struct buf *out)
{
	struct buf arr = BUF_INIT;
	json_t *list, *doc;

	if (buf_addf(&arr, "[%s]", items))
		BUG("unbounded buffer refused a string");
	list = json_loadb(arr.data, arr.len, 0, NULL);
	buf_release(&arr);
	if (!list)
		return ERR_INVALID;
	doc = json_pack("{s:o}", member, list);
	if (!doc)
		return ERR_INVALID;
	if (token)
		json_object_set_new(doc, "NextToken", json_string(token));
	dump_to(doc, out);
	json_decref(doc);
	return 0;
}

int api_tuning_create_response_parse(const char *json, size_t len,
				     char **arn_out, struct buf *err)
{
	json_t *root = load_reply(json, len, err);

	if (!root)
		return ERR_INVALID;
	*arn_out = str_dup(root, "HyperParameterTuningJobArn");
	json_decref(root);
	if (!*arn_out) {
		buf_reset(err);
		(void)buf_adds(err, "no HyperParameterTuningJobArn");
		return ERR_INVALID;
	}
	return 0;
}

static void counters_of(const json_t *c, struct api_tuning_counters *out)
{
	out->completed = int_of(c, "Completed");
	out->in_progress = int_of(c, "InProgress");
	out->stopped = int_of(c, "Stopped");
	out->retryable_error = int_of(c, "RetryableError");
	out->non_retryable_error = int_of(c, "NonRetryableError");
}

static void child_of(const json_t *s, struct api_tuning_child *c)
{
	json_t *m = json_object_get(
		s, "FinalHyperParameterTuningJobObjectiveMetric");
	json_t *v = json_object_get(m, "Value");
	json_t *hp = json_object_get(s, "TunedHyperParameters");
	const char *k;
	size_t i = 0;

	memset(c, 0, sizeof(*c));
	c->name = str_dup(s, "TrainingJobName");
	c->status = str_dup(s, "TrainingJobStatus");
	c->objective_status = str_dup(s, "ObjectiveStatus");
	c->metric_name = str_dup(m, "MetricName");
	c->has_value = json_is_number(v);
	c->value = c->has_value ? json_number_value(v) : 0;
	c->n_tuned = json_object_size(hp);
	if (!c->n_tuned)
		return;
	c->tuned = xcalloc(c->n_tuned, sizeof(*c->tuned));
	json_object_foreach(hp, k, v)
	{
		const char *value = json_string_value(v);

		c->tuned[i].name = xstrdup(k);
		c->tuned[i].value = value ? xstrdup(value) : NULL;
		i++;
	}
}

static void child_release(struct api_tuning_child *c)
{
	size_t i;

	free(c->name);
	free(c->status);
	free(c->objective_status);
	free(c->metric_name);
	for (i = 0; i < c->n_tuned; i++) {
		free(c->tuned[i].name);
		free(c->tuned[i].value);
	}
	free(c->tuned);
}

int api_tuning_desc_parse(const char *json, size_t len,
			  struct api_tuning_desc *d, struct buf *err)
{
	json_t *root = load_reply(json, len, err);
	json_t *cfg, *obj, *lim, *oc, *best;

	memset(d, 0, sizeof(*d));
	if (!root)
		return ERR_INVALID;
	cfg = json_object_get(root, "HyperParameterTuningJobConfig");
	obj = json_object_get(cfg, "HyperParameterTuningJobObjective");
	lim = json_object_get(cfg, "ResourceLimits");
	oc = json_object_get(root, "ObjectiveStatusCounters");
	best = json_object_get(root, "BestTrainingJob");
	d->name = str_dup(root, "HyperParameterTuningJobName");
	d->arn = str_dup(root, "HyperParameterTuningJobArn");
	d->status = str_dup(root, "HyperParameterTuningJobStatus");
	d->strategy = str_dup(cfg, "Strategy");
	d->has_objective = obj != NULL;
	d->objective_type = str_dup(obj, "Type");
	d->objective_metric = str_dup(obj, "MetricName");
	d->max_jobs = int_of(lim, "MaxNumberOfTrainingJobs");
	d->max_parallel = int_of(lim, "MaxParallelTrainingJobs");
	counters_of(json_object_get(root, "TrainingJobStatusCounters"),
		    &d->jobs);
	d->objectives_succeeded = int_of(oc, "Succeeded");
	d->objectives_pending = int_of(oc, "Pending");
	d->objectives_failed = int_of(oc, "Failed");
	if (best) {
		d->best = xmalloc(sizeof(*d->best));
		child_of(best, d->best);
	}
	d->failure_reason = str_dup(root, "FailureReason");
	d->creation_ms = ms_of(root, "CreationTime");
	d->end_ms = ms_of(root, "HyperParameterTuningEndTime");
	d->last_modified_ms = ms_of(root, "LastModifiedTime");
	json_decref(root);
	return 0;
}

void api_tuning_desc_release(struct api_tuning_desc *d)
{
	free(d->name);
	free(d->arn);
	free(d->status);
	free(d->strategy);
	free(d->objective_type);
	free(d->objective_metric);
	if (d->best)
		child_release(d->best);
	free(d->best);
	free(d->failure_reason);
	memset(d, 0, sizeof(*d));
}

/*
 * The member array of a List answer; NULL with err set when the document
 * is not an object or the member not an array.
 */
static json_t *load_list(const char *json, size_t len, const char *member,
			 json_t **root, struct buf *err)
{
	json_t *list;

	*root = load_reply(json, len, err);
	if (!*root)
		return NULL;
	list = json_object_get(*root, member);
	if (!json_is_array(list)) {
		json_decref(*root);
		*root = NULL;
		buf_reset(err);
		(void)buf_addf(err, "no %s", member);
		return NULL;
	}
	return list;
}

int api_tuning_summaries_parse(const char *json, size_t len,
			       struct api_tuning_summary **out, size_t *n,
			       struct buf *err)
{
	json_t *root, *s;
	json_t *list = load_list(json, len, "HyperParameterTuningJobSummaries",
				 &root, err);
	struct api_tuning_summary *v = NULL;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!list)
		return ERR_INVALID;
	if (json_array_size(list))
		v = xcalloc(json_array_size(list), sizeof(*v));
	json_array_foreach(list, i, s)
	{
		v[i].name = str_dup(s, "HyperParameterTuningJobName");
		v[i].status = str_dup(s, "HyperParameterTuningJobStatus");
		v[i].strategy = str_dup(s, "Strategy");
		v[i].max_jobs = int_of(json_object_get(s, "ResourceLimits"),
				       "MaxNumberOfTrainingJobs");
		counters_of(json_object_get(s, "TrainingJobStatusCounters"),
			    &v[i].jobs);
		v[i].creation_ms = ms_of(s, "CreationTime");
	}
	*out = v;
	*n = json_array_size(list);
	json_decref(root);
	return 0;
}

void api_tuning_summaries_free(struct api_tuning_summary *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(s[i].name);
		free(s[i].status);
		free(s[i].strategy);
	}
	free(s);
}

int api_tuning_children_parse(const char *json, size_t len,
			      struct api_tuning_child **out, size_t *n,
			      struct buf *err)
{
	json_t *root, *s;
	json_t *list = load_list(json, len, "TrainingJobSummaries", &root, err);
	struct api_tuning_child *v = NULL;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!list)
		return ERR_INVALID;
	if (json_array_size(list))
		v = xcalloc(json_array_size(list), sizeof(*v));
	json_array_foreach(list, i, s) child_of(s, &v[i]);
	*out = v;
	*n = json_array_size(list);
	json_decref(root);
	return 0;
}

void api_tuning_children_free(struct api_tuning_child *c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		child_release(&c[i]);
	free(c);
}
