/*
 * Tests db/telemetry.c on a real SQLite file: samples and job rows are
 * stored and read back in time order, a sample stored twice is kept once,
 * a range with more samples than the limit answers the newest and says
 * so, retention deletes exactly the old rows, the store opens again with
 * its data, and a store of a newer schema is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/telemetry.h"
#include "common/buf.h"
#include "common/err.h"

struct fx {
	char dir[64];
	char path[128];
	struct db_tm *t;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct buf err = BUF_INIT;

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_tm.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/telemetry.db", f->dir);
	assert_int_equal(db_tm_open(f->path, &f->t, &err), 0);
	buf_release(&err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	db_tm_close(f->t);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static struct tm_gpu_sample gpu = { 3, 55.5, 10, 40 };
static struct tm_rank_sample rank = {
	.job = (char *)"job-a",
	.job_uid = (char *)"00ff",
	.attempt = 1,
	.algo = (char *)"algo-1",
	.cpu_percent = 180.0,
	.rss_bytes = 4096,
	.procs = 2,
	.run_ns = -1,
	.wait_ns = -1,
	.top_rank = -1,
};

static void sample(struct tm_host_sample *s, int64_t ts, double cpu,
		   int with_rank)
{
	memset(s, 0, sizeof(*s));
	s->ts_ms = ts;
	s->cpu_percent = cpu;
	s->cpus = 4;
	s->mem_used = 50;
	s->mem_total = 200;
	s->mem_limit = -1;
	s->disk_read = ts;
	s->fs_used = 1;
	s->fs_total = 4;
	s->gpus = &gpu;
	s->n_gpus = 1;
	s->ranks = with_rank ? &rank : NULL;
	s->n_ranks = with_rank ? 1 : 0;
}

static void release_all(struct tm_host_sample *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		tm_host_sample_release(&s[i]);
	free(s);
}

static void test_store_and_read(void **state)
{
	struct fx *f = *state;
	struct tm_host_sample in[3], *out = NULL;
	struct db_tm_point *pts = NULL;
	struct buf err = BUF_INIT;
	char **algos = NULL;
	int64_t *last = NULL;
	size_t n = 0;
	int truncated = 1;

	sample(&in[0], 1000, 10.0, 1);
	sample(&in[1], 2000, 20.0, 1);
	sample(&in[2], 3000, 30.0, 0);
	assert_int_equal(db_tm_add(f->t, "h1", in, 3, &err), 0);
	/* Sent again after a lost answer: kept once. */
	assert_int_equal(db_tm_add(f->t, "h1", in, 2, &err), 0);
	assert_int_equal(db_tm_add(f->t, "h2", in, 1, &err), 0);
	assert_int_equal(db_tm_host_range(f->t, "h1", 0, 10000, 100, &out, &n,
					  &truncated, &err),
			 0);
	assert_int_equal(n, 3);
	assert_false(truncated);
	assert_int_equal(out[0].ts_ms, 1000);
	assert_int_equal(out[2].ts_ms, 3000);
	assert_true(out[1].cpu_percent == 20.0);
	assert_int_equal(out[1].cpus, 4);
	assert_int_equal(out[1].mem_limit, -1);
	assert_int_equal(out[1].n_gpus, 1);
	assert_int_equal(out[1].gpus[0].index, 3);
	assert_true(out[1].gpus[0].util_percent == 55.5);
	assert_int_equal(out[1].gpus[0].mem_total, 40);
	release_all(out, n);

	/* A limit keeps the newest. */
	assert_int_equal(db_tm_host_range(f->t, "h1", 0, 10000, 2, &out, &n,
					  &truncated, &err),
			 0);
	assert_int_equal(n, 2);
	assert_true(truncated);
	assert_int_equal(out[0].ts_ms, 2000);
	assert_int_equal(out[1].ts_ms, 3000);
	release_all(out, n);
	/* [start, end) */
	assert_int_equal(db_tm_host_range(f->t, "h1", 2000, 3000, 10, &out, &n,
					  &truncated, &err),
			 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].ts_ms, 2000);
	release_all(out, n);

	/* Job rows: the host's figures as SageMaker's metrics. */
	assert_int_equal(db_tm_job_range(f->t, "job-a", "00ff", "algo-1", 0,
					 10000, &pts, &n, &err),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(pts[0].ts_ms, 1000);
	assert_true(pts[1].cores_percent == 80.0);
	assert_true(pts[1].mem_percent == 25.0);
	assert_true(pts[1].disk_percent == 25.0);
	assert_true(pts[1].gpu_percent == 55.5);
	assert_true(pts[1].gpu_mem_percent == 25.0);
	assert_true(pts[1].cpu_percent == 180.0);
	assert_int_equal(pts[1].rss_bytes, 4096);
	/* The row names its attempt, host and the host's CPUs. */
	assert_int_equal(pts[1].attempt, 1);
	assert_string_equal(pts[1].host, "h1");
	assert_int_equal(pts[1].cpus, 4);
	db_tm_points_free(pts, n);
	/* Another uid (a new job of the same name) sees nothing. */
	assert_int_equal(db_tm_job_range(f->t, "job-a", "0abc", "algo-1", 0,
					 10000, &pts, &n, &err),
			 0);
	assert_int_equal(n, 0);
	db_tm_points_free(pts, n);
	assert_int_equal(db_tm_job_algos(f->t, "job-a", "00ff", &algos, &last,
					 &n, &err),
			 0);
	assert_int_equal(n, 1);
	assert_string_equal(algos[0], "algo-1");
	assert_int_equal(last[0], 2000);
	free(algos[0]);
	free(algos);
	free(last);
	buf_release(&err);
}

