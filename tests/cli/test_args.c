/*
 * Tests cli/args.c, the argument helpers of trainctl. The CLI is not a
 * library, so the file under test is compiled into this program.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/args.c"

static void test_parse_int(void **state)
{
	int64_t v = -7;

	(void)state;
	assert_int_equal(cli_parse_int("42", 1, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(cli_parse_int("1", 1, 100, &v), 0);
	assert_int_equal(cli_parse_int("100", 1, 100, &v), 0);
	assert_int_equal(v, 100);
	v = -7;
	assert_int_equal(cli_parse_int("0", 1, 100, &v), ERR_INVALID);
	assert_int_equal(cli_parse_int("101", 1, 100, &v), ERR_INVALID);
	assert_int_equal(cli_parse_int("", 1, 100, &v), ERR_INVALID);
	assert_int_equal(cli_parse_int("12x", 1, 100, &v), ERR_INVALID);
	assert_int_equal(cli_parse_int("x", 1, 100, &v), ERR_INVALID);
	assert_int_equal(cli_parse_int("-3", 1, 100, &v), ERR_INVALID);
	assert_int_equal(cli_parse_int("99999999999999999999", 1, INT64_MAX,
				       &v),
			 ERR_INVALID);
	assert_int_equal(cli_parse_int(NULL, 1, 100, &v), ERR_INVALID);
	assert_int_equal(v, -7);
}

static void test_parse_seconds(void **state)
{
	int64_t ms = -1;

	(void)state;
	assert_int_equal(cli_parse_seconds("30", &ms), 0);
	assert_int_equal(ms, 30000);
	assert_int_equal(cli_parse_seconds("0.25", &ms), 0);
	assert_int_equal(ms, 250);
	assert_int_equal(cli_parse_seconds("0", &ms), 0);
	assert_int_equal(ms, 0);
	ms = -1;
	assert_int_equal(cli_parse_seconds("-1", &ms), ERR_INVALID);
	assert_int_equal(cli_parse_seconds("1s", &ms), ERR_INVALID);
	assert_int_equal(cli_parse_seconds("", &ms), ERR_INVALID);
	assert_int_equal(cli_parse_seconds("nan", &ms), ERR_INVALID);
	assert_int_equal(cli_parse_seconds("inf", &ms), ERR_INVALID);
	assert_int_equal(cli_parse_seconds("1e12", &ms), ERR_INVALID);
	assert_int_equal(ms, -1);
}

static void test_strv(void **state)
{
	struct cli_strv sv = CLI_STRV_INIT;
	int i;

	(void)state;
	for (i = 0; i < 20; i++)
		cli_strv_push(&sv, i % 2 ? "odd" : "even");
	assert_int_equal(sv.n, 20);
	assert_string_equal(sv.v[0], "even");
	assert_string_equal(sv.v[19], "odd");
	cli_strv_release(&sv);
	assert_null(sv.v);
	assert_int_equal(sv.n, 0);
}

static void test_read_input(void **state)
{
	char path[] = "/tmp/test_args_XXXXXX";
	struct buf uri = BUF_INIT, out = BUF_INIT_MAX(CLI_MAX_INPUT);
	struct buf err = BUF_INIT;
	const char doc[] = "{\"TrainingJobName\": \"x\"}\n";
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
	close(fd);

	assert_int_equal(buf_addf(&uri, "file://%s", path), 0);
	assert_int_equal(cli_read_input(uri.data, &out, &err), 0);
	assert_string_equal(out.data, doc);

	buf_reset(&out);
	assert_int_equal(cli_read_input(path, &out, &err), 0);
	assert_string_equal(out.data, doc);

	buf_reset(&out);
	assert_int_equal(cli_read_input("  {\"a\":1}", &out, &err), 0);
	assert_string_equal(out.data, "  {\"a\":1}");

	buf_reset(&out);
	assert_int_equal(cli_read_input("file:///nonexistent/job.json", &out,
					&err),
			 ERR_IO);
	assert_non_null(
		strstr(err.data, "cannot open '/nonexistent/job.json'"));

	/* A file over the cap is refused, not truncated. */
	out.max = 4;
	buf_reset(&out);
	assert_int_equal(cli_read_input(path, &out, &err), ERR_TOOBIG);
	unlink(path);
	buf_release(&uri);
	buf_release(&out);
	buf_release(&err);
}

static void test_time(void **state)
{
	char t[40];

	(void)state;
	assert_string_equal(cli_time(0, t, sizeof(t)), "-");
	assert_string_equal(cli_time(1700000000250LL, t, sizeof(t)),
			    "2023-11-14T22:13:20.250Z");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_int),
		cmocka_unit_test(test_parse_seconds),
		cmocka_unit_test(test_strv),
		cmocka_unit_test(test_read_input),
		cmocka_unit_test(test_time),
	};

	return cmocka_run_group_tests_name("cli/args", tests, NULL, NULL);
}
