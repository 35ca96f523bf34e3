#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "api/algorithm.h"
#include "api/job_config.h"
#include "api/elastic.h"
#include "api/job_spec.h"
#include "api/json_util.h"
#include "api/members.h"
#include "api/names.h"
#include "api/validate.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define DEFAULT_MAX_RUNTIME_S 86400
#define MAX_MAX_RUNTIME_S (28 * 86400)
#define DEFAULT_CHECKPOINT_PATH "/opt/ml/checkpoints/"
/* SageMaker Debugger's defaults. */
#define DEFAULT_DEBUG_PATH "/opt/ml/output/tensors"
#define DEFAULT_PROFILING_MS 500
#define DEFAULT_PROFILER_PATH "/opt/ml/output/profiler"
#define DEFAULT_TENSORBOARD_PATH "/opt/ml/output/tensorboard"

/*
 * Members of CreateTrainingJobRequest that DescribeTrainingJob echoes. Others
 * (Tags, members a newer client knows and we do not) are accepted but not
 * echoed, as the real service does with Tags.
 */
static const char *const echoed_members[] = {
	"AlgorithmSpecification",
	"RoleArn",
	"HyperParameters",
	"InputDataConfig",
	"OutputDataConfig",
	"ResourceConfig",
	"VpcConfig",
	"StoppingCondition",
	"EnableNetworkIsolation",
	"EnableInterContainerTrafficEncryption",
	"EnableManagedSpotTraining",
	"CheckpointConfig",
	"DebugHookConfig",
	"ExperimentConfig",
	"DebugRuleConfigurations",
	"TensorBoardOutputConfig",
	"ProfilerConfig",
	"ProfilerRuleConfigurations",
	"Environment",
	"RetryStrategy",
	"RemoteDebugConfig",
	"InfraCheckConfig",
};

static char *dup_str(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? xstrdup(s) : NULL;
}

static char **dup_str_list(const json_t *arr)
{
	char **out;
	size_t i;
	json_t *v;

	if (!json_is_array(arr))
		return NULL;
	out = xcalloc(json_array_size(arr) + 1, sizeof(*out));
	json_array_foreach(arr, i, v) out[i] = xstrdup(json_string_value(v));
	return out;
}

static void dup_map(const json_t *obj, struct api_kv **out, size_t *n)
{
	const char *key;
	json_t *v;
	size_t i = 0;

	*out = NULL;
	*n = 0;
	if (!json_is_object(obj) || json_object_size(obj) == 0)
		return;
	*out = xcalloc(json_object_size(obj), sizeof(**out));
	json_object_foreach((json_t *)obj, key, v)
	{
		(*out)[i].key = xstrdup(key);
		(*out)[i].value = xstrdup(json_string_value(v));
		i++;
	}
	*n = i;
}

static int fail(struct buf *err, const char *msg)
{
	(void)buf_addf(err, "1 validation error detected: %s", msg);
	return ERR_INVALID;
}

/*
 * A path inside the job's container (CheckpointConfig.LocalPath and the
 * like) must lie under /opt/ml, as in a SageMaker container: the agent maps
 * /opt/ml to the job's own folder, so nothing else on the host is reachable.
 */
static int check_container_path(const char *field, const char *path,
				struct buf *err)
{
	const char *c, *p;

	if (!path)
		return 0;
	if (strncmp(path, "/opt/ml/", 8))
		goto bad;
	for (c = path + 8; *c; c = p + (*p == '/')) {
		size_t len;

		p = strchr(c, '/');
		if (!p)
			p = c + strlen(c);
		len = (size_t)(p - c);
		if ((len == 1 && c[0] == '.') ||
		    (len == 2 && c[0] == '.' && c[1] == '.'))
			goto bad;
		if (!*p)
			break;
	}
	if (strspn(path + 8, "/") == strlen(path + 8))
		goto bad;
	return 0;
bad:
	(void)buf_addf(err,
		       "1 validation error detected: %s '%.200s' must be a "
		       "folder under /opt/ml/ (absolute, without '.' or '..' "
		       "components)",
		       field, path);
	return ERR_INVALID;
}

/* Every container path a request may name. */
static int check_container_paths(const json_t *root, struct buf *err)
{
	static const char *const holders[] = {
		"CheckpointConfig",
		"DebugHookConfig",
		"TensorBoardOutputConfig",
	};
	struct buf field = BUF_INIT;
	size_t i;
	int ret = 0;

	for (i = 0; i < ARRAY_SIZE(holders) && !ret; i++) {
		const char *lp = json_string_value(json_object_get(
			json_object_get(root, holders[i]), "LocalPath"));

		buf_reset(&field);
		(void)buf_addf(&field, "%s.LocalPath", holders[i]);
		ret = check_container_path(field.data, lp, err);
	}
	buf_release(&field);
	return ret;
}

