/*
 * Tests controller/sched/view.c and api/queues_json.c: the queues view of
 * a decision (guarantee, in use, borrowed and lent per share; running,
 * starting and waiting jobs in order; users), what a user key may see of
 * it, the series kept from view to view (sampled once an interval, at
 * most CTRL_SCHED_VIEW_SAMPLES, idle shares kept for the window), and the
 * table trainctl queue prints.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/queues_json.h"
#include "controller/caller.h"
#include "controller/sched/decide.h"
#include "controller/sched/view.h"
#include "common/buf.h"
#include "common/err.h"

#define T "ml.c5.xlarge"

static const struct ctrl_sched_cap cap1[] = { { T, 1 } };
static const struct ctrl_sched_cap cap2[] = { { T, 2 } };

/*
 * Queue teams (priority 5): vision (guarantee 1, LEND_AND_BORROW), nlp
 * (1, LEND), keep (2, RESERVE); the default queue: share bob (fair).
 */
static struct ctrl_sched_share shares[] = {
	{ .name = "vision",
	  .queue = "teams",
	  .queue_priority = 5,
	  .quota = 1,
	  .caps = cap1,
	  .n_caps = 1,
	  .sharing = CTRL_SCHED_LEND_AND_BORROW,
	  .borrow_limit_pct = -1,
	  .fair_group = -1 },
	{ .name = "nlp",
	  .queue = "teams",
	  .queue_priority = 5,
	  .quota = 1,
	  .caps = cap1,
	  .n_caps = 1,
	  .sharing = CTRL_SCHED_LEND,
	  .fair_group = -1 },
	{ .name = "keep",
	  .queue = "teams",
	  .queue_priority = 5,
	  .quota = 1,
	  .caps = cap2,
	  .n_caps = 1,
	  .sharing = CTRL_SCHED_RESERVE,
	  .fair_group = -1 },
	{ .name = "bob",
	  .queue = NULL,
	  .fair_group = 0,
	  .weight = 1,
	  .usage = 12.5,
	  .best_effort = 1 },
};

static const size_t hosts01[] = { 0, 1 };

static struct ctrl_sched_running running[] = {
	{ .id = 1, .share = 0, .type = T, .count = 2, .hosts = hosts01 },
};

static struct ctrl_sched_queued queued[] = {
	{ .id = 2, .share = 1, .type = T, .count = 2, .seq = 2 },
	{ .id = 3, .share = 1, .type = T, .count = 2, .seq = 3 },
	{ .id = 4, .share = 3, .type = T, .count = 1, .seq = 4 },
	{ .id = 5, .share = 3, .type = T, .count = 1, .seq = 5 },
};

static const struct ctrl_sched_view_job run_jobs[] = {
	{ "big", "ops", 0 },
};

/* 4 started by the decision; 5 too, but its environment was full. */
static const struct ctrl_sched_view_job q_jobs[] = {
	{ "nlp-b", "bob", 0 },
	{ "nlp-a", "alice", 0 },
	{ "fs-1", "bob", 1 },
	{ "fs-2", "bob", 0 },
};

static char why_b[] = "2nd in queue teams; waiting";
static char why_a[] = "1st in queue teams; waiting";
static char *why[] = { why_b, why_a, NULL, NULL };
static size_t position[] = { 2, 1, 0, 0 };

static void make_in(struct ctrl_sched_in *in, struct ctrl_sched_out *out,
		    int64_t now)
{
	memset(in, 0, sizeof(*in));
	memset(out, 0, sizeof(*out));
	in->shares = shares;
	in->n_shares = 4;
	in->running = running;
	in->n_running = 1;
	in->queued = queued;
	in->n_queued = 4;
	in->now_ms = now;
	out->why = why;
	out->position = position;
}

static struct ctrl_sched_view *build(int64_t now,
				     const struct ctrl_sched_view *prev)
{
	struct ctrl_sched_in in;
	struct ctrl_sched_out out;

	make_in(&in, &out, now);
	return ctrl_sched_view_build(&in, &out, q_jobs, run_jobs, prev, 1000);
}

static const struct api_queue_share *share(const struct api_queues *a,
					   const char *queue, const char *name)
{
	size_t i, k;

	for (i = 0; i < a->n; i++)
		for (k = 0; k < a->queues[i].n_shares; k++)
			if (!strcmp(a->queues[i].name, queue) &&
			    a->queues[i].shares[k].name &&
			    !strcmp(a->queues[i].shares[k].name, name))
				return &a->queues[i].shares[k];
	fail_msg("no share %s of %s", name, queue);
	return NULL;
}

