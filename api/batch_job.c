/*
 * Service jobs on the wire (api/batch.h): SubmitServiceJob, the training
 * job request it makes, the job operations and the answers.
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

static char *dup_member(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? xstrdup(s) : NULL;
}

static void submit_members(const json_t *root, struct api_batch_submit *s)
{
	const json_t *v;

	s->job_name = dup_member(root, "jobName");
	s->queue = dup_member(root, "jobQueue");
	s->payload = dup_member(root, "serviceRequestPayload");
	v = json_object_get(root, "schedulingPriority");
	s->has_priority = json_is_integer(v);
	s->priority = (int)json_integer_value(v);
	s->share_identifier = dup_member(root, "shareIdentifier");
	s->quota_share = dup_member(root, "quotaShareName");
	s->attempts = (int)json_integer_value(json_object_get(
		json_object_get(root, "retryStrategy"), "attempts"));
	s->timeout_s = json_integer_value(
		json_object_get(json_object_get(root, "timeoutConfig"),
				"attemptDurationSeconds"));
	v = json_object_get(json_object_get(root, "preemptionConfiguration"),
			    "preemptionRetriesBeforeTermination");
	s->preemption_retries = v ? (int)json_integer_value(v) : -1;
	v = json_object_get(root, "tags");
	if (json_object_size(v))
		s->tags_json = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	s->client_token = dup_member(root, "clientToken");
}

static int job_name_ok(const char *name, struct buf *err)
{
	size_t i, n = strlen(name);

	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_'))
			break;
	}
	if (n && n <= 128 && i == n &&
	    ((name[0] >= 'a' && name[0] <= 'z') ||
	     (name[0] >= 'A' && name[0] <= 'Z') ||
	     (name[0] >= '0' && name[0] <= '9')))
		return 0;
	return api__invalid(err, "jobName must be 1..128 letters, digits, "
				 "hyphens or underscores, starting with a "
				 "letter or digit");
}

int api_batch_submit_parse(const char *body, size_t len,
			   struct api_batch_submit *s, struct buf *err)
{
	json_t *root = NULL;
	int ret;

	memset(s, 0, sizeof(*s));
	s->preemption_retries = -1;
	ret = api__json_load_object(body, len, &root, err);
	if (!ret)
		ret = api__batch_check(
			root, api__batch_shape("SubmitServiceJob"), "", err);
	if (!ret &&
	    json_array_size(json_object_get(
		    json_object_get(root, "retryStrategy"), "evaluateOnExit")))
		ret = api__invalid(err,
				   "retryStrategy.evaluateOnExit is not "
				   "supported: a failed attempt is retried "
				   "while attempts are left");
	if (!ret) {
		submit_members(root, s);
		ret = job_name_ok(s->job_name, err);
	}
	json_decref(root);
	if (ret)
		api_batch_submit_release(s);
	return ret;
}

void api_batch_submit_release(struct api_batch_submit *s)
{
	free(s->job_name);
	free(s->queue);
	free(s->payload);
	free(s->share_identifier);
	free(s->quota_share);
	free(s->tags_json);
	free(s->client_token);
	memset(s, 0, sizeof(*s));
}

/* RetryStrategy and StoppingCondition of the payload p from s. */
static int payload_limits(const struct api_batch_submit *s, json_t *p,
			  struct buf *err)
{
	json_t *rs = json_object_get(p, "RetryStrategy");
	json_t *sc = json_object_get(p, "StoppingCondition");
	json_t *v;

	if (s->attempts > 1) {
		v = json_object_get(rs, "MaximumRetryAttempts");
		if (v && json_integer_value(v) != s->attempts - 1)
			return api__invalid(
				err,
				"retryStrategy.attempts %d differs from the "
				"serviceRequestPayload's "
				"RetryStrategy.MaximumRetryAttempts %lld (it "
				"would be %d)",
				s->attempts, (long long)json_integer_value(v),
				s->attempts - 1);
		json_object_set_new(p, "RetryStrategy",
				    json_pack("{s:i}", "MaximumRetryAttempts",
					      s->attempts - 1));
	} else if (s->attempts == 1 && rs) {
		return api__invalid(err,
				    "retryStrategy.attempts 1 (no retry) "
				    "differs from the serviceRequestPayload's "
				    "RetryStrategy");
	}
	if (s->timeout_s > 0) {
		v = json_object_get(sc, "MaxRuntimeInSeconds");
		if (v && json_integer_value(v) != s->timeout_s)
			return api__invalid(
				err,
				"timeoutConfig.attemptDurationSeconds %lld "
				"differs from the serviceRequestPayload's "
				"StoppingCondition.MaxRuntimeInSeconds %lld",
				(long long)s->timeout_s,
				(long long)json_integer_value(v));
		if (!json_is_object(sc)) {
			sc = json_object();
			json_object_set_new(p, "StoppingCondition", sc);
		}
		json_object_set_new(sc, "MaxRuntimeInSeconds",
				    json_integer(s->timeout_s));
	}
	return 0;
}

