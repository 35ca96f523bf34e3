/* Tests api/client.c: request bodies from flags, response parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/client.h"
#include "api/job_record.h"
#include "common/buf.h"
#include "common/err.h"

static void test_create_flags_only(void **state)
{
	const char *hp[] = { "epochs=3", "lr=0.01", "empty=" };
	const char *env[] = { "OMP_NUM_THREADS=2" };
	const char *ch[] = { "train=s3://bucket/train", "test=file:///d=1" };
	const char *metrics[] = { "loss=loss=([0-9.]+)" };
	const char *ep[] = { "python3", "train.py" };
	struct api_client_create f = { 0 };
	struct buf out = BUF_INIT, err = BUF_INIT;

	(void)state;
	f.name = "mnist-1";
	f.image = "python";
	f.instance_type = "ml.c5.xlarge";
	f.instance_count = 2;
	f.max_runtime_s = 600;
	f.hyperparameters = hp;
	f.n_hyperparameters = 3;
	f.environment = env;
	f.n_environment = 1;
	f.channels = ch;
	f.n_channels = 2;
	f.metrics = metrics;
	f.n_metrics = 1;
	f.entrypoint = ep;
	f.n_entrypoint = 2;
	assert_int_equal(api_create_request_build(&f, NULL, 0, &out, &err), 0);
	assert_string_equal(
		out.data,
		"{\"TrainingJobName\":\"mnist-1\","
		"\"RoleArn\":\"" API_CLIENT_DEFAULT_ROLE_ARN "\","
		"\"AlgorithmSpecification\":{\"TrainingImage\":\"python\","
		"\"TrainingInputMode\":\"File\","
		"\"MetricDefinitions\":[{\"Name\":\"loss\","
		"\"Regex\":\"loss=([0-9.]+)\"}],"
		"\"ContainerEntrypoint\":[\"python3\",\"train.py\"]},"
		"\"ResourceConfig\":{\"InstanceType\":\"ml.c5.xlarge\","
		"\"InstanceCount\":2,\"VolumeSizeInGB\":30},"
		"\"HyperParameters\":{\"epochs\":\"3\",\"lr\":\"0.01\","
		"\"empty\":\"\"},"
		"\"Environment\":{\"OMP_NUM_THREADS\":\"2\"},"
		"\"InputDataConfig\":[{\"ChannelName\":\"train\","
		"\"DataSource\":{\"S3DataSource\":{\"S3DataType\":\"S3Prefix\","
		"\"S3Uri\":\"s3://bucket/train\","
		"\"S3DataDistributionType\":\"FullyReplicated\"}}},"
		"{\"ChannelName\":\"test\","
		"\"DataSource\":{\"S3DataSource\":{\"S3DataType\":\"S3Prefix\","
		"\"S3Uri\":\"file:///d=1\","
		"\"S3DataDistributionType\":\"FullyReplicated\"}}}],"
		"\"OutputDataConfig\":{\"S3OutputPath\":"
		"\"" API_CLIENT_DEFAULT_OUTPUT_PATH "\"},"
		"\"StoppingCondition\":{\"MaxRuntimeInSeconds\":600}}");
	assert_int_equal(err.len, 0);
	buf_release(&out);
	buf_release(&err);
}

static void test_create_minimal_defaults(void **state)
{
	struct api_client_create f = { 0 };
	struct buf out = BUF_INIT, err = BUF_INIT;

	(void)state;
	f.name = "a";
	f.image = "img";
	f.instance_type = "ml.m5.large";
	f.instance_count = 1;
	f.role_arn = "arn:aws:iam::123456789012:role/r";
	f.output_path = "s3://b/out";
	f.volume_gb = 5;
	f.input_mode = "Pipe";
	assert_int_equal(api_create_request_build(&f, NULL, 0, &out, &err), 0);
	assert_string_equal(
		out.data,
		"{\"TrainingJobName\":\"a\","
		"\"RoleArn\":\"arn:aws:iam::123456789012:role/r\","
		"\"AlgorithmSpecification\":{\"TrainingImage\":\"img\","
		"\"TrainingInputMode\":\"Pipe\"},"
		"\"ResourceConfig\":{\"InstanceType\":\"ml.m5.large\","
		"\"InstanceCount\":1,\"VolumeSizeInGB\":5},"
		"\"OutputDataConfig\":{\"S3OutputPath\":\"s3://b/out\"},"
		"\"StoppingCondition\":{\"MaxRuntimeInSeconds\":86400}}");
	buf_release(&out);
	buf_release(&err);
}

static const char base_doc[] =
	"{\"TrainingJobName\":\"from-file\","
	"\"RoleArn\":\"arn:aws:iam::123456789012:role/file\","
	"\"AlgorithmSpecification\":{\"AlgorithmName\":\"xgb\","
	"\"TrainingInputMode\":\"Pipe\","
	"\"MetricDefinitions\":[{\"Name\":\"acc\",\"Regex\":\"a=(.*)\"}]},"
	"\"HyperParameters\":{\"lr\":\"0.1\",\"epochs\":\"1\"},"
	"\"InputDataConfig\":[{\"ChannelName\":\"train\","
	"\"ContentType\":\"text/csv\","
	"\"DataSource\":{\"S3DataSource\":{\"S3DataType\":\"ManifestFile\","
	"\"S3Uri\":\"s3://old/train\"}}}],"
	"\"ResourceConfig\":{\"InstanceGroups\":[{\"InstanceType\":\"ml.m5.large\","
	"\"InstanceCount\":1,\"InstanceGroupName\":\"g\"}],"
	"\"VolumeSizeInGB\":50},"
	"\"OutputDataConfig\":{\"S3OutputPath\":\"s3://file/out\"},"
	"\"StoppingCondition\":{\"MaxRuntimeInSeconds\":3600},"
	"\"Tags\":[{\"Key\":\"team\",\"Value\":\"ml\"}]}";

static void test_create_file_only(void **state)
{
	struct api_client_create f = { 0 };
	struct buf out = BUF_INIT, err = BUF_INIT;

	(void)state;
	/* With InstanceGroups the file needs no InstanceType/Count. */
	assert_int_equal(api_create_request_build(&f, base_doc,
						  strlen(base_doc), &out, &err),
			 0);
	assert_string_equal(out.data, base_doc);
	buf_release(&out);
	buf_release(&err);
}

