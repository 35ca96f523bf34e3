/*
 * Tests agent/hang.c: the threshold (the timeout until enough gaps were
 * learned after the warm-up, then K times the longest gap within floor
 * and timeout), CPU time as progress, the margin of a rank that is not
 * frozen, and the culprit among hung ranks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/hang.h"

#define T0 1000000

static void test_timeout_until_learned(void **state)
{
	struct agent_hang h;
	int i;

	(void)state;
	agent_hang_start(&h, T0);
	assert_int_equal(agent_hang_threshold(&h, 1800000), 1800000);
	/* Gaps during the warm-up teach nothing. */
	for (i = 1; i <= 50; i++)
		agent_hang_progress(&h, AGENT_HANG_OUTPUT, T0 + i * 1000);
	assert_int_equal(h.gaps, 0);
	assert_int_equal(agent_hang_threshold(&h, 1800000), 1800000);
	/* The gap that began in it neither. */
	agent_hang_progress(&h, AGENT_HANG_OUTPUT, T0 + AGENT_HANG_WARMUP_MS);
	assert_int_equal(h.gaps, 0);
	/* After it: 9 gaps of 20 s are not enough, the 10th is. */
	for (i = 1; i <= 9; i++)
		agent_hang_progress(&h, AGENT_HANG_OUTPUT,
				    T0 + AGENT_HANG_WARMUP_MS + i * 20000);
	assert_int_equal(h.gaps, 9);
	assert_int_equal(agent_hang_threshold(&h, 1800000), 1800000);
	agent_hang_progress(&h, AGENT_HANG_OUTPUT,
			    T0 + AGENT_HANG_WARMUP_MS + 10 * 20000);
	assert_int_equal(agent_hang_threshold(&h, 1800000), 3 * 20000);
	/* Never above the timeout. */
	assert_int_equal(agent_hang_threshold(&h, 5000), 5000);
	/* A job's own threshold (StalledTrainingRule) is never learned. */
	h.fixed = 1;
	assert_int_equal(agent_hang_threshold(&h, 1800000), 1800000);
}

static void test_floor(void **state)
{
	struct agent_hang h;
	int64_t t;
	int i;

	(void)state;
	agent_hang_start(&h, T0);
	/* Busy from the start: CPU time every 250 ms. */
	for (i = 1; i <= 20 + AGENT_HANG_WARMUP_MS / 250; i++)
		agent_hang_progress(&h, AGENT_HANG_CPU, T0 + i * 250);
	t = T0 + (20 + AGENT_HANG_WARMUP_MS / 250) * 250;
	/* 3 x 250 ms is below the floor. */
	assert_int_equal(agent_hang_threshold(&h, 1800000),
			 AGENT_HANG_FLOOR_MS);
	/* A rank that logs once a minute is not killed for it. */
	for (i = 1; i <= 3; i++)
		agent_hang_progress(&h, AGENT_HANG_OUTPUT, t + i * 60000);
	assert_int_equal(agent_hang_threshold(&h, 1800000), 180000);
}

