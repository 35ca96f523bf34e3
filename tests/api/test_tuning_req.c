/*
 * Tests api/tuning_req.c: create-tuning-job's flags, alone and over a
 * --cli-input-json document, become a CreateHyperParameterTuningJob body.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "api/tuning_req.h"
#include "common/buf.h"
#include "common/err.h"

/* Flags with a complete training job definition. */
struct fixture {
	struct api_client_create def;
	struct api_tuning_flags f;
	const char *params[8];
	const char *statics[4];
	const char *metrics[4];
	struct buf out, err;
	json_t *doc;
};

static int setup(void **state)
{
	struct fixture *x = calloc(1, sizeof(*x));

	x->def.image = "file:///opt/train.sh";
	x->def.instance_type = "ml.m5.large";
	x->def.instance_count = 1;
	x->metrics[0] = "loss=loss=([0-9.]+)";
	x->def.metrics = x->metrics;
	x->def.n_metrics = 1;
	x->f.name = "tj";
	x->f.def = &x->def;
	x->f.def_given = 1;
	x->f.params = x->params;
	buf_init(&x->out, 0);
	buf_init(&x->err, 0);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *x = *state;

	json_decref(x->doc);
	buf_release(&x->out);
	buf_release(&x->err);
	free(x);
	return 0;
}

/* Builds from x (over base when not NULL); the result parsed in x->doc. */
static int build(struct fixture *x, const char *base)
{
	int r;

	buf_reset(&x->out);
	buf_reset(&x->err);
	r = api_tuning_request_build(&x->f, base, base ? strlen(base) : 0,
				     &x->out, &x->err);
	json_decref(x->doc);
	x->doc = r ? NULL : json_loads(x->out.data, 0, NULL);
	if (!r)
		assert_non_null(x->doc);
	return r;
}

/* The string at a JSON path of x->doc ("a.b.0.c"), or NULL. */
static const char *at(struct fixture *x, const char *path)
{
	char key[64];
	json_t *v = x->doc;

	while (*path && v) {
		size_t n = strcspn(path, ".");

		assert_true(n < sizeof(key));
		memcpy(key, path, n);
		key[n] = '\0';
		if (json_is_array(v))
			v = json_array_get(v, (size_t)atoi(key));
		else
			v = json_object_get(v, key);
		path += n + (path[n] == '.');
	}
	if (json_is_integer(v)) {
		static char num[32];

		snprintf(num, sizeof(num), "%lld",
			 (long long)json_integer_value(v));
		return num;
	}
	return json_string_value(v);
}

static void assert_at(struct fixture *x, const char *path, const char *want)
{
	const char *got = at(x, path);

	if (!got)
		fail_msg("%s is missing in %s", path, x->out.data);
	assert_string_equal(got, want);
}

