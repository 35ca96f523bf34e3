/*
 * Tests api/reason.c: which FailureReason texts are of the
 * InternalServerError category.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "api/reason.h"

static void test_is_internal(void **state)
{
	(void)state;
	assert_true(api_reason_is_internal("InternalServerError: host h2 "
					   "(algo-2) stopped responding"));
	assert_true(api_reason_is_internal("InternalServerError"));
	assert_false(api_reason_is_internal(NULL));
	assert_false(api_reason_is_internal(""));
	assert_false(api_reason_is_internal("InternalServer"));
	assert_false(api_reason_is_internal("AlgorithmError: exit 1"));
	assert_false(
		api_reason_is_internal("ClientError: InternalServerError"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_internal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