/* AlgorithmSpecification: a TrainingImage, and no AlgorithmName. */
static int check_algorithm(const json_t *alg, struct buf *err)
{
	if (json_object_get(alg, "AlgorithmName") &&
	    json_object_get(alg, "TrainingImage"))
		return fail(err, "AlgorithmSpecification must specify either "
				 "TrainingImage or AlgorithmName, not both");
	if (!json_object_get(alg, "TrainingImage"))
		return fail(err,
			    "Value null at 'algorithmSpecification."
			    "trainingImage' failed to satisfy constraint: "
			    "Member must not be null (AlgorithmName is not "
			    "supported)");
	return 0;
}

/* ResourceConfig: InstanceType and InstanceCount, or InstanceGroups. */
static int check_resources(const json_t *res, struct buf *err)
{
	const json_t *ch;
	int has_type, has_count, has_groups;
	size_t i;

	has_type = json_object_get(res, "InstanceType") != NULL;
	has_count = json_object_get(res, "InstanceCount") != NULL;
	has_groups = json_object_get(res, "InstanceGroups") != NULL;
	if (has_groups && (has_type || has_count))
		return fail(err, "ResourceConfig.InstanceGroups cannot be used "
				 "together with InstanceType or InstanceCount");
	if (!has_groups && (!has_type || !has_count))
		return fail(err, "ResourceConfig must specify InstanceType and "
				 "InstanceCount, or InstanceGroups");
	if (has_count &&
	    json_integer_value(json_object_get(res, "InstanceCount")) < 1)
		return fail(err,
			    "Value 0 at 'resourceConfig.instanceCount' "
			    "failed to satisfy constraint: Member must have "
			    "value greater than or equal to 1");
	if (has_groups) {
		json_array_foreach(json_object_get(res, "InstanceGroups"), i,
				   ch)
		{
			if (json_integer_value(
				    json_object_get(ch, "InstanceCount")) < 1)
				return fail(err,
					    "every InstanceGroups member "
					    "must have InstanceCount >= 1");
		}
	}
	return 0;
}

/* StoppingCondition against EnableManagedSpotTraining. */
static int check_stopping(const json_t *root, const json_t *stop,
			  struct buf *err)
{
	json_int_t runtime = DEFAULT_MAX_RUNTIME_S, wait = 0;
	int spot;

	spot = json_is_true(json_object_get(root, "EnableManagedSpotTraining"));
	if (json_object_get(stop, "MaxRuntimeInSeconds"))
		runtime = json_integer_value(
			json_object_get(stop, "MaxRuntimeInSeconds"));
	if (json_object_get(stop, "MaxWaitTimeInSeconds"))
		wait = json_integer_value(
			json_object_get(stop, "MaxWaitTimeInSeconds"));
	if (runtime > MAX_MAX_RUNTIME_S && !spot)
		return fail(err,
			    "StoppingCondition.MaxRuntimeInSeconds must be "
			    "at most 2419200 (28 days)");
	if (wait && !spot)
		return fail(err,
			    "StoppingCondition.MaxWaitTimeInSeconds is only "
			    "allowed with EnableManagedSpotTraining");
	if (spot && !wait)
		return fail(err, "EnableManagedSpotTraining requires "
				 "StoppingCondition.MaxWaitTimeInSeconds");
	if (wait && wait < runtime)
		return fail(err,
			    "StoppingCondition.MaxWaitTimeInSeconds must be "
			    "greater than or equal to MaxRuntimeInSeconds");
	return 0;
}

/* InputDataConfig: valid, unique channel names, each on S3. */
static int check_channels(const json_t *chans, struct buf *err)
{
	const json_t *ch;
	size_t i, j;

	json_array_foreach(chans, i, ch)
	{
		const char *name =
			json_string_value(json_object_get(ch, "ChannelName"));
		const json_t *other;

		if (!strcmp(name, ".") || !strcmp(name, "..")) {
			(void)buf_addf(err,
				       "1 validation error detected: "
				       "InputDataConfig.ChannelName '%s' is "
				       "not a valid channel name",
				       name);
			return ERR_INVALID;
		}
		if (!json_object_get(ch, "DataSource") ||
		    !json_object_get(json_object_get(ch, "DataSource"),
				     "S3DataSource")) {
			(void)buf_addf(
				err,
				"1 validation error detected: "
				"channel '%s' must use an S3DataSource "
				"(FileSystemDataSource and DatasetSource "
				"are not supported)",
				name);
			return ERR_INVALID;
		}
		for (j = i + 1; j < json_array_size(chans); j++) {
			other = json_array_get(chans, j);
			if (!strcmp(name, json_string_value(json_object_get(
						  other, "ChannelName")))) {
				(void)buf_addf(err,
					       "1 validation error "
					       "detected: channel name '%s' is "
					       "used more than once",
					       name);
				return ERR_INVALID;
			}
		}
	}
	return 0;
}

