/*
 * Replication of the store's writes (db/replica.h): the leader's writes
 * recorded as changesets of SQLite's session extension, the other members
 * applying them, and whole-store images for raft's snapshots.
 */
#define SQLITE_ENABLE_SESSION 1
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db.h"
#include "db/db_internal.h"
#include "db/replica.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* The node-local table: each member's own progress, never replicated. */
#define LOCAL_TABLE "replica_state"

static uint64_t applied_get(const struct db__replica *r)
{
	return __atomic_load_n(&r->applied, __ATOMIC_ACQUIRE);
}

static void applied_set(struct db__replica *r, uint64_t v)
{
	__atomic_store_n(&r->applied, v, __ATOMIC_RELEASE);
}

void db_replica_set_hook(struct db *db, const struct db_replica_hook *hook)
{
	struct db__replica *r = db__replica(db);

	if (hook) {
		r->hook = *hook;
		r->on = 1;
	} else {
		memset(&r->hook, 0, sizeof(r->hook));
		r->on = 0;
	}
}

uint64_t db_replica_applied(struct db *db)
{
	return applied_get(db__replica(db));
}

int db__replica_load(struct db *db, struct buf *err)
{
	sqlite3 *conn = db__writer_conn(db)->db;
	sqlite3_stmt *st = NULL;
	int ret = 0;

	if (sqlite3_prepare_v2(conn, "SELECT applied_index FROM " LOCAL_TABLE,
			       -1, &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot read the applied index", err);
	if (sqlite3_step(st) == SQLITE_ROW)
		applied_set(db__replica(db),
			    (uint64_t)sqlite3_column_int64(st, 0));
	else
		ret = db__error(conn, "cannot read the applied index", err);
	sqlite3_finalize(st);
	return ret;
}

/* Records every table's changes but the node-local one's. */
static int table_filter(void *arg, const char *table)
{
	(void)arg;
	return strcmp(table, LOCAL_TABLE) != 0;
}

int db_replica_check_tables(struct db *db, struct buf *err)
{
	static const char sql[] =
		"SELECT m.name FROM sqlite_master AS m WHERE m.type = 'table' "
		"AND m.name NOT LIKE 'sqlite_%' AND m.name != '" LOCAL_TABLE
		"' AND NOT EXISTS (SELECT 1 FROM pragma_table_info(m.name) "
		"AS t WHERE t.pk)";
	sqlite3 *conn = db__writer_hold(db);
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot list the tables", err);
		goto out;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		(void)buf_addf(err,
			       "table %s has no primary key: its changes "
			       "cannot be replicated",
			       (const char *)sqlite3_column_text(st, 0));
		ret = ERR_INVALID;
	} else if (rc != SQLITE_DONE) {
		ret = db__error(conn, "cannot list the tables", err);
	}
out:
	sqlite3_finalize(st);
	db__writer_unhold_clean(db);
	return ret;
}

/* Whether table (a name from sqlite_master) has a row. */
static int table_has_rows(sqlite3 *conn, const char *table, int *yes,
			  struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char *sql = sqlite3_mprintf("SELECT 1 FROM \"%w\" LIMIT 1", table);
	int rc;

	if (!sql || sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_free(sql);
		return db__error(conn, "cannot read a table", err);
	}
	sqlite3_free(sql);
	rc = sqlite3_step(st);
	*yes = rc == SQLITE_ROW;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ?
		       0 :
		       db__error(conn, "cannot read a table", err);
}

int db_replica_holds_rows(struct db *db, int *yes, struct buf *err)
{
	static const char sql[] =
		"SELECT name FROM sqlite_master WHERE type = 'table' AND "
		"name NOT LIKE 'sqlite_%' AND name != '" LOCAL_TABLE "'";
	struct db__conn *c = db__reader_get(db);
	sqlite3_stmt *st = NULL;
	int ret = 0;

	*yes = 0;
	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(c->db, "cannot list the tables", err);
		goto out;
	}
	while (!ret && !*yes && sqlite3_step(st) == SQLITE_ROW)
		ret = table_has_rows(c->db,
				     (const char *)sqlite3_column_text(st, 0),
				     yes, err);
out:
	sqlite3_finalize(st);
	db__reader_put(db, c);
	return ret;
}