static void test_retention(void **state)
{
	struct fx *f = *state;
	struct tm_host_sample in[4], *out = NULL;
	struct db_tm_point *pts = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0, i;
	int truncated;

	for (i = 0; i < 4; i++)
		sample(&in[i], 1000 * (int64_t)(i + 1), 1.0, 1);
	assert_int_equal(db_tm_add(f->t, "h1", in, 4, &err), 0);
	/* Host rows before 3000 go, job rows before 2000. */
	assert_int_equal(db_tm_prune(f->t, 3000, 2000, &err), 2 + 1);
	assert_int_equal(db_tm_host_range(f->t, "h1", 0, 10000, 10, &out, &n,
					  &truncated, &err),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(out[0].ts_ms, 3000);
	release_all(out, n);
	assert_int_equal(db_tm_job_range(f->t, "job-a", NULL, "algo-1", 0,
					 10000, &pts, &n, &err),
			 0);
	assert_int_equal(n, 3);
	assert_int_equal(pts[0].ts_ms, 2000);
	db_tm_points_free(pts, n);
	assert_int_equal(db_tm_prune(f->t, 3000, 2000, &err), 0);

	/* Reopened, the rows are there. */
	db_tm_close(f->t);
	assert_int_equal(db_tm_open(f->path, &f->t, &err), 0);
	assert_int_equal(db_tm_host_range(f->t, "h1", 0, 10000, 10, &out, &n,
					  &truncated, &err),
			 0);
	assert_int_equal(n, 2);
	release_all(out, n);
	buf_release(&err);
}

static void test_newer_schema(void **state)
{
	struct fx *f = *state;
	struct buf err = BUF_INIT;
	struct db_tm *t = NULL;
	sqlite3 *c;

	db_tm_close(f->t);
	f->t = NULL;
	assert_int_equal(sqlite3_open(f->path, &c), SQLITE_OK);
	assert_int_equal(sqlite3_exec(c, "PRAGMA user_version = 99", NULL, NULL,
				      NULL),
			 SQLITE_OK);
	sqlite3_close(c);
	assert_int_equal(db_tm_open(f->path, &t, &err), ERR_DB);
	assert_null(t);
	assert_non_null(strstr(err.data, "newer"));
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_store_and_read, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_retention, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_newer_schema, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