int api_batch_payload(const struct api_batch_submit *s,
		      const char *default_name, char **out, char **name,
		      struct buf *err)
{
	json_error_t je;
	json_t *p = json_loads(s->payload, JSON_REJECT_DUPLICATES, &je);
	int ret = 0;

	*out = *name = NULL;
	if (!json_is_object(p)) {
		json_decref(p);
		return api__invalid(err, "serviceRequestPayload must be a "
					 "CreateTrainingJob request as a JSON "
					 "object");
	}
	if (!json_object_get(p, "TrainingJobName"))
		json_object_set_new(p, "TrainingJobName",
				    json_string(default_name));
	ret = payload_limits(s, p, err);
	if (!ret) {
		*name = dup_member(p, "TrainingJobName");
		*out = json_dumps(p, JSON_COMPACT);
	}
	json_decref(p);
	return ret;
}

int api_batch_job_req_parse(const char *op, const char *body, size_t len,
			    struct api_batch_job_req *r, struct buf *err)
{
	json_t *root = NULL;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = api__json_load_object(body, len, &root, err);
	if (!ret)
		ret = api__batch_check(root, api__batch_shape(op), "", err);
	if (!ret) {
		r->job_id = dup_member(root, "jobId");
		r->reason = dup_member(root, "reason");
		r->priority = (int)json_integer_value(
			json_object_get(root, "schedulingPriority"));
	}
	json_decref(root);
	return ret;
}

void api_batch_job_req_release(struct api_batch_job_req *r)
{
	free(r->job_id);
	free(r->reason);
	memset(r, 0, sizeof(*r));
}

static int parse_filter(const json_t *f, struct api_batch_jobs_list *r,
			struct buf *err)
{
	const char *name = json_string_value(json_object_get(f, "name"));
	const json_t *vals = json_object_get(f, "values");
	const char *v = json_string_value(json_array_get(vals, 0));
	char *end;
	long long t;

	if (!name || json_array_size(vals) != 1)
		return api__invalid(err, "filters: each filter needs a name "
					 "and one value");
	if (!strcmp(name, "JOB_NAME")) {
		free(r->name);
		r->name = xstrdup(v);
		return 0;
	}
	if (strcmp(name, "BEFORE_CREATED_AT") &&
	    strcmp(name, "AFTER_CREATED_AT"))
		return api__invalid(err,
				    "filters: name must be JOB_NAME, "
				    "BEFORE_CREATED_AT or AFTER_CREATED_AT "
				    "(got '%.64s')",
				    name);
	t = strtoll(v, &end, 10);
	if (!*v || *end || t < 0)
		return api__invalid(err,
				    "filters: %s takes a time in "
				    "milliseconds since the epoch",
				    name);
	if (name[0] == 'B')
		r->before_ms = t;
	else
		r->after_ms = t;
	return 0;
}

int api_batch_jobs_list_parse(const char *body, size_t len,
			      struct api_batch_jobs_list *r, struct buf *err)
{
	json_t *root = NULL, *f;
	size_t i;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = api__json_load_object(body, len, &root, err);
	if (!ret)
		ret = api__batch_check(
			root, api__batch_shape("ListServiceJobs"), "", err);
	if (ret)
		goto out;
	r->queue = dup_member(root, "jobQueue");
	r->status = dup_member(root, "jobStatus");
	r->max_results =
		(int)json_integer_value(json_object_get(root, "maxResults"));
	if (!r->max_results)
		r->max_results = 100;
	r->next_token = dup_member(root, "nextToken");
	json_array_foreach(json_object_get(root, "filters"), i, f)
	{
		ret = parse_filter(f, r, err);
		if (ret)
			break;
	}
out:
	json_decref(root);
	if (ret)
		api_batch_jobs_list_release(r);
	return ret;
}

