/*
 * Tests the AWS Batch service jobs' rows in the store (db/batch.c) as the
 * training job's insert carries them (db/jobs.c). Each test gets a fresh
 * database in its own temporary directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "db/batch.h"
#include "db/db.h"
#include "common/buf.h"
#include "common/err.h"
#include "tests/db/fixture.h"

/*
 * A training job inserted with its service job: both rows, in one
 * transaction; a service job whose clientToken is taken undoes the
 * training job too (no reader ever sees one without the other).
 */
static void test_insert_with_service(void **state)
{
	struct fixture *f = *state;
	struct db_job a = make_job("svc-a", "InProgress", "Starting", T0);
	struct db_job b = make_job("svc-b", "InProgress", "Starting", T0);
	struct db_service_job sa, sb, got;
	struct buf err = BUF_INIT;
	struct db_job j;

	memset(&sa, 0, sizeof(sa));
	sa.job_id = (char *)"00000000-0000-0000-0000-00000000000a";
	sa.arn = (char *)"arn:aws:batch:us-east-1:1:service-job/a";
	sa.name = (char *)"a";
	sa.queue_arn = (char *)"arn:aws:batch:us-east-1:1:job-queue/q";
	sa.training_job = (char *)"svc-a";
	sa.owner = (char *)"alice";
	sa.client_token = (char *)"tok";
	sa.request_json = (char *)"{}";
	sa.created_ms = T0;
	sb = sa;
	sb.job_id = (char *)"00000000-0000-0000-0000-00000000000b";
	sb.training_job = (char *)"svc-b";
	a.service = &sa;
	b.service = &sb;
	assert_int_equal(db_job_insert(f->db, &a, "Starting", &err), 0);
	get(f->db, "svc-a", &j);
	db_job_release(&j);
	assert_int_equal(db_service_job_get(f->db, sa.job_id, NULL, NULL, &got,
					    &err),
			 0);
	assert_string_equal(got.training_job, "svc-a");
	db_service_job_release(&got);
	buf_reset(&err);
	/* The same owner's clientToken: neither row. */
	assert_int_equal(db_job_insert(f->db, &b, "Starting", &err),
			 ERR_CONFLICT);
	assert_non_null(strstr(err.data, "clientToken"));
	assert_int_equal(db_job_get(f->db, "svc-b", &j, &err), ERR_NOTFOUND);
	assert_int_equal(db_service_job_get(f->db, sb.job_id, NULL, NULL, &got,
					    &err),
			 ERR_NOTFOUND);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_insert_with_service, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
