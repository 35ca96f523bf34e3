/*
 * Tests api/job_spec.c: a realistic CreateTrainingJob request becomes the
 * right C values and the right DescribeTrainingJob echo, and each
 * cross-member rule the model cannot express is enforced with a message
 * that names the member. Error cases are the fixture
 * tests/api/data/spec/create_full.json with one change each, so every
 * request is valid except for the rule under test. Run from the top of the
 * tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "api/job_config.h"
#include "api/job_spec.h"
#include "common/buf.h"
#include "common/err.h"

#define FULL_REQUEST "tests/api/data/spec/create_full.json"

static json_t *load_full(void)
{
	json_error_t jerr;
	json_t *root = json_load_file(FULL_REQUEST, 0, &jerr);

	if (!root)
		fail_msg("%s: %s (run from the top of the tree)", FULL_REQUEST,
			 jerr.text);
	return root;
}

/* Serializes req (consuming the reference) and parses it as a request. */
static int parse_json(json_t *req, struct api_job_spec *spec, struct buf *err)
{
	char *text = json_dumps(req, JSON_COMPACT);
	int ret;

	json_decref(req);
	assert_non_null(text);
	ret = api_job_spec_parse(text, strlen(text), spec, err);
	free(text);
	return ret;
}

static int contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return 1;
	return 0;
}

/* The spec of a failed parse is empty. */
static void assert_spec_empty(const struct api_job_spec *spec)
{
	static const struct api_job_spec zero;

	assert_memory_equal(spec, &zero, sizeof(zero));
}

/* req must be rejected with a message mentioning every one of words. */
static void expect_invalid(json_t *req, const char *const *words)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	int ret = parse_json(req, &spec, &err);

	if (ret != ERR_INVALID)
		fail_msg("expected ERR_INVALID, got %d (%s)", ret, err.data);
	assert_spec_empty(&spec);
	for (; *words; words++)
		if (!contains_ci(err.data, *words))
			fail_msg("message '%s' does not name '%s'", err.data,
				 *words);
	buf_release(&err);
}

#define EXPECT_INVALID(req, ...)                                           \
	do {                                                               \
		static const char *const words_[] = { __VA_ARGS__, NULL }; \
		expect_invalid((req), words_);                             \
	} while (0)

static json_t *obj(json_t *root, const char *key)
{
	json_t *v = json_object_get(root, key);

	assert_non_null(v);
	return v;
}

static void test_full_request(void **state)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	const struct api_channel *c;

	(void)state;
	if (parse_json(load_full(), &spec, &err))
		fail_msg("parse: %s", err.data);

	assert_string_equal(spec.name,
			    "resnet50-imagenet-2024-06-01-08-30-00-001");
	assert_string_equal(spec.role_arn,
			    "arn:aws:iam::123456789012:role/service-role/"
			    "AmazonSageMaker-ExecutionRole-20240101T000000");
	assert_string_equal(spec.training_image,
			    "763104351884.dkr.ecr.us-east-1.amazonaws.com/"
			    "pytorch-training:2.1.0-gpu-py310");
	assert_null(spec.algorithm_name);
	assert_string_equal(spec.input_mode, "File");

	assert_non_null(spec.entrypoint);
	assert_string_equal(spec.entrypoint[0], "python3");
	assert_string_equal(spec.entrypoint[1], "-m");
	assert_string_equal(spec.entrypoint[2], "trainer.main");
	assert_null(spec.entrypoint[3]);
	assert_non_null(spec.arguments);
	assert_string_equal(spec.arguments[0], "--epochs");
	assert_string_equal(spec.arguments[1], "3");
	assert_string_equal(spec.arguments[2],
			    "--data-dir=/opt/ml/input/data/train");
	assert_null(spec.arguments[3]);

	assert_int_equal(spec.n_metrics, 3);
	assert_string_equal(spec.metrics[0].name, "train:loss");
	assert_string_equal(spec.metrics[0].regex, "loss=([0-9\\.]+)");
	assert_string_equal(spec.metrics[2].name, "epoch");
	assert_string_equal(spec.metrics[2].regex, "epoch ([0-9]+)");

	assert_int_equal(spec.n_hyperparameters, 4);
	assert_string_equal(api_job_spec_hp(&spec, "epochs"), "3");
	assert_string_equal(api_job_spec_hp(&spec, "lr"), "0.1");
	assert_string_equal(api_job_spec_hp(&spec, "sagemaker_program"),
			    "\"train.py\"");
	assert_string_equal(api_job_spec_hp(&spec, "quoted"), "a \"b\" c");
	assert_null(api_job_spec_hp(&spec, "missing"));
	assert_null(api_job_spec_hp(&spec, "EPOCHS"));

	assert_int_equal(spec.n_environment, 2);
	{
		int seen = 0;
		size_t i;

		for (i = 0; i < spec.n_environment; i++) {
			if (!strcmp(spec.environment[i].key, "NCCL_DEBUG")) {
				assert_string_equal(spec.environment[i].value,
						    "INFO");
				seen |= 1;
			} else if (!strcmp(spec.environment[i].key,
					   "OMP_NUM_THREADS")) {
				assert_string_equal(spec.environment[i].value,
						    "4");
				seen |= 2;
			}
		}
		assert_int_equal(seen, 3);
	}

	assert_int_equal(spec.n_channels, 2);
	c = &spec.channels[0];
	assert_string_equal(c->name, "train");
	assert_string_equal(c->s3_uri, "s3://datasets/imagenet/train/");
	assert_string_equal(c->s3_data_type, "S3Prefix");
	assert_string_equal(c->distribution, "FullyReplicated");
	assert_string_equal(c->content_type, "application/x-image");
	assert_null(c->input_mode);
	assert_null(c->compression);
	assert_null(c->record_wrapper);
	c = &spec.channels[1];
	assert_string_equal(c->name, "validation");
	assert_string_equal(c->s3_uri, "s3://datasets/imagenet/val.manifest");
	assert_string_equal(c->s3_data_type, "ManifestFile");
	assert_string_equal(c->distribution, "ShardedByS3Key");
	assert_null(c->content_type);
	assert_string_equal(c->input_mode, "FastFile");
	assert_string_equal(c->compression, "None");
	assert_string_equal(c->record_wrapper, "None");
	assert_null(c->instance_groups);

	assert_string_equal(spec.output_path, "s3://models/resnet50/");
	assert_int_equal(spec.model_uncompressed, 0);
	assert_string_equal(spec.instance_type, "ml.p4d.24xlarge");
	assert_int_equal(spec.instance_count, 2);
	assert_null(spec.groups);
	assert_int_equal(spec.n_groups, 0);
	assert_int_equal(spec.volume_gb, 200);
	assert_int_equal(spec.max_runtime_s, 86400);
	assert_int_equal(spec.max_wait_s, 0);
	assert_int_equal(spec.max_retry_attempts, 2);
	assert_string_equal(spec.checkpoint_s3_uri,
			    "s3://models/resnet50/checkpoints/");
	assert_string_equal(spec.checkpoint_local_path, "/opt/ml/checkpoints/");
	assert_int_equal(spec.spot, 0);
	assert_non_null(spec.request_json);

	api_job_spec_release(&spec);
	assert_spec_empty(&spec);
	api_job_spec_release(&spec); /* twice is safe */
	buf_release(&err);
}