void api_batch_jobs_list_release(struct api_batch_jobs_list *r)
{
	free(r->queue);
	free(r->status);
	free(r->name);
	free(r->next_token);
	memset(r, 0, sizeof(*r));
}

const char *api_batch_job_status(const char *status, const char *secondary)
{
	if (!status) /* its training job was deleted */
		return "FAILED";
	if (!strcmp(status, "Completed"))
		return "SUCCEEDED";
	if (!strcmp(status, "Failed") || !strcmp(status, "Stopped"))
		return "FAILED";
	if (!secondary || !strcmp(secondary, "Starting") ||
	    !strcmp(secondary, "Pending"))
		return "RUNNABLE";
	if (!strcmp(secondary, "Downloading") ||
	    !strcmp(secondary, "Restarting") ||
	    !strcmp(secondary, "Interrupted"))
		return "STARTING";
	return "RUNNING";
}

int api_batch_job_status_ok(const char *s)
{
	static const char *const all[] = { "SUBMITTED", "PENDING",  "RUNNABLE",
					   "SCHEDULED", "STARTING", "RUNNING",
					   "SUCCEEDED", "FAILED" };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i], s))
			return 1;
	return 0;
}

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v)
		json_object_set_new(o, k, json_string(v));
}

static json_t *attempt_json(const struct api_batch_job *j, int terminal)
{
	json_t *a = json_pack("{s:{s:s,s:s}}", "serviceResourceId", "name",
			      "TrainingJobArn", "value", j->tj_arn);

	if (j->tj_start_ms)
		json_object_set_new(a, "startedAt",
				    json_integer(j->tj_start_ms));
	if (terminal && j->tj_end_ms)
		json_object_set_new(a, "stoppedAt", json_integer(j->tj_end_ms));
	if (terminal)
		set_str(a, "statusReason", j->tj_reason);
	return a;
}

/* Members of the stored SubmitServiceJob a Describe echoes. */
static void echo_request(json_t *o, const char *request_json)
{
	static const char *const keys[] = { "retryStrategy",
					    "serviceRequestPayload",
					    "preemptionConfiguration",
					    "timeoutConfig", "tags" };
	json_t *req = json_loads(request_json, 0, NULL);
	size_t i;

	for (i = 0; req && i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_object_get(req, keys[i]))
			json_object_set(o, keys[i],
					json_object_get(req, keys[i]));
	json_decref(req);
}

int api_batch_job_write(const struct api_batch_job *j, int summary,
			struct buf *out)
{
	const char *st = api_batch_job_status(j->tj_status, j->tj_secondary);
	int terminal = !strcmp(st, "SUCCEEDED") || !strcmp(st, "FAILED");
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:s}", "jobId", j->job_id,
			      "jobArn", j->arn, "jobName", j->name,
			      "serviceJobType", "SAGEMAKER_TRAINING",
			      "createdAt", (json_int_t)j->created_ms, "status",
			      st);

	set_str(o, "shareIdentifier", j->share_identifier);
	set_str(o, "quotaShareName", j->quota_share);
	json_object_set_new(o, "startedAt",
			    json_integer(j->tj_start_ms ? j->tj_start_ms :
							  j->created_ms));
	if (terminal && j->tj_end_ms)
		json_object_set_new(o, "stoppedAt", json_integer(j->tj_end_ms));
	if (terminal)
		set_str(o, "statusReason",
			j->tj_reason  ? j->tj_reason :
			!j->tj_status ? "Its training job was deleted" :
			!strcmp(st, "SUCCEEDED") ? "Training job completed" :
						   NULL);
	json_object_set_new(o, "latestAttempt", attempt_json(j, 0));
	json_object_del(json_object_get(o, "latestAttempt"), "startedAt");
	if (!summary) {
		json_object_set_new(o, "jobQueue", json_string(j->queue_arn));
		json_object_set_new(o, "schedulingPriority",
				    json_integer(j->priority));
		json_object_set_new(o, "isTerminated", json_boolean(terminal));
		json_object_set_new(o, "attempts",
				    json_pack("[o]",
					      attempt_json(j, terminal)));
		echo_request(o, j->request_json);
	}
	return api__json_finish(o, 0, out);
}