static void test_create_file_with_overrides(void **state)
{
	const char *hp[] = { "epochs=5", "batch=32" };
	const char *ch[] = { "train=s3://new/train", "val=s3://new/val" };
	const char *metrics[] = { "acc=acc: (.*)", "loss=l=(.*)" };
	struct api_client_create f = { 0 };
	struct buf out = BUF_INIT, err = BUF_INIT;

	(void)state;
	f.name = "override";
	f.image = "img:1";
	f.instance_type = "ml.c5.xlarge";
	f.instance_count = 3;
	f.hyperparameters = hp;
	f.n_hyperparameters = 2;
	f.channels = ch;
	f.n_channels = 2;
	f.metrics = metrics;
	f.n_metrics = 2;
	assert_int_equal(api_create_request_build(&f, base_doc,
						  strlen(base_doc), &out, &err),
			 0);
	assert_string_equal(
		out.data,
		"{\"TrainingJobName\":\"override\","
		"\"RoleArn\":\"arn:aws:iam::123456789012:role/file\","
		"\"AlgorithmSpecification\":{\"TrainingInputMode\":\"Pipe\","
		"\"MetricDefinitions\":[{\"Name\":\"acc\",\"Regex\":\"acc: (.*)\"},"
		"{\"Name\":\"loss\",\"Regex\":\"l=(.*)\"}],"
		"\"TrainingImage\":\"img:1\"},"
		"\"HyperParameters\":{\"lr\":\"0.1\",\"epochs\":\"5\","
		"\"batch\":\"32\"},"
		"\"InputDataConfig\":[{\"ChannelName\":\"train\","
		"\"ContentType\":\"text/csv\","
		"\"DataSource\":{\"S3DataSource\":{\"S3DataType\":\"ManifestFile\","
		"\"S3Uri\":\"s3://new/train\"}}},"
		"{\"ChannelName\":\"val\","
		"\"DataSource\":{\"S3DataSource\":{\"S3DataType\":\"S3Prefix\","
		"\"S3Uri\":\"s3://new/val\","
		"\"S3DataDistributionType\":\"FullyReplicated\"}}}],"
		"\"ResourceConfig\":{\"VolumeSizeInGB\":50,"
		"\"InstanceType\":\"ml.c5.xlarge\",\"InstanceCount\":3},"
		"\"OutputDataConfig\":{\"S3OutputPath\":\"s3://file/out\"},"
		"\"StoppingCondition\":{\"MaxRuntimeInSeconds\":3600},"
		"\"Tags\":[{\"Key\":\"team\",\"Value\":\"ml\"}]}");
	buf_release(&out);
	buf_release(&err);
}

