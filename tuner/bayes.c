/*
 * The Bayesian strategy: a space-filling initial design, then the point of
 * largest expected improvement under a Gaussian process (gp.c) fitted to
 * the evaluations so far. Points being evaluated enter as fantasies whose
 * outcome is the posterior mean there (the "Kriging believer"), so that
 * parallel suggestions spread out. Everything is a function of the seed,
 * the index and the evaluations: the generator is seeded from (seed,
 * index) and the evaluations are read in the order given.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/xalloc.h"
#include "tuner/internal.h"

enum {
	STREAM_LHS_PERM = 2,
	STREAM_LHS = 3,
	STREAM_BAYES = 4,
	STREAM_FALLBACK = 5
};

/* The largest sets the process is fitted to and conditioned on: enough
 * to model a few hundred evaluations well, small enough that a suggestion
 * takes a few tens of milliseconds with the reference BLAS. */
#define FIT_MAX 80
#define POST_MAX 200

/* How many evaluations the initial design takes: two more than the
 * parameters, at least 5, never more than a third of the budget. */
static size_t initial_size(const struct tune_request *rq)
{
	size_t n = rq->space->n + 2, cap;

	if (n < 5)
		n = 5;
	cap = rq->budget ? rq->budget / 3 : n;
	if (cap < 2)
		cap = 2;
	return n < cap ? n : cap;
}

/*
 * Point index of a Latin hypercube of n points: every parameter's unit
 * interval is cut into n cells, and a permutation drawn from the seed
 * alone gives each point its cell, so the design is the same whatever the
 * order in which its points are asked for.
 */
static void lhs_point(const struct tune_request *rq, size_t n, double *x)
{
	const struct tune_space *space = rq->space;
	size_t *perm = xmalloc(n * sizeof(size_t));
	struct tune__rng r, rp;
	size_t i, k;

	tune__rng_seed(&r, rq->seed, STREAM_LHS, rq->index);
	for (i = 0; i < space->n; i++) {
		const struct tune_param *p = &space->params[i];
		double u;

		tune__rng_seed(&rp, rq->seed, STREAM_LHS_PERM, i);
		for (k = 0; k < n; k++)
			perm[k] = k;
		for (k = n; k > 1; k--) {
			size_t j = tune__rng_below(&rp, k), t = perm[k - 1];

			perm[k - 1] = perm[j];
			perm[j] = t;
		}
		u = ((double)perm[rq->index] + tune__rng_unif(&r)) / (double)n;
		if (p->kind == TUNE_CATEGORICAL) {
			k = (size_t)(u * (double)p->n_values);
			x[i] = (double)(k < p->n_values ? k : p->n_values - 1);
		} else {
			x[i] = tune__from_unit(p, u);
		}
	}
	free(perm);
}

/* log(phi(z) + z Phi(z)), stable for very negative z. */
static double log_h(double z)
{
	const double log_sqrt_2pi = 0.91893853320467274178;

	if (z > -5.0) {
		double h = exp(-0.5 * z * z) / sqrt(2 * M_PI) +
			   z * 0.5 * erfc(-z / M_SQRT2);

		return log(h > 1e-300 ? h : 1e-300);
	}
	return -0.5 * z * z - log_sqrt_2pi - 2.0 * log(-z) +
	       log1p(-3.0 / (z * z) + 15.0 / (z * z * z * z));
}

static int cmp_by_y(const void *a, const void *b, const double *y)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	if (y[i] < y[j])
		return -1;
	if (y[i] > y[j])
		return 1;
	return i < j ? -1 : i > j;
}

/* Indexes 0 .. n - 1 ordered by y, ties by index: a stable merge sort,
 * since qsort() takes no context argument and is not stable. */
static size_t *order_by_y(const double *y, size_t n)
{
	size_t *o = xmalloc((n ? n : 1) * sizeof(size_t)), i, j;

	for (i = 0; i < n; i++)
		o[i] = i;
	{
		size_t *t = xmalloc((n ? n : 1) * sizeof(size_t)), w;

		for (w = 1; w < n; w *= 2) {
			for (i = 0; i < n; i += 2 * w) {
				size_t a = i, m = i + w < n ? i + w : n;
				size_t e = i + 2 * w < n ? i + 2 * w : n, b = m;

				for (j = i; j < e; j++)
					if (a < m &&
					    (b >= e ||
					     cmp_by_y(&o[a], &o[b], y) <= 0))
						t[j] = o[a++];
					else
						t[j] = o[b++];
			}
			memcpy(o, t, n * sizeof(size_t));
		}
		free(t);
	}
	return o;
}