static void test_echo(void **state)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	json_error_t jerr;
	json_t *echo;
	json_t *v;
	json_t *ch;

	(void)state;
	if (parse_json(load_full(), &spec, &err))
		fail_msg("parse: %s", err.data);
	/* Compact JSON, one line. */
	assert_null(strchr(spec.request_json, '\n'));
	assert_null(strstr(spec.request_json, ": "));
	echo = json_loads(spec.request_json, 0, &jerr);
	assert_non_null(echo);

	/* Defaults filled in. */
	v = obj(echo, "EnableNetworkIsolation");
	assert_true(json_is_false(v));
	assert_true(json_is_false(
		obj(echo, "EnableInterContainerTrafficEncryption")));
	assert_true(json_is_false(obj(echo, "EnableManagedSpotTraining")));
	v = obj(obj(echo, "StoppingCondition"), "MaxRuntimeInSeconds");
	assert_true(json_is_integer(v));
	assert_int_equal(json_integer_value(v), 86400);
	assert_null(json_object_get(obj(echo, "StoppingCondition"),
				    "MaxWaitTimeInSeconds"));
	assert_string_equal(json_string_value(obj(obj(echo, "CheckpointConfig"),
						  "LocalPath")),
			    "/opt/ml/checkpoints/");

	ch = json_array_get(obj(echo, "InputDataConfig"), 0);
	assert_non_null(ch);
	assert_string_equal(json_string_value(obj(ch, "CompressionType")),
			    "None");
	assert_string_equal(json_string_value(obj(ch, "RecordWrapperType")),
			    "None");
	assert_string_equal(json_string_value(obj(obj(obj(ch, "DataSource"),
						      "S3DataSource"),
						  "S3DataDistributionType")),
			    "FullyReplicated");
	/* What the client sent is kept as sent. */
	ch = json_array_get(obj(echo, "InputDataConfig"), 1);
	assert_string_equal(json_string_value(obj(ch, "InputMode")),
			    "FastFile");
	assert_string_equal(json_string_value(obj(obj(obj(ch, "DataSource"),
						      "S3DataSource"),
						  "S3DataDistributionType")),
			    "ShardedByS3Key");
	assert_string_equal(
		json_string_value(obj(obj(echo, "HyperParameters"), "quoted")),
		"a \"b\" c");
	assert_int_equal(
		json_array_size(obj(obj(echo, "AlgorithmSpecification"),
				    "ContainerEntrypoint")),
		3);
	assert_string_equal(json_string_value(obj(echo, "RoleArn")),
			    spec.role_arn);
	assert_int_equal(json_integer_value(obj(obj(echo, "RetryStrategy"),
						"MaximumRetryAttempts")),
			 2);
	assert_string_equal(
		json_string_value(obj(obj(echo, "Environment"), "NCCL_DEBUG")),
		"INFO");

	/* Not echoed: Tags (and the name, which Describe adds from the
	 * row). */
	assert_null(json_object_get(echo, "Tags"));
	assert_null(strstr(spec.request_json, "Tags"));
	assert_null(strstr(spec.request_json, "vision"));

	json_decref(echo);
	api_job_spec_release(&spec);
	buf_release(&err);
}

