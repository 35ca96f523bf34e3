/*
 * Tests db/db.c and db/schema.c: opening and migrating, the job row and its
 * transitions, compare-and-set state changes, deletion and the scans. Each
 * test gets a fresh database in its own temporary directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/db.h"
#include "db/run.h"
#include "common/buf.h"
#include "common/err.h"

#include "tests/db/fixture.h"

static void insert(struct db *db, const char *name, const char *status,
		   const char *secondary, int64_t creation_ms)
{
	struct db_job j = make_job(name, status, secondary, creation_ms);
	struct buf err = BUF_INIT;
	int ret = db_job_insert(db, &j, "Starting the training job", &err);

	if (ret)
		fprintf(stderr, "insert %s: %s\n", name, err.data);
	assert_int_equal(ret, 0);
	assert_true(j.id > 0);
	buf_release(&err);
}

static int change(struct db *db, const char *name, const char *from,
		  const char *from2, const char *to, const char *to2,
		  const char *msg, int64_t now_ms, int set_start, int set_end)
{
	struct db_state_change ch;
	struct buf err = BUF_INIT;
	int ret;

	memset(&ch, 0, sizeof(ch));
	ch.expect_status = from;
	ch.expect_secondary = from2;
	ch.status = to;
	ch.secondary = to2;
	ch.message = msg;
	ch.now_ms = now_ms;
	ch.set_start = set_start;
	ch.set_end = set_end;
	ret = db_job_change_state(db, name, &ch, &err);
	buf_release(&err);
	return ret;
}


static void test_open_creates_schema(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	assert_int_equal(db_schema_version(f->db), DB_SCHEMA_LATEST);
	assert_int_equal(db_job_count(f->db, NULL), 0);
	assert_int_equal(db_job_count(f->db, "InProgress"), 0);
	assert_int_equal(stat(f->path, &st), 0);
}

static void test_open_bad_path(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	char path[PATH_MAX];
	struct db *db = (struct db *)&err; /* must be reset to NULL */

	snprintf(path, sizeof(path), "%s/no/such/dir/x.db", f->dir);
	assert_int_equal(db_open(path, 1, &db, &err), ERR_DB);
	assert_null(db);
	assert_true(err.len > 0);
	buf_release(&err);
	db_close(NULL);
}

static void test_reopen_keeps_data(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	struct db_job j;

	insert(f->db, "durable-job", "InProgress", "Starting", T0);
	assert_int_equal(change(f->db, "durable-job", "InProgress", "Starting",
				"InProgress", "Downloading", "Downloading",
				T0 + 5000, 1, 0),
			 0);
	db_close(f->db);
	f->db = NULL;

	assert_int_equal(db_open(f->path, 1, &f->db, &err), 0);
	assert_int_equal(db_schema_version(f->db), DB_SCHEMA_LATEST);
	assert_int_equal(db_job_count(f->db, NULL), 1);
	get(f->db, "durable-job", &j);
	assert_string_equal(j.name, "durable-job");
	assert_string_equal(j.secondary_status, "Downloading");
	assert_int_equal(j.start_ms, T0 + 5000);
	assert_int_equal(j.n_transitions, 2);
	assert_string_equal(j.transitions[0].status, "Starting");
	assert_int_equal(j.transitions[0].end_ms, T0 + 5000);
	assert_string_equal(j.transitions[1].status, "Downloading");
	assert_int_equal(j.transitions[1].end_ms, 0);
	db_job_release(&j);

	/* A third open of the migrated file applies nothing and loses nothing.
	 */
	db_close(f->db);
	assert_int_equal(db_open(f->path, 3, &f->db, &err), 0);
	assert_int_equal(db_schema_version(f->db), DB_SCHEMA_LATEST);
	assert_int_equal(db_job_count(f->db, "InProgress"), 1);
	buf_release(&err);
}

static void test_insert_get_roundtrip(void **state)
{
	struct fixture *f = *state;
	struct db_job in =
		make_job("Round-Trip-1", "InProgress", "Starting", T0 + 123);
	struct buf err = BUF_INIT;
	struct db_job j;

	assert_int_equal(db_job_insert(f->db, &in, "Starting the training job",
				       &err),
			 0);
	assert_true(in.id > 0);
	assert_int_equal(in.last_modified_ms, T0 + 123);

	get(f->db, "Round-Trip-1", &j);
	assert_int_equal(j.id, in.id);
	assert_string_equal(j.name, "Round-Trip-1");
	assert_string_equal(j.arn, in.arn);
	assert_string_equal(j.status, "InProgress");
	assert_string_equal(j.secondary_status, "Starting");
	assert_null(j.failure_reason);
	assert_null(j.model_artifacts);
	assert_string_equal(j.request_json, "{\"RoleArn\":\"r\"}");
	assert_string_equal(j.instance_type, "ml.m5.xlarge");
	assert_int_equal(j.instance_count, 2);
	assert_int_equal(j.creation_ms, T0 + 123);
	assert_int_equal(j.last_modified_ms, T0 + 123);
	assert_int_equal(j.start_ms, 0);
	assert_int_equal(j.end_ms, 0);
	assert_int_equal(j.training_s, 0);
	assert_int_equal(j.billable_s, 0);
	assert_int_equal(j.n_transitions, 1);
	assert_string_equal(j.transitions[0].status, "Starting");
	assert_int_equal(j.transitions[0].start_ms, T0 + 123);
	assert_int_equal(j.transitions[0].end_ms, 0);
	assert_string_equal(j.transitions[0].message,
			    "Starting the training job");
	assert_int_equal(j.n_metrics, 0);
	assert_null(j.metrics);
	db_job_release(&j);
	assert_null(j.name);
	db_job_release(&j); /* released twice: harmless */

	/* Lookup is case-insensitive, like the uniqueness. */
	get(f->db, "round-trip-1", &j);
	assert_string_equal(j.name, "Round-Trip-1");
	db_job_release(&j);

	/* A NULL first message and NULL instance type are stored as NULL. */
	in = make_job("no-message", "InProgress", "Starting", T0);
	in.instance_type = NULL;
	assert_int_equal(db_job_insert(f->db, &in, NULL, &err), 0);
	get(f->db, "no-message", &j);
	assert_null(j.instance_type);
	assert_int_equal(j.n_transitions, 1);
	assert_null(j.transitions[0].message);
	db_job_release(&j);
	buf_release(&err);
}

