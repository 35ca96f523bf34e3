/*
 * tune_suggest() and what every strategy shares: checking the request,
 * the seeded generator, the scaling of a parameter to the unit interval,
 * and the Random and Grid strategies.
 */
#include <math.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "tuner/internal.h"
#include "tuner/tuner.h"

/* Streams of the generator, so that no two uses share a sequence. */
enum { STREAM_RANDOM = 1 };

/* Far above SageMaker's limits (30 values, 30 parameters), low enough that
 * the Gaussian process's one-hot inputs stay a few MB. */
#define MAX_VALUES 1000
#define MAX_PARAMS 1000

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void tune__rng_seed(struct tune__rng *r, uint64_t seed, uint64_t stream,
		    uint64_t index)
{
	uint64_t k = seed;
	int i;

	/* Each input goes through the mixer before the next is added, so
	 * that (seed, stream, index) never collide by simple arithmetic. */
	k = splitmix64(&k) ^ stream;
	k = splitmix64(&k) ^ index;
	for (i = 0; i < 4; i++)
		r->s[i] = splitmix64(&k);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t tune__rng_next(struct tune__rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

double tune__rng_unif(struct tune__rng *r)
{
	return (double)(tune__rng_next(r) >> 11) * 0x1.0p-53;
}

double tune__rng_normal(struct tune__rng *r)
{
	/* Box-Muller; 1 - u keeps the logarithm finite. */
	double u = 1.0 - tune__rng_unif(r);
	double v = tune__rng_unif(r);

	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

size_t tune__rng_below(struct tune__rng *r, size_t n)
{
	size_t k = (size_t)(tune__rng_unif(r) * (double)n);

	return k < n ? k : n - 1;
}

/* The interval a parameter spans in its own units before scaling. */
static void span(const struct tune_param *p, double *lo, double *hi)
{
	*lo = p->min;
	*hi = p->max;
	if (p->kind == TUNE_INTEGER) {
		*lo -= 0.5;
		*hi += 0.5;
	}
}

/* The monotone map of a value to the space where the parameter is
 * uniform: log for Logarithmic, -log(1 - v) for ReverseLogarithmic (which
 * spreads values close to 1, as SageMaker's does). */
static double warp(enum tune_scale s, double v)
{
	switch (s) {
	case TUNE_SCALE_LOG:
		return log(v);
	case TUNE_SCALE_REVLOG:
		return -log1p(-v);
	case TUNE_SCALE_LINEAR:
		break;
	}
	return v;
}

static double unwarp(enum tune_scale s, double w)
{
	switch (s) {
	case TUNE_SCALE_LOG:
		return exp(w);
	case TUNE_SCALE_REVLOG:
		return -expm1(-w);
	case TUNE_SCALE_LINEAR:
		break;
	}
	return w;
}

double tune__to_unit(const struct tune_param *p, double v)
{
	double lo, hi, a, b, u;

	span(p, &lo, &hi);
	a = warp(p->scale, lo);
	b = warp(p->scale, hi);
	if (!(b > a))
		return 0.5;
	u = (warp(p->scale, v) - a) / (b - a);
	return u < 0 ? 0 : u > 1 ? 1 : u;
}

double tune__from_unit(const struct tune_param *p, double u)
{
	double lo, hi, a, b, v;

	span(p, &lo, &hi);
	a = warp(p->scale, lo);
	b = warp(p->scale, hi);
	v = unwarp(p->scale, a + u * (b - a));
	if (p->kind == TUNE_INTEGER)
		v = round(v);
	if (v < p->min)
		v = p->min;
	if (v > p->max)
		v = p->max;
	return v;
}

size_t tune__enc_dim(const struct tune_space *space)
{
	size_t i, d = 0;

	for (i = 0; i < space->n; i++)
		d += space->params[i].kind == TUNE_CATEGORICAL ?
			     space->params[i].n_values :
			     1;
	return d;
}

void tune__encode(const struct tune_space *space, const double *x, double *z)
{
	size_t i, k, d = 0;

	for (i = 0; i < space->n; i++) {
		const struct tune_param *p = &space->params[i];

		if (p->kind != TUNE_CATEGORICAL) {
			z[d++] = tune__to_unit(p, x[i]);
			continue;
		}
		for (k = 0; k < p->n_values; k++)
			z[d++] = (size_t)x[i] == k ? 1.0 : 0.0;
	}
}

void tune__random_point(const struct tune_space *space, struct tune__rng *r,
			double *x)
{
	size_t i;

	for (i = 0; i < space->n; i++) {
		const struct tune_param *p = &space->params[i];

		if (p->kind == TUNE_CATEGORICAL)
			x[i] = (double)tune__rng_below(r, p->n_values);
		else
			x[i] = tune__from_unit(p, tune__rng_unif(r));
	}
}

size_t tune_grid_size(const struct tune_space *space)
{
	size_t i, n = 1;

	if (!space || !space->params || space->n == 0)
		return 0;
	for (i = 0; i < space->n; i++) {
		size_t k = space->params[i].kind == TUNE_CATEGORICAL ?
				   space->params[i].n_values :
				   0;

		if (k == 0)
			return 0;
		if (n > SIZE_MAX / k)
			return SIZE_MAX;
		n *= k;
	}
	return n;
}

static int check_param(const struct tune_param *p, size_t i, struct buf *err)
{
	const char *name = p->name ? p->name : "";

	switch (p->kind) {
	case TUNE_CATEGORICAL:
		if (p->n_values == 0 || p->n_values > MAX_VALUES) {
			buf_addf(err,
				 "parameter %zu '%s' must have 1 to %d values",
				 i, name, MAX_VALUES);
			return ERR_INVALID;
		}
		return 0;
	case TUNE_CONTINUOUS:
	case TUNE_INTEGER:
		break;
	default:
		buf_addf(err, "parameter %zu '%s' has an unknown type", i,
			 name);
		return ERR_INVALID;
	}
	if (!isfinite(p->min) || !isfinite(p->max) || p->min > p->max) {
		buf_addf(err,
			 "parameter '%s': MinValue must not be greater than "
			 "MaxValue",
			 name);
		return ERR_INVALID;
	}
	if (p->kind == TUNE_INTEGER &&
	    (p->min != floor(p->min) || p->max != floor(p->max))) {
		buf_addf(err, "parameter '%s': bounds must be whole numbers",
			 name);
		return ERR_INVALID;
	}
	switch (p->scale) {
	case TUNE_SCALE_LINEAR:
		return 0;
	case TUNE_SCALE_LOG:
		if (p->min <= 0) {
			buf_addf(err,
				 "parameter '%s': Logarithmic scaling needs a "
				 "MinValue greater than 0",
				 name);
			return ERR_INVALID;
		}
		return 0;
	case TUNE_SCALE_REVLOG:
		if (p->kind != TUNE_CONTINUOUS || p->min < 0 || p->max >= 1) {
			buf_addf(err,
				 "parameter '%s': ReverseLogarithmic scaling "
				 "needs a continuous range within 0 <= x < 1",
				 name);
			return ERR_INVALID;
		}
		return 0;
	}
	buf_addf(err, "parameter '%s' has an unknown scaling type", name);
	return ERR_INVALID;
}

static int check_point(const struct tune_space *space, const double *x,
		       const char *what, size_t k, struct buf *err)
{
	size_t i;

	if (!x) {
		buf_addf(err, "%s %zu has no values", what, k);
		return ERR_INVALID;
	}
	for (i = 0; i < space->n; i++) {
		const struct tune_param *p = &space->params[i];
		double v = x[i];
		int bad = !isfinite(v);

		if (!bad && p->kind == TUNE_CATEGORICAL)
			bad = v < 0 || v >= (double)p->n_values ||
			      v != floor(v);
		else if (!bad)
			bad = v < p->min || v > p->max ||
			      (p->kind == TUNE_INTEGER && v != floor(v));
		if (bad) {
			buf_addf(err,
				 "%s %zu: value %g of parameter '%s' is "
				 "out of its range",
				 what, k, v, p->name ? p->name : "");
			return ERR_INVALID;
		}
	}
	return 0;
}

static int check_request(const struct tune_request *rq, struct buf *err)
{
	const struct tune_space *space = rq->space;
	size_t i;
	int rc;

	if (!space || !space->params || space->n == 0) {
		buf_adds(err, "the search space has no parameters");
		return ERR_INVALID;
	}
	if (space->n > MAX_PARAMS) {
		buf_addf(err, "the search space has more than %d parameters",
			 MAX_PARAMS);
		return ERR_INVALID;
	}
	for (i = 0; i < space->n; i++) {
		rc = check_param(&space->params[i], i, err);
		if (rc)
			return rc;
	}
	if ((rq->n_obs && !rq->obs) || (rq->n_pending && !rq->pending)) {
		buf_adds(err, "evaluations are missing");
		return ERR_INVALID;
	}
	for (i = 0; i < rq->n_obs; i++) {
		rc = check_point(space, rq->obs[i].x, "evaluation", i, err);
		if (rc)
			return rc;
		if (!isfinite(rq->obs[i].y)) {
			buf_addf(err, "evaluation %zu has no finite objective",
				 i);
			return ERR_INVALID;
		}
	}
	for (i = 0; i < rq->n_pending; i++) {
		rc = check_point(space, rq->pending[i], "pending point", i,
				 err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Point index of the grid in mixed radix, the last parameter fastest. */
static int grid_point(const struct tune_request *rq, double *x, struct buf *err)
{
	const struct tune_space *space = rq->space;
	size_t n = tune_grid_size(space), i, k = rq->index;

	if (n == 0) {
		buf_adds(err, "Grid search takes categorical parameters only");
		return ERR_INVALID;
	}
	if (rq->index >= n) {
		buf_addf(err, "the grid has %zu points, none at index %zu", n,
			 rq->index);
		return ERR_INVALID;
	}
	for (i = space->n; i-- > 0;) {
		size_t m = space->params[i].n_values;

		x[i] = (double)(k % m);
		k /= m;
	}
	return 0;
}

int tune_suggest(const struct tune_request *rq, double *x, struct buf *err)
{
	struct tune__rng r;
	int rc;

	if (!rq || !x) {
		buf_adds(err, "no request");
		return ERR_INVALID;
	}
	rc = check_request(rq, err);
	if (rc)
		return rc;
	switch (rq->strategy) {
	case TUNE_GRID:
		return grid_point(rq, x, err);
	case TUNE_RANDOM:
	case TUNE_HYPERBAND:
		tune__rng_seed(&r, rq->seed, STREAM_RANDOM, rq->index);
		tune__random_point(rq->space, &r, x);
		return 0;
	case TUNE_BAYESIAN:
		return tune__bayes_suggest(rq, x);
	}
	buf_adds(err, "unknown strategy");
	return ERR_INVALID;
}
