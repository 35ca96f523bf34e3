/*
 * Tests controller/obs/telemetry.c and the host metrics of
 * controller/obs/cwmetrics.c on a real store: samples are kept only within the
 * retention, not in the future and 500 ms apart; a host's figures go only
 * to the jobs it holds an assignment of; the latest sample feeds /metrics;
 * CloudWatch answers CPUUtilization of Host=<job>/algo-1 in Percent, summed
 * over the cores, lists the five host metrics, and nothing for a job the
 * caller may not read.
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
#include "controller/hosts.h"
#include "controller/obs/telemetry.h"
#include "db/db.h"
#include "db/run.h"
#include "db/telemetry.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"

struct fixture {
	char dir[256];
	struct ctrl_ctx ctx;
	char *uid;
};

static void insert_job(struct fixture *f, const char *name, const char *owner)
{
	const char *hosts[] = { "h1" };
	struct buf err = BUF_INIT;
	struct db_job j;

	memset(&j, 0, sizeof(j));
	j.name = (char *)name;
	j.owner = (char *)owner;
	j.arn = (char *)"arn:aws:sagemaker:us-east-1:123456789012:"
			"training-job/x";
	j.status = (char *)"InProgress";
	j.secondary_status = (char *)"Training";
	j.request_json = (char *)"{}";
	j.instance_count = 1;
	j.creation_ms = time_now_ms() - 60000;
	j.last_modified_ms = j.creation_ms;
	assert_int_equal(db_job_insert(f->ctx.db, &j, "Starting", &err), 0);
	assert_int_equal(db_attempt_start(f->ctx.db, name, 1, 30000, hosts, 1,
					  j.creation_ms, &err),
			 0);
	buf_release(&err);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct buf err = BUF_INIT;
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX];
	struct db_job job;

	log_set_level(LOG_ERROR);
	snprintf(f->dir, sizeof(f->dir), "%s/tctl-tm-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	ctrl_ctx_init(&f->ctx);
	f->ctx.cfg.state_dir = strdup(f->dir);
	f->ctx.cfg.tm_retention_h = 24;
	f->ctx.cfg.tm_job_retention_d = 15;
	snprintf(path, sizeof(path), "%s/trainctl.db", f->dir);
	assert_int_equal(db_open(path, 1, &f->ctx.db, &err), 0);
	assert_int_equal(ctrl_tm_open(&f->ctx, &err), 0);
	pthread_mutex_lock(&f->ctx.hosts_lock);
	(void)ctrl_hosts_add(&f->ctx, "h1", "token-1");
	(void)ctrl_hosts_add(&f->ctx, "h2", "token-2");
	pthread_mutex_unlock(&f->ctx.hosts_lock);
	insert_job(f, "job-a", "alice");
	assert_int_equal(db_job_get(f->ctx.db, "job-a", &job, &err), 0);
	f->uid = strdup(job.uid);
	db_job_release(&job);
	buf_release(&err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	ctrl_tm_close(&f->ctx);
	ctx_fixture_close(&f->ctx, f->dir);
	free(f->uid);
	free(f);
	return 0;
}

/* A sample at ts of 4 CPUs at cpu %, with rank entries r[0..n). */
static void sample(struct tm_host_sample *s, int64_t ts, double cpu,
		   struct tm_rank_sample *r, size_t n)
{
	memset(s, 0, sizeof(*s));
	s->ts_ms = ts;
	s->cpu_percent = cpu;
	s->cpus = 4;
	s->mem_used = 1;
	s->mem_total = 4;
	s->mem_limit = -1;
	s->fs_used = 1;
	s->fs_total = 2;
	s->ranks = r;
	s->n_ranks = n;
}

static size_t host_rows(struct fixture *f, const char *host)
{
	struct tm_host_sample *s = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0, i;
	int truncated;

	assert_int_equal(db_tm_host_range(f->ctx.tm_db, host, 0, INT64_MAX, 100,
					  &s, &n, &truncated, &err),
			 0);
	for (i = 0; i < n; i++)
		tm_host_sample_release(&s[i]);
	free(s);
	buf_release(&err);
	return n;
}

