/* Tests for controller/placement.c: the message of a job that waits for
 * hosts, and what it says holds them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/placement.h"
#include "common/buf.h"
#include "common/xalloc.h"

static struct ctrl_host *host(struct ctrl_ctx *ctx, const char *name,
			      const char *type)
{
	struct ctrl_host *h = ctrl_hosts_add(ctx, name, "token");

	h->registered = 1;
	h->instance_type = type ? xstrdup(type) : NULL;
	return h;
}

static void test_message(void **state)
{
	struct buf b = BUF_INIT;
	struct ctrl_wait_holders w = { 0 };

	(void)state;
	ctrl_wait_message(&b, 2, "ml.m5.large", 0);
	assert_string_equal(b.data, "Waiting for 2 free hosts of type "
				    "ml.m5.large (0 free now)");
	buf_reset(&b);
	ctrl_wait_message_why(&b, 1, "ml.p3.2xlarge", 0, &w);
	assert_string_equal(b.data, "Waiting for 1 free host of type "
				    "ml.p3.2xlarge (0 free now); no host "
				    "serves this type");
	buf_release(&b);
}

static void test_holders(void **state)
{
	struct ctrl_ctx ctx;
	struct ctrl_wait_holders w;
	struct buf b = BUF_INIT;
	struct ctrl_host *h;

	(void)state;
	ctrl_ctx_init(&ctx);
	pthread_mutex_lock(&ctx.hosts_lock);
	host(&ctx, "busy1", "ml.m5.large")->busy = 1;
	host(&ctx, "busy2", "ml.m5.large")->busy = 1;
	h = host(&ctx, "warm", "ml.m5.large");
	h->busy = h->warm = 1;
	h = host(&ctx, "drained", "ml.m5.large");
	h->drained = 1;
	h->drain_reason = xstrdup("maintenance");
	h = host(&ctx, "quarantined", "ml.m5.large");
	h->drained = 1;
	h->drain_reason = xstrdup("quarantined: 3 jobs failed on this host");
	host(&ctx, "lost", "ml.m5.large")->lost = 1;
	host(&ctx, "free", "ml.m5.large");
	host(&ctx, "other", "ml.c5.xlarge")->busy = 1;
	ctrl_wait_holders_count(&ctx, "ml.m5.large", &w);
	pthread_mutex_unlock(&ctx.hosts_lock);
	assert_int_equal(w.hosts, 7);
	ctrl_wait_message_why(&b, 2, "ml.m5.large", 1, &w);
	assert_string_equal(b.data,
			    "Waiting for 2 free hosts of type ml.m5.large (1 "
			    "free now); hosts held: 2 by other jobs, 1 by a "
			    "warm pool, 1 drained, 1 quarantined, 1 not "
			    "responding");
	buf_release(&b);
	ctrl_ctx_release(&ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_message),
		cmocka_unit_test(test_holders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
