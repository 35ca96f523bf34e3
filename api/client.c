#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/client.h"
#include "api/job_record.h"
#include "api/json_util.h"
#include "api/names.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * Splits "KEY=VALUE" at the first '='. On success *key_out is a copy the
 * caller frees and *value_out points into s. The value may be empty unless
 * value_required is set; the key never may.
 */
static int split_kv(const char *flag, const char *what, const char *s,
		    int value_required, char **key_out, const char **value_out,
		    struct buf *err)
{
	const char *eq = strchr(s, '=');

	if (!eq || eq == s || (value_required && !eq[1]))
		return api__invalid(err, "invalid --%s '%s': expected %s", flag,
				    s, what);
	*key_out = xstrndup(s, (size_t)(eq - s));
	*value_out = eq + 1;
	return 0;
}

/*
 * Returns the object member key of parent, creating an empty object there
 * when it is absent. NULL (with err set) when the member exists but is not an
 * object: overwriting it would hide a mistake in the user's file.
 */
static json_t *child_object(json_t *parent, const char *key, struct buf *err)
{
	json_t *o = json_object_get(parent, key);

	if (o) {
		if (!json_is_object(o)) {
			api__invalid(err, "member '%s' must be an object", key);
			return NULL;
		}
		return o;
	}
	o = json_object();
	if (!o || json_object_set_new(parent, key, o))
		return NULL;
	return o;
}

/* Like child_object() for arrays. */
static json_t *child_array(json_t *parent, const char *key, struct buf *err)
{
	json_t *a = json_object_get(parent, key);

	if (a) {
		if (!json_is_array(a)) {
			api__invalid(err, "member '%s' must be an array", key);
			return NULL;
		}
		return a;
	}
	a = json_array();
	if (!a || json_object_set_new(parent, key, a))
		return NULL;
	return a;
}

static int set_str(json_t *o, const char *key, const char *value)
{
	return json_object_set_new(o, key, json_string(value)) ? ERR_INVALID :
								 0;
}

static int set_default_str(json_t *o, const char *key, const char *value)
{
	if (json_object_get(o, key))
		return 0;
	return set_str(o, key, value);
}

static int set_default_int(json_t *o, const char *key, json_int_t value)
{
	if (json_object_get(o, key))
		return 0;
	return json_object_set_new(o, key, json_integer(value)) ? ERR_INVALID :
								  0;
}

/* Merges "KEY=VALUE" items into the string map parent[key]. */
static int merge_map(json_t *parent, const char *key, const char *flag,
		     const char *const *items, size_t n, struct buf *err)
{
	json_t *map;
	size_t i;

	if (!n)
		return 0;
	map = child_object(parent, key, err);
	if (!map)
		return ERR_INVALID;
	for (i = 0; i < n; i++) {
		char *k = NULL;
		const char *v = NULL;
		int r = split_kv(flag, "KEY=VALUE", items[i], 0, &k, &v, err);

		if (r)
			return r;
		r = set_str(map, k, v);
		free(k);
		if (r)
			return api__invalid(err, "invalid --%s '%s': not UTF-8",
					    flag, items[i]);
	}
	return 0;
}

/*
 * Returns the element of array a whose member key equals value, or NULL.
 */
static json_t *find_by(json_t *a, const char *key, const char *value)
{
	size_t i;
	json_t *e;

	json_array_foreach(a, i, e)
	{
		const char *s = json_string_value(json_object_get(e, key));

		if (s && !strcmp(s, value))
			return e;
	}
	return NULL;
}

/*
 * Adds or replaces the element of array a keyed by key == name. Takes the
 * reference to elem.
 */
static int put_keyed(json_t *a, const char *key, const char *name, json_t *elem)
{
	size_t i;
	json_t *e;

	if (!elem)
		return ERR_INVALID;
	json_array_foreach(a, i, e)
	{
		const char *s = json_string_value(json_object_get(e, key));

		if (s && !strcmp(s, name))
			return json_array_set_new(a, i, elem) ? ERR_INVALID : 0;
	}
	return json_array_append_new(a, elem) ? ERR_INVALID : 0;
}

