#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/job_record.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

void api_job_record_release(struct api_job_record *rec)
{
	size_t i;

	free(rec->name);
	free(rec->arn);
	free(rec->status);
	free(rec->secondary_status);
	free(rec->failure_reason);
	free(rec->model_artifacts);
	free(rec->request_json);
	free(rec->wp_status);
	free(rec->wp_reused_by);
	free(rec->rule_statuses_json);
	free(rec->goodput_json);
	for (i = 0; i < rec->n_transitions; i++) {
		free(rec->transitions[i].status);
		free(rec->transitions[i].message);
	}
	free(rec->transitions);
	for (i = 0; i < rec->n_metrics; i++)
		free(rec->metrics[i].name);
	free(rec->metrics);
	memset(rec, 0, sizeof(*rec));
}

static void set_str(json_t *obj, const char *key, const char *s)
{
	if (s)
		json_object_set_new(obj, key, json_string(s));
}

static void set_time(json_t *obj, const char *key, int64_t ms)
{
	if (ms)
		json_object_set_new(obj, key, api__json_time(ms));
}

/* WarmPoolStatus, when the job has a warm pool. */
static void set_warm_pool(json_t *obj, const struct api_job_record *rec)
{
	json_t *o;

	if (!rec->wp_status)
		return;
	o = json_object();
	set_str(o, "Status", rec->wp_status);
	if (rec->wp_billable_s >= 0)
		json_object_set_new(o, "ResourceRetainedBillableTimeInSeconds",
				    json_integer(rec->wp_billable_s));
	set_str(o, "ReusedByJob", rec->wp_reused_by);
	json_object_set_new(obj, "WarmPoolStatus", o);
}

/*
 * TrainctlElastic, a member of trainctl's (boto3 and the SDK ignore
 * members their model lacks): an elastic job's MinInstanceCount and the
 * hosts its current attempt trains on.
 */
static void set_elastic(json_t *obj, const struct api_job_record *rec)
{
	json_t *o;

	if (!rec->elastic_min)
		return;
	o = json_object();
	json_object_set_new(o, "MinInstanceCount",
			    json_integer(rec->elastic_min));
	if (rec->elastic_hosts)
		json_object_set_new(o, "CurrentInstanceCount",
				    json_integer((json_int_t)rec->elastic_hosts));
	json_object_set_new(obj, "TrainctlElastic", o);
}

/* Members kept as a JSON object's text (the rules' statuses, goodput),
 * merged in; a corrupt text is left out. */
static void set_merged(json_t *obj, const char *text)
{
	json_t *st;

	if (!text)
		return;
	st = json_loads(text, 0, NULL);
	if (json_is_object(st))
		json_object_update(obj, st);
	json_decref(st);
}

static int is_terminal(const char *status)
{
	return status &&
	       (!strcmp(status, "Completed") || !strcmp(status, "Failed") ||
		!strcmp(status, "Stopped"));
}

/*
 * The stored request is a compact JSON object that api_job_spec_parse()
 * wrote and that holds none of the state members, so the response is the
 * state members followed by the request's members: splicing the two texts
 * saves parsing the request on every Describe.
 */
int api_describe_response(const struct api_job_record *rec, struct buf *out)
{
	const char *req = rec->request_json ? rec->request_json : "{}";
	size_t req_len = strlen(req);
	json_t *root;
	json_t *arr;
	size_t start = out->len;
	size_t i;
	int ret;

	if (req_len < 2 || req[0] != '{' || req[req_len - 1] != '}')
		return ERR_INVALID;
	root = json_object();
	set_str(root, "TrainingJobName", rec->name);
	set_str(root, "TrainingJobArn", rec->arn);
	set_str(root, "TrainingJobStatus", rec->status);
	set_str(root, "SecondaryStatus", rec->secondary_status);
	set_str(root, "FailureReason", rec->failure_reason);
	if (rec->model_artifacts)
		json_object_set_new(root, "ModelArtifacts",
				    json_pack("{s:s}", "S3ModelArtifacts",
					      rec->model_artifacts));
	set_time(root, "CreationTime", rec->creation_ms);
	set_time(root, "LastModifiedTime", rec->last_modified_ms);
	set_time(root, "TrainingStartTime", rec->start_ms);
	set_time(root, "TrainingEndTime", rec->end_ms);
	if (rec->training_s)
		json_object_set_new(root, "TrainingTimeInSeconds",
				    json_integer(rec->training_s));
	if (rec->billable_s)
		json_object_set_new(root, "BillableTimeInSeconds",
				    json_integer(rec->billable_s));
	arr = json_array();
	for (i = 0; i < rec->n_transitions; i++) {
		const struct api_transition *t = &rec->transitions[i];
		json_t *o = json_object();

		set_str(o, "Status", t->status);
		set_time(o, "StartTime", t->start_ms);
		set_time(o, "EndTime", t->end_ms);
		set_str(o, "StatusMessage", t->message);
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "SecondaryStatusTransitions", arr);
	if (rec->n_metrics) {
		arr = json_array();
		for (i = 0; i < rec->n_metrics; i++) {
			const struct api_metric_value *m = &rec->metrics[i];
			json_t *o = json_object();

			set_str(o, "MetricName", m->name);
			json_object_set_new(o, "Value", json_real(m->value));
			set_time(o, "Timestamp", m->timestamp_ms);
			json_array_append_new(arr, o);
		}
		json_object_set_new(root, "FinalMetricDataList", arr);
	}
	set_warm_pool(root, rec);
	set_merged(root, rec->rule_statuses_json);
	set_merged(root, rec->goodput_json);
	set_elastic(root, rec);
	ret = api__json_dump_to(root, out);
	json_decref(root);
	if (ret)
		return ret;
	/* Replace the closing brace by the request's members. */
	out->len--;
	if (req_len > 2)
		ret = buf_addch(out, ',');
	if (!ret)
		ret = buf_add(out, req + 1, req_len - 1);
	if (ret) {
		out->len = start;
		out->data[start] = '\0';
	}
	return ret;
}

