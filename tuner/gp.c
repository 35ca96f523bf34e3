/*
 * The Gaussian process of the Bayesian strategy: a Matern 5/2 kernel with
 * one length scale per input coordinate (ARD), a signal variance and a
 * noise variance, fitted by maximizing the log marginal likelihood with
 * weak priors (a MAP estimate) through BFGS over the logarithms. Every
 * factorization and solve goes through LAPACKE and CBLAS; matrices are
 * column-major.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <lapacke.h>

#include "common/err.h"
#include "common/xalloc.h"
#include "tuner/internal.h"

#define SQRT5 2.2360679774997896964

/* Bounds of the log hyperparameters: length scales from 0.005 to 50 of
 * the unit cube (the upper one switches a coordinate off), a signal
 * variance around the standardized outputs' 1, and a noise variance from
 * next to nothing to twice the outputs' variance. */
#define LOG_LS_MIN (-5.3)
#define LOG_LS_MAX 3.9
#define LOG_SF_MIN (-4.6)
#define LOG_SF_MAX 4.6
#define LOG_SN_MIN (-13.8)
#define LOG_SN_MAX 0.7

/* Priors (normal in the logarithms): the length scales after Hvarfner et
 * al., "Vanilla Bayesian Optimization Performs Great in High Dimensions"
 * (2024), whose log-normal prior grows with the square root of the
 * dimension, here at its mode in log space; the noise variance around
 * e^-5 of the standardized outputs; the signal variance around 1. */
#define LS_PRIOR_SD 1.7320508075688772
#define SN_PRIOR_MEAN (-5.0)
#define SN_PRIOR_SD 1.0
#define SF_PRIOR_SD 1.0

static double ls_prior_mean(size_t d)
{
	return M_SQRT2 + 0.5 * log((double)d) - LS_PRIOR_SD * LS_PRIOR_SD;
}

static double clampd(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void clamp_theta(double *theta, size_t d)
{
	size_t k;

	for (k = 0; k < d; k++)
		theta[k] = clampd(theta[k], LOG_LS_MIN, LOG_LS_MAX);
	theta[d] = clampd(theta[d], LOG_SF_MIN, LOG_SF_MAX);
	theta[d + 1] = clampd(theta[d + 1], LOG_SN_MIN, LOG_SN_MAX);
}

/* Squared scaled distance between rows a and b of x (n rows). */
static double dist2(const double *a, const double *b, const double *inv_ls,
		    size_t d)
{
	double s = 0;
	size_t k;

	for (k = 0; k < d; k++) {
		double t = (a[k] - b[k]) * inv_ls[k];

		s += t * t;
	}
	return s;
}

static double matern52(double r2)
{
	double r = sqrt(r2);

	return (1.0 + SQRT5 * r + 5.0 / 3.0 * r2) * exp(-SQRT5 * r);
}

/* K + noise (n * n, column-major, both triangles) for theta. */
static void build_k(const struct tune__gp *gp, const double *theta,
		    const double *inv_ls, double *k)
{
	size_t n = gp->n, d = gp->d, i, j;
	double sf2 = exp(theta[d]), sn2 = exp(theta[d + 1]);

	for (j = 0; j < n; j++) {
		k[j + j * n] = sf2 + sn2 + 1e-8;
		for (i = j + 1; i < n; i++) {
			double v =
				sf2 * matern52(dist2(gp->x + i * d,
						     gp->x + j * d, inv_ls, d));

			k[i + j * n] = v;
			k[j + i * n] = v;
		}
	}
}

struct work {
	double *k, *kinv, *alpha, *inv_ls;
};

/*
 * The negative log posterior of theta (up to a constant) and, when grad
 * is not NULL, its gradient. Returns HUGE_VAL when K is not positive
 * definite.
 */
static double objective(const struct tune__gp *gp, const double *theta,
			double *grad, struct work *w)
{
	size_t n = gp->n, d = gp->d, i, j, q;
	double sf2 = exp(theta[d]), sn2 = exp(theta[d + 1]);
	double lml, logdet = 0, mu = ls_prior_mean(d), f;

	for (q = 0; q < d; q++)
		w->inv_ls[q] = exp(-theta[q]);
	build_k(gp, theta, w->inv_ls, w->k);
	memcpy(w->kinv, w->k, n * n * sizeof(double));
	if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, w->kinv,
			   (lapack_int)n))
		return HUGE_VAL;
	for (i = 0; i < n; i++)
		logdet += 2.0 * log(w->kinv[i + i * n]);
	memcpy(w->alpha, gp->y, n * sizeof(double));
	LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', (lapack_int)n, 1, w->kinv,
		       (lapack_int)n, w->alpha, (lapack_int)n);
	lml = -0.5 * cblas_ddot((int)n, gp->y, 1, w->alpha, 1) - 0.5 * logdet;
	f = -lml;
	for (q = 0; q < d; q++)
		f += 0.5 * (theta[q] - mu) * (theta[q] - mu) /
		     (LS_PRIOR_SD * LS_PRIOR_SD);
	f += 0.5 * theta[d] * theta[d] / (SF_PRIOR_SD * SF_PRIOR_SD);
	f += 0.5 * (theta[d + 1] - SN_PRIOR_MEAN) *
	     (theta[d + 1] - SN_PRIOR_MEAN) / (SN_PRIOR_SD * SN_PRIOR_SD);
	if (!grad)
		return f;

	/* d lml / d theta = 0.5 tr((alpha alpha' - K^-1) dK/dtheta). */
	if (LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', (lapack_int)n, w->kinv,
			   (lapack_int)n))
		return HUGE_VAL;
	memset(grad, 0, (d + 2) * sizeof(double));
	for (j = 0; j < n; j++) {
		double wjj = w->alpha[j] * w->alpha[j] - w->kinv[j + j * n];

		grad[d] += 0.5 * wjj * sf2;
		grad[d + 1] += 0.5 * wjj * sn2;
		for (i = j + 1; i < n; i++) {
			const double *a = gp->x + i * d, *b = gp->x + j * d;
			double wij =
				w->alpha[i] * w->alpha[j] - w->kinv[i + j * n];
			double r2 = dist2(a, b, w->inv_ls, d), r = sqrt(r2);
			double e = exp(-SQRT5 * r);
			double kij =
				sf2 * (1.0 + SQRT5 * r + 5.0 / 3.0 * r2) * e;
			double c = sf2 * 5.0 / 3.0 * (1.0 + SQRT5 * r) * e;

			/* Off-diagonal pairs count twice (i, j and j, i). */
			grad[d] += wij * kij;
			for (q = 0; q < d; q++) {
				double t = (a[q] - b[q]) * w->inv_ls[q];

				grad[q] += wij * c * t * t;
			}
		}
	}
	for (q = 0; q < d + 2; q++)
		grad[q] = -grad[q];
	for (q = 0; q < d; q++)
		grad[q] += (theta[q] - mu) / (LS_PRIOR_SD * LS_PRIOR_SD);
	grad[d] += theta[d] / (SF_PRIOR_SD * SF_PRIOR_SD);
	grad[d + 1] +=
		(theta[d + 1] - SN_PRIOR_MEAN) / (SN_PRIOR_SD * SN_PRIOR_SD);
	return f;
}