static void test_flags(void **state)
{
	struct fixture *x = *state;

	x->f.strategy = "random";
	x->f.objective = "Minimize:loss";
	x->f.max_jobs = 3;
	x->f.max_parallel = 2;
	x->f.early_stopping = "auto";
	x->f.has_seed = 1;
	x->f.seed = 42;
	x->params[0] = "lr=continuous:0.0001:0.1:Logarithmic";
	x->params[1] = "layers=integer:1:4";
	x->params[2] = "act=categorical:relu,tanh,gelu";
	x->f.n_params = 3;
	x->statics[0] = "epochs=3";
	x->def.hyperparameters = x->statics;
	x->def.n_hyperparameters = 1;
	assert_int_equal(build(x, NULL), 0);

	assert_at(x, "HyperParameterTuningJobName", "tj");
	assert_at(x, "HyperParameterTuningJobConfig.Strategy", "Random");
	assert_at(x,
		  "HyperParameterTuningJobConfig.TrainingJobEarlyStoppingType",
		  "Auto");
	assert_at(x, "HyperParameterTuningJobConfig.RandomSeed", "42");
	assert_at(
		x,
		"HyperParameterTuningJobConfig.HyperParameterTuningJobObjective"
		".Type",
		"Minimize");
	assert_at(
		x,
		"HyperParameterTuningJobConfig.HyperParameterTuningJobObjective"
		".MetricName",
		"loss");
	assert_at(x,
		  "HyperParameterTuningJobConfig.ResourceLimits."
		  "MaxNumberOfTrainingJobs",
		  "3");
	assert_at(x,
		  "HyperParameterTuningJobConfig.ResourceLimits."
		  "MaxParallelTrainingJobs",
		  "2");
	assert_at(x,
		  "HyperParameterTuningJobConfig.ParameterRanges."
		  "ContinuousParameterRanges.0.Name",
		  "lr");
	assert_at(x,
		  "HyperParameterTuningJobConfig.ParameterRanges."
		  "ContinuousParameterRanges.0.MinValue",
		  "0.0001");
	assert_at(x,
		  "HyperParameterTuningJobConfig.ParameterRanges."
		  "ContinuousParameterRanges.0.ScalingType",
		  "Logarithmic");
	assert_at(x,
		  "HyperParameterTuningJobConfig.ParameterRanges."
		  "IntegerParameterRanges.0.MaxValue",
		  "4");
	assert_null(at(x, "HyperParameterTuningJobConfig.ParameterRanges."
			  "IntegerParameterRanges.0.ScalingType"));
	assert_at(x,
		  "HyperParameterTuningJobConfig.ParameterRanges."
		  "CategoricalParameterRanges.0.Values.2",
		  "gelu");

	/* The definition as create-training-job builds it, with defaults. */
	assert_at(x,
		  "TrainingJobDefinition.AlgorithmSpecification.TrainingImage",
		  "file:///opt/train.sh");
	assert_at(x,
		  "TrainingJobDefinition.AlgorithmSpecification."
		  "TrainingInputMode",
		  "File");
	assert_at(x,
		  "TrainingJobDefinition.AlgorithmSpecification."
		  "MetricDefinitions.0.Regex",
		  "loss=([0-9.]+)");
	assert_at(x, "TrainingJobDefinition.ResourceConfig.InstanceCount", "1");
	assert_at(x, "TrainingJobDefinition.StaticHyperParameters.epochs", "3");
	assert_at(x, "TrainingJobDefinition.RoleArn",
		  API_CLIENT_DEFAULT_ROLE_ARN);
	assert_at(x, "TrainingJobDefinition.OutputDataConfig.S3OutputPath",
		  API_CLIENT_DEFAULT_OUTPUT_PATH);
	assert_null(at(x, "TrainingJobDefinition.TrainingJobName"));
	assert_null(at(x, "TrainingJobDefinition.HyperParameters"));
}

static void test_defaults(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(build(x, NULL), 0);
	/* The SageMaker SDK's defaults for what the model requires. */
	assert_at(x, "HyperParameterTuningJobConfig.Strategy", "Bayesian");
	assert_at(x,
		  "HyperParameterTuningJobConfig.ResourceLimits."
		  "MaxParallelTrainingJobs",
		  "1");
	assert_null(at(x, "HyperParameterTuningJobConfig.RandomSeed"));
}

static const char base_doc[] =
	"{\"HyperParameterTuningJobName\": \"from-file\","
	" \"HyperParameterTuningJobConfig\": {\"Strategy\": \"Grid\","
	"  \"ResourceLimits\": {\"MaxNumberOfTrainingJobs\": 9,"
	"   \"MaxParallelTrainingJobs\": 3},"
	"  \"ParameterRanges\": {\"CategoricalParameterRanges\": ["
	"   {\"Name\": \"act\", \"Values\": [\"relu\"]},"
	"   {\"Name\": \"opt\", \"Values\": [\"sgd\", \"adam\"]}]}},"
	" \"TrainingJobDefinition\": {"
	"  \"StaticHyperParameters\": {\"epochs\": \"5\", \"seed\": \"1\"},"
	"  \"AlgorithmSpecification\": {\"TrainingImage\": \"img\","
	"   \"TrainingInputMode\": \"Pipe\"},"
	"  \"RoleArn\": \"arn:aws:iam::123456789012:role/R\","
	"  \"ResourceConfig\": {\"InstanceType\": \"ml.c5.xlarge\","
	"   \"InstanceCount\": 2, \"VolumeSizeInGB\": 5},"
	"  \"OutputDataConfig\": {\"S3OutputPath\": \"s3://b/o\"},"
	"  \"StoppingCondition\": {\"MaxRuntimeInSeconds\": 60}},"
	" \"Tags\": [{\"Key\": \"k\", \"Value\": \"v\"}]}";

