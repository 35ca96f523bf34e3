/*
 * Tests api/job_record.c (DescribeTrainingJob and ListTrainingJobs
 * responses, and parsing them back for clients) and api/requests.c (the
 * small requests: ListTrainingJobs from JSON or a query, names, errors).
 * Responses are checked by parsing them with jansson, not by comparing
 * text, so member order does not matter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/job_record.h"
#include "api/requests.h"
#include "api/rule_status.h"
#include "common/buf.h"
#include "common/err.h"

#define T0 1717230600123LL /* 2024-06-01T08:30:00.123Z */

static const char request_json[] =
	"{\"RoleArn\":\"arn:aws:iam::123456789012:role/r\","
	"\"AlgorithmSpecification\":{\"TrainingImage\":\"img:1\","
	"\"TrainingInputMode\":\"File\"},"
	"\"HyperParameters\":{\"epochs\":\"3\"},"
	"\"StoppingCondition\":{\"MaxRuntimeInSeconds\":3600},"
	"\"EnableNetworkIsolation\":false}";

static struct api_transition transitions[] = {
	{ (char *)"Starting", T0, T0 + 1500,
	  (char *)"Starting the training "
		  "job" },
	{ (char *)"Downloading", T0 + 1500, T0 + 4001,
	  (char *)"Downloading input data" },
	{ (char *)"Training", T0 + 4001, T0 + 64999, NULL },
	{ (char *)"Completed", T0 + 64999, 0,
	  (char *)"Training job completed" },
};

static struct api_transition open_transition[] = {
	{ (char *)"Starting", T0, 0, (char *)"Starting the training job" },
};

static struct api_metric_value metrics[] = {
	{ (char *)"train:loss", 0.123456789012, T0 + 60000 },
	{ (char *)"val:acc", 97.5, T0 + 61000 },
};

/* A finished job; the strings are static, so never release it. */
static struct api_job_record completed_record(void)
{
	struct api_job_record r;

	memset(&r, 0, sizeof(r));
	r.name = (char *)"resnet-1";
	r.arn = (char *)"arn:aws:sagemaker:us-east-1:123456789012:"
			"training-job/resnet-1";
	r.status = (char *)"Completed";
	r.secondary_status = (char *)"Completed";
	r.model_artifacts =
		(char *)"s3://models/out/resnet-1/output/model.tar.gz";
	r.request_json = (char *)request_json;
	r.creation_ms = T0;
	r.last_modified_ms = T0 + 64999;
	r.start_ms = T0 + 1500;
	r.end_ms = T0 + 64999;
	r.training_s = 64;
	r.billable_s = 64;
	r.transitions = transitions;
	r.n_transitions = 4;
	r.metrics = metrics;
	r.n_metrics = 2;
	return r;
}

/* A job that has just been accepted. */
static struct api_job_record starting_record(void)
{
	struct api_job_record r;

	memset(&r, 0, sizeof(r));
	r.name = (char *)"fresh-job";
	r.arn = (char *)"arn:aws:sagemaker:us-east-1:123456789012:"
			"training-job/fresh-job";
	r.status = (char *)"InProgress";
	r.secondary_status = (char *)"Starting";
	r.request_json = (char *)request_json;
	r.creation_ms = T0;
	r.last_modified_ms = T0;
	r.transitions = open_transition;
	r.n_transitions = 1;
	return r;
}

static json_t *parse_out(const struct buf *out)
{
	json_error_t jerr;
	json_t *root = json_loadb(out->data, out->len, 0, &jerr);

	if (!root)
		fail_msg("response is not JSON: %s: %s", jerr.text, out->data);
	return root;
}

static json_t *member(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		fail_msg("member %s missing", key);
	return v;
}

/* A timestamp member: a JSON number of epoch seconds with ms precision. */
static void assert_time(json_t *o, const char *key, int64_t ms)
{
	json_t *v = member(o, key);

	assert_true(json_is_number(v));
	assert_int_equal(llround(json_number_value(v) * 1000.0), ms);
}