/* BFGS with a backtracking line search, projected on the bounds. */
static double minimize(const struct tune__gp *gp, double *theta, int iters,
		       struct work *w)
{
	size_t p = gp->d + 2, i, j;
	double *h = xcalloc(p * p, sizeof(double));
	double *g = xmalloc(p * sizeof(double));
	double *g2 = xmalloc(p * sizeof(double));
	double *t2 = xmalloc(p * sizeof(double));
	double *dir = xmalloc(p * sizeof(double));
	double *s = xmalloc(p * sizeof(double));
	double *yv = xmalloc(p * sizeof(double));
	double *hy = xmalloc(p * sizeof(double));
	double f, f2;
	int it;

	for (i = 0; i < p; i++)
		h[i + i * p] = 1.0;
	f = objective(gp, theta, g, w);
	for (it = 0; it < iters && f < HUGE_VAL; it++) {
		double slope, step = 1.0, sy, yhy, gmax = 0;
		int ls;

		cblas_dsymv(CblasColMajor, CblasLower, (int)p, -1.0, h, (int)p,
			    g, 1, 0.0, dir, 1);
		slope = cblas_ddot((int)p, g, 1, dir, 1);
		if (slope >= 0) {
			/* Not a descent direction: restart from the
			 * gradient. */
			for (i = 0; i < p * p; i++)
				h[i] = 0;
			for (i = 0; i < p; i++) {
				h[i + i * p] = 1.0;
				dir[i] = -g[i];
			}
			slope = -cblas_ddot((int)p, g, 1, g, 1);
		}
		/* Steps of more than 2 in a logarithm are never useful. */
		for (i = 0; i < p; i++)
			if (fabs(dir[i]) * step > 2.0)
				step = 2.0 / fabs(dir[i]);
		for (ls = 0; ls < 30; ls++) {
			for (i = 0; i < p; i++)
				t2[i] = theta[i] + step * dir[i];
			clamp_theta(t2, gp->d);
			f2 = objective(gp, t2, g2, w);
			if (f2 <= f + 1e-4 * step * slope)
				break;
			step *= 0.5;
		}
		if (ls == 30 || f2 >= f)
			break;
		for (i = 0; i < p; i++) {
			s[i] = t2[i] - theta[i];
			yv[i] = g2[i] - g[i];
		}
		sy = cblas_ddot((int)p, s, 1, yv, 1);
		if (sy > 1e-10) {
			/* H += (sy + y'Hy) ss'/sy^2 - (Hys' + sy'H)/sy */
			cblas_dsymv(CblasColMajor, CblasLower, (int)p, 1.0, h,
				    (int)p, yv, 1, 0.0, hy, 1);
			yhy = cblas_ddot((int)p, yv, 1, hy, 1);
			for (j = 0; j < p; j++)
				for (i = j; i < p; i++)
					h[i + j * p] +=
						(sy + yhy) * s[i] * s[j] /
							(sy * sy) -
						(hy[i] * s[j] + s[i] * hy[j]) /
							sy;
		}
		memcpy(theta, t2, p * sizeof(double));
		memcpy(g, g2, p * sizeof(double));
		if (f - f2 < 1e-7 * (1.0 + fabs(f)))
			gmax = 0;
		else
			gmax = 1;
		f = f2;
		if (gmax == 0)
			break;
	}
	free(h);
	free(g);
	free(g2);
	free(t2);
	free(dir);
	free(s);
	free(yv);
	free(hy);
	return f;
}

