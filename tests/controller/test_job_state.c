/*
 * Tests controller/job_state.c: the transition table against the paths of
 * the contract (section 3), the status names, and ctrl_job_transition()
 * against a real store in a temporary directory.
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
#include "controller/job_state.h"
#include "db/db.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/log.h"

#define T0 1700000000000LL

static const enum ctrl_job_state in_progress[] = {
	CTRL_JOB_STARTING,    CTRL_JOB_PENDING,	  CTRL_JOB_DOWNLOADING,
	CTRL_JOB_TRAINING,    CTRL_JOB_UPLOADING, CTRL_JOB_RESTARTING,
	CTRL_JOB_INTERRUPTED,
};
#define N_IN_PROGRESS (sizeof(in_progress) / sizeof(in_progress[0]))

static const enum ctrl_job_state terminal[] = {
	CTRL_JOB_STOPPED,   CTRL_JOB_MAX_RUNTIME, CTRL_JOB_MAX_WAIT,
	CTRL_JOB_COMPLETED, CTRL_JOB_FAILED,
};
#define N_TERMINAL (sizeof(terminal) / sizeof(terminal[0]))

static void expect_edge(enum ctrl_job_state from, enum ctrl_job_state to,
			int allowed)
{
	if (ctrl_job_transition_allowed(from, to) != allowed)
		fail_msg("%s -> %s should be %s",
			 ctrl_job_state_secondary(from),
			 ctrl_job_state_secondary(to),
			 allowed ? "allowed" : "forbidden");
}

static void test_normal_path(void **state)
{
	(void)state;
	expect_edge(CTRL_JOB_STARTING, CTRL_JOB_DOWNLOADING, 1);
	expect_edge(CTRL_JOB_DOWNLOADING, CTRL_JOB_TRAINING, 1);
	expect_edge(CTRL_JOB_TRAINING, CTRL_JOB_UPLOADING, 1);
	expect_edge(CTRL_JOB_UPLOADING, CTRL_JOB_COMPLETED, 1);
	/* A host lost before its upload arrived: another attempt. */
	expect_edge(CTRL_JOB_UPLOADING, CTRL_JOB_RESTARTING, 1);
	/* Downloading is optional (File mode only). */
	expect_edge(CTRL_JOB_STARTING, CTRL_JOB_TRAINING, 1);
	/* Waiting for capacity, then starting again. */
	expect_edge(CTRL_JOB_STARTING, CTRL_JOB_PENDING, 1);
	expect_edge(CTRL_JOB_PENDING, CTRL_JOB_STARTING, 1);
	/* Preemption, from any running state, goes back to Starting (the
	 * queue); an upload under way is never interrupted. */
	expect_edge(CTRL_JOB_STARTING, CTRL_JOB_INTERRUPTED, 1);
	expect_edge(CTRL_JOB_DOWNLOADING, CTRL_JOB_INTERRUPTED, 1);
	expect_edge(CTRL_JOB_TRAINING, CTRL_JOB_INTERRUPTED, 1);
	expect_edge(CTRL_JOB_UPLOADING, CTRL_JOB_INTERRUPTED, 0);
	expect_edge(CTRL_JOB_INTERRUPTED, CTRL_JOB_STARTING, 1);
	expect_edge(CTRL_JOB_INTERRUPTED, CTRL_JOB_TRAINING, 0);
}

static void test_stop_path(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N_IN_PROGRESS; i++)
		expect_edge(in_progress[i], CTRL_JOB_STOPPING, 1);
	expect_edge(CTRL_JOB_STOPPING, CTRL_JOB_STOPPED, 1);
	expect_edge(CTRL_JOB_STOPPING, CTRL_JOB_MAX_RUNTIME, 1);
	expect_edge(CTRL_JOB_STOPPING, CTRL_JOB_MAX_WAIT, 1);
	/* Stopped states are only reached through Stopping. */
	for (i = 0; i < N_IN_PROGRESS; i++) {
		expect_edge(in_progress[i], CTRL_JOB_STOPPED, 0);
		expect_edge(in_progress[i], CTRL_JOB_MAX_RUNTIME, 0);
		expect_edge(in_progress[i], CTRL_JOB_MAX_WAIT, 0);
	}
}

static void test_failure_path(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N_IN_PROGRESS; i++)
		expect_edge(in_progress[i], CTRL_JOB_FAILED, 1);
	/* Killing the ranks can itself fail. */
	expect_edge(CTRL_JOB_STOPPING, CTRL_JOB_FAILED, 1);
}

