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
#include "tests/api/job_spec_fixture.h"

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
	};

	return cmocka_run_group_tests_name("api/job_spec", tests, NULL, NULL);
}