/*
 * S3DataSource.InstanceGroupNames: only with ResourceConfig.InstanceGroups,
 * and naming its groups.
 */
static int check_channel_groups(const json_t *root, struct buf *err)
{
	const json_t *groups = json_object_get(
		json_object_get(root, "ResourceConfig"), "InstanceGroups");
	const json_t *ch, *names, *g, *n;
	size_t i, j, k;
	int found;

	json_array_foreach(json_object_get(root, "InputDataConfig"), i, ch)
	{
		const char *cname =
			json_string_value(json_object_get(ch, "ChannelName"));

		names = json_object_get(
			json_object_get(json_object_get(ch, "DataSource"),
					"S3DataSource"),
			"InstanceGroupNames");
		if (!json_is_array(names))
			continue;
		if (!groups) {
			(void)buf_addf(err,
				       "1 validation error detected: channel "
				       "'%s' names InstanceGroupNames, but "
				       "ResourceConfig has no InstanceGroups",
				       cname);
			return ERR_INVALID;
		}
		json_array_foreach(names, j, n)
		{
			found = 0;
			json_array_foreach(groups, k, g)
			{
				found |= json_equal(
					n, json_object_get(
						   g, "InstanceGroupName"));
			}
			if (!found) {
				(void)buf_addf(
					err,
					"1 validation error detected: "
					"channel '%s': InstanceGroupNames "
					"'%s' is not the InstanceGroupName "
					"of any of ResourceConfig."
					"InstanceGroups",
					cname, json_string_value(n));
				return ERR_INVALID;
			}
		}
	}
	return 0;
}

/* The rule lists, Debugger's then Profiler's. */
static const char *const rule_lists[] = {
	"DebugRuleConfigurations",
	"ProfilerRuleConfigurations",
};

/*
 * RuleConfigurationName is unique across both rule lists, as the service
 * requires: it names the rule's status in Describe.
 */
static int check_rule_names(const json_t *root, struct buf *err)
{
	const char *names[2 * 20];
	const json_t *r;
	size_t n = 0, l, i, j;

	for (l = 0; l < ARRAY_SIZE(rule_lists); l++) {
		json_array_foreach(json_object_get(root, rule_lists[l]), i, r)
		{
			if (n < ARRAY_SIZE(names))
				names[n++] = json_string_value(json_object_get(
					r, "RuleConfigurationName"));
		}
	}
	for (i = 0; i < n; i++) {
		for (j = i + 1; j < n; j++) {
			if (!names[i] || !names[j] ||
			    strcmp(names[i], names[j]))
				continue;
			(void)buf_addf(err,
				       "1 validation error detected: "
				       "RuleConfigurationName '%s' is used "
				       "more than once; it must be unique "
				       "across DebugRuleConfigurations and "
				       "ProfilerRuleConfigurations",
				       names[i]);
			return ERR_INVALID;
		}
	}
	return 0;
}

/*
 * Cross-member rules the model cannot express. stored: the request was
 * accepted before; what the controller refuses is not looked at again, so
 * a job accepted by an older controller still runs.
 */
static int check_semantics(const json_t *root, int stored, struct buf *err)
{
	int ret;

	ret = check_algorithm(json_object_get(root, "AlgorithmSpecification"),
			      err);
	ret = ret ? ret :
		    check_resources(json_object_get(root, "ResourceConfig"),
				    err);
	ret = ret ? ret :
		    check_stopping(root,
				   json_object_get(root, "StoppingCondition"),
				   err);
	ret = ret ? ret :
		    check_channels(json_object_get(root, "InputDataConfig"),
				   err);
	ret = ret ? ret : check_channel_groups(root, err);
	ret = ret ? ret : check_container_paths(root, err);
	ret = ret ? ret : check_rule_names(root, err);
	return ret || stored ? ret : api_members_check(root, err);
}