static void test_restart_path(void **state)
{
	(void)state;
	expect_edge(CTRL_JOB_TRAINING, CTRL_JOB_RESTARTING, 1);
	expect_edge(CTRL_JOB_RESTARTING, CTRL_JOB_STARTING, 1);
	expect_edge(CTRL_JOB_RESTARTING, CTRL_JOB_TRAINING, 0);
	expect_edge(CTRL_JOB_RESTARTING, CTRL_JOB_COMPLETED, 0);
}

static void test_forbidden(void **state)
{
	size_t i;
	int to;

	(void)state;
	for (i = 0; i < N_TERMINAL; i++) {
		assert_true(ctrl_job_state_terminal(terminal[i]));
		for (to = 0; to < CTRL_JOB_NSTATES; to++)
			expect_edge(terminal[i], (enum ctrl_job_state)to, 0);
	}
	for (i = 0; i < N_IN_PROGRESS; i++)
		assert_false(ctrl_job_state_terminal(in_progress[i]));
	assert_false(ctrl_job_state_terminal(CTRL_JOB_STOPPING));

	expect_edge(CTRL_JOB_COMPLETED, CTRL_JOB_TRAINING, 0);
	expect_edge(CTRL_JOB_STOPPING, CTRL_JOB_TRAINING, 0);
	expect_edge(CTRL_JOB_STOPPING, CTRL_JOB_STARTING, 0);
	expect_edge(CTRL_JOB_STOPPING, CTRL_JOB_COMPLETED, 0);
	expect_edge(CTRL_JOB_STARTING, CTRL_JOB_COMPLETED, 0);
	expect_edge(CTRL_JOB_STARTING, CTRL_JOB_UPLOADING, 0);
	expect_edge(CTRL_JOB_DOWNLOADING, CTRL_JOB_COMPLETED, 0);
	expect_edge(CTRL_JOB_TRAINING, CTRL_JOB_COMPLETED, 0);
	expect_edge(CTRL_JOB_UPLOADING, CTRL_JOB_TRAINING, 0);
	expect_edge(CTRL_JOB_TRAINING, CTRL_JOB_DOWNLOADING, 0);

	/* Out-of-range values are never allowed. */
	expect_edge((enum ctrl_job_state)CTRL_JOB_NSTATES, CTRL_JOB_FAILED, 0);
	expect_edge(CTRL_JOB_STARTING, (enum ctrl_job_state)CTRL_JOB_NSTATES,
		    0);
	expect_edge((enum ctrl_job_state) - 1, CTRL_JOB_STARTING, 0);
	expect_edge(CTRL_JOB_STARTING, (enum ctrl_job_state)99, 0);
}

/* Every edge stays inside what the contract's status model allows. */
static void test_table_invariants(void **state)
{
	int from, to;

	(void)state;
	for (from = 0; from < CTRL_JOB_NSTATES; from++) {
		int out = 0;

		for (to = 0; to < CTRL_JOB_NSTATES; to++) {
			const char *p_from, *p_to;

			if (!ctrl_job_transition_allowed(
				    (enum ctrl_job_state)from,
				    (enum ctrl_job_state)to))
				continue;
			out++;
			assert_int_not_equal(from, to);
			p_from = ctrl_job_state_primary(
				(enum ctrl_job_state)from);
			p_to = ctrl_job_state_primary((enum ctrl_job_state)to);
			/* Stopping only leads to Stopped or Failed. */
			if (!strcmp(p_from, "Stopping"))
				assert_true(!strcmp(p_to, "Stopped") ||
					    !strcmp(p_to, "Failed"));
			/* Stopped is only entered from Stopping. */
			if (!strcmp(p_to, "Stopped"))
				assert_string_equal(p_from, "Stopping");
			/* Completed only from Uploading. */
			if (to == CTRL_JOB_COMPLETED)
				assert_int_equal(from, CTRL_JOB_UPLOADING);
		}
		/* Only terminal states are dead ends. */
		assert_int_equal(out == 0, ctrl_job_state_terminal(
						   (enum ctrl_job_state)from));
	}
}