static void test_describe_completed(void **state)
{
	struct api_job_record r = completed_record();
	struct buf out = BUF_INIT;
	json_t *root;
	json_t *arr;
	json_t *t;
	size_t i;

	(void)state;
	assert_int_equal(api_describe_response(&r, &out), 0);
	root = parse_out(&out);

	/* The echoed request is kept. */
	assert_string_equal(json_string_value(member(root, "RoleArn")),
			    "arn:aws:iam::123456789012:role/r");
	assert_string_equal(json_string_value(member(
				    member(root, "HyperParameters"), "epochs")),
			    "3");
	assert_int_equal(
		json_integer_value(member(member(root, "StoppingCondition"),
					  "MaxRuntimeInSeconds")),
		3600);
	assert_true(json_is_false(member(root, "EnableNetworkIsolation")));

	/* State members. */
	assert_string_equal(json_string_value(member(root, "TrainingJobName")),
			    "resnet-1");
	assert_string_equal(json_string_value(member(root, "TrainingJobArn")),
			    r.arn);
	assert_string_equal(
		json_string_value(member(root, "TrainingJobStatus")),
		"Completed");
	assert_string_equal(json_string_value(member(root, "SecondaryStatus")),
			    "Completed");
	assert_null(json_object_get(root, "FailureReason"));
	assert_string_equal(
		json_string_value(member(member(root, "ModelArtifacts"),
					 "S3ModelArtifacts")),
		r.model_artifacts);
	assert_true(json_is_real(member(root, "CreationTime")));
	assert_time(root, "CreationTime", T0);
	assert_time(root, "LastModifiedTime", T0 + 64999);
	assert_time(root, "TrainingStartTime", T0 + 1500);
	assert_time(root, "TrainingEndTime", T0 + 64999);
	assert_true(json_is_integer(member(root, "TrainingTimeInSeconds")));
	assert_int_equal(
		json_integer_value(member(root, "TrainingTimeInSeconds")), 64);
	assert_int_equal(
		json_integer_value(member(root, "BillableTimeInSeconds")), 64);

	arr = member(root, "SecondaryStatusTransitions");
	assert_int_equal(json_array_size(arr), 4);
	for (i = 0; i < 4; i++) {
		t = json_array_get(arr, i);
		assert_string_equal(json_string_value(member(t, "Status")),
				    transitions[i].status);
		assert_time(t, "StartTime", transitions[i].start_ms);
		if (transitions[i].end_ms)
			assert_time(t, "EndTime", transitions[i].end_ms);
		else
			assert_null(json_object_get(t, "EndTime"));
		if (transitions[i].message)
			assert_string_equal(
				json_string_value(member(t, "StatusMessage")),
				transitions[i].message);
		else
			assert_null(json_object_get(t, "StatusMessage"));
	}

	arr = member(root, "FinalMetricDataList");
	assert_int_equal(json_array_size(arr), 2);
	t = json_array_get(arr, 0);
	assert_string_equal(json_string_value(member(t, "MetricName")),
			    "train:loss");
	assert_float_equal(json_number_value(member(t, "Value")),
			   0.123456789012, 1e-12);
	assert_time(t, "Timestamp", T0 + 60000);
	t = json_array_get(arr, 1);
	assert_float_equal(json_number_value(member(t, "Value")), 97.5, 0);
	json_decref(root);
	buf_release(&out);
}

static void test_describe_starting(void **state)
{
	struct api_job_record r = starting_record();
	struct buf out = BUF_INIT;
	json_t *root;
	json_t *arr;

	(void)state;
	assert_int_equal(api_describe_response(&r, &out), 0);
	root = parse_out(&out);
	assert_string_equal(
		json_string_value(member(root, "TrainingJobStatus")),
		"InProgress");
	assert_string_equal(json_string_value(member(root, "SecondaryStatus")),
			    "Starting");
	assert_time(root, "CreationTime", T0);
	/* Absent facts are absent, not zero or null. */
	assert_null(json_object_get(root, "TrainingStartTime"));
	assert_null(json_object_get(root, "TrainingEndTime"));
	assert_null(json_object_get(root, "TrainingTimeInSeconds"));
	assert_null(json_object_get(root, "BillableTimeInSeconds"));
	assert_null(json_object_get(root, "FailureReason"));
	assert_null(json_object_get(root, "ModelArtifacts"));
	assert_null(json_object_get(root, "FinalMetricDataList"));
	arr = member(root, "SecondaryStatusTransitions");
	assert_int_equal(json_array_size(arr), 1);
	assert_non_null(json_object_get(json_array_get(arr, 0), "StartTime"));
	assert_null(json_object_get(json_array_get(arr, 0), "EndTime"));
	assert_null(strstr(out.data, "null"));
	json_decref(root);

	/* A failed one carries its reason. */
	buf_reset(&out);
	r.status = (char *)"Failed";
	r.secondary_status = (char *)"Failed";
	r.failure_reason = (char *)"AlgorithmError: \"exit 1\"\nTraceback";
	assert_int_equal(api_describe_response(&r, &out), 0);
	root = parse_out(&out);
	assert_string_equal(json_string_value(member(root, "FailureReason")),
			    r.failure_reason);
	json_decref(root);

	/* No stored request: the state members alone. */
	buf_reset(&out);
	r.request_json = NULL;
	assert_int_equal(api_describe_response(&r, &out), 0);
	root = parse_out(&out);
	assert_string_equal(json_string_value(member(root, "TrainingJobName")),
			    "fresh-job");
	json_decref(root);
	buf_release(&out);
}

