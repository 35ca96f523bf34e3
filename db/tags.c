/*
 * Tags of training jobs (AddTags, ListTags, DeleteTags, and those given at
 * CreateTrainingJob). They live in job_tags, deleted with their job.
 */
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

/* The id of job name on conn: 0, ERR_NOTFOUND or ERR_DB. */
static int job_id(sqlite3 *conn, const char *name, int64_t *id,
		  struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	if (sqlite3_prepare_v2(conn, "SELECT id FROM jobs WHERE name = ?1", -1,
			       &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare job lookup", err);
	db__bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_DONE)
		ret = ERR_NOTFOUND;
	else
		ret = db__error(conn, "cannot read job", err);
	sqlite3_finalize(st);
	return ret;
}

int db__tags_insert(sqlite3 *conn, int64_t id, const struct db_tag *tags,
		    size_t n, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	size_t i;
	int ret = 0;

	if (!n)
		return 0;
	if (sqlite3_prepare_v2(conn,
			       "INSERT INTO job_tags(job_id, key, value) "
			       "VALUES (?1, ?2, ?3) ON CONFLICT(job_id, key) "
			       "DO UPDATE SET value = excluded.value",
			       -1, &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare tag insert", err);
	for (i = 0; i < n && !ret; i++) {
		sqlite3_bind_int64(st, 1, id);
		db__bind_text(st, 2, tags[i].key);
		db__bind_text(st, 3, tags[i].value);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db__error(conn, "cannot insert tag", err);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return ret;
}

static int count_tags(sqlite3 *conn, int64_t id, size_t *n, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;

	if (sqlite3_prepare_v2(conn,
			       "SELECT count(*) FROM job_tags WHERE job_id = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare tag count", err);
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW)
		*n = (size_t)sqlite3_column_int64(st, 0);
	else
		ret = db__error(conn, "cannot count tags", err);
	sqlite3_finalize(st);
	return ret;
}

int db_tags_add(struct db *db, const char *job, const struct db_tag *tags,
		size_t n, size_t max_total, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	int64_t id = 0;
	size_t total = 0;
	int ret;

	if (!conn)
		return ERR_DB;
	ret = job_id(conn, job, &id, err);
	if (!ret)
		ret = db__tags_insert(conn, id, tags, n, err);
	if (!ret)
		ret = count_tags(conn, id, &total, err);
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

int db_tags_delete(struct db *db, const char *job, char *const *keys,
		   size_t n, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st = NULL;
	int64_t id = 0;
	size_t i;
	int ret;

	if (!conn)
		return ERR_DB;
	ret = job_id(conn, job, &id, err);
	if (!ret && sqlite3_prepare_v2(conn,
				       "DELETE FROM job_tags "
				       "WHERE job_id = ?1 AND key = ?2",
				       -1, &st, NULL) != SQLITE_OK)
		ret = db__error(conn, "cannot prepare tag delete", err);
	for (i = 0; !ret && i < n; i++) {
		sqlite3_bind_int64(st, 1, id);
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

int db_tags_list(struct db *db, const char *job, const char *after_key,
		 size_t limit, struct db_tag **out, size_t *n, int *more,
		 struct buf *err)
{
	void *handle;
	sqlite3 *conn = db__reader_acquire(db, &handle);
	sqlite3_stmt *st = NULL;
	struct db_tag *tags = NULL;
	size_t cap = 0, got = 0;
	int64_t id = 0;
	int ret;
	int rc = SQLITE_DONE;

	*out = NULL;
	*n = 0;
	*more = 0;
	ret = job_id(conn, job, &id, err);
	if (!ret && sqlite3_prepare_v2(conn,
				       "SELECT key, value FROM job_tags "
				       "WHERE job_id = ?1 AND key > ?2 "
				       "ORDER BY key LIMIT ?3",
				       -1, &st, NULL) != SQLITE_OK)
		ret = db__error(conn, "cannot prepare tag list", err);
	if (!ret) {
		sqlite3_bind_int64(st, 1, id);
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
