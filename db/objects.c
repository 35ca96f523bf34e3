/*
 * The replicated record of the embedded store's objects (db/objects.h).
 */
#include <stdlib.h>

#include <sqlite3.h>

#include "db/db_internal.h"
#include "db/objects.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define RECORD_SQL                                                        \
	"INSERT INTO s3_objects (bucket, key, size, etag, deleted, seq) " \
	"VALUES (?1, ?2, ?3, ?4, ?5, (SELECT COALESCE(MAX(seq), 0) + 1 "  \
	"FROM s3_objects)) "                                              \
	"ON CONFLICT (bucket, key) DO UPDATE SET size = excluded.size, "  \
	"etag = excluded.etag, deleted = excluded.deleted, seq = excluded.seq"

int db_objects_record(struct db *db, const struct db_object *c, size_t n,
		      struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st = NULL;
	size_t i;
	int ret = 0;

	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn, RECORD_SQL, -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare", err);
		goto out;
	}
	for (i = 0; i < n && !ret; i++) {
		sqlite3_reset(st);
		db__bind_text(st, 1, c[i].bucket);
		db__bind_text(st, 2, c[i].key);
		sqlite3_bind_int64(st, 3, c[i].size);
		db__bind_text(st, 4, c[i].etag ? c[i].etag : "");
		sqlite3_bind_int(st, 5, c[i].deleted);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db__error(conn, "cannot record an object", err);
	}
	sqlite3_finalize(st);
out:
	if (db__writer_end(db, ret == 0, err) && !ret)
		ret = ERR_DB;
	return ret;
}

static int object_row(sqlite3_stmt *st, void *arg)
{
	struct db_object *o = db__vec_push(arg);

	o->bucket = db__col_dup(st, 0);
	o->key = db__col_dup(st, 1);
	o->size = sqlite3_column_int64(st, 2);
	o->etag = db__col_dup(st, 3);
	o->deleted = sqlite3_column_int(st, 4);
	o->seq = sqlite3_column_int64(st, 5);
	return 0;
}

struct since {
	int64_t seq;
	size_t max;
};

static void bind_since(sqlite3_stmt *st, const void *arg)
{
	const struct since *s = arg;

	sqlite3_bind_int64(st, 1, s->seq);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)s->max);
}

int db_objects_since(struct db *db, int64_t seq, size_t max,
		     struct db_object **out, size_t *n, struct buf *err)
{
	struct since arg = { seq, max };
	struct db__query q = {
		.sql = "SELECT bucket, key, size, etag, deleted, seq "
		       "FROM s3_objects WHERE seq > ?1 ORDER BY seq LIMIT ?2",
		.prepare_what = "cannot prepare",
		.step_what = "cannot list objects",
		.bind = bind_since,
		.bind_arg = &arg,
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, object_row, &a, err);

	if (ret) {
		db_objects_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}

int64_t db_objects_last_seq(struct db *db)
{
	void *handle;
	sqlite3 *conn = db__reader_acquire(db, &handle);
	sqlite3_stmt *st = NULL;
	int64_t seq = -1;

	if (sqlite3_prepare_v2(conn,
			       "SELECT COALESCE(MAX(seq), 0) FROM "
			       "s3_objects",
			       -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		seq = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	db__reader_release(db, handle);
	return seq;
}

void db_objects_free(struct db_object *o, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(o[i].bucket);
		free(o[i].key);
		free(o[i].etag);
	}
	free(o);
}

static int log_ref_row(sqlite3_stmt *st, void *arg)
{
	struct db_log_ref *r = db__vec_push(arg);

	r->job = db__col_dup(st, 0);
	r->stream = db__col_dup(st, 1);
	return 0;
}

int db_log_refs(struct db *db, struct db_log_ref **out, size_t *n,
		struct buf *err)
{
	static const struct db__query q = {
		.sql = "SELECT j.name, s.name FROM log_streams s "
		       "JOIN jobs j ON j.id = s.job_id",
		.prepare_what = "cannot prepare",
		.step_what = "cannot list log streams",
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, log_ref_row, &a, err);

	if (ret) {
		db_log_refs_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}

void db_log_refs_free(struct db_log_ref *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(r[i].job);
		free(r[i].stream);
	}
	free(r);
}
