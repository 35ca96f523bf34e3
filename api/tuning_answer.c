/*
 * What the controller builds from a stored tuning job (api/tuning.h): the
 * CreateTrainingJob body of each of its training jobs, and the answers of
 * Describe and the two Lists, with the List requests they answer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json_util.h"
#include "api/tuning.h"
#include "api/validate.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Members of a definition that CreateTrainingJob takes as they are. */
static const char *const child_members[] = {
	"RoleArn",
	"InputDataConfig",
	"VpcConfig",
	"OutputDataConfig",
	"ResourceConfig",
	"StoppingCondition",
	"EnableNetworkIsolation",
	"EnableInterContainerTrafficEncryption",
	"EnableManagedSpotTraining",
	"CheckpointConfig",
	"RetryStrategy",
	"Environment",
};

/*
 * The ResourceConfig a definition's HyperParameterTuningResourceConfig
 * stands for (a new reference), or NULL when it has none.
 */
static json_t *resource_config_of(const json_t *def)
{
	static const char *const keep[] = { "InstanceType", "InstanceCount",
					    "VolumeSizeInGB",
					    "VolumeKmsKeyId" };
	const json_t *v =
		json_object_get(def, "HyperParameterTuningResourceConfig");
	const json_t *one =
		json_array_get(json_object_get(v, "InstanceConfigs"), 0);
	json_t *rc;
	size_t i;

	if (!v)
		return NULL;
	rc = json_object();
	for (i = 0; i < sizeof(keep) / sizeof(*keep); i++) {
		json_t *m = json_object_get(one ? one : v, keep[i]);

		if (!m)
			m = json_object_get(v, keep[i]);
		if (m)
			json_object_set(rc, keep[i], m);
	}
	return rc;
}

int api_tuning_child_body(const struct api_tuning_spec *s,
			  const struct api_tuning_def *d, const char *job_name,
			  char *const *values, struct buf *out)
{
	json_t *def = json_loads(d->json, 0, NULL);
	json_t *root = json_object();
	json_t *alg = json_object();
	json_t *hp = json_object();
	const json_t *dalg = json_object_get(def, "AlgorithmSpecification");
	const char *key;
	json_t *v;
	size_t i;
	int ret;

	if (!def) {
		json_decref(root);
		json_decref(alg);
		json_decref(hp);
		return ERR_INVALID;
	}
	json_object_set_new(root, "TrainingJobName", json_string(job_name));
	json_object_foreach((json_t *)dalg, key, v)
	{
		json_object_set(alg, key, v);
	}
	json_object_set_new(root, "AlgorithmSpecification", alg);
	json_object_foreach(json_object_get(def, "StaticHyperParameters"), key,
			    v)
	{
		json_object_set(hp, key, v);
	}
	for (i = 0; i < d->n_ranges; i++)
		json_object_set_new(hp, d->ranges[i].name,
				    json_string(values[i]));
	json_object_set_new(root, "HyperParameters", hp);
	for (i = 0; i < sizeof(child_members) / sizeof(*child_members); i++) {
		v = json_object_get(def, child_members[i]);
		if (v)
			json_object_set(root, child_members[i], v);
	}
	v = resource_config_of(def);
	if (v)
		json_object_set_new(root, "ResourceConfig", v);
	if (s->n_tags) {
		json_t *tags = json_array();

		for (i = 0; i < s->n_tags; i++)
			json_array_append_new(tags,
					      json_pack("{s:s,s:s}", "Key",
							s->tags[i].key, "Value",
							s->tags[i].value));
		json_object_set_new(root, "Tags", tags);
	}
	ret = api__json_dump_to(root, out);
	json_decref(root);
	json_decref(def);
	return ret;
}

int api_request_add_string(const char *request_json, const char *key,
			   const char *value, char **out)
{
	json_t *root = json_loads(request_json, 0, NULL);
	struct buf b = BUF_INIT;
	int ret;

	*out = NULL;
	if (!json_is_object(root)) {
		json_decref(root);
		return ERR_INVALID;
	}
	json_object_set_new(root, key, json_string(value));
	ret = api__json_dump_to(root, &b);
	json_decref(root);
	if (ret) {
		buf_release(&b);
		return ret;
	}
	*out = buf_detach(&b, NULL);
	return 0;
}

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v)
		json_object_set_new(o, k, json_string(v));
}