static void test_describe_corrupt_request(void **state)
{
	static const char *const bad[] = { "{\"RoleArn\":", "not json", "[1]",
					   "\"text\"", "" };
	struct api_job_record r = starting_record();
	struct buf out = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r.request_json = (char *)bad[i];
		assert_int_equal(api_describe_response(&r, &out), ERR_INVALID);
		assert_int_equal(out.len, 0);
	}
	buf_release(&out);
}

static void test_record_round_trip(void **state)
{
	struct api_job_record r = completed_record();
	struct api_job_record back;
	struct buf out = BUF_INIT;
	struct buf err = BUF_INIT;
	size_t i;

	(void)state;
	assert_int_equal(api_describe_response(&r, &out), 0);
	assert_int_equal(
		api_job_record_from_json(out.data, out.len, &back, &err), 0);
	assert_string_equal(back.name, r.name);
	assert_string_equal(back.arn, r.arn);
	assert_string_equal(back.status, r.status);
	assert_string_equal(back.secondary_status, r.secondary_status);
	assert_null(back.failure_reason);
	assert_string_equal(back.model_artifacts, r.model_artifacts);
	assert_int_equal(back.creation_ms, r.creation_ms);
	assert_int_equal(back.last_modified_ms, r.last_modified_ms);
	assert_int_equal(back.start_ms, r.start_ms);
	assert_int_equal(back.end_ms, r.end_ms);
	assert_int_equal(back.training_s, r.training_s);
	assert_int_equal(back.billable_s, r.billable_s);
	assert_int_equal(back.n_transitions, r.n_transitions);
	for (i = 0; i < r.n_transitions; i++) {
		assert_string_equal(back.transitions[i].status,
				    r.transitions[i].status);
		assert_int_equal(back.transitions[i].start_ms,
				 r.transitions[i].start_ms);
		assert_int_equal(back.transitions[i].end_ms,
				 r.transitions[i].end_ms);
		if (r.transitions[i].message)
			assert_string_equal(back.transitions[i].message,
					    r.transitions[i].message);
		else
			assert_null(back.transitions[i].message);
	}
	assert_int_equal(back.n_metrics, r.n_metrics);
	for (i = 0; i < r.n_metrics; i++) {
		assert_string_equal(back.metrics[i].name, r.metrics[i].name);
		assert_float_equal(back.metrics[i].value, r.metrics[i].value,
				   1e-12);
		assert_int_equal(back.metrics[i].timestamp_ms,
				 r.metrics[i].timestamp_ms);
	}
	api_job_record_release(&back);
	assert_null(back.name);
	api_job_record_release(&back);

	/* The other record, with its absent members, and a failure. */
	buf_reset(&out);
	r = starting_record();
	r.failure_reason = (char *)"CapacityError: no free ml.p4d.24xlarge";
	assert_int_equal(api_describe_response(&r, &out), 0);
	assert_int_equal(
		api_job_record_from_json(out.data, out.len, &back, &err), 0);
	assert_string_equal(back.name, "fresh-job");
	assert_string_equal(back.failure_reason, r.failure_reason);
	assert_null(back.model_artifacts);
	assert_int_equal(back.start_ms, 0);
	assert_int_equal(back.end_ms, 0);
	assert_int_equal(back.training_s, 0);
	assert_int_equal(back.n_transitions, 1);
	assert_int_equal(back.transitions[0].end_ms, 0);
	assert_int_equal(back.n_metrics, 0);
	assert_null(back.metrics);
	api_job_record_release(&back);

	/* Millisecond edges survive the float seconds. */
	{
		static const int64_t ms[] = { 1,
					      999,
					      1000,
					      1717230600001LL,
					      1717230600999LL,
					      4102444799999LL };

		for (i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
			r = starting_record();
			r.creation_ms = ms[i];
			r.last_modified_ms = ms[i] + 1;
			buf_reset(&out);
			assert_int_equal(api_describe_response(&r, &out), 0);
			assert_int_equal(api_job_record_from_json(out.data,
								  out.len,
								  &back, &err),
					 0);
			assert_int_equal(back.creation_ms, ms[i]);
			assert_int_equal(back.last_modified_ms, ms[i] + 1);
			api_job_record_release(&back);
		}
	}
	buf_release(&out);
	buf_release(&err);
}

