/*
 * Tests controller/obs/cwmetrics.c against a real store in a temporary
 * directory, with points at known times: the periods and statistics of
 * GetMetricStatistics, GetMetricData's pages, ListMetrics' pages over more
 * than 500 metrics, and what a user key sees.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/cwmetrics.h"
#include "controller/ctrl.h"
#include "tests/controller/ctx_fixture.h"
#include "controller/obs/cwmetrics.h"
#include "db/db.h"
#include "db/run.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"

/* A whole hour a day ago: StartTime rounds down to the minute. */
static int64_t t0;

struct fixture {
	char dir[256];
	struct ctrl_ctx ctx;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	t0 = (time_now_ms() / 3600000 - 24) * 3600000;
	if (ctx_fixture_open(&f->ctx, f->dir, sizeof(f->dir), "cwm")) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	ctx_fixture_close(&f->ctx, f->dir);
	free(f);
	return 0;
}

static void insert_job(struct db *db, const char *name, const char *owner)
{
	struct db_job j;
	struct buf err = BUF_INIT;

	memset(&j, 0, sizeof(j));
	j.name = (char *)name;
	j.owner = (char *)owner;
	j.arn = (char *)"arn:aws:sagemaker:us-east-1:123456789012:"
			"training-job/x";
	j.status = (char *)"InProgress";
	j.secondary_status = (char *)"Training";
	j.request_json = (char *)"{}";
	j.instance_count = 1;
	j.creation_ms = t0;
	assert_int_equal(
		db_job_insert(db, &j, "Starting the training job", &err), 0);
	buf_release(&err);
}

static void add_point(struct db *db, const char *job, const char *name,
		      double v, int64_t ts_ms)
{
	struct db_metric m = { (char *)name, v, ts_ms, 1 };
	struct buf err = BUF_INIT;

	assert_int_equal(db_metrics_add(db, job, &m, 1, &err), 0);
	buf_release(&err);
}

/* Serves a JSON 1.0 request of op; the answer's body in out. */
static int call(struct fixture *f, const struct ctrl_caller *who,
		const char *op, const char *body, struct buf *out)
{
	struct ctrl_response resp;
	struct buf target = BUF_INIT;
	const char *ct = NULL;
	int status;

	memset(&resp, 0, sizeof(resp));
	buf_init(&resp.body, 0);
	(void)buf_addf(&target, "%s%s", API_CWM_TARGET_PREFIX, op);
	ctrl_cwm_serve(&f->ctx, who, API_CWM_JSON, "POST", "/", target.data,
		       body, strlen(body), &resp, &ct);
	assert_string_equal(ct, "application/x-amz-json-1.0");
	buf_reset(out);
	(void)buf_add(out, resp.body.data, resp.body.len);
	status = resp.status;
	buf_release(&resp.body);
	buf_release(&target);
	return status;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	while ((s = strstr(s, what))) {
		n++;
		s += strlen(what);
	}
	return n;
}

#define METRIC(job)                                          \
	"\"Namespace\":\"/aws/sagemaker/TrainingJobs\","     \
	"\"MetricName\":\"loss\",\"Dimensions\":[{\"Name\":" \
	"\"TrainingJobName\",\"Value\":\"" job "\"}]"

/*
 * loss of job-a: 1, 2, 3 in the first minute (at 0, 10, 50 s), 10 at
 * 61 s, 20 and 40 at 170 and 175 s: three periods of 60 s.
 */
static void add_loss(struct fixture *f)
{
	insert_job(f->ctx.db, "job-a", "alice");
	add_point(f->ctx.db, "job-a", "loss", 1, t0);
	add_point(f->ctx.db, "job-a", "loss", 2, t0 + 10000);
	add_point(f->ctx.db, "job-a", "loss", 3, t0 + 50000);
	add_point(f->ctx.db, "job-a", "loss", 10, t0 + 61000);
	add_point(f->ctx.db, "job-a", "loss", 20, t0 + 170000);
	add_point(f->ctx.db, "job-a", "loss", 40, t0 + 175000);
}

