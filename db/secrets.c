/*
 * The controller's secrets in the store (db/secrets.h).
 */
#include <stdlib.h>

#include <sqlite3.h>

#include "db/db_internal.h"
#include "db/secrets.h"
#include "common/err.h"
#include "common/banned.h"

/* Reads name's value on conn: 0, ERR_NOTFOUND or ERR_DB. */
static int read_secret(sqlite3 *conn, const char *name, char **out,
		       struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0, rc;

	*out = NULL;
	if (sqlite3_prepare_v2(conn,
			       "SELECT value FROM secrets WHERE name = ?1", -1,
			       &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare", err);
	db__bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = db__col_dup(st, 0);
	else if (rc == SQLITE_DONE)
		ret = ERR_NOTFOUND;
	else
		ret = db__error(conn, "cannot read a secret", err);
	sqlite3_finalize(st);
	if (!ret && !*out)
		ret = ERR_NOTFOUND;
	return ret;
}

int db_secret_get(struct db *db, const char *name, char **out, struct buf *err)
{
	void *handle;
	sqlite3 *conn = db__reader_acquire(db, &handle);
	int ret = read_secret(conn, name, out, err);

	db__reader_release(db, handle);
	return ret;
}

int db_secret_get_or_put(struct db *db, const char *name, const char *value,
			 char **out, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st = NULL;
	int ret = 0;

	*out = NULL;
	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn,
			       "INSERT OR IGNORE INTO secrets (name, value) "
			       "VALUES (?1, ?2)",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare", err);
		goto out;
	}
	db__bind_text(st, 1, name);
	db__bind_text(st, 2, value);
	if (sqlite3_step(st) != SQLITE_DONE)
		ret = db__error(conn, "cannot store a secret", err);
	sqlite3_finalize(st);
	if (!ret && read_secret(conn, name, out, err))
		ret = ERR_DB;
out:
	if (db__writer_end(db, ret == 0, err) && !ret)
		ret = ERR_DB;
	if (ret) {
		free(*out);
		*out = NULL;
	}
	return ret;
}