/* A request that sets what the full one leaves to defaults. */
static void test_explicit_values(void **state)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	json_t *req = load_full();
	json_t *echo;

	(void)state;
	json_object_set_new(req, "EnableManagedSpotTraining", json_true());
	json_object_set_new(req, "EnableNetworkIsolation", json_false());
	json_object_set_new(obj(req, "OutputDataConfig"), "CompressionType",
			    json_string("NONE"));
	json_object_set_new(req, "StoppingCondition",
			    json_pack("{s:i,s:i}", "MaxRuntimeInSeconds", 3600,
				      "MaxWaitTimeInSeconds", 7200));
	json_object_set_new(obj(req, "CheckpointConfig"), "LocalPath",
			    json_string("/opt/ml/ckpt"));
	json_object_del(obj(req, "AlgorithmSpecification"),
			"ContainerEntrypoint");
	json_object_del(obj(req, "AlgorithmSpecification"),
			"ContainerArguments");
	json_object_del(obj(req, "AlgorithmSpecification"),
			"MetricDefinitions");
	json_object_del(req, "HyperParameters");
	json_object_del(req, "Environment");
	json_object_del(req, "RetryStrategy");
	if (parse_json(req, &spec, &err))
		fail_msg("parse: %s", err.data);
	assert_int_equal(spec.spot, 1);
	assert_int_equal(spec.model_uncompressed, 1);
	assert_int_equal(spec.max_runtime_s, 3600);
	assert_int_equal(spec.max_wait_s, 7200);
	assert_string_equal(spec.checkpoint_local_path, "/opt/ml/ckpt");
	assert_null(spec.entrypoint);
	assert_null(spec.arguments);
	assert_int_equal(spec.n_metrics, 0);
	assert_null(spec.metrics);
	assert_int_equal(spec.n_hyperparameters, 0);
	assert_null(api_job_spec_hp(&spec, "epochs"));
	assert_int_equal(spec.n_environment, 0);
	assert_int_equal(spec.max_retry_attempts, 0);

	echo = json_loads(spec.request_json, 0, NULL);
	assert_non_null(echo);
	assert_true(json_is_false(obj(echo, "EnableNetworkIsolation")));
	assert_string_equal(json_string_value(obj(obj(echo, "OutputDataConfig"),
						  "CompressionType")),
			    "NONE");
	assert_true(json_is_true(obj(echo, "EnableManagedSpotTraining")));
	assert_int_equal(json_integer_value(obj(obj(echo, "StoppingCondition"),
						"MaxRuntimeInSeconds")),
			 3600);
	assert_int_equal(json_integer_value(obj(obj(echo, "StoppingCondition"),
						"MaxWaitTimeInSeconds")),
			 7200);
	assert_string_equal(json_string_value(obj(obj(echo, "CheckpointConfig"),
						  "LocalPath")),
			    "/opt/ml/ckpt");
	json_decref(echo);
	api_job_spec_release(&spec);

	/* No CheckpointConfig at all: no checkpoint paths. */
	req = load_full();
	json_object_del(req, "CheckpointConfig");
	if (parse_json(req, &spec, &err))
		fail_msg("parse: %s", err.data);
	assert_null(spec.checkpoint_s3_uri);
	assert_null(spec.checkpoint_local_path);
	assert_null(strstr(spec.request_json, "CheckpointConfig"));
	assert_null(spec.tensorboard_s3_uri);
	assert_null(spec.tensorboard_local_path);
	api_job_spec_release(&spec);

	/* TensorBoardOutputConfig: LocalPath defaults as SageMaker's. A
	 * channel's ShuffleConfig reaches the spec. */
	req = load_full();
	json_object_set_new(json_array_get(obj(req, "InputDataConfig"), 0),
			    "ShuffleConfig",
			    json_pack("{s:I}", "Seed", (json_int_t)-3));
	json_object_set_new(req, "TensorBoardOutputConfig",
			    json_pack("{s:s}", "S3OutputPath", "s3://b/tb"));
	if (parse_json(req, &spec, &err))
		fail_msg("parse: %s", err.data);
	assert_string_equal(spec.tensorboard_s3_uri, "s3://b/tb");
	assert_true(spec.n_channels >= 1);
	assert_int_equal(spec.channels[0].shuffle, 1);
	assert_int_equal(spec.channels[0].shuffle_seed, -3);
	assert_string_equal(spec.tensorboard_local_path,
			    "/opt/ml/output/tensorboard");
	echo = json_loads(spec.request_json, 0, NULL);
	assert_string_equal(
		json_string_value(
			obj(obj(echo, "TensorBoardOutputConfig"), "LocalPath")),
		"/opt/ml/output/tensorboard");
	json_decref(echo);
	api_job_spec_release(&spec);
	buf_release(&err);
}

static void test_instance_groups(void **state)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	json_t *req = load_full();
	json_t *res = obj(req, "ResourceConfig");

	(void)state;
	json_object_del(res, "InstanceType");
	json_object_del(res, "InstanceCount");
	json_object_set_new(
		res, "InstanceGroups",
		json_pack("[{s:s,s:s,s:i},{s:s,s:s,s:i}]", "InstanceGroupName",
			  "gpu", "InstanceType", "ml.p4d.24xlarge",
			  "InstanceCount", 2, "InstanceGroupName", "cpu",
			  "InstanceType", "ml.c5.4xlarge", "InstanceCount", 1));
	if (parse_json(req, &spec, &err))
		fail_msg("parse: %s", err.data);
	assert_null(spec.instance_type);
	assert_int_equal(spec.instance_count, 0);
	assert_int_equal(spec.n_groups, 2);
	assert_string_equal(spec.groups[0].name, "gpu");
	assert_string_equal(spec.groups[0].instance_type, "ml.p4d.24xlarge");
	assert_int_equal(spec.groups[0].count, 2);
	assert_string_equal(spec.groups[1].name, "cpu");
	assert_int_equal(spec.groups[1].count, 1);
	api_job_spec_release(&spec);

	/* A group with InstanceCount 0. */
	req = load_full();
	res = obj(req, "ResourceConfig");
	json_object_del(res, "InstanceType");
	json_object_del(res, "InstanceCount");
	json_object_set_new(res, "InstanceGroups",
			    json_pack("[{s:s,s:s,s:i}]", "InstanceGroupName",
				      "gpu", "InstanceType", "ml.p4d.24xlarge",
				      "InstanceCount", 0));
	EXPECT_INVALID(req, "InstanceCount");
	buf_release(&err);
}

static void test_image_xor_algorithm(void **state)
{
	json_t *req;

	(void)state;
	req = load_full();
	json_object_set_new(obj(req, "AlgorithmSpecification"), "AlgorithmName",
			    json_string("xgboost"));
	EXPECT_INVALID(req, "TrainingImage", "AlgorithmName");

	req = load_full();
	json_object_del(obj(req, "AlgorithmSpecification"), "TrainingImage");
	EXPECT_INVALID(req, "TrainingImage");

	/* AlgorithmName alone is not supported either. */
	req = load_full();
	json_object_del(obj(req, "AlgorithmSpecification"), "TrainingImage");
	json_object_set_new(obj(req, "AlgorithmSpecification"), "AlgorithmName",
			    json_string("xgboost"));
	EXPECT_INVALID(req, "TrainingImage");

	/* No AlgorithmSpecification (optional in the newer model). */
	req = load_full();
	json_object_del(req, "AlgorithmSpecification");
	EXPECT_INVALID(req, "AlgorithmSpecification");
}

