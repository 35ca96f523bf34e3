/*
 * Early stopping of a tuning job's training jobs: the median rule (Auto)
 * and asynchronous successive halving (the Hyperband strategy). Both are
 * pure functions of the curves reported so far.
 */
#include <math.h>
#include <stdlib.h>

#include "common/xalloc.h"
#include "tuner/tuner.h"

/* The median rule judges a job only from its MEDIAN_MIN_REPORTS-th report
 * on, and only against at least MEDIAN_MIN_OTHERS other curves that long:
 * the first reports of a training job say little about its end, and a
 * median of one or two curves is noise. */
#define MEDIAN_MIN_REPORTS 3
#define MEDIAN_MIN_OTHERS 3

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A value that is not a number counts as the worst. */
static double value(double v)
{
	return isnan(v) ? HUGE_VAL : v;
}

int tune_median_stop(const struct tune_curve *others, size_t n_others,
		     const struct tune_curve *cur)
{
	size_t n, i, j, k = 0;
	double *avg, med, v;

	if (!cur || !cur->y || (n_others && !others))
		return 0;
	n = cur->n;
	if (n < MEDIAN_MIN_REPORTS)
		return 0;
	avg = xmalloc((n_others ? n_others : 1) * sizeof(double));
	for (i = 0; i < n_others; i++) {
		double s = 0;

		if (others[i].n < n || !others[i].y)
			continue;
		for (j = 0; j < n; j++)
			s += value(others[i].y[j]);
		avg[k++] = s / (double)n;
	}
	if (k < MEDIAN_MIN_OTHERS) {
		free(avg);
		return 0;
	}
	qsort(avg, k, sizeof(double), cmp_double);
	med = k % 2 ? avg[k / 2] : 0.5 * (avg[k / 2 - 1] + avg[k / 2]);
	free(avg);
	v = value(cur->y[n - 1]);
	return v > med;
}

int tune_asha_stop(const struct tune_curve *others, size_t n_others,
		   const struct tune_curve *cur, double min_r, double max_r,
		   double eta)
{
	double rung = 0, r, v;
	size_t i, at, count = 1, better = 0, keep;

	if (!cur || !cur->y || (n_others && !others) || !(min_r >= 1) ||
	    !(max_r > min_r) || !(eta > 1) || !isfinite(max_r) ||
	    !isfinite(eta))
		return 0;
	/* The highest rung below max_r that the job has reached. */
	for (r = min_r; r < max_r && r <= (double)cur->n; r *= eta)
		rung = r;
	if (rung == 0)
		return 0;
	at = (size_t)ceil(rung - 1e-9);
	v = value(cur->y[at - 1]);
	for (i = 0; i < n_others; i++) {
		double o;

		if (others[i].n < at || !others[i].y)
			continue;
		o = value(others[i].y[at - 1]);
		count++;
		if (o < v)
			better++;
	}
	/* Within the best 1/eta: at most floor(count / eta) places, and
	 * always the best one, so that the first jobs at a rung go on. */
	keep = (size_t)floor((double)count / eta);
	if (keep < 1)
		keep = 1;
	return better >= keep;
}