static int merge_channels(json_t *root, const struct api_client_create *f,
			  struct buf *err)
{
	json_t *a;
	size_t i;

	if (!f->n_channels)
		return 0;
	a = child_array(root, "InputDataConfig", err);
	if (!a)
		return ERR_INVALID;
	for (i = 0; i < f->n_channels; i++) {
		char *name = NULL;
		const char *uri = NULL;
		json_t *elem;
		int r = split_kv("channel", "NAME=URI", f->channels[i], 1,
				 &name, &uri, err);

		if (r)
			return r;
		/*
		 * A channel that the file already describes keeps its other
		 * settings (content type, input mode); only the URI moves.
		 */
		elem = find_by(a, "ChannelName", name);
		if (elem) {
			json_t *ds = json_object_get(elem, "DataSource");
			json_t *s3 = json_object_get(ds, "S3DataSource");

			if (json_is_object(s3)) {
				r = set_str(s3, "S3Uri", uri);
				free(name);
				if (r)
					return api__invalid(
						err, "invalid --channel");
				continue;
			}
		}
		elem = json_pack("{s:s, s:{s:{s:s, s:s, s:s}}}", "ChannelName",
				 name, "DataSource", "S3DataSource",
				 "S3DataType", "S3Prefix", "S3Uri", uri,
				 "S3DataDistributionType", "FullyReplicated");
		r = put_keyed(a, "ChannelName", name, elem);
		free(name);
		if (r)
			return api__invalid(err, "invalid --channel '%s'",
					    f->channels[i]);
	}
	return 0;
}

static int merge_metrics(json_t *algo, const struct api_client_create *f,
			 struct buf *err)
{
	json_t *a;
	size_t i;

	if (!f->n_metrics)
		return 0;
	a = child_array(algo, "MetricDefinitions", err);
	if (!a)
		return ERR_INVALID;
	for (i = 0; i < f->n_metrics; i++) {
		char *name = NULL;
		const char *regex = NULL;
		int r = split_kv("metric", "NAME=REGEX", f->metrics[i], 1,
				 &name, &regex, err);

		if (r)
			return r;
		r = put_keyed(a, "Name", name,
			      json_pack("{s:s, s:s}", "Name", name, "Regex",
					regex));
		free(name);
		if (r)
			return api__invalid(err, "invalid --metric '%s'",
					    f->metrics[i]);
	}
	return 0;
}

/* Replaces parent[key] with the strings v[0..n) when n > 0. */
static int set_strings(json_t *parent, const char *key, const char *const *v,
		       size_t n, struct buf *err)
{
	json_t *a;
	size_t i;

	if (!n)
		return 0;
	a = json_array();
	if (!a)
		return ERR_INVALID;
	for (i = 0; i < n; i++) {
		if (json_array_append_new(a, json_string(v[i]))) {
			json_decref(a);
			return api__invalid(err, "invalid %s value '%s'", key,
					    v[i]);
		}
	}
	return json_object_set_new(parent, key, a) ? ERR_INVALID : 0;
}

static int apply_algorithm(json_t *root, const struct api_client_create *f,
			   struct buf *err)
{
	json_t *algo = child_object(root, "AlgorithmSpecification", err);
	int r;

	if (!algo)
		return ERR_INVALID;
	if (f->image) {
		json_object_del(algo, "AlgorithmName");
		if (set_str(algo, "TrainingImage", f->image))
			return api__invalid(err, "invalid --image '%s'",
					    f->image);
	}
	if (f->input_mode && set_str(algo, "TrainingInputMode", f->input_mode))
		return api__invalid(err, "invalid --input-mode '%s'",
				    f->input_mode);
	if (set_default_str(algo, "TrainingInputMode",
			    API_CLIENT_DEFAULT_INPUT_MODE))
		return ERR_INVALID;
	r = merge_metrics(algo, f, err);
	if (!r)
		r = set_strings(algo, "ContainerEntrypoint", f->entrypoint,
				f->n_entrypoint, err);
	if (!r)
		r = set_strings(algo, "ContainerArguments", f->arguments,
				f->n_arguments, err);
	return r;
}

