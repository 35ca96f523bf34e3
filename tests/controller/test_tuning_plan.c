/*
 * Tests controller/tuning/plan.c: ctrl_tuning_plan() over a table of
 * tuning jobs (launching, the budget, recorded rows after a restart, Stop,
 * every end condition, convergence, early stopping by the median rule and
 * by Hyperband), ctrl_tuning_summarize()'s counters and best job, and
 * ctrl_tuning_next()'s choice between a retry and a new point.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/tuning/plan.h"

#define MAX_KIDS 16

/* One training job of a row; zero is a recorded, created job that does
 * not exist (any more). */
struct kid_row {
	const char *status; /* NULL: the training job does not exist */
	const char *reason; /* FailureReason */
	int unborn;	    /* recorded, not created yet */
	int retry;	    /* 1-based index of the kid it retries, 0: none */
	int has_obj;
	double obj;
	int64_t end_ms;
	const char *early_stop; /* told to stop already */
	int def;
	double curve[12]; /* reports so far (n_curve of them) */
	size_t n_curve;
};

struct row {
	const char *name;
	/* in */
	const char *status; /* the tuning job's; NULL: InProgress */
	enum tune_strategy strategy;
	int max_jobs, max_parallel, early, maximize;
	int has_target;
	double target;
	int not_improving, convergence;
	int64_t max_runtime_s, now, convergence_ms;
	int convergence_unrecorded;
	int with_curves;
	struct kid_row kids[MAX_KIDS];
	size_t n;
	/* out */
	enum ctrl_tuning_act act;
	const char *why; /* exact; NULL: none */
	int n_launch;
	size_t n_halt;
	const char *halt_msg; /* substring, NULL: empty */
	size_t n_stops;
	const char *stop_why; /* substring of the first stop's */
	const char *to;
	const char *reason; /* substring, NULL: empty */
};

/* clang-format off */
#define DONE(o, e) { .status = "Completed", .has_obj = 1, .obj = (o), .end_ms = (e) }
#define RUN { .status = "InProgress" }
#define FAIL(r) { .status = "Failed", .reason = (r), .end_ms = 1 }
#define CURVE(...) { .status = "InProgress", .curve = { __VA_ARGS__ }, \
	.n_curve = sizeof((double[]){ __VA_ARGS__ }) / sizeof(double) }

#define TWELVE_FLAT                                                           \
	DONE(1, 1), DONE(1, 2), DONE(1, 3), DONE(1, 4), DONE(1, 5),           \
	DONE(1, 6), DONE(1, 7), DONE(1, 8), DONE(1, 9), DONE(1, 10),          \
	DONE(1, 11), DONE(1, 12)

