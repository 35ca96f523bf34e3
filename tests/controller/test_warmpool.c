/*
 * Tests controller/warmpool.c against a real store in a temporary
 * directory: ctrl_warm_pool_set_keep_alive()'s rules (the call an
 * UpdateTrainingJob makes) and ctrl_warm_pool_tick() ending pools whose
 * period ran out or whose hosts are gone.
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

#include "controller/ctrl.h"
#include "tests/controller/ctx_fixture.h"
#include "controller/warmpool.h"
#include "db/db.h"
#include "db/warmpool.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"

struct fixture {
	char dir[256];
	struct ctrl_ctx ctx;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (ctx_fixture_open(&f->ctx, f->dir, sizeof(f->dir), "wpc")) {
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

static void insert(struct db *db, const char *name, int keep)
{
	struct db_job j;
	struct buf err = BUF_INIT;

	memset(&j, 0, sizeof(j));
	j.name = (char *)name;
	j.arn = (char *)name;
	j.status = (char *)"InProgress";
	j.secondary_status = (char *)"Training";
	j.request_json = (char *)"{\"ResourceConfig\":{\"InstanceCount\":1,"
				 "\"KeepAlivePeriodInSeconds\":60}}";
	j.instance_count = 1;
	j.creation_ms = time_now_ms();
	j.keep_alive_s = keep;
	j.wp_key = keep ? (char *)"\nK" : NULL;
	assert_int_equal(db_job_insert(db, &j, "Training", &err), 0);
	buf_release(&err);
}

static struct db_job get(struct db *db, const char *name)
{
	struct buf err = BUF_INIT;
	struct db_job j;

	assert_int_equal(db_job_get(db, name, &j, &err), 0);
	buf_release(&err);
	return j;
}

static void test_set_keep_alive(void **state)
{
	struct fixture *f = *state;
	struct ctrl_ctx *ctx = &f->ctx;
	struct buf err = BUF_INIT;
	const char *hosts[] = { "h1" };
	struct db_job j;

	insert(ctx->db, "a", 60);
	insert(ctx->db, "plain", 0);
	assert_int_equal(ctrl_warm_pool_set_keep_alive(ctx, "nope", 5, &err),
			 ERR_NOTFOUND);
	buf_reset(&err);
	assert_int_equal(ctrl_warm_pool_set_keep_alive(ctx, "a", 21601, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "keepAlivePeriodInSeconds"));
	buf_reset(&err);
	assert_int_equal(ctrl_warm_pool_set_keep_alive(ctx, "plain", 5, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "KeepAlivePeriodInSeconds"));
	buf_reset(&err);

	/* InProgress: the period changes, and Describe's echo with it. */
	assert_int_equal(ctrl_warm_pool_set_keep_alive(ctx, "a", 120, &err), 0);
	j = get(ctx->db, "a");
	assert_int_equal(j.keep_alive_s, 120);
	assert_string_equal(j.wp_status, "InUse");
	assert_non_null(
		strstr(j.request_json, "\"KeepAlivePeriodInSeconds\":120"));
	db_job_release(&j);

	/* Available: 0 ends it at once. */
	assert_int_equal(db_warm_pool_end_job(ctx->db, "a", hosts, 1,
					      time_now_ms(), &err),
			 0);
	assert_int_equal(ctrl_warm_pool_set_keep_alive(ctx, "a", 0, &err), 0);
	j = get(ctx->db, "a");
	assert_string_equal(j.wp_status, "Terminated");
	assert_int_equal(j.keep_alive_s, 0);
	db_job_release(&j);

	/* Terminated: nothing to update. */
	assert_int_equal(ctrl_warm_pool_set_keep_alive(ctx, "a", 30, &err),
			 ERR_INVALID);
	buf_release(&err);
}

static void test_tick(void **state)
{
	struct fixture *f = *state;
	struct ctrl_ctx *ctx = &f->ctx;
	struct buf err = BUF_INIT;
	const char *hosts[] = { "gone" };
	int64_t now = time_now_ms();
	struct db_job j;

	insert(ctx->db, "old", 1);
	insert(ctx->db, "lost", 600);
	/* Available since two seconds ago with a 1 s period: over. */
	assert_int_equal(db_warm_pool_end_job(ctx->db, "old", hosts, 1,
					      now - 2000, &err),
			 0);
	/* Within its period, on a host the controller does not know. */
	assert_int_equal(
		db_warm_pool_end_job(ctx->db, "lost", hosts, 1, now, &err), 0);
	assert_int_equal(ctrl_warm_pool_tick(ctx), 2);
	j = get(ctx->db, "old");
	assert_string_equal(j.wp_status, "Terminated");
	assert_true(ctrl_warm_pool_billable_s(&j, now) >= 1);
	db_job_release(&j);
	j = get(ctx->db, "lost");
	assert_string_equal(j.wp_status, "Terminated");
	db_job_release(&j);
	assert_int_equal(ctrl_warm_pool_tick(ctx), 0);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_set_keep_alive, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tick, setup, teardown),
	};

	return cmocka_run_group_tests_name("controller/warmpool", tests, NULL,
					   NULL);
}
