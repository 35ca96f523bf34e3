/*
 * Goodput accounting's store (db/goodput.h): the attempt_progress,
 * goodput_totals and goodput_settled tables (migration in db/schema.c).
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db_internal.h"
#include "db/goodput.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define JOB_ID "(SELECT id FROM jobs WHERE name = ?1)"
/* The same, when ?9 (a uid, or NULL for any) names the job too. */
#define JOB_ID_UID \
	"(SELECT id FROM jobs WHERE name = ?1 AND (?9 IS NULL OR uid = ?9))"

static sqlite3_stmt *prep(sqlite3 *conn, const char *sql, struct buf *err)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK) {
		db__error(conn, "cannot prepare goodput", err);
		return NULL;
	}
	return st;
}

/* The stored progress of one attempt and the steps before it. */
struct stored {
	int found;
	int64_t first_ms, first_step, last_ms, max_step, passed_ms, ckpt_ms;
	int64_t prev_max; /* the most any earlier attempt reached, -1: none */
};

static int read_stored(sqlite3 *conn, const char *job, int attempt,
		       struct stored *s, struct buf *err)
{
	sqlite3_stmt *st = prep(
		conn,
		"SELECT (SELECT coalesce(max(max_step), -1) FROM "
		"attempt_progress WHERE job_id = " JOB_ID " AND attempt < ?2),"
		" p.first_ms, p.first_step, p.last_ms, p.max_step,"
		" p.passed_ms, p.ckpt_ms FROM (SELECT 1) LEFT JOIN "
		"attempt_progress p ON p.job_id = " JOB_ID
		" AND p.attempt = ?2",
		err);
	int rc;

	memset(s, 0, sizeof(*s));
	if (!st)
		return ERR_DB;
	db__bind_text(st, 1, job);
	sqlite3_bind_int(st, 2, attempt);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		s->prev_max = sqlite3_column_int64(st, 0);
		s->found = sqlite3_column_type(st, 1) != SQLITE_NULL;
		s->first_ms = sqlite3_column_int64(st, 1);
		s->first_step = sqlite3_column_int64(st, 2);
		s->last_ms = sqlite3_column_int64(st, 3);
		s->max_step = sqlite3_column_int64(st, 4);
		s->passed_ms = sqlite3_column_int64(st, 5);
		s->ckpt_ms = sqlite3_column_int64(st, 6);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 :
				  db__error(conn, "cannot read progress", err);
}

/* Folds p into s: the attempt's first and last reports, its furthest
 * step and when it first went past every earlier attempt. */
static void fold(struct stored *s, const struct db_progress *p)
{
	int had = s->found && s->first_ms;
	size_t i;

	if (p->first_ms && (!had || p->first_ms < s->first_ms)) {
		s->first_ms = p->first_ms;
		s->first_step = p->first_step;
	}
	if (p->first_ms && (!had || p->last_ms > s->last_ms))
		s->last_ms = p->last_ms;
	if (p->first_ms && (!had || p->max_step > s->max_step))
		s->max_step = p->max_step;
	/* Batches of several hosts may come in any order: the earliest
	 * report past the earlier attempts counts. */
	for (i = 0; i < p->n_steps; i++)
		if (p->steps[i] > s->prev_max &&
		    (!s->passed_ms || p->steps_ms[i] < s->passed_ms))
			s->passed_ms = p->steps_ms[i];
	s->ckpt_ms += p->ckpt_ms;
}

static int write_stored(sqlite3 *conn, const char *job, const char *uid,
			int attempt, const struct stored *s, struct buf *err)
{
	sqlite3_stmt *st = prep(
		conn,
		"INSERT INTO attempt_progress (job_id, attempt, first_ms, "
		"first_step, last_ms, max_step, passed_ms, ckpt_ms) SELECT a."
		"job_id, a.attempt, ?3, ?4, ?5, ?6, ?7, ?8 FROM attempts a "
		"WHERE a.job_id = " JOB_ID_UID " AND a.attempt = ?2 "
		"ON CONFLICT (job_id, attempt) DO UPDATE SET first_ms = ?3, "
		"first_step = ?4, last_ms = ?5, max_step = ?6, passed_ms = ?7,"
		" ckpt_ms = ?8",
		err);
	int rc;

	if (!st)
		return ERR_DB;
	db__bind_text(st, 1, job);
	sqlite3_bind_int(st, 2, attempt);
	sqlite3_bind_int64(st, 3, s->first_ms);
	sqlite3_bind_int64(st, 4, s->first_step);
	sqlite3_bind_int64(st, 5, s->last_ms);
	sqlite3_bind_int64(st, 6, s->max_step);
	sqlite3_bind_int64(st, 7, s->passed_ms);
	sqlite3_bind_int64(st, 8, s->ckpt_ms);
	db__bind_text(st, 9, uid);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ?
		       0 :
		       db__error(conn, "cannot store progress", err);
}

