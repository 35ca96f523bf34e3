/*
 * Tests tuner/: the points each strategy gives (determinism, bounds,
 * integers, categories, scaling, the grid's order), that the Bayesian
 * strategy finds better points than Random on a simple function, the
 * median and ASHA stopping decisions on hand-made curves, and that bad
 * input is refused with ERR_INVALID and a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "tuner/tuner.h"

static const struct tune_param mixed_params[] = {
	{ "lr", TUNE_CONTINUOUS, TUNE_SCALE_LOG, 1e-4, 1.0, 0 },
	{ "layers", TUNE_INTEGER, TUNE_SCALE_LINEAR, 1, 4, 0 },
	{ "opt", TUNE_CATEGORICAL, TUNE_SCALE_LINEAR, 0, 0, 3 },
	{ "momentum", TUNE_CONTINUOUS, TUNE_SCALE_REVLOG, 0.9, 0.9999, 0 },
};
static const struct tune_space mixed = { mixed_params, 4 };

static int suggest(const struct tune_space *space, enum tune_strategy st,
		   uint64_t seed, size_t index, const struct tune_obs *obs,
		   size_t n_obs, double *x)
{
	struct tune_request rq = { 0 };
	struct buf err = BUF_INIT;
	int rc;

	rq.space = space;
	rq.strategy = st;
	rq.seed = seed;
	rq.index = index;
	rq.budget = 30;
	rq.obs = obs;
	rq.n_obs = n_obs;
	rc = tune_suggest(&rq, x, &err);
	if (rc)
		print_message("tune_suggest: %s\n", err.data);
	buf_release(&err);
	return rc;
}

static void assert_in_space(const struct tune_space *space, const double *x)
{
	size_t i;

	for (i = 0; i < space->n; i++) {
		const struct tune_param *p = &space->params[i];

		if (p->kind == TUNE_CATEGORICAL) {
			assert_true(x[i] >= 0 && x[i] < (double)p->n_values);
			assert_true(x[i] == floor(x[i]));
			continue;
		}
		assert_true(x[i] >= p->min && x[i] <= p->max);
		if (p->kind == TUNE_INTEGER)
			assert_true(x[i] == floor(x[i]));
	}
}

static void test_random_deterministic(void **state)
{
	double a[4], b[4], c[4];
	size_t i;

	(void)state;
	for (i = 0; i < 200; i++) {
		assert_int_equal(suggest(&mixed, TUNE_RANDOM, 7, i, NULL, 0, a),
				 0);
		assert_int_equal(suggest(&mixed, TUNE_RANDOM, 7, i, NULL, 0, b),
				 0);
		assert_memory_equal(a, b, sizeof(a));
		assert_in_space(&mixed, a);
		/* Hyperband draws its configurations the same way. */
		assert_int_equal(
			suggest(&mixed, TUNE_HYPERBAND, 7, i, NULL, 0, c), 0);
		assert_memory_equal(a, c, sizeof(a));
	}
	assert_int_equal(suggest(&mixed, TUNE_RANDOM, 7, 0, NULL, 0, a), 0);
	assert_int_equal(suggest(&mixed, TUNE_RANDOM, 7, 1, NULL, 0, b), 0);
	assert_true(a[0] != b[0]);
	assert_int_equal(suggest(&mixed, TUNE_RANDOM, 8, 0, NULL, 0, b), 0);
	assert_true(a[0] != b[0]);
}

/* Log scaling puts half of 1e-4 .. 1 below 1e-2; reverse log puts a third
 * of 0.9 .. 0.9999 above 0.999; integers 1 .. 4 are equally likely;
 * categories too. */
static void test_random_scaling(void **state)
{
	size_t i, n = 3000, below = 0, above = 0, ints[5] = { 0 },
		  cats[3] = { 0 };
	double x[4];

	(void)state;
	for (i = 0; i < n; i++) {
		assert_int_equal(suggest(&mixed, TUNE_RANDOM, 1, i, NULL, 0, x),
				 0);
		below += x[0] < 1e-2;
		ints[(size_t)x[1]]++;
		cats[(size_t)x[2]]++;
		above += x[3] > 0.999;
	}
	assert_true(below > 0.45 * n && below < 0.55 * n);
	assert_true(above > 0.28 * n && above < 0.39 * n);
	for (i = 1; i <= 4; i++)
		assert_true(ints[i] > 0.21 * n && ints[i] < 0.29 * n);
	for (i = 0; i < 3; i++)
		assert_true(cats[i] > 0.29 * n && cats[i] < 0.38 * n);
}