static void test_insert_duplicate(void **state)
{
	struct fixture *f = *state;
	struct db_job dup = make_job("dup-job", "InProgress", "Starting", T0);
	struct buf err = BUF_INIT;
	struct db_job j;

	insert(f->db, "dup-job", "InProgress", "Starting", T0);
	dup.arn = (char *)"arn:other";
	dup.creation_ms = T0 + 999;
	dup.id = -5;
	assert_int_equal(db_job_insert(f->db, &dup, "again", &err),
			 ERR_CONFLICT);
	assert_int_equal(dup.id, -5);
	dup.name = (char *)"DUP-Job";
	assert_int_equal(db_job_insert(f->db, &dup, "again", &err),
			 ERR_CONFLICT);
	assert_int_equal(db_job_count(f->db, NULL), 1);

	get(f->db, "dup-job", &j);
	assert_string_equal(j.name, "dup-job");
	assert_string_not_equal(j.arn, "arn:other");
	assert_int_equal(j.creation_ms, T0);
	assert_int_equal(j.n_transitions, 1);
	assert_string_equal(j.transitions[0].message,
			    "Starting the training job");
	db_job_release(&j);

	/* The writer is usable after the rolled-back insert. */
	insert(f->db, "dup-job-2", "InProgress", "Starting", T0 + 1);
	assert_int_equal(db_job_count(f->db, NULL), 2);
	buf_release(&err);
}

static void test_get_unknown(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	struct db_job j;

	assert_int_equal(db_job_get(f->db, "nope", &j, &err), ERR_NOTFOUND);
	assert_null(j.name);
	assert_int_equal(j.n_transitions, 0);
	insert(f->db, "some-job", "InProgress", "Starting", T0);
	assert_int_equal(db_job_get(f->db, "some-jo", &j, &err), ERR_NOTFOUND);
	assert_int_equal(db_job_get(f->db, "some-job-", &j, &err),
			 ERR_NOTFOUND);
	buf_release(&err);
}

static void test_change_state_cas(void **state)
{
	struct fixture *f = *state;
	struct db_state_change ch;
	struct buf err = BUF_INIT;
	struct db_job j;

	insert(f->db, "cas-job", "InProgress", "Starting", T0);

	/* Wrong primary status. */
	memset(&ch, 0, sizeof(ch));
	ch.expect_status = "Stopping";
	ch.status = "Stopped";
	ch.secondary = "Stopped";
	ch.message = "should not be written";
	ch.failure_reason = "nor this";
	ch.model_artifacts = "s3://nor/this";
	ch.now_ms = T0 + 1000;
	ch.set_start = 1;
	ch.set_end = 1;
	assert_int_equal(db_job_change_state(f->db, "cas-job", &ch, &err),
			 ERR_CONFLICT);
	assert_non_null(strstr(err.data, "InProgress"));

	/* Right primary, wrong secondary. */
	buf_reset(&err);
	ch.expect_status = "InProgress";
	ch.expect_secondary = "Training";
	assert_int_equal(db_job_change_state(f->db, "cas-job", &ch, &err),
			 ERR_CONFLICT);
	assert_non_null(strstr(err.data, "Starting"));

	get(f->db, "cas-job", &j);
	assert_string_equal(j.status, "InProgress");
	assert_string_equal(j.secondary_status, "Starting");
	assert_int_equal(j.last_modified_ms, T0);
	assert_int_equal(j.start_ms, 0);
	assert_int_equal(j.end_ms, 0);
	assert_null(j.failure_reason);
	assert_null(j.model_artifacts);
	assert_int_equal(j.n_transitions, 1);
	assert_int_equal(j.transitions[0].end_ms, 0);
	assert_string_equal(j.transitions[0].message,
			    "Starting the training job");
	db_job_release(&j);

	/* Unknown job. */
	assert_int_equal(db_job_change_state(f->db, "ghost", &ch, &err),
			 ERR_NOTFOUND);

	/* A matching CAS (secondary NULL = any) goes through. */
	ch.expect_secondary = NULL;
	ch.set_start = 0;
	ch.set_end = 0;
	ch.failure_reason = NULL;
	ch.model_artifacts = NULL;
	ch.status = "InProgress";
	ch.secondary = "Downloading";
	ch.message = "Downloading input data";
	assert_int_equal(db_job_change_state(f->db, "CAS-JOB", &ch, &err), 0);
	get(f->db, "cas-job", &j);
	assert_string_equal(j.secondary_status, "Downloading");
	db_job_release(&j);

	/* Stale writer: expects the old secondary. */
	ch.expect_secondary = "Starting";
	ch.secondary = "Training";
	assert_int_equal(db_job_change_state(f->db, "cas-job", &ch, &err),
			 ERR_CONFLICT);
	get(f->db, "cas-job", &j);
	assert_string_equal(j.secondary_status, "Downloading");
	assert_int_equal(j.n_transitions, 2);
	db_job_release(&j);
	buf_release(&err);
}

