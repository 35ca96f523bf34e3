/*
 * Tests api/goodput.c: Describe's TrainctlGoodput member written and
 * read back (categories in order), a body without it, and one where it
 * is not an object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/goodput.h"
#include "common/buf.h"
#include "common/err.h"

static void test_roundtrip(void **state)
{
	char *names[] = { (char *)"Queued", (char *)"Productive",
			  (char *)"Redone" };
	double secs[] = { 1.5, 80.25, 8.25 };
	struct api_goodput g = { 0 }, back;
	struct buf out = BUF_INIT, err = BUF_INIT;

	(void)state;
	g.n = 3;
	g.names = names;
	g.seconds = secs;
	g.wall_s = 90;
	g.ratio = 80.25 / 90;
	g.step = 1200;
	g.steps_redone = 40;
	g.attempts = 2;
	g.reporting = 2;
	assert_int_equal(api_goodput_json(&g, &out), 0);
	assert_non_null(strstr(out.data, "{\"TrainctlGoodput\":{"));
	assert_int_equal(api_goodput_parse(out.data, out.len, &back, &err), 0);
	assert_int_equal(back.n, 3);
	assert_string_equal(back.names[0], "Queued");
	assert_string_equal(back.names[1], "Productive");
	assert_string_equal(back.names[2], "Redone");
	assert_true(back.seconds[1] == 80.25);
	assert_true(back.wall_s == 90);
	assert_true(back.ratio > 0.89 && back.ratio < 0.90);
	assert_int_equal(back.step, 1200);
	assert_int_equal(back.steps_redone, 40);
	assert_int_equal(back.attempts, 2);
	assert_int_equal(back.reporting, 2);
	api_goodput_release(&back);
	buf_release(&out);
	buf_release(&err);
}

static void test_absent_or_bad(void **state)
{
	static const char none[] = "{\"TrainingJobName\": \"a\"}";
	static const char bad[] = "{\"TrainctlGoodput\": 3}";
	static const char bad_times[] =
		"{\"TrainctlGoodput\": {\"TimeInSeconds\": []}}";
	struct api_goodput g;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(api_goodput_parse(none, strlen(none), &g, &err),
			 ERR_NOTFOUND);
	assert_int_equal(api_goodput_parse(bad, strlen(bad), &g, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "TrainctlGoodput"));
	buf_reset(&err);
	assert_int_equal(api_goodput_parse(bad_times, strlen(bad_times), &g,
					   &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "TimeInSeconds"));
	buf_reset(&err);
	assert_int_equal(api_goodput_parse("{", 1, &g, &err), ERR_INVALID);
	assert_int_equal(g.n, 0);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_absent_or_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
