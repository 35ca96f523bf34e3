/*
 * Tests controller/straggler.c: the figures of a host over an interval,
 * and the verdict on hosts that are alike (nothing), one throttled by a
 * CPU quota (its peers sleep or spin while they wait for it), one slow
 * without waiting for a CPU, a single slow part or step (nothing), noisy
 * figures, one host, two hosts, and the finding in words.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/straggler.h"
#include "common/buf.h"

#define N_PTS 41 /* one sample a second over 40 s */
#define WINDOW_MS 30000

struct host {
	struct ctrl_strag_point p[N_PTS];
};

/*
 * A host whose threads ran (busy - wait) and waited wait cores in every
 * second; in seconds from+1..to (when from >= 0), busy2 and wait2.
 */
static void shape_between(struct host *h, int64_t t0, double busy, double wait,
			  int from, int to, double busy2, double wait2)
{
	int64_t run = 0, waited = 0;
	int i;

	for (i = 0; i < N_PTS; i++) {
		int in = from >= 0 && i > from && i <= to;
		double b = in ? busy2 : busy;
		double w = in ? wait2 : wait;

		if (i) {
			run += (int64_t)((b - w) * 1e9);
			waited += (int64_t)(w * 1e9);
		}
		h->p[i].ts_ms = t0 + 1000LL * i;
		h->p[i].run_ns = run;
		h->p[i].wait_ns = waited;
	}
}

/* The same from second from+1 to the end. */
static void shape(struct host *h, int64_t t0, double busy, double wait,
		  int from, double busy2, double wait2)
{
	shape_between(h, t0, busy, wait, from, N_PTS, busy2, wait2);
}

static void judge(struct host *h, size_t n, double *ratios,
		  struct ctrl_strag_verdict *v)
{
	struct ctrl_strag_series s[8];
	size_t i;

	for (i = 0; i < n; i++) {
		s[i].p = h[i].p;
		s[i].n = N_PTS;
	}
	ctrl_strag_judge(s, n, WINDOW_MS, CTRL_STRAG_RATIO, ratios, v);
}

static void test_figures(void **state)
{
	struct host h;
	struct ctrl_strag_series s = { h.p, N_PTS };
	struct ctrl_strag_fig f;

	(void)state;
	shape(&h, 1000, 1.0, 0.7, -1, 0, 0);
	assert_int_equal(ctrl_strag_figures(&s, 11000, 21000, &f), 1);
	assert_true(f.valid);
	assert_float_equal(f.busy, 1.0, 1e-6);
	assert_float_equal(f.wait, 0.7, 1e-6);
	assert_float_equal(f.stretch, 1.0 / 0.3, 1e-6);
	/* Before the first sample: not covered. */
	assert_int_equal(ctrl_strag_figures(&s, 0, 21000, &f), 0);
	assert_false(f.valid);
	/* Counters that went down (threads ended). */
	h.p[20].run_ns = 0;
	assert_int_equal(ctrl_strag_figures(&s, 11000, 21500, &f), 0);
}

/* Hosts alike: nobody is named. */
static void test_alike(void **state)
{
	struct host h[3];
	struct ctrl_strag_verdict v;
	double r[3];

	(void)state;
	shape(&h[0], 0, 0.30, 0.01, -1, 0, 0);
	shape(&h[1], 250, 0.32, 0.02, -1, 0, 0);
	shape(&h[2], 700, 0.29, 0.01, -1, 0, 0);
	judge(h, 3, r, &v);
	assert_int_equal(v.culprit, -1);
	assert_true(r[0] < 1.2 && r[1] < 1.2 && r[2] < 1.2);
}

/*
 * algo-2 throttled to 30 % of a CPU, its peers sleeping in the
 * collective: busy all the time, 70 % of it waiting; named with its
 * ratio, the others never.
 */
static void test_quota_sleeping_peers(void **state)
{
	struct host h[3];
	struct ctrl_strag_verdict v;
	double r[3];

	(void)state;
	shape(&h[0], 0, 0.30, 0.0, -1, 0, 0);
	shape(&h[1], 400, 1.0, 0.70, -1, 0, 0);
	shape(&h[2], 100, 0.31, 0.01, -1, 0, 0);
	judge(h, 3, r, &v);
	assert_int_equal(v.culprit, 1);
	assert_true(v.ratio > 3.0 && v.ratio < 3.5);
	assert_float_equal(v.fig.busy, 1.0, 0.01);
	assert_float_equal(v.fig.wait, 0.70, 0.01);
	assert_float_equal(v.others.busy, 0.305, 0.01);
	assert_true(r[0] <= 1.0 && r[2] <= 1.0);
	assert_float_equal(r[1], v.ratio, 1e-9);
}

/* Peers that spin while they wait (MPI): all busy; the stretch names the
 * throttled host. */
static void test_quota_spinning_peers(void **state)
{
	struct host h[2];
	struct ctrl_strag_verdict v;

	(void)state;
	shape(&h[0], 0, 1.0, 0.0, -1, 0, 0);
	shape(&h[1], 0, 1.0, 0.70, -1, 0, 0);
	judge(h, 2, NULL, &v);
	assert_int_equal(v.culprit, 1);
	assert_true(v.ratio > 3.0 && v.ratio < 3.5);
}

/* A slow CPU, no run queue: busy all the time while its peer sleeps. */
static void test_slow_without_wait(void **state)
{
	struct host h[2];
	struct ctrl_strag_verdict v;

	(void)state;
	shape(&h[0], 0, 0.40, 0.0, -1, 0, 0);
	shape(&h[1], 0, 0.95, 0.0, -1, 0, 0);
	judge(h, 2, NULL, &v);
	assert_int_equal(v.culprit, 1);
	assert_float_equal(v.ratio, 0.95 / 0.40, 0.01);
}