static void test_change_state_transitions(void **state)
{
	struct fixture *f = *state;
	struct db_state_change ch;
	struct buf err = BUF_INIT;
	struct db_job j;
	size_t i;

	insert(f->db, "path-job", "InProgress", "Starting", T0);
	assert_int_equal(change(f->db, "path-job", "InProgress", "Starting",
				"InProgress", "Downloading",
				"Downloading input data", T0 + 10000, 1, 0),
			 0);
	/* set_start again must not move TrainingStartTime. */
	assert_int_equal(change(f->db, "path-job", "InProgress", "Downloading",
				"InProgress", "Training", "Training",
				T0 + 20000, 1, 0),
			 0);
	assert_int_equal(change(f->db, "path-job", "InProgress", "Training",
				"InProgress", "Uploading", NULL, T0 + 70500, 0,
				0),
			 0);

	get(f->db, "path-job", &j);
	assert_int_equal(j.start_ms, T0 + 10000);
	assert_int_equal(j.end_ms, 0);
	assert_int_equal(j.training_s, 0);
	assert_int_equal(j.last_modified_ms, T0 + 70500);
	db_job_release(&j);

	memset(&ch, 0, sizeof(ch));
	ch.expect_status = "InProgress";
	ch.expect_secondary = "Uploading";
	ch.status = "Completed";
	ch.secondary = "Completed";
	ch.message = "Training job completed";
	ch.model_artifacts = "s3://bucket/out/path-job/output/model.tar.gz";
	ch.now_ms = T0 + 80001;
	ch.set_end = 1;
	assert_int_equal(db_job_change_state(f->db, "path-job", &ch, &err), 0);

	get(f->db, "path-job", &j);
	assert_string_equal(j.status, "Completed");
	assert_string_equal(j.secondary_status, "Completed");
	assert_string_equal(j.model_artifacts, ch.model_artifacts);
	assert_null(j.failure_reason);
	assert_int_equal(j.start_ms, T0 + 10000);
	assert_int_equal(j.end_ms, T0 + 80001);
	assert_int_equal(j.last_modified_ms, T0 + 80001);
	/* 70001 ms, rounded up to whole seconds. */
	assert_int_equal(j.training_s, 71);
	assert_int_equal(j.billable_s, 71);
	assert_int_equal(j.n_transitions, 5);
	{
		static const char *const want[] = { "Starting", "Downloading",
						    "Training", "Uploading",
						    "Completed" };
		static const int64_t start[] = { T0, T0 + 10000, T0 + 20000,
						 T0 + 70500, T0 + 80001 };

		for (i = 0; i < 5; i++) {
			assert_string_equal(j.transitions[i].status, want[i]);
			assert_int_equal(j.transitions[i].start_ms, start[i]);
			/* Closed when the next one opened; the last is open. */
			assert_int_equal(j.transitions[i].end_ms,
					 i < 4 ? start[i + 1] : 0);
		}
	}
	assert_string_equal(j.transitions[1].message, "Downloading input data");
	assert_null(j.transitions[3].message);
	assert_string_equal(j.transitions[4].message, "Training job completed");
	db_job_release(&j);
	assert_int_equal(db_job_count(f->db, "Completed"), 1);
	assert_int_equal(db_job_count(f->db, "InProgress"), 0);
	buf_release(&err);
}

static void test_change_state_same_secondary(void **state)
{
	struct fixture *f = *state;
	struct db_job j;

	insert(f->db, "msg-job", "InProgress", "Starting", T0);
	assert_int_equal(change(f->db, "msg-job", "InProgress", "Starting",
				"InProgress", "Starting",
				"Launching requested ML instances", T0 + 300, 0,
				0),
			 0);
	get(f->db, "msg-job", &j);
	assert_int_equal(j.n_transitions, 1);
	assert_string_equal(j.transitions[0].message,
			    "Launching requested ML instances");
	assert_int_equal(j.transitions[0].start_ms, T0);
	assert_int_equal(j.transitions[0].end_ms, 0);
	db_job_release(&j);

	/* No message: the old one stays. */
	assert_int_equal(change(f->db, "msg-job", "InProgress", "Starting",
				"InProgress", "Starting", NULL, T0 + 400, 0, 0),
			 0);
	get(f->db, "msg-job", &j);
	assert_int_equal(j.n_transitions, 1);
	assert_string_equal(j.transitions[0].message,
			    "Launching requested ML instances");
	db_job_release(&j);

	/* A new secondary after that opens the second entry as usual. */
	assert_int_equal(change(f->db, "msg-job", "InProgress", "Starting",
				"InProgress", "Training", "Training", T0 + 500,
				1, 0),
			 0);
	get(f->db, "msg-job", &j);
	assert_int_equal(j.n_transitions, 2);
	assert_int_equal(j.transitions[0].end_ms, T0 + 500);
	assert_string_equal(j.transitions[1].status, "Training");
	db_job_release(&j);
}