/* Builds from flags f (plus base when not NULL), expecting failure. */
static void expect_create_error(const struct api_client_create *f,
				const char *base, const char *needle)
{
	struct buf out = BUF_INIT, err = BUF_INIT;

	assert_int_equal(api_create_request_build(
				 f, base, base ? strlen(base) : 0, &out, &err),
			 ERR_INVALID);
	assert_int_equal(out.len, 0);
	if (!strstr(err.data, needle))
		fail_msg("error '%s' does not contain '%s'", err.data, needle);
	buf_release(&out);
	buf_release(&err);
}

static void full_flags(struct api_client_create *f)
{
	memset(f, 0, sizeof(*f));
	f->name = "j";
	f->image = "img";
	f->instance_type = "ml.c5.xlarge";
	f->instance_count = 1;
}

static void test_create_bad_kv(void **state)
{
	const char *bad_hp[] = { "ok=1", "noequals" };
	const char *empty_key[] = { "=v" };
	const char *bad_env[] = { "PATH" };
	const char *bad_ch[] = { "train=" };
	const char *bad_ch2[] = { "s3://x" };
	const char *bad_metric[] = { "loss" };
	struct api_client_create f;

	(void)state;
	full_flags(&f);
	f.hyperparameters = bad_hp;
	f.n_hyperparameters = 2;
	expect_create_error(&f, NULL,
			    "invalid --hyperparameter 'noequals': expected "
			    "KEY=VALUE");
	f.hyperparameters = empty_key;
	f.n_hyperparameters = 1;
	expect_create_error(&f, NULL, "invalid --hyperparameter '=v'");

	full_flags(&f);
	f.environment = bad_env;
	f.n_environment = 1;
	expect_create_error(&f, NULL, "invalid --environment 'PATH'");

	full_flags(&f);
	f.channels = bad_ch;
	f.n_channels = 1;
	expect_create_error(&f, NULL,
			    "invalid --channel 'train=': expected NAME=URI");
	f.channels = bad_ch2;
	expect_create_error(&f, NULL, "invalid --channel 's3://x'");

	full_flags(&f);
	f.metrics = bad_metric;
	f.n_metrics = 1;
	expect_create_error(&f, NULL, "invalid --metric 'loss'");

	/* A malformed flag is reported before a missing one. */
	memset(&f, 0, sizeof(f));
	f.hyperparameters = bad_hp;
	f.n_hyperparameters = 2;
	expect_create_error(&f, NULL, "invalid --hyperparameter 'noequals'");
}

static void test_create_missing_required(void **state)
{
	struct api_client_create f;

	(void)state;
	full_flags(&f);
	f.name = NULL;
	expect_create_error(&f, NULL, "missing --name");
	full_flags(&f);
	f.image = NULL;
	expect_create_error(&f, NULL, "missing --image");
	full_flags(&f);
	f.instance_type = NULL;
	expect_create_error(&f, NULL, "missing --instance-type");
	full_flags(&f);
	f.instance_count = 0;
	expect_create_error(&f, NULL, "missing --instance-count");
}

static void test_create_bad_base(void **state)
{
	struct api_client_create f;

	(void)state;
	full_flags(&f);
	expect_create_error(&f, "{\"TrainingJobName\":",
			    "invalid --cli-input-json: line 1");
	expect_create_error(&f, "[1,2]", "not a JSON object");
	expect_create_error(&f, "{\"a\":1,\"a\":2}", "duplicate");
	expect_create_error(&f, "{\"ResourceConfig\":[]}",
			    "member 'ResourceConfig' must be an object");
}