/* The compact text of echo's member key, or NULL when absent. */
static char *dump_member(const json_t *echo, const char *key)
{
	const json_t *v = json_object_get(echo, key);
	struct buf b = BUF_INIT;

	if (!v || api__json_dump_to(v, &b)) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

/* base (an S3 URI, any trailing '/' dropped), "/", name, "/", what. */
static char *output_uri(const char *base, const char *name, const char *what)
{
	struct buf b = BUF_INIT;
	size_t n = strlen(base);

	while (n && base[n - 1] == '/')
		n--;
	(void)buf_addf(&b, "%.*s/%s/%s", (int)n, base, name, what);
	return buf_detach(&b, NULL);
}

/*
 * The folders SageMaker Debugger's hook and profiler write, and where
 * they go: DebugHookConfig.LocalPath to <its S3OutputPath>/<job>/
 * debug-output, the profiler's /opt/ml/output/profiler to <its
 * S3OutputPath, else the job's>/<job>/profiler-output.
 */
static void debugger_outputs(const json_t *echo, struct api_job_spec *spec)
{
	const json_t *d = json_object_get(echo, "DebugHookConfig");
	const json_t *p = json_object_get(echo, "ProfilerConfig");
	const char *base;

	if (d) {
		spec->debug_s3_uri = output_uri(
			json_string_value(json_object_get(d, "S3OutputPath")),
			spec->name, "debug-output");
		spec->debug_local_path = dup_str(d, "LocalPath");
	}
	if (p && !json_is_true(json_object_get(p, "DisableProfiler"))) {
		base = json_string_value(json_object_get(p, "S3OutputPath"));
		spec->profiler_s3_uri =
			output_uri(base ? base : spec->output_path, spec->name,
				   "profiler-output");
		spec->profiler_local_path = xstrdup(DEFAULT_PROFILER_PATH);
	}
}

/* Whether the request turns the profiler on. */
static int profiling(const json_t *root)
{
	const json_t *p = json_object_get(root, "ProfilerConfig");

	return p && !json_is_true(json_object_get(p, "DisableProfiler"));
}

/* Builds the echo of the request with the service's defaults filled in. */
static json_t *build_echo(const json_t *root)
{
	json_t *echo = json_object();
	json_t *v;
	json_t *ch;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(echoed_members); i++) {
		v = json_object_get(root, echoed_members[i]);
		if (v)
			json_object_set_new(echo, echoed_members[i],
					    json_deep_copy(v));
	}
	v = json_object_get(echo, "StoppingCondition");
	if (!v) {
		v = json_object();
		json_object_set_new(echo, "StoppingCondition", v);
	}
	if (!json_object_get(v, "MaxRuntimeInSeconds"))
		json_object_set_new(v, "MaxRuntimeInSeconds",
				    json_integer(DEFAULT_MAX_RUNTIME_S));
	json_array_foreach(json_object_get(echo, "InputDataConfig"), i, ch)
	{
		json_t *s3 = json_object_get(json_object_get(ch, "DataSource"),
					     "S3DataSource");

		if (s3 && !json_object_get(s3, "S3DataDistributionType"))
			json_object_set_new(s3, "S3DataDistributionType",
					    json_string("FullyReplicated"));
		if (!json_object_get(ch, "CompressionType"))
			json_object_set_new(ch, "CompressionType",
					    json_string("None"));
		if (!json_object_get(ch, "RecordWrapperType"))
			json_object_set_new(ch, "RecordWrapperType",
					    json_string("None"));
	}
	v = json_object_get(echo, "DebugHookConfig");
	if (v && !json_object_get(v, "LocalPath"))
		json_object_set_new(v, "LocalPath",
				    json_string(DEFAULT_DEBUG_PATH));
	v = json_object_get(echo, "ProfilerConfig");
	if (v && !json_is_true(json_object_get(v, "DisableProfiler")) &&
	    !json_object_get(v, "ProfilingIntervalInMilliseconds"))
		json_object_set_new(v, "ProfilingIntervalInMilliseconds",
				    json_integer(DEFAULT_PROFILING_MS));
	json_object_set_new(echo, "ProfilingStatus",
			    json_string(profiling(root) ? "Enabled" :
							  "Disabled"));
	/* SageMaker answers an unset key as "" (the SDK's attach reads it). */
	v = json_object_get(echo, "OutputDataConfig");
	if (v && !json_object_get(v, "KmsKeyId"))
		json_object_set_new(v, "KmsKeyId", json_string(""));
	v = json_object_get(echo, "CheckpointConfig");
	if (v && !json_object_get(v, "LocalPath"))
		json_object_set_new(v, "LocalPath",
				    json_string(DEFAULT_CHECKPOINT_PATH));
	v = json_object_get(echo, "TensorBoardOutputConfig");
	if (v && !json_object_get(v, "LocalPath"))
		json_object_set_new(v, "LocalPath",
				    json_string(DEFAULT_TENSORBOARD_PATH));
	if (!json_object_get(echo, "EnableNetworkIsolation"))
		json_object_set_new(echo, "EnableNetworkIsolation",
				    json_false());
	if (!json_object_get(echo, "EnableInterContainerTrafficEncryption"))
		json_object_set_new(echo,
				    "EnableInterContainerTrafficEncryption",
				    json_false());
	if (!json_object_get(echo, "EnableManagedSpotTraining"))
		json_object_set_new(echo, "EnableManagedSpotTraining",
				    json_false());
	return echo;
}

