/* Tests api/json_util.c: the end of a builder, api__json_finish(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>

#include "api/json_util.h"
#include "common/err.h"

static void test_finish(void **state)
{
	struct buf out = BUF_INIT;
	json_t *root = json_object();

	(void)state;
	json_object_set_new(root, "a", json_integer(1));
	json_object_set_new(root, "b", json_null());
	assert_int_equal(api__json_finish(root, 0, &out), 0);
	assert_string_equal(out.data, "{\"a\":1,\"b\":null}");
	buf_release(&out);
}

static void test_finish_bad(void **state)
{
	struct buf out = BUF_INIT;

	(void)state;
	assert_int_equal(api__json_finish(json_object(), 1, &out), ERR_INVALID);
	assert_int_equal(out.len, 0);
	buf_release(&out);
}

static void test_finish_too_big(void **state)
{
	struct buf out = BUF_INIT_MAX(4);
	json_t *root = json_object();

	(void)state;
	json_object_set_new(root, "long", json_string("more than four"));
	assert_int_equal(api__json_finish(root, 0, &out), ERR_TOOBIG);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finish),
		cmocka_unit_test(test_finish_bad),
		cmocka_unit_test(test_finish_too_big),
	};

	return cmocka_run_group_tests_name("api/json_util", tests, NULL, NULL);
}
