/*
 * The members of a replicated controller in the store (db/members.h).
 */
#include <stdlib.h>

#include <sqlite3.h>

#include "db/db_internal.h"
#include "db/members.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

static int member_row(sqlite3_stmt *st, void *arg)
{
	struct db_member *m = db__vec_push(arg);

	m->id = (unsigned)sqlite3_column_int64(st, 0);
	m->raft_address = db__col_dup(st, 1);
	m->api_url = db__col_dup(st, 2);
	return 0;
}

int db_members_list(struct db *db, struct db_member **out, size_t *n,
		    struct buf *err)
{
	static const struct db__query q = {
		.sql = "SELECT id, raft_address, api_url FROM ha_members "
		       "ORDER BY id",
		.prepare_what = "cannot prepare",
		.step_what = "cannot read the members",
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, member_row, &a, err);

	if (ret) {
		db_members_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}

/* One statement of the writer's, with ?1 the id and ?2, ?3 texts. */
static int write_member(struct db *db, const char *sql,
			const struct db_member *m, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st = NULL;
	int ret = 0;

	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare", err);
	} else {
		sqlite3_bind_int64(st, 1, m->id);
		if (m->raft_address) {
			db__bind_text(st, 2, m->raft_address);
			db__bind_text(st, 3, m->api_url);
		}
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db__error(conn, "cannot change the members", err);
		sqlite3_finalize(st);
	}
	if (db__writer_end(db, ret == 0, err) && !ret)
		ret = ERR_DB;
	return ret;
}

int db_member_put(struct db *db, const struct db_member *m, struct buf *err)
{
	return write_member(db,
			    "INSERT OR REPLACE INTO ha_members "
			    "(id, raft_address, api_url) VALUES (?1, ?2, ?3)",
			    m, err);
}

int db_member_delete(struct db *db, unsigned id, struct buf *err)
{
	struct db_member m = { id, NULL, NULL };

	return write_member(db, "DELETE FROM ha_members WHERE id = ?1", &m,
			    err);
}

void db_members_free(struct db_member *m, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(m[i].raft_address);
		free(m[i].api_url);
	}
	free(m);
}