int db__replica_begin(struct db *db, struct buf *err)
{
	struct db__replica *r = db__replica(db);
	sqlite3 *conn = db__writer_conn(db)->db;

	r->index = 0;
	r->proposed = 0;
	if (!r->on || r->applying)
		return 0;
	if (sqlite3session_create(conn, "main", &r->session) != SQLITE_OK) {
		r->session = NULL;
		return db__error(conn, "cannot record the write", err);
	}
	sqlite3session_table_filter(r->session, table_filter, NULL);
	if (sqlite3session_attach(r->session, NULL) != SQLITE_OK) {
		sqlite3session_delete(r->session);
		r->session = NULL;
		return db__error(conn, "cannot record the write", err);
	}
	return 0;
}

static int set_index(sqlite3 *conn, uint64_t index, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;

	if (sqlite3_prepare_v2(conn,
			       "UPDATE " LOCAL_TABLE " SET applied_index = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot record the applied index", err);
	sqlite3_bind_int64(st, 1, (sqlite3_int64)index);
	if (sqlite3_step(st) != SQLITE_DONE)
		ret = db__error(conn, "cannot record the applied index", err);
	sqlite3_finalize(st);
	return ret;
}

int db__replica_propose(struct db *db, struct buf *err)
{
	struct db__replica *r = db__replica(db);
	sqlite3 *conn = db__writer_conn(db)->db;
	void *cs = NULL;
	int len = 0;
	uint64_t index = 0;
	int ret;

	if (!r->session || sqlite3session_isempty(r->session))
		return 0;
	if (sqlite3session_changeset(r->session, &len, &cs) != SQLITE_OK)
		return db__error(conn, "cannot collect the write's changes",
				 err);
	/* Nothing more of this write is recorded: the index is local. */
	sqlite3session_delete(r->session);
	r->session = NULL;
	ret = len > 0 ? r->hook.propose(r->hook.arg, cs, (size_t)len, &index,
					err) :
			0;
	sqlite3_free(cs);
	if (ret || !len)
		return ret;
	r->index = index;
	r->proposed = 1;
	return set_index(conn, index, err);
}

int db__replica_end(struct db *db, int committed)
{
	struct db__replica *r = db__replica(db);
	int replicated = r->proposed && committed;

	if (r->session) {
		sqlite3session_delete(r->session);
		r->session = NULL;
	}
	if (r->index && committed)
		applied_set(r, r->index);
	if (r->proposed)
		r->hook.applied(r->hook.arg, r->index, committed);
	if (r->applying)
		sqlite3_exec(db__writer_conn(db)->db, "PRAGMA foreign_keys=ON",
			     NULL, NULL, NULL);
	r->applying = 0;
	r->proposed = 0;
	r->index = 0;
	return replicated;
}

struct apply_ctx {
	struct buf *err;
	int conflicts;
};

/* Any conflict means the store is not where the log says: stop. */
static int on_conflict(void *arg, int type, sqlite3_changeset_iter *it)
{
	struct apply_ctx *a = arg;
	const char *table = "?";
	int ncol = 0;
	int op = 0;
	int indirect = 0;

	(void)sqlite3changeset_op(it, &table, &ncol, &op, &indirect);
	if (!a->conflicts++)
		(void)buf_addf(a->err,
			       "the store diverged from the log: conflict %d "
			       "on table %s (operation %d)",
			       type, table, op);
	return SQLITE_CHANGESET_ABORT;
}

int db_replica_apply(struct db *db, uint64_t index, const void *changes,
		     size_t len, struct buf *err)
{
	struct db__replica *r = db__replica(db);
	struct apply_ctx a = { err, 0 };
	sqlite3 *conn;
	int ret = 0;

	if (index <= applied_get(r))
		return 0;
	conn = db__writer_begin_apply(db, err);
	if (!conn)
		return ERR_DB;
	if (len && sqlite3changeset_apply(conn, (int)len, (void *)changes, NULL,
					  on_conflict, &a) != SQLITE_OK)
		ret = a.conflicts ?
			      ERR_CONFLICT :
			      db__error(conn, "cannot apply changes", err);
	if (!ret)
		ret = set_index(conn, index, err);
	if (!ret)
		r->index = index;
	if (db__writer_end(db, ret == 0, err) && !ret)
		ret = ERR_DB;
	return ret;
}

int db_replica_snapshot(struct db *db, void **data, size_t *len,
			struct buf *err)
{
	struct db__conn *c = db__reader_get(db);
	sqlite3_int64 size = 0;
	unsigned char *img = NULL;
	int ret = 0;

	*data = NULL;
	*len = 0;
	/* One read transaction: the image is one consistent state. */
	if (sqlite3_exec(c->db, "BEGIN; SELECT count(*) FROM " LOCAL_TABLE ";",
			 NULL, NULL, NULL) != SQLITE_OK) {
		ret = db__error(c->db, "cannot read the store", err);
		goto out;
	}
	img = sqlite3_serialize(c->db, "main", &size, 0);
	if (!img || size <= 0) {
		ret = db__error(c->db, "cannot copy the store", err);
		goto out;
	}
	*data = xmalloc((size_t)size);
	memcpy(*data, img, (size_t)size);
	*len = (size_t)size;
out:
	sqlite3_free(img);
	if (!sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	db__reader_put(db, c);
	return ret;
}

/* The image as a database of its own, in memory. */
static int image_open(const void *data, size_t len, sqlite3 **out,
		      struct buf *err)
{
	unsigned char *copy;
	sqlite3 *mem = NULL;
	sqlite3_stmt *st = NULL;
	int ok;

	*out = NULL;
	if (len < 100 || memcmp(data, "SQLite format 3", 16)) {
		(void)buf_addf(err, "not a store image (%zu bytes)", len);
		return ERR_INVALID;
	}
	copy = sqlite3_malloc64(len);
	if (!copy || sqlite3_open(":memory:", &mem) != SQLITE_OK) {
		sqlite3_free(copy);
		sqlite3_close(mem);
		(void)buf_addf(err, "cannot open a store image: out of memory");
		return ERR_DB;
	}
	memcpy(copy, data, len);
	/* A WAL store's header says so; a memory database has no WAL. */
	copy[18] = 1;
	copy[19] = 1;
	if (sqlite3_deserialize(
		    mem, "main", copy, (sqlite3_int64)len, (sqlite3_int64)len,
		    SQLITE_DESERIALIZE_FREEONCLOSE |
			    SQLITE_DESERIALIZE_RESIZEABLE) != SQLITE_OK) {
		db__error(mem, "cannot read a store image", err);
		sqlite3_close(mem);
		return ERR_INVALID;
	}
	ok = sqlite3_prepare_v2(mem, "SELECT applied_index FROM " LOCAL_TABLE,
				-1, &st, NULL) == SQLITE_OK &&
	     sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (!ok) {
		db__error(mem, "not a store image", err);
		sqlite3_close(mem);
		return ERR_INVALID;
	}
	*out = mem;
	return 0;
}

int db_replica_restore(struct db *db, uint64_t index, const void *data,
		       size_t len, struct buf *err)
{
	sqlite3 *mem = NULL;
	sqlite3 *conn;
	sqlite3_backup *b;
	int ret = image_open(data, len, &mem, err);

	if (ret)
		return ret;
	conn = db__writer_hold(db);
	b = sqlite3_backup_init(conn, "main", mem, "main");
	if (!b) {
		ret = db__error(conn, "cannot restore the store", err);
		goto out;
	}
	if (sqlite3_backup_step(b, -1) != SQLITE_DONE)
		ret = db__error(conn, "cannot restore the store", err);
	if (sqlite3_backup_finish(b) != SQLITE_OK && !ret)
		ret = db__error(conn, "cannot restore the store", err);
	if (!ret && sqlite3_exec(conn, "PRAGMA journal_mode=WAL", NULL, NULL,
				 NULL) != SQLITE_OK)
		ret = db__error(conn, "cannot restore the store", err);
	if (!ret)
		ret = set_index(conn, index, err);
	if (!ret)
		applied_set(db__replica(db), index);
out:
	db__writer_unhold(db);
	sqlite3_close(mem);
	return ret;
}