static void test_resource_config(void **state)
{
	json_t *req;
	json_t *res;

	(void)state;
	req = load_full();
	json_object_set_new(obj(req, "ResourceConfig"), "InstanceGroups",
			    json_pack("[{s:s,s:s,s:i}]", "InstanceGroupName",
				      "gpu", "InstanceType", "ml.p4d.24xlarge",
				      "InstanceCount", 1));
	EXPECT_INVALID(req, "InstanceGroups");

	/* InstanceCount alongside InstanceGroups. */
	req = load_full();
	res = obj(req, "ResourceConfig");
	json_object_del(res, "InstanceType");
	json_object_set_new(res, "InstanceGroups",
			    json_pack("[{s:s,s:s,s:i}]", "InstanceGroupName",
				      "gpu", "InstanceType", "ml.p4d.24xlarge",
				      "InstanceCount", 1));
	EXPECT_INVALID(req, "InstanceGroups");

	/* Neither InstanceType/Count nor InstanceGroups. */
	req = load_full();
	res = obj(req, "ResourceConfig");
	json_object_del(res, "InstanceType");
	json_object_del(res, "InstanceCount");
	EXPECT_INVALID(req, "InstanceType");

	/* InstanceCount without InstanceType. */
	req = load_full();
	json_object_del(obj(req, "ResourceConfig"), "InstanceType");
	EXPECT_INVALID(req, "InstanceType");

	req = load_full();
	json_object_set_new(obj(req, "ResourceConfig"), "InstanceCount",
			    json_integer(0));
	EXPECT_INVALID(req, "instanceCount");

	req = load_full();
	json_object_set_new(obj(req, "ResourceConfig"), "InstanceCount",
			    json_integer(-1));
	EXPECT_INVALID(req, "instanceCount");
}

static void test_stopping_condition(void **state)
{
	json_t *req;

	(void)state;
	/* MaxWaitTimeInSeconds without spot. */
	req = load_full();
	json_object_set_new(req, "StoppingCondition",
			    json_pack("{s:i,s:i}", "MaxRuntimeInSeconds", 3600,
				      "MaxWaitTimeInSeconds", 7200));
	EXPECT_INVALID(req, "MaxWaitTimeInSeconds");

	/* Spot without MaxWaitTimeInSeconds. */
	req = load_full();
	json_object_set_new(req, "EnableManagedSpotTraining", json_true());
	json_object_set_new(req, "StoppingCondition",
			    json_pack("{s:i}", "MaxRuntimeInSeconds", 3600));
	EXPECT_INVALID(req, "MaxWaitTimeInSeconds",
		       "EnableManagedSpotTraining");

	/* Spot without any StoppingCondition. */
	req = load_full();
	json_object_set_new(req, "EnableManagedSpotTraining", json_true());
	EXPECT_INVALID(req, "MaxWaitTimeInSeconds");

	/* MaxWait below MaxRuntime. */
	req = load_full();
	json_object_set_new(req, "EnableManagedSpotTraining", json_true());
	json_object_set_new(req, "StoppingCondition",
			    json_pack("{s:i,s:i}", "MaxRuntimeInSeconds", 7200,
				      "MaxWaitTimeInSeconds", 7199));
	EXPECT_INVALID(req, "MaxWaitTimeInSeconds", "MaxRuntimeInSeconds");

	/* MaxWait below the defaulted MaxRuntime (one day). */
	req = load_full();
	json_object_set_new(req, "EnableManagedSpotTraining", json_true());
	json_object_set_new(req, "StoppingCondition",
			    json_pack("{s:i}", "MaxWaitTimeInSeconds", 3600));
	EXPECT_INVALID(req, "MaxWaitTimeInSeconds");

	/* MaxRuntime above 28 days. */
	req = load_full();
	json_object_set_new(req, "StoppingCondition",
			    json_pack("{s:i}", "MaxRuntimeInSeconds",
				      28 * 86400 + 1));
	EXPECT_INVALID(req, "MaxRuntimeInSeconds");

	/* Equal MaxWait and MaxRuntime is fine; so is exactly 28 days. */
	{
		struct api_job_spec spec;
		struct buf err = BUF_INIT;

		req = load_full();
		json_object_set_new(req, "EnableManagedSpotTraining",
				    json_true());
		json_object_set_new(req, "StoppingCondition",
				    json_pack("{s:i,s:i}",
					      "MaxRuntimeInSeconds", 7200,
					      "MaxWaitTimeInSeconds", 7200));
		if (parse_json(req, &spec, &err))
			fail_msg("parse: %s", err.data);
		assert_int_equal(spec.max_wait_s, 7200);
		api_job_spec_release(&spec);

		req = load_full();
		json_object_set_new(req, "StoppingCondition",
				    json_pack("{s:i}", "MaxRuntimeInSeconds",
					      28 * 86400));
		if (parse_json(req, &spec, &err))
			fail_msg("parse: %s", err.data);
		assert_int_equal(spec.max_runtime_s, 28 * 86400);
		api_job_spec_release(&spec);
		buf_release(&err);
	}
}

static void test_channels(void **state)
{
	json_t *req;
	json_t *chans;

	(void)state;
	req = load_full();
	chans = obj(req, "InputDataConfig");
	json_array_append_new(chans, json_deep_copy(json_array_get(chans, 0)));
	EXPECT_INVALID(req, "train");

	/* Duplicates that are not adjacent. */
	req = load_full();
	chans = obj(req, "InputDataConfig");
	json_array_append_new(chans, json_deep_copy(json_array_get(chans, 1)));
	json_object_set_new(json_array_get(chans, 1), "ChannelName",
			    json_string("other"));
	json_array_append_new(chans, json_deep_copy(json_array_get(chans, 0)));
	json_object_set_new(json_array_get(chans, 2), "ChannelName",
			    json_string("third"));
	EXPECT_INVALID(req, "train");

	/* Names differing only in case are different channels. */
	{
		struct api_job_spec spec;
		struct buf err = BUF_INIT;

		req = load_full();
		chans = obj(req, "InputDataConfig");
		json_object_set_new(json_array_get(chans, 1), "ChannelName",
				    json_string("Train"));
		if (parse_json(req, &spec, &err))
			fail_msg("parse: %s", err.data);
		assert_int_equal(spec.n_channels, 2);
		api_job_spec_release(&spec);
		buf_release(&err);
	}

	/* A channel without an S3 source. */
	req = load_full();
	chans = obj(req, "InputDataConfig");
	json_object_set_new(
		json_array_get(chans, 1), "DataSource",
		json_pack("{s:{s:s,s:s,s:s,s:s}}", "FileSystemDataSource",
			  "FileSystemId", "fs-0123456789abcdef0",
			  "FileSystemAccessMode", "ro", "FileSystemType",
			  "FSxLustre", "DirectoryPath", "/fsx/data"));
	EXPECT_INVALID(req, "validation");
}