static void test_names(void **state)
{
	static const struct {
		enum ctrl_job_state s;
		const char *primary;
		const char *secondary;
	} want[] = {
		{ CTRL_JOB_STARTING, "InProgress", "Starting" },
		{ CTRL_JOB_PENDING, "InProgress", "Pending" },
		{ CTRL_JOB_DOWNLOADING, "InProgress", "Downloading" },
		{ CTRL_JOB_TRAINING, "InProgress", "Training" },
		{ CTRL_JOB_UPLOADING, "InProgress", "Uploading" },
		{ CTRL_JOB_RESTARTING, "InProgress", "Restarting" },
		{ CTRL_JOB_INTERRUPTED, "InProgress", "Interrupted" },
		{ CTRL_JOB_STOPPING, "Stopping", "Stopping" },
		{ CTRL_JOB_STOPPED, "Stopped", "Stopped" },
		{ CTRL_JOB_MAX_RUNTIME, "Stopped", "MaxRuntimeExceeded" },
		{ CTRL_JOB_MAX_WAIT, "Stopped", "MaxWaitTimeExceeded" },
		{ CTRL_JOB_COMPLETED, "Completed", "Completed" },
		{ CTRL_JOB_FAILED, "Failed", "Failed" },
	};
	size_t i;

	(void)state;
	assert_int_equal(sizeof(want) / sizeof(want[0]), CTRL_JOB_NSTATES);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_string_equal(ctrl_job_state_primary(want[i].s),
				    want[i].primary);
		assert_string_equal(ctrl_job_state_secondary(want[i].s),
				    want[i].secondary);
	}
	assert_string_equal(
		ctrl_job_state_primary((enum ctrl_job_state)CTRL_JOB_NSTATES),
		"Unknown");
	assert_string_equal(ctrl_job_state_secondary((enum ctrl_job_state) - 1),
			    "Unknown");
}

static void test_parse(void **state)
{
	static const char *const bad[] = {
		"",	    "Unknown",	 "training",
		"TRAINING", "Training ", "InProgress",
		"Deleting", "Updating",	 "LaunchingMLInstances",
	};
	enum ctrl_job_state s;
	size_t i;
	int k;

	(void)state;
	for (k = 0; k < CTRL_JOB_NSTATES; k++) {
		s = (enum ctrl_job_state) - 1;
		assert_int_equal(
			ctrl_job_state_parse(ctrl_job_state_secondary(
						     (enum ctrl_job_state)k),
					     &s),
			0);
		assert_int_equal(s, k);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = CTRL_JOB_TRAINING;
		assert_int_equal(ctrl_job_state_parse(bad[i], &s), ERR_INVALID);
		assert_int_equal(s, CTRL_JOB_TRAINING);
	}
}

/* ctrl_job_transition() against a store */