static void test_create_bad_base_array_member(void **state)
{
	const char *ch[] = { "train=s3://b/t" };
	struct api_client_create f;

	(void)state;
	full_flags(&f);
	f.channels = ch;
	f.n_channels = 1;
	expect_create_error(&f, "{\"InputDataConfig\":{}}",
			    "member 'InputDataConfig' must be an array");
}

static void test_create_response(void **state)
{
	const char ok[] = "{\"TrainingJobArn\":\"arn:aws:sagemaker:us-east-1:"
			  "000000000000:training-job/a\"}";
	struct buf err = BUF_INIT;
	char *arn = NULL;

	(void)state;
	assert_int_equal(api_create_response_parse(ok, strlen(ok), &arn, &err),
			 0);
	assert_string_equal(arn, "arn:aws:sagemaker:us-east-1:000000000000:"
				 "training-job/a");
	free(arn);
	arn = NULL;
	assert_int_equal(api_create_response_parse("{}", 2, &arn, &err),
			 ERR_INVALID);
	assert_null(arn);
	assert_non_null(strstr(err.data, "TrainingJobArn"));
	assert_int_equal(api_create_response_parse("nope", 4, &arn, &err),
			 ERR_INVALID);
	buf_release(&err);
}

static void expect_list(const struct api_client_list *q, const char *want)
{
	struct buf out = BUF_INIT, err = BUF_INIT;

	assert_int_equal(api_list_request_build(q, &out, &err), 0);
	assert_string_equal(out.data, want);
	buf_release(&out);
	buf_release(&err);
}

static void expect_list_error(const struct api_client_list *q,
			      const char *needle)
{
	struct buf out = BUF_INIT, err = BUF_INIT;

	assert_int_equal(api_list_request_build(q, &out, &err), ERR_INVALID);
	assert_int_equal(out.len, 0);
	if (!strstr(err.data, needle))
		fail_msg("error '%s' does not contain '%s'", err.data, needle);
	buf_release(&out);
	buf_release(&err);
}

static void test_list_request(void **state)
{
	struct api_client_list q = { 0 };

	(void)state;
	expect_list(&q, "{}");
	q.status_equals = "Completed";
	q.name_contains = "mnist";
	q.sort_by = "Name";
	q.sort_order = "Descending";
	q.next_token = "tok";
	q.max_results = 5;
	expect_list(
		&q,
		"{\"StatusEquals\":\"Completed\",\"NameContains\":\"mnist\","
		"\"SortBy\":\"Name\",\"SortOrder\":\"Descending\","
		"\"NextToken\":\"tok\",\"MaxResults\":5}");

	memset(&q, 0, sizeof(q));
	q.sort_by = "name";
	expect_list_error(&q, "invalid --sort-by 'name'");
	memset(&q, 0, sizeof(q));
	q.sort_order = "Up";
	expect_list_error(&q, "invalid --sort-order 'Up'");
	memset(&q, 0, sizeof(q));
	q.status_equals = "Running";
	expect_list_error(&q, "invalid --status 'Running'");
	memset(&q, 0, sizeof(q));
	q.max_results = 101;
	expect_list_error(&q, "invalid --max-results 101");
}

static const char page1[] =
	"{\"TrainingJobSummaries\":["
	"{\"TrainingJobName\":\"a\",\"TrainingJobArn\":\"arn:a\","
	"\"CreationTime\":1700000000.25,\"TrainingJobStatus\":\"Completed\","
	"\"SecondaryStatus\":\"Completed\",\"TrainingEndTime\":1700000100},"
	"{\"TrainingJobName\":\"b\",\"TrainingJobArn\":\"arn:b\","
	"\"CreationTime\":1700000001,\"TrainingJobStatus\":\"InProgress\"}],"
	"\"NextToken\":\"page-2\"}";

