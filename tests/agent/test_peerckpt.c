/*
 * Tests agent/peerckpt.c's pure parts: the paths the server of checkpoint
 * copies accepts (nothing outside a job's copy folders: no "..", no
 * slashes in names, no folder that is not a copy) and the order in which
 * a host asks the others (the next host first, itself never).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "agent/peerckpt.h"
#include "common/err.h"

static void test_paths(void **state)
{
	struct agent_peerckpt_path p;
	const char *bad[] = {
		"/checkpoints/",
		"/checkpoints",
		"/checkpoint/u1",
		"/checkpoints/u1/",
		"/checkpoints/../etc",
		"/checkpoints/u.1",
		"/checkpoints/u1/..",
		"/checkpoints/u1/step-0000000010.rank-0",
		"/checkpoints/u1/step-0000000010.rank-0.a1/",
		"/checkpoints/u1/step-0000000010.rank-0.a1/..",
		"/checkpoints/u1/step-0000000010.rank-0.a1/a/b",
		"/checkpoints/u1/step-0000000010.rank-0.a1/a b",
		"/checkpoints/u1/notes/x",
	};
	size_t i;

	(void)state;
	assert_int_equal(agent_peerckpt_path("/checkpoints/u-1_x", &p), 0);
	assert_string_equal(p.uid, "u-1_x");
	assert_string_equal(p.folder, "");
	assert_int_equal(
		agent_peerckpt_path("/checkpoints/u1/step-0000000010.rank-2.a3",
				    &p),
		0);
	assert_string_equal(p.folder, "step-0000000010.rank-2.a3");
	assert_string_equal(p.file, "");
	assert_int_equal(agent_peerckpt_path("/checkpoints/u1/step-0000000010."
					     "rank-2.a3/MANIFEST.json",
					     &p),
			 0);
	assert_string_equal(p.file, "MANIFEST.json");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (agent_peerckpt_path(bad[i], &p) != ERR_INVALID)
			fail_msg("accepted '%s'", bad[i]);
}

static void test_order(void **state)
{
	size_t order[4];

	(void)state;
	assert_int_equal(agent_peerckpt_order(0, 1, order), 0);
	assert_int_equal(agent_peerckpt_order(2, 2, order), 0);
	assert_int_equal(agent_peerckpt_order(1, 4, order), 3);
	assert_int_equal(order[0], 2);
	assert_int_equal(order[1], 3);
	assert_int_equal(order[2], 0);
	assert_int_equal(agent_peerckpt_order(2, 3, order), 2);
	assert_int_equal(order[0], 0);
	assert_int_equal(order[1], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