static void test_ingest(void **state)
{
	struct fixture *f = *state;
	int64_t now = time_now_ms();
	struct tm_rank_sample r[3] = {
		{ (char *)"job-a", f->uid, 1, (char *)"algo-1", 90.0, 100, 1, -1, -1, -1 },
		/* Not this host's: another job, another algo. */
		{ (char *)"job-b", NULL, 1, (char *)"algo-1", 90.0, 100, 1, -1, -1, -1 },
		{ (char *)"job-a", f->uid, 1, (char *)"algo-2", 90.0, 100, 1, -1, -1, -1 },
	};
	struct tm_host_sample s[6];
	struct buf err = BUF_INIT, out = BUF_INIT;
	char **algos = NULL;
	int64_t *last = NULL;
	size_t n = 0;

	sample(&s[0], now - 25 * 3600 * 1000LL, 10.0, NULL, 0); /* too old */
	sample(&s[1], now - 3000, 20.0, r, 3);
	sample(&s[2], now - 2900, 30.0, NULL, 0); /* 100 ms later */
	sample(&s[3], now - 2000, 40.0, r, 3);
	sample(&s[4], now + 10 * 60 * 1000, 50.0, NULL, 0); /* future */
	sample(&s[5], now - 1000, 60.0, NULL, 0);
	ctrl_tm_ingest(&f->ctx, "h1", s, 6);
	assert_int_equal(host_rows(f, "h1"), 3);
	assert_int_equal(host_rows(f, "h2"), 0);
	/* The latest sample, without the entries of other jobs. */
	pthread_mutex_lock(&f->ctx.hosts_lock);
	{
		struct ctrl_host *h = ctrl_hosts_find(&f->ctx, "h1");

		assert_true(h->have_tm);
		assert_int_equal(h->tm_latest.ts_ms, now - 1000);
		assert_true(h->tm_latest.cpu_percent == 60.0);
	}
	pthread_mutex_unlock(&f->ctx.hosts_lock);
	assert_int_equal(db_tm_job_algos(f->ctx.tm_db, "job-a", f->uid, &algos,
					 &last, &n, &err),
			 0);
	assert_int_equal(n, 1);
	assert_string_equal(algos[0], "algo-1");
	free(algos[0]);
	free(algos);
	free(last);
	assert_int_equal(db_tm_job_algos(f->ctx.tm_db, "job-b", NULL, &algos,
					 &last, &n, &err),
			 0);
	assert_int_equal(n, 0);
	free(algos);
	free(last);
	/* The same sample again (a lost answer) adds nothing. */
	ctrl_tm_ingest(&f->ctx, "h1", &s[5], 1);
	assert_int_equal(host_rows(f, "h1"), 3);

	ctrl_tm_render_metrics(&f->ctx, &out);
	assert_non_null(strstr(out.data,
			       "trainctl_host_cpu_percent{host=\"h1\"} "
			       "60\n"));
	assert_non_null(
		strstr(out.data, "trainctl_host_cpus{host=\"h1\"} 4\n"));
	assert_null(strstr(out.data, "{host=\"h2\"}"));
	buf_release(&out);
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
	buf_reset(out);
	(void)buf_add(out, resp.body.data, resp.body.len);
	status = resp.status;
	buf_release(&resp.body);
	buf_release(&target);
	return status;
}