static void test_times_at_least_one_second(void **state)
{
	struct fixture *f = *state;
	struct db_job j;

	insert(f->db, "fast-job", "InProgress", "Starting", T0);
	assert_int_equal(change(f->db, "fast-job", "InProgress", NULL,
				"InProgress", "Training", NULL, T0 + 50, 1, 0),
			 0);
	/* Ends in the same millisecond it started. */
	assert_int_equal(change(f->db, "fast-job", "InProgress", NULL,
				"Completed", "Completed", NULL, T0 + 50, 0, 1),
			 0);
	get(f->db, "fast-job", &j);
	assert_int_equal(j.start_ms, T0 + 50);
	assert_int_equal(j.end_ms, T0 + 50);
	assert_true(j.training_s >= 1);
	assert_true(j.billable_s >= 1);
	assert_int_equal(j.billable_s, j.training_s);
	db_job_release(&j);

	insert(f->db, "slow-job", "InProgress", "Starting", T0);
	assert_int_equal(change(f->db, "slow-job", "InProgress", NULL,
				"InProgress", "Training", NULL, T0 + 1000, 1,
				0),
			 0);
	assert_int_equal(change(f->db, "slow-job", "InProgress", NULL,
				"Completed", "Completed", NULL, T0 + 3001, 0,
				1),
			 0);
	get(f->db, "slow-job", &j);
	assert_int_equal(j.training_s, 3);
	db_job_release(&j);
}

static void test_failure_reason(void **state)
{
	struct fixture *f = *state;
	struct db_state_change ch;
	struct buf err = BUF_INIT;
	struct db_job j;

	insert(f->db, "fail-job", "InProgress", "Starting", T0);
	assert_int_equal(change(f->db, "fail-job", "InProgress", NULL,
				"InProgress", "Training", NULL, T0 + 1000, 1,
				0),
			 0);
	memset(&ch, 0, sizeof(ch));
	ch.expect_status = "InProgress";
	ch.status = "Failed";
	ch.secondary = "Failed";
	ch.message = "Training job failed";
	ch.failure_reason = "AlgorithmError: ExecuteUserScriptError: "
			    "exit status 1";
	ch.now_ms = T0 + 2000;
	ch.set_end = 1;
	assert_int_equal(db_job_change_state(f->db, "fail-job", &ch, &err), 0);
	get(f->db, "fail-job", &j);
	assert_string_equal(j.status, "Failed");
	assert_string_equal(j.failure_reason, ch.failure_reason);
	assert_null(j.model_artifacts);
	assert_int_equal(j.end_ms, T0 + 2000);
	assert_int_equal(j.training_s, 1);
	db_job_release(&j);

	/* A later change without a reason keeps the stored one. */
	ch.expect_status = "Failed";
	ch.failure_reason = NULL;
	ch.message = "again";
	ch.set_end = 0;
	ch.now_ms = T0 + 3000;
	assert_int_equal(db_job_change_state(f->db, "fail-job", &ch, &err), 0);
	get(f->db, "fail-job", &j);
	assert_string_equal(j.failure_reason, "AlgorithmError: "
					      "ExecuteUserScriptError: exit "
					      "status 1");
	assert_int_equal(j.end_ms, T0 + 2000);
	db_job_release(&j);
	buf_release(&err);
}

/* The controller says which statuses end a job; these are SageMaker's. */
static int ended(const char *status)
{
	return !strcmp(status, "Completed") || !strcmp(status, "Failed") ||
	       !strcmp(status, "Stopped");
}