/* Channel names "." and ".." would name a folder outside input/data. */
static void test_channel_dots(void **state)
{
	static const char *const bad[] = { ".", ".." };
	json_t *req;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		req = load_full();
		json_object_set_new(json_array_get(obj(req, "InputDataConfig"),
						   1),
				    "ChannelName", json_string(bad[i]));
		EXPECT_INVALID(req, "ChannelName");
	}
}

/* Container paths lie under /opt/ml/, without '.' or '..'. */
static void test_container_paths(void **state)
{
	static const char *const bad[] = {
		"/etc",
		"../..",
		"opt/ml/x",
		"/opt/ml",
		"/opt/ml/",
		"/opt/ml//",
		"/opt/ml/../../etc",
		"/opt/ml/a/../..",
		"/opt/mlx/ckpt",
		"/opt/ml/./ckpt",
		"/opt/ml/ckpt/..",
		"",
	};
	static const char *const good[] = { "/opt/ml/checkpoints",
					    "/opt/ml/checkpoints/",
					    "/opt/ml/a/b..c/.d" };
	static const char *const holders[] = { "CheckpointConfig",
					       "DebugHookConfig",
					       "TensorBoardOutputConfig" };
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	json_t *req;
	size_t i, h;

	(void)state;
	for (h = 0; h < sizeof(holders) / sizeof(holders[0]); h++) {
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			req = load_full();
			json_object_set_new(req, holders[h],
					    json_pack("{s:s,s:s}",
						      "S3OutputPath",
						      "s3://bucket/x",
						      "LocalPath", bad[i]));
			if (!strcmp(holders[h], "CheckpointConfig")) {
				json_object_del(obj(req, holders[h]),
						"S3OutputPath");
				json_object_set_new(obj(req, holders[h]),
						    "S3Uri",
						    json_string("s3://b/c"));
			}
			EXPECT_INVALID(req, "LocalPath");
		}
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		req = load_full();
		json_object_set_new(obj(req, "CheckpointConfig"), "LocalPath",
				    json_string(good[i]));
		if (parse_json(req, &spec, &err))
			fail_msg("parse '%s': %s", good[i], err.data);
		api_job_spec_release(&spec);
	}
	buf_release(&err);
}

static void expect_text_invalid(const char *text, size_t len, const char *word)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	int ret = api_job_spec_parse(text, len, &spec, &err);

	if (ret != ERR_INVALID)
		fail_msg("expected ERR_INVALID, got %d for '%.40s'", ret, text);
	assert_spec_empty(&spec);
	assert_true(err.len > 0);
	if (word && !contains_ci(err.data, word))
		fail_msg("message '%s' does not mention '%s'", err.data, word);
	buf_release(&err);
	api_job_spec_release(&spec);
}

/* Sets path ("A.B.C"; objects made as needed) of the full request to v. */
static json_t *full_with(const char *path, json_t *v)
{
	json_t *req = load_full();
	json_t *at = req, *next;
	char *copy = strdup(path), *seg = copy, *dot;

	assert_non_null(copy);
	while ((dot = strchr(seg, '.'))) {
		*dot = '\0';
		next = json_object_get(at, seg);
		if (json_is_array(next))
			next = json_array_get(next, 1);
		if (!next) {
			next = json_object();
			json_object_set_new(at, seg, next);
		}
		at = next;
		seg = dot + 1;
	}
	json_object_set_new(at, seg, v);
	free(copy);
	return req;
}

static void expect_parses(json_t *req, const char *what)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;

	if (parse_json(req, &spec, &err))
		fail_msg("%s: refused: %s", what, err.data);
	api_job_spec_release(&spec);
	buf_release(&err);
}

/*
 * What the controller does not honour is refused, naming the member (and
 * value) and saying why (scripts/training_members.py).
 */
static void test_refused_members(void **state)
{
	(void)state;
	EXPECT_INVALID(full_with("DebugRuleConfigurations",
				 json_pack("[{s:s,s:s}]",
					   "RuleConfigurationName", "r",
					   "RuleEvaluatorImage", "img")),
		       "DebugRuleConfigurations", "rule images");
	EXPECT_INVALID(full_with("EnableInterContainerTrafficEncryption",
				 json_true()),
		       "EnableInterContainerTrafficEncryption", "encrypted");
	EXPECT_INVALID(full_with("InputDataConfig.DataSource.S3DataSource."
				 "S3DataType",
				 json_string("AugmentedManifestFile")),
		       "S3DataType 'AugmentedManifestFile'");
	EXPECT_INVALID(
		full_with("InputDataConfig.DataSource.S3DataSource."
			  "AttributeNames",
			  json_pack("[s]", "source-ref")),
		"InputDataConfig.DataSource.S3DataSource.AttributeNames");
	EXPECT_INVALID(full_with("ExperimentConfig",
				 json_pack("{s:s}", "ExperimentName", "e")),
		       "ExperimentConfig");
	EXPECT_INVALID(full_with("StoppingCondition.MaxPendingTimeInSeconds",
				 json_integer(7200)),
		       "StoppingCondition.MaxPendingTimeInSeconds");
	EXPECT_INVALID(full_with("ResourceConfig.TrainingPlanArn",
				 json_string("arn:aws:sagemaker:us-east-1:"
					     "123456789012:training-plan/p")),
		       "ResourceConfig.TrainingPlanArn");
	EXPECT_INVALID(full_with("RemoteDebugConfig.EnableRemoteDebug",
				 json_true()),
		       "RemoteDebugConfig.EnableRemoteDebug true");
	EXPECT_INVALID(full_with("InfraCheckConfig.EnableInfraCheck",
				 json_true()),
		       "InfraCheckConfig.EnableInfraCheck");
	EXPECT_INVALID(full_with("MlflowConfig",
				 json_pack("{s:s}", "MlflowResourceArn",
					   "arn:aws:sagemaker:us-east-1:"
					   "123456789012:mlflow-tracking-"
					   "server/x")),
		       "MlflowConfig");
}