static void test_cloudwatch(void **state)
{
	struct fixture *f = *state;
	int64_t now = time_now_ms(), t = (now / 60000 - 2) * 60000;
	struct tm_rank_sample r = {
		(char *)"job-a", f->uid, 1, (char *)"algo-1", 90.0, 100, 1,
		-1, -1, -1
	};
	struct ctrl_caller bob = { NULL, "bob", NULL, 0 };
	struct tm_host_sample s[2];
	struct buf body = BUF_INIT, out = BUF_INIT;

	sample(&s[0], t + 1000, 25.0, &r, 1);
	sample(&s[1], t + 6000, 50.0, &r, 1);
	ctrl_tm_ingest(&f->ctx, "h1", s, 2);
	(void)buf_addf(&body,
		       "{\"Namespace\":\"/aws/sagemaker/TrainingJobs\","
		       "\"MetricName\":\"CPUUtilization\",\"Dimensions\":[{"
		       "\"Name\":\"Host\",\"Value\":\"job-a/algo-1\"}],"
		       "\"StartTime\":%lld,\"EndTime\":%lld,\"Period\":60,"
		       "\"Statistics\":[\"Maximum\",\"SampleCount\"]}",
		       (long long)(t / 1000), (long long)(now / 1000 + 60));
	assert_int_equal(call(f, &ctrl_caller_admin, "GetMetricStatistics",
			      body.data, &out),
			 200);
	/* Summed over 4 cores, as SageMaker. */
	if (!strstr(out.data, "\"SampleCount\":2.0") ||
	    !strstr(out.data, "\"Maximum\":200.0") ||
	    !strstr(out.data, "\"Unit\":\"Percent\""))
		fail_msg("%s", out.data);
	/* Another user's job has no data. */
	assert_int_equal(call(f, &bob, "GetMetricStatistics", body.data, &out),
			 200);
	assert_null(strstr(out.data, "SampleCount\":"));
	assert_int_equal(call(f, &ctrl_caller_admin, "ListMetrics",
			      "{\"Dimensions\":[{\"Name\":\"Host\"}]}", &out),
			 200);
	if (!strstr(out.data, "\"MetricName\":\"GPUMemoryUtilization\"") ||
	    !strstr(out.data, "\"Value\":\"job-a/algo-1\"") ||
	    strstr(out.data, "TrainingJobName"))
		fail_msg("%s", out.data);
	assert_int_equal(call(f, &ctrl_caller_admin, "ListMetrics",
			      "{\"Dimensions\":[{\"Name\":\"Host\",\"Value\":"
			      "\"job-a/algo-9\"}]}",
			      &out),
			 200);
	assert_null(strstr(out.data, "MetricName"));
	buf_release(&body);
	buf_release(&out);
}

/* Rows a deleted job of the same name left behind are not the job's. */
static void test_old_job_rows(void **state)
{
	struct fixture *f = *state;
	int64_t now = time_now_ms();
	struct tm_rank_sample r = { (char *)"job-a",
				     (char *)"dead",
				     1,
				     (char *)"algo-3",
				     90.0,
				     100,
				     1,
				     -1,
				     -1,
				     -1 };
	struct tm_host_sample s;
	struct buf body = BUF_INIT, out = BUF_INIT, err = BUF_INIT;

	sample(&s, now - 5000, 25.0, &r, 1);
	assert_int_equal(db_tm_add(f->ctx.tm_db, "h1", &s, 1, &err), 0);
	assert_int_equal(call(f, &ctrl_caller_admin, "ListMetrics",
			      "{\"Dimensions\":[{\"Name\":\"Host\"}]}", &out),
			 200);
	assert_null(strstr(out.data, "job-a/algo-3"));
	(void)buf_addf(&body,
		       "{\"Namespace\":\"/aws/sagemaker/TrainingJobs\","
		       "\"MetricName\":\"CPUUtilization\",\"Dimensions\":[{"
		       "\"Name\":\"Host\",\"Value\":\"job-a/algo-3\"}],"
		       "\"StartTime\":%lld,\"EndTime\":%lld,\"Period\":60,"
		       "\"Statistics\":[\"Maximum\"]}",
		       (long long)(now / 1000 - 600),
		       (long long)(now / 1000 + 60));
	assert_int_equal(call(f, &ctrl_caller_admin, "GetMetricStatistics",
			      body.data, &out),
			 200);
	assert_null(strstr(out.data, "Maximum\":"));
	buf_release(&body);
	buf_release(&out);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ingest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cloudwatch, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_old_job_rows, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