/* InputDataConfig, checked by now. */
static void fill_channels(const json_t *arr, struct api_job_spec *spec)
{
	const json_t *v;
	size_t i;

	if (json_array_size(arr)) {
		spec->channels =
			xcalloc(json_array_size(arr), sizeof(*spec->channels));
		json_array_foreach(arr, i, v)
		{
			struct api_channel *c = &spec->channels[i];
			const json_t *s3 = json_object_get(
				json_object_get(v, "DataSource"),
				"S3DataSource");

			c->name = dup_str(v, "ChannelName");
			c->s3_uri = dup_str(s3, "S3Uri");
			c->s3_data_type = dup_str(s3, "S3DataType");
			c->distribution = dup_str(s3, "S3DataDistributionType");
			if (!c->distribution)
				c->distribution = xstrdup("FullyReplicated");
			c->content_type = dup_str(v, "ContentType");
			c->input_mode = dup_str(v, "InputMode");
			c->compression = dup_str(v, "CompressionType");
			c->record_wrapper = dup_str(v, "RecordWrapperType");
			if (json_object_get(v, "ShuffleConfig")) {
				c->shuffle = 1;
				c->shuffle_seed =
					json_integer_value(json_object_get(
						json_object_get(
							v, "ShuffleConfig"),
						"Seed"));
			}
			c->instance_groups = dup_str_list(
				json_object_get(s3, "InstanceGroupNames"));
		}
		spec->n_channels = json_array_size(arr);
	}
}

/* ResourceConfig.InstanceGroups, checked by now. */
static void fill_groups(const json_t *arr, struct api_job_spec *spec)
{
	const json_t *v;
	size_t i;

	if (json_array_size(arr)) {
		spec->groups =
			xcalloc(json_array_size(arr), sizeof(*spec->groups));
		json_array_foreach(arr, i, v)
		{
			spec->groups[i].name = dup_str(v, "InstanceGroupName");
			spec->groups[i].instance_type =
				dup_str(v, "InstanceType");
			spec->groups[i].count = (int)json_integer_value(
				json_object_get(v, "InstanceCount"));
		}
		spec->n_groups = json_array_size(arr);
	}
}

/* One rule configuration, checked by now. */
static void fill_rule(const json_t *v, int profiler, struct api_rule_config *r)
{
	const json_t *params = json_object_get(v, "RuleParameters");
	const char *key;
	json_t *pv;
	size_t k = 0;

	r->profiler = profiler;
	r->name = dup_str(v, "RuleConfigurationName");
	r->invoke = dup_str(params, "rule_to_invoke");
	if (!json_object_size(params))
		return;
	r->params = xcalloc(json_object_size(params), sizeof(*r->params));
	json_object_foreach((json_t *)params, key, pv)
	{
		if (!strcmp(key, "rule_to_invoke"))
			continue;
		r->params[k].key = xstrdup(key);
		r->params[k].value = xstrdup(json_string_value(pv));
		k++;
	}
	r->n_params = k;
}

/* DebugRuleConfigurations, then ProfilerRuleConfigurations. */
static void fill_rules(const json_t *root, struct api_job_spec *spec)
{
	size_t n = 0, l, i;
	const json_t *v;

	for (l = 0; l < ARRAY_SIZE(rule_lists); l++)
		n += json_array_size(json_object_get(root, rule_lists[l]));
	if (!n)
		return;
	spec->rules = xcalloc(n, sizeof(*spec->rules));
	for (l = 0; l < ARRAY_SIZE(rule_lists); l++) {
		json_array_foreach(json_object_get(root, rule_lists[l]), i, v)
		{
			fill_rule(v, (int)l, &spec->rules[spec->n_rules++]);
		}
	}
}