static void test_delete(void **state)
{
	static const char *const hosts[] = { "h1" };
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	char old_uid[64];
	struct db_job j;
	static const char *const live[][2] = {
		{ "InProgress", "Starting" },
		{ "InProgress", "Training" },
		{ "Stopping", "Stopping" },
	};
	static const char *const done[][2] = {
		{ "Completed", "Completed" },
		{ "Failed", "Failed" },
		{ "Stopped", "Stopped" },
		{ "Stopped", "MaxRuntimeExceeded" },
	};
	char name[32];
	size_t i;

	for (i = 0; i < sizeof(live) / sizeof(live[0]); i++) {
		snprintf(name, sizeof(name), "live-%zu", i);
		insert(f->db, name, live[i][0], live[i][1], T0 + (int64_t)i);
		buf_reset(&err);
		assert_int_equal(db_job_delete(f->db, name, ended, &err),
				 ERR_CONFLICT);
		assert_non_null(strstr(err.data, live[i][0]));
		get(f->db, name, &j);
		db_job_release(&j);
	}
	for (i = 0; i < sizeof(done) / sizeof(done[0]); i++) {
		snprintf(name, sizeof(name), "done-%zu", i);
		insert(f->db, name, done[i][0], done[i][1],
		       T0 + 10 + (int64_t)i);
		assert_int_equal(db_job_delete(f->db, name, ended, &err), 0);
		assert_int_equal(db_job_get(f->db, name, &j, &err),
				 ERR_NOTFOUND);
	}
	assert_int_equal(db_job_count(f->db, NULL), 3);
	assert_int_equal(db_job_delete(f->db, "done-0", ended, &err), ERR_NOTFOUND);
	assert_int_equal(db_job_delete(f->db, "never", ended, &err), ERR_NOTFOUND);

	/*
	 * Finish a job with several transitions, delete it through another
	 * case, and reuse the name: the new job starts with one transition
	 * (the old ones went with the row, even if the row id is reused).
	 */
	insert(f->db, "reuse-me", "InProgress", "Starting", T0 + 100);
	assert_int_equal(change(f->db, "reuse-me", "InProgress", NULL,
				"InProgress", "Training", NULL, T0 + 200, 1, 0),
			 0);
	assert_int_equal(change(f->db, "reuse-me", "InProgress", NULL,
				"Completed", "Completed", NULL, T0 + 300, 0, 1),
			 0);
	get(f->db, "reuse-me", &j);
	assert_non_null(j.uid);
	assert_int_equal(strlen(j.uid), 16);
	(void)snprintf(old_uid, sizeof(old_uid), "%s", j.uid);
	db_job_release(&j);
	assert_int_equal(db_job_delete(f->db, "REUSE-ME", ended, &err), 0);
	insert(f->db, "Reuse-Me", "InProgress", "Starting", T0 + 400);
	get(f->db, "reuse-me", &j);
	assert_string_equal(j.name, "Reuse-Me");
	/* A new job of the same name: a new uid, and a late report of the
	 * old one (its uid) reaches nothing of it. */
	assert_string_not_equal(j.uid, old_uid);
	assert_int_equal(db_attempt_start(f->db, "reuse-me", 1, 20000, hosts, 1,
					  T0 + 500, &err),
			 0);
	assert_int_equal(db_assignment_report(f->db, "reuse-me", old_uid, 1, 0,
					      "h1", "exited", "{}", &err),
			 ERR_NOTFOUND);
	assert_int_equal(db_assignment_report(f->db, "reuse-me", j.uid, 1, 0,
					      "h1", "exited", "{}", &err),
			 1);
	assert_int_equal(db_assignment_report(f->db, "reuse-me", NULL, 1, 0,
					      "h1", "done", "{}", &err),
			 1);
	assert_int_equal(j.creation_ms, T0 + 400);
	assert_int_equal(j.n_transitions, 1);
	assert_int_equal(j.start_ms, 0);
	assert_int_equal(j.training_s, 0);
	db_job_release(&j);
	buf_release(&err);
}

/*
 * The time a job waited in the queue after its preemptions: each
 * preempted attempt's end to the next one's start, and to now while it
 * waits; a failed attempt's gap (a restart) does not count.
 */
