/*
 * Tests the pure parts of the observability code: api/cwlogs_json.c
 * (request validation of the three Logs_20140328 operations, answers),
 * api/web_json.c (the page's answers) and controller/obs/metrics.c (operation
 * labels, counter text). The HTTP paths are covered by the Python tests
 * next to this file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/cwlogs_json.h"
#include "api/web_json.h"
#include "controller/obs/metrics.h"
#include "controller/obs/rules.h"
#include "common/buf.h"
#include "common/err.h"

#define S(lit) (lit), strlen(lit)

static void test_describe_parse(void **state)
{
	struct api_cwl_describe_req r;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(api_cwl_describe_req_parse(
				 S("{\"logGroupName\":\"/g\","
				   "\"logStreamNamePrefix\":\"job/\"}"),
				 &r, &err),
			 0);
	assert_string_equal(r.group, "/g");
	assert_string_equal(r.prefix, "job/");
	assert_int_equal(r.limit, 50);
	assert_int_equal(r.by_last_event, 0);
	api_cwl_describe_req_release(&r);

	/* An ARN names the group too. */
	assert_int_equal(
		api_cwl_describe_req_parse(
			S("{\"logGroupIdentifier\":\"arn:aws:logs:us-east-1:1:"
			  "log-group:/aws/sagemaker/TrainingJobs:*\","
			  "\"orderBy\":\"LastEventTime\",\"descending\":true,"
			  "\"limit\":3}"),
			&r, &err),
		0);
	assert_string_equal(r.group, "/aws/sagemaker/TrainingJobs");
	assert_int_equal(r.by_last_event, 1);
	assert_int_equal(r.descending, 1);
	assert_int_equal(r.limit, 3);
	api_cwl_describe_req_release(&r);

	/* What the service refuses. */
	assert_int_equal(api_cwl_describe_req_parse(S("{}"), &r, &err),
			 ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(api_cwl_describe_req_parse(
				 S("{\"logGroupName\":\"/g\",\"limit\":51}"),
				 &r, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "limit"));
	buf_reset(&err);
	assert_int_equal(
		api_cwl_describe_req_parse(
			S("{\"logGroupName\":\"/g\",\"orderBy\":\"Size\"}"), &r,
			&err),
		ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(api_cwl_describe_req_parse(
				 S("{\"logGroupName\":\"/g\",\"orderBy\":"
				   "\"LastEventTime\",\"logStreamNamePrefix\":"
				   "\"a\"}"),
				 &r, &err),
			 ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(
		api_cwl_describe_req_parse(S("{\"logGroupName\":\"/g\","
					     "\"logGroupIdentifier\":\"/g\"}"),
					   &r, &err),
		ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(api_cwl_describe_req_parse(S("{\"logGroupName\":3}"),
						    &r, &err),
			 ERR_INVALID);
	buf_release(&err);
}

static void test_get_parse(void **state)
{
	struct api_cwl_get_req r;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(
		api_cwl_get_req_parse(S("{\"logGroupName\":\"/g\","
					"\"logStreamName\":\"j/algo-1-1\"}"),
				      &r, &err),
		0);
	assert_int_equal(r.start_ms, -1);
	assert_int_equal(r.end_ms, -1);
	assert_int_equal(r.limit, 10000);
	assert_int_equal(r.start_from_head, 0);
	assert_null(r.next_token);
	api_cwl_get_req_release(&r);

	assert_int_equal(api_cwl_get_req_parse(
				 S("{\"logGroupName\":\"/g\","
				   "\"logStreamName\":\"s\",\"startTime\":5,"
				   "\"endTime\":9,\"startFromHead\":true,"
				   "\"nextToken\":\"f/12\",\"limit\":2}"),
				 &r, &err),
			 0);
	assert_int_equal(r.start_ms, 5);
	assert_int_equal(r.end_ms, 9);
	assert_int_equal(r.start_from_head, 1);
	assert_string_equal(r.next_token, "f/12");
	assert_int_equal(r.limit, 2);
	api_cwl_get_req_release(&r);

	assert_int_equal(api_cwl_get_req_parse(S("{\"logGroupName\":\"/g\"}"),
					       &r, &err),
			 ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(
		api_cwl_get_req_parse(S("{\"logGroupName\":\"/g\","
					"\"logStreamName\":\"s\",\"limit\":0}"),
				      &r, &err),
		ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(api_cwl_get_req_parse(
				 S("{\"logGroupName\":\"/g\","
				   "\"logStreamName\":\"s\",\"startTime\":-1}"),
				 &r, &err),
			 ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(api_cwl_get_req_parse(S("[1]"), &r, &err),
			 ERR_INVALID);
	buf_release(&err);
}

static void test_filter_parse(void **state)
{
	struct api_cwl_filter_req r;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(api_cwl_filter_req_parse(
				 S("{\"logGroupName\":\"/g\","
				   "\"logStreamNames\":[\"a/b\",\"c/d\"],"
				   "\"filterPattern\":\"loss\","
				   "\"interleaved\":true}"),
				 &r, &err),
			 0);
	assert_int_equal(r.n_streams, 2);
	assert_string_equal(r.streams[1], "c/d");
	assert_string_equal(r.pattern, "loss");
	assert_null(r.prefix);
	api_cwl_filter_req_release(&r);

	assert_int_equal(
		api_cwl_filter_req_parse(S("{\"logGroupName\":\"/g\","
					   "\"logStreamNames\":[\"a\"],"
					   "\"logStreamNamePrefix\":\"b\"}"),
					 &r, &err),
		ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(api_cwl_filter_req_parse(S("{\"logGroupName\":\"/g\","
						    "\"logStreamNames\":[]}"),
						  &r, &err),
			 ERR_INVALID);
	buf_reset(&err);
	assert_int_equal(api_cwl_filter_req_parse(S("{\"logGroupName\":\"/g\","
						    "\"logStreamNames\":[7]}"),
						  &r, &err),
			 ERR_INVALID);
	buf_release(&err);
}

static void test_answers(void **state)
{
	struct api_cwl_stream s = { "j/algo-1-5", "arn:x", 1000, 1001,
				    1002,	  1003,	   42 };
	struct api_cwl_event e[2] = {
		{ NULL, NULL, 7, 7, "hello" },
		{ "j/algo-1-5", "0001", 8, 8, "caf\xc3\xa9" },
	};
	struct api_cwl_searched sr = { "j/algo-1-5", 1 };
	struct buf out = BUF_INIT;

	(void)state;
	assert_int_equal(api_cwl_streams_build(&s, 1, "i/1", &out), 0);
	assert_string_equal(
		out.data,
		"{\"logStreams\":[{\"logStreamName\":\"j/algo-1-5\","
		"\"creationTime\":1000,\"firstEventTimestamp\":1001,"
		"\"lastEventTimestamp\":1002,\"lastIngestionTime\":1003,"
		"\"arn\":\"arn:x\",\"storedBytes\":42}],\"nextToken\":\"i/1\"}");
	buf_reset(&out);
	assert_int_equal(api_cwl_events_build(e, 1, "f/9", "b/0", &out), 0);
	assert_string_equal(out.data,
			    "{\"events\":[{\"timestamp\":7,\"message\":"
			    "\"hello\",\"ingestionTime\":7}],"
			    "\"nextForwardToken\":\"f/9\","
			    "\"nextBackwardToken\":\"b/0\"}");
	buf_reset(&out);
	assert_int_equal(api_cwl_filtered_build(e + 1, 1, &sr, 1, NULL, &out),
			 0);
	assert_non_null(strstr(out.data, "\"eventId\":\"0001\""));
	assert_non_null(strstr(out.data, "\"searchedCompletely\":true"));
	assert_null(strstr(out.data, "nextToken"));
	buf_release(&out);
}

static void test_web_answers(void **state)
{
	struct api_web_job j = {
		"j", "Failed", "Failed", NULL, 2, 1, "AlgorithmError: x",
		10,  0,	       0,	 12
	};
	struct api_web_point pts[2] = { { 5, 0.5, 0 }, { 6, INFINITY, 0 } };
	struct api_web_point by_host[3] = { { 5, 0.5, 1 },
					    { 5, 0.25, 3 },
					    { 7, 0.125, 0 } };
	struct api_web_series s = { "loss", pts, 2 };
	struct api_web_series hs = { "loss", by_host, 3 };
	struct buf out = BUF_INIT;

	(void)state;
	assert_int_equal(api_web_jobs_build(&j, 1, NULL, &out), 0);
	assert_non_null(strstr(out.data, "\"instance_type\":null"));
	assert_non_null(strstr(out.data, "\"start_ms\":null"));
	assert_non_null(strstr(out.data, "\"next_token\":null"));
	buf_reset(&out);
	/* JSON has no infinity: such a point's value is null. */
	assert_int_equal(api_web_metrics_build(&s, 1, 6, &out), 0);
	assert_string_equal(out.data,
			    "{\"metrics\":[{\"name\":\"loss\",\"points\":"
			    "[[5,0.5],[6,null]]}],\"hosts\":[],\"last_ms\":6}");
	buf_reset(&out);
	/* Per-host series: a point names its host by index into "hosts". */
	assert_int_equal(api_web_metrics_build(&hs, 1, 7, &out), 0);
	assert_string_equal(
		out.data, "{\"metrics\":[{\"name\":\"loss\",\"points\":"
			  "[[5,0.5,0],[5,0.25,2],[7,0.125]]}],\"hosts\":"
			  "[\"algo-1\",\"algo-2\",\"algo-3\"],\"last_ms\":7}");
	buf_reset(&out);
	assert_int_equal(api_web_changes_build("1.2.3.4", 1, 0, 1, &out), 0);
	assert_string_equal(out.data, "{\"cursor\":\"1.2.3.4\",\"jobs\":true,"
				      "\"logs\":false,\"hosts\":true}");
	buf_release(&out);
}

static void test_operations(void **state)
{
	static const struct {
		const char *method, *url, *target, *want;
	} cases[] = {
		{ "POST", "/", "SageMaker.CreateTrainingJob",
		  "CreateTrainingJob" },
		{ "POST", "/", "SageMaker.NoSuch", "sagemaker:unknown" },
		{ "POST", "/", "SageMaker.metrics", "sagemaker:unknown" },
		{ "POST", "/", "Logs_20140328.GetLogEvents",
		  "logs:GetLogEvents" },
		{ "POST", "/", "Logs_20140328.PutLogEvents", "logs:unknown" },
		{ "POST", "/", "GraniteServiceVersion20100801.GetMetricData",
		  "cloudwatch:GetMetricData" },
		{ "POST", "/", "GraniteServiceVersion20100801.PutMetricData",
		  "cloudwatch:unknown" },
		{ "POST",
		  "/service/GraniteServiceVersion20100801/operation/ListMetrics",
		  NULL, "cloudwatch:ListMetrics" },
		{ "GET", "/v1/training-jobs", NULL, "rest:ListTrainingJobs" },
		{ "POST", "/v1/training-jobs", NULL, "rest:CreateTrainingJob" },
		{ "GET", "/v1/training-jobs/a", NULL,
		  "rest:DescribeTrainingJob" },
		{ "DELETE", "/v1/training-jobs/a", NULL,
		  "rest:DeleteTrainingJob" },
		{ "POST", "/v1/training-jobs/a/stop", NULL,
		  "rest:StopTrainingJob" },
		{ "GET", "/v1/training-jobs/a/logs", NULL, "rest:GetLogs" },
		{ "GET", "/v1/training-jobsX", NULL, "other" },
		{ "GET", "/v1/hosts", NULL, "rest:ListHosts" },
		{ "GET", "/v1/hosts/h1/telemetry", NULL, "rest:HostTelemetry" },
		{ "GET", "/v1/hosts/h1/images", NULL, "other" },
		{ "POST", "/v1/agents/register", NULL, "agent:register" },
		{ "GET", "/v1/agents/h1/work", NULL, "agent:work" },
		{ "PUT", "/v1/agents/h1/artifacts/j/1/algo-1/model.tar.gz",
		  NULL, "agent:artifacts" },
		{ "GET", "/", NULL, "web:page" },
		{ "GET", "/ui/app.js", NULL, "web:page" },
		{ "GET", "/v1/changes", NULL, "web:changes" },
		{ "GET", "/v1/ui/jobs", NULL, "web:jobs" },
		{ "GET", "/v1/ui/jobs/a", NULL, "web:job" },
		{ "GET", "/v1/ui/jobs/a/metrics", NULL, "web:metrics" },
		{ "GET", "/metrics", NULL, "metrics" },
		{ "GET", "/healthz", NULL, "healthz" },
		{ "GET", "/etc/passwd", NULL, "other" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(ctrl_metrics_operation(cases[i].method,
							   cases[i].url,
							   cases[i].target),
				    cases[i].want);
}

static void test_counters_text(void **state)
{
	struct buf out = BUF_INIT;

	(void)state;
	ctrl_metrics_log_lines(3);
	ctrl_metrics_render_counters(&out);
	assert_non_null(strstr(out.data,
			       "# TYPE trainctl_api_requests_total counter\n"));
	assert_non_null(strstr(out.data, "# TYPE "
					 "trainctl_api_request_duration_"
					 "seconds histogram\n"));
	assert_non_null(
		strstr(out.data, "\ntrainctl_log_lines_ingested_total 3\n"));
	buf_release(&out);
}

/* Rule verdicts by the rule invoked; InProgress and bad kinds are not
 * verdicts. */
static void test_rule_counters(void **state)
{
	struct buf out = BUF_INIT;

	(void)state;
	ctrl_metrics_rule_verdict(CTRL_RULE_STALLED, CTRL_RULE_ISSUES);
	ctrl_metrics_rule_verdict(CTRL_RULE_STALLED, CTRL_RULE_ISSUES);
	ctrl_metrics_rule_verdict(CTRL_RULE_OVERALL, CTRL_RULE_NO_ISSUES);
	ctrl_metrics_rule_verdict(CTRL_RULE_OVERALL, CTRL_RULE_IN_PROGRESS);
	ctrl_metrics_rule_verdict(CTRL_RULE_KINDS, CTRL_RULE_ISSUES);
	ctrl_metrics_render_counters(&out);
	assert_non_null(strstr(out.data, "# TYPE trainctl_rule_issues_found_"
					 "total counter\n"));
	assert_non_null(strstr(out.data, "\ntrainctl_rule_issues_found_total{"
					 "rule=\"StalledTrainingRule\"} 2\n"));
	assert_non_null(strstr(out.data, "\ntrainctl_rule_issues_found_total{"
					 "rule=\"CPUBottleneck\"} 0\n"));
	assert_non_null(strstr(out.data, "\ntrainctl_rule_verdicts_total{rule="
					 "\"OverallSystemUsage\",status="
					 "\"NoIssuesFound\"} 1\n"));
	assert_non_null(strstr(out.data, "\ntrainctl_rule_verdicts_total{rule="
					 "\"StalledTrainingRule\",status="
					 "\"IssuesFound\"} 2\n"));
	assert_null(strstr(out.data, "InProgress"));
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_describe_parse),
		cmocka_unit_test(test_get_parse),
		cmocka_unit_test(test_filter_parse),
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_web_answers),
		cmocka_unit_test(test_operations),
		cmocka_unit_test(test_rule_counters),
		cmocka_unit_test(test_counters_text),
	};

	return cmocka_run_group_tests_name("web/observability", tests, NULL,
					   NULL);
}
