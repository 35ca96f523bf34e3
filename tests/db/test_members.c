/*
 * Tests db/members.c: the members of a replicated controller stored,
 * listed by id, replaced and forgotten.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/members.h"
#include "common/buf.h"
#include "common/err.h"

#include "tests/db/fixture.h"

static void put(struct db *db, unsigned id, const char *raft, const char *api)
{
	struct db_member m = { id, (char *)raft, (char *)api };
	struct buf err = BUF_INIT;

	if (db_member_put(db, &m, &err))
		fail_msg("put %u: %s", id, err.data);
	buf_release(&err);
}

static void test_members(void **state)
{
	struct fixture *f = *state;
	struct buf err = BUF_INIT;
	struct db_member *m;
	size_t n;

	assert_int_equal(db_members_list(f->db, &m, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_null(m);
	put(f->db, 3, "h3:1", "http://h3:2");
	put(f->db, 1, "h1:1", "http://h1:2");
	put(f->db, 2, "h2:1", "http://h2:2");
	/* The same id again: replaced. */
	put(f->db, 2, "h2b:1", "http://h2b:2");
	assert_int_equal(db_member_delete(f->db, 3, &err), 0);
	/* Forgetting one that is not there is no error. */
	assert_int_equal(db_member_delete(f->db, 77, &err), 0);
	assert_int_equal(db_members_list(f->db, &m, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(m[0].id, 1);
	assert_string_equal(m[0].raft_address, "h1:1");
	assert_string_equal(m[0].api_url, "http://h1:2");
	assert_int_equal(m[1].id, 2);
	assert_string_equal(m[1].raft_address, "h2b:1");
	assert_string_equal(m[1].api_url, "http://h2b:2");
	db_members_free(m, n);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_members, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