static void set_time(json_t *o, const char *k, int64_t ms)
{
	if (ms)
		json_object_set_new(o, k, api__json_time(ms));
}

static json_t *child_json(const struct api_tuning_child *c)
{
	json_t *o = json_object();
	json_t *hp = json_object();
	size_t i;

	set_str(o, "TrainingJobDefinitionName", c->def_name);
	set_str(o, "TrainingJobName", c->name);
	set_str(o, "TrainingJobArn", c->arn);
	set_str(o, "TuningJobName", c->tuning_name);
	set_time(o, "CreationTime", c->creation_ms);
	set_time(o, "TrainingStartTime", c->start_ms);
	set_time(o, "TrainingEndTime", c->end_ms);
	set_str(o, "TrainingJobStatus", c->status);
	for (i = 0; i < c->n_hp; i++)
		json_object_set_new(hp, c->hp_names[i],
				    json_string(c->hp_values[i]));
	json_object_set_new(o, "TunedHyperParameters", hp);
	set_str(o, "FailureReason", c->failure_reason);
	if (c->has_objective)
		json_object_set_new(
			o, "FinalHyperParameterTuningJobObjectiveMetric",
			json_pack("{s:s,s:s,s:f}", "Type",
				  c->maximize ? "Maximize" : "Minimize",
				  "MetricName", c->metric, "Value",
				  c->objective));
	set_str(o, "ObjectiveStatus", c->objective_status);
	return o;
}

int api_tuning_child_json(const struct api_tuning_child *c, struct buf *out)
{
	json_t *o = child_json(c);
	int ret = api__json_dump_to(o, out);

	json_decref(o);
	return ret;
}

static json_t *counters(const struct api_tuning_record *r)
{
	const struct api_tuning_job_counts *c = &r->jobs;

	return json_pack("{s:i,s:i,s:i,s:i,s:i}", "Completed", c->completed,
			 "InProgress", c->in_progress, "RetryableError",
			 c->retryable_error, "NonRetryableError",
			 c->non_retryable_error, "Stopped", c->stopped);
}

static json_t *objectives(const struct api_tuning_record *r)
{
	const struct api_tuning_objective_counts *c = &r->objectives;

	return json_pack("{s:i,s:i,s:i}", "Succeeded", c->succeeded, "Pending",
			 c->pending, "Failed", c->failed);
}

int api_tuning_describe_response(const struct api_tuning_record *r,
				 struct buf *out)
{
	json_t *req = json_loads(r->request_json, 0, NULL);
	json_t *o = json_object();
	json_t *details;
	int ret;

	set_str(o, "HyperParameterTuningJobName", r->name);
	set_str(o, "HyperParameterTuningJobArn", r->arn);
	if (req) {
		static const char *const echoed[] = {
			"HyperParameterTuningJobConfig",
			"TrainingJobDefinition",
			"TrainingJobDefinitions",
			"WarmStartConfig",
		};
		size_t i;

		json_t *defs = json_object_get(req, "TrainingJobDefinitions");
		json_t *rc;

		/* The ResourceConfig a HyperParameterTuningResourceConfig
		 * stands for, as the SDK's HyperparameterTuner.attach reads
		 * it. */
		rc = resource_config_of(
			json_object_get(req, "TrainingJobDefinition"));
		if (rc)
			json_object_set_new(
				json_object_get(req, "TrainingJobDefinition"),
				"ResourceConfig", rc);
		for (i = 0; i < json_array_size(defs); i++) {
			rc = resource_config_of(json_array_get(defs, i));
			if (rc)
				json_object_set_new(json_array_get(defs, i),
						    "ResourceConfig", rc);
		}
		for (i = 0; i < sizeof(echoed) / sizeof(*echoed); i++) {
			json_t *v = json_object_get(req, echoed[i]);

			if (v)
				json_object_set(o, echoed[i], v);
		}
	}
	set_str(o, "HyperParameterTuningJobStatus", r->status);
	set_time(o, "CreationTime", r->creation_ms);
	set_time(o, "HyperParameterTuningEndTime", r->end_ms);
	set_time(o, "LastModifiedTime", r->last_modified_ms);
	json_object_set_new(o, "TrainingJobStatusCounters", counters(r));
	json_object_set_new(o, "ObjectiveStatusCounters", objectives(r));
	if (r->best)
		json_object_set_new(o, "BestTrainingJob", child_json(r->best));
	if (r->overall_best)
		json_object_set_new(o, "OverallBestTrainingJob",
				    child_json(r->overall_best));
	set_str(o, "FailureReason", r->failure_reason);
	details = json_object();
	json_object_set_new(details,
			    "NumberOfTrainingJobsObjectiveNotImproving",
			    json_integer(r->not_improving));
	set_time(details, "ConvergenceDetectedTime", r->convergence_ms);
	json_object_set_new(o, "TuningJobCompletionDetails", details);
	json_object_set_new(o, "ConsumedResources",
			    json_pack("{s:I}", "RuntimeInSeconds",
				      (json_int_t)r->consumed_s));
	ret = api__json_dump_to(o, out);
	json_decref(o);
	json_decref(req);
	return ret;
}

