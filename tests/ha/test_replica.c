/*
 * Tests db/replica.c: a leader's writes recorded as changesets through a
 * hook, applied on another store, replays skipped, a refused proposal
 * rolled back, divergence detected, and whole-store images.
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
#include "db/replica.h"
#include "common/buf.h"
#include "common/err.h"

#include "tests/db/fixture.h"

#define MAX_ENTRIES 64

/* The log the fake engine keeps: what each proposal held. */
struct log {
	void *data[MAX_ENTRIES];
	size_t len[MAX_ENTRIES];
	uint64_t n;
	uint64_t applied_ok, applied_failed;
	int refuse; /* answer "not the leader" */
};

static int propose(void *arg, const void *changes, size_t len, uint64_t *index,
		   struct buf *err)
{
	struct log *l = arg;

	if (l->refuse) {
		(void)buf_addf(err, "not the leader");
		return ERR_DB;
	}
	assert_true(l->n < MAX_ENTRIES);
	assert_true(len > 0);
	l->data[l->n] = malloc(len);
	memcpy(l->data[l->n], changes, len);
	l->len[l->n] = len;
	*index = ++l->n;
	return 0;
}

static void applied(void *arg, uint64_t index, int ok)
{
	struct log *l = arg;

	assert_int_equal(index, l->n);
	if (ok)
		l->applied_ok++;
	else
		l->applied_failed++;
}

static void log_release(struct log *l)
{
	uint64_t i;

	for (i = 0; i < l->n; i++)
		free(l->data[i]);
}

static struct db *open_other(struct fixture *f, const char *name)
{
	char path[PATH_MAX + 32];
	struct buf err = BUF_INIT;
	struct db *db = NULL;

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	if (db_open(path, 2, &db, &err))
		fprintf(stderr, "db_open: %s\n", err.data);
	assert_non_null(db);
	buf_release(&err);
	return db;
}

static void hook_on(struct db *db, struct log *l)
{
	struct db_replica_hook h = { propose, applied, l };

	db_replica_set_hook(db, &h);
}

static void insert(struct db *db, const char *name)
{
	struct db_job j = make_job(name, "InProgress", "Starting", T0);
	struct buf err = BUF_INIT;

	if (db_job_insert(db, &j, "Starting the training job", &err))
		fail_msg("insert %s: %s", name, err.data);
	buf_release(&err);
}

static int any_status(const char *status)
{
	(void)status;
	return 1;
}

static void stop(struct db *db, const char *name)
{
	struct db_state_change ch;
	struct buf err = BUF_INIT;

	memset(&ch, 0, sizeof(ch));
	ch.status = "Stopped";
	ch.secondary = "Stopped";
	ch.message = "stopped";
	ch.now_ms = T0 + 5;
	ch.set_end = 1;
	if (db_job_change_state(db, name, &ch, &err))
		fail_msg("stop %s: %s", name, err.data);
	buf_release(&err);
}

static void apply_all(struct db *db, const struct log *l, uint64_t from)
{
	struct buf err = BUF_INIT;
	uint64_t i;

	for (i = from; i < l->n; i++)
		if (db_replica_apply(db, i + 1, l->data[i], l->len[i], &err))
			fail_msg("apply %llu: %s", (unsigned long long)i + 1,
				 err.data);
	buf_release(&err);
}

static void assert_status(struct db *db, const char *name, const char *st)
{
	struct db_job j;
	struct buf err = BUF_INIT;
	int ret = db_job_get(db, name, &j, &err);

	if (!st) {
		assert_int_equal(ret, ERR_NOTFOUND);
	} else {
		assert_int_equal(ret, 0);
		assert_string_equal(j.status, st);
		db_job_release(&j);
	}
	buf_release(&err);
}

/* The leader's writes, applied on another store, give the same jobs:
 * inserts (group commit), a state change and a delete that cascades. */