static void test_requeued_ms(void **state)
{
	struct fixture *f = *state;
	const char *hosts[] = { "h1" };
	struct buf err = BUF_INIT;
	int64_t ms = -1;

	insert(f->db, "rq-ms", "InProgress", "Training", T0);
	assert_int_equal(db_job_requeued_ms(f->db, "rq-ms", T0, &ms, &err), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(db_attempt_start(f->db, "rq-ms", 1, 4000, hosts, 1,
					  T0 + 1000, &err),
			 0);
	assert_int_equal(db_attempt_end(f->db, "rq-ms", 1, "preempted",
					T0 + 5000, &err),
			 0);
	assert_int_equal(db_attempt_set_planned(f->db, "rq-ms", 1,
						DB_ATTEMPT_PREEMPTED, &err),
			 0);
	/* Waiting in the queue still: to now. */
	assert_int_equal(db_job_requeued_ms(f->db, "rq-ms", T0 + 8000, &ms,
					    &err),
			 0);
	assert_int_equal(ms, 3000);
	assert_int_equal(db_attempt_start(f->db, "rq-ms", 2, 4002, hosts, 1,
					  T0 + 65000, &err),
			 0);
	assert_int_equal(db_attempt_end(f->db, "rq-ms", 2, "rank failed",
					T0 + 70000, &err),
			 0);
	assert_int_equal(db_attempt_start(f->db, "rq-ms", 3, 4004, hosts, 1,
					  T0 + 71000, &err),
			 0);
	assert_int_equal(db_job_requeued_ms(f->db, "rq-ms", T0 + 99000, &ms,
					    &err),
			 0);
	assert_int_equal(ms, 60000);
	buf_release(&err);
}

/* Drained hosts are kept; moves and preemptions spend no retry. */
static void test_drains_and_planned(void **state)
{
	static const char *const hosts[] = { "h1", "h2" };
	static const enum db_attempt_planned how[] = { DB_ATTEMPT_MOVED,
						       DB_ATTEMPT_PREEMPTED,
						       DB_ATTEMPT_UNPLANNED };
	struct fixture *f = *state;
	struct db_host_drain *d = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0;
	int planned = -1, moves = -1, i;

	assert_int_equal(db_host_drain_set(f->db, "h2", "disk", T0, &err), 0);
	assert_int_equal(db_host_drain_set(f->db, "h1", NULL, T0, &err), 0);
	assert_int_equal(db_host_drain_set(f->db, "h2", "fans", T0 + 1, &err),
			 0);
	assert_int_equal(db_host_drains_list(f->db, &d, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(d[0].host, "h1");
	assert_null(d[0].reason);
	assert_string_equal(d[1].host, "h2");
	assert_string_equal(d[1].reason, "fans");
	assert_int_equal(d[1].since_ms, T0 + 1);
	db_host_drains_free(d, n);
	assert_int_equal(db_host_drain_clear(f->db, "h1", &err), 0);
	assert_int_equal(db_host_drain_clear(f->db, "h1", &err), ERR_NOTFOUND);
	assert_int_equal(db_host_drains_list(f->db, &d, &n, &err), 0);
	assert_int_equal(n, 1);
	db_host_drains_free(d, n);

	insert(f->db, "mover", "InProgress", "Training", T0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(db_attempt_start(f->db, "mover", i + 1,
						  20000 + 2 * i, hosts, 2, T0,
						  &err),
				 0);
		if (how[i])
			assert_int_equal(db_attempt_set_planned(f->db, "mover",
								i + 1, how[i],
								&err),
					 0);
		assert_int_equal(db_attempt_planned(f->db, "mover", i + 1,
						    &planned, &err),
				 0);
		assert_int_equal(planned, how[i]);
	}
	/* Neither a move nor a preemption spends a retry. */
	assert_int_equal(db_job_planned_moves(f->db, "mover", &moves, &err), 0);
	assert_int_equal(moves, 2);
	buf_release(&err);
}

struct names {
	char *v[16];
	int n;
};

static void collect(const char *name, void *arg)
{
	struct names *ns = arg;

	if (ns->n < 16)
		ns->v[ns->n] = strdup(name);
	ns->n++;
}

static void names_release(struct names *ns)
{
	int i;

	for (i = 0; i < ns->n && i < 16; i++)
		free(ns->v[i]);
	ns->n = 0;
}

static void test_jobs_with_status(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	struct names ns = { { NULL }, 0 };

	/* Inserted out of creation order; equal times fall back to id. */
	insert(f->db, "c", "InProgress", "Training", T0 + 30);
	insert(f->db, "a", "InProgress", "Starting", T0 + 10);
	insert(f->db, "x", "Completed", "Completed", T0 + 5);
	insert(f->db, "b", "InProgress", "Downloading", T0 + 20);
	insert(f->db, "d", "InProgress", "Starting", T0 + 30);
	insert(f->db, "y", "Stopping", "Stopping", T0 + 1);

	assert_int_equal(db_jobs_with_status(f->db, "InProgress", collect, &ns,
					     &err),
			 0);
	assert_int_equal(ns.n, 4);
	assert_string_equal(ns.v[0], "a");
	assert_string_equal(ns.v[1], "b");
	assert_string_equal(ns.v[2], "c");
	assert_string_equal(ns.v[3], "d");
	names_release(&ns);

	assert_int_equal(
		db_jobs_with_status(f->db, "Stopping", collect, &ns, &err), 0);
	assert_int_equal(ns.n, 1);
	assert_string_equal(ns.v[0], "y");
	names_release(&ns);

	assert_int_equal(
		db_jobs_with_status(f->db, "Failed", collect, &ns, &err), 0);
	assert_int_equal(ns.n, 0);
	/* Exact match: no case folding, no prefix. */
	assert_int_equal(db_jobs_with_status(f->db, "inprogress", collect, &ns,
					     &err),
			 0);
	assert_int_equal(ns.n, 0);
	buf_release(&err);
}

static void test_job_count(void **state)
{
	struct fixture *f = *state;
	char name[32];
	int i;

	for (i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "count-%d", i);
		insert(f->db, name, i % 3 ? "InProgress" : "Completed",
		       i % 3 ? "Training" : "Completed", T0 + i);
	}
	assert_int_equal(db_job_count(f->db, NULL), 12);
	assert_int_equal(db_job_count(f->db, "InProgress"), 8);
	assert_int_equal(db_job_count(f->db, "Completed"), 4);
	assert_int_equal(db_job_count(f->db, "Failed"), 0);
	assert_int_equal(change(f->db, "count-1", "InProgress", NULL, "Failed",
				"Failed", NULL, T0 + 100, 0, 1),
			 0);
	assert_int_equal(db_job_count(f->db, "InProgress"), 7);
	assert_int_equal(db_job_count(f->db, "Failed"), 1);
	assert_int_equal(db_job_count(f->db, NULL), 12);
}

/* A metric's points in a time window, and the series with their newest
 * point (what CloudWatch ListMetrics and GetMetricStatistics read). */
static void test_metric_range_and_names(void **state)
{
	struct fixture *f = *state;
	struct db_metric in[] = {
		{ (char *)"loss", 3.0, T0 + 1000, 1 },
		{ (char *)"acc", 0.5, T0 + 1500, 1 },
		{ (char *)"loss", 2.0, T0 + 2000, 2 },
		{ (char *)"loss", 1.0, T0 + 3000, 0 },
	};
	struct db_metric *out = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0, i;

	insert(f->db, "metrics-1", "InProgress", "Training", T0);
	assert_int_equal(db_metrics_add(f->db, "metrics-1", in, 4, &err), 0);
	assert_int_equal(db_metric_range(f->db, "metrics-1", "loss", T0 + 1000,
					 T0 + 3000, &out, &n, &err),
			 0);
	assert_int_equal(n, 2);
	assert_true(out[0].value == 3.0 && out[1].value == 2.0);
	assert_int_equal(out[1].timestamp_ms, T0 + 2000);
	/* Each point keeps the host it was read from. */
	assert_int_equal(out[0].host, 1);
	assert_int_equal(out[1].host, 2);
	free(out);
	assert_int_equal(db_metric_series(f->db, "metrics-1", "loss", &out, &n,
					  &err),
			 0);
	assert_int_equal(n, 3);
	assert_true(out[0].host == 1 && out[1].host == 2 && out[2].host == 0);
	for (i = 0; i < n; i++)
		free(out[i].name);
	free(out);
	assert_int_equal(db_metric_range(f->db, "no-such-job", "loss", 0,
					 T0 + 9000, &out, &n, &err),
			 0);
	assert_int_equal(n, 0);
	free(out);
	assert_int_equal(
		db_metric_names(f->db, "metrics-1", NULL, &out, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].name, "acc");
	assert_int_equal(out[0].timestamp_ms, T0 + 1500);
	assert_string_equal(out[1].name, "loss");
	assert_int_equal(out[1].timestamp_ms, T0 + 3000);
	for (i = 0; i < n; i++)
		free(out[i].name);
	free(out);
	assert_int_equal(
		db_metric_names(f->db, "metrics-1", "nope", &out, &n, &err), 0);
	assert_int_equal(n, 0);
	free(out);
	buf_release(&err);
}

/*
 * The store is shared by the HTTP workers and the reconciler: concurrent
 * inserts, reads and state changes with a reader pool smaller than the
 * number of threads must all succeed.
 */
#define N_THREADS 6
#define N_PER_THREAD 25

struct worker {
	struct db *db;
	int idx;
	int failures;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct buf err = BUF_INIT;
	struct db_job j;
	char name[32];
	int i;

	for (i = 0; i < N_PER_THREAD; i++) {
		struct db_job in;

		snprintf(name, sizeof(name), "t%d-job-%d", w->idx, i);
		in = make_job(name, "InProgress", "Starting",
			      T0 + w->idx * 1000 + i);
		if (db_job_insert(w->db, &in, NULL, &err))
			w->failures++;
		if (db_job_get(w->db, name, &j, &err))
			w->failures++;
		else
			db_job_release(&j);
		if (change(w->db, name, "InProgress", "Starting", "InProgress",
			   "Training", NULL, T0 + 5000, 1, 0))
			w->failures++;
		if (db_job_count(w->db, NULL) < 1)
			w->failures++;
	}
	buf_release(&err);
	return NULL;
}

static void test_concurrent_use(void **state)
{
	struct fixture *f = *state;
	pthread_t th[N_THREADS];
	struct worker w[N_THREADS];
	int i;

	for (i = 0; i < N_THREADS; i++) {
		w[i].db = f->db;
		w[i].idx = i;
		w[i].failures = 0;
		assert_int_equal(
			pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < N_THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].failures, 0);
	}
	assert_int_equal(db_job_count(f->db, NULL), N_THREADS * N_PER_THREAD);
	assert_int_equal(db_job_count(f->db, "InProgress"),
			 N_THREADS * N_PER_THREAD);
}

/*
 * Inserts queued as they are stored (no host free) are left out of the
 * reconciler's pass until it asks for queued jobs, in creation order.
 */
static void test_insert_waiting(void **state)
{
	struct fixture *f = *state;
	struct db_job a = make_job("queued-a", "InProgress", "Starting", T0);
	struct db_job b = make_job("live-b", "InProgress", "Starting", T0 + 1);
	struct db_queue_look any = { NULL, 0, 1, 64 };
	struct db_active_job *act = NULL;
	struct buf err = BUF_INIT;
	struct db_job got;
	size_t n = 0;

	a.waiting = 1;
	assert_int_equal(db_job_insert(f->db, &a,
				       "Waiting for 2 free hosts of type "
				       "ml.m5.xlarge (0 free now)",
				       &err),
			 0);
	assert_int_equal(
		db_job_insert(f->db, &b, "Starting the training job", &err), 0);
	assert_int_equal(db_jobs_active(f->db, NULL, &act, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(act[0].name, "live-b");
	db_active_jobs_free(act, n);
	assert_int_equal(db_jobs_active(f->db, &any, &act, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(act[1].name, "queued-a");
	assert_non_null(strstr(act[1].message, "Waiting for 2 free hosts"));
	db_active_jobs_free(act, n);
	get(f->db, "queued-a", &got);
	assert_int_equal(got.n_transitions, 1);
	assert_non_null(strstr(got.transitions[0].message, "(0 free now)"));
	db_job_release(&got);
	buf_release(&err);
}

/*
 * A free host of one type finds the first job queued for it behind any
 * number queued for another type; InstanceGroups jobs come with any look;
 * the queued part is in creation order, each job once.
 */
static void test_queue_by_type(void **state)
{
	struct fixture *f = *state;
	const char *b_only[] = { "ml.c5.large" };
	const char *both[] = { "ml.p4d.24xlarge", "ml.c5.large" };
	struct db_queue_look look_b = { b_only, 1, 0, 8 };
	struct db_queue_look look_both = { both, 2, 1, 8 };
	struct db_active_job *act = NULL;
	struct buf err = BUF_INIT;
	char name[32];
	size_t n = 0, i;

	for (i = 0; i < 100; i++) {
		struct db_job j;

		snprintf(name, sizeof(name), "gpu-%zu", i);
		j = make_job(name, "InProgress", "Starting", T0 + (int64_t)i);
		j.instance_type = (char *)"ml.p4d.24xlarge";
		j.waiting = 1;
		assert_int_equal(db_job_insert(f->db, &j, "queued", &err), 0);
	}
	{
		struct db_job j = make_job("cpu-late", "InProgress", "Starting",
					   T0 + 500);
		struct db_job g =
			make_job("groups", "InProgress", "Starting", T0 + 50);

		j.instance_type = (char *)"ml.c5.large";
		j.waiting = 1;
		g.instance_type = NULL;
		g.waiting = 1;
		assert_int_equal(db_job_insert(f->db, &j, "queued", &err), 0);
		assert_int_equal(db_job_insert(f->db, &g, "queued", &err), 0);
	}
	assert_int_equal(db_jobs_active(f->db, &look_b, &act, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(act[0].name, "groups");
	assert_string_equal(act[1].name, "cpu-late");
	db_active_jobs_free(act, n);
	/* The any-type look and the typed ones overlap: no job twice. */
	assert_int_equal(db_jobs_active(f->db, &look_both, &act, &n, &err), 0);
	assert_int_equal(n, 8 + 2);
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "gpu-%zu", i);
		assert_string_equal(act[i].name, name);
	}
	assert_string_equal(act[8].name, "groups");
	assert_string_equal(act[9].name, "cpu-late");
	db_active_jobs_free(act, n);
	buf_release(&err);
}

/*
 * Group commit: many threads inserting at once, duplicates among them;
 * every insert that was acknowledged is there after a reopen, and the WAL
 * was copied into the database meanwhile (a WAL that is never
 * checkpointed grows without end and slows every read).
 */
#define N_INSERTERS 16
#define N_INSERTS 150

struct inserter {
	struct db *db;
	int idx;
	int ok;
	int conflicts;
	int failures;
};

static void *inserter_main(void *arg)
{
	static char big[4096];
	struct inserter *w = arg;
	struct buf err = BUF_INIT;
	char name[32];
	int i;

	if (!big[0])
		memset(big, 'x', sizeof(big) - 1);
	for (i = 0; i < N_INSERTS; i++) {
		struct db_job in;
		int ret;

		/* Every tenth name is shared by all threads. */
		if (i % 10 == 0)
			snprintf(name, sizeof(name), "shared-%d", i);
		else
			snprintf(name, sizeof(name), "w%d-%d", w->idx, i);
		in = make_job(name, "InProgress", "Starting", T0 + i);
		in.spec_json = big;
		ret = db_job_insert(w->db, &in, "Starting the training job",
				    &err);
		if (ret == 0)
			w->ok++;
		else if (ret == ERR_CONFLICT)
			w->conflicts++;
		else
			w->failures++;
		buf_reset(&err);
	}
	buf_release(&err);
	return NULL;
}

static void test_group_commit_durable(void **state)
{
	struct fixture *f = *state;
	struct inserter w[N_INSERTERS];
	pthread_t th[N_INSERTERS];
	struct buf err = BUF_INIT;
	struct stat st;
	int ok = 0;
	int conflicts = 0;
	int i;

	for (i = 0; i < N_INSERTERS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].db = f->db;
		w[i].idx = i;
		assert_int_equal(
			pthread_create(&th[i], NULL, inserter_main, &w[i]), 0);
	}
	for (i = 0; i < N_INSERTERS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].failures, 0);
		ok += w[i].ok;
		conflicts += w[i].conflicts;
	}
	/* Each shared name went in once. */
	assert_int_equal(ok, N_INSERTERS * (N_INSERTS - N_INSERTS / 10) +
				     N_INSERTS / 10);
	assert_int_equal(conflicts, (N_INSERTERS - 1) * (N_INSERTS / 10));
	/* About 10 MB went through the WAL: checkpoints copied it. */
	for (i = 0; i < 200; i++) {
		assert_int_equal(stat(f->path, &st), 0);
		if (st.st_size > (1 << 20))
			break;
		usleep(50 * 1000);
	}
	assert_true(st.st_size > (1 << 20));
	db_close(f->db);
	f->db = NULL;
	assert_int_equal(db_open(f->path, 1, &f->db, &err), 0);
	assert_int_equal(db_job_count(f->db, NULL), ok);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_creates_schema, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_open_bad_path, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reopen_keeps_data, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_insert_get_roundtrip,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_insert_duplicate, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_get_unknown, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_change_state_cas, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_change_state_transitions,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_change_state_same_secondary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_times_at_least_one_second,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_reason, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requeued_ms, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_drains_and_planned, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_jobs_with_status, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_job_count, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_metric_range_and_names,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_insert_waiting, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_queue_by_type, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_group_commit_durable,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_use, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("db/db", tests, NULL, NULL);
}