static void test_record_from_json(void **state)
{
	struct api_job_record back;
	struct buf err = BUF_INIT;
	static const char integer_times[] =
		"{\"TrainingJobName\":\"a\",\"CreationTime\":1717230600,"
		"\"TrainingTimeInSeconds\":5}";

	(void)state;
	/* botocore-style integer seconds are accepted too. */
	assert_int_equal(api_job_record_from_json(integer_times,
						  strlen(integer_times), &back,
						  &err),
			 0);
	assert_string_equal(back.name, "a");
	assert_int_equal(back.creation_ms, 1717230600000LL);
	assert_int_equal(back.training_s, 5);
	assert_null(back.arn);
	api_job_record_release(&back);

	assert_int_equal(api_job_record_from_json("{\"Train", 7, &back, &err),
			 ERR_INVALID);
	assert_true(err.len > 0);
	assert_null(back.name);
	assert_int_equal(api_job_record_from_json("[]", 2, &back, &err),
			 ERR_INVALID);
	api_job_record_release(&back);
	buf_release(&err);
}

static void test_summary_and_list(void **state)
{
	struct api_job_record recs[3];
	struct buf out = BUF_INIT;
	json_t *root;
	json_t *arr;
	json_t *s;

	(void)state;
	recs[0] = completed_record();
	recs[1] = starting_record();
	recs[2] = starting_record();
	recs[2].name = (char *)"stopping-job";
	recs[2].status = (char *)"Stopping";
	recs[2].secondary_status = (char *)"Stopping";
	recs[2].end_ms = T0 + 5; /* not terminal: no TrainingEndTime */

	assert_int_equal(api_list_response(recs, 3, "tok-123", &out), 0);
	root = parse_out(&out);
	assert_string_equal(json_string_value(member(root, "NextToken")),
			    "tok-123");
	arr = member(root, "TrainingJobSummaries");
	assert_int_equal(json_array_size(arr), 3);
	s = json_array_get(arr, 0);
	assert_string_equal(json_string_value(member(s, "TrainingJobName")),
			    "resnet-1");
	assert_string_equal(json_string_value(member(s, "TrainingJobArn")),
			    recs[0].arn);
	assert_string_equal(json_string_value(member(s, "TrainingJobStatus")),
			    "Completed");
	assert_string_equal(json_string_value(member(s, "SecondaryStatus")),
			    "Completed");
	assert_time(s, "CreationTime", T0);
	assert_time(s, "LastModifiedTime", T0 + 64999);
	assert_time(s, "TrainingEndTime", T0 + 64999);
	/* Summaries carry no request members and no transitions. */
	assert_null(json_object_get(s, "RoleArn"));
	assert_null(json_object_get(s, "SecondaryStatusTransitions"));
	s = json_array_get(arr, 1);
	assert_string_equal(json_string_value(member(s, "TrainingJobName")),
			    "fresh-job");
	assert_null(json_object_get(s, "TrainingEndTime"));
	s = json_array_get(arr, 2);
	assert_null(json_object_get(s, "TrainingEndTime"));
	json_decref(root);

	/* The last page: no NextToken member at all. */
	buf_reset(&out);
	assert_int_equal(api_list_response(recs, 2, NULL, &out), 0);
	root = parse_out(&out);
	assert_null(json_object_get(root, "NextToken"));
	assert_int_equal(json_array_size(member(root, "TrainingJobSummaries")),
			 2);
	json_decref(root);

	/* No jobs: an empty list, not a missing one. */
	buf_reset(&out);
	assert_int_equal(api_list_response(NULL, 0, NULL, &out), 0);
	root = parse_out(&out);
	assert_true(json_is_array(member(root, "TrainingJobSummaries")));
	assert_int_equal(json_array_size(member(root, "TrainingJobSummaries")),
			 0);
	json_decref(root);

	/* One summary alone, parsed back as a client does. */
	buf_reset(&out);
	assert_int_equal(api_summary_json(&recs[0], &out), 0);
	{
		struct api_job_record back;
		struct buf err = BUF_INIT;

		assert_int_equal(api_job_record_from_json(out.data, out.len,
							  &back, &err),
				 0);
		assert_string_equal(back.name, "resnet-1");
		assert_string_equal(back.status, "Completed");
		assert_int_equal(back.creation_ms, T0);
		assert_int_equal(back.end_ms, T0 + 64999);
		assert_int_equal(back.n_transitions, 0);
		api_job_record_release(&back);
		buf_release(&err);
	}
	buf_release(&out);
}

/* api/requests.c */

static int list_parse(const char *json, struct api_list_request *req,
		      struct buf *err)
{
	buf_reset(err);
	return api_list_request_parse(json, strlen(json), req, err);
}