int api_tuning_summary_json(const struct api_tuning_record *r, struct buf *out)
{
	json_t *o = json_object();
	json_t *req = json_loads(r->request_json, 0, NULL);
	json_t *lim = json_object_get(
		json_object_get(req, "HyperParameterTuningJobConfig"),
		"ResourceLimits");
	int ret;

	set_str(o, "HyperParameterTuningJobName", r->name);
	set_str(o, "HyperParameterTuningJobArn", r->arn);
	set_str(o, "HyperParameterTuningJobStatus", r->status);
	set_str(o, "Strategy", r->spec ? r->spec->strategy_name : NULL);
	set_time(o, "CreationTime", r->creation_ms);
	set_time(o, "HyperParameterTuningEndTime", r->end_ms);
	set_time(o, "LastModifiedTime", r->last_modified_ms);
	json_object_set_new(o, "TrainingJobStatusCounters", counters(r));
	json_object_set_new(o, "ObjectiveStatusCounters", objectives(r));
	if (lim)
		json_object_set(o, "ResourceLimits", lim);
	ret = api__json_dump_to(o, out);
	json_decref(o);
	json_decref(req);
	return ret;
}

int api_tuning_list_json(const char *member, char *const *items, size_t n,
			 const char *next_token, struct buf *out)
{
	size_t i;
	int ret;

	ret = buf_addf(out, "{\"%s\":[", member);
	for (i = 0; i < n && !ret; i++) {
		if (i)
			ret = buf_addch(out, ',');
		if (!ret)
			ret = buf_adds(out, items[i]);
	}
	if (!ret)
		ret = buf_addch(out, ']');
	/* Tokens are decimal offsets: nothing to escape. */
	if (!ret && next_token)
		ret = buf_addf(out, ",\"NextToken\":\"%s\"", next_token);
	if (!ret)
		ret = buf_addch(out, '}');
	return ret;
}

static char *dup_member(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? xstrdup(s) : NULL;
}

int api_tuning_list_parse(const char *json, size_t len, int children,
			  struct api_tuning_list_request *r, struct buf *err)
{
	json_t *root;
	const char *order;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	ret = api_validate(
		children ? "ListTrainingJobsForHyperParameterTuningJobRequest" :
			   "ListHyperParameterTuningJobsRequest",
		root, err);
	if (ret)
		goto out;
	r->name = dup_member(root, "HyperParameterTuningJobName");
	r->max_results = json_object_get(root, "MaxResults") ?
				 (int)json_integer_value(
					 json_object_get(root, "MaxResults")) :
				 (children ? 10 : 10);
	r->next_token = dup_member(root, "NextToken");
	r->sort_by = dup_member(root, "SortBy");
	order = json_string_value(json_object_get(root, "SortOrder"));
	r->ascending = !order || strcmp(order, "Descending");
	r->name_contains = dup_member(root, "NameContains");
	r->status = dup_member(root, "StatusEquals");
	r->created_after =
		api__json_time_ms(json_object_get(root, "CreationTimeAfter"));
	r->created_before =
		api__json_time_ms(json_object_get(root, "CreationTimeBefore"));
	r->modified_after = api__json_time_ms(
		json_object_get(root, "LastModifiedTimeAfter"));
	r->modified_before = api__json_time_ms(
		json_object_get(root, "LastModifiedTimeBefore"));
out:
	json_decref(root);
	if (ret)
		api_tuning_list_release(r);
	return ret;
}

void api_tuning_list_release(struct api_tuning_list_request *r)
{
	free(r->name);
	free(r->next_token);
	free(r->sort_by);
	free(r->name_contains);
	free(r->status);
	memset(r, 0, sizeof(*r));
}