static const struct row rows[] = {
	{ .name = "a new tuning job launches MaxParallelTrainingJobs",
	  .max_jobs = 10, .max_parallel = 3,
	  .act = CTRL_TUNING_LAUNCH, .n_launch = 3 },
	{ .name = "running jobs take their room",
	  .max_jobs = 10, .max_parallel = 3, .kids = { RUN, RUN }, .n = 2,
	  .act = CTRL_TUNING_LAUNCH, .n_launch = 1 },
	{ .name = "no room: nothing to do",
	  .max_jobs = 10, .max_parallel = 2, .kids = { RUN, RUN }, .n = 2,
	  .act = CTRL_TUNING_NOTHING },
	{ .name = "the budget caps the launch",
	  .max_jobs = 4, .max_parallel = 3,
	  .kids = { DONE(0.5, 1), DONE(0.4, 2), DONE(0.3, 3) }, .n = 3,
	  .act = CTRL_TUNING_LAUNCH, .n_launch = 1 },
	{ .name = "budget spent, one runs: it may finish",
	  .max_jobs = 2, .max_parallel = 2,
	  .kids = { DONE(0.5, 1), RUN }, .n = 2,
	  .act = CTRL_TUNING_WIND_DOWN, .why = "" },
	{ .name = "budget spent, nothing runs: Completed",
	  .max_jobs = 2, .max_parallel = 2,
	  .kids = { DONE(0.5, 1), DONE(0.4, 2) }, .n = 2,
	  .act = CTRL_TUNING_END, .why = "", .to = "Completed" },
	{ .name = "a row recorded before a restart is created first",
	  .max_jobs = 4, .max_parallel = 2,
	  .kids = { DONE(0.5, 1), { .unborn = 1 } }, .n = 2,
	  .act = CTRL_TUNING_CREATE },
	{ .name = "Stopping creates nothing and stops what runs",
	  .status = "Stopping", .max_jobs = 4, .max_parallel = 2,
	  .kids = { RUN, { .unborn = 1 } }, .n = 2,
	  .act = CTRL_TUNING_WIND_DOWN, .why = "stopped", .n_halt = 1,
	  .halt_msg = "Stopping: hyperparameter tuning job tj is stopping" },
	{ .name = "Stopping, nothing runs: Stopped",
	  .status = "Stopping", .max_jobs = 4, .max_parallel = 2,
	  .kids = { DONE(0.5, 1) }, .n = 1,
	  .act = CTRL_TUNING_END, .why = "stopped", .to = "Stopped" },
	{ .name = "budget spent, none succeeded: Failed with the first reason",
	  .max_jobs = 2, .max_parallel = 2,
	  .kids = { FAIL("AlgorithmError: exit 1"), FAIL("AlgorithmError: exit 2") },
	  .n = 2,
	  .act = CTRL_TUNING_END, .why = "", .to = "Failed",
	  .reason = "No training job succeeded with an objective metric "
		    "value: AlgorithmError: exit 1" },
	{ .name = "three failures, none succeeded: fail fast",
	  .max_jobs = 10, .max_parallel = 2,
	  .kids = { FAIL("AlgorithmError: a"), FAIL("AlgorithmError: b"),
		    FAIL("AlgorithmError: c") }, .n = 3,
	  .act = CTRL_TUNING_END, .why = "failed", .to = "Failed",
	  .reason = ": AlgorithmError: a" },
	{ .name = "fail fast while one runs: it is stopped",
	  .max_jobs = 10, .max_parallel = 4,
	  .kids = { FAIL("AlgorithmError: a"), FAIL("AlgorithmError: b"),
		    FAIL("AlgorithmError: c"), RUN }, .n = 4,
	  .act = CTRL_TUNING_WIND_DOWN, .why = "failed", .n_halt = 1,
	  .halt_msg = "Stopping: hyperparameter tuning job tj failed" },
	{ .name = "internal errors do not fail fast",
	  .max_jobs = 10, .max_parallel = 1,
	  .kids = { FAIL("InternalServerError: a"),
		    FAIL("InternalServerError: b"),
		    FAIL("InternalServerError: c") }, .n = 3,
	  .act = CTRL_TUNING_LAUNCH, .n_launch = 1 },
	{ .name = "target reached (Minimize): the running job is stopped",
	  .max_jobs = 10, .max_parallel = 2, .has_target = 1, .target = 0.1,
	  .kids = { DONE(0.05, 1), RUN }, .n = 2,
	  .act = CTRL_TUNING_WIND_DOWN,
	  .why = "the objective reached TargetObjectiveMetricValue",
	  .n_halt = 1, .halt_msg = "job tj the objective reached" },
	{ .name = "target not reached (Minimize)",
	  .max_jobs = 10, .max_parallel = 2, .has_target = 1, .target = 0.1,
	  .kids = { DONE(0.2, 1) }, .n = 1,
	  .act = CTRL_TUNING_LAUNCH, .n_launch = 2 },
	{ .name = "target reached (Maximize): Completed",
	  .max_jobs = 10, .max_parallel = 2, .maximize = 1, .has_target = 1,
	  .target = 0.9, .kids = { DONE(0.5, 1), DONE(0.95, 2) }, .n = 2,
	  .act = CTRL_TUNING_END,
	  .why = "the objective reached TargetObjectiveMetricValue",
	  .to = "Completed" },
	{ .name = "the best did not improve in N jobs",
	  .max_jobs = 10, .max_parallel = 2, .not_improving = 2,
	  .kids = { DONE(0.1, 1), DONE(0.2, 2), DONE(0.3, 3) }, .n = 3,
	  .act = CTRL_TUNING_END,
	  .why = "the best objective did not improve in "
		 "MaxNumberOfTrainingJobsNotImproving training jobs",
	  .to = "Completed" },
	{ .name = "improving in end order, not in row order",
	  .max_jobs = 10, .max_parallel = 1, .not_improving = 2,
	  .kids = { DONE(0.1, 3), DONE(0.2, 2), DONE(0.3, 1) }, .n = 3,
	  .act = CTRL_TUNING_LAUNCH, .n_launch = 1 },
	{ .name = "MaxRuntimeInSeconds reached",
	  .max_jobs = 10, .max_parallel = 2, .max_runtime_s = 10,
	  .now = 10000, .kids = { DONE(0.5, 1) }, .n = 1,
	  .act = CTRL_TUNING_END, .why = "MaxRuntimeInSeconds was reached",
	  .to = "Completed" },
	{ .name = "MaxRuntimeInSeconds not yet",
	  .max_jobs = 10, .max_parallel = 1, .max_runtime_s = 10,
	  .now = 9999, .act = CTRL_TUNING_LAUNCH, .n_launch = 1 },
	{ .name = "convergence recorded earlier ends it",
	  .max_jobs = 10, .max_parallel = 2, .convergence_ms = 5,
	  .kids = { DONE(0.5, 1) }, .n = 1,
	  .act = CTRL_TUNING_END, .why = "the objective converged",
	  .to = "Completed" },
	{ .name = "convergence found: record it first",
	  .max_jobs = 20, .max_parallel = 2, .convergence = 1,
	  .kids = { TWELVE_FLAT }, .n = 12,
	  .act = CTRL_TUNING_CONVERGE, .why = "the objective converged" },
	{ .name = "convergence found but not recorded: judged without it",
	  .max_jobs = 20, .max_parallel = 2, .convergence = 1,
	  .convergence_unrecorded = 1, .kids = { TWELVE_FLAT }, .n = 12,
	  .act = CTRL_TUNING_LAUNCH, .n_launch = 2 },
	{ .name = "convergence off: flat results go on",
	  .max_jobs = 20, .max_parallel = 2, .kids = { TWELVE_FLAT }, .n = 12,
	  .act = CTRL_TUNING_LAUNCH, .n_launch = 2 },
	{ .name = "the last quarter still improves: no convergence",
	  .max_jobs = 20, .max_parallel = 1, .convergence = 1,
	  .kids = { DONE(12, 1), DONE(11, 2), DONE(10, 3), DONE(9, 4),
		    DONE(8, 5), DONE(7, 6), DONE(6, 7), DONE(5, 8),
		    DONE(4, 9), DONE(3, 10), DONE(2, 11), DONE(1, 12) },
	  .n = 12, .act = CTRL_TUNING_LAUNCH, .n_launch = 1 },
	{ .name = "Grid without a limit runs the whole grid",
	  .strategy = TUNE_GRID, .max_parallel = 10,
	  .act = CTRL_TUNING_LAUNCH, .n_launch = 4 },
	{ .name = "Grid: MaxNumberOfTrainingJobs below the grid",
	  .strategy = TUNE_GRID, .max_jobs = 3, .max_parallel = 10,
	  .act = CTRL_TUNING_LAUNCH, .n_launch = 3 },
	{ .name = "median rule: the worst running job stops",
	  .strategy = TUNE_BAYESIAN, .early = 1, .with_curves = 1,
	  .max_jobs = 10, .max_parallel = 4,
	  .kids = { CURVE(1, 1, 1), CURVE(1, 1, 1), CURVE(1, 1, 1),
		    CURVE(5, 5, 5) }, .n = 4,
	  .act = CTRL_TUNING_NOTHING, .n_stops = 1,
	  .stop_why = "Stopped early by hyperparameter tuning job tj: loss "
		      "5 after 3 reports is worse than the median of the "
		      "other training jobs' running averages" },
	{ .name = "median rule: a job told to stop is not judged again",
	  .strategy = TUNE_BAYESIAN, .early = 1, .with_curves = 1,
	  .max_jobs = 10, .max_parallel = 4,
	  .kids = { CURVE(1, 1, 1), CURVE(1, 1, 1), CURVE(1, 1, 1),
		    { .status = "InProgress", .early_stop = "x",
		      .curve = { 5, 5, 5 }, .n_curve = 3 } }, .n = 4,
	  .act = CTRL_TUNING_NOTHING, .n_stops = 0 },
	{ .name = "early stopping off: curves are not judged",
	  .strategy = TUNE_BAYESIAN, .with_curves = 1,
	  .max_jobs = 10, .max_parallel = 4,
	  .kids = { CURVE(1, 1, 1), CURVE(1, 1, 1), CURVE(1, 1, 1),
		    CURVE(5, 5, 5) }, .n = 4,
	  .act = CTRL_TUNING_NOTHING, .n_stops = 0 },
	{ .name = "Hyperband: past MaxResource stops",
	  .strategy = TUNE_HYPERBAND, .with_curves = 1,
	  .max_jobs = 10, .max_parallel = 1,
	  .kids = { CURVE(1, 1, 1, 1, 1, 1, 1, 1, 1, 1) }, .n = 1,
	  .act = CTRL_TUNING_NOTHING, .n_stops = 1,
	  .stop_why = "Stopped by hyperparameter tuning job tj: it went past "
		      "MaxResource (9 reports of loss)" },
	{ .name = "Hyperband: not among the best third at a rung stops",
	  .strategy = TUNE_HYPERBAND, .with_curves = 1,
	  .max_jobs = 10, .max_parallel = 4,
	  .kids = { CURVE(1, 1, 1), CURVE(2, 2, 2), CURVE(3, 3, 3),
		    CURVE(9, 9, 9) }, .n = 4,
	  .act = CTRL_TUNING_NOTHING, .n_stops = 3,
	  .stop_why = "(Hyperband): at the last rung of successive halving "
		      "it reached, its loss was not among the best third "
		      "(now 2 after 3 reports)" },
};
/* clang-format on */