static void test_list_request_defaults(void **state)
{
	struct api_list_request req;
	struct buf err = BUF_INIT;
	static const char *const empty[] = { "{}", "" };
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		assert_int_equal(list_parse(empty[i], &req, &err), 0);
		assert_int_equal(req.max_results, 10);
		assert_int_equal(req.sort_by, API_SORT_CREATION_TIME);
		assert_int_equal(req.descending, 0);
		assert_null(req.next_token);
		assert_null(req.name_contains);
		assert_null(req.status_equals);
		assert_int_equal(req.creation_after_ms, 0);
		assert_int_equal(req.creation_before_ms, 0);
		assert_int_equal(req.modified_after_ms, 0);
		assert_int_equal(req.modified_before_ms, 0);
		api_list_request_release(&req);
	}
	buf_release(&err);
}

static void test_list_request_full(void **state)
{
	struct api_list_request req;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(list_parse("{\"MaxResults\":100,\"NextToken\":\"ab\","
				    "\"NameContains\":\"resnet\","
				    "\"StatusEquals\":\"Completed\","
				    "\"SortBy\":\"Name\","
				    "\"SortOrder\":\"Descending\","
				    "\"CreationTimeAfter\":1717230600,"
				    "\"CreationTimeBefore\":1717230600.5,"
				    "\"LastModifiedTimeAfter\":1,"
				    "\"LastModifiedTimeBefore\":2.25}",
				    &req, &err),
			 0);
	assert_int_equal(req.max_results, 100);
	assert_string_equal(req.next_token, "ab");
	assert_string_equal(req.name_contains, "resnet");
	assert_string_equal(req.status_equals, "Completed");
	assert_int_equal(req.sort_by, API_SORT_NAME);
	assert_int_equal(req.descending, 1);
	assert_int_equal(req.creation_after_ms, 1717230600000LL);
	assert_int_equal(req.creation_before_ms, 1717230600500LL);
	assert_int_equal(req.modified_after_ms, 1000);
	assert_int_equal(req.modified_before_ms, 2250);
	api_list_request_release(&req);
	assert_null(req.next_token);

	assert_int_equal(list_parse("{\"SortBy\":\"Status\","
				    "\"SortOrder\":\"Ascending\","
				    "\"MaxResults\":1}",
				    &req, &err),
			 0);
	assert_int_equal(req.sort_by, API_SORT_STATUS);
	assert_int_equal(req.descending, 0);
	assert_int_equal(req.max_results, 1);
	api_list_request_release(&req);
	buf_release(&err);
}

static void test_list_request_invalid(void **state)
{
	static const char *const bad[] = {
		"{\"MaxResults\":101}",
		"{\"MaxResults\":0}",
		"{\"MaxResults\":-5}",
		"{\"MaxResults\":\"10\"}",
		"{\"SortBy\":\"Size\"}",
		"{\"SortBy\":\"name\"}",
		"{\"SortOrder\":\"Up\"}",
		"{\"StatusEquals\":\"Running\"}",
		"{\"NameContains\":\"a_b\"}",
		"{\"CreationTimeAfter\":\"yesterday\"}",
		"{\"MaxResults\":",
		"[]",
	};
	struct api_list_request req;
	struct buf err = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (list_parse(bad[i], &req, &err) != ERR_INVALID)
			fail_msg("'%s' was accepted", bad[i]);
		assert_true(err.len > 0);
		assert_null(req.next_token);
		assert_null(req.name_contains);
		api_list_request_release(&req);
	}
	assert_int_equal(list_parse("{\"MaxResults\":101}", &req, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "axResults"));
	buf_release(&err);
}

/*
 * A timestamp far in the future must not overflow when it is turned into
 * milliseconds: either it is refused or it stays a positive time.
 */
static void test_list_request_huge_timestamp(void **state)
{
	static const char *const bodies[] = {
		"{\"CreationTimeAfter\":9223372036854775807}",
		"{\"LastModifiedTimeBefore\":9223372036854775}",
		"{\"CreationTimeBefore\":1e300}",
	};
	struct api_list_request req;
	struct buf err = BUF_INIT;
	int bad = 0;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		int ret = list_parse(bodies[i], &req, &err);

		if (ret == 0 &&
		    (req.creation_after_ms < 0 || req.modified_before_ms < 0 ||
		     req.creation_before_ms < 0)) {
			print_error("'%s' gave a negative time\n", bodies[i]);
			bad++;
		}
		assert_true(ret == 0 || ret == ERR_INVALID);
		api_list_request_release(&req);
	}
	assert_int_equal(bad, 0);
	buf_release(&err);
}

static int from_query(const struct api_query_arg *args, size_t n,
		      struct api_list_request *req, struct buf *err)
{
	buf_reset(err);
	return api_list_request_from_query(args, n, req, err);
}