static int apply_resources(json_t *root, const struct api_client_create *f,
			   struct buf *err)
{
	json_t *rc = child_object(root, "ResourceConfig", err);

	if (!rc)
		return ERR_INVALID;
	if (f->instance_type || f->instance_count)
		json_object_del(rc, "InstanceGroups");
	if (f->instance_type && set_str(rc, "InstanceType", f->instance_type))
		return api__invalid(err, "invalid --instance-type '%s'",
				    f->instance_type);
	if (f->instance_count &&
	    json_object_set_new(rc, "InstanceCount",
				json_integer(f->instance_count)))
		return ERR_INVALID;
	if (f->volume_gb && json_object_set_new(rc, "VolumeSizeInGB",
						json_integer(f->volume_gb)))
		return ERR_INVALID;
	if (set_default_int(rc, "VolumeSizeInGB", API_CLIENT_DEFAULT_VOLUME_GB))
		return ERR_INVALID;
	return 0;
}

/*
 * Checks, after all flags are in, the members a request cannot do without,
 * naming the flag that supplies each: these are the usual mistakes, and the
 * server's message would name only the JSON member.
 */
static int check_required(json_t *root, struct buf *err)
{
	json_t *algo = json_object_get(root, "AlgorithmSpecification");
	json_t *rc = json_object_get(root, "ResourceConfig");

	if (!json_is_string(json_object_get(root, "TrainingJobName")))
		return api__invalid(err, "missing --name (TrainingJobName)");
	if (!json_is_string(json_object_get(algo, "TrainingImage")) &&
	    !json_is_string(json_object_get(algo, "AlgorithmName")))
		return api__invalid(err,
				    "missing --image (AlgorithmSpecification."
				    "TrainingImage)");
	if (json_object_get(rc, "InstanceGroups"))
		return 0;
	if (!json_is_string(json_object_get(rc, "InstanceType")))
		return api__invalid(err,
				    "missing --instance-type (ResourceConfig."
				    "InstanceType)");
	if (!json_is_integer(json_object_get(rc, "InstanceCount")))
		return api__invalid(err,
				    "missing --instance-count (ResourceConfig."
				    "InstanceCount)");
	return 0;
}

static int apply_flags(json_t *root, const struct api_client_create *f,
		       struct buf *err)
{
	json_t *o;
	int r;

	if (f->name && set_str(root, "TrainingJobName", f->name))
		return api__invalid(err, "invalid --name '%s'", f->name);
	if (f->role_arn && set_str(root, "RoleArn", f->role_arn))
		return api__invalid(err, "invalid --role-arn '%s'",
				    f->role_arn);
	if (set_default_str(root, "RoleArn", API_CLIENT_DEFAULT_ROLE_ARN))
		return ERR_INVALID;

	r = apply_algorithm(root, f, err);
	if (!r)
		r = apply_resources(root, f, err);
	if (!r)
		r = merge_map(root, "HyperParameters", "hyperparameter",
			      f->hyperparameters, f->n_hyperparameters, err);
	if (!r)
		r = merge_map(root, "Environment", "environment",
			      f->environment, f->n_environment, err);
	if (!r)
		r = merge_channels(root, f, err);
	if (r)
		return r;

	o = child_object(root, "OutputDataConfig", err);
	if (!o)
		return ERR_INVALID;
	if (f->output_path && set_str(o, "S3OutputPath", f->output_path))
		return api__invalid(err, "invalid --output-path '%s'",
				    f->output_path);
	if (set_default_str(o, "S3OutputPath", API_CLIENT_DEFAULT_OUTPUT_PATH))
		return ERR_INVALID;