static void fill_spec(const json_t *root, struct api_job_spec *spec)
{
	const json_t *alg = json_object_get(root, "AlgorithmSpecification");
	const json_t *res = json_object_get(root, "ResourceConfig");
	const json_t *stop = json_object_get(root, "StoppingCondition");
	const json_t *ckpt = json_object_get(root, "CheckpointConfig");
	const json_t *tb = json_object_get(root, "TensorBoardOutputConfig");
	const json_t *arr;
	const json_t *v;
	size_t i;

	spec->name = dup_str(root, "TrainingJobName");
	spec->role_arn = dup_str(root, "RoleArn");
	spec->training_image = dup_str(alg, "TrainingImage");
	spec->algorithm_name = dup_str(alg, "AlgorithmName");
	spec->input_mode = dup_str(alg, "TrainingInputMode");
	spec->entrypoint =
		dup_str_list(json_object_get(alg, "ContainerEntrypoint"));
	spec->arguments =
		dup_str_list(json_object_get(alg, "ContainerArguments"));

	arr = json_object_get(alg, "MetricDefinitions");
	if (json_array_size(arr)) {
		spec->metrics =
			xcalloc(json_array_size(arr), sizeof(*spec->metrics));
		json_array_foreach(arr, i, v)
		{
			spec->metrics[i].name = dup_str(v, "Name");
			spec->metrics[i].regex = dup_str(v, "Regex");
		}
		spec->n_metrics = json_array_size(arr);
	}
	dup_map(json_object_get(root, "HyperParameters"),
		&spec->hyperparameters, &spec->n_hyperparameters);
	api_algo_fill_metrics(spec);
	dup_map(json_object_get(root, "Environment"), &spec->environment,
		&spec->n_environment);

	fill_channels(json_object_get(root, "InputDataConfig"), spec);
	spec->output_path = dup_str(json_object_get(root, "OutputDataConfig"),
				    "S3OutputPath");
	v = json_object_get(json_object_get(root, "OutputDataConfig"),
			    "CompressionType");
	spec->model_uncompressed = json_is_string(v) &&
				   !strcmp(json_string_value(v), "NONE");
	spec->instance_type = dup_str(res, "InstanceType");
	spec->instance_count =
		(int)json_integer_value(json_object_get(res, "InstanceCount"));
	fill_groups(json_object_get(res, "InstanceGroups"), spec);
	spec->volume_gb =
		(int)json_integer_value(json_object_get(res, "VolumeSizeInGB"));
	spec->max_runtime_s = DEFAULT_MAX_RUNTIME_S;
	if (json_object_get(stop, "MaxRuntimeInSeconds"))
		spec->max_runtime_s = json_integer_value(
			json_object_get(stop, "MaxRuntimeInSeconds"));
	spec->max_wait_s = json_integer_value(
		json_object_get(stop, "MaxWaitTimeInSeconds"));
	spec->max_retry_attempts = (int)json_integer_value(
		json_object_get(json_object_get(root, "RetryStrategy"),
				"MaximumRetryAttempts"));
	if (ckpt) {
		spec->checkpoint_s3_uri = dup_str(ckpt, "S3Uri");
		spec->checkpoint_local_path = dup_str(ckpt, "LocalPath");
		if (!spec->checkpoint_local_path)
			spec->checkpoint_local_path =
				xstrdup(DEFAULT_CHECKPOINT_PATH);
	}
	if (tb) {
		spec->tensorboard_s3_uri = dup_str(tb, "S3OutputPath");
		spec->tensorboard_local_path = dup_str(tb, "LocalPath");
		if (!spec->tensorboard_local_path)
			spec->tensorboard_local_path =
				xstrdup(DEFAULT_TENSORBOARD_PATH);
	}
	spec->spot = json_is_true(
		json_object_get(root, "EnableManagedSpotTraining"));
	spec->network_isolation =
		json_is_true(json_object_get(root, "EnableNetworkIsolation"));
	spec->infra_check = json_is_true(json_object_get(
		json_object_get(root, "InfraCheckConfig"), "EnableInfraCheck"));
	spec->keep_alive_s = (int)json_integer_value(
		json_object_get(res, "KeepAlivePeriodInSeconds"));
	fill_rules(root, spec);
}

/*
 * What SageMaker matches a warm pool on: the same ResourceConfig (instance
 * type and count or groups, volume size and key; the period aside), the
 * same RoleArn and the same VpcConfig, as the echo has them (members as
 * given: an absent VolumeSizeInGB is not its default).
 */