static json_t *summary(const struct api_job_record *rec)
{
	json_t *o = json_object();

	set_str(o, "TrainingJobName", rec->name);
	set_str(o, "TrainingJobArn", rec->arn);
	set_time(o, "CreationTime", rec->creation_ms);
	if (is_terminal(rec->status))
		set_time(o, "TrainingEndTime", rec->end_ms);
	set_time(o, "LastModifiedTime", rec->last_modified_ms);
	set_str(o, "TrainingJobStatus", rec->status);
	set_str(o, "SecondaryStatus", rec->secondary_status);
	set_warm_pool(o, rec);
	return o;
}

int api_summary_json(const struct api_job_record *rec, struct buf *out)
{
	json_t *o = summary(rec);
	int ret = api__json_dump_to(o, out);

	json_decref(o);
	return ret;
}

int api_list_response(const struct api_job_record *recs, size_t n,
		      const char *next_token, struct buf *out)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	size_t i;
	int ret;

	for (i = 0; i < n; i++)
		json_array_append_new(arr, summary(&recs[i]));
	json_object_set_new(root, "TrainingJobSummaries", arr);
	set_str(root, "NextToken", next_token);
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

static char *get_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? xstrdup(s) : NULL;
}

/* Clients may see numbers (our wire form) or ISO strings; keep numbers. */
static int64_t get_time(const json_t *o, const char *key)
{
	return api__json_time_ms(json_object_get(o, key));
}

int api_job_record_from_json(const char *json, size_t len,
			     struct api_job_record *rec, struct buf *err)
{
	json_t *root;
	json_t *arr;
	json_t *v;
	size_t i;
	int ret;

	memset(rec, 0, sizeof(*rec));
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	rec->name = get_str(root, "TrainingJobName");
	rec->arn = get_str(root, "TrainingJobArn");
	rec->status = get_str(root, "TrainingJobStatus");
	rec->secondary_status = get_str(root, "SecondaryStatus");
	rec->failure_reason = get_str(root, "FailureReason");
	rec->model_artifacts = get_str(json_object_get(root, "ModelArtifacts"),
				       "S3ModelArtifacts");
	rec->creation_ms = get_time(root, "CreationTime");
	rec->last_modified_ms = get_time(root, "LastModifiedTime");
	rec->start_ms = get_time(root, "TrainingStartTime");
	rec->end_ms = get_time(root, "TrainingEndTime");
	rec->training_s = json_integer_value(
		json_object_get(root, "TrainingTimeInSeconds"));
	rec->billable_s = json_integer_value(
		json_object_get(root, "BillableTimeInSeconds"));
	arr = json_object_get(root, "SecondaryStatusTransitions");
	if (json_array_size(arr)) {
		rec->transitions = xcalloc(json_array_size(arr),
					   sizeof(*rec->transitions));
		json_array_foreach(arr, i, v)
		{
			rec->transitions[i].status = get_str(v, "Status");
			rec->transitions[i].start_ms = get_time(v, "StartTime");
			rec->transitions[i].end_ms = get_time(v, "EndTime");
			rec->transitions[i].message =
				get_str(v, "StatusMessage");
		}
		rec->n_transitions = json_array_size(arr);
	}
	arr = json_object_get(root, "FinalMetricDataList");
	if (json_array_size(arr)) {
		rec->metrics =
			xcalloc(json_array_size(arr), sizeof(*rec->metrics));
		json_array_foreach(arr, i, v)
		{
			rec->metrics[i].name = get_str(v, "MetricName");
			rec->metrics[i].value =
				json_number_value(json_object_get(v, "Value"));
			rec->metrics[i].timestamp_ms = get_time(v, "Timestamp");
		}
		rec->n_metrics = json_array_size(arr);
	}
	json_decref(root);
	return 0;
}