static void test_list_response(void **state)
{
	struct api_job_record *recs = NULL;
	struct buf err = BUF_INIT;
	char *next = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(api_list_response_parse(page1, strlen(page1), &recs,
						 &n, &next, &err),
			 0);
	assert_int_equal(n, 2);
	assert_string_equal(next, "page-2");
	assert_string_equal(recs[0].name, "a");
	assert_string_equal(recs[0].arn, "arn:a");
	assert_string_equal(recs[0].status, "Completed");
	assert_string_equal(recs[0].secondary_status, "Completed");
	assert_int_equal(recs[0].creation_ms, 1700000000250LL);
	assert_int_equal(recs[0].end_ms, 1700000100000LL);
	assert_string_equal(recs[1].name, "b");
	assert_string_equal(recs[1].status, "InProgress");
	assert_null(recs[1].secondary_status);
	api_job_records_free(recs, n);
	free(next);

	recs = NULL;
	next = NULL;
	n = 7;
	assert_int_equal(
		api_list_response_parse("{\"TrainingJobSummaries\":[]}", 27,
					&recs, &n, &next, &err),
		0);
	assert_int_equal(n, 0);
	assert_null(recs);
	assert_null(next);
	buf_release(&err);
}

static void test_list_response_bad(void **state)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{}",
		"{\"TrainingJobSummaries\":{}}",
		"{\"TrainingJobSummaries\":[1]}",
	};
	struct api_job_record *recs = NULL;
	struct buf err = BUF_INIT;
	char *next = NULL;
	size_t i, n = 0;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		assert_int_equal(api_list_response_parse(bad[i], strlen(bad[i]),
							 &recs, &n, &next,
							 &err),
				 ERR_INVALID);
		assert_null(recs);
		assert_null(next);
		assert_true(err.len > 0);
	}
	buf_release(&err);
}

static void test_list_summaries_append(void **state)
{
	const char page2[] = "{\"TrainingJobSummaries\":[{\"TrainingJobName\":"
			     "\"c\"}]}";
	struct buf out = BUF_INIT, err = BUF_INIT;

	(void)state;
	assert_int_equal(api_list_summaries_append("{\"TrainingJobSummaries\":"
						   "[]}",
						   27, &out, &err),
			 0);
	assert_int_equal(out.len, 0);
	assert_int_equal(
		api_list_summaries_append(page1, strlen(page1), &out, &err), 0);
	assert_int_equal(
		api_list_summaries_append(page2, strlen(page2), &out, &err), 0);
	assert_non_null(strstr(out.data, "{\"TrainingJobName\":\"a\""));
	assert_non_null(strstr(out.data, "},{\"TrainingJobName\":\"b\""));
	assert_non_null(strstr(out.data, "},{\"TrainingJobName\":\"c\"}"));
	assert_int_equal(out.data[0], '{');
	assert_int_equal(api_list_summaries_append("{}", 2, &out, &err),
			 ERR_INVALID);
	buf_release(&out);
	buf_release(&err);
}

static void test_json_pretty(void **state)
{
	struct buf out = BUF_INIT;

	(void)state;
	assert_int_equal(api_json_pretty("{\"b\":1,\"a\":[true]}", 18, &out),
			 0);
	assert_string_equal(out.data, "{\n  \"b\": 1,\n  \"a\": [\n    true\n"
				      "  ]\n}\n");
	buf_reset(&out);
	assert_int_equal(api_json_pretty("{", 1, &out), ERR_INVALID);
	assert_int_equal(out.len, 0);
	buf_release(&out);
}

static void test_create_request_name(void **state)
{
	static const char body[] = "{\"TrainingJobName\":\"Job-1\"}";
	char *name;

	(void)state;
	name = api_create_request_name(body, sizeof(body) - 1);
	assert_string_equal(name, "Job-1");
	free(name);
	assert_null(api_create_request_name("{\"TrainingJobName\":1}", 21));
	assert_null(api_create_request_name("not json", 8));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_flags_only),
		cmocka_unit_test(test_create_minimal_defaults),
		cmocka_unit_test(test_create_file_only),
		cmocka_unit_test(test_create_file_with_overrides),
		cmocka_unit_test(test_create_bad_kv),
		cmocka_unit_test(test_create_missing_required),
		cmocka_unit_test(test_create_bad_base),
		cmocka_unit_test(test_create_bad_base_array_member),
		cmocka_unit_test(test_create_response),
		cmocka_unit_test(test_create_request_name),
		cmocka_unit_test(test_list_request),
		cmocka_unit_test(test_list_response),
		cmocka_unit_test(test_list_response_bad),
		cmocka_unit_test(test_list_summaries_append),
		cmocka_unit_test(test_json_pretty),
	};

	return cmocka_run_group_tests_name("cli/client", tests, NULL, NULL);
}
