/*
 * Tags of training jobs and tuning jobs (AddTags, ListTags, DeleteTags,
 * and those given at create). A training job's live in job_tags, deleted
 * with their job; a tuning job's in tuning_tags.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db.h"
#include "db/db_internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

void db_tags_free(struct db_tag *tags, size_t n)
{
	size_t i;

	for (i = 0; tags && i < n; i++) {
		free(tags[i].key);
		free(tags[i].value);
	}
	free(tags);
}

/*
 * Whose tags: a training job's live in job_tags under its id, a tuning
 * job's in tuning_tags under its name. The SQL below is written once with
 * the table and key column of each.
 */
struct owner {
	const char *table;
	const char *col;
	int64_t id;	  /* job_tags */
	const char *name; /* tuning_tags */
};

static void bind_owner(sqlite3_stmt *st, int i, const struct owner *o)
{
	if (o->name)
		db__bind_text(st, i, o->name);
	else
		sqlite3_bind_int64(st, i, o->id);
}

/* Resolves name on conn: 0, ERR_NOTFOUND or ERR_DB. */
static int owner_of(sqlite3 *conn, enum db_tag_kind kind, const char *name,
		    struct owner *o, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	memset(o, 0, sizeof(*o));
	o->table = kind == DB_TAGS_TUNING ? "tuning_tags" : "job_tags";
	o->col = kind == DB_TAGS_TUNING ? "tuning" : "job_id";
	if (sqlite3_prepare_v2(
		    conn,
		    kind == DB_TAGS_TUNING ?
			    "SELECT 0 FROM tuning_jobs WHERE name = ?1" :
			    "SELECT id FROM jobs WHERE name = ?1",
		    -1, &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare tag owner lookup", err);
	db__bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		o->id = sqlite3_column_int64(st, 0);
		if (kind == DB_TAGS_TUNING)
			o->name = name;
	} else if (rc == SQLITE_DONE) {
		ret = ERR_NOTFOUND;
	} else {
		ret = db__error(conn, "cannot read tag owner", err);
	}
	sqlite3_finalize(st);
	return ret;
}

/* Prepares fmt with the owner's table and key column filled in. */
static int prepare(sqlite3 *conn, const struct owner *o, const char *fmt,
		   sqlite3_stmt **st, struct buf *err)
{
	char sql[256];

	snprintf(sql, sizeof(sql), fmt, o->table, o->col, o->col);
	if (sqlite3_prepare_v2(conn, sql, -1, st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare tag statement", err);
	return 0;
}

static int insert_owned(sqlite3 *conn, const struct owner *o,
			const struct db_tag *tags, size_t n, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	size_t i;
	int ret;

	if (!n)
		return 0;
	ret = prepare(conn, o,
		      "INSERT INTO %s(%s, key, value) VALUES (?1, ?2, ?3) "
		      "ON CONFLICT(%s, key) DO UPDATE SET value = "
		      "excluded.value",
		      &st, err);
	for (i = 0; i < n && !ret; i++) {
		bind_owner(st, 1, o);
		db__bind_text(st, 2, tags[i].key);
		db__bind_text(st, 3, tags[i].value);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db__error(conn, "cannot insert tag", err);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return ret;
}

static int count_tags(sqlite3 *conn, const struct owner *o, size_t *n,
		      struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = prepare(conn, o, "SELECT count(*) FROM %s WHERE %s = ?1", &st,
			  err);

	if (ret)
		return ret;
	bind_owner(st, 1, o);
	if (sqlite3_step(st) == SQLITE_ROW)
		*n = (size_t)sqlite3_column_int64(st, 0);
	else
		ret = db__error(conn, "cannot count tags", err);
	sqlite3_finalize(st);
	return ret;
}

int db_tags_add(struct db *db, enum db_tag_kind kind, const char *name,
		const struct db_tag *tags, size_t n, size_t max_total,
		struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	struct owner o;
	size_t total = 0;
	int ret;

	if (!conn)
		return ERR_DB;
	ret = owner_of(conn, kind, name, &o, err);
	if (!ret)
		ret = insert_owned(conn, &o, tags, n, err);
	if (!ret)
		ret = count_tags(conn, &o, &total, err);
	if (!ret && total > max_total) {
		(void)buf_addf(err,
			       "a resource can have at most %zu tags; this "
			       "request would leave %zu",
			       max_total, total);
		ret = ERR_LIMIT;
	}
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

int db_tags_delete(struct db *db, enum db_tag_kind kind, const char *name,
		   char *const *keys, size_t n, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st = NULL;
	struct owner o;
	size_t i;
	int ret;

	if (!conn)
		return ERR_DB;
	ret = owner_of(conn, kind, name, &o, err);
	if (!ret)
		ret = prepare(conn, &o,
			      "DELETE FROM %s WHERE %s = ?1 AND key = ?2", &st,
			      err);
	for (i = 0; !ret && i < n; i++) {
		bind_owner(st, 1, &o);
		db__bind_text(st, 2, keys[i]);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db__error(conn, "cannot delete tag", err);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

int db_tags_list(struct db *db, enum db_tag_kind kind, const char *name,
		 const char *after_key, size_t limit, struct db_tag **out,
		 size_t *n, int *more, struct buf *err)
{
	void *handle;
	sqlite3 *conn = db__reader_acquire(db, &handle);
	sqlite3_stmt *st = NULL;
	struct db_tag *tags = NULL;
	size_t cap = 0, got = 0;
	struct owner o;
	int ret;
	int rc = SQLITE_DONE;

	*out = NULL;
	*n = 0;
	*more = 0;
	ret = owner_of(conn, kind, name, &o, err);
	if (!ret)
		ret = prepare(conn, &o,
			      "SELECT key, value FROM %s WHERE %s = ?1 AND "
			      "key > ?2 ORDER BY key LIMIT ?3",
			      &st, err);
	if (!ret) {
		bind_owner(st, 1, &o);
		db__bind_text(st, 2, after_key ? after_key : "");
		sqlite3_bind_int64(st, 3, (sqlite3_int64)limit + 1);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (got == limit) {
				*more = 1;
				break;
			}
			ALLOC_GROW(tags, got + 1, cap);
			tags[got].key = db__col_dup(st, 0);
			tags[got].value = db__col_dup(st, 1);
			got++;
		}
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			ret = db__error(conn, "cannot list tags", err);
	}
	sqlite3_finalize(st);
	db__reader_release(db, handle);
	if (ret) {
		db_tags_free(tags, got);
		return ret;
	}
	*out = tags;
	*n = got;
	return 0;
}
