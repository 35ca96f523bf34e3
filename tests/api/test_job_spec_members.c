/*
 * Tests api/job_spec.c, the members: those refused by name, the no-ops,
 * members neither model has, stored requests loaded again, malformed and
 * deeply nested JSON, channel instance groups, the warm pool key and the
 * walk over every URI a request names. Error cases are the fixture
 * tests/api/data/spec/create_full.json with one change each. Run from the
 * top of the tree.
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
	EXPECT_INVALID(full_with("RemoteDebugConfig.EnableRemoteDebug",
				 json_true()),
		       "RemoteDebugConfig.EnableRemoteDebug", "remote access");
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
	/* Which rules the controller evaluates is controller/obs/rules.c's
	 * to say; the members themselves are accepted. */
	expect_parses(full_with("DebugRuleConfigurations",
				json_pack("[{s:s,s:s,s:{s:s}}]",
					  "RuleConfigurationName", "r",
					  "RuleEvaluatorImage", "img",
					  "RuleParameters", "rule_to_invoke",
					  "StalledTrainingRule")),
		      "DebugRuleConfigurations");
	expect_parses(full_with("ProfilerConfig",
				json_pack("{s:b}", "DisableProfiler", 1)),
		      "ProfilerConfig with DisableProfiler true");
	expect_parses(full_with("RemoteDebugConfig",
				json_pack("{s:b}", "EnableRemoteDebug", 0)),
		      "RemoteDebugConfig false");
	/* Infrastructure checks run (docs/distributed.md). */
	expect_parses(full_with("InfraCheckConfig",
				json_pack("{s:b}", "EnableInfraCheck", 1)),
		      "InfraCheckConfig true");
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

	return cmocka_run_group_tests_name("api/job_spec_members", tests, NULL,
					   NULL);
}
