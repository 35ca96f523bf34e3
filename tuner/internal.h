#ifndef TUNER_INTERNAL_H
#define TUNER_INTERNAL_H

/*
 * What the files of tuner/ share and nothing else includes: the seeded
 * generator, the map between a parameter's values and the unit interval,
 * and the Gaussian process behind the Bayesian strategy.
 */

#include <stddef.h>
#include <stdint.h>

#include "tuner/tuner.h"

/* A xoshiro256** generator; the state lives with the caller. */
struct tune__rng {
	uint64_t s[4];
};

/* Seeds r from the seed, a stream number and an index, so that every
 * (seed, stream, index) has a sequence of its own. */
void tune__rng_seed(struct tune__rng *r, uint64_t seed, uint64_t stream,
		    uint64_t index);
uint64_t tune__rng_next(struct tune__rng *r);
/* Uniform in [0, 1). */
double tune__rng_unif(struct tune__rng *r);
/* Standard normal. */
double tune__rng_normal(struct tune__rng *r);
/* Uniform in 0 .. n - 1 (n > 0). */
size_t tune__rng_below(struct tune__rng *r, size_t n);

/*
 * The unit coordinate of value v of a continuous or integer parameter:
 * 0 .. 1 in its scaled space (log, reverse log or linear). An integer
 * parameter spans min - 0.5 .. max + 0.5, so that every whole value owns an
 * equal share of the interval.
 */
double tune__to_unit(const struct tune_param *p, double v);
/* The value at unit coordinate u, rounded and clamped for integers. */
double tune__from_unit(const struct tune_param *p, double u);

/* How many coordinates a point takes in the Gaussian process's input
 * space: one per numeric parameter, one per value of a categorical one. */
size_t tune__enc_dim(const struct tune_space *space);
/* Writes the encoding of point x (space->n values) to z. */
void tune__encode(const struct tune_space *space, const double *x, double *z);

/* A random point of the space from r (values, as tune_suggest gives). */
void tune__random_point(const struct tune_space *space, struct tune__rng *r,
			double *x);

/*
 * A Gaussian process with a Matern 5/2 ARD kernel and a noise term on
 * inputs in the unit cube (d coordinates) and standardized outputs.
 */
struct tune__gp {
	size_t n, d;
	double *x;     /* n * d, row-major */
	double *y;     /* n standardized outputs */
	double *theta; /* d log length scales, log signal var, log noise var */
	double *l;     /* n * n Cholesky factor (lower) of K + noise */
	double *alpha; /* (K + noise)^-1 y */
};

/*
 * Fits the hyperparameters of gp (whose x, y, n and d are set) by
 * maximizing the log marginal likelihood plus weak log-normal priors, from
 * a few starting points, with at most iters steps each; then factors the
 * kernel matrix. Returns 0, or ERR_INTERNAL when no factorization works.
 */
int tune__gp_fit(struct tune__gp *gp, int restarts, int iters);
/* Factors the kernel matrix for the current theta. Returns 0 or
 * ERR_INTERNAL. */
int tune__gp_factor(struct tune__gp *gp);
/* Posterior means and standard deviations at m points z (m * d). */
void tune__gp_predict(const struct tune__gp *gp, const double *z, size_t m,
		      double *mu, double *sd);
void tune__gp_release(struct tune__gp *gp);

/* The Bayesian strategy. Returns 0 or ERR_INVALID. */
int tune__bayes_suggest(const struct tune_request *rq, double *x);

#endif
