/*
 * Tests controller/hosts.c's clocks: hosts are found lost in the order of
 * their last heartbeat and only once, and suspended requests are resumed
 * at their deadline or when what they wait for changes, each exactly once,
 * whatever the order they were parked in (the deadline heap).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "common/log.h"

#define N_WAITERS 500

static int resumed_count[N_WAITERS + 1];
static int64_t resumed_at[N_WAITERS + 1];
static int64_t clock_now;

/* The test's own: the waiters' connections are numbers, not sockets. */
void MHD_resume_connection(struct MHD_Connection *connection)
{
	uintptr_t id = (uintptr_t)connection;

	assert_true(id >= 1 && id <= N_WAITERS);
	resumed_count[id]++;
	resumed_at[id] = clock_now;
}

static void ctx_init(struct ctrl_ctx *ctx)
{
	ctrl_ctx_init(ctx);
	ctx->cfg.host_deadline_ms = 3000;
}

static void ctx_release(struct ctrl_ctx *ctx)
{
	ctrl_ctx_release(ctx);
}

static void seen(struct ctrl_ctx *ctx, struct ctrl_host *h, int64_t t)
{
	h->registered = 1;
	h->lost = 0;
	h->last_seen_ms = t;
	ctrl_host_seen(ctx, h);
}

static void test_lost_in_heartbeat_order(void **state)
{
	struct ctrl_ctx ctx;
	struct ctrl_host *h[4];
	int i;

	(void)state;
	ctx_init(&ctx);
	h[0] = ctrl_hosts_add(&ctx, "a", "t");
	h[1] = ctrl_hosts_add(&ctx, "b", "t");
	h[2] = ctrl_hosts_add(&ctx, "c", "t");
	h[3] = ctrl_hosts_add(&ctx, "never", "t");
	seen(&ctx, h[0], 1000);
	seen(&ctx, h[1], 2000);
	seen(&ctx, h[2], 3000);
	/* a heartbeats again: now the newest. */
	seen(&ctx, h[0], 3500);

	assert_int_equal(ctrl_hosts_tick(&ctx, 5000), 0);
	assert_int_equal(ctrl_hosts_tick(&ctx, 5001), 1);
	assert_true(h[1]->lost);
	assert_false(h[0]->lost || h[2]->lost || h[3]->lost);
	/* Lost once: the next tick does not count it again. */
	assert_int_equal(ctrl_hosts_tick(&ctx, 6001), 1);
	assert_true(h[2]->lost);
	assert_int_equal(ctrl_hosts_tick(&ctx, 100000), 1);
	assert_true(h[0]->lost);
	assert_false(h[3]->lost); /* never registered: never lost */
	assert_null(ctx.live_head);
	assert_int_equal(ctrl_hosts_tick(&ctx, 200000), 0);

	/* A lost host that comes back is watched again. */
	seen(&ctx, h[1], 200000);
	assert_int_equal(ctrl_hosts_tick(&ctx, 203000), 0);
	assert_int_equal(ctrl_hosts_tick(&ctx, 203001), 1);
	assert_true(h[1]->lost);

	(void)i;
	ctx_release(&ctx);
}

static void test_many_hosts(void **state)
{
	struct ctrl_ctx ctx;
	struct ctrl_host *hs[1000];
	char name[16];
	int64_t t = 10000;
	int i, total = 0;

	(void)state;
	ctx_init(&ctx);
	srand(7);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "h%04d", i);
		hs[i] = ctrl_hosts_add(&ctx, name, "t");
	}
	for (i = 0; i < 5000; i++)
		seen(&ctx, hs[rand() % 1000], t++);
	for (; t < 20000; t += 7) {
		int n = ctrl_hosts_tick(&ctx, t);
		struct ctrl_host *h;

		total += n;
		/* Whatever is still on the list is within the deadline. */
		for (h = ctx.live_head; h; h = h->live_next)
			assert_true(t - h->last_seen_ms <= 3000);
	}
	for (i = 0; i < 1000; i++)
		if (hs[i]->registered)
			assert_true(hs[i]->lost);
	for (i = 0; i < 1000; i++)
		total -= hs[i]->registered;
	assert_int_equal(total, 0);
	ctx_release(&ctx);
}

static void check_heap(const struct ctrl_ctx *ctx)
{
	size_t i;

	for (i = 0; i < ctx->n_timers; i++) {
		assert_int_equal(ctx->timers[i]->heap_at, i);
		if (i)
			assert_true(ctx->timers[(i - 1) / 2]->deadline_ms <=
				    ctx->timers[i]->deadline_ms);
	}
}

static void test_waiters(void **state)
{
	static int flags[N_WAITERS + 1];
	static int64_t deadline[N_WAITERS + 1];
	struct ctrl_ctx ctx;
	struct ctrl_host *h;
	uintptr_t id;

	(void)state;
	ctx_init(&ctx);
	memset(resumed_count, 0, sizeof(resumed_count));
	h = ctrl_hosts_add(&ctx, "a", "t");
	srand(11);
	for (id = 1; id <= N_WAITERS; id++) {
		struct ctrl_waiter **list = id % 3 == 0 ? &ctx.job_waiters :
					    id % 3 == 1 ? &ctx.log_waiters :
							  &h->waiters;

		deadline[id] = 1000 + rand() % 10000;
		ctrl_waiter_add(&ctx, list, (struct MHD_Connection *)id,
				&flags[id], deadline[id]);
		check_heap(&ctx);
	}
	assert_int_equal(ctx.n_timers, N_WAITERS);

	/* The jobs changed at t=5000, before any tick: every job waiter
	 * goes at once. */
	clock_now = 5000;
	pthread_mutex_lock(&ctx.hosts_lock);
	ctrl_waiters_resume(&ctx, &ctx.job_waiters);
	pthread_mutex_unlock(&ctx.hosts_lock);
	check_heap(&ctx);
	assert_null(ctx.job_waiters);

	/* The rest at their deadlines. */
	for (clock_now = 0; clock_now <= 12000; clock_now += 50) {
		ctrl_hosts_tick(&ctx, clock_now);
		check_heap(&ctx);
	}
	for (id = 1; id <= N_WAITERS; id++) {
		assert_int_equal(resumed_count[id], 1);
		assert_int_equal(flags[id], 1);
		if (id % 3 == 0)
			assert_int_equal(resumed_at[id], 5000);
		else
			assert_true(resumed_at[id] >= deadline[id] &&
				    resumed_at[id] < deadline[id] + 50);
	}
	assert_int_equal(ctx.n_timers, 0);
	assert_null(h->waiters);
	assert_null(ctx.log_waiters);
	ctx_release(&ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lost_in_heartbeat_order),
		cmocka_unit_test(test_many_hosts),
		cmocka_unit_test(test_waiters),
	};

	log_set_level(LOG_ERROR); /* a thousand hosts are lost below */
	return cmocka_run_group_tests_name("controller/hosts", tests, NULL,
					   NULL);
}