int tune__gp_factor(struct tune__gp *gp)
{
	size_t n = gp->n, d = gp->d, q;
	double *inv_ls = xmalloc(d * sizeof(double));
	int rc = 0;

	for (q = 0; q < d; q++)
		inv_ls[q] = exp(-gp->theta[q]);
	free(gp->l);
	free(gp->alpha);
	gp->l = xmalloc(n * n * sizeof(double));
	gp->alpha = xmalloc(n * sizeof(double));
	build_k(gp, gp->theta, inv_ls, gp->l);
	free(inv_ls);
	if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, gp->l,
			   (lapack_int)n))
		return ERR_INTERNAL;
	memcpy(gp->alpha, gp->y, n * sizeof(double));
	if (LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', (lapack_int)n, 1, gp->l,
			   (lapack_int)n, gp->alpha, (lapack_int)n))
		rc = ERR_INTERNAL;
	return rc;
}

int tune__gp_fit(struct tune__gp *gp, int restarts, int iters)
{
	/* Starting length scales: the prior's, shorter and longer. */
	static const double start_ls[] = { 0.0, -1.2, 1.0 };
	size_t n = gp->n, d = gp->d, p = d + 2, q;
	struct work w;
	double *best = NULL, best_f = HUGE_VAL;
	double *theta = xmalloc(p * sizeof(double));
	int r;

	w.k = xmalloc(n * n * sizeof(double));
	w.kinv = xmalloc(n * n * sizeof(double));
	w.alpha = xmalloc(n * sizeof(double));
	w.inv_ls = xmalloc(d * sizeof(double));
	if (!gp->theta)
		gp->theta = xmalloc(p * sizeof(double));
	best = xmalloc(p * sizeof(double));
	if (restarts > 3)
		restarts = 3;
	for (r = 0; r < restarts; r++) {
		double f;

		for (q = 0; q < d; q++)
			theta[q] = ls_prior_mean(d) + start_ls[r];
		theta[d] = 0.0;
		theta[d + 1] = r == 2 ? -2.0 : SN_PRIOR_MEAN;
		clamp_theta(theta, d);
		f = minimize(gp, theta, iters, &w);
		if (f < best_f) {
			best_f = f;
			memcpy(best, theta, p * sizeof(double));
		}
	}
	if (best_f == HUGE_VAL) {
		/* Only a large noise term makes the matrix factorable. */
		for (q = 0; q < d; q++)
			best[q] = ls_prior_mean(d);
		best[d] = 0.0;
		best[d + 1] = LOG_SN_MAX;
	}
	memcpy(gp->theta, best, p * sizeof(double));
	free(best);
	free(theta);
	free(w.k);
	free(w.kinv);
	free(w.alpha);
	free(w.inv_ls);
	return tune__gp_factor(gp);
}

void tune__gp_predict(const struct tune__gp *gp, const double *z, size_t m,
		      double *mu, double *sd)
{
	size_t n = gp->n, d = gp->d, i, j, q;
	double sf2 = exp(gp->theta[d]);
	double *inv_ls = xmalloc(d * sizeof(double));
	double *ks = xmalloc(n * m * sizeof(double));

	for (q = 0; q < d; q++)
		inv_ls[q] = exp(-gp->theta[q]);
	for (j = 0; j < m; j++)
		for (i = 0; i < n; i++)
			ks[i + j * n] =
				sf2 * matern52(dist2(gp->x + i * d, z + j * d,
						     inv_ls, d));
	cblas_dgemv(CblasColMajor, CblasTrans, (int)n, (int)m, 1.0, ks, (int)n,
		    gp->alpha, 1, 0.0, mu, 1);
	if (sd) {
		LAPACKE_dtrtrs(LAPACK_COL_MAJOR, 'L', 'N', 'N', (lapack_int)n,
			       (lapack_int)m, gp->l, (lapack_int)n, ks,
			       (lapack_int)n);
		for (j = 0; j < m; j++) {
			double v = sf2 - cblas_ddot((int)n, ks + j * n, 1,
						    ks + j * n, 1);

			sd[j] = sqrt(v > 1e-12 ? v : 1e-12);
		}
	}
	free(ks);
	free(inv_ls);
}

void tune__gp_release(struct tune__gp *gp)
{
	free(gp->x);
	free(gp->y);
	free(gp->theta);
	free(gp->l);
	free(gp->alpha);
	memset(gp, 0, sizeof(*gp));
}