static void test_input_json_with_overrides(void **state)
{
	struct fixture *x = *state;

	x->f.name = NULL;
	x->f.max_jobs = 4;
	x->params[0] = "act=integer:1:3";
	x->params[1] = "drop=categorical:a,b";
	x->f.n_params = 2;
	x->statics[0] = "epochs=7";
	x->def.hyperparameters = x->statics;
	x->def.n_hyperparameters = 1;
	x->def.image = NULL;
	x->def.instance_type = NULL;
	x->def.instance_count = 0;
	x->def.n_metrics = 0;
	assert_int_equal(build(x, base_doc), 0);

	assert_at(x, "HyperParameterTuningJobName", "from-file");
	assert_at(x, "HyperParameterTuningJobConfig.Strategy", "Grid");
	assert_at(x,
		  "HyperParameterTuningJobConfig.ResourceLimits."
		  "MaxNumberOfTrainingJobs",
		  "4");
	assert_at(x,
		  "HyperParameterTuningJobConfig.ResourceLimits."
		  "MaxParallelTrainingJobs",
		  "3");
	/* --param act replaced the categorical act, whatever its kind. */
	assert_at(x,
		  "HyperParameterTuningJobConfig.ParameterRanges."
		  "CategoricalParameterRanges.0.Name",
		  "opt");
	assert_at(x,
		  "HyperParameterTuningJobConfig.ParameterRanges."
		  "CategoricalParameterRanges.1.Name",
		  "drop");
	assert_null(at(x, "HyperParameterTuningJobConfig.ParameterRanges."
			  "CategoricalParameterRanges.2"));
	assert_at(x,
		  "HyperParameterTuningJobConfig.ParameterRanges."
		  "IntegerParameterRanges.0.Name",
		  "act");
	/* The file's definition, merged with the flags, nothing lost. */
	assert_at(x, "TrainingJobDefinition.StaticHyperParameters.epochs", "7");
	assert_at(x, "TrainingJobDefinition.StaticHyperParameters.seed", "1");
	assert_at(x,
		  "TrainingJobDefinition.AlgorithmSpecification."
		  "TrainingInputMode",
		  "Pipe");
	assert_at(x, "TrainingJobDefinition.ResourceConfig.InstanceType",
		  "ml.c5.xlarge");
	assert_at(x, "TrainingJobDefinition.ResourceConfig.VolumeSizeInGB",
		  "5");
	assert_at(x, "TrainingJobDefinition.RoleArn",
		  "arn:aws:iam::123456789012:role/R");
	assert_at(x,
		  "TrainingJobDefinition.StoppingCondition.MaxRuntimeInSeconds",
		  "60");
	assert_at(x, "Tags.0.Key", "k");
}

static void test_definition_ranges(void **state)
{
	struct fixture *x = *state;
	const char *doc =
		"{\"HyperParameterTuningJobConfig\": {"
		" \"ResourceLimits\": {\"MaxNumberOfTrainingJobs\": 2,"
		"  \"MaxParallelTrainingJobs\": 1}},"
		" \"TrainingJobDefinition\": {\"HyperParameterRanges\":"
		"  {\"ContinuousParameterRanges\": [{\"Name\": \"x\","
		"   \"MinValue\": \"0\", \"MaxValue\": \"1\"}]}}}";

	x->params[0] = "x=continuous:-1:1:Linear";
	x->f.n_params = 1;
	assert_int_equal(build(x, doc), 0);
	/* The definition has its own ranges: --param goes there. */
	assert_at(x,
		  "TrainingJobDefinition.HyperParameterRanges."
		  "ContinuousParameterRanges.0.MinValue",
		  "-1");
	assert_null(at(x, "HyperParameterTuningJobConfig.ParameterRanges"));
}

static void test_definitions_plural(void **state)
{
	struct fixture *x = *state;
	const char *doc = "{\"HyperParameterTuningJobConfig\": {},"
			  " \"TrainingJobDefinitions\": [{\"DefinitionName\":"
			  "  \"a\"}]}";

	/* Definition flags cannot say which definition they are for. */
	assert_int_equal(build(x, doc), ERR_INVALID);
	assert_non_null(strstr(x->err.data, "TrainingJobDefinitions"));
	/* Without them the definitions pass through untouched. */
	x->f.def_given = 0;
	assert_int_equal(build(x, doc), 0);
	assert_at(x, "TrainingJobDefinitions.0.DefinitionName", "a");
	assert_null(at(x, "TrainingJobDefinition"));
	x->params[0] = "x=integer:1:2";
	x->f.n_params = 1;
	assert_int_equal(build(x, doc), ERR_INVALID);
	assert_non_null(strstr(x->err.data, "--param"));
}

