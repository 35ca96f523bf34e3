#ifndef CTRL_TUNING_PLAN_H
#define CTRL_TUNING_PLAN_H

/*
 * The tuning step's decisions, as pure functions: a tuning job with its
 * training jobs (as controller/tuning/job.c loads them) and the objective
 * curves of those that run in, actions out. No I/O, no locks, no clock.
 * controller/tuning/step.c gathers the facts, asks ctrl_tuning_plan() and
 * carries the actions out; tests/controller/test_tuning_plan.c walks a
 * table of cases.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/tuning.h"
#include "db/tuning.h"
#include "common/buf.h"
#include "tuner/tuner.h"

/* Non-retryable failures, none succeeding, that end a tuning job. */
#define CTRL_TUNING_FAIL_FAST 3

/* Convergence: at least this many results, and no gain of more than
 * CTRL_TUNING_CONVERGE_GAIN of the objective's range over the last
 * quarter. */
#define CTRL_TUNING_CONVERGE_MIN 12
#define CTRL_TUNING_CONVERGE_GAIN 0.01

/* One training job of a tuning job, as a step sees it. */
struct ctrl_tuning_kid {
	struct db_tuning_child *c;
	double *x;   /* its point, in its definition's space */
	char **vals; /* its hyperparameter values */
	/* ctrl_tuning_summarize() derives the rest: */
	int exists;    /* the training job exists */
	int active;    /* InProgress, or recorded and about to be created */
	int terminal;  /* Completed, Failed or Stopped */
	int retryable; /* failed with an internal error */
	int succeeded; /* has an objective and did not fail */
	double y;      /* its objective, lower is better */
};

/* A tuning job with its training jobs (kids[i].c is &rows[i]). */
struct ctrl_tuning_job {
	struct db_tuning t;
	struct api_tuning_spec spec;
	struct db_tuning_child *rows;
	size_t n;
	struct ctrl_tuning_kid *kids;
	/* What Describe and the step derive (ctrl_tuning_summarize()). */
	struct api_tuning_job_counts jobs;
	struct api_tuning_objective_counts objectives;
	int best;	   /* index into kids, -1: none */
	int not_improving; /* succeeded jobs since the best improved */
	int n_active;
	int n_budget_used; /* jobs that count against the budget */
	int n_fresh;	   /* jobs that are not retries */
	int n_nonretryable;
	int n_succeeded;
};

/* Whether a training job status is an end: Completed, Failed, Stopped. */
int ctrl_tuning_status_terminal(const char *status);

/* Definition def of j's spec (the first when def is out of range). */
const struct api_tuning_def *ctrl_tuning_def_of(const struct ctrl_tuning_job *j,
						int def);

/*
 * Derives each kid's flags, the counters, the best job and the budget
 * spent from j's rows, spec and status.
 */
void ctrl_tuning_summarize(struct ctrl_tuning_job *j);

/* How many training jobs j may launch in all (Grid: at most the grid). */
int ctrl_tuning_budget(const struct ctrl_tuning_job *j);

/*
 * Whether a step should read the objective curves before it plans: early
 * stopping is on and a training job runs that it may judge.
 */
int ctrl_tuning_wants_curves(const struct ctrl_tuning_job *j);

/* What a step knows of a tuning job when it looks at it. */
struct ctrl_tuning_plan_in {
	const struct ctrl_tuning_job *j; /* summarized */
	int64_t now;			 /* wall ms */
	/* The objective's reports of each kid (j->n of them, lower is
	 * better), or NULL: none read, no early stopping this time. */
	const struct tune_curve *curves;
	/* Convergence was found but could not be recorded: judge the end
	 * conditions without it. */
	int convergence_unrecorded;
};

enum ctrl_tuning_act {
	CTRL_TUNING_NOTHING,   /* nothing to launch or end now */
	CTRL_TUNING_CREATE,    /* create the recorded training jobs that do
				* not exist yet, then look again */
	CTRL_TUNING_CONVERGE,  /* record that the objective converged now,
				* then plan again */
	CTRL_TUNING_WIND_DOWN, /* launch no more; stop `halt`, wait for the
				* rest to end */
	CTRL_TUNING_END,       /* nothing runs any more: end as `to` */
	CTRL_TUNING_LAUNCH,    /* launch n_launch training jobs */
};

/* A training job early stopping ends, and why. */
struct ctrl_tuning_stop {
	size_t kid; /* index into j->kids */
	struct buf why;
};

struct ctrl_tuning_plan_out {
	enum ctrl_tuning_act act;
	/* Early stops, carried out first whatever act is (not with
	 * CREATE). */
	struct ctrl_tuning_stop *stops;
	size_t n_stops;
	/* WIND_DOWN, END: why no more jobs are launched: a sentence, ""
	 * (the budget is spent), "failed" or "stopped". */
	const char *why;
	/* WIND_DOWN: the running training jobs to stop, with halt_msg. */
	size_t *halt;
	size_t n_halt;
	struct buf halt_msg;
	/* END: the tuning job's new status, and its FailureReason (empty:
	 * none). */
	const char *to;
	struct buf reason;
	int n_launch; /* LAUNCH */
};

/* Decides; release out with ctrl_tuning_plan_release(). */
void ctrl_tuning_plan(const struct ctrl_tuning_plan_in *in,
		      struct ctrl_tuning_plan_out *out);
void ctrl_tuning_plan_release(struct ctrl_tuning_plan_out *out);

/* The next training job to launch: a retry of kid `retry`, or (retry -1)
 * a new point of definition def. */
struct ctrl_tuning_next {
	int retry; /* index into kids, -1: a new point */
	int def;
	int idx; /* the new row's idx */
};

void ctrl_tuning_next(const struct ctrl_tuning_job *j,
		      struct ctrl_tuning_next *next);

#endif
