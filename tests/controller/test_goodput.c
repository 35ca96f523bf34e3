/*
 * Tests controller/obs/goodput.c: the split of a job's wall time from its
 * attempt records (a table of jobs: queued only, one clean attempt, a
 * failure and a restart from an older checkpoint, a preemption, an
 * attempt still redoing, a program that reports no steps, checkpoint
 * stalls larger than the productive time, clock skew) and the reading of
 * progress from log lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/obs/goodput.h"
#include "db/run.h"

#define S(x) ((int64_t)((x)*1000))
#define MAX_ATTEMPTS 3

/* One attempt: start, end, planned, first report (ms, step), last
 * report (ms, step), first report past earlier attempts, stalls. */
#define ATT(st, en, pl, fm, fs, lm, ms_, pm, ck)                         \
	{                                                                \
		0, S(st), S(en), pl, S(fm), fs, S(lm), ms_, S(pm), S(ck) \
	}

struct split_case {
	const char *what;
	int64_t created, end;
	int ended; /* the job ended at end (else end is now) */
	struct db_goodput_attempt a[MAX_ATTEMPTS];
	size_t n;
	/* Expected seconds: queued, startup, productive, checkpoint,
	 * redone, restart, preempted, other. */
	double want[CTRL_GOODPUT_N];
	int64_t step, steps_redone;
	int reporting;
};

static const struct split_case cases[] = {
	{ "queued, never started",
	  S(0),
	  S(10),
	  1,
	  { { 0 } },
	  0,
	  { 10, 0, 0, 0, 0, 0, 0, 0 },
	  -1,
	  0,
	  0 },
	{ "one clean attempt with checkpoint stalls",
	  S(0),
	  S(103),
	  1,
	  { ATT(2, 100, 0, 5, 1, 95, 90, 5, 4) },
	  1,
	  { 2, 3, 91, 4, 0, 0, 0, 3 },
	  90,
	  0,
	  1 },
	{ "a failure at step 50, restored from step 40",
	  S(0),
	  S(126),
	  1,
	  { ATT(1, 55, 0, 3, 1, 53, 50, 3, 0),
	    ATT(60, 125, 0, 64, 41, 124, 100, 74, 0) },
	  2,
	  { 1, 2, 101, 0, 10, 11, 0, 1 },
	  100,
	  10,
	  2 },
	{ "a preemption",
	  S(0),
	  S(100),
	  1,
	  { ATT(0, 40, DB_ATTEMPT_PREEMPTED, 2, 1, 38, 38, 2, 0),
	    ATT(50, 100, 0, 52, 39, 99, 86, 52, 0) },
	  2,
	  { 0, 2, 36 + 48, 0, 0, 2, 2 + 10, 0 },
	  86,
	  0,
	  2 },
	{ "a restarted attempt still redoing its steps",
	  S(0),
	  S(80),
	  0,
	  { ATT(0, 50, 0, 1, 1, 49, 49, 1, 0),
	    ATT(55, 0, 0, 60, 30, 79, 45, 0, 0) },
	  2,
	  { 0, 1, 48, 0, 20, 1 + 5 + 5, 0, 0 },
	  49,
	  20,
	  2 },
	{ "a program that reports no steps",
	  S(0),
	  S(100),
	  1,
	  { ATT(1, 50, 0, 0, 0, 0, 0, 0, 0),
	    ATT(55, 100, 0, 0, 0, 0, 0, 0, 0) },
	  2,
	  { 1, 0, 45, 0, 49, 5, 0, 0 },
	  -1,
	  0,
	  0 },
	{ "an attempt that failed before its first step",
	  S(0),
	  S(100),
	  1,
	  { ATT(0, 10, 0, 0, 0, 0, 0, 0, 0),
	    ATT(12, 100, 0, 15, 1, 99, 80, 15, 0) },
	  2,
	  { 0, 10, 85, 0, 0, 2 + 3, 0, 0 },
	  80,
	  0,
	  1 },
	{ "stalls larger than the productive time spill into redone",
	  S(0),
	  S(60),
	  1,
	  { ATT(0, 30, 0, 1, 1, 29, 29, 1, 0),
	    ATT(31, 60, 0, 32, 20, 59, 35, 50, 20) },
	  2,
	  { 0, 1, 28 + 0, 20, 18 - 10, 1 + 1 + 1, 0, 0 },
	  35,
	  10,
	  2 },
	{ "an agent's clock ahead of the controller's",
	  S(0),
	  S(20),
	  1,
	  { ATT(5, 20, 0, 4, 1, 25, 10, 4, 0) },
	  1,
	  { 5, 0, 15, 0, 0, 0, 0, 0 },
	  10,
	  0,
	  1 },
	{ "an end before the creation",
	  S(10),
	  S(5),
	  1,
	  { { 0 } },
	  0,
	  { 0, 0, 0, 0, 0, 0, 0, 0 },
	  -1,
	  0,
	  0 },
	{ "a preempted job waiting in the queue",
	  S(0),
	  S(70),
	  0,
	  { ATT(0, 40, DB_ATTEMPT_PREEMPTED, 2, 1, 38, 38, 2, 0) },
	  1,
	  { 0, 2, 36, 0, 0, 0, 2 + 30, 0 },
	  38,
	  0,
	  1 },
	{ "a failed attempt, the next not started yet",
	  S(0),
	  S(70),
	  0,
	  { ATT(0, 40, 0, 2, 1, 38, 38, 2, 0) },
	  1,
	  { 0, 2, 36, 0, 0, 2 + 30, 0, 0 },
	  38,
	  0,
	  1 },
	{ "a running job queued, never started",
	  S(0),
	  S(10),
	  0,
	  { { 0 } },
	  0,
	  { 10, 0, 0, 0, 0, 0, 0, 0 },
	  -1,
	  0,
	  0 },
};