static void test_statistics(void **state)
{
	struct fixture *f = *state;
	struct buf body = BUF_INIT, out = BUF_INIT, want = BUF_INIT;

	add_loss(f);
	(void)buf_addf(
		&body,
		"{" METRIC(
			"job-a") ",\"StartTime\":%lld,"
				 "\"EndTime\":%lld,\"Period\":60,\"Statistics\":["
				 "\"SampleCount\",\"Average\",\"Sum\",\"Minimum\","
				 "\"Maximum\"]}",
		(long long)(t0 / 1000 + 5), (long long)(t0 / 1000 + 600));
	assert_int_equal(call(f, &ctrl_caller_admin, "GetMetricStatistics",
			      body.data, &out),
			 200);
	/* StartTime t0+5 s rounds down to t0: the point at t0 counts. */
	(void)buf_addf(&want,
		       "{\"Timestamp\":%lld.0,\"SampleCount\":3.0,"
		       "\"Average\":2.0,\"Sum\":6.0,\"Minimum\":1.0,"
		       "\"Maximum\":3.0,\"Unit\":\"None\"}",
		       (long long)(t0 / 1000));
	if (!strstr(out.data, want.data))
		fail_msg("%s\nlacks %s", out.data, want.data);
	buf_reset(&want);
	(void)buf_addf(&want,
		       "{\"Timestamp\":%lld.0,\"SampleCount\":2.0,"
		       "\"Average\":30.0,\"Sum\":60.0,\"Minimum\":20.0,"
		       "\"Maximum\":40.0,\"Unit\":\"None\"}",
		       (long long)(t0 / 1000 + 120));
	if (!strstr(out.data, want.data))
		fail_msg("%s\nlacks %s", out.data, want.data);
	assert_int_equal(count(out.data, "\"Timestamp\""), 3);

	/* Percentiles by nearest rank; EndTime is exclusive. */
	buf_reset(&body);
	(void)buf_addf(
		&body,
		"{" METRIC(
			"job-a") ",\"StartTime\":%lld,"
				 "\"EndTime\":%lld,\"Period\":300,"
				 "\"ExtendedStatistics\":[\"p50\",\"p100\",\"p0\"]}",
		(long long)(t0 / 1000), (long long)(t0 / 1000 + 175));
	assert_int_equal(call(f, &ctrl_caller_admin, "GetMetricStatistics",
			      body.data, &out),
			 200);
	assert_non_null(strstr(out.data, "\"ExtendedStatistics\":{\"p50\":3.0,"
					 "\"p100\":20.0,\"p0\":1.0}"));
	buf_release(&body);
	buf_release(&out);
	buf_release(&want);
}

static void test_data_pages(void **state)
{
	struct fixture *f = *state;
	struct buf body = BUF_INIT, out = BUF_INIT, all = BUF_INIT;
	char token[64] = "";
	int pages = 0;

	add_loss(f);
	do {
		const char *t;

		buf_reset(&body);
		(void)buf_addf(
			&body,
			"{\"MetricDataQueries\":[{\"Id\":\"s\","
			"\"MetricStat\":{\"Metric\":{" METRIC(
				"job-a") "},"
					 "\"Period\":60,\"Stat\":\"Sum\"}},{\"Id\":\"m\","
					 "\"Label\":\"max\",\"MetricStat\":{\"Metric\":"
					 "{" METRIC(
						 "job-a") "},\"Period\":60,\"Stat\":"
							  "\"Maximum\"}}],\"StartTime\":%lld,\"EndTime\":"
							  "%lld,\"ScanBy\":\"TimestampAscending\","
							  "\"MaxDatapoints\":4%s%s%s}",
			(long long)(t0 / 1000), (long long)(t0 / 1000 + 600),
			*token ? ",\"NextToken\":\"" : "", token,
			*token ? "\"" : "");
		assert_int_equal(call(f, &ctrl_caller_admin, "GetMetricData",
				      body.data, &out),
				 200);
		(void)buf_adds(&all, out.data);
		t = strstr(out.data, "\"NextToken\":\"");
		token[0] = '\0';
		if (t)
			(void)sscanf(t + 13, "%63[^\"]", token);
		pages++;
	} while (*token && pages < 10);
	/* Six points (three periods, two queries), four a page. */
	assert_int_equal(pages, 2);
	assert_non_null(strstr(all.data, "\"Values\":[6.0,10.0,60.0]"));
	assert_non_null(strstr(all.data, "\"Values\":[3.0]"));
	assert_non_null(strstr(all.data, "\"Values\":[10.0,40.0]"));
	assert_non_null(strstr(all.data, "\"Label\":\"max\""));
	assert_int_equal(count(all.data, "PartialData"), 1);
	buf_release(&body);
	buf_release(&out);
	buf_release(&all);
}