/*
 * Step reports arrive with every batch of log lines: committed without
 * waiting for the disk (the next ordinary commit makes them durable), as
 * a crash that loses the last ones only blurs the split by that much.
 */
int db_progress_add(struct db *db, const char *job, int attempt,
		    const struct db_progress *p, struct buf *err)
{
	sqlite3 *conn = db__writer_begin_derived(db, err);
	struct stored s;
	int ret;

	if (!conn)
		return ERR_DB;
	ret = read_stored(conn, job, attempt, &s, err);
	if (!ret) {
		fold(&s, p);
		ret = write_stored(conn, job, p->job_uid, attempt, &s, err);
	}
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

static int attempt_row(sqlite3_stmt *st, void *arg)
{
	struct db_goodput_attempt *a = db__vec_push(arg);

	a->attempt = sqlite3_column_int(st, 0);
	a->started_ms = sqlite3_column_int64(st, 1);
	a->ended_ms = sqlite3_column_int64(st, 2);
	a->planned = sqlite3_column_int(st, 3);
	a->first_ms = sqlite3_column_int64(st, 4);
	a->first_step = sqlite3_column_int64(st, 5);
	a->last_ms = sqlite3_column_int64(st, 6);
	a->max_step = sqlite3_column_int64(st, 7);
	a->passed_ms = sqlite3_column_int64(st, 8);
	a->ckpt_ms = sqlite3_column_int64(st, 9);
	return 0;
}

int db_goodput_attempts(struct db *db, const char *job,
			struct db_goodput_attempt **out, size_t *n,
			struct buf *err)
{
	static const struct db__query q_attempts = {
		"SELECT a.attempt, a.started_ms, a.ended_ms, a.planned, "
		"coalesce(p.first_ms, 0), coalesce(p.first_step, 0), "
		"coalesce(p.last_ms, 0), coalesce(p.max_step, 0), "
		"coalesce(p.passed_ms, 0), coalesce(p.ckpt_ms, 0) "
		"FROM attempts a LEFT JOIN attempt_progress p ON p.job_id = "
		"a.job_id AND p.attempt = a.attempt WHERE a.job_id = " JOB_ID
		" ORDER BY a.attempt",
		"cannot prepare goodput attempts",
		"cannot read goodput attempts",
		db__bind_text1,
		NULL,
	};
	struct db__query q = q_attempts;
	struct db__vec v = DB__VEC_INIT(sizeof(struct db_goodput_attempt));
	int ret;

	q.bind_arg = job;
	ret = db__rows(db, &q, attempt_row, &v, err);
	if (ret) {
		free(v.v);
		v.v = NULL;
		v.n = 0;
	}
	*out = v.v;
	*n = v.n;
	return ret;
}

/* A job's times; the row stops the scan. */
static int times_row(sqlite3_stmt *st, void *arg)
{
	int64_t *t = arg;

	t[0] = sqlite3_column_int64(st, 0);
	t[1] = sqlite3_column_int64(st, 1);
	t[2] = sqlite3_column_int64(st, 2);
	t[3] = 1;
	return 1;
}

int db_goodput_times(struct db *db, const char *job, int64_t *created_ms,
		     int64_t *end_ms, int64_t *modified_ms, struct buf *err)
{
	struct db__query q = {
		"SELECT creation_ms, end_ms, last_modified_ms FROM jobs "
		"WHERE name = ?1",
		"cannot prepare job times",
		"cannot read job times",
		db__bind_text1,
		job,
	};
	int64_t t[4] = { 0, 0, 0, 0 };
	int ret = db__rows(db, &q, times_row, t, err);

	*created_ms = t[0];
	*end_ms = t[1];
	*modified_ms = t[2];
	if (ret)
		return ret;
	return t[3] ? 0 : ERR_NOTFOUND;
}

static void bind_limit(sqlite3_stmt *st, const void *arg)
{
	sqlite3_bind_int64(st, 1, *(const int64_t *)arg);
}

int db_goodput_unsettled(struct db *db, size_t limit, char ***names, size_t *n,
			 struct buf *err)
{
	int64_t lim = (int64_t)limit;
	struct db__query q = {
		"SELECT name FROM jobs WHERE status IN ('Completed', 'Failed',"
		" 'Stopped') AND id NOT IN (SELECT job_id FROM "
		"goodput_settled) ORDER BY id LIMIT ?1",
		"cannot prepare unsettled jobs",
		"cannot list unsettled jobs",
		bind_limit,
		&lim,
	};

	return db__names(db, &q, names, n, err);
}

static int settle_in(sqlite3 *conn, const char *job, const char *const *names,
		     const int64_t *ms, size_t n, struct buf *err)
{
	sqlite3_stmt *st = prep(conn,
				"INSERT OR IGNORE INTO goodput_settled (job_id)"
				" SELECT id FROM jobs WHERE name = ?1",
				err);
	size_t i;
	int rc;

	if (!st)
		return ERR_DB;
	db__bind_text(st, 1, job);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db__error(conn, "cannot settle goodput", err);
	if (!sqlite3_changes(conn))
		return 0; /* settled already */
	for (i = 0; i < n; i++) {
		st = prep(conn,
			  "INSERT INTO goodput_totals (category, ms) VALUES "
			  "(?1, ?2) ON CONFLICT (category) DO UPDATE SET "
			  "ms = ms + ?2",
			  err);
		if (!st)
			return ERR_DB;
		db__bind_text(st, 1, names[i]);
		sqlite3_bind_int64(st, 2, ms[i]);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			return db__error(conn, "cannot add goodput", err);
	}
	return 0;
}

int db_goodput_settle(struct db *db, const char *job, const char *const *names,
		      const int64_t *ms, size_t n, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	int ret;

	if (!conn)
		return ERR_DB;
	ret = settle_in(conn, job, names, ms, n, err);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

/* A total's row: the category named in the caller's list gets its ms. */
struct totals {
	const char *const *names;
	int64_t *ms;
	size_t n;
};

static int total_row(sqlite3_stmt *st, void *arg)
{
	struct totals *t = arg;
	const char *name = (const char *)sqlite3_column_text(st, 0);
	size_t i;

	for (i = 0; name && i < t->n; i++)
		if (!strcmp(name, t->names[i]))
			t->ms[i] = sqlite3_column_int64(st, 1);
	return 0;
}

int db_goodput_totals(struct db *db, const char *const *names, int64_t *ms,
		      size_t n, struct buf *err)
{
	struct totals t = { names, ms, n };
	struct db__query q = {
		"SELECT category, ms FROM goodput_totals",
		"cannot prepare goodput totals",
		"cannot read goodput totals",
		NULL,
		NULL,
	};

	memset(ms, 0, n * sizeof(*ms));
	return db__rows(db, &q, total_row, &t, err);
}

static int queued_row(sqlite3_stmt *st, void *arg)
{
	*(int64_t *)arg = sqlite3_column_int64(st, 0);
	return 0;
}

static void bind_now(sqlite3_stmt *st, const void *arg)
{
	sqlite3_bind_int64(st, 1, *(const int64_t *)arg);
}

int db_goodput_live(struct db *db, int64_t now_ms, char ***names, size_t *n,
		    int64_t *queued_ms, struct buf *err)
{
	struct db__query running = {
		"SELECT name FROM jobs WHERE status IN ('InProgress', "
		"'Stopping') AND attempt > 0 ORDER BY id",
		"cannot prepare running jobs",
		"cannot list running jobs",
		NULL,
		NULL,
	};
	struct db__query queued = {
		"SELECT coalesce(sum(max(?1 - creation_ms, 0)), 0) FROM jobs "
		"WHERE status IN ('InProgress', 'Stopping') AND attempt = 0",
		"cannot prepare queued jobs",
		"cannot sum queued jobs",
		bind_now,
		&now_ms,
	};
	int ret;

	*queued_ms = 0;
	ret = db__rows(db, &queued, queued_row, queued_ms, err);
	if (ret) {
		*names = NULL;
		*n = 0;
		return ret;
	}
	return db__names(db, &running, names, n, err);
}
