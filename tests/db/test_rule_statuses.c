/*
 * Tests a job's rule statuses in the store (db_job.rule_statuses): set at
 * insert, read back with the job, replaced by db_job_set_rule_statuses(),
 * absent for a job without rules, and there after the store is opened
 * again (they are not derived again after a restart).
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
#include "common/buf.h"
#include "common/err.h"

static void insert(struct db *db, const char *name, const char *statuses)
{
	struct buf err = BUF_INIT;
	struct db_job j;

	memset(&j, 0, sizeof(j));
	j.name = (char *)name;
	j.arn = (char *)name;
	j.status = (char *)"InProgress";
	j.secondary_status = (char *)"Starting";
	j.request_json = (char *)"{}";
	j.instance_type = (char *)"ml.m5.large";
	j.instance_count = 1;
	j.creation_ms = 1700000000000LL;
	j.rule_statuses = (char *)statuses;
	if (db_job_insert(db, &j, "Starting the training job", &err))
		fail_msg("insert %s: %s", name, err.data);
	buf_release(&err);
}

/* name's rule statuses as stored (NULL: none); caller frees. */
static char *statuses_of(struct db *db, const char *name)
{
	struct buf err = BUF_INIT;
	struct db_job j;
	char *s;

	if (db_job_get(db, name, &j, &err))
		fail_msg("get %s: %s", name, err.data);
	s = j.rule_statuses;
	j.rule_statuses = NULL;
	db_job_release(&j);
	buf_release(&err);
	return s;
}

static void test_rule_statuses(void **state)
{
	static const char first[] = "{\"DebugRuleEvaluationStatuses\":[]}";
	static const char second[] = "{\"ProfilerRuleEvaluationStatuses\":[]}";
	struct buf err = BUF_INIT;
	char dir[256], path[PATH_MAX], p[PATH_MAX + 8];
	const char *tmp = getenv("TMPDIR");
	struct db *db;
	char *s;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/tctl-rules-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/trainctl.db", dir);
	assert_int_equal(db_open(path, 2, &db, &err), 0);
	insert(db, "with-rules", first);
	insert(db, "without", NULL);
	s = statuses_of(db, "with-rules");
	assert_string_equal(s, first);
	free(s);
	assert_null(statuses_of(db, "without"));
	assert_int_equal(
		db_job_set_rule_statuses(db, "with-rules", second, &err), 0);
	assert_int_equal(db_job_set_rule_statuses(db, "nobody", second, &err),
			 ERR_NOTFOUND);
	db_close(db);

	/* Opened again: still there. */
	assert_int_equal(db_open(path, 2, &db, &err), 0);
	s = statuses_of(db, "with-rules");
	assert_string_equal(s, second);
	free(s);
	db_close(db);
	buf_release(&err);
	snprintf(p, sizeof(p), "%s", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_statuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
