/*
 * Tests db/objects.c: every change takes the next sequence number; a row
 * changed again moves to the end; a removal is a tombstone; the rows after
 * a mark come in the order of their changes, a page at a time.
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
#include "db/objects.h"
#include "common/buf.h"
#include "common/err.h"

#include "tests/db/fixture.h"

static void record(struct db *db, const char *bucket, const char *key,
		   int64_t size, const char *etag, int deleted)
{
	struct db_object o = { (char *)bucket, (char *)key, size,
			       (char *)etag,   deleted,	    0 };
	struct buf err = BUF_INIT;

	assert_int_equal(db_objects_record(db, &o, 1, &err), 0);
	buf_release(&err);
}

static void test_sequence(void **state)
{
	struct fixture *f = *state;
	struct db_object *rows;
	struct buf err = BUF_INIT;
	size_t n;

	assert_int_equal(db_objects_last_seq(f->db), 0);
	record(f->db, "b", "", 0, "", 0);
	record(f->db, "b", "k1", 3, "aaaa", 0);
	record(f->db, "b", "k2", 4, "bbbb", 0);
	record(f->db, "b", "k1", 5, "cccc", 0);
	record(f->db, "b", "k2", 0, "", 1);
	assert_int_equal(db_objects_last_seq(f->db), 5);
	assert_int_equal(db_objects_since(f->db, 0, 100, &rows, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(rows[0].key, "");
	assert_int_equal(rows[0].seq, 1);
	assert_string_equal(rows[1].key, "k1");
	assert_string_equal(rows[1].etag, "cccc");
	assert_int_equal(rows[1].size, 5);
	assert_int_equal(rows[1].seq, 4);
	assert_string_equal(rows[2].key, "k2");
	assert_int_equal(rows[2].deleted, 1);
	assert_int_equal(rows[2].seq, 5);
	db_objects_free(rows, n);
	/* After a mark, a page at a time. */
	assert_int_equal(db_objects_since(f->db, 1, 1, &rows, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].key, "k1");
	db_objects_free(rows, n);
	assert_int_equal(db_objects_since(f->db, 5, 10, &rows, &n, &err), 0);
	assert_int_equal(n, 0);
	db_objects_free(rows, n);
	buf_release(&err);
}

static void test_batch(void **state)
{
	struct fixture *f = *state;
	char b[] = "b", c_[] = "c", x[] = "x", y[] = "y", e1[] = "e1",
	     e2[] = "e2", none[] = "";
	struct db_object c[3] = {
		{ b, x, 1, e1, 0, 0 },
		{ b, y, 0, none, 1, 0 },
		{ c_, x, 2, e2, 0, 0 },
	};
	struct db_object *rows;
	struct buf err = BUF_INIT;
	size_t n;

	assert_int_equal(db_objects_record(f->db, c, 3, &err), 0);
	assert_int_equal(db_objects_since(f->db, 0, 10, &rows, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(rows[0].seq, 1);
	assert_int_equal(rows[2].seq, 3);
	assert_string_equal(rows[2].bucket, "c");
	db_objects_free(rows, n);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sequence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
