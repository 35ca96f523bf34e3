/*
 * Managed warm pools in the store (db/warmpool.h): the wp_* columns of
 * jobs, written with compare-and-set on wp_status so that two passes or a
 * pass and a request never both take one pool.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db_internal.h"
#include "db/warmpool.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

void db_warm_pools_free(struct db_warm_pool *p, size_t n)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		free(p[i].job);
		free(p[i].key);
		for (k = 0; k < p[i].n_hosts; k++)
			free(p[i].hosts[k]);
		free(p[i].hosts);
	}
	free(p);
}

/* Splits "a\nb\nc" into p->hosts. */
static void split_hosts(const char *s, struct db_warm_pool *p)
{
	size_t cap = 0;

	while (s && *s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);

		if (len) {
			ALLOC_GROW(p->hosts, p->n_hosts + 1, cap);
			p->hosts[p->n_hosts] = xmalloc(len + 1);
			memcpy(p->hosts[p->n_hosts], s, len);
			p->hosts[p->n_hosts++][len] = '\0';
		}
		s = nl ? nl + 1 : NULL;
	}
}

static int warm_pool_row(sqlite3_stmt *st, void *arg)
{
	struct db_warm_pool *p = db__vec_push(arg);

	p->job = db__col_dup(st, 0);
	p->key = db__col_dup(st, 1);
	split_hosts((const char *)sqlite3_column_text(st, 2), p);
	p->keep_alive_s = sqlite3_column_int(st, 3);
	p->since_ms = sqlite3_column_int64(st, 4);
	if (!p->key)
		p->key = xstrdup("");
	return 0;
}

int db_warm_pools_available(struct db *db, struct db_warm_pool **out, size_t *n,
			    struct buf *err)
{
	static const struct db__query q = {
		.sql = "SELECT name, wp_key, wp_hosts, wp_keep_alive_s, "
		       "wp_since_ms FROM jobs INDEXED BY jobs_warm_available "
		       "WHERE wp_status = 'Available' ORDER BY wp_since_ms, id",
		.prepare_what = "cannot prepare warm pools",
		.step_what = "cannot read warm pools",
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, warm_pool_row, &a, err);

	if (ret) {
		db_warm_pools_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}

/*
 * Runs sql on the writer's open transaction with ?1 job, ?2 text, ?3 int,
 * ?4 text; returns the number of rows changed or ERR_DB.
 */
static int exec_cas(sqlite3 *conn, const char *sql, const char *job,
		    const char *t2, int64_t i3, const char *t4, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare warm pool write", err);
	db__bind_text(st, 1, job);
	db__bind_text(st, 2, t2);
	sqlite3_bind_int64(st, 3, i3);
	db__bind_text(st, 4, t4);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db__error(conn, "cannot write warm pool", err);
	return sqlite3_changes(conn);
}

/* One compare-and-set in its own transaction: 0, ERR_CONFLICT, ERR_DB. */
static int write_cas(struct db *db, const char *sql, const char *job,
		     const char *t2, int64_t i3, const char *t4,
		     struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	int r;

	if (!conn)
		return ERR_DB;
	r = exec_cas(conn, sql, job, t2, i3, t4, err);
	r = r < 0 ? r : r == 0 ? ERR_CONFLICT : 0;
	if (db__writer_end(db, r == 0, err) && !r)
		r = ERR_DB;
	return r;
}

int db_warm_pool_end_job(struct db *db, const char *job,
			 const char *const *hosts, size_t n, int64_t now_ms,
			 struct buf *err)
{
	struct buf list = BUF_INIT;
	size_t i;
	int ret;

	for (i = 0; i < n; i++)
		(void)buf_addf(&list, "%s%s", i ? "\n" : "", hosts[i]);
	if (n)
		ret = write_cas(db,
				"UPDATE jobs SET wp_status = 'Available', "
				"wp_hosts = ?2, wp_since_ms = ?3 WHERE name = "
				"?1 AND wp_status = 'InUse'",
				job, list.data, now_ms, NULL, err);
	else
		ret = write_cas(db,
				"UPDATE jobs SET wp_status = 'Terminated', "
				"wp_end_ms = ?3 WHERE name = ?1 AND wp_status "
				"= 'InUse'",
				job, NULL, now_ms, NULL, err);
	buf_release(&list);
	return ret;
}

int db_warm_pool_terminate(struct db *db, const char *job, int64_t now_ms,
			   struct buf *err)
{
	return write_cas(db,
			 "UPDATE jobs SET wp_status = 'Terminated', wp_hosts "
			 "= NULL, wp_end_ms = ?3 WHERE name = ?1 AND "
			 "wp_status = 'Available'",
			 job, NULL, now_ms, NULL, err);
}

int db_attempt_start_warm(struct db *db, const char *job, int attempt,
			  int master_port, const char *const *hosts, size_t n,
			  int64_t now_ms, const char *pool, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	int ret;
	int r;

	if (!conn)
		return ERR_DB;
	r = exec_cas(conn,
		     "UPDATE jobs SET wp_status = 'Reused', wp_reused_by = ?2, "
		     "wp_hosts = NULL, wp_end_ms = ?3 WHERE name = ?1 AND "
		     "wp_status = 'Available'",
		     pool, job, now_ms, NULL, err);
	ret = r < 0 ? r : r == 0 ? ERR_CONFLICT : 0;
	if (!ret)
		ret = db__attempt_insert(conn, job, attempt, master_port, hosts,
					 n, now_ms, err);
	if (db__writer_end(db, ret == 0, err) && !ret)
		ret = ERR_DB;
	return ret;
}

int db_warm_pool_set_keep_alive(struct db *db, const char *job,
				const char *expect, int seconds,
				const char *request_json, int64_t now_ms,
				struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st = NULL;
	int terminate = !seconds && !strcmp(expect, "Available");
	int ret = 0;
	int rc;

	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(
		    conn,
		    terminate ?
			    "UPDATE jobs SET wp_keep_alive_s = ?3, request_json "
			    "= ?4, wp_status = 'Terminated', wp_hosts = NULL, "
			    "wp_end_ms = ?5 WHERE name = ?1 AND wp_status = ?2" :
			    "UPDATE jobs SET wp_keep_alive_s = ?3, request_json "
			    "= ?4 WHERE name = ?1 AND wp_status = ?2",
		    -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare keep-alive", err);
		goto out;
	}
	db__bind_text(st, 1, job);
	db__bind_text(st, 2, expect);
	sqlite3_bind_int(st, 3, seconds);
	db__bind_text(st, 4, request_json);
	if (terminate)
		sqlite3_bind_int64(st, 5, now_ms);
	rc = sqlite3_step(st);
	if (rc != SQLITE_DONE)
		ret = db__error(conn, "cannot set keep-alive", err);
	else if (!sqlite3_changes(conn))
		ret = ERR_CONFLICT;
out:
	sqlite3_finalize(st);
	if (db__writer_end(db, ret == 0, err) && !ret)
		ret = ERR_DB;
	return ret;
}