/* No-ops by design, and the values of refused members that ask for
 * nothing, are accepted. */
static void test_accepted_members(void **state)
{
	(void)state;
	expect_parses(full_with("EnableNetworkIsolation", json_false()),
		      "EnableNetworkIsolation false");
	expect_parses(
		full_with("DebugHookConfig",
			  json_pack("{s:s}", "S3OutputPath", "s3://b/debug")),
		"DebugHookConfig");
	expect_parses(full_with("ProfilerConfig",
				json_pack("{s:b}", "DisableProfiler", 0)),
		      "ProfilerConfig");
	expect_parses(full_with("EnableInterContainerTrafficEncryption",
				json_false()),
		      "EnableInterContainerTrafficEncryption false");
	expect_parses(full_with("ProfilerConfig",
				json_pack("{s:b}", "DisableProfiler", 1)),
		      "ProfilerConfig with DisableProfiler true");
	expect_parses(full_with("RemoteDebugConfig",
				json_pack("{s:b}", "EnableRemoteDebug", 0)),
		      "RemoteDebugConfig false");
	expect_parses(full_with("VpcConfig",
				json_pack("{s:[s],s:[s]}", "SecurityGroupIds",
					  "sg-0123456789", "Subnets",
					  "subnet-0123456789")),
		      "VpcConfig");
	expect_parses(full_with("OutputDataConfig.KmsKeyId",
				json_string("alias/mine")),
		      "KmsKeyId");
	expect_parses(full_with("AlgorithmSpecification.TrainingInputMode",
				json_string("FastFile")),
		      "FastFile");
	/* Pipe mode and its options, TensorBoard (docs/pipe-mode.md). */
	expect_parses(full_with("AlgorithmSpecification.TrainingInputMode",
				json_string("Pipe")),
		      "TrainingInputMode Pipe");
	expect_parses(full_with("InputDataConfig.InputMode",
				json_string("Pipe")),
		      "InputMode Pipe");
	expect_parses(full_with("InputDataConfig.CompressionType",
				json_string("Gzip")),
		      "CompressionType Gzip");
	expect_parses(full_with("InputDataConfig.RecordWrapperType",
				json_string("RecordIO")),
		      "RecordWrapperType RecordIO");
	expect_parses(full_with("InputDataConfig.ShuffleConfig",
				json_pack("{s:i}", "Seed", 7)),
		      "ShuffleConfig");
	expect_parses(
		full_with("TensorBoardOutputConfig",
			  json_pack("{s:s}", "S3OutputPath", "s3://b/tb")),
		"TensorBoardOutputConfig");
	expect_parses(full_with("AlgorithmSpecification.TrainingImageConfig",
				json_pack("{s:s}",
					  "TrainingRepositoryAccessMode",
					  "Platform")),
		      "TrainingRepositoryAccessMode");
}

/* A stored request is not refused again for what was refused later. */
static void test_load_stored(void **state)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	json_t *req = full_with("ExperimentConfig",
				json_pack("{s:s}", "ExperimentName", "e"));
	char *text = json_dumps(req, JSON_COMPACT);

	(void)state;
	json_decref(req);
	assert_non_null(text);
	assert_int_equal(api_job_spec_parse(text, strlen(text), &spec, &err),
			 ERR_INVALID);
	buf_reset(&err);
	if (api_job_spec_load(text, strlen(text), &spec, &err))
		fail_msg("load: %s", err.data);
	assert_string_equal(spec.name,
			    "resnet50-imagenet-2024-06-01-08-30-00-001");
	api_job_spec_release(&spec);
	free(text);
	/* The model's constraints still hold. */
	text = strdup("{\"TrainingJobName\": \"a_b\"}");
	assert_non_null(text);
	assert_int_equal(api_job_spec_load(text, strlen(text), &spec, &err),
			 ERR_INVALID);
	free(text);
	buf_release(&err);
}

/* Members neither model has are refused, naming their path. */
static void test_unknown_members(void **state)
{
	(void)state;
	EXPECT_INVALID(full_with("SomeFutureMember",
				 json_pack("{s:b}", "Enabled", 1)),
		       "SomeFutureMember is not a member",
		       "refused rather than ignored");
	EXPECT_INVALID(full_with("ResourceConfig.FutureKnob", json_integer(1)),
		       "ResourceConfig.FutureKnob");
	EXPECT_INVALID(full_with("InputDataConfig.DataSource.S3DataSource."
				 "Extra",
				 json_string("x")),
		       "InputDataConfig.DataSource.S3DataSource.Extra");
	/* null is an absent member, known or not. */
	expect_parses(full_with("SomeFutureMember", json_null()),
		      "a null unknown member");
	/* Map keys are data, not members. */
	expect_parses(full_with("HyperParameters.AnyKeyAtAll",
				json_string("1")),
		      "a new hyperparameter");
}