static void test_list_request_from_query(void **state)
{
	static const struct api_query_arg args[] = {
		{ "MaxResults", "25" },
		{ "NextToken", "0a1b" },
		{ "NameContains", "bert" },
		{ "StatusEquals", "InProgress" },
		{ "SortBy", "Status" },
		{ "SortOrder", "Descending" },
		{ "CreationTimeAfter", "1717230600.25" },
		{ "CreationTimeBefore", "1717230601" },
		{ "LastModifiedTimeAfter", "10" },
		{ "LastModifiedTimeBefore", "20.5" },
	};
	struct api_list_request req;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(from_query(args, sizeof(args) / sizeof(args[0]), &req,
				    &err),
			 0);
	assert_int_equal(req.max_results, 25);
	assert_string_equal(req.next_token, "0a1b");
	assert_string_equal(req.name_contains, "bert");
	assert_string_equal(req.status_equals, "InProgress");
	assert_int_equal(req.sort_by, API_SORT_STATUS);
	assert_int_equal(req.descending, 1);
	assert_int_equal(req.creation_after_ms, 1717230600250LL);
	assert_int_equal(req.creation_before_ms, 1717230601000LL);
	assert_int_equal(req.modified_after_ms, 10000);
	assert_int_equal(req.modified_before_ms, 20500);
	api_list_request_release(&req);

	/* No arguments: the defaults. */
	assert_int_equal(from_query(NULL, 0, &req, &err), 0);
	assert_int_equal(req.max_results, 10);
	assert_int_equal(req.sort_by, API_SORT_CREATION_TIME);
	assert_int_equal(req.descending, 0);
	api_list_request_release(&req);
	buf_release(&err);
}

static void test_list_request_from_query_invalid(void **state)
{
	static const struct api_query_arg bad[][1] = {
		{ { "Bogus", "1" } },
		{ { "maxresults", "10" } },
		{ { "MaxResults", "abc" } },
		{ { "MaxResults", "" } },
		{ { "MaxResults", "12x" } },
		{ { "MaxResults", "101" } },
		{ { "MaxResults", "0" } },
		{ { "MaxResults", "1e300" } },
		{ { "MaxResults", "-1e300" } },
		{ { "MaxResults", "nan" } },
		{ { "MaxResults", "inf" } },
		{ { "MaxResults", "2.5" } },
		{ { "CreationTimeAfter", "soon" } },
		{ { "CreationTimeAfter", "nan" } },
		{ { "LastModifiedTimeBefore", "inf" } },
		{ { "SortBy", "Size" } },
		{ { "SortOrder", "descending" } },
		{ { "CreationTimeBefore", "1e16" } },
		{ { "NameContains", "\xff\xfe" } },
		{ { "NextToken", "ab\xc3" } },
	};
	struct api_list_request req;
	struct buf err = BUF_INIT;
	int accepted = 0;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (from_query(bad[i], 1, &req, &err) != ERR_INVALID) {
			print_error("%s=%s was accepted\n", bad[i][0].name,
				    bad[i][0].value);
			accepted++;
		} else if (!err.len) {
			print_error("%s=%s: no message\n", bad[i][0].name,
				    bad[i][0].value);
			accepted++;
		}
		api_list_request_release(&req);
	}
	assert_int_equal(accepted, 0);
	assert_int_equal(from_query(bad[0], 1, &req, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "Bogus"));
	assert_int_equal(from_query(bad[2], 1, &req, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "MaxResults"));
	buf_release(&err);
}

static void test_name_request(void **state)
{
	struct buf out = BUF_INIT;
	struct buf err = BUF_INIT;
	char *name = NULL;
	json_t *root;

	(void)state;
	assert_int_equal(api_name_request_build("job-1", &out), 0);
	assert_string_equal(out.data, "{\"TrainingJobName\":\"job-1\"}");
	assert_int_equal(api_name_request_parse("DescribeTrainingJobRequest",
						out.data, out.len, &name, &err),
			 0);
	assert_string_equal(name, "job-1");
	free(name);

	/* Quotes, backslashes and control characters are escaped. */
	buf_reset(&out);
	assert_int_equal(api_name_request_build("a\"b\\c\n", &out), 0);
	assert_string_equal(out.data,
			    "{\"TrainingJobName\":\"a\\\"b\\\\c\\n\"}");
	root = parse_out(&out);
	assert_string_equal(json_string_value(member(root, "TrainingJobName")),
			    "a\"b\\c\n");
	json_decref(root);
	/* Such a name is not valid for the service, though. */
	assert_int_equal(api_name_request_parse("StopTrainingJobRequest",
						out.data, out.len, &name, &err),
			 ERR_INVALID);
	assert_null(name);
	assert_true(err.len > 0);
	buf_reset(&err);
	assert_int_equal(api_name_request_parse("DescribeTrainingJobRequest",
						"{}", 2, &name, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "rainingJobName"));
	assert_int_equal(api_name_request_parse("DescribeTrainingJobRequest",
						"{", 1, &name, &err),
			 ERR_INVALID);
	assert_null(name);
	buf_release(&out);
	buf_release(&err);
}