static void test_counts(void **state)
{
	struct ctrl_sched_view *v = build(10000, NULL);
	struct api_queues a;
	const struct api_queue_share *s;

	(void)state;
	assert_int_equal(
		ctrl_sched_view_answer(v, &ctrl_caller_admin, NULL, &a), 0);
	/* teams first: the higher priority. */
	assert_int_equal(a.n, 2);
	assert_string_equal(a.queues[0].name, "teams");
	assert_string_equal(a.queues[0].policy, "QUOTA_SHARE");
	assert_string_equal(a.queues[1].name, "default");
	assert_string_equal(a.queues[1].policy, "FAIRSHARE");
	assert_int_equal(a.sampled_ms, 10000);
	s = share(&a, "teams", "vision");
	assert_int_equal(s->total.guarantee, 1);
	assert_int_equal(s->total.in_use, 2);
	assert_int_equal(s->total.borrowed, 1);
	assert_int_equal(s->total.lent, 0);
	assert_int_equal(s->running, 1);
	assert_string_equal(s->strategy, "LEND_AND_BORROW");
	assert_string_equal(s->jobs[0].state, "running");
	/* nlp lends its idle host to vision; keep (RESERVE) lends nothing. */
	s = share(&a, "teams", "nlp");
	assert_int_equal(s->total.lent, 1);
	assert_int_equal(s->waiting, 2);
	assert_int_equal(s->n_jobs, 2);
	assert_string_equal(s->jobs[0].name, "nlp-a");
	assert_int_equal(s->jobs[0].position, 1);
	assert_string_equal(s->jobs[0].reason, "1st in queue teams; waiting");
	assert_string_equal(s->jobs[1].name, "nlp-b");
	assert_int_equal(s->n_users, 2);
	s = share(&a, "teams", "keep");
	assert_int_equal(s->total.guarantee, 2);
	assert_int_equal(s->total.lent, 0);
	assert_int_equal(s->n_jobs, 0);
	/* bob's: one job starts, one waits for its environment. */
	s = share(&a, "default", "bob");
	assert_string_equal(s->kind, "fairshare");
	assert_int_equal(s->total.guarantee, -1);
	assert_int_equal(s->total.in_use, 1);
	assert_int_equal(s->running, 1);
	assert_int_equal(s->waiting, 1);
	assert_string_equal(s->jobs[0].state, "starting");
	assert_string_equal(s->jobs[1].state, "waiting");
	assert_non_null(strstr(s->jobs[1].reason, "service environment"));
	assert_true(s->usage > 12 && s->usage < 13);
	assert_int_equal(s->n_series, 1);
	assert_int_equal(s->series[0].in_use, 1);
	ctrl_sched_view_answer_release(&a);
	ctrl_sched_view_free(v);
}

static void test_viewer(void **state)
{
	struct ctrl_sched_view *v = build(10000, NULL);
	struct ctrl_caller alice = { NULL, "alice", "alice", 0 };
	struct api_queues a;
	const struct api_queue_share *s;

	(void)state;
	assert_int_equal(ctrl_sched_view_answer(v, &alice, "teams", &a), 0);
	assert_int_equal(a.n, 1);
	s = share(&a, "teams", "nlp");
	assert_string_equal(s->jobs[0].name, "nlp-a");
	assert_string_equal(s->jobs[0].user, "alice");
	assert_null(s->jobs[1].name);
	assert_null(s->jobs[1].user);
	assert_int_equal(s->jobs[1].position, 2);
	assert_non_null(s->jobs[1].reason);
	/* Her own row, then the others' in one row without a user. */
	assert_int_equal(s->n_users, 2);
	assert_null(s->users[0].user);
	assert_int_equal(s->users[0].waiting, 1);
	assert_string_equal(s->users[1].user, "alice");
	s = share(&a, "teams", "vision");
	assert_null(s->jobs[0].name);
	assert_int_equal(s->total.in_use, 2);
	ctrl_sched_view_answer_release(&a);
	/* bob's share of the default queue has no name for her. */
	assert_int_equal(ctrl_sched_view_answer(v, &alice, "default", &a), 0);
	assert_null(a.queues[0].shares[0].name);
	assert_int_equal(a.queues[0].shares[0].waiting, 1);
	ctrl_sched_view_answer_release(&a);
	assert_int_equal(ctrl_sched_view_answer(v, &alice, "nosuch", &a),
			 ERR_NOTFOUND);
	ctrl_sched_view_free(v);
}