static char *warm_key(const json_t *echo)
{
	json_t *k = json_object();
	json_t *res = json_deep_copy(json_object_get(echo, "ResourceConfig"));
	const json_t *v;
	char *s;

	if (!res)
		res = json_object();
	json_object_del(res, "KeepAlivePeriodInSeconds");
	json_object_set_new(k, "ResourceConfig", res);
	v = json_object_get(echo, "RoleArn");
	if (v)
		json_object_set(k, "RoleArn", (json_t *)v);
	v = json_object_get(echo, "VpcConfig");
	if (v)
		json_object_set(k, "VpcConfig", (json_t *)v);
	s = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(k);
	if (!s)
		BUG("cannot encode a warm pool key");
	return s;
}

int api_request_set_keep_alive(const char *request_json, int seconds,
			       struct buf *out)
{
	json_t *root = json_loads(request_json, 0, NULL);
	json_t *res = json_object_get(root, "ResourceConfig");
	int ret = ERR_INVALID;

	if (json_is_object(res)) {
		json_object_set_new(res, "KeepAlivePeriodInSeconds",
				    json_integer(seconds));
		ret = api__json_dump_to(root, out);
	}
	json_decref(root);
	return ret;
}

static int parse(const char *json, size_t len, int stored,
		 struct api_job_spec *spec, struct buf *err)
{
	json_t *root = NULL;
	json_t *echo;
	struct buf out = BUF_INIT;
	int ret;

	memset(spec, 0, sizeof(*spec));
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	ret = api_validate("CreateTrainingJobRequest", root, err);
	if (ret)
		goto out;
	ret = check_semantics(root, stored, err);
	if (!ret)
		ret = api__tags_from_json(json_object_get(root, "Tags"),
					  &spec->tags, &spec->n_tags, err);
	if (ret)
		goto out;
	fill_spec(root, spec);
	ret = api_elastic_parse(spec, err);
	if (ret) {
		api_job_spec_release(spec);
		goto out;
	}
	echo = build_echo(root);
	spec->debug_hook_config_json = dump_member(echo, "DebugHookConfig");
	spec->profiler_config_json =
		profiling(root) ? dump_member(echo, "ProfilerConfig") : NULL;
	debugger_outputs(echo, spec);
	if (spec->keep_alive_s > 0) {
		/* jansson's default allocator: malloc, freed with free(). */
		spec->warm_key = warm_key(echo);
	}
	ret = api__json_dump_to(echo, &out);
	json_decref(echo);
	if (ret) {
		api_job_spec_release(spec);
		goto out;
	}
	spec->request_json = buf_detach(&out, NULL);
out:
	json_decref(root);
	return ret;
}

int api_job_spec_parse(const char *json, size_t len, struct api_job_spec *spec,
		       struct buf *err)
{
	return parse(json, len, 0, spec, err);
}

int api_job_spec_load(const char *json, size_t len, struct api_job_spec *spec,
		      struct buf *err)
{
	return parse(json, len, 1, spec, err);
}

