/*
 * Tests api/tuning_reply.c: the tuning commands' small requests, and their
 * answers read into structs, leniently (mistyped members read as absent).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/tuning_reply.h"
#include "common/buf.h"
#include "common/err.h"

#define LEN(s) (sizeof(s) - 1)

static void test_requests(void **state)
{
	static const char req[] = "{\"HyperParameterTuningJobName\":\"tj\"}";
	struct api_tuning_list_query q = { 0 };
	struct buf out = BUF_INIT;
	char *name;

	(void)state;
	assert_int_equal(api_tuning_name_request_build("tj-1", &out), 0);
	assert_string_equal(out.data, "{\"HyperParameterTuningJobName\":"
				      "\"tj-1\"}");
	buf_reset(&out);
	assert_int_equal(api_tuning_name_request_build("bad\xff", &out),
			 ERR_INVALID);
	name = api_tuning_request_name(req, LEN(req));
	assert_string_equal(name, "tj");
	free(name);
	assert_null(api_tuning_request_name("{}", 2));
	assert_null(api_tuning_request_name("[", 1));

	q.tuning = "tj";
	q.status_equals = "Completed";
	q.sort_by = "Name";
	q.max_results = 5;
	(void)buf_adds(&out, "stale");
	api_tuning_list_request_build(&q, "t2", &out);
	assert_string_equal(
		out.data, "{\"HyperParameterTuningJobName\":\"tj\","
			  "\"StatusEquals\":\"Completed\",\"SortBy\":\"Name\","
			  "\"MaxResults\":5,\"NextToken\":\"t2\"}");
	memset(&q, 0, sizeof(q));
	api_tuning_list_request_build(&q, NULL, &out);
	assert_string_equal(out.data, "{}");
	buf_release(&out);
}

static void test_pages(void **state)
{
	static const char p1[] = "{\"TrainingJobSummaries\":[{\"a\":1},2],"
				 "\"NextToken\":\"n\"}";
	static const char p2[] = "{\"TrainingJobSummaries\":[null]}";
	struct buf items = BUF_INIT, err = BUF_INIT, doc = BUF_INIT;
	const char *m = "TrainingJobSummaries";
	char *token = NULL;

	(void)state;
	assert_int_equal(
		api_tuning_page_read(p1, LEN(p1), m, &items, &token, &err), 0);
	assert_string_equal(token, "n");
	free(token);
	assert_int_equal(
		api_tuning_page_read(p2, LEN(p2), m, &items, &token, &err), 0);
	assert_null(token);
	assert_string_equal(items.data, "{\"a\":1},2,null");
	assert_int_equal(api_tuning_page_read("{}", 2, m, &items, &token, &err),
			 ERR_INVALID);
	assert_string_equal(err.data, "no TrainingJobSummaries");
	assert_int_equal(api_tuning_page_read("[]", 2, m, &items, &token, &err),
			 ERR_INVALID);
	assert_string_equal(err.data, "");
	assert_int_equal(api_tuning_page_read("{", 1, m, &items, &token, &err),
			 ERR_INVALID);
	assert_true(err.len > 0);
	assert_string_equal(items.data, "{\"a\":1},2,null");

	assert_int_equal(api_tuning_list_doc_build(m, items.data, "t", &doc),
			 0);
	assert_string_equal(doc.data, "{\"TrainingJobSummaries\":[{\"a\":1},2,"
				      "null],\"NextToken\":\"t\"}");
	buf_reset(&doc);
	assert_int_equal(api_tuning_list_doc_build(m, "", NULL, &doc), 0);
	assert_string_equal(doc.data, "{\"TrainingJobSummaries\":[]}");
	buf_release(&doc);
	buf_release(&items);
	buf_release(&err);
}

static void test_create_response(void **state)
{
	static const char ok[] = "{\"HyperParameterTuningJobArn\":\"arn:x\"}";
	struct buf err = BUF_INIT;
	char *arn = NULL;

	(void)state;
	assert_int_equal(
		api_tuning_create_response_parse(ok, LEN(ok), &arn, &err), 0);
	assert_string_equal(arn, "arn:x");
	free(arn);
	assert_int_equal(api_tuning_create_response_parse("{}", 2, &arn, &err),
			 ERR_INVALID);
	assert_null(arn);
	assert_string_equal(err.data, "no HyperParameterTuningJobArn");
	buf_release(&err);
}

static void test_describe(void **state)
{
	static const char full[] =
		"{\"HyperParameterTuningJobName\":\"tj\","
		"\"HyperParameterTuningJobStatus\":\"Completed\","
		"\"HyperParameterTuningJobConfig\":{\"Strategy\":\"Random\","
		"\"HyperParameterTuningJobObjective\":{\"Type\":\"Minimize\","
		"\"MetricName\":\"loss\"},\"ResourceLimits\":"
		"{\"MaxNumberOfTrainingJobs\":3,\"MaxParallelTrainingJobs\":2}},"
		"\"TrainingJobStatusCounters\":{\"Completed\":2,\"Stopped\":1},"
		"\"ObjectiveStatusCounters\":{\"Succeeded\":2,\"Failed\":1},"
		"\"BestTrainingJob\":{\"TrainingJobName\":\"tj-2\","
		"\"FinalHyperParameterTuningJobObjectiveMetric\":"
		"{\"MetricName\":\"loss\",\"Value\":0.25},"
		"\"TunedHyperParameters\":{\"x\":\"0.3\",\"n\":4}},"
		"\"CreationTime\":1700000000.5}";
	static const char odd[] =
		"{\"HyperParameterTuningJobConfig\":{\"Strategy\":5,"
		"\"HyperParameterTuningJobObjective\":null},"
		"\"BestTrainingJob\":null,\"CreationTime\":\"2024\"}";
	struct api_tuning_desc d;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(api_tuning_desc_parse(full, LEN(full), &d, &err), 0);
	assert_string_equal(d.name, "tj");
	assert_null(d.arn);
	assert_string_equal(d.strategy, "Random");
	assert_true(d.has_objective);
	assert_string_equal(d.objective_metric, "loss");
	assert_int_equal(d.max_jobs, 3);
	assert_int_equal(d.max_parallel, 2);
	assert_int_equal(d.jobs.completed, 2);
	assert_int_equal(d.jobs.stopped, 1);
	assert_int_equal(d.objectives_failed, 1);
	assert_non_null(d.best);
	assert_string_equal(d.best->name, "tj-2");
	assert_true(d.best->has_value);
	assert_true(d.best->value == 0.25);
	assert_int_equal(d.best->n_tuned, 2);
	assert_string_equal(d.best->tuned[0].name, "x");
	assert_string_equal(d.best->tuned[0].value, "0.3");
	assert_string_equal(d.best->tuned[1].name, "n");
	assert_null(d.best->tuned[1].value);
	assert_int_equal(d.creation_ms, 1700000000500LL);
	api_tuning_desc_release(&d);

	/* A member present but null still counts as present. */
	assert_int_equal(api_tuning_desc_parse(odd, LEN(odd), &d, &err), 0);
	assert_null(d.strategy);
	assert_true(d.has_objective);
	assert_null(d.objective_type);
	assert_non_null(d.best);
	assert_null(d.best->name);
	assert_false(d.best->has_value);
	assert_int_equal(d.creation_ms, 0);
	api_tuning_desc_release(&d);

	assert_int_equal(api_tuning_desc_parse("[1]", 3, &d, &err),
			 ERR_INVALID);
	assert_string_equal(err.data, "");
	assert_int_equal(api_tuning_desc_parse("{\"a\":", 5, &d, &err),
			 ERR_INVALID);
	assert_true(err.len > 0);
	buf_release(&err);
}

