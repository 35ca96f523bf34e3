/*
 * Tests db/warmpool.c: a job's pool from its insert (InUse) to Available,
 * Reused or Terminated; the compare-and-set that lets only one job take a
 * pool; what a Describe and a ListTrainingJobs read of it; and that the
 * state is there after the store is opened again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "db/run.h"
#include "db/warmpool.h"
#include "common/buf.h"
#include "common/err.h"

#include "tests/db/fixture.h"

static void insert(struct db *db, const char *name, int keep, const char *key)
{
	struct buf err = BUF_INIT;
	struct db_job j;

	memset(&j, 0, sizeof(j));
	j.name = (char *)name;
	j.arn = (char *)name;
	j.status = (char *)"InProgress";
	j.secondary_status = (char *)"Starting";
	j.request_json = (char *)"{\"ResourceConfig\":{}}";
	j.instance_type = (char *)"ml.m5.large";
	j.instance_count = 2;
	j.creation_ms = T0;
	j.owner = (char *)"alice";
	j.keep_alive_s = keep;
	j.wp_key = (char *)key;
	assert_int_equal(db_job_insert(db, &j, "Starting", &err), 0);
	buf_release(&err);
}

static void expect_status(struct db *db, const char *name, const char *want,
			  const char *reused_by)
{
	struct buf err = BUF_INIT;
	struct db_job j;

	assert_int_equal(db_job_get(db, name, &j, &err), 0);
	if (want)
		assert_string_equal(j.wp_status, want);
	else
		assert_null(j.wp_status);
	if (reused_by)
		assert_string_equal(j.wp_reused_by, reused_by);
	db_job_release(&j);
	buf_release(&err);
}

static void test_lifecycle(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	const char *hosts[] = { "h2", "h1" };
	struct db_warm_pool *p = NULL;
	struct db_job j;
	size_t n = 0;

	insert(f->db, "a", 60, "alice\nK");
	insert(f->db, "b", 5, "alice\nK");
	insert(f->db, "plain", 0, NULL);
	expect_status(f->db, "a", "InUse", NULL);
	expect_status(f->db, "plain", NULL, NULL);
	/* A job without a pool has none to end. */
	assert_int_equal(db_warm_pool_end_job(f->db, "plain", hosts, 2,
					      T0 + 1000, &err),
			 ERR_CONFLICT);
	assert_int_equal(
		db_warm_pool_end_job(f->db, "a", hosts, 2, T0 + 1000, &err), 0);
	assert_int_equal(db_warm_pools_available(f->db, &p, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(p[0].job, "a");
	assert_string_equal(p[0].key, "alice\nK");
	assert_int_equal(p[0].n_hosts, 2);
	assert_string_equal(p[0].hosts[0], "h2");
	assert_string_equal(p[0].hosts[1], "h1");
	assert_int_equal(p[0].keep_alive_s, 60);
	assert_int_equal(p[0].since_ms, T0 + 1000);
	db_warm_pools_free(p, n);

	/* b takes it: its attempt and the Reused mark in one write. */
	assert_int_equal(db_attempt_start_warm(f->db, "b", 1, 29500, hosts, 2,
					       T0 + 4000, "a", &err),
			 0);
	expect_status(f->db, "a", "Reused", "b");
	assert_int_equal(db_job_get(f->db, "a", &j, &err), 0);
	assert_int_equal(j.wp_end_ms - j.wp_since_ms, 3000);
	db_job_release(&j);
	/* Nobody takes it twice, and a lost race starts nothing. */
	assert_int_equal(db_attempt_start_warm(f->db, "plain", 1, 29500, hosts,
					       2, T0 + 5000, "a", &err),
			 ERR_CONFLICT);
	assert_int_equal(db_job_get(f->db, "plain", &j, &err), 0);
	assert_int_equal(j.attempt, 0);
	db_job_release(&j);
	assert_int_equal(db_warm_pools_available(f->db, &p, &n, &err), 0);
	assert_int_equal(n, 0);
	db_warm_pools_free(p, n);

	/* b's own pool: Available, then its period runs out. */
	assert_int_equal(
		db_warm_pool_end_job(f->db, "b", hosts, 2, T0 + 9000, &err), 0);
	assert_int_equal(db_warm_pool_terminate(f->db, "b", T0 + 14000, &err),
			 0);
	assert_int_equal(db_warm_pool_terminate(f->db, "b", T0 + 15000, &err),
			 ERR_CONFLICT);
	expect_status(f->db, "b", "Terminated", NULL);
	buf_release(&err);
}

static void test_end_without_hosts(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;

	insert(f->db, "c", 60, "alice\nK");
	assert_int_equal(db_warm_pool_end_job(f->db, "c", NULL, 0, T0, &err),
			 0);
	expect_status(f->db, "c", "Terminated", NULL);
	buf_release(&err);
}

static void test_keep_alive(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	const char *hosts[] = { "h1" };
	struct db_job j;

	insert(f->db, "d", 60, "alice\nK");
	assert_int_equal(db_warm_pool_set_keep_alive(f->db, "d", "InUse", 120,
						     "{\"x\":1}", T0, &err),
			 0);
	assert_int_equal(db_job_get(f->db, "d", &j, &err), 0);
	assert_int_equal(j.keep_alive_s, 120);
	assert_string_equal(j.request_json, "{\"x\":1}");
	db_job_release(&j);
	/* The status moved on: nothing changes. */
	assert_int_equal(db_warm_pool_set_keep_alive(f->db, "d", "Available",
						     30, "{}", T0, &err),
			 ERR_CONFLICT);
	assert_int_equal(db_warm_pool_end_job(f->db, "d", hosts, 1, T0, &err),
			 0);
	/* 0 ends an Available pool at once. */
	assert_int_equal(db_warm_pool_set_keep_alive(f->db, "d", "Available", 0,
						     "{}", T0 + 2000, &err),
			 0);
	expect_status(f->db, "d", "Terminated", NULL);
	buf_release(&err);
}

static void test_list_and_reopen(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	const char *hosts[] = { "h3" };
	struct db_list_query q;
	struct db_job *jobs = NULL;
	char *next = NULL;
	size_t n = 0, i;

	insert(f->db, "e", 60, "alice\nK");
	insert(f->db, "g", 60, "alice\nK");
	insert(f->db, "h", 0, NULL);
	assert_int_equal(db_warm_pool_end_job(f->db, "e", hosts, 1, T0, &err),
			 0);
	memset(&q, 0, sizeof(q));
	q.limit = 10;
	q.warm_pool_status = "Available";
	assert_int_equal(db_job_list(f->db, &q, &jobs, &n, &next, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(jobs[0].name, "e");
	assert_string_equal(jobs[0].wp_status, "Available");
	assert_int_equal(jobs[0].wp_since_ms, T0);
	for (i = 0; i < n; i++)
		db_job_release(&jobs[i]);
	free(jobs);
	free(next);

	db_close(f->db);
	assert_int_equal(db_open(f->path, 2, &f->db, &err), 0);
	expect_status(f->db, "e", "Available", NULL);
	expect_status(f->db, "g", "InUse", NULL);
	expect_status(f->db, "h", NULL, NULL);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lifecycle, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_end_without_hosts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_keep_alive, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_list_and_reopen, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