/* A categorical range of four values: Grid's space in the table. */
static const struct tune_param grid_param = { .name = "p",
					      .kind = TUNE_CATEGORICAL,
					      .n_values = 4 };

struct built {
	struct ctrl_tuning_job j;
	struct api_tuning_def def;
	struct db_tuning_child rows[MAX_KIDS];
	struct ctrl_tuning_kid kids[MAX_KIDS];
	struct tune_curve curves[MAX_KIDS];
};

static void build(const struct row *r, struct built *b)
{
	size_t i;

	memset(b, 0, sizeof(*b));
	b->def.metric = (char *)"loss";
	b->def.maximize = r->maximize;
	b->def.hb_max = 9;
	if (r->strategy == TUNE_GRID) {
		b->def.space.params = &grid_param;
		b->def.space.n = 1;
	}
	b->j.t.name = (char *)"tj";
	b->j.t.status = (char *)(r->status ? r->status : "InProgress");
	b->j.t.convergence_ms = r->convergence_ms;
	b->j.spec.strategy = r->strategy;
	b->j.spec.max_jobs = r->max_jobs;
	b->j.spec.max_parallel = r->max_parallel;
	b->j.spec.early_stopping = r->early;
	b->j.spec.maximize = r->maximize;
	b->j.spec.has_target = r->has_target;
	b->j.spec.target = r->target;
	b->j.spec.not_improving = r->not_improving;
	b->j.spec.convergence = r->convergence;
	b->j.spec.max_runtime_s = r->max_runtime_s;
	b->j.spec.hb_min = 1;
	b->j.spec.defs = &b->def;
	b->j.spec.n_defs = 1;
	for (i = 0; i < r->n; i++) {
		const struct kid_row *k = &r->kids[i];
		struct db_tuning_child *c = &b->rows[i];

		c->idx = (int)i;
		c->job = (char *)"child";
		c->def = k->def;
		c->created = !k->unborn;
		c->retry_of = k->retry - 1;
		c->early_stop = (char *)k->early_stop;
		c->status = (char *)k->status;
		c->failure_reason = (char *)k->reason;
		c->has_objective = k->has_obj;
		c->objective = k->obj;
		c->end_ms = k->end_ms;
		b->kids[i].c = c;
		b->curves[i].y = k->curve;
		b->curves[i].n = k->n_curve;
	}
	b->j.rows = b->rows;
	b->j.n = r->n;
	b->j.kids = b->kids;
	ctrl_tuning_summarize(&b->j);
}