static void test_create_and_error_bodies(void **state)
{
	struct buf out = BUF_INIT;
	char *type = NULL;
	char *msg = NULL;

	(void)state;
	assert_int_equal(api_create_response("arn:aws:sagemaker:x", &out), 0);
	assert_string_equal(out.data,
			    "{\"TrainingJobArn\":\"arn:aws:sagemaker:x\"}");

	buf_reset(&out);
	assert_int_equal(api_error_body("ValidationException", "bad \"value\"",
					&out),
			 0);
	assert_int_equal(api_error_parse(out.data, out.len, &type, &msg), 0);
	assert_string_equal(type, "ValidationException");
	assert_string_equal(msg, "bad \"value\"");
	free(type);
	free(msg);

	buf_reset(&out);
	assert_int_equal(api_error_body("ResourceInUse", NULL, &out), 0);
	assert_int_equal(api_error_parse(out.data, out.len, &type, &msg), 0);
	assert_string_equal(type, "ResourceInUse");
	assert_string_equal(msg, "");
	free(type);
	free(msg);
	buf_release(&out);
}

static void test_error_parse(void **state)
{
	static const struct {
		const char *body;
		int ret;
		const char *type;
		const char *msg;
	} cases[] = {
		{ "{\"__type\":\"com.amazonaws.sagemaker#ResourceNotFound\","
		  "\"message\":\"Requested resource not found.\"}",
		  0, "ResourceNotFound", "Requested resource not found." },
		{ "{\"__type\":\"ValidationException\","
		  "\"Message\":\"capital M\"}",
		  0, "ValidationException", "capital M" },
		{ "{\"__type\":\"ns#ThrottlingException\"}", 0,
		  "ThrottlingException", "" },
		{ "{\"message\":\"no type\"}", 0, "Unknown", "no type" },
		{ "{}", 0, "Unknown", "" },
		{ "{\"__type\":42,\"message\":[]}", 0, "Unknown", "" },
		{ "<html>502 Bad Gateway</html>", ERR_INVALID, "Unknown",
		  "<html>502 Bad Gateway</html>" },
		{ "[\"x\"]", ERR_INVALID, "Unknown", "[\"x\"]" },
		{ "", ERR_INVALID, "Unknown", "" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *type = NULL;
		char *msg = NULL;

		assert_int_equal(api_error_parse(cases[i].body,
						 strlen(cases[i].body), &type,
						 &msg),
				 cases[i].ret);
		assert_string_equal(type, cases[i].type);
		assert_string_equal(msg, cases[i].msg);
		free(type);
		free(msg);
	}
}

/*
 * Rule statuses: kept as text, read back, and merged into Describe as
 * DebugRuleEvaluationStatuses and ProfilerRuleEvaluationStatuses.
 */
static void test_rule_statuses(void **state)
{
	struct api_rule_status in[3] = {
		{ 0, (char *)"StalledTrainingRule", (char *)"IssuesFound",
		  (char *)"algo-2 (host h2) rank 0 made no progress for 4 s",
		  1796211299642 },
		{ 1, (char *)"OverallSystemUsage", (char *)"InProgress", NULL,
		  1796211299000 },
		{ 0, (char *)"Overfit", (char *)"NoIssuesFound", NULL,
		  1796211299000 },
	};
	struct api_job_record r = completed_record();
	struct api_rule_status *back;
	struct buf text = BUF_INIT, out = BUF_INIT, err = BUF_INIT;
	json_t *root, *list, *e;
	size_t n;

	(void)state;
	assert_int_equal(api_rule_statuses_build(in, 3, &text), 0);
	assert_int_equal(api_rule_statuses_parse(text.data, &back, &n, &err),
			 0);
	assert_int_equal(n, 3);
	/* Debugger's first, in order, then Profiler's. */
	assert_string_equal(back[0].name, "StalledTrainingRule");
	assert_string_equal(back[1].name, "Overfit");
	assert_true(back[2].profiler);
	assert_string_equal(back[0].status, "IssuesFound");
	assert_string_equal(back[0].details, in[0].details);
	assert_null(back[1].details);
	assert_int_equal(back[0].modified_ms, 1796211299642);
	api_rule_statuses_free(back, n);
	assert_int_equal(api_rule_statuses_parse("[]", &back, &n, &err),
			 ERR_INVALID);

	r.rule_statuses_json = text.data;
	assert_int_equal(api_describe_response(&r, &out), 0);
	root = parse_out(&out);
	list = member(root, "DebugRuleEvaluationStatuses");
	assert_int_equal(json_array_size(list), 2);
	e = json_array_get(list, 0);
	assert_string_equal(
		json_string_value(member(e, "RuleConfigurationName")),
		"StalledTrainingRule");
	assert_string_equal(
		json_string_value(member(e, "RuleEvaluationStatus")),
		"IssuesFound");
	assert_non_null(strstr(json_string_value(member(e, "StatusDetails")),
			       "algo-2"));
	assert_true(json_is_real(member(e, "LastModifiedTime")));
	list = member(root, "ProfilerRuleEvaluationStatuses");
	assert_int_equal(json_array_size(list), 1);
	assert_null(json_object_get(json_array_get(list, 0), "StatusDetails"));
	json_decref(root);
	buf_release(&text);
	buf_release(&out);
	buf_release(&err);
}

/* WarmPoolStatus in Describe and summaries; WarmPoolStatusEquals. */
static void test_warm_pool(void **state)
{
	static const struct api_query_arg args[] = {
		{ "WarmPoolStatusEquals", "Available" },
	};
	struct api_job_record r = completed_record();
	struct api_list_request req;
	struct buf out = BUF_INIT, err = BUF_INIT;
	json_t *root, *wp;

	(void)state;
	/* No pool: no member. */
	assert_int_equal(api_describe_response(&r, &out), 0);
	root = parse_out(&out);
	assert_null(json_object_get(root, "WarmPoolStatus"));
	json_decref(root);

	r.wp_status = (char *)"Reused";
	r.wp_reused_by = (char *)"next-job";
	r.wp_billable_s = 42;
	buf_reset(&out);
	assert_int_equal(api_describe_response(&r, &out), 0);
	root = parse_out(&out);
	wp = member(root, "WarmPoolStatus");
	assert_string_equal(json_string_value(member(wp, "Status")), "Reused");
	assert_string_equal(json_string_value(member(wp, "ReusedByJob")),
			    "next-job");
	assert_int_equal(json_integer_value(member(
				 wp, "ResourceRetainedBillableTimeInSeconds")),
			 42);
	json_decref(root);

	/* InUse: nothing retained yet, so no time. */
	r.wp_status = (char *)"InUse";
	r.wp_reused_by = NULL;
	r.wp_billable_s = -1;
	buf_reset(&out);
	assert_int_equal(api_summary_json(&r, &out), 0);
	root = parse_out(&out);
	wp = member(root, "WarmPoolStatus");
	assert_string_equal(json_string_value(member(wp, "Status")), "InUse");
	assert_null(
		json_object_get(wp, "ResourceRetainedBillableTimeInSeconds"));
	assert_null(json_object_get(wp, "ReusedByJob"));
	json_decref(root);

	assert_int_equal(api_list_request_parse(
				 "{\"WarmPoolStatusEquals\":\"Terminated\"}",
				 37, &req, &err),
			 0);
	assert_string_equal(req.warm_pool_status_equals, "Terminated");
	api_list_request_release(&req);
	assert_int_equal(
		api_list_request_parse("{\"WarmPoolStatusEquals\":\"Warm\"}",
				       31, &req, &err),
		ERR_INVALID);
	api_list_request_release(&req);
	assert_int_equal(from_query(args, 1, &req, &err), 0);
	assert_string_equal(req.warm_pool_status_equals, "Available");
	api_list_request_release(&req);
	buf_release(&out);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_describe_completed),
		cmocka_unit_test(test_describe_starting),
		cmocka_unit_test(test_describe_corrupt_request),
		cmocka_unit_test(test_rule_statuses),
		cmocka_unit_test(test_record_round_trip),
		cmocka_unit_test(test_record_from_json),
		cmocka_unit_test(test_summary_and_list),
		cmocka_unit_test(test_list_request_defaults),
		cmocka_unit_test(test_list_request_full),
		cmocka_unit_test(test_list_request_invalid),
		cmocka_unit_test(test_list_request_from_query),
		cmocka_unit_test(test_list_request_from_query_invalid),
		cmocka_unit_test(test_name_request),
		cmocka_unit_test(test_create_and_error_bodies),
		cmocka_unit_test(test_error_parse),
		cmocka_unit_test(test_warm_pool),
		/* Last: under UBSan its overflow aborts the program. */
		cmocka_unit_test(test_list_request_huge_timestamp),
	};

	return cmocka_run_group_tests_name("api/job_record", tests, NULL, NULL);
}