static void test_list_pages_and_owners(void **state)
{
	struct fixture *f = *state;
	struct buf out = BUF_INIT, body = BUF_INIT;
	struct ctrl_caller bob = { NULL, "bob", NULL, 0 };
	char name[32], metric[32], token[64] = "";
	size_t total = 0;
	int i, k, pages = 0;

	/* 26 jobs of alice with 20 metrics each: 520, two pages. */
	for (i = 0; i < 26; i++) {
		snprintf(name, sizeof(name), "job-%02d", i);
		insert_job(f->ctx.db, name, "alice");
		for (k = 0; k < 20; k++) {
			snprintf(metric, sizeof(metric), "m%02d", k);
			add_point(f->ctx.db, name, metric, k, t0 + k);
		}
	}
	insert_job(f->ctx.db, "bobs-job", "bob");
	add_point(f->ctx.db, "bobs-job", "loss", 1, t0);
	do {
		const char *t;

		buf_reset(&body);
		(void)buf_addf(&body, "{%s%s%s}",
			       *token ? "\"NextToken\":\"" : "", token,
			       *token ? "\"" : "");
		assert_int_equal(call(f, &ctrl_caller_admin, "ListMetrics",
				      body.data, &out),
				 200);
		total += count(out.data, "\"MetricName\"");
		t = strstr(out.data, "\"NextToken\":\"");
		token[0] = '\0';
		if (t)
			(void)sscanf(t + 13, "%63[^\"]", token);
		pages++;
	} while (*token && pages < 10);
	assert_int_equal(pages, 2);
	assert_int_equal(total, 521);

	/* bob sees his job only, and no data of alice's. */
	assert_int_equal(call(f, &bob, "ListMetrics", "{}", &out), 200);
	assert_int_equal(count(out.data, "\"MetricName\""), 1);
	assert_non_null(strstr(out.data, "\"Value\":\"bobs-job\""));
	buf_reset(&body);
	(void)buf_addf(&body,
		       "{\"Namespace\":\"/aws/sagemaker/TrainingJobs\","
		       "\"MetricName\":\"m01\",\"Dimensions\":[{\"Name\":"
		       "\"TrainingJobName\",\"Value\":\"job-01\"}],"
		       "\"StartTime\":%lld,\"EndTime\":%lld,\"Period\":60,"
		       "\"Statistics\":[\"Sum\"]}",
		       (long long)(t0 / 1000), (long long)(t0 / 1000 + 60));
	assert_int_equal(call(f, &bob, "GetMetricStatistics", body.data, &out),
			 200);
	assert_non_null(strstr(out.data, "\"Datapoints\":[]"));
	assert_int_equal(call(f, &ctrl_caller_admin, "GetMetricStatistics",
			      body.data, &out),
			 200);
	assert_non_null(strstr(out.data, "\"Sum\":1.0"));

	/* A token not given by the service. */
	assert_int_equal(call(f, &ctrl_caller_admin, "ListMetrics",
			      "{\"NextToken\":\"cwm1:99999\"}", &out),
			 400);
	assert_non_null(strstr(out.data, "InvalidNextToken"));
	assert_int_equal(
		call(f, &ctrl_caller_admin, "PutMetricData", "{}", &out), 400);
	assert_non_null(strstr(out.data, "InvalidAction"));
	buf_release(&out);
	buf_release(&body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_statistics, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_data_pages, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_list_pages_and_owners,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
