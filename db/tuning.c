/*
 * Hyperparameter tuning jobs in the store (db/tuning.h).
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db_internal.h"
#include "db/tuning.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define TUNING_COLS                                                   \
	"name, arn, uid, owner, run_as, status, request_json, seed, " \
	"failure_reason, creation_ms, last_modified_ms, end_ms, "     \
	"convergence_ms"

void db_tuning_release(struct db_tuning *t)
{
	free(t->name);
	free(t->arn);
	free(t->uid);
	free(t->owner);
	free(t->run_as);
	free(t->status);
	free(t->request_json);
	free(t->failure_reason);
	memset(t, 0, sizeof(*t));
}

void db_tunings_free(struct db_tuning *t, size_t n)
{
	size_t i;

	for (i = 0; t && i < n; i++)
		db_tuning_release(&t[i]);
	free(t);
}

static void read_tuning(sqlite3_stmt *st, struct db_tuning *t)
{
	memset(t, 0, sizeof(*t));
	t->name = db__col_dup(st, 0);
	t->arn = db__col_dup(st, 1);
	t->uid = db__col_dup(st, 2);
	t->owner = db__col_dup(st, 3);
	t->run_as = db__col_dup(st, 4);
	t->status = db__col_dup(st, 5);
	t->request_json = db__col_dup(st, 6);
	t->seed = (uint64_t)sqlite3_column_int64(st, 7);
	t->failure_reason = db__col_dup(st, 8);
	t->creation_ms = sqlite3_column_int64(st, 9);
	t->last_modified_ms = sqlite3_column_int64(st, 10);
	t->end_ms = sqlite3_column_int64(st, 11);
	t->convergence_ms = sqlite3_column_int64(st, 12);
}

static int tags_insert(sqlite3 *conn, const char *tuning,
		       const struct db_tag *tags, size_t n, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	size_t i;
	int ret = 0;

	if (!n)
		return 0;
	if (sqlite3_prepare_v2(conn,
			       "INSERT INTO tuning_tags(tuning, key, value) "
			       "VALUES (?1, ?2, ?3) ON CONFLICT(tuning, key) "
			       "DO UPDATE SET value = excluded.value",
			       -1, &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare tag insert", err);
	for (i = 0; i < n && !ret; i++) {
		db__bind_text(st, 1, tuning);
		db__bind_text(st, 2, tags[i].key);
		db__bind_text(st, 3, tags[i].value);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db__error(conn, "cannot insert tag", err);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return ret;
}

int db_tuning_insert(struct db *db, const struct db_tuning *t, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn,
			       "INSERT INTO tuning_jobs(" TUNING_COLS
			       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
			       "?10, ?10, 0, 0)",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare tuning insert", err);
		goto out;
	}
	db__bind_text(st, 1, t->name);
	db__bind_text(st, 2, t->arn);
	db__bind_text(st, 3, t->uid);
	db__bind_text(st, 4, t->owner ? t->owner : "");
	db__bind_text(st, 5, t->run_as);
	db__bind_text(st, 6, t->status);
	db__bind_text(st, 7, t->request_json);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)t->seed);
	db__bind_text(st, 9, t->failure_reason);
	sqlite3_bind_int64(st, 10, t->creation_ms);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT)
		ret = ERR_CONFLICT;
	else if (rc != SQLITE_DONE)
		ret = db__error(conn, "cannot insert tuning job", err);
	if (!ret)
		ret = tags_insert(conn, t->name, t->tags, t->n_tags, err);
out:
	sqlite3_finalize(st);
	if (db__writer_end(db, !ret, err) && !ret)
		ret = ERR_DB;
	return ret;
}

/* A lookup's one row: read into t, found set. */
struct tuning_hit {
	struct db_tuning *t;
	int found;
};

static int tuning_row(sqlite3_stmt *st, void *arg)
{
	struct tuning_hit *hit = arg;

	read_tuning(st, hit->t);
	hit->found = 1;
	return 1;
}

int db_tuning_get(struct db *db, const char *name, struct db_tuning *out,
		  struct buf *err)
{
	struct db__query q = {
		.sql = "SELECT " TUNING_COLS
		       " FROM tuning_jobs WHERE name = ?1",
		.prepare_what = "cannot prepare tuning read",
		.step_what = "cannot read tuning job",
		.bind = db__bind_text1,
		.bind_arg = name,
	};
	struct tuning_hit hit = { out, 0 };
	int ret;

	memset(out, 0, sizeof(*out));
	ret = db__rows(db, &q, tuning_row, &hit, err);
	if (!ret && !hit.found)
		ret = ERR_NOTFOUND;
	return ret;
}

static int tuning_list_row(sqlite3_stmt *st, void *arg)
{
	read_tuning(st, db__vec_push(arg));
	return 0;
}