static void test_capture_apply(void **state)
{
	struct fixture *f = *state;
	struct log l = { 0 };
	struct buf err = BUF_INIT;
	struct db *b = open_other(f, "b.db");
	int rows = -1;

	/* Every table but the node-local one can be recorded. */
	if (db_replica_check_tables(f->db, &err))
		fail_msg("%s", err.data);
	/* A new store holds nothing a cluster would lack. */
	assert_int_equal(db_replica_holds_rows(f->db, &rows, &err), 0);
	assert_int_equal(rows, 0);
	hook_on(f->db, &l);
	insert(f->db, "job-a");
	insert(f->db, "job-b");
	insert(f->db, "job-c");
	stop(f->db, "job-b");
	assert_int_equal(db_job_delete(f->db, "job-c", any_status, &err), 0);
	assert_int_equal(l.n, 5);
	assert_int_equal(l.applied_ok, 5);
	assert_int_equal(db_replica_holds_rows(f->db, &rows, &err), 0);
	assert_int_equal(rows, 1);
	assert_int_equal(db_replica_applied(f->db), 5);

	apply_all(b, &l, 0);
	assert_int_equal(db_replica_applied(b), 5);
	assert_status(b, "job-a", "InProgress");
	assert_status(b, "job-b", "Stopped");
	assert_status(b, "job-c", NULL);

	/* A replay after a restart skips what the store holds. */
	apply_all(b, &l, 0);
	assert_int_equal(db_replica_applied(b), 5);
	db_close(b);
	b = open_other(f, "b.db");
	assert_int_equal(db_replica_applied(b), 5);
	apply_all(b, &l, 0);
	assert_status(b, "job-b", "Stopped");
	/* Applying with a hook set records nothing new. */
	hook_on(b, &l);
	insert(f->db, "job-d");
	apply_all(b, &l, 5);
	assert_int_equal(l.n, 6);
	assert_status(b, "job-d", "InProgress");
	db_close(b);
	log_release(&l);
	buf_release(&err);
}

/* A proposal that fails rolls the write back and fails it. */
static void test_refused(void **state)
{
	struct fixture *f = *state;
	struct log l = { 0 };
	struct db_job j = make_job("job-x", "InProgress", "Starting", T0);
	struct buf err = BUF_INIT;

	hook_on(f->db, &l);
	insert(f->db, "job-a");
	l.refuse = 1;
	assert_int_equal(db_job_insert(f->db, &j, "m", &err), ERR_DB);
	assert_non_null(strstr(err.data, "not the leader"));
	buf_reset(&err);
	assert_status(f->db, "job-x", NULL);
	{
		struct db_state_change ch;

		memset(&ch, 0, sizeof(ch));
		ch.status = "Stopped";
		ch.secondary = "Stopped";
		ch.message = "stopped";
		ch.now_ms = T0 + 5;
		assert_int_equal(db_job_change_state(f->db, "job-a", &ch, &err),
				 ERR_DB);
	}
	assert_status(f->db, "job-a", "InProgress");
	assert_int_equal(db_replica_applied(f->db), 1);
	assert_int_equal(l.applied_failed, 0);
	/* Without the hook, writes are local again. */
	db_replica_set_hook(f->db, NULL);
	insert(f->db, "job-y");
	assert_int_equal(l.n, 1);
	log_release(&l);
	buf_release(&err);
}

/* Changes that do not fit the store are refused, never half applied. */
static void test_diverged(void **state)
{
	struct fixture *f = *state;
	struct log l = { 0 };
	struct buf err = BUF_INIT;
	struct db *b = open_other(f, "b.db");

	hook_on(f->db, &l);
	insert(f->db, "job-a");
	insert(f->db, "job-b");
	apply_all(b, &l, 0);
	/* Entry 1 (job-a's insert) again, as a new index: a conflict. */
	assert_int_equal(db_replica_apply(b, 3, l.data[0], l.len[0], &err),
			 ERR_CONFLICT);
	assert_non_null(strstr(err.data, "diverged"));
	assert_int_equal(db_replica_applied(b), 2);
	db_close(b);
	log_release(&l);
	buf_release(&err);
}

/* A whole-store image restores on another store, which then follows. */
static void test_snapshot_restore(void **state)
{
	struct fixture *f = *state;
	struct log l = { 0 };
	struct buf err = BUF_INIT;
	struct db *c = open_other(f, "c.db");
	void *img = NULL;
	size_t len = 0;

	hook_on(f->db, &l);
	insert(f->db, "job-a");
	insert(f->db, "job-b");
	stop(f->db, "job-a");
	assert_int_equal(db_replica_snapshot(f->db, &img, &len, &err), 0);
	assert_true(len > 0);
	insert(f->db, "job-c");
	assert_int_equal(db_replica_restore(c, 3, img, len, &err), 0);
	assert_int_equal(db_replica_applied(c), 3);
	assert_status(c, "job-a", "Stopped");
	assert_status(c, "job-b", "InProgress");
	assert_status(c, "job-c", NULL);
	apply_all(c, &l, 0);
	assert_status(c, "job-c", "InProgress");
	assert_int_equal(db_replica_applied(c), 4);
	db_close(c);
	c = open_other(f, "c.db");
	assert_int_equal(db_replica_applied(c), 4);
	assert_status(c, "job-a", "Stopped");
	assert_int_equal(db_replica_restore(c, 9, "junk", 4, &err),
			 ERR_INVALID);
	db_close(c);
	free(img);
	log_release(&l);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_capture_apply, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_diverged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_restore, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
