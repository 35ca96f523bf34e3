/*
 * The straggler rule (controller/straggler.h): figures of a host over an
 * interval, its ratio against the others' medians, and the verdict.
 */
#include <stdlib.h>
#include <string.h>

#include "controller/straggler.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* The newest sample of s at or before t, or NULL. */
static const struct ctrl_strag_point *at(const struct ctrl_strag_series *s,
					 int64_t t)
{
	size_t i;

	for (i = s->n; i > 0; i--)
		if (s->p[i - 1].ts_ms <= t)
			return &s->p[i - 1];
	return NULL;
}

int ctrl_strag_figures(const struct ctrl_strag_series *s, int64_t t0,
		       int64_t t1, struct ctrl_strag_fig *out)
{
	const struct ctrl_strag_point *a = at(s, t0), *b = at(s, t1);
	double dt, run, wait;

	memset(out, 0, sizeof(*out));
	if (!a || !b || t1 <= t0 || 2 * (b->ts_ms - a->ts_ms) < t1 - t0 ||
	    b->run_ns < a->run_ns || b->wait_ns < a->wait_ns)
		return 0;
	dt = (double)(b->ts_ms - a->ts_ms) * 1e6;
	run = (double)(b->run_ns - a->run_ns);
	wait = (double)(b->wait_ns - a->wait_ns);
	out->valid = 1;
	out->busy = (run + wait) / dt;
	out->wait = wait / dt;
	out->stretch = run > 0 ? (run + wait) / run : 1.0;
	return 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n > 0), sorting v. */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ctrl_strag_ratio(const struct ctrl_strag_fig *f,
			const struct ctrl_strag_fig *of, size_t n_of,
			struct ctrl_strag_fig *med)
{
	double *busy = xcalloc(n_of + 1, sizeof(*busy));
	double *wait = xcalloc(n_of + 1, sizeof(*wait));
	double *stretch = xcalloc(n_of + 1, sizeof(*stretch));
	double r = 0, rb = 1, rs = 1;
	size_t i, m = 0;

	memset(med, 0, sizeof(*med));
	for (i = 0; i < n_of; i++) {
		if (!of[i].valid)
			continue;
		busy[m] = of[i].busy;
		wait[m] = of[i].wait;
		stretch[m++] = of[i].stretch;
	}
	if (!f->valid || !m)
		goto out;
	med->valid = 1;
	med->busy = median(busy, m);
	med->wait = median(wait, m);
	med->stretch = median(stretch, m);
	if (f->busy >= CTRL_STRAG_BUSY_FLOOR)
		rb = f->busy / (med->busy > CTRL_STRAG_BUSY_MIN ?
					med->busy :
					CTRL_STRAG_BUSY_MIN);
	if (f->wait >= CTRL_STRAG_WAIT_FLOOR)
		rs = f->stretch / med->stretch;
	r = rb > rs ? rb : rs;
out:
	free(busy);
	free(wait);
	free(stretch);
	return r;
}

/* Host i's ratio over [t0, t1] of every host's clock, its figures and
 * the others' medians. */
static double ratio_over(const struct ctrl_strag_series *s, size_t n, size_t i,
			 const int64_t *t0, const int64_t *t1,
			 struct ctrl_strag_fig *fig, struct ctrl_strag_fig *med)
{
	struct ctrl_strag_fig *of = xcalloc(n + 1, sizeof(*of));
	size_t j, m = 0;
	double r;

	(void)ctrl_strag_figures(&s[i], t0[i], t1[i], fig);
	for (j = 0; j < n; j++)
		if (j != i)
			(void)ctrl_strag_figures(&s[j], t0[j], t1[j], &of[m++]);
	r = ctrl_strag_ratio(fig, of, m, med);
	free(of);
	return r;
}

/* Whether host i's ratio reaches threshold in enough parts of the
 * window. */
static int persistent(const struct ctrl_strag_series *s, size_t n, size_t i,
		      const int64_t *end, int64_t window_ms, double threshold)
{
	int64_t *t0 = xcalloc(n + 1, sizeof(*t0));
	int64_t *t1 = xcalloc(n + 1, sizeof(*t1));
	struct ctrl_strag_fig fig, med;
	int k, slow = 0;
	size_t j;

	for (k = 0; k < CTRL_STRAG_PARTS; k++) {
		for (j = 0; j < n; j++) {
			t0[j] = end[j] - window_ms +
				window_ms * k / CTRL_STRAG_PARTS;
			t1[j] = end[j] - window_ms +
				window_ms * (k + 1) / CTRL_STRAG_PARTS;
		}
		slow += ratio_over(s, n, i, t0, t1, &fig, &med) >= threshold;
	}
	free(t0);
	free(t1);
	return slow >= CTRL_STRAG_PARTS_SLOW;
}

void ctrl_strag_judge(const struct ctrl_strag_series *s, size_t n,
		      int64_t window_ms, double threshold, double *ratios,
		      struct ctrl_strag_verdict *v)
{
	int64_t *t0 = xcalloc(n + 1, sizeof(*t0));
	int64_t *end = xcalloc(n + 1, sizeof(*end));
	struct ctrl_strag_fig fig, med;
	size_t i;
	double r;

	memset(v, 0, sizeof(*v));
	v->culprit = -1;
	for (i = 0; i < n; i++) {
		end[i] = s[i].n ? s[i].p[s[i].n - 1].ts_ms : 0;
		t0[i] = end[i] - window_ms;
	}
	for (i = 0; i < n; i++) {
		r = ratio_over(s, n, i, t0, end, &fig, &med);
		if (ratios)
			ratios[i] = r;
		if (r < threshold || (v->culprit >= 0 && r <= v->ratio) ||
		    !persistent(s, n, i, end, window_ms, threshold))
			continue;
		v->culprit = (int)i;
		v->ratio = r;
		v->fig = fig;
		v->others = med;
	}
	free(t0);
	free(end);
}

void ctrl_strag_describe(struct buf *out, const char *algo, const char *host,
			 int rank, const struct ctrl_strag_verdict *v,
			 int64_t window_ms)
{
	(void)buf_addf(out, "%s (host %s)", algo, host);
	if (rank >= 0)
		(void)buf_addf(out, " rank %d", rank);
	(void)buf_addf(out,
		       " is %.1fx slower than the job's other hosts: busy "
		       "%.2f of a core (%.2f of it waiting for a CPU) against "
		       "%.2f (%.2f), the others' median, over %lld s",
		       v->ratio, v->fig.busy, v->fig.wait, v->others.busy,
		       v->others.wait, (long long)((window_ms + 500) / 1000));
}