int db_tuning_list(struct db *db, const char *status, struct db_tuning **out,
		   size_t *n, struct buf *err)
{
	struct db__query q = {
		.sql = "SELECT " TUNING_COLS " FROM tuning_jobs WHERE ?1 IS "
		       "NULL OR status = ?1 ORDER BY creation_ms DESC, name",
		.prepare_what = "cannot prepare tuning list",
		.step_what = "cannot list tuning jobs",
		.bind = db__bind_text1,
		.bind_arg = status,
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, tuning_list_row, &a, err);

	if (ret) {
		db_tunings_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}

int db_tuning_active(struct db *db, char ***names, size_t *n, struct buf *err)
{
	static const struct db__query q = {
		.sql = "SELECT name FROM tuning_jobs INDEXED BY "
		       "tuning_by_status WHERE status IN "
		       "('InProgress', 'Stopping') ORDER BY name",
		.prepare_what = "cannot prepare tuning scan",
		.step_what = "cannot scan tuning jobs",
	};

	return db__names(db, &q, names, n, err);
}

/* Runs one write statement: n_texts text binds, then n_ints integers. */
static int write1(struct db *db, const char *sql, const char *what,
		  const char *const *texts, size_t n_texts, const int64_t *ints,
		  size_t n_ints, int *changed, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st = NULL;
	size_t i;
	int ret = 0;

	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, what, err);
		goto out;
	}
	for (i = 0; i < n_texts; i++)
		db__bind_text(st, (int)i + 1, texts[i]);
	for (i = 0; i < n_ints; i++)
		sqlite3_bind_int64(st, (int)(n_texts + i) + 1, ints[i]);
	if (sqlite3_step(st) != SQLITE_DONE)
		ret = db__error(conn, what, err);
	else if (changed)
		*changed = sqlite3_changes(conn);
out:
	sqlite3_finalize(st);
	if (db__writer_end(db, !ret, err) && !ret)
		ret = ERR_DB;
	return ret;
}

int db_tuning_set_status(struct db *db, const char *name, const char *from,
			 const char *to, const char *reason, int64_t end_ms,
			 int64_t now_ms, struct buf *err)
{
	const char *texts[] = { name, from, to, reason };
	const int64_t ints[] = { end_ms, now_ms };
	int changed = 0;
	int ret = write1(db,
			 "UPDATE tuning_jobs SET status = ?3, failure_reason "
			 "= COALESCE(?4, failure_reason), end_ms = CASE WHEN "
			 "?5 > 0 THEN ?5 ELSE end_ms END, last_modified_ms = "
			 "?6 WHERE name = ?1 AND status = ?2",
			 "cannot update tuning job", texts, 4, ints, 2,
			 &changed, err);

	if (!ret && !changed)
		ret = ERR_CONFLICT;
	return ret;
}

int db_tuning_set_convergence(struct db *db, const char *name, int64_t ms,
			      struct buf *err)
{
	const char *texts[] = { name };
	const int64_t ints[] = { ms };

	return write1(db,
		      "UPDATE tuning_jobs SET convergence_ms = ?2, "
		      "last_modified_ms = ?2 WHERE name = ?1",
		      "cannot update tuning job", texts, 1, ints, 1, NULL, err);
}

int db_tuning_delete(struct db *db, const char *name, struct buf *err)
{
	struct db_tuning t;
	const char *texts[] = { name };
	int ret = db_tuning_get(db, name, &t, err);

	if (ret)
		return ret;
	if (strcmp(t.status, "Completed") && strcmp(t.status, "Failed") &&
	    strcmp(t.status, "Stopped")) {
		(void)buf_addf(err, "it is %s", t.status);
		db_tuning_release(&t);
		return ERR_CONFLICT;
	}
	db_tuning_release(&t);
	ret = write1(db, "DELETE FROM tuning_children WHERE tuning = ?1",
		     "cannot delete tuning job", texts, 1, NULL, 0, NULL, err);
	if (!ret)
		ret = write1(db, "DELETE FROM tuning_tags WHERE tuning = ?1",
			     "cannot delete tuning job", texts, 1, NULL, 0,
			     NULL, err);
	if (!ret)
		ret = write1(db,
			     "DELETE FROM tuning_jobs WHERE name = ?1 AND "
			     "status IN ('Completed', 'Failed', 'Stopped')",
			     "cannot delete tuning job", texts, 1, NULL, 0,
			     NULL, err);
	return ret;
}

void db_tuning_children_free(struct db_tuning_child *c, size_t n)
{
	size_t i;

	for (i = 0; c && i < n; i++) {
		free(c[i].job);
		free(c[i].point);
		free(c[i].metric);
		free(c[i].early_stop);
		free(c[i].arn);
		free(c[i].status);
		free(c[i].secondary_status);
		free(c[i].failure_reason);
	}
	free(c);
}