static void test_grid(void **state)
{
	static const struct tune_param gp[] = {
		{ "a", TUNE_CATEGORICAL, TUNE_SCALE_LINEAR, 0, 0, 2 },
		{ "b", TUNE_CATEGORICAL, TUNE_SCALE_LINEAR, 0, 0, 3 },
	};
	static const struct tune_space grid = { gp, 2 };
	int seen[2][3] = { { 0 } };
	double x[4];
	size_t i;

	(void)state;
	assert_int_equal(tune_grid_size(&grid), 6);
	assert_int_equal(tune_grid_size(&mixed), 0);
	for (i = 0; i < 6; i++) {
		assert_int_equal(suggest(&grid, TUNE_GRID, 1, i, NULL, 0, x),
				 0);
		/* Mixed radix, the last parameter fastest. */
		assert_int_equal((size_t)x[0], i / 3);
		assert_int_equal((size_t)x[1], i % 3);
		seen[(size_t)x[0]][(size_t)x[1]]++;
	}
	for (i = 0; i < 6; i++)
		assert_int_equal(seen[i / 3][i % 3], 1);
	assert_int_equal(suggest(&grid, TUNE_GRID, 1, 6, NULL, 0, x),
			 ERR_INVALID);
	assert_int_equal(suggest(&mixed, TUNE_GRID, 1, 0, NULL, 0, x),
			 ERR_INVALID);
}

static void test_scale_auto(void **state)
{
	struct tune_param p = {
		"x", TUNE_CONTINUOUS, TUNE_SCALE_LINEAR, 1e-3, 0.1, 0
	};

	(void)state;
	assert_int_equal(tune_scale_auto(&p), TUNE_SCALE_LOG);
	p.max = 0.05;
	assert_int_equal(tune_scale_auto(&p), TUNE_SCALE_LINEAR);
	p.min = 0;
	p.max = 1000;
	assert_int_equal(tune_scale_auto(&p), TUNE_SCALE_LINEAR);
	p.kind = TUNE_INTEGER;
	p.min = 1;
	p.max = 512;
	assert_int_equal(tune_scale_auto(&p), TUNE_SCALE_LOG);
	p.kind = TUNE_CATEGORICAL;
	assert_int_equal(tune_scale_auto(&p), TUNE_SCALE_LINEAR);
}

/* A bowl with its minimum 0 at lr 1e-2, 3 layers, category 1 and
 * momentum 0.99, in the parameters' scaled units. */
static double mixed_f(const double *x)
{
	double a = log10(x[0]) + 2, b = (x[1] - 3) / 3;
	double c = -log10(1 - x[3]) - 2;

	return a * a + b * b + (x[2] == 1 ? 0 : 0.5) + c * c;
}

/* Runs one sequential optimization of mixed_f; returns the best value. */
static double optimize(enum tune_strategy st, uint64_t seed, size_t budget)
{
	struct tune_obs obs[40];
	double xs[40][4], best = HUGE_VAL;
	size_t i;

	assert_true(budget <= 40);
	for (i = 0; i < budget; i++) {
		assert_int_equal(suggest(&mixed, st, seed, i, obs, i, xs[i]),
				 0);
		assert_in_space(&mixed, xs[i]);
		obs[i].x = xs[i];
		obs[i].y = mixed_f(xs[i]);
		if (obs[i].y < best)
			best = obs[i].y;
	}
	return best;
}

static void test_bayesian_beats_random(void **state)
{
	double sb = 0, sr = 0;
	uint64_t seed;

	(void)state;
	for (seed = 1; seed <= 6; seed++) {
		sb += optimize(TUNE_BAYESIAN, seed, 25);
		sr += optimize(TUNE_RANDOM, seed, 25);
	}
	print_message("mean best: bayesian %g random %g\n", sb / 6, sr / 6);
	assert_true(sb < sr);
}