/* S3DataSource.InstanceGroupNames names groups of InstanceGroups. */
static void test_channel_groups(void **state)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	json_t *req, *res;

	(void)state;
	EXPECT_INVALID(full_with("InputDataConfig.DataSource.S3DataSource."
				 "InstanceGroupNames",
				 json_pack("[s]", "gpu")),
		       "InstanceGroupNames", "no InstanceGroups");
	req = full_with("InputDataConfig.DataSource.S3DataSource."
			"InstanceGroupNames",
			json_pack("[s]", "cpu"));
	res = obj(req, "ResourceConfig");
	json_object_del(res, "InstanceType");
	json_object_del(res, "InstanceCount");
	json_object_set_new(
		res, "InstanceGroups",
		json_pack("[{s:s,s:s,s:i},{s:s,s:s,s:i}]", "InstanceGroupName",
			  "gpu", "InstanceType", "ml.p4d.24xlarge",
			  "InstanceCount", 2, "InstanceGroupName", "cpu",
			  "InstanceType", "ml.c5.4xlarge", "InstanceCount", 1));
	if (parse_json(json_deep_copy(req), &spec, &err))
		fail_msg("parse: %s", err.data);
	assert_null(spec.channels[0].instance_groups);
	assert_non_null(spec.channels[1].instance_groups);
	assert_string_equal(spec.channels[1].instance_groups[0], "cpu");
	assert_null(spec.channels[1].instance_groups[1]);
	/* Hosts are numbered group after group: gpu 0-1, cpu 2. */
	assert_string_equal(api_config_host_group(&spec, 0), "gpu");
	assert_string_equal(api_config_host_group(&spec, 1), "gpu");
	assert_string_equal(api_config_host_group(&spec, 2), "cpu");
	assert_null(api_config_host_group(&spec, 3));
	assert_true(api_config_channel_on(&spec.channels[0], "gpu"));
	assert_false(api_config_channel_on(&spec.channels[1], "gpu"));
	assert_true(api_config_channel_on(&spec.channels[1], "cpu"));
	assert_true(api_config_channel_on(&spec.channels[1], NULL));
	assert_int_equal(api_config_input_data(&spec, "gpu", &err), 0);
	assert_null(strstr(err.data, "\"validation\""));
	assert_non_null(strstr(err.data, "\"train\""));
	buf_reset(&err);
	assert_int_equal(api_config_input_data(&spec, "cpu", &err), 0);
	assert_non_null(strstr(err.data, "\"validation\""));
	buf_reset(&err);
	api_job_spec_release(&spec);

	json_object_set_new(
		json_object_get(
			json_object_get(
				json_array_get(obj(req, "InputDataConfig"), 1),
				"DataSource"),
			"S3DataSource"),
		"InstanceGroupNames", json_pack("[s,s]", "cpu", "tpu"));
	EXPECT_INVALID(req, "InstanceGroupNames 'tpu'", "validation");
	buf_release(&err);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"{\"TrainingJobName\": ",
		"{\"TrainingJobName\": \"a\",}",
		"{'TrainingJobName': 'a'}",
		"not json",
		"{\"TrainingJobName\": \"a\"} trailing",
		"{\"TrainingJobName\": \"a\", \"TrainingJobName\": \"b\"}",
		"\"just a string\"",
		"42",
		"null",
	};
	size_t i;
	char *text;
	json_t *req;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_text_invalid(bad[i], strlen(bad[i]), NULL);
	expect_text_invalid("[]", 2, "object");
	{
		static const char arr[] = "[{\"TrainingJobName\":\"a\"}]";

		expect_text_invalid(arr, strlen(arr), "object");
	}
	/* The length is honoured: a valid document cut short is invalid. */
	req = load_full();
	text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	expect_text_invalid(text, strlen(text) - 1, NULL);
	/* An embedded NUL is not a terminator. */
	text[10] = '\0';
	expect_text_invalid(text, strlen(text + 11) + 11, NULL);
	free(text);
	/* An empty body is an empty object: required members are missing. */
	expect_text_invalid("", 0, NULL);
	expect_text_invalid("{}", 2, NULL);
}

/* Returns the full request with an unknown member nested depth objects
 * deep. */
static char *nested_request(int depth)
{
	json_t *req = load_full();
	json_t *v = json_string("leaf");
	char *text;
	int i;

	for (i = 0; i < depth; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "a", v);
		v = o;
	}
	json_object_set_new(req, "Deep", v);
	text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	assert_non_null(text);
	return text;
}

static void test_nesting(void **state)
{
	struct buf err = BUF_INIT;
	char *text;
	char *deep;
	size_t i, n = 100000;

	(void)state;
	/* Moderate nesting inside an unknown member: the member is refused
	 * by its name, without walking what it holds. */
	text = nested_request(20);
	expect_text_invalid(text, strlen(text), "Deep is not a member");
	free(text);

	text = nested_request(40);
	expect_text_invalid(text, strlen(text), "32");
	free(text);

	/* Far deeper than any parser stack should go: rejected, no crash. */
	deep = malloc(2 * n + 8);
	assert_non_null(deep);
	memcpy(deep, "{\"a\":", 5);
	for (i = 0; i < n; i++) {
		deep[5 + i] = '[';
		deep[5 + n + i] = ']';
	}
	memcpy(deep + 5 + 2 * n, "}", 2);
	expect_text_invalid(deep, strlen(deep), NULL);
	free(deep);
	buf_release(&err);
}

static void test_release(void **state)
{
	struct api_job_spec spec = API_JOB_SPEC_INIT;
	struct buf err = BUF_INIT;

	(void)state;
	api_job_spec_release(&spec); /* an empty spec */
	api_job_spec_release(&spec);
	if (parse_json(load_full(), &spec, &err))
		fail_msg("parse: %s", err.data);
	api_job_spec_release(&spec);
	api_job_spec_release(&spec);
	assert_spec_empty(&spec);
	/* A parse into a spec that failed before is fine too. */
	assert_int_equal(api_job_spec_parse("[]", 2, &spec, &err), ERR_INVALID);
	api_job_spec_release(&spec);
	buf_release(&err);
}

/* A request's warm pool key, with ResourceConfig changed by f. */
static char *warm_key_of(void (*f)(json_t *res), int keep)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	json_t *req = load_full();
	json_t *res = json_object_get(req, "ResourceConfig");
	char *key;

	json_object_del(res, "VolumeSizeInGB");
	if (keep)
		json_object_set_new(res, "KeepAlivePeriodInSeconds",
				    json_integer(keep));
	else
		json_object_del(res, "KeepAlivePeriodInSeconds");
	if (f)
		f(res);
	assert_int_equal(parse_json(req, &spec, &err), 0);
	assert_int_equal(spec.keep_alive_s, keep);
	key = spec.warm_key ? strdup(spec.warm_key) : NULL;
	api_job_spec_release(&spec);
	buf_release(&err);
	return key;
}

static void volume_other(json_t *res)
{
	json_object_set_new(res, "VolumeSizeInGB", json_integer(31));
}

