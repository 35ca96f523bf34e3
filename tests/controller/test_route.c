/* Tests controller/route.c: the path patterns of the route tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "controller/route.h"

static void expect(const char *pattern, const char *path, int want,
		   const char *p0, const char *p1)
{
	struct ctrl_route_params p;
	int got = ctrl_route_match(pattern, path, &p);

	if (got != want)
		fail_msg("'%s' ~ '%s': %d, want %d", pattern, path, got, want);
	if (!want)
		return;
	if (p0 && (p.n < 1 || p.len[0] != strlen(p0) ||
		   strncmp(p.s[0], p0, p.len[0])))
		fail_msg("'%s' ~ '%s': first parameter not '%s'", pattern,
			 path, p0);
	if (p1 && (p.n < 2 || p.len[1] != strlen(p1) ||
		   strncmp(p.s[1], p1, p.len[1])))
		fail_msg("'%s' ~ '%s': second parameter not '%s'", pattern,
			 path, p1);
	if (!p0 && p.n)
		fail_msg("'%s' ~ '%s': no parameter expected", pattern, path);
}

static void test_patterns(void **state)
{
	(void)state;
	expect("/v1/hosts", "/v1/hosts", 1, NULL, NULL);
	expect("/v1/hosts", "/v1/hosts/", 0, NULL, NULL);
	expect("/v1/hosts", "/v1/host", 0, NULL, NULL);
	expect("/v1/training-jobs/{}", "/v1/training-jobs/mnist-1", 1,
	       "mnist-1", NULL);
	expect("/v1/training-jobs/{}", "/v1/training-jobs/", 0, NULL, NULL);
	expect("/v1/training-jobs/{}", "/v1/training-jobs/a/stop", 0, NULL,
	       NULL);
	expect("/v1/training-jobs/{}/stop", "/v1/training-jobs/a/stop", 1, "a",
	       NULL);
	expect("/v1/training-jobs/{}/stop", "/v1/training-jobs/a/stopx", 0,
	       NULL, NULL);
	expect("/v1/agents/{}/artifacts/{}/*",
	       "/v1/agents/h1/artifacts/job/1/algo-1/model.tar.gz", 1, "h1",
	       "job");
	expect("/v1/hosts/*", "/v1/hosts/", 1, "", NULL);
	expect("/v1/hosts/*", "/v1/hosts/h1/drain", 1, "h1/drain", NULL);
	expect("/v1/hosts/*", "/v1/hosts", 0, NULL, NULL);
}

static void test_too_many_params(void **state)
{
	struct ctrl_route_params p;

	(void)state;
	/* Seven "{}" are more than the parameters can hold: no match, rather
	 * than a parameter lost. */
	assert_int_equal(ctrl_route_match("/{}/{}/{}/{}/{}/{}/{}",
					  "/a/b/c/d/e/f/g", &p),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_too_many_params),
	};

	return cmocka_run_group_tests_name("controller/route", tests, NULL,
					   NULL);
}
