/*
 * Tests the host lease's arithmetic (docs/distributed.md, "Fencing"): the
 * margin M = D/10 within [50, 500] ms, the lease ending M before the
 * controller's deadline D counted from the send time of the last request
 * that renewed it, what renews it (a refused connection or any HTTP
 * answer does, a timeout does not, nor does a request sent before the
 * base), and the host fencing itself once it runs out, once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/http.h"
#include "agent/lease.h"
#include "agent/session.h"

static void test_margin(void **state)
{
	static const int64_t cases[][2] = {
		{ 0, 50 },     { 200, 50 },   { 499, 50 },    { 500, 50 },
		{ 510, 51 },   { 1000, 100 }, { 3000, 300 },  { 4999, 499 },
		{ 5000, 500 }, { 5010, 500 }, { 60000, 500 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(agent_lease_margin_ms(cases[i][0]),
				 cases[i][1]);
}

static struct agent_ctx *new_ctx(int64_t deadline_ms)
{
	struct agent_ctx *ctx = calloc(1, sizeof(*ctx));

	assert_non_null(ctx);
	agent_session_init(ctx);
	ctx->sess.deadline_ms = deadline_ms;
	return ctx;
}

static void free_ctx(struct agent_ctx *ctx)
{
	agent_session_release(ctx);
	free(ctx);
}

/* The default deadline 3000 ms (margin 300) and both clamps. */
static void test_lease_end(void **state)
{
	static const int64_t deadlines[] = { 200, 1000, 3000, 20000 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(deadlines) / sizeof(deadlines[0]); i++) {
		struct agent_ctx *ctx = new_ctx(deadlines[i]);

		ctx->sess.lease_base = 1000000;
		assert_int_equal(agent_session_lease_end(ctx),
				 1000000 + deadlines[i] -
					 agent_lease_margin_ms(deadlines[i]));
		free_ctx(ctx);
	}
}

static void lost(struct agent_ctx *ctx, int64_t sent, long status, int err)
{
	struct agent_req req;

	memset(&req, 0, sizeof(req));
	req.sent_ms = sent;
	req.status = status;
	req.os_errno = err;
	agent_session_lost(ctx, "test", &req);
}

static void test_renewals(void **state)
{
	struct agent_ctx *ctx = new_ctx(3000);
	int64_t base;

	(void)state;
	ctx->sess.lease_base = base = 1000000;
	/* A timeout or an unreachable network: no sign of the machine. */
	lost(ctx, base + 500, 0, ETIMEDOUT);
	lost(ctx, base + 600, 0, ENETUNREACH);
	assert_int_equal(ctx->sess.lease_base, base);
	/* Refused: the machine is there, only trainctld is not. */
	lost(ctx, base + 700, 0, ECONNREFUSED);
	assert_int_equal(ctx->sess.lease_base, base + 700);
	/* Any HTTP answer, an error too. */
	lost(ctx, base + 900, 503, 0);
	assert_int_equal(ctx->sess.lease_base, base + 900);
	/* The lease runs from the send time: an older request's late
	 * answer does not move it back. */
	lost(ctx, base + 800, 0, ECONNREFUSED);
	assert_int_equal(ctx->sess.lease_base, base + 900);
	assert_int_equal(agent_session_lease_end(ctx), base + 900 + 2700);
	free_ctx(ctx);
}

static void test_fences_once(void **state)
{
	struct agent_ctx *ctx = new_ctx(1000);
	int64_t end;

	(void)state;
	ctx->sess.lease_base = 5000000;
	end = agent_session_lease_end(ctx);
	assert_int_equal(end, 5000000 + 900);
	agent_session_check_lease(ctx, end - 1);
	assert_int_equal(ctx->sess.fenced, 0);
	agent_session_check_lease(ctx, end);
	assert_int_equal(ctx->sess.fenced, 1);
	/* Fenced stays fenced until the controller answers again. */
	agent_session_check_lease(ctx, end + 10000);
	assert_int_equal(ctx->sess.fenced, 1);
	free_ctx(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_margin),
		cmocka_unit_test(test_lease_end),
		cmocka_unit_test(test_renewals),
		cmocka_unit_test(test_fences_once),
	};

	return cmocka_run_group_tests_name("agent_lease", tests, NULL, NULL);
}