static void test_lists(void **state)
{
	static const char sums[] =
		"{\"HyperParameterTuningJobSummaries\":[{"
		"\"HyperParameterTuningJobName\":\"a\",\"Strategy\":\"Grid\","
		"\"ResourceLimits\":{\"MaxNumberOfTrainingJobs\":4},"
		"\"TrainingJobStatusCounters\":{\"InProgress\":1},"
		"\"CreationTime\":2},7]}";
	static const char kids[] =
		"{\"TrainingJobSummaries\":[{\"TrainingJobName\":\"k\","
		"\"ObjectiveStatus\":\"Pending\",\"TunedHyperParameters\":{}}]}";
	struct api_tuning_summary *s;
	struct api_tuning_child *c;
	struct buf err = BUF_INIT;
	size_t n;

	(void)state;
	assert_int_equal(
		api_tuning_summaries_parse(sums, LEN(sums), &s, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(s[0].name, "a");
	assert_null(s[0].status);
	assert_int_equal(s[0].max_jobs, 4);
	assert_int_equal(s[0].jobs.in_progress, 1);
	assert_int_equal(s[0].creation_ms, 2000);
	assert_null(s[1].name);
	api_tuning_summaries_free(s, n);

	assert_int_equal(
		api_tuning_children_parse(kids, LEN(kids), &c, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(c[0].name, "k");
	assert_string_equal(c[0].objective_status, "Pending");
	assert_int_equal(c[0].n_tuned, 0);
	api_tuning_children_free(c, n);

	assert_int_equal(api_tuning_children_parse(sums, LEN(sums), &c, &n,
						   &err),
			 ERR_INVALID);
	assert_null(c);
	assert_string_equal(err.data, "no TrainingJobSummaries");
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_create_response),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_lists),
	};

	return cmocka_run_group_tests_name("api/tuning_reply", tests, NULL,
					   NULL);
}