static void test_bayesian_deterministic(void **state)
{
	struct tune_obs obs[12];
	double xs[12][4], a[4], b[4];
	const double *pending[1];
	struct tune_request rq = { 0 };
	struct buf err = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < 12; i++) {
		assert_int_equal(
			suggest(&mixed, TUNE_RANDOM, 3, i, NULL, 0, xs[i]), 0);
		obs[i].x = xs[i];
		obs[i].y = mixed_f(xs[i]);
	}
	assert_int_equal(suggest(&mixed, TUNE_BAYESIAN, 5, 12, obs, 12, a), 0);
	assert_int_equal(suggest(&mixed, TUNE_BAYESIAN, 5, 12, obs, 12, b), 0);
	assert_memory_equal(a, b, sizeof(a));
	assert_in_space(&mixed, a);

	/* A pending point is never suggested again. */
	pending[0] = a;
	rq.space = &mixed;
	rq.strategy = TUNE_BAYESIAN;
	rq.seed = 5;
	rq.index = 13;
	rq.budget = 30;
	rq.obs = obs;
	rq.n_obs = 12;
	rq.pending = pending;
	rq.n_pending = 1;
	assert_int_equal(tune_suggest(&rq, b, &err), 0);
	assert_in_space(&mixed, b);
	assert_true(memcmp(a, b, sizeof(a)) != 0);
	buf_release(&err);
}

/* In a space of 4 points, Bayesian suggestions never repeat an
 * evaluation while an unevaluated point is left. */
static void test_bayesian_discrete_dedup(void **state)
{
	static const struct tune_param dp[] = {
		{ "a", TUNE_INTEGER, TUNE_SCALE_LINEAR, 0, 1, 0 },
		{ "b", TUNE_CATEGORICAL, TUNE_SCALE_LINEAR, 0, 0, 2 },
	};
	static const struct tune_space ds = { dp, 2 };
	struct tune_obs obs[3];
	double xs[3][2] = { { 0, 0 }, { 1, 0 }, { 0, 1 } }, x[2];
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		obs[i].x = xs[i];
		obs[i].y = (double)i;
	}
	assert_int_equal(suggest(&ds, TUNE_BAYESIAN, 1, 10, obs, 3, x), 0);
	assert_true(x[0] == 1 && x[1] == 1);
}

static void test_median_stop(void **state)
{
	static const double o1[] = { 1, 1, 1, 1 }, o2[] = { 2, 2, 2 },
			    o3[] = { 3, 3, 3, 3 }, o4[] = { 0.1 };
	const struct tune_curve others[] = {
		{ o1, 4 }, { o2, 3 }, { o3, 4 }, { o4, 1 }
	};
	static const double bad[] = { 5, 5, 2.5 }, good[] = { 5, 5, 1.5 };
	static const double early[] = { 9, 9 }, avg[] = { 9, 0.1, 2.2 };
	struct tune_curve cur = { bad, 3 };

	(void)state;
	/* Running averages of the first 3 reports: 1, 2, 3 (the one-report
	 * curve does not count); median 2. */
	assert_int_equal(tune_median_stop(others, 4, &cur), 1);
	cur.y = good;
	assert_int_equal(tune_median_stop(others, 4, &cur), 0);
	/* The job's own current value is compared, not its average. */
	cur.y = avg;
	assert_int_equal(tune_median_stop(others, 4, &cur), 1);
	/* Too early, and too few others. */
	cur.y = early;
	cur.n = 2;
	assert_int_equal(tune_median_stop(others, 4, &cur), 0);
	cur.y = bad;
	cur.n = 3;
	assert_int_equal(tune_median_stop(others, 2, &cur), 0);
	/* At report 4 only two others are that long. */
	{
		static const double four[] = { 9, 9, 9, 9 };

		cur.y = four;
		cur.n = 4;
		assert_int_equal(tune_median_stop(others, 4, &cur), 0);
	}
}