static void test_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct built b;
		struct ctrl_tuning_plan_in in;
		struct ctrl_tuning_plan_out out;

		print_message("%s\n", r->name);
		build(r, &b);
		memset(&in, 0, sizeof(in));
		in.j = &b.j;
		in.now = r->now;
		in.convergence_unrecorded = r->convergence_unrecorded;
		if (r->with_curves) {
			assert_true(r->early || r->strategy == TUNE_HYPERBAND ?
					    ctrl_tuning_wants_curves(&b.j) :
					    !ctrl_tuning_wants_curves(&b.j));
			in.curves = b.curves;
		}
		ctrl_tuning_plan(&in, &out);
		assert_int_equal(out.act, r->act);
		if (r->why) {
			assert_non_null(out.why);
			assert_string_equal(out.why, r->why);
		} else if (r->act != CTRL_TUNING_CREATE) {
			assert_null(out.why);
		}
		assert_int_equal(out.n_launch, r->n_launch);
		assert_int_equal(out.n_halt, r->n_halt);
		if (r->halt_msg)
			assert_non_null(strstr(out.halt_msg.data, r->halt_msg));
		else
			assert_int_equal(out.halt_msg.len, 0);
		assert_int_equal(out.n_stops, r->n_stops);
		if (r->stop_why)
			assert_non_null(
				strstr(out.stops[0].why.data, r->stop_why));
		if (r->to)
			assert_string_equal(out.to, r->to);
		else
			assert_null(out.to);
		if (r->reason)
			assert_non_null(strstr(out.reason.data, r->reason));
		else
			assert_int_equal(out.reason.len, 0);
		ctrl_tuning_plan_release(&out);
	}
}