static void test_split_table(void **state)
{
	size_t i, c;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct split_case *k = &cases[i];
		struct ctrl_goodput g;
		int64_t sum = 0;

		ctrl_goodput_split(k->created, k->end, k->ended, k->a, k->n,
				   &g);
		for (c = 0; c < CTRL_GOODPUT_N; c++) {
			if (g.ms[c] != S(k->want[c]))
				fail_msg("%s: %s is %lld ms, want %lld",
					 k->what, ctrl_goodput_names[c],
					 (long long)g.ms[c],
					 (long long)S(k->want[c]));
			sum += g.ms[c];
		}
		if (sum != g.wall_ms)
			fail_msg("%s: the categories add up to %lld ms, the "
				 "wall time is %lld",
				 k->what, (long long)sum, (long long)g.wall_ms);
		if (g.step != k->step || g.steps_redone != k->steps_redone ||
		    g.reporting != k->reporting || g.attempts != (int)k->n)
			fail_msg("%s: step %lld redone %lld reporting %d "
				 "attempts %d",
				 k->what, (long long)g.step,
				 (long long)g.steps_redone, g.reporting,
				 g.attempts);
	}
}

struct line_case {
	const char *text;
	int found;
	int64_t step, ckpt_ms;
};

static const struct line_case lines[] = {
	{ "trainctl_step=12", CTRL_GOODPUT_STEP, 12, 0 },
	{ "epoch 1 trainctl_step=7 loss=1.5", CTRL_GOODPUT_STEP, 7, 0 },
	{ "mytrainctl_step=5", 0, 0, 0 },
	{ "x mytrainctl_step=5 trainctl_step=6", CTRL_GOODPUT_STEP, 6, 0 },
	{ "trainctl_step=", 0, 0, 0 },
	{ "trainctl_step=12345678901", 0, 0, 0 },
	{ "#metric loss=0.5 step=10", CTRL_GOODPUT_STEP, 10, 0 },
	{ "[1,0]<stdout>:#metric loss=0.5 step=10", CTRL_GOODPUT_STEP, 10, 0 },
	{ "#metric trainctl_checkpoint_seconds=1.25 step=20", CTRL_GOODPUT_CKPT,
	  20, 1250 },
	{ "#metric trainctl_checkpoint_seconds=-1 step=20", 0, 0, 0 },
	{ "#metric trainctl_checkpoint_seconds=x step=20", 0, 0, 0 },
	{ "#metric loss=0.5", 0, 0, 0 },
	{ "step=10 loss=0.5", 0, 0, 0 },
	{ "", 0, 0, 0 },
};

static void test_lines(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int64_t step = 0, ckpt = 0;
		int found = ctrl_goodput_line(lines[i].text, &step, &ckpt);

		if (found != lines[i].found ||
		    (found && step != lines[i].step) ||
		    ckpt != lines[i].ckpt_ms)
			fail_msg("'%s': found %d step %lld ckpt %lld",
				 lines[i].text, found, (long long)step,
				 (long long)ckpt);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_table),
		cmocka_unit_test(test_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