/*
 * Picks at most max of the n evaluations: all when they fit, else the best
 * half and an even spread of the others (in end order). Returns how many
 * were written to sel.
 */
static size_t select_obs(const double *y, size_t n, size_t max, size_t *sel)
{
	size_t *o, *taken, i, k = 0, best, rest;

	if (n <= max) {
		for (i = 0; i < n; i++)
			sel[i] = i;
		return n;
	}
	o = order_by_y(y, n);
	taken = xcalloc(n, sizeof(size_t));
	best = max / 2;
	for (i = 0; i < best; i++) {
		sel[k++] = o[i];
		taken[o[i]] = 1;
	}
	rest = max - best;
	for (i = 0; i < rest; i++) {
		/* The i-th of rest evenly spaced among the untaken ones. */
		size_t want = i * (n - best) / rest, seen = 0, j;

		for (j = 0; j < n; j++) {
			if (taken[j])
				continue;
			if (seen++ == want) {
				sel[k++] = j;
				break;
			}
		}
	}
	free(taken);
	free(o);
	return k;
}

static int same_point(const double *a, const double *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

struct cands {
	size_t n, cap, np, d;
	double *x; /* cap * np values */
	double *z; /* cap * d encodings */
};

static void cands_add(struct cands *c, const struct tune_space *space,
		      const double *x)
{
	if (c->n == c->cap)
		return;
	memcpy(c->x + c->n * c->np, x, c->np * sizeof(double));
	tune__encode(space, x, c->z + c->n * c->d);
	c->n++;
}

/* A point near x: each parameter moves with probability 2 / n (at least
 * one does), numeric ones by a normal step of sd sigma in unit space,
 * categorical ones to another value. */
static void perturb(const struct tune_space *space, const double *x,
		    double sigma, struct tune__rng *r, double *out)
{
	size_t n = space->n, i, forced = tune__rng_below(r, n);
	double prob = n <= 2 ? 1.0 : 2.0 / (double)n;

	for (i = 0; i < n; i++) {
		const struct tune_param *p = &space->params[i];

		out[i] = x[i];
		if (i != forced && tune__rng_unif(r) >= prob)
			continue;
		if (p->kind == TUNE_CATEGORICAL) {
			if (p->n_values > 1) {
				size_t k = tune__rng_below(r, p->n_values - 1);

				if (k >= (size_t)x[i])
					k++;
				out[i] = (double)k;
			}
		} else {
			double u = tune__to_unit(p, x[i]) +
				   sigma * tune__rng_normal(r);

			u = u < 0 ? 0 : u > 1 ? 1 : u;
			out[i] = tune__from_unit(p, u);
			if (p->kind == TUNE_INTEGER && out[i] == x[i] &&
			    sigma >= 0.05) {
				/* A step too small to change an integer:
				 * move to a neighbour instead. */
				double v = x[i] +
					   (tune__rng_unif(r) < 0.5 ? -1 : 1);

				if (v >= p->min && v <= p->max)
					out[i] = v;
			}
		}
	}
}

struct state {
	const struct tune_request *rq;
	struct tune__gp gp; /* on the evaluations and the fantasies */
	double best;	    /* incumbent: the lowest posterior mean */
	double *mu, *sd;
};

/* Is x one of the evaluated or pending points? */
static int known(const struct tune_request *rq, const double *x)
{
	size_t i, n = rq->space->n;

	for (i = 0; i < rq->n_obs; i++)
		if (same_point(rq->obs[i].x, x, n))
			return 1;
	for (i = 0; i < rq->n_pending; i++)
		if (same_point(rq->pending[i], x, n))
			return 1;
	return 0;
}

/* Log expected improvement of every candidate into score. */
static void score(struct state *st, const struct cands *c, double *score)
{
	size_t i;

	tune__gp_predict(&st->gp, c->z, c->n, st->mu, st->sd);
	for (i = 0; i < c->n; i++) {
		double z = (st->best - st->mu[i]) / st->sd[i];

		score[i] = log(st->sd[i]) + log_h(z);
		if (known(st->rq, c->x + i * c->np))
			score[i] = -HUGE_VAL;
	}
}

/* Index of the largest score (the first on ties), or c->n when every
 * candidate is already known. */
static size_t argmax(const double *s, size_t n)
{
	size_t i, k = n;

	for (i = 0; i < n; i++)
		if (s[i] > -HUGE_VAL && (k == n || s[i] > s[k]))
			k = i;
	return k;
}

/* Fits the process to the selected evaluations, then adds the pending
 * points as fantasies. */
static int build_model(struct state *st)
{
	const struct tune_request *rq = st->rq;
	const struct tune_space *space = rq->space;
	size_t d = tune__enc_dim(space), n = rq->n_obs, i, m, nf, np;
	double *y = xmalloc(n * sizeof(double)), mean = 0, var = 0, sdv;
	size_t *sel = xmalloc(n * sizeof(size_t));
	size_t *fsel = xmalloc(POST_MAX * sizeof(size_t));
	double *ysel = xmalloc(POST_MAX * sizeof(double));
	struct tune__gp fit = { 0 };
	int rc;

	for (i = 0; i < n; i++)
		y[i] = rq->obs[i].y;
	m = select_obs(y, n, POST_MAX, sel);
	for (i = 0; i < m; i++)
		mean += y[sel[i]];
	mean /= (double)m;
	for (i = 0; i < m; i++)
		var += (y[sel[i]] - mean) * (y[sel[i]] - mean);
	sdv = sqrt(var / (double)m);
	if (!(sdv > 1e-12 * (1.0 + fabs(mean))))
		sdv = 1.0;

	/* The fit uses a subset of the selection when it is large. */
	for (i = 0; i < m; i++)
		ysel[i] = y[sel[i]];
	nf = select_obs(ysel, m, FIT_MAX, fsel);
	fit.n = nf;
	fit.d = d;
	fit.x = xmalloc(nf * d * sizeof(double));
	fit.y = xmalloc(nf * sizeof(double));
	for (i = 0; i < nf; i++) {
		size_t k = sel[fsel[i]];

		tune__encode(space, rq->obs[k].x, fit.x + i * d);
		fit.y[i] = (y[k] - mean) / sdv;
	}
	rc = tune__gp_fit(&fit, nf <= 40 ? 3 : 2, nf <= 40 ? 60 : 25);
	if (rc)
		goto out;

	np = rq->n_pending;
	st->gp.n = m + np;
	st->gp.d = d;
	st->gp.x = xmalloc((m + np) * d * sizeof(double));
	st->gp.y = xmalloc((m + np) * sizeof(double));
	st->gp.theta = xmalloc((d + 2) * sizeof(double));
	memcpy(st->gp.theta, fit.theta, (d + 2) * sizeof(double));
	for (i = 0; i < m; i++) {
		tune__encode(space, rq->obs[sel[i]].x, st->gp.x + i * d);
		st->gp.y[i] = (y[sel[i]] - mean) / sdv;
	}
	st->gp.n = m;
	rc = tune__gp_factor(&st->gp);
	if (rc)
		goto out;
	st->mu = xmalloc((m + np + 1) * sizeof(double));
	st->sd = xmalloc((m + np + 1) * sizeof(double));
	tune__gp_predict(&st->gp, st->gp.x, m, st->mu, NULL);
	st->best = st->mu[0];
	for (i = 1; i < m; i++)
		if (st->mu[i] < st->best)
			st->best = st->mu[i];
	if (np) {
		for (i = 0; i < np; i++)
			tune__encode(space, rq->pending[i],
				     st->gp.x + (m + i) * d);
		tune__gp_predict(&st->gp, st->gp.x + m * d, np, st->mu, NULL);
		memcpy(st->gp.y + m, st->mu, np * sizeof(double));
		st->gp.n = m + np;
		rc = tune__gp_factor(&st->gp);
	}
out:
	tune__gp_release(&fit);
	free(y);
	free(sel);
	free(fsel);
	free(ysel);
	return rc;
}

/* How many candidates to score: as many as about 2e7 floating-point
 * operations allow, between 300 and 3000. */
static size_t candidate_count(size_t n, size_t d)
{
	double per = (double)n * (double)n + 3.0 * (double)n * (double)d;
	double m = 2e7 / per;

	return m < 300 ? 300 : m > 3000 ? 3000 : (size_t)m;
}

int tune__bayes_suggest(const struct tune_request *rq, double *x)
{
	const struct tune_space *space = rq->space;
	size_t n_init = initial_size(rq), np = space->n, i, j, k, m;
	size_t n_top, *top = NULL;
	struct state st = { 0 };
	struct cands c = { 0 };
	struct tune__rng r;
	double *s = NULL, *tmp = NULL, *yv = NULL;
	static const double sigmas[] = { 0.3, 0.1, 0.03, 0.01 };
	int rc;

	if (rq->index < n_init) {
		lhs_point(rq, n_init, x);
		return 0;
	}
	tune__rng_seed(&r, rq->seed, STREAM_FALLBACK, rq->index);
	if (rq->n_obs < 2) {
		tune__random_point(space, &r, x);
		return 0;
	}
	st.rq = rq;
	rc = build_model(&st);
	if (rc) {
		/* No model: a random point still makes progress. */
		tune__random_point(space, &r, x);
		rc = 0;
		goto out;
	}

	m = candidate_count(st.gp.n, st.gp.d);
	c.np = np;
	c.d = st.gp.d;
	c.cap = m + 64;
	c.x = xmalloc(c.cap * np * sizeof(double));
	c.z = xmalloc(c.cap * c.d * sizeof(double));
	tmp = xmalloc(np * sizeof(double));
	tune__rng_seed(&r, rq->seed, STREAM_BAYES, rq->index);

	/* Half at random, half around the best evaluations. */
	for (i = 0; i < m / 2; i++) {
		tune__random_point(space, &r, tmp);
		cands_add(&c, space, tmp);
	}
	yv = xmalloc(rq->n_obs * sizeof(double));
	for (i = 0; i < rq->n_obs; i++)
		yv[i] = rq->obs[i].y;
	top = order_by_y(yv, rq->n_obs);
	n_top = rq->n_obs < 5 ? rq->n_obs : 5;
	for (i = 0; c.n < m; i++) {
		const double *base = rq->obs[top[i % n_top]].x;

		perturb(space, base, sigmas[(i / n_top) % 4], &r, tmp);
		cands_add(&c, space, tmp);
	}
	s = xmalloc(c.cap * sizeof(double));
	st.mu = xrealloc(st.mu, c.cap * sizeof(double));
	st.sd = xrealloc(st.sd, c.cap * sizeof(double));
	score(&st, &c, s);

	/* Local refinement: a few rounds of smaller steps around the best
	 * candidate so far. */
	for (j = 0; j < 4; j++) {
		struct cands loc = c;
		double *ls = s + c.n;

		k = argmax(s, c.n);
		if (k == c.n)
			break;
		loc.n = 0;
		loc.cap = c.cap - c.n;
		loc.x = c.x + c.n * np;
		loc.z = c.z + c.n * c.d;
		if (loc.cap > 16)
			loc.cap = 16;
		for (i = 0; i < loc.cap; i++) {
			perturb(space, c.x + k * np, sigmas[1 + j % 3] * 0.3,
				&r, tmp);
			cands_add(&loc, space, tmp);
		}
		{
			double *mu = st.mu, *sd = st.sd;

			st.mu = mu + c.n;
			st.sd = sd + c.n;
			score(&st, &loc, ls);
			st.mu = mu;
			st.sd = sd;
		}
		c.n += loc.n;
	}
	k = argmax(s, c.n);
	if (k == c.n) {
		/* Every candidate was evaluated already (a small discrete
		 * space): repeat a random point. */
		tune__random_point(space, &r, x);
	} else {
		memcpy(x, c.x + k * np, np * sizeof(double));
	}
out:
	tune__gp_release(&st.gp);
	free(st.mu);
	free(st.sd);
	free(c.x);
	free(c.z);
	free(s);
	free(tmp);
	free(yv);
	free(top);
	return rc;
}