/* One bad flag: ERR_INVALID and a message containing want. */
static void refused(struct fixture *x, const char *want)
{
	assert_int_equal(build(x, NULL), ERR_INVALID);
	if (!strstr(x->err.data, want))
		fail_msg("message '%s' lacks '%s'", x->err.data, want);
	assert_int_equal(x->out.len, 0);
}

static void test_bad_params(void **state)
{
	struct fixture *x = *state;
	static const char *const cases[][2] = {
		{ "noequals", "expected NAME=continuous" },
		{ "=continuous:0:1", "expected NAME=continuous" },
		{ "x=continuous", "expected NAME=continuous" },
		{ "x=float:0:1", "the kind 'float'" },
		{ "x=continuous:0", "NAME=continuous:MIN:MAX" },
		{ "x=continuous:a:1", "must be numbers" },
		{ "x=continuous:0:inf", "must be numbers" },
		{ "x=integer:1.5:3", "must be integers" },
		{ "x=integer:1:3:Sideways", "SCALE must be" },
		{ "x=categorical:a,,b", "empty categorical value" },
		{ "x=categorical:", "empty categorical value" },
	};
	size_t i;

	x->f.n_params = 1;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		x->params[0] = cases[i][0];
		refused(x, cases[i][1]);
		assert_non_null(strstr(x->err.data, cases[i][0]));
	}
}

static void test_bad_flags(void **state)
{
	struct fixture *x = *state;

	x->f.strategy = "Sideways";
	refused(x, "invalid --strategy 'Sideways'");
	x->f.strategy = "Grid";
	x->f.early_stopping = "Sometimes";
	refused(x, "invalid --early-stopping");
	x->f.early_stopping = "Off";
	x->f.objective = "loss";
	refused(x, "invalid --objective 'loss'");
	x->f.objective = "Biggest:loss";
	refused(x, "invalid --objective");
	x->f.objective = "Maximize:";
	refused(x, "invalid --objective");
	x->f.objective = "maximize:acc";
	assert_int_equal(build(x, NULL), 0);
	assert_at(
		x,
		"HyperParameterTuningJobConfig.HyperParameterTuningJobObjective"
		".Type",
		"Maximize");

	x->statics[0] = "noequals";
	x->def.hyperparameters = x->statics;
	x->def.n_hyperparameters = 1;
	refused(x, "invalid --static 'noequals'");
	x->def.n_hyperparameters = 0;
	x->metrics[0] = "loss=";
	refused(x, "invalid --metric-definition 'loss='");
	x->metrics[0] = "loss=x";
	x->def.image = NULL;
	refused(x, "missing --image");
	x->def.image = "img";
	x->f.name = NULL;
	refused(x, "missing the tuning job's NAME");
}

static void test_bad_documents(void **state)
{
	struct fixture *x = *state;
	static const char *const docs[][2] = {
		{ "{", "invalid --cli-input-json" },
		{ "[1]", "not a JSON object" },
		{ "{\"a\": 1, \"a\": 2}", "invalid --cli-input-json" },
		{ "{\"HyperParameterTuningJobConfig\": 3}",
		  "'HyperParameterTuningJobConfig' must be an object" },
		{ "{\"TrainingJobDefinition\": []}",
		  "'TrainingJobDefinition' must be an object" },
	};
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		buf_reset(&x->out);
		assert_int_equal(api_tuning_request_build(&x->f, docs[i][0],
							  strlen(docs[i][0]),
							  &x->out, &x->err),
				 ERR_INVALID);
		if (!strstr(x->err.data, docs[i][1]))
			fail_msg("'%s': message '%s' lacks '%s'", docs[i][0],
				 x->err.data, docs[i][1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_input_json_with_overrides,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_definition_ranges, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_definitions_plural, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_params, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_flags, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_documents, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("api/tuning_req", tests, NULL, NULL);
}
