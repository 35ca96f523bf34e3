/*
 * Tests db/goodput.c: an attempt's progress folded from batches that
 * arrive in any order (first and last report, furthest step, when it
 * went past the earlier attempts, stalls summed), lines of an unknown
 * attempt or another uid ignored, a job's times, the live and unsettled
 * lists, and settling an ended job into the totals exactly once.
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
#include "db/goodput.h"
#include "db/run.h"
#include "common/buf.h"
#include "common/err.h"

#include "tests/db/fixture.h"

static void insert(struct db *db, const char *name)
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
	j.instance_count = 1;
	j.creation_ms = T0;
	assert_int_equal(db_job_insert(db, &j, "Starting", &err), 0);
	buf_release(&err);
}

static void start(struct db *db, const char *name, int attempt, int64_t at)
{
	struct buf err = BUF_INIT;
	const char *hosts[] = { "h1" };

	assert_int_equal(db_attempt_start(db, name, attempt, 7000 + attempt,
					  hosts, 1, at, &err),
			 0);
	buf_release(&err);
}

/* Reports steps[i] at T0 + ms[i] for job's attempt, with stalls. */
static void report(struct db *db, const char *name, int attempt,
		   const int64_t *steps, const int64_t *ms, size_t n,
		   int64_t ckpt_ms, const char *uid)
{
	struct buf err = BUF_INIT;
	struct db_progress p;
	int64_t at[16];
	size_t i;

	assert_true(n <= 16);
	memset(&p, 0, sizeof(p));
	for (i = 0; i < n; i++) {
		at[i] = T0 + ms[i];
		if (!p.first_ms || at[i] < p.first_ms) {
			p.first_ms = at[i];
			p.first_step = steps[i];
		}
		if (at[i] > p.last_ms)
			p.last_ms = at[i];
		if (!i || steps[i] > p.max_step)
			p.max_step = steps[i];
	}
	p.steps = steps;
	p.steps_ms = at;
	p.n_steps = n;
	p.ckpt_ms = ckpt_ms;
	p.job_uid = uid;
	assert_int_equal(db_progress_add(db, name, attempt, &p, &err), 0);
	buf_release(&err);
}

static void attempts(struct db *db, const char *name,
		     struct db_goodput_attempt **a, size_t *n)
{
	struct buf err = BUF_INIT;

	assert_int_equal(db_goodput_attempts(db, name, a, n, &err), 0);
	buf_release(&err);
}

static void test_progress(void **state)
{
	struct fixture *f = *state;
	struct db_goodput_attempt *a;
	size_t n;
	const int64_t s1[] = { 1, 2, 3 }, m1[] = { 1000, 2000, 3000 };
	const int64_t s1b[] = { 4, 5 }, m1b[] = { 4000, 5000 };
	const int64_t s2b[] = { 6, 7 }, m2b[] = { 9000, 10000 };
	const int64_t s2a[] = { 4, 5 }, m2a[] = { 7000, 8000 };
	const int64_t s9[] = { 99 }, m9[] = { 500 };

	insert(f->db, "gp");
	start(f->db, "gp", 1, T0 + 100);
	report(f->db, "gp", 1, s1, m1, 3, 250, NULL);
	report(f->db, "gp", 1, s1b, m1b, 2, 100, NULL);
	/* An attempt that does not exist, and another job's uid. */
	report(f->db, "gp", 5, s9, m9, 1, 0, NULL);
	report(f->db, "gp", 1, s9, m9, 1, 0, "not-its-uid");
	start(f->db, "gp", 2, T0 + 6000);
	/* Attempt 2's batches out of order: steps 6, 7 first. */
	report(f->db, "gp", 2, s2b, m2b, 2, 0, NULL);
	report(f->db, "gp", 2, s2a, m2a, 2, 0, NULL);

	attempts(f->db, "gp", &a, &n);
	assert_int_equal(n, 2);
	assert_int_equal(a[0].attempt, 1);
	assert_int_equal(a[0].started_ms, T0 + 100);
	assert_int_equal(a[0].first_ms, T0 + 1000);
	assert_int_equal(a[0].first_step, 1);
	assert_int_equal(a[0].last_ms, T0 + 5000);
	assert_int_equal(a[0].max_step, 5);
	assert_int_equal(a[0].passed_ms, T0 + 1000);
	assert_int_equal(a[0].ckpt_ms, 350);
	assert_int_equal(a[1].first_ms, T0 + 7000);
	assert_int_equal(a[1].first_step, 4);
	assert_int_equal(a[1].last_ms, T0 + 10000);
	assert_int_equal(a[1].max_step, 7);
	assert_int_equal(a[1].passed_ms, T0 + 9000);
	assert_int_equal(a[1].ckpt_ms, 0);
	free(a);
}

static void test_settle(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	static const char *const names[] = { "productive", "redone" };
	const int64_t ms[] = { 1500, 250 };
	int64_t tot[2], created, end, modified, queued;
	struct db_state_change ch;
	char **v;
	size_t n, i;

	insert(f->db, "done");
	insert(f->db, "waits");
	insert(f->db, "runs");
	start(f->db, "runs", 1, T0 + 10);
	assert_int_equal(db_goodput_times(f->db, "nope", &created, &end,
					  &modified, &err),
			 ERR_NOTFOUND);
	assert_int_equal(db_goodput_times(f->db, "done", &created, &end,
					  &modified, &err),
			 0);
	assert_int_equal(created, T0);
	assert_int_equal(end, 0);
	assert_int_equal(modified, T0);

	assert_int_equal(
		db_goodput_live(f->db, T0 + 4000, &v, &n, &queued, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], "runs");
	assert_int_equal(queued, 8000); /* done and waits, 4 s each */
	free(v[0]);
	free(v);

	memset(&ch, 0, sizeof(ch));
	ch.expect_status = "InProgress";
	ch.status = "Completed";
	ch.secondary = "Completed";
	ch.now_ms = T0 + 9000;
	ch.set_end = 1;
	assert_int_equal(db_job_change_state(f->db, "done", &ch, &err), 0);
	assert_int_equal(db_goodput_unsettled(f->db, 10, &v, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], "done");
	free(v[0]);
	free(v);

	for (i = 0; i < 2; i++)
		assert_int_equal(db_goodput_settle(f->db, "done", names, ms, 2,
						   &err),
				 0);
	assert_int_equal(db_goodput_totals(f->db, names, tot, 2, &err), 0);
	assert_int_equal(tot[0], 1500);
	assert_int_equal(tot[1], 250);
	assert_int_equal(db_goodput_unsettled(f->db, 10, &v, &n, &err), 0);
	assert_int_equal(n, 0);
	free(v);
	assert_int_equal(db_goodput_times(f->db, "done", &created, &end,
					  &modified, &err),
			 0);
	assert_int_equal(end, T0 + 9000);
	assert_int_equal(modified, T0 + 9000);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_progress, setup, teardown),
		cmocka_unit_test_setup_teardown(test_settle, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
