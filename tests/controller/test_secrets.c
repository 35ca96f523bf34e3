/*
 * Tests the controller's secrets (controller/files.c on db/secrets.c):
 * a secret made once and kept; one an older controller left in a file
 * taken over, so agents left running keep their tokens across the
 * upgrade; a damaged file replaced by a new secret.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "controller/files.h"

#include "tests/controller/ctx_fixture.h"

struct fx {
	struct ctrl_ctx ctx;
	char dir[PATH_MAX];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f || ctx_fixture_open(&f->ctx, f->dir, sizeof(f->dir), "sec")) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	ctx_fixture_close(&f->ctx, f->dir);
	free(f);
	return 0;
}

static void test_made_once(void **state)
{
	struct fx *f = *state;
	int existed = -1;
	char *a = ctrl_secret(&f->ctx, "rendezvous-key", NULL, 32, &existed);
	char *b;

	assert_non_null(a);
	assert_int_equal(existed, 0);
	assert_int_equal(strlen(a), 64);
	b = ctrl_secret(&f->ctx, "rendezvous-key", NULL, 32, &existed);
	assert_int_equal(existed, 1);
	assert_string_equal(a, b);
	free(a);
	free(b);
}

static void test_legacy_file(void **state)
{
	struct fx *f = *state;
	const char *old = "00112233445566778899aabbccddeeff0011223344556677";
	char path[PATH_MAX + 16];
	int existed = -1;
	char *a;

	snprintf(path, sizeof(path), "%s/old-token", f->dir);
	assert_int_equal(ctrl_write_small(path, old), 0);
	a = ctrl_secret(&f->ctx, "host-token/h1", path, 24, &existed);
	assert_int_equal(existed, 1);
	assert_string_equal(a, old);
	free(a);
	/* From the store now, whatever the file says. */
	assert_int_equal(ctrl_write_small(path, "ffff"), 0);
	a = ctrl_secret(&f->ctx, "host-token/h1", path, 24, &existed);
	assert_int_equal(existed, 1);
	assert_string_equal(a, old);
	free(a);
	unlink(path);
}

static void test_damaged_file(void **state)
{
	struct fx *f = *state;
	char path[PATH_MAX + 16];
	int existed = -1;
	char *a;

	snprintf(path, sizeof(path), "%s/bad-token", f->dir);
	assert_int_equal(ctrl_write_small(path, "not hex at all"), 0);
	a = ctrl_secret(&f->ctx, "host-token/h2", path, 24, &existed);
	assert_int_equal(existed, 0);
	assert_int_equal(strlen(a), 48);
	assert_int_equal(strspn(a, "0123456789abcdef"), 48);
	free(a);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_made_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_legacy_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_damaged_file, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