static void test_asha_stop(void **state)
{
	static const double v[6][9] = {
		{ 1, 1, 1, 1, 1, 1, 1, 1, 1 },
		{ 2, 2, 2 },
		{ 3, 3, 3 },
		{ 4 },
		{ 5 },
		{ 6 },
	};
	const struct tune_curve others[] = { { v[0], 9 }, { v[1], 3 },
					     { v[2], 3 }, { v[3], 1 },
					     { v[4], 1 }, { v[5], 1 } };
	static const double c1[] = { 3.5 }, c2[] = { 1.5 },
			    c3[] = { 1.5, 1.5, 2.5, 0.1, 0.1 };
	struct tune_curve cur = { c1, 1 };

	(void)state;
	/* Rung 1: 7 values, the best floor(7 / 3) = 2 go on. */
	assert_int_equal(tune_asha_stop(others, 6, &cur, 1, 27, 3), 1);
	cur.y = c2;
	assert_int_equal(tune_asha_stop(others, 6, &cur, 1, 27, 3), 0);
	/* Past rung 3 (reports 4 and 5): judged by the value at report 3
	 * among 4 jobs; only the best one goes on. */
	cur.y = c3;
	cur.n = 5;
	assert_int_equal(tune_asha_stop(others, 6, &cur, 1, 27, 3), 1);
	/* The first job at a rung goes on. */
	cur.y = c1;
	cur.n = 1;
	assert_int_equal(tune_asha_stop(NULL, 0, &cur, 1, 27, 3), 0);
	/* Before the first rung, and with a bad eta or bad bounds. */
	assert_int_equal(tune_asha_stop(others, 6, &cur, 3, 27, 3), 0);
	assert_int_equal(tune_asha_stop(others, 6, &cur, 1, 27, 1), 0);
	assert_int_equal(tune_asha_stop(others, 6, &cur, 1, 1, 3), 0);
}

static void expect_invalid(const struct tune_param *p, const char *what)
{
	const struct tune_space s = { p, 1 };
	struct tune_request rq = { 0 };
	struct buf err = BUF_INIT;
	double x[1];

	rq.space = &s;
	rq.strategy = TUNE_RANDOM;
	assert_int_equal(tune_suggest(&rq, x, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, what));
	buf_release(&err);
}

static void test_bad_input(void **state)
{
	struct tune_param p = { "lr", TUNE_CONTINUOUS, TUNE_SCALE_LINEAR, 2, 1,
				0 };
	struct tune_request rq = { 0 };
	struct buf err = BUF_INIT;
	struct tune_obs obs[1];
	double x[4], ox[4] = { 1e-3, 9, 0, 0.95 };

	(void)state;
	expect_invalid(&p, "MinValue");
	p.min = 0;
	p.scale = TUNE_SCALE_LOG;
	expect_invalid(&p, "Logarithmic");
	p.scale = TUNE_SCALE_REVLOG;
	p.max = 1;
	expect_invalid(&p, "ReverseLogarithmic");
	p.kind = TUNE_INTEGER;
	p.scale = TUNE_SCALE_LINEAR;
	p.max = 1.5;
	expect_invalid(&p, "whole");
	p.kind = TUNE_CATEGORICAL;
	expect_invalid(&p, "1 to 1000 values");
	p.n_values = 1001;
	expect_invalid(&p, "1 to 1000 values");
	p.min = NAN;
	p.kind = TUNE_CONTINUOUS;
	expect_invalid(&p, "MinValue");

	/* An evaluation outside the space, one without an objective, no
	 * space, an unknown strategy. */
	obs[0].x = ox;
	obs[0].y = 1;
	assert_int_equal(suggest(&mixed, TUNE_BAYESIAN, 1, 0, obs, 1, x),
			 ERR_INVALID);
	ox[1] = 2;
	obs[0].y = NAN;
	assert_int_equal(suggest(&mixed, TUNE_BAYESIAN, 1, 0, obs, 1, x),
			 ERR_INVALID);
	obs[0].y = 1;
	assert_int_equal(suggest(&mixed, TUNE_BAYESIAN, 1, 0, obs, 1, x), 0);
	assert_int_equal(tune_suggest(&rq, x, &err), ERR_INVALID);
	assert_true(err.len > 0);
	buf_reset(&err);
	rq.space = &mixed;
	rq.strategy = (enum tune_strategy)42;
	assert_int_equal(tune_suggest(&rq, x, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "strategy"));
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_deterministic),
		cmocka_unit_test(test_random_scaling),
		cmocka_unit_test(test_grid),
		cmocka_unit_test(test_scale_auto),
		cmocka_unit_test(test_bayesian_beats_random),
		cmocka_unit_test(test_bayesian_deterministic),
		cmocka_unit_test(test_bayesian_discrete_dedup),
		cmocka_unit_test(test_median_stop),
		cmocka_unit_test(test_asha_stop),
		cmocka_unit_test(test_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
