/*
 * Tests common/bregex.c: compile errors, group 1, and that the bounds
 * hold: a catastrophic pattern stops at the match limit quickly with JIT
 * and with the interpreter, only the first subject_max bytes are looked
 * at (never cut inside a UTF-8 character), invalid UTF-8 is matched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/bregex.h"
#include "common/err.h"
#include "common/timeutil.h"

static struct bregex *compile(const char *pattern, unsigned flags,
			      const struct bregex_limits *lim)
{
	struct bregex *re = NULL;
	struct buf err = BUF_INIT;

	assert_int_equal(bregex_compile(pattern, flags, lim, &re, &err), 0);
	assert_non_null(re);
	buf_release(&err);
	return re;
}

static void test_compile_errors(void **state)
{
	struct bregex *re = NULL;
	struct buf err = BUF_INIT;
	char *big = malloc(BREGEX_PATTERN_MAX + 2);

	(void)state;
	assert_int_equal(bregex_compile("a(b", 0, NULL, &re, &err),
			 ERR_INVALID);
	assert_null(re);
	assert_non_null(strstr(err.data, "offset 3"));
	memset(big, 'a', BREGEX_PATTERN_MAX + 1);
	big[BREGEX_PATTERN_MAX + 1] = '\0';
	buf_reset(&err);
	assert_int_equal(bregex_compile(big, 0, NULL, &re, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "longer than"));
	free(big);
	buf_release(&err);
}

static void test_group(void **state)
{
	struct bregex *re = compile("loss=([0-9.]+)", 0, NULL);
	const char *line = "epoch 1 loss=0.25 acc=0.9";
	size_t off = 99, len = 99;

	(void)state;
	assert_int_equal(bregex_groups(re), 1);
	assert_int_equal(bregex_match(re, line, SIZE_MAX, &off, &len), 1);
	assert_int_equal(off, 13);
	assert_int_equal(len, 4);
	assert_int_equal(bregex_match(re, "no metric", SIZE_MAX, &off, &len),
			 0);
	bregex_free(re);
	re = compile("LOSS", BREGEX_CASELESS, NULL);
	assert_int_equal(bregex_match(re, line, SIZE_MAX, NULL, NULL), 1);
	bregex_free(re);
}

/* ^(a|aa)+$ against a...a! backtracks exponentially without bounds. */
static void catastrophic(unsigned flags, size_t n_a)
{
	struct bregex *re = compile("^(a|aa)+$", flags, NULL);
	char *s = malloc(n_a + 2);
	int64_t t0;
	int i;

	memset(s, 'a', n_a);
	s[n_a] = '!';
	s[n_a + 1] = '\0';
	t0 = time_mono_ms();
	for (i = 0; i < 20; i++)
		assert_int_equal(bregex_match(re, s, SIZE_MAX, NULL, NULL),
				 BREGEX_LIMIT);
	/* Twenty bounded matches: well under a second even when slow. */
	assert_true(time_mono_ms() - t0 < 1000);
	free(s);
	bregex_free(re);
}

static void test_limits_jit(void **state)
{
	(void)state;
	catastrophic(0, 40);
	catastrophic(0, 4000);
}

static void test_limits_interpreter(void **state)
{
	(void)state;
	catastrophic(BREGEX_NO_JIT, 40);
	catastrophic(BREGEX_NO_JIT, 4000);
}

static void test_subject_cap(void **state)
{
	struct bregex_limits lim = BREGEX_LIMITS_INIT;
	struct bregex *re = compile("b", 0, NULL), *wide;
	char *s = malloc(8192);

	(void)state;
	memset(s, 'a', 5000);
	memcpy(s + 5000, "b", 2);
	/* The b lies past the first 4 KiB. */
	assert_int_equal(bregex_match(re, s, SIZE_MAX, NULL, NULL), 0);
	lim.subject_max = 8192;
	wide = compile("b", 0, &lim);
	assert_int_equal(bregex_match(wide, s, SIZE_MAX, NULL, NULL), 1);
	bregex_free(wide);
	bregex_free(re);
	/* A cut inside a two-byte character backs off to its start. */
	re = compile("a$", 0, NULL);
	memset(s, 'a', BREGEX_SUBJECT_MAX - 1);
	memcpy(s + BREGEX_SUBJECT_MAX - 1, "\xc3\xa9x", 4);
	assert_int_equal(bregex_match(re, s, SIZE_MAX, NULL, NULL), 1);
	bregex_free(re);
	/* Invalid UTF-8 in a line is matched around, not refused. */
	re = compile("abc", 0, NULL);
	assert_int_equal(bregex_match(re, "\xff\xfe abc", SIZE_MAX, NULL, NULL),
			 1);
	bregex_free(re);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compile_errors),
		cmocka_unit_test(test_group),
		cmocka_unit_test(test_limits_jit),
		cmocka_unit_test(test_limits_interpreter),
		cmocka_unit_test(test_subject_cap),
	};

	return cmocka_run_group_tests_name("bregex", tests, NULL, NULL);
}