	o = child_object(root, "StoppingCondition", err);
	if (!o)
		return ERR_INVALID;
	if (f->max_runtime_s &&
	    json_object_set_new(o, "MaxRuntimeInSeconds",
				json_integer(f->max_runtime_s)))
		return ERR_INVALID;
	if (set_default_int(o, "MaxRuntimeInSeconds",
			    API_CLIENT_DEFAULT_MAX_RUNTIME_S))
		return ERR_INVALID;
	return check_required(root, err);
}

/* Appends the compact form of v to out. */
static int dump_to(const json_t *v, size_t flags, struct buf *out)
{
	char *s = json_dumps(v, flags | JSON_ENCODE_ANY);
	int r;

	if (!s)
		return ERR_INVALID;
	r = buf_adds(out, s);
	free(s);
	return r;
}

int api_create_request_build(const struct api_client_create *flags,
			     const char *base_json, size_t len, struct buf *out,
			     struct buf *err)
{
	json_t *root;
	int ret;

	if (api__cli_input_load(base_json, len, &root, err))
		return ERR_INVALID;
	ret = apply_flags(root, flags, err);
	if (!ret) {
		size_t before = out->len;

		ret = dump_to(root, JSON_COMPACT, out);
		if (ret) {
			out->len = before;
			out->data[before] = '\0';
			api__invalid(err, "request too large");
			ret = ERR_INVALID;
		}
	} else if (err && !err->len) {
		api__invalid(err, "cannot build the request");
	}
	json_decref(root);
	return ret;
}

/* Loads a JSON object or fails with err set. */
static json_t *load_object(const char *json, size_t len, struct buf *err)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, 0, &je);

	if (!root) {
		api__invalid(err, "malformed response: %s", je.text);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		api__invalid(err, "malformed response: not a JSON object");
		return NULL;
	}
	return root;
}

char *api_create_request_name(const char *json, size_t len)
{
	json_t *req = json_loadb(json, len, 0, NULL);
	const char *name =
		json_string_value(json_object_get(req, "TrainingJobName"));
	char *copy = name ? xstrdup(name) : NULL;

	json_decref(req);
	return copy;
}

int api_create_response_parse(const char *json, size_t len, char **arn_out,
			      struct buf *err)
{
	json_t *root = load_object(json, len, err);
	const char *arn;

	if (!root)
		return ERR_INVALID;
	arn = json_string_value(json_object_get(root, "TrainingJobArn"));
	if (!arn) {
		json_decref(root);
		return api__invalid(err,
				    "malformed response: no TrainingJobArn");
	}
	*arn_out = xstrdup(arn);
	json_decref(root);
	return 0;
}

int api_list_request_build(const struct api_client_list *q, struct buf *out,
			   struct buf *err)
{
	static const char *const statuses[] = { "InProgress", "Completed",
						"Failed",     "Stopping",
						"Stopped",    "Deleting" };
	static const char *const sorts[] = { "Name", "CreationTime", "Status" };
	static const char *const orders[] = { "Ascending", "Descending" };
	json_t *root;
	int r = 0;

	if (q->status_equals && api__name_find(statuses, ARRAY_SIZE(statuses),
					       q->status_equals) < 0)
		return api__invalid(
			err,
			"invalid --status '%s': expected InProgress, "
			"Completed, Failed, Stopping, Stopped or Deleting",
			q->status_equals);
	if (q->sort_by &&
	    api__name_find(sorts, ARRAY_SIZE(sorts), q->sort_by) < 0)
		return api__invalid(err,
				    "invalid --sort-by '%s': expected Name, "
				    "CreationTime or Status",
				    q->sort_by);
	if (q->sort_order &&
	    api__name_find(orders, ARRAY_SIZE(orders), q->sort_order) < 0)
		return api__invalid(
			err,
			"invalid --sort-order '%s': expected Ascending or "
			"Descending",
			q->sort_order);
	if (q->max_results < 0 || q->max_results > 100)
		return api__invalid(err,
				    "invalid --max-results %d: expected 1..100",
				    q->max_results);