static void test_cpu_progress(void **state)
{
	struct agent_hang h;

	(void)state;
	agent_hang_start(&h, T0);
	/* The first reading is only the base (100 ticks a second). */
	assert_int_equal(agent_hang_cpu(&h, 100, 100, T0 + 250), 0);
	assert_int_equal(h.last_ms, T0);
	assert_int_equal(agent_hang_cpu(&h, 100, 100, T0 + 500), 0);
	/* 100 ms of CPU in 500 ms: computing. */
	assert_int_equal(agent_hang_cpu(&h, 110, 100, T0 + 750), 1);
	assert_int_equal(h.last_ms, T0 + 750);
	assert_int_equal(h.cpu_ms, T0 + 750);
	/* A child that ended took its ticks along: a new base. */
	assert_int_equal(agent_hang_cpu(&h, 50, 100, T0 + 1000), 0);
	assert_int_equal(agent_hang_cpu(&h, 60, 100, T0 + 1250), 1);
	/*
	 * A rank stuck in a step of a torch program: its library's threads
	 * gain a tick every few seconds (50 ms in 20 s), far below 5 % of a
	 * core since the last progress: never progress.
	 */
	assert_int_equal(agent_hang_cpu(&h, 61, 100, T0 + 5250), 0);
	assert_int_equal(agent_hang_cpu(&h, 62, 100, T0 + 9250), 0);
	assert_int_equal(agent_hang_cpu(&h, 65, 100, T0 + 21250), 0);
	assert_int_equal(h.last_ms, T0 + 1250);
	/* Busy again: 1.1 s of CPU in the 21 s since (over 5 %): progress. */
	assert_int_equal(agent_hang_cpu(&h, 170, 100, T0 + 22250), 1);
}

static void test_progress_starts(void **state)
{
	struct agent_hang h = { 0 };

	(void)state;
	agent_hang_progress(&h, AGENT_HANG_OUTPUT, T0);
	assert_true(h.started);
	assert_int_equal(h.start_ms, T0);
	assert_int_equal(h.out_ms, T0);
	assert_int_equal(h.gaps, 0);
}

static void test_deadline_margin(void **state)
{
	struct agent_hang h;

	(void)state;
	agent_hang_start(&h, T0);
	assert_int_equal(agent_hang_deadline(&h, 5000, 1), T0 + 5000);
	assert_int_equal(agent_hang_deadline(&h, 5000, 0),
			 T0 + 5000 + AGENT_HANG_MARGIN_MS);
	assert_int_equal(agent_hang_deadline(&h, 1800000, 0),
			 T0 + 1800000 + 180000);
}

static void test_culprit(void **state)
{
	struct agent_hang h[3];
	struct agent_hang_obs obs[3];
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		agent_hang_start(&h[i], T0);
		obs[i].h = &h[i];
		obs[i].frozen = 0;
		obs[i].watched = 1;
	}
	h[0].last_ms = T0 + 2000;
	h[1].last_ms = T0 + 1000; /* the most silent */
	h[2].last_ms = T0 + 3000;
	/* Nobody hung yet; off with a timeout of 0. */
	assert_int_equal(agent_hang_culprit(obs, 3, T0 + 7999, 5000), -1);
	assert_int_equal(agent_hang_culprit(obs, 3, T0 + 100000, 0), -1);
	assert_int_equal(agent_hang_culprit(obs, 3, T0 + 8000, 5000), 1);
	assert_int_equal(agent_hang_culprit(obs, 3, T0 + 20000, 5000), 1);
	/* A frozen rank is named first, and judged without the margin. */
	obs[2].frozen = 1;
	assert_int_equal(agent_hang_culprit(obs, 3, T0 + 8000, 5000), 2);
	assert_int_equal(agent_hang_culprit(obs, 3, T0 + 7999, 5000), -1);
	obs[2].frozen = 0;
	obs[0].frozen = 1;
	assert_int_equal(agent_hang_culprit(obs, 3, T0 + 7000, 5000), 0);
	/* A rank that exited is not watched. */
	obs[0].frozen = 0;
	obs[1].watched = 0;
	assert_int_equal(agent_hang_culprit(obs, 3, T0 + 20000, 5000), 0);
	/* Ties go to the lowest index. */
	h[2].last_ms = h[0].last_ms;
	assert_int_equal(agent_hang_culprit(obs, 3, T0 + 20000, 5000), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeout_until_learned),
		cmocka_unit_test(test_floor),
		cmocka_unit_test(test_cpu_progress),
		cmocka_unit_test(test_progress_starts),
		cmocka_unit_test(test_deadline_margin),
		cmocka_unit_test(test_culprit),
	};

	return cmocka_run_group_tests_name("agent/hang", tests, NULL, NULL);
}
