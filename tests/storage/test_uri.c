/* Tests storage/uri.c: URI parsing, key checks, S3 percent-encoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "storage/storage.h"
#include "common/err.h"

static void test_parse_s3(void **state)
{
	struct stor_uri u;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(stor_uri_parse("s3://my-bucket/a/b.csv", &u, &err), 0);
	assert_int_equal(u.scheme, STOR_SCHEME_S3);
	assert_string_equal(u.bucket, "my-bucket");
	assert_string_equal(u.key, "a/b.csv");
	stor_uri_release(&u);
	assert_int_equal(stor_uri_parse("s3://bkt", &u, &err), 0);
	assert_string_equal(u.key, "");
	stor_uri_release(&u);
	assert_int_equal(stor_uri_parse("s3://bkt/prefix/", &u, &err), 0);
	assert_string_equal(u.key, "prefix/");
	stor_uri_release(&u);
	buf_release(&err);
}

static void test_parse_file(void **state)
{
	struct stor_uri u;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(stor_uri_parse("file:///data/train", &u, &err), 0);
	assert_int_equal(u.scheme, STOR_SCHEME_FILE);
	assert_null(u.bucket);
	assert_string_equal(u.key, "data/train");
	stor_uri_release(&u);
	assert_int_equal(stor_uri_parse("file://relative/x", &u, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "absolute"));
	buf_release(&err);
}

static void test_parse_bad(void **state)
{
	static const char *const bad[] = {
		"http://x/y",
		"s3://",
		"s3://ab/x",
		"s3://Upper/x",
		"s3://b_b_b/x",
		"s3://-bkt/x",
		"s3://bkt/../x",
		"s3://bkt/a/../../x",
		"s3://bkt//x",
		"s3://bkt/a//b",
		"s3://bkt/./a",
		"file:///a/../../etc",
		"s3://bkt/a/.trainctl-tmp.x",
	};
	struct stor_uri u;
	struct buf err = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		assert_int_equal(stor_uri_parse(bad[i], &u, &err), ERR_INVALID);
		assert_true(err.len > 0);
	}
	buf_release(&err);
}

static void test_key_check(void **state)
{
	struct buf err = BUF_INIT;
	char long_key[1100];

	(void)state;
	assert_int_equal(stor_key_check("a/b c/d.txt", 0, &err), 0);
	assert_int_equal(stor_key_check("a/", 1, &err), 0);
	assert_int_equal(stor_key_check("", 1, &err), 0);
	assert_int_equal(stor_key_check("", 0, &err), ERR_INVALID);
	assert_int_equal(stor_key_check("a/", 0, &err), ERR_INVALID);
	assert_int_equal(stor_key_check("/etc/passwd", 0, &err), ERR_INVALID);
	assert_int_equal(stor_key_check("..", 0, &err), ERR_INVALID);
	assert_int_equal(stor_key_check("a/..", 0, &err), ERR_INVALID);
	assert_int_equal(stor_key_check("a\nb", 0, &err), ERR_INVALID);
	assert_int_equal(stor_key_check("a..b/..c", 0, &err), 0);
	memset(long_key, 'k', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	assert_int_equal(stor_key_check(long_key, 0, &err), ERR_INVALID);
	buf_release(&err);
}

static void test_encode(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	stor_uri_encode(&b, "dir/a b+c~(1)*!'.bin", 1);
	assert_string_equal(b.data, "dir/a%20b%2Bc~%281%29%2A%21%27.bin");
	buf_reset(&b);
	stor_uri_encode(&b, "x/y=z&", 0);
	assert_string_equal(b.data, "x%2Fy%3Dz%26");
	buf_reset(&b);
	stor_uri_encode(&b, "\xc3\xa9", 1);
	assert_string_equal(b.data, "%C3%A9");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_s3),
		cmocka_unit_test(test_parse_file),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_key_check),
		cmocka_unit_test(test_encode),
	};

	return cmocka_run_group_tests_name("storage_uri", tests, NULL, NULL);
}