static void test_series(void **state)
{
	struct ctrl_sched_view *v = build(0, NULL), *w;
	struct ctrl_sched_in in;
	struct ctrl_sched_out out;
	struct api_queues a;
	int64_t t;

	(void)state;
	/* Passes every 250 ms, a sample a second, at most the maximum. */
	for (t = 250; t <= 1000 * (CTRL_SCHED_VIEW_SAMPLES + 20); t += 250) {
		w = build(t, v);
		ctrl_sched_view_free(v);
		v = w;
	}
	assert_int_equal(
		ctrl_sched_view_answer(v, &ctrl_caller_admin, NULL, &a), 0);
	assert_int_equal(share(&a, "teams", "vision")->n_series,
			 CTRL_SCHED_VIEW_SAMPLES);
	assert_int_equal(share(&a, "teams", "vision")->series[1].t_ms -
				 share(&a, "teams", "vision")->series[0].t_ms,
			 1000);
	ctrl_sched_view_answer_release(&a);
	/* No job at all: the shares stay, idle, for the window. */
	make_in(&in, &out, t + 1000);
	in.n_running = in.n_queued = in.n_shares = 0;
	w = ctrl_sched_view_build(&in, &out, NULL, NULL, v, 1000);
	ctrl_sched_view_free(v);
	v = w;
	assert_int_equal(
		ctrl_sched_view_answer(v, &ctrl_caller_admin, "teams", &a), 0);
	assert_int_equal(share(&a, "teams", "nlp")->total.guarantee, 1);
	assert_int_equal(share(&a, "teams", "vision")->total.in_use, 0);
	assert_int_equal(share(&a, "teams", "vision")
				 ->series[CTRL_SCHED_VIEW_SAMPLES - 1]
				 .in_use,
			 0);
	ctrl_sched_view_answer_release(&a);
	in.now_ms = t + 1000 * (CTRL_SCHED_VIEW_SAMPLES + 1);
	w = ctrl_sched_view_build(&in, &out, NULL, NULL, v, 1000);
	ctrl_sched_view_free(v);
	assert_int_equal(
		ctrl_sched_view_answer(w, &ctrl_caller_admin, NULL, &a), 0);
	assert_int_equal(a.n, 0);
	ctrl_sched_view_answer_release(&a);
	ctrl_sched_view_free(w);
}

static void test_table(void **state)
{
	struct ctrl_sched_view *v = build(10000, NULL);
	struct ctrl_caller alice = { NULL, "alice", "alice", 0 };
	struct api_queues a;
	struct buf json = BUF_INIT, text = BUF_INIT, err = BUF_INIT;

	(void)state;
	assert_int_equal(ctrl_sched_view_answer(v, &alice, NULL, &a), 0);
	assert_int_equal(api_queues_build(&a, &json), 0);
	assert_non_null(strstr(json.data, "\"guarantee\":null"));
	assert_int_equal(api_queues_table(json.data, json.len, &text, &err), 0);
	assert_non_null(strstr(text.data, "QUEUE teams  priority 5  policy "
					  "QUOTA_SHARE\n"));
	assert_non_null(strstr(text.data,
			       "vision           quota             "
			       "1      2        1    0       1       "
			       "0\n"));
	assert_non_null(strstr(text.data,
			       "nlp              quota             "
			       "1      0        0    1       0       "
			       "2\n"));
	assert_non_null(strstr(text.data, "(another user)   fairshare         "
					  "-      1"));
	assert_non_null(strstr(text.data, "nlp-a "));
	assert_non_null(strstr(text.data, "  1st in queue teams; waiting\n"));
	assert_non_null(strstr(text.data, "(another user's) "));
	assert_null(strstr(text.data, "nlp-b"));
	assert_null(strstr(text.data, "big"));
	ctrl_sched_view_answer_release(&a);
	buf_reset(&text);
	assert_int_equal(api_queues_table("{\"queues\": 3}", 13, &text, &err),
			 ERR_INVALID);
	buf_release(&json);
	buf_release(&text);
	buf_release(&err);
	ctrl_sched_view_free(v);
}

/* A long queue: all counted, the first CTRL_SCHED_VIEW_JOBS_MAX listed
 * by their place, whatever the input's order. */
static void test_many(void **state)
{
	enum { N = CTRL_SCHED_VIEW_JOBS_MAX + 50 };
	static struct ctrl_sched_queued many[N];
	static struct ctrl_sched_view_job names[N];
	static char *reasons[N];
	static size_t places[N];
	static char text[N][32];
	struct ctrl_sched_in in;
	struct ctrl_sched_out out;
	struct ctrl_sched_view *v;
	struct api_queues a;
	const struct api_queue_share *s;
	size_t i;

	(void)state;
	for (i = 0; i < N; i++) {
		many[i] = queued[0];
		many[i].seq = (int64_t)i;
		snprintf(text[i], sizeof(text[i]), "job-%zu", i);
		names[i].name = text[i];
		names[i].owner = "alice";
		places[i] = N - i; /* the last submitted goes first */
		reasons[i] = why_a;
	}
	make_in(&in, &out, 1000);
	in.queued = many;
	in.n_queued = N;
	out.why = reasons;
	out.position = places;
	v = ctrl_sched_view_build(&in, &out, names, run_jobs, NULL, 1000);
	assert_int_equal(
		ctrl_sched_view_answer(v, &ctrl_caller_admin, "teams", &a), 0);
	s = share(&a, "teams", "nlp");
	assert_int_equal(s->waiting, N);
	assert_int_equal(s->n_jobs, CTRL_SCHED_VIEW_JOBS_MAX);
	assert_int_equal(s->jobs[0].position, 1);
	assert_string_equal(s->jobs[0].name, text[N - 1]);
	assert_int_equal(s->jobs[CTRL_SCHED_VIEW_JOBS_MAX - 1].position,
			 CTRL_SCHED_VIEW_JOBS_MAX);
	assert_int_equal(s->users[0].waiting, N);
	ctrl_sched_view_answer_release(&a);
	ctrl_sched_view_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts), cmocka_unit_test(test_viewer),
		cmocka_unit_test(test_series), cmocka_unit_test(test_table),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
