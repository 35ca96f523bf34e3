#ifndef TUNER_TUNER_H
#define TUNER_TUNER_H

/*
 * The hyperparameter optimizer of tuning jobs (docs/tuning.md): pure
 * functions of a search space, the evaluations so far and a seed, so that
 * the controller keeps no optimizer state of its own and rebuilds every
 * decision from the store after a restart.
 *
 * Points and spaces are those of common/tune_space.h. Objectives are
 * oriented "lower is better": the caller negates a Maximize objective.
 */

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/tune_space.h"

/* A finished evaluation. */
struct tune_obs {
	const double *x; /* space->n values */
	double y;	 /* lower is better */
};

struct tune_request {
	const struct tune_space *space;
	enum tune_strategy strategy;
	uint64_t seed; /* RandomSeed */
	size_t index;  /* 0-based number of this suggestion in the job */
	size_t budget; /* MaxNumberOfTrainingJobs */
	const struct tune_obs *obs; /* finished evaluations, in end order */
	size_t n_obs;
	const double *const *pending; /* points being evaluated now */
	size_t n_pending;
};

/*
 * Writes the next point to x (space->n values). Random and Hyperband
 * points depend on (seed, index) only; Grid points on index only (the
 * caller never asks past tune_grid_size()); Bayesian points on (seed,
 * index) and the evaluations, so that the same seed and the same results
 * give the same sequence. Returns 0, or ERR_INVALID with err saying why.
 */
int tune_suggest(const struct tune_request *rq, double *x, struct buf *err);

/* How many points Grid has (the product of the categorical counts). */
size_t tune_grid_size(const struct tune_space *space);

/* The objective reports of one training job so far, in report order:
 * y[i] is the value after report i + 1 (lower is better). */
struct tune_curve {
	const double *y;
	size_t n;
};

/*
 * The median stopping rule (TrainingJobEarlyStoppingType Auto): after
 * report n of cur, the running average of every other job's first n
 * reports (those with at least n) is taken, and cur stops when its value
 * is worse than the median of those averages. Needs at least a few
 * others; returns 1: stop, 0: go on.
 */
int tune_median_stop(const struct tune_curve *others, size_t n_others,
		     const struct tune_curve *cur);

/*
 * Asynchronous successive halving (the Hyperband strategy): rungs at
 * min_r * eta^k reports below max_r. A job at or past a rung it has not
 * yet passed goes on when its value there is within the best 1/eta of the
 * values every job reached at that rung, else it stops. Returns 1: stop,
 * 0: go on.
 */
int tune_asha_stop(const struct tune_curve *others, size_t n_others,
		   const struct tune_curve *cur, double min_r, double max_r,
		   double eta);

#endif