static int child_row(sqlite3_stmt *st, void *arg)
{
	struct db_tuning_child *c = db__vec_push(arg);

	c->idx = sqlite3_column_int(st, 0);
	c->job = db__col_dup(st, 1);
	c->def = sqlite3_column_int(st, 2);
	c->point = db__col_dup(st, 3);
	c->metric = db__col_dup(st, 4);
	c->created = sqlite3_column_int(st, 5);
	c->retry_of = sqlite3_column_int(st, 6);
	c->early_stop = db__col_dup(st, 7);
	c->arn = db__col_dup(st, 8);
	c->status = db__col_dup(st, 9);
	c->secondary_status = db__col_dup(st, 10);
	c->failure_reason = db__col_dup(st, 11);
	c->creation_ms = sqlite3_column_int64(st, 12);
	c->start_ms = sqlite3_column_int64(st, 13);
	c->end_ms = sqlite3_column_int64(st, 14);
	c->has_objective = sqlite3_column_type(st, 15) != SQLITE_NULL;
	c->objective = sqlite3_column_double(st, 15);
	return 0;
}

int db_tuning_children(struct db *db, const char *tuning,
		       struct db_tuning_child **out, size_t *n, struct buf *err)
{
	struct db__query q = {
		.sql = "SELECT c.idx, c.job, c.def, c.point, c.metric, "
		       "c.created, c.retry_of, c.early_stop, j.arn, j.status, "
		       "j.secondary_status, j.failure_reason, j.creation_ms, "
		       "j.start_ms, j.end_ms, fm.value FROM tuning_children c "
		       "LEFT JOIN jobs j ON j.name = c.job LEFT JOIN "
		       "final_metrics fm ON fm.job_id = j.id AND fm.name = "
		       "c.metric WHERE c.tuning = ?1 ORDER BY c.idx",
		.prepare_what = "cannot prepare tuning children",
		.step_what = "cannot read tuning children",
		.bind = db__bind_text1,
		.bind_arg = tuning,
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, child_row, &a, err);

	if (ret) {
		db_tuning_children_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}

int db_tuning_child_add(struct db *db, const char *tuning,
			const struct db_tuning_child *c, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn,
			       "INSERT INTO tuning_children(tuning, idx, job, "
			       "def, point, metric, created, retry_of) VALUES "
			       "(?1, ?2, ?3, ?4, ?5, ?6, 0, ?7)",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare child insert", err);
		goto out;
	}
	db__bind_text(st, 1, tuning);
	sqlite3_bind_int(st, 2, c->idx);
	db__bind_text(st, 3, c->job);
	sqlite3_bind_int(st, 4, c->def);
	db__bind_text(st, 5, c->point);
	db__bind_text(st, 6, c->metric);
	sqlite3_bind_int(st, 7, c->retry_of);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT)
		ret = ERR_CONFLICT;
	else if (rc != SQLITE_DONE)
		ret = db__error(conn, "cannot insert child", err);
out:
	sqlite3_finalize(st);
	if (db__writer_end(db, !ret, err) && !ret)
		ret = ERR_DB;
	return ret;
}

int db_tuning_child_created(struct db *db, const char *tuning, int idx,
			    struct buf *err)
{
	const char *texts[] = { tuning };
	const int64_t ints[] = { idx };

	return write1(db,
		      "UPDATE tuning_children SET created = 1 WHERE tuning = "
		      "?1 AND idx = ?2",
		      "cannot update child", texts, 1, ints, 1, NULL, err);
}

int db_tuning_child_early_stop(struct db *db, const char *tuning, int idx,
			       const char *why, struct buf *err)
{
	const char *texts[] = { tuning, why };
	const int64_t ints[] = { idx };

	return write1(db,
		      "UPDATE tuning_children SET early_stop = ?2 WHERE "
		      "tuning = ?1 AND idx = ?3",
		      "cannot update child", texts, 2, ints, 1, NULL, err);
}

static int first_text_row(sqlite3_stmt *st, void *arg)
{
	*(char **)arg = db__col_dup(st, 0);
	return 1;
}

int db_tuning_of_job(struct db *db, const char *job, char **tuning,
		     struct buf *err)
{
	struct db__query q = {
		.sql = "SELECT tuning FROM tuning_children WHERE job = ?1",
		.prepare_what = "cannot prepare child lookup",
		.step_what = "cannot look up child",
		.bind = db__bind_text1,
		.bind_arg = job,
	};

	*tuning = NULL;
	return db__rows(db, &q, first_text_row, tuning, err);
}

static int tag_row(sqlite3_stmt *st, void *arg)
{
	struct db_tag *t = db__vec_push(arg);

	t->key = db__col_dup(st, 0);
	t->value = db__col_dup(st, 1);
	return 0;
}

int db_tuning_tags(struct db *db, const char *tuning, struct db_tag **out,
		   size_t *n, struct buf *err)
{
	struct db__query q = {
		.sql = "SELECT key, value FROM tuning_tags WHERE tuning = ?1 "
		       "ORDER BY key",
		.prepare_what = "cannot prepare tuning tags",
		.step_what = "cannot read tuning tags",
		.bind = db__bind_text1,
		.bind_arg = tuning,
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, tag_row, &a, err);

	if (ret) {
		db_tags_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}