struct fixture {
	char dir[256];
	struct ctrl_ctx ctx;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (ctx_fixture_open(&f->ctx, f->dir, sizeof(f->dir), "state")) {
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

static void insert_starting(struct db *db, const char *name)
{
	struct db_job j;
	struct buf err = BUF_INIT;

	memset(&j, 0, sizeof(j));
	j.name = (char *)name;
	j.arn = (char *)"arn:aws:sagemaker:us-east-1:123456789012:"
			"training-job/x";
	j.status = (char *)"InProgress";
	j.secondary_status = (char *)"Starting";
	j.request_json = (char *)"{}";
	j.instance_count = 1;
	j.creation_ms = T0;
	assert_int_equal(
		db_job_insert(db, &j, "Starting the training job", &err), 0);
	buf_release(&err);
}

static void get(struct db *db, const char *name, struct db_job *j)
{
	struct buf err = BUF_INIT;

	assert_int_equal(db_job_get(db, name, j, &err), 0);
	buf_release(&err);
}

static int move(struct ctrl_ctx *ctx, const char *name,
		enum ctrl_job_state from, enum ctrl_job_state to,
		const char *msg, const char *reason)
{
	struct buf err = BUF_INIT;
	int ret = ctrl_job_transition(ctx, name, from, to, msg, reason, &err);

	/* A conflict says what the job's state is or why it cannot move. */
	if (ret == ERR_CONFLICT)
		assert_true(err.len > 0);
	buf_release(&err);
	return ret;
}

static void test_transition_forbidden(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	struct db_job j;

	insert_starting(f->ctx.db, "job-a");
	assert_int_equal(
		ctrl_job_transition(&f->ctx, "job-a", CTRL_JOB_STARTING,
				    CTRL_JOB_COMPLETED, "done", NULL, &err),
		ERR_CONFLICT);
	assert_non_null(strstr(err.data, "Starting"));
	assert_non_null(strstr(err.data, "Completed"));
	buf_release(&err);
	/* Forbidden by the table, even though the job is in `from`. */
	assert_int_equal(move(&f->ctx, "job-a", CTRL_JOB_STARTING,
			      CTRL_JOB_STOPPED, NULL, NULL),
			 ERR_CONFLICT);
	/* Allowed by the table, but the job is not in `from`. */
	assert_int_equal(move(&f->ctx, "job-a", CTRL_JOB_TRAINING,
			      CTRL_JOB_UPLOADING, NULL, NULL),
			 ERR_CONFLICT);
	/* Nor is a job that is not Stopping. */
	assert_int_equal(move(&f->ctx, "job-a", CTRL_JOB_STOPPING,
			      CTRL_JOB_STOPPED, NULL, NULL),
			 ERR_CONFLICT);

	get(f->ctx.db, "job-a", &j);
	assert_string_equal(j.status, "InProgress");
	assert_string_equal(j.secondary_status, "Starting");
	assert_int_equal(j.last_modified_ms, T0);
	assert_int_equal(j.start_ms, 0);
	assert_int_equal(j.end_ms, 0);
	assert_int_equal(j.n_transitions, 1);
	assert_int_equal(j.transitions[0].end_ms, 0);
	db_job_release(&j);

	assert_int_equal(move(&f->ctx, "ghost", CTRL_JOB_STARTING,
			      CTRL_JOB_DOWNLOADING, NULL, NULL),
			 ERR_NOTFOUND);
}

static void test_transition_normal(void **state)
{
	struct fixture *f = *state;
	struct db_job j;
	size_t i;
	static const char *const want[] = { "Starting", "Downloading",
					    "Training", "Uploading",
					    "Completed" };

	insert_starting(f->ctx.db, "job-b");
	assert_int_equal(move(&f->ctx, "job-b", CTRL_JOB_STARTING,
			      CTRL_JOB_DOWNLOADING, "Downloading input data",
			      NULL),
			 0);
	get(f->ctx.db, "job-b", &j);
	assert_string_equal(j.status, "InProgress");
	assert_string_equal(j.secondary_status, "Downloading");
	assert_true(j.start_ms > T0);
	assert_true(j.last_modified_ms >= j.start_ms);
	assert_int_equal(j.end_ms, 0);
	assert_int_equal(j.n_transitions, 2);
	assert_true(j.transitions[0].end_ms > 0);
	assert_string_equal(j.transitions[1].message, "Downloading input data");
	db_job_release(&j);

	assert_int_equal(move(&f->ctx, "job-b", CTRL_JOB_DOWNLOADING,
			      CTRL_JOB_TRAINING, NULL, NULL),
			 0);
	assert_int_equal(move(&f->ctx, "job-b", CTRL_JOB_TRAINING,
			      CTRL_JOB_UPLOADING, NULL, NULL),
			 0);
	/* A second writer that saw Training loses. */
	assert_int_equal(move(&f->ctx, "job-b", CTRL_JOB_TRAINING,
			      CTRL_JOB_FAILED, NULL, "late"),
			 ERR_CONFLICT);
	assert_int_equal(move(&f->ctx, "job-b", CTRL_JOB_UPLOADING,
			      CTRL_JOB_COMPLETED, "Training job completed",
			      NULL),
			 0);

	get(f->ctx.db, "job-b", &j);
	assert_string_equal(j.status, "Completed");
	assert_string_equal(j.secondary_status, "Completed");
	assert_null(j.failure_reason);
	assert_true(j.end_ms >= j.start_ms);
	assert_true(j.training_s >= 1);
	assert_true(j.billable_s >= 1);
	assert_int_equal(j.n_transitions, 5);
	for (i = 0; i < 5; i++) {
		assert_string_equal(j.transitions[i].status, want[i]);
		if (i < 4)
			assert_true(j.transitions[i].end_ms > 0);
		else
			assert_int_equal(j.transitions[i].end_ms, 0);
	}
	db_job_release(&j);

	/* Terminal: nothing moves it any more. */
	assert_int_equal(move(&f->ctx, "job-b", CTRL_JOB_COMPLETED,
			      CTRL_JOB_TRAINING, NULL, NULL),
			 ERR_CONFLICT);
}

static void test_transition_stop_and_fail(void **state)
{
	struct fixture *f = *state;
	struct db_job j;

	/* Stop during training, ended by MaxRuntime. */
	insert_starting(f->ctx.db, "job-c");
	assert_int_equal(move(&f->ctx, "job-c", CTRL_JOB_STARTING,
			      CTRL_JOB_TRAINING, NULL, NULL),
			 0);
	assert_int_equal(move(&f->ctx, "job-c", CTRL_JOB_TRAINING,
			      CTRL_JOB_STOPPING, "MaxRuntimeInSeconds reached",
			      NULL),
			 0);
	get(f->ctx.db, "job-c", &j);
	assert_string_equal(j.status, "Stopping");
	assert_string_equal(j.secondary_status, "Stopping");
	assert_int_equal(j.end_ms, 0);
	db_job_release(&j);
	assert_int_equal(move(&f->ctx, "job-c", CTRL_JOB_STOPPING,
			      CTRL_JOB_TRAINING, NULL, NULL),
			 ERR_CONFLICT);
	assert_int_equal(move(&f->ctx, "job-c", CTRL_JOB_STOPPING,
			      CTRL_JOB_MAX_RUNTIME, NULL, NULL),
			 0);
	get(f->ctx.db, "job-c", &j);
	assert_string_equal(j.status, "Stopped");
	assert_string_equal(j.secondary_status, "MaxRuntimeExceeded");
	assert_true(j.end_ms > 0);
	assert_true(j.training_s >= 1);
	assert_int_equal(j.n_transitions, 4);
	db_job_release(&j);

	/* Failure while starting, with a reason. */
	insert_starting(f->ctx.db, "job-d");
	assert_int_equal(move(&f->ctx, "job-d", CTRL_JOB_STARTING,
			      CTRL_JOB_FAILED, "Training job failed",
			      "CapacityError: no free ml.p4d.24xlarge"),
			 0);
	get(f->ctx.db, "job-d", &j);
	assert_string_equal(j.status, "Failed");
	assert_string_equal(j.secondary_status, "Failed");
	assert_string_equal(j.failure_reason,
			    "CapacityError: no free ml.p4d.24xlarge");
	assert_true(j.end_ms > 0);
	/* It never started, so there is no training time. */
	assert_int_equal(j.start_ms, 0);
	db_job_release(&j);

	/* Restart: Training -> Restarting -> Starting -> Training. */
	insert_starting(f->ctx.db, "job-e");
	assert_int_equal(move(&f->ctx, "job-e", CTRL_JOB_STARTING,
			      CTRL_JOB_TRAINING, NULL, NULL),
			 0);
	assert_int_equal(move(&f->ctx, "job-e", CTRL_JOB_TRAINING,
			      CTRL_JOB_RESTARTING, "InternalServerError", NULL),
			 0);
	assert_int_equal(move(&f->ctx, "job-e", CTRL_JOB_RESTARTING,
			      CTRL_JOB_STARTING, NULL, NULL),
			 0);
	get(f->ctx.db, "job-e", &j);
	assert_string_equal(j.status, "InProgress");
	assert_string_equal(j.secondary_status, "Starting");
	assert_int_equal(j.n_transitions, 4);
	assert_string_equal(j.transitions[2].status, "Restarting");
	assert_string_equal(j.transitions[3].status, "Starting");
	db_job_release(&j);
	assert_int_equal(db_job_count(f->ctx.db, "InProgress"), 1);
}

static void test_failure_internal(void **state)
{
	(void)state;
	assert_true(ctrl_failure_internal("InternalServerError"));
	assert_true(ctrl_failure_internal("InternalServerError: host lost"));
	assert_false(ctrl_failure_internal("InternalServerErro"));
	assert_false(ctrl_failure_internal("ClientError: bad image"));
	assert_false(ctrl_failure_internal("AlgorithmError: exit 1"));
	assert_false(ctrl_failure_internal(""));
	assert_false(ctrl_failure_internal(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normal_path),
		cmocka_unit_test(test_stop_path),
		cmocka_unit_test(test_failure_path),
		cmocka_unit_test(test_restart_path),
		cmocka_unit_test(test_forbidden),
		cmocka_unit_test(test_table_invariants),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_failure_internal),
		cmocka_unit_test_setup_teardown(test_transition_forbidden,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_transition_normal, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_transition_stop_and_fail,
						setup, teardown),
	};

	return cmocka_run_group_tests_name("controller/job_state", tests, NULL,
					   NULL);
}