/*
 * The warm pool key: the same for another period, different for another
 * volume; none without a period.
 * The echoed request's period can be rewritten.
 */
/* What api_job_spec_uris() yields, as "member uri" lines. */
static int collect_uri(void *arg, const char *member, const char *uri)
{
	(void)buf_addf(arg, "%s %s\n", member, uri);
	return 0;
}

/* Every s3:// or file:// string of v (the code hyperparameter decoded). */
static void request_uris(const json_t *v, const char *key, struct buf *out)
{
	const char *k;
	json_t *m;
	size_t i;

	if (json_is_string(v)) {
		char *s = !strcmp(key, "sagemaker_submit_directory") ?
				  api_hp_string(json_string_value(v)) :
				  strdup(json_string_value(v));

		if (!strncmp(s, "s3://", 5) || !strncmp(s, "file://", 7))
			(void)buf_addf(out, "%s\n", s);
		free(s);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m)
		{
			request_uris(m, key, out);
		}
	} else {
		json_object_foreach((json_t *)v, k, m)
		{
			request_uris(m, k, out);
		}
	}
}

/*
 * Every URI-bearing member of the request is walked, so that a check
 * built on the walk forgets none: each s3:// or file:// string of a
 * request that names them all (but TrainingImage, a program) begins one
 * the walk yields, under its member's name.
 */
static void test_uris_walk(void **state)
{
	static const char *const want[] = {
		"OutputDataConfig.S3OutputPath s3://models/resnet50/\n",
		"InputDataConfig.DataSource.S3DataSource.S3Uri "
		"s3://datasets/imagenet/train/\n",
		"InputDataConfig.DataSource.S3DataSource.S3Uri "
		"s3://datasets/imagenet/val.manifest\n",
		"CheckpointConfig.S3Uri s3://models/resnet50/checkpoints/\n",
		"TensorBoardOutputConfig.S3OutputPath s3://tb/out/\n",
		"DebugHookConfig.S3OutputPath s3://dbg/out/"
		"resnet50-imagenet-2024-06-01-08-30-00-001/debug-output\n",
		"ProfilerConfig.S3OutputPath file:///srv/prof/"
		"resnet50-imagenet-2024-06-01-08-30-00-001/profiler-output\n",
		"HyperParameters.sagemaker_submit_directory "
		"s3://code/src.tar.gz\n",
	};
	json_t *req = load_full();
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	struct buf got = BUF_INIT;
	struct buf uris = BUF_INIT;
	char *line, *save = NULL;
	size_t i;

	(void)state;
	json_object_set_new(req, "TensorBoardOutputConfig",
			    json_pack("{s:s}", "S3OutputPath", "s3://tb/out/"));
	json_object_set_new(req, "DebugHookConfig",
			    json_pack("{s:s}", "S3OutputPath",
				      "s3://dbg/out/"));
	json_object_set_new(req, "ProfilerConfig",
			    json_pack("{s:s}", "S3OutputPath",
				      "file:///srv/prof"));
	json_object_set_new(json_object_get(req, "HyperParameters"),
			    "sagemaker_submit_directory",
			    json_string("\"s3://code/src.tar.gz\""));
	json_object_del(req, "AlgorithmSpecification");
	request_uris(req, "", &uris);
	json_object_set_new(req, "AlgorithmSpecification",
			    json_pack("{s:s,s:s}", "TrainingImage",
				      "file:///bin/true", "TrainingInputMode",
				      "File"));
	json_incref(req);
	assert_int_equal(parse_json(req, &spec, &err), 0);
	json_decref(req);
	assert_int_equal(api_job_spec_uris(&spec, collect_uri, &got), 0);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(got.data, want[i]))
			fail_msg("the walk lacks %s(it gave:\n%s)", want[i],
				 got.data);
	for (line = strtok_r(uris.data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct buf b = BUF_INIT;

		(void)buf_addf(&b, " %s", line);
		if (!strstr(got.data, b.data))
			fail_msg("the request names %s, which the walk does "
				 "not (it gave:\n%s)",
				 line, got.data);
		buf_release(&b);
	}
	api_job_spec_release(&spec);
	buf_release(&err);
	buf_release(&got);
	buf_release(&uris);
}

static void test_warm_key(void **state)
{
	char *a = warm_key_of(NULL, 60);
	char *b = warm_key_of(NULL, 5);
	char *d = warm_key_of(volume_other, 60);
	struct buf out = BUF_INIT;

	(void)state;
	assert_non_null(a);
	assert_string_equal(a, b);
	assert_string_not_equal(a, d);
	assert_null(strstr(a, "KeepAlive"));
	assert_null(warm_key_of(NULL, 0));
	assert_int_equal(api_request_set_keep_alive(
				 "{\"ResourceConfig\":{\"InstanceCount\":1,"
				 "\"KeepAlivePeriodInSeconds\":60}}",
				 0, &out),
			 0);
	assert_non_null(strstr(out.data, "\"KeepAlivePeriodInSeconds\":0"));
	buf_reset(&out);
	assert_int_equal(api_request_set_keep_alive("{}", 5, &out),
			 ERR_INVALID);
	free(a);
	free(b);
	free(d);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_request),
		cmocka_unit_test(test_echo),
		cmocka_unit_test(test_explicit_values),
		cmocka_unit_test(test_instance_groups),
		cmocka_unit_test(test_image_xor_algorithm),
		cmocka_unit_test(test_resource_config),
		cmocka_unit_test(test_stopping_condition),
		cmocka_unit_test(test_channels),
		cmocka_unit_test(test_channel_dots),
		cmocka_unit_test(test_container_paths),
		cmocka_unit_test(test_refused_members),
		cmocka_unit_test(test_accepted_members),
		cmocka_unit_test(test_unknown_members),
		cmocka_unit_test(test_load_stored),
		cmocka_unit_test(test_channel_groups),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_nesting),
		cmocka_unit_test(test_release),
		cmocka_unit_test(test_warm_key),
		cmocka_unit_test(test_uris_walk),
	};

	return cmocka_run_group_tests_name("api/job_spec", tests, NULL, NULL);
}