void api_kvs_free(struct api_kv *kv, size_t n)
{
	size_t i;

	for (i = 0; kv && i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

void api_job_spec_release(struct api_job_spec *spec)
{
	size_t i;

	free(spec->name);
	free(spec->role_arn);
	free(spec->warm_key);
	free(spec->training_image);
	free(spec->algorithm_name);
	free(spec->input_mode);
	strv_free(spec->entrypoint);
	strv_free(spec->arguments);
	for (i = 0; i < spec->n_metrics; i++) {
		free(spec->metrics[i].name);
		free(spec->metrics[i].regex);
	}
	free(spec->metrics);
	api_kvs_free(spec->hyperparameters, spec->n_hyperparameters);
	api_kvs_free(spec->environment, spec->n_environment);
	api_kvs_free(spec->tags, spec->n_tags);
	for (i = 0; i < spec->n_rules; i++) {
		free(spec->rules[i].name);
		free(spec->rules[i].invoke);
		api_kvs_free(spec->rules[i].params, spec->rules[i].n_params);
	}
	free(spec->rules);
	free(spec->debug_hook_config_json);
	free(spec->profiler_config_json);
	free(spec->debug_s3_uri);
	free(spec->debug_local_path);
	free(spec->profiler_s3_uri);
	free(spec->profiler_local_path);
	for (i = 0; i < spec->n_channels; i++) {
		struct api_channel *c = &spec->channels[i];

		free(c->name);
		free(c->s3_uri);
		free(c->s3_data_type);
		free(c->distribution);
		free(c->content_type);
		free(c->input_mode);
		free(c->compression);
		free(c->record_wrapper);
		strv_free(c->instance_groups);
	}
	free(spec->channels);
	free(spec->output_path);
	free(spec->instance_type);
	for (i = 0; i < spec->n_groups; i++) {
		free(spec->groups[i].name);
		free(spec->groups[i].instance_type);
	}
	free(spec->groups);
	free(spec->checkpoint_s3_uri);
	free(spec->checkpoint_local_path);
	free(spec->tensorboard_s3_uri);
	free(spec->tensorboard_local_path);
	free(spec->request_json);
	memset(spec, 0, sizeof(*spec));
}

const char *api_job_spec_hp(const struct api_job_spec *spec, const char *key)
{
	size_t i;

	for (i = 0; i < spec->n_hyperparameters; i++)
		if (!strcmp(spec->hyperparameters[i].key, key))
			return spec->hyperparameters[i].value;
	return NULL;
}

/* The members api_job_spec_uris() names itself, and those it never walks. */
static const char *const typed_uris[] = {
	"OutputDataConfig.S3OutputPath",
	"InputDataConfig.DataSource.S3DataSource.S3Uri",
	"CheckpointConfig.S3Uri",
	"TensorBoardOutputConfig.S3OutputPath",
	"DebugHookConfig.S3OutputPath",
	"ProfilerConfig.S3OutputPath",
};

#define N_TYPED (ARRAY_SIZE(typed_uris))

/* Free-form or not a store location (TrainingImage: a program to run). */
static const char *const not_walked[] = {
	"AlgorithmSpecification",
	"HyperParameters",
	"Environment",
	"Tags",
};

#define N_NOT_WALKED (ARRAY_SIZE(not_walked))

static int looks_like_uri(const char *s)
{
	return !strncasecmp(s, "s3://", 5) || !strncasecmp(s, "file://", 7);
}

/* Every s3:// or file:// string under v, its member named by path. */
static int walk_uris(const json_t *v, struct buf *path, api_job_spec_uri_fn *fn,
		     void *arg)
{
	const char *key;
	const json_t *m;
	size_t len = path->len;
	size_t i;
	int ret = 0;

	if (json_is_string(v)) {
		if (looks_like_uri(json_string_value(v)) &&
		    api__name_find(typed_uris, N_TYPED, path->data) < 0)
			ret = fn(arg, path->data, json_string_value(v));
		return ret;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, m)
		{
			ret = walk_uris(m, path, fn, arg);
			if (ret)
				break;
		}
		return ret;
	}
	json_object_foreach((json_t *)v, key, m)
	{
		if (!len && api__name_find(not_walked, N_NOT_WALKED, key) >= 0)
			continue;
		(void)buf_addf(path, "%s%s", len ? "." : "", key);
		ret = walk_uris(m, path, fn, arg);
		path->len = len;
		path->data[len] = '\0';
		if (ret)
			break;
	}
	return ret;
}

int api_job_spec_uris(const struct api_job_spec *spec, api_job_spec_uri_fn *fn,
		      void *arg)
{
	const char *code = api_job_spec_hp(spec, "sagemaker_submit_directory");
	struct buf path = BUF_INIT;
	json_t *root;
	size_t i;
	int ret = 0;

	if (spec->output_path)
		ret = fn(arg, typed_uris[0], spec->output_path);
	for (i = 0; i < spec->n_channels && !ret; i++)
		if (spec->channels[i].s3_uri)
			ret = fn(arg, typed_uris[1], spec->channels[i].s3_uri);
	if (!ret && spec->checkpoint_s3_uri)
		ret = fn(arg, typed_uris[2], spec->checkpoint_s3_uri);
	if (!ret && spec->tensorboard_s3_uri)
		ret = fn(arg, typed_uris[3], spec->tensorboard_s3_uri);
	if (!ret && spec->debug_s3_uri)
		ret = fn(arg, typed_uris[4], spec->debug_s3_uri);
	if (!ret && spec->profiler_s3_uri)
		ret = fn(arg, typed_uris[5], spec->profiler_s3_uri);
	if (!ret && code) {
		char *uri = api_hp_string(code);

		ret = fn(arg, "HyperParameters.sagemaker_submit_directory",
			 uri);
		free(uri);
	}
	if (ret || !spec->request_json)
		return ret;
	root = json_loads(spec->request_json, 0, NULL);
	if (json_is_object(root))
		ret = walk_uris(root, &path, fn, arg);
	json_decref(root);
	buf_release(&path);
	return ret;
}
