/*
 * Tests db/secrets.c: the first value stored under a name stays, however
 * many callers race to store theirs; a name never stored is not found;
 * the secret is there after the store is opened again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/secrets.h"
#include "common/buf.h"
#include "common/err.h"

#include "tests/db/fixture.h"

static char *get_or_put(struct db *db, const char *name, const char *value)
{
	struct buf err = BUF_INIT;
	char *out = NULL;
	int ret = db_secret_get_or_put(db, name, value, &out, &err);

	if (ret)
		fprintf(stderr, "get_or_put %s: %s\n", name, err.data);
	assert_int_equal(ret, 0);
	buf_release(&err);
	return out;
}

static void test_first_stays(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	char *a, *b, *c = NULL;

	assert_int_equal(db_secret_get(f->db, "host-token/h1", &c, &err),
			 ERR_NOTFOUND);
	assert_null(c);
	a = get_or_put(f->db, "host-token/h1", "aaaa");
	b = get_or_put(f->db, "host-token/h1", "bbbb");
	assert_string_equal(a, "aaaa");
	assert_string_equal(b, "aaaa");
	assert_int_equal(db_secret_get(f->db, "host-token/h1", &c, &err), 0);
	assert_string_equal(c, "aaaa");
	free(a);
	free(b);
	free(c);
	/* Another name is another secret. */
	a = get_or_put(f->db, "rendezvous-key", "cccc");
	assert_string_equal(a, "cccc");
	free(a);
	buf_release(&err);
}

static void test_reopen(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	char *a = get_or_put(f->db, "rendezvous-key", "dddd");

	free(a);
	db_close(f->db);
	assert_int_equal(db_open(f->path, 2, &f->db, &err), 0);
	a = get_or_put(f->db, "rendezvous-key", "eeee");
	assert_string_equal(a, "dddd");
	free(a);
	buf_release(&err);
}

struct racer {
	struct db *db;
	char value[16];
	char *got;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct buf err = BUF_INIT;

	if (db_secret_get_or_put(r->db, "host-token/raced", r->value, &r->got,
				 &err))
		r->got = NULL;
	buf_release(&err);
	return NULL;
}

static void test_race(void **state)
{
	struct fixture *f = *state;
	struct racer r[8];
	pthread_t t[8];
	int i;

	for (i = 0; i < 8; i++) {
		r[i].db = f->db;
		snprintf(r[i].value, sizeof(r[i].value), "value-%d", i);
		r[i].got = NULL;
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 8; i++) {
		assert_non_null(r[i].got);
		assert_string_equal(r[i].got, r[0].got);
	}
	for (i = 0; i < 8; i++)
		free(r[i].got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first_stays, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_race, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