/* The counters Describe shows, the best job and the budget spent. */
static void test_summarize(void **state)
{
	static const struct row r = {
		.max_jobs = 10,
		.max_parallel = 5,
		.kids = { DONE(0.3, 5),
			  DONE(0.1, 2),
			  DONE(0.2, 9),
			  FAIL("InternalServerError: host lost"),
			  FAIL("AlgorithmError: exit 1"),
			  { .status = "Stopped", .end_ms = 3 },
			  RUN,
			  { .unborn = 1 },
			  { .retry = 4, .status = "InProgress" } },
		.n = 9,
	};
	struct built b;

	(void)state;
	build(&r, &b);
	assert_int_equal(b.j.jobs.completed, 3);
	assert_int_equal(b.j.jobs.in_progress, 3); /* 2 run, 1 recorded */
	assert_int_equal(b.j.jobs.retryable_error, 1);
	assert_int_equal(b.j.jobs.non_retryable_error, 1);
	assert_int_equal(b.j.jobs.stopped, 1);
	assert_int_equal(b.j.objectives.succeeded, 3);
	assert_int_equal(b.j.objectives.failed, 3);
	assert_int_equal(b.j.objectives.pending, 3);
	assert_int_equal(b.j.best, 1);
	assert_int_equal(b.j.not_improving, 2); /* 0.3 and 0.2 ended later */
	assert_int_equal(b.j.n_succeeded, 3);
	assert_int_equal(b.j.n_active, 3);
	assert_int_equal(b.j.n_nonretryable, 1);
	assert_int_equal(b.j.n_fresh, 8);
	/* The retried internal error does not count against the budget. */
	assert_int_equal(b.j.n_budget_used, 8);
	assert_true(b.kids[3].retryable);
	assert_false(b.kids[4].retryable);
	assert_true(b.kids[7].active);
	assert_false(b.kids[7].exists);
	/* The ends are left as they were. */
	assert_int_equal(b.rows[0].end_ms, 5);
	assert_int_equal(b.rows[1].end_ms, 2);
}

/* A training job that failed with an internal error runs again, once. */
static void test_next(void **state)
{
	static const struct row retry = {
		.max_jobs = 10,
		.max_parallel = 2,
		.kids = { DONE(0.1, 1), FAIL("InternalServerError: lost") },
		.n = 2,
	};
	static const struct row retried = {
		.max_jobs = 10,
		.max_parallel = 2,
		.kids = { DONE(0.1, 1),
			  FAIL("InternalServerError: lost"),
			  { .retry = 2, .status = "InProgress" } },
		.n = 3,
	};
	struct ctrl_tuning_next next;
	struct built b;

	(void)state;
	build(&retry, &b);
	ctrl_tuning_next(&b.j, &next);
	assert_int_equal(next.retry, 1);
	assert_int_equal(next.def, 0);
	assert_int_equal(next.idx, 2);
	build(&retried, &b);
	ctrl_tuning_next(&b.j, &next);
	assert_int_equal(next.retry, -1);
	assert_int_equal(next.def, 0);
	assert_int_equal(next.idx, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_summarize),
		cmocka_unit_test(test_next),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