/*
 * Slow for the last 12 s only: the window's whole-span ratio reaches the
 * threshold, but only two of its four parts do, so nobody is named yet.
 */
static void test_not_persistent(void **state)
{
	struct host h[2];
	struct ctrl_strag_verdict v;
	double r[2];

	(void)state;
	shape(&h[0], 0, 0.30, 0.0, -1, 0, 0);
	shape(&h[1], 0, 0.30, 0.0, 28, 1.0, 0.7);
	judge(h, 2, r, &v);
	assert_int_equal(v.culprit, -1);
	assert_true(r[1] >= CTRL_STRAG_RATIO);
}

/*
 * A straggler whose figures dip in one part of the window (a shared CPU
 * gave its peer a bad few seconds) is still named.
 */
static void test_one_noisy_part(void **state)
{
	struct host h[2];
	struct ctrl_strag_verdict v;

	(void)state;
	/* Seconds 18..24: algo-1 as busy and waiting as algo-2. */
	shape_between(&h[0], 0, 0.30, 0.0, 17, 24, 1.0, 0.7);
	shape(&h[1], 0, 1.0, 0.70, -1, 0, 0);
	judge(h, 2, NULL, &v);
	assert_int_equal(v.culprit, 1);
	assert_true(v.ratio >= CTRL_STRAG_RATIO);
}

/* One slow step (a second at 100 % busy) never names a host. */
static void test_one_slow_step(void **state)
{
	struct host h[2];
	struct ctrl_strag_verdict v;
	int i;

	(void)state;
	shape(&h[0], 0, 0.30, 0.0, -1, 0, 0);
	shape(&h[1], 0, 0.30, 0.0, -1, 0, 0);
	for (i = 30; i < N_PTS; i++) /* 4 s of CPU in one second */
		h[1].p[i].run_ns += 4000000000LL;
	judge(h, 2, NULL, &v);
	assert_int_equal(v.culprit, -1);
}

/* Noisy figures around the same level on every host: nothing. */
static void test_noisy(void **state)
{
	struct host h[3];
	struct ctrl_strag_verdict v;
	int64_t run[3] = { 0, 0, 0 }, wait[3] = { 0, 0, 0 };
	int i, k;

	(void)state;
	srand(7);
	for (i = 0; i < N_PTS; i++) {
		for (k = 0; k < 3; k++) {
			/* busy 0.2..0.6, waiting 0..0.15 (a shared CPU). */
			double b = 0.2 + 0.4 * rand() / (double)RAND_MAX;
			double w = 0.15 * rand() / (double)RAND_MAX;

			if (i) {
				run[k] += (int64_t)((b - w) * 1e9);
				wait[k] += (int64_t)(w * 1e9);
			}
			h[k].p[i].ts_ms = 1000LL * i + 37 * k;
			h[k].p[i].run_ns = run[k];
			h[k].p[i].wait_ns = wait[k];
		}
	}
	judge(h, 3, NULL, &v);
	assert_int_equal(v.culprit, -1);
}

/* Idle hosts (waiting on I/O) are never compared into a finding. */
static void test_idle(void **state)
{
	struct host h[2];
	struct ctrl_strag_verdict v;

	(void)state;
	shape(&h[0], 0, 0.001, 0.0, -1, 0, 0);
	shape(&h[1], 0, 0.10, 0.0, -1, 0, 0);
	judge(h, 2, NULL, &v);
	assert_int_equal(v.culprit, -1);
}

/* One host, or a window the samples do not cover: nothing. */
static void test_too_little(void **state)
{
	struct host h[2];
	struct ctrl_strag_series s[2];
	struct ctrl_strag_verdict v;
	double r[2];

	(void)state;
	shape(&h[0], 0, 1.0, 0.7, -1, 0, 0);
	judge(h, 1, r, &v);
	assert_int_equal(v.culprit, -1);
	assert_float_equal(r[0], 0.0, 0);
	shape(&h[1], 0, 0.3, 0.0, -1, 0, 0);
	s[0].p = h[0].p;
	s[1].p = h[1].p;
	s[0].n = s[1].n = 20; /* 19 s of samples for a window of 30 */
	ctrl_strag_judge(s, 2, WINDOW_MS, CTRL_STRAG_RATIO, r, &v);
	assert_int_equal(v.culprit, -1);
	ctrl_strag_judge(s, 0, WINDOW_MS, CTRL_STRAG_RATIO, NULL, &v);
	assert_int_equal(v.culprit, -1);
}

static void test_describe(void **state)
{
	struct ctrl_strag_verdict v = { 0 };
	struct buf b = BUF_INIT;

	(void)state;
	v.culprit = 1;
	v.ratio = 3.26;
	v.fig = (struct ctrl_strag_fig){ 1, 0.97, 0.68, 3.2 };
	v.others = (struct ctrl_strag_fig){ 1, 0.30, 0.01, 1.0 };
	ctrl_strag_describe(&b, "algo-2", "local-2", 0, &v, 30000);
	assert_string_equal(b.data,
			    "algo-2 (host local-2) rank 0 is 3.3x slower than "
			    "the job's other hosts: busy 0.97 of a core (0.68 "
			    "of it waiting for a CPU) against 0.30 (0.01), the "
			    "others' median, over 30 s");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_figures),
		cmocka_unit_test(test_alike),
		cmocka_unit_test(test_quota_sleeping_peers),
		cmocka_unit_test(test_quota_spinning_peers),
		cmocka_unit_test(test_slow_without_wait),
		cmocka_unit_test(test_not_persistent),
		cmocka_unit_test(test_one_noisy_part),
		cmocka_unit_test(test_one_slow_step),
		cmocka_unit_test(test_noisy),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_too_little),
		cmocka_unit_test(test_describe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