	root = json_object();
	if (!root)
		return api__invalid(err, "out of memory");
	if (q->status_equals)
		r |= set_str(root, "StatusEquals", q->status_equals);
	if (q->name_contains)
		r |= set_str(root, "NameContains", q->name_contains);
	if (q->sort_by)
		r |= set_str(root, "SortBy", q->sort_by);
	if (q->sort_order)
		r |= set_str(root, "SortOrder", q->sort_order);
	if (q->next_token)
		r |= set_str(root, "NextToken", q->next_token);
	if (q->max_results)
		r |= json_object_set_new(root, "MaxResults",
					 json_integer(q->max_results));
	if (!r)
		r = dump_to(root, JSON_COMPACT, out);
	json_decref(root);
	if (r)
		return api__invalid(err,
				    "invalid list-training-jobs arguments");
	return 0;
}

void api_job_records_free(struct api_job_record *recs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		api_job_record_release(&recs[i]);
	free(recs);
}

/* Returns the TrainingJobSummaries array of a list response, or NULL. */
static json_t *summaries_of(json_t *root, struct buf *err)
{
	json_t *a = json_object_get(root, "TrainingJobSummaries");

	if (!json_is_array(a)) {
		api__invalid(
			err,
			"malformed response: no TrainingJobSummaries array");
		return NULL;
	}
	return a;
}

int api_list_response_parse(const char *json, size_t len,
			    struct api_job_record **recs_out, size_t *n_out,
			    char **next_token_out, struct buf *err)
{
	json_t *root = load_object(json, len, err);
	json_t *a, *e;
	struct api_job_record *recs = NULL;
	const char *tok;
	size_t i, n = 0;
	int ret = ERR_INVALID;

	if (!root)
		return ERR_INVALID;
	a = summaries_of(root, err);
	if (!a)
		goto out;
	if (json_array_size(a))
		recs = xcalloc(json_array_size(a), sizeof(*recs));
	json_array_foreach(a, i, e)
	{
		char *s;
		int r;

		if (!json_is_object(e)) {
			api__invalid(
				err,
				"malformed response: summary %zu is not an "
				"object",
				i);
			goto out;
		}
		/*
		 * api_job_record_from_json() owns the summary field list, so
		 * hand it each element as text rather than duplicating it.
		 */
		s = json_dumps(e, JSON_COMPACT);
		if (!s) {
			api__invalid(err, "out of memory");
			goto out;
		}
		r = api_job_record_from_json(s, strlen(s), &recs[n], err);
		free(s);
		if (r) {
			ret = r;
			goto out;
		}
		n++;
	}
	tok = json_string_value(json_object_get(root, "NextToken"));
	*next_token_out = tok && *tok ? xstrdup(tok) : NULL;
	*recs_out = recs;
	*n_out = n;
	recs = NULL;
	n = 0;
	ret = 0;
out:
	api_job_records_free(recs, n);
	json_decref(root);
	return ret;
}

int api_list_summaries_append(const char *json, size_t len, struct buf *out,
			      struct buf *err)
{
	json_t *root = load_object(json, len, err);
	json_t *a, *e;
	size_t i, before = out->len;
	int ret = 0;

	if (!root)
		return ERR_INVALID;
	a = summaries_of(root, err);
	if (!a) {
		json_decref(root);
		return ERR_INVALID;
	}
	json_array_foreach(a, i, e)
	{
		if (out->len)
			ret = buf_addch(out, ',');
		if (!ret)
			ret = dump_to(e, JSON_COMPACT, out);
		if (ret)
			break;
	}
	json_decref(root);
	if (ret) {
		out->len = before;
		out->data[before] = '\0';
		return api__invalid(err, "response too large");
	}
	return 0;
}

int api_json_pretty(const char *json, size_t len, struct buf *out)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_DECODE_ANY, &je);
	int r;

	if (!root)
		return ERR_INVALID;
	r = dump_to(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER, out);
	if (!r)
		r = buf_addch(out, '\n');
	json_decref(root);
	return r;
}
