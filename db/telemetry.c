/*
 * The telemetry store (db/telemetry.h): one connection under a mutex.
 * Writes are small (a sample per host every few seconds) and reads are
 * rare (a graph, a CloudWatch query), so one connection serves both; WAL
 * with synchronous=OFF keeps a write to a memory copy and an occasional
 * flush, never an fsync per sample.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/telemetry.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

struct db_tm {
	sqlite3 *conn;
	pthread_mutex_t lock;
};

/*
 * Migrations of telemetry.db, applied in order; PRAGMA user_version holds
 * how many have run. Never edit a shipped step: append a new one.
 */
static const char *const migrations[] = {
	/* 1: host samples (gpus: "index:util:used:total" per GPU, comma
	 * separated) and per job and algo the figures of its host. */
	"CREATE TABLE host_samples ("
	" host TEXT NOT NULL,"
	" ts_ms INTEGER NOT NULL,"
	" cpu_percent REAL NOT NULL,"
	" cpus INTEGER NOT NULL,"
	" mem_used INTEGER NOT NULL,"
	" mem_total INTEGER NOT NULL,"
	" mem_limit INTEGER NOT NULL,"
	" disk_read INTEGER NOT NULL,"
	" disk_write INTEGER NOT NULL,"
	" net_rx INTEGER NOT NULL,"
	" net_tx INTEGER NOT NULL,"
	" fs_used INTEGER NOT NULL,"
	" fs_total INTEGER NOT NULL,"
	" gpus TEXT NOT NULL DEFAULT '',"
	" PRIMARY KEY (host, ts_ms)) WITHOUT ROWID;"
	"CREATE INDEX host_samples_by_time ON host_samples(ts_ms);"
	"CREATE TABLE job_samples ("
	" job TEXT NOT NULL,"
	" uid TEXT NOT NULL DEFAULT '',"
	" algo TEXT NOT NULL,"
	" ts_ms INTEGER NOT NULL,"
	" attempt INTEGER NOT NULL,"
	" host TEXT NOT NULL,"
	" cores_percent REAL NOT NULL,"
	" mem_percent REAL NOT NULL,"
	" disk_percent REAL NOT NULL,"
	" gpu_percent REAL NOT NULL,"
	" gpu_mem_percent REAL NOT NULL,"
	" cpu_percent REAL NOT NULL,"
	" rss_bytes INTEGER NOT NULL,"
	" PRIMARY KEY (job, uid, algo, ts_ms)) WITHOUT ROWID;"
	"CREATE INDEX job_samples_by_time ON job_samples(ts_ms);",
	/* 2: the host's CPUs in a job row, for its CPU use of all cores
	 * (0: a row stored before). */
	"ALTER TABLE job_samples ADD COLUMN cpus INTEGER NOT NULL DEFAULT 0;",
};

#define N_MIGRATIONS ((int)ARRAY_SIZE(migrations))

_Static_assert(N_MIGRATIONS == DB_TM_SCHEMA_LATEST,
	       "DB_TM_SCHEMA_LATEST must name the last migration");

static int fail(sqlite3 *conn, const char *what, struct buf *err)
{
	(void)buf_addf(err, "telemetry store: %s: %s", what,
		       conn ? sqlite3_errmsg(conn) : "out of memory");
	return ERR_DB;
}

static int migrate(sqlite3 *conn, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char pragma[64];
	int version = 0, i;

	if (sqlite3_prepare_v2(conn, "PRAGMA user_version", -1, &st, NULL) !=
	    SQLITE_OK)
		return fail(conn, "cannot read the schema version", err);
	if (sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version > N_MIGRATIONS) {
		(void)buf_addf(err,
			       "telemetry store: schema version %d is newer "
			       "than this build's %d",
			       version, N_MIGRATIONS);
		return ERR_DB;
	}
	for (i = version; i < N_MIGRATIONS; i++) {
		(void)snprintf(pragma, sizeof(pragma),
			       "PRAGMA user_version = %d", i + 1);
		if (sqlite3_exec(conn, "BEGIN", NULL, NULL, NULL) ||
		    sqlite3_exec(conn, migrations[i], NULL, NULL, NULL) ||
		    sqlite3_exec(conn, pragma, NULL, NULL, NULL) ||
		    sqlite3_exec(conn, "COMMIT", NULL, NULL, NULL)) {
			int ret = fail(conn, "migration failed", err);

			sqlite3_exec(conn, "ROLLBACK", NULL, NULL, NULL);
			return ret;
		}
	}
	return 0;
}

int db_tm_open(const char *path, struct db_tm **out, struct buf *err)
{
	struct db_tm *t = xcalloc(1, sizeof(*t));
	int ret;

	*out = NULL;
	if (sqlite3_open_v2(path, &t->conn,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				    SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		ret = fail(t->conn, "cannot open", err);
		goto fail;
	}
	if (sqlite3_exec(t->conn,
			 "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; "
			 "PRAGMA busy_timeout=10000;",
			 NULL, NULL, NULL) != SQLITE_OK) {
		ret = fail(t->conn, "cannot set up", err);
		goto fail;
	}
	ret = migrate(t->conn, err);
	if (ret)
		goto fail;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
fail:
	sqlite3_close(t->conn);
	free(t);
	return ret;
}

void db_tm_close(struct db_tm *t)
{
	if (!t)
		return;
	sqlite3_close(t->conn);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static void gpus_text(const struct tm_host_sample *s, struct buf *out)
{
	size_t i;

	buf_reset(out);
	for (i = 0; i < s->n_gpus; i++)
		(void)buf_addf(out, "%s%d:%.1f:%lld:%lld", i ? "," : "",
			       s->gpus[i].index, s->gpus[i].util_percent,
			       (long long)s->gpus[i].mem_used,
			       (long long)s->gpus[i].mem_total);
}

static void gpus_parse(const char *text, struct tm_host_sample *s)
{
	const char *p;
	size_t n = 1;

	if (!text || !*text) {
		s->gpus = xcalloc(1, sizeof(*s->gpus));
		return;
	}
	for (p = text; *p; p++)
		n += *p == ',';
	s->gpus = xcalloc(n + 1, sizeof(*s->gpus));
	for (p = text; p && *p && s->n_gpus < n;) {
		struct tm_gpu_sample *g = &s->gpus[s->n_gpus];
		long long used, total;

		if (sscanf(p, "%d:%lf:%lld:%lld", &g->index, &g->util_percent,
			   &used, &total) == 4) {
			g->mem_used = used;
			g->mem_total = total;
			s->n_gpus++;
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
}

static int add_locked(struct db_tm *t, const char *host,
		      const struct tm_host_sample *s, size_t n, struct buf *err)
{
	sqlite3_stmt *hs = NULL, *js = NULL;
	struct buf gpus = BUF_INIT;
	size_t i, k;
	int ret = 0;

	if (sqlite3_prepare_v2(
		    t->conn,
		    "INSERT OR IGNORE INTO host_samples (host, ts_ms, "
		    "cpu_percent, cpus, mem_used, mem_total, mem_limit, "
		    "disk_read, disk_write, net_rx, net_tx, fs_used, fs_total, "
		    "gpus) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
		    "?11, ?12, ?13, ?14)",
		    -1, &hs, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(
		    t->conn,
		    "INSERT OR IGNORE INTO job_samples (job, uid, algo, ts_ms, "
		    "attempt, host, cores_percent, mem_percent, disk_percent, "
		    "gpu_percent, gpu_mem_percent, cpu_percent, rss_bytes, "
		    "cpus) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
		    "?11, ?12, ?13, ?14)",
		    -1, &js, NULL) != SQLITE_OK) {
		ret = fail(t->conn, "cannot prepare", err);
		goto out;
	}
	for (i = 0; i < n && !ret; i++) {
		const struct tm_host_sample *x = &s[i];

		gpus_text(x, &gpus);
		sqlite3_bind_text(hs, 1, host, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(hs, 2, x->ts_ms);
		sqlite3_bind_double(hs, 3, x->cpu_percent);
		sqlite3_bind_int(hs, 4, x->cpus);
		sqlite3_bind_int64(hs, 5, x->mem_used);
		sqlite3_bind_int64(hs, 6, x->mem_total);
		sqlite3_bind_int64(hs, 7, x->mem_limit);
		sqlite3_bind_int64(hs, 8, x->disk_read);
		sqlite3_bind_int64(hs, 9, x->disk_write);
		sqlite3_bind_int64(hs, 10, x->net_rx);
		sqlite3_bind_int64(hs, 11, x->net_tx);
		sqlite3_bind_int64(hs, 12, x->fs_used);
		sqlite3_bind_int64(hs, 13, x->fs_total);
		sqlite3_bind_text(hs, 14, gpus.data, (int)gpus.len,
				  SQLITE_TRANSIENT);
		if (sqlite3_step(hs) != SQLITE_DONE)
			ret = fail(t->conn, "cannot add a host sample", err);
		sqlite3_reset(hs);
		for (k = 0; k < x->n_ranks && !ret; k++) {
			const struct tm_rank_sample *r = &x->ranks[k];

			sqlite3_bind_text(js, 1, r->job, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(js, 2, r->job_uid ? r->job_uid : "",
					  -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(js, 3, r->algo, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(js, 4, x->ts_ms);
			sqlite3_bind_int(js, 5, r->attempt);
			sqlite3_bind_text(js, 6, host, -1, SQLITE_TRANSIENT);
			sqlite3_bind_double(js, 7,
					    tm_host_sample_cores_percent(x));
			sqlite3_bind_double(js, 8,
					    tm_host_sample_mem_percent(x));
			sqlite3_bind_double(js, 9,
					    tm_host_sample_disk_percent(x));
			sqlite3_bind_double(js, 10,
					    tm_host_sample_gpu_percent(x));
			sqlite3_bind_double(js, 11,
					    tm_host_sample_gpu_mem_percent(x));
			sqlite3_bind_double(js, 12, r->cpu_percent);
			sqlite3_bind_int64(js, 13, r->rss_bytes);
			sqlite3_bind_int(js, 14, x->cpus);
			if (sqlite3_step(js) != SQLITE_DONE)
				ret = fail(t->conn, "cannot add a job sample",
					   err);
			sqlite3_reset(js);
		}
	}
out:
	sqlite3_finalize(hs);
	sqlite3_finalize(js);
	buf_release(&gpus);
	return ret;
}

int db_tm_add(struct db_tm *t, const char *host, const struct tm_host_sample *s,
	      size_t n, struct buf *err)
{
	int ret;

	if (!n)
		return 0;
	pthread_mutex_lock(&t->lock);
	if (sqlite3_exec(t->conn, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		ret = fail(t->conn, "cannot begin", err);
	} else {
		ret = add_locked(t, host, s, n, err);
		if (!ret && sqlite3_exec(t->conn, "COMMIT", NULL, NULL, NULL) !=
				    SQLITE_OK)
			ret = fail(t->conn, "cannot commit", err);
		if (ret)
			sqlite3_exec(t->conn, "ROLLBACK", NULL, NULL, NULL);
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int db_tm_hosts(struct db_tm *t, int64_t since_ms, char ***hosts,
		int64_t **newest_ms, int64_t **count, size_t *n,
		struct buf *err)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0, cap2 = 0, cap3 = 0;
	int ret = 0, rc;

	*hosts = NULL;
	*newest_ms = NULL;
	*count = NULL;
	*n = 0;
	pthread_mutex_lock(&t->lock);
	if (sqlite3_prepare_v2(t->conn,
			       "SELECT host, MAX(ts_ms), COUNT(*) FROM "
			       "host_samples WHERE ts_ms >= ?1 GROUP BY host",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = fail(t->conn, "cannot prepare", err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, since_ms);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ALLOC_GROW(*hosts, *n + 1, cap);
		ALLOC_GROW(*newest_ms, *n + 1, cap2);
		ALLOC_GROW(*count, *n + 1, cap3);
		(*hosts)[*n] =
			xstrdup((const char *)sqlite3_column_text(st, 0));
		(*count)[*n] = sqlite3_column_int64(st, 2);
		(*newest_ms)[(*n)++] = sqlite3_column_int64(st, 1);
	}
	if (rc != SQLITE_DONE)
		ret = fail(t->conn, "cannot list hosts", err);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int db_tm_host_range(struct db_tm *t, const char *host, int64_t start_ms,
		     int64_t end_ms, size_t limit, struct tm_host_sample **out,
		     size_t *n, int *truncated, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0, i;
	int ret = 0, rc;

	*out = NULL;
	*n = 0;
	*truncated = 0;
	pthread_mutex_lock(&t->lock);
	/* Newest first, so that a limit keeps the newest; reversed below. */
	if (sqlite3_prepare_v2(
		    t->conn,
		    "SELECT ts_ms, cpu_percent, cpus, mem_used, mem_total, "
		    "mem_limit, disk_read, disk_write, net_rx, net_tx, "
		    "fs_used, fs_total, gpus FROM host_samples WHERE host = ?1 "
		    "AND ts_ms >= ?2 AND ts_ms < ?3 ORDER BY ts_ms DESC "
		    "LIMIT ?4",
		    -1, &st, NULL) != SQLITE_OK) {
		ret = fail(t->conn, "cannot prepare", err);
		goto out;
	}
	sqlite3_bind_text(st, 1, host, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, start_ms);
	sqlite3_bind_int64(st, 3, end_ms);
	sqlite3_bind_int64(st, 4, (int64_t)limit + 1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct tm_host_sample *s;

		if (*n == limit) {
			*truncated = 1;
			continue;
		}
		ALLOC_GROW(*out, *n + 1, cap);
		s = &(*out)[(*n)++];
		memset(s, 0, sizeof(*s));
		s->ts_ms = sqlite3_column_int64(st, 0);
		s->cpu_percent = sqlite3_column_double(st, 1);
		s->cpus = sqlite3_column_int(st, 2);
		s->mem_used = sqlite3_column_int64(st, 3);
		s->mem_total = sqlite3_column_int64(st, 4);
		s->mem_limit = sqlite3_column_int64(st, 5);
		s->disk_read = sqlite3_column_int64(st, 6);
		s->disk_write = sqlite3_column_int64(st, 7);
		s->net_rx = sqlite3_column_int64(st, 8);
		s->net_tx = sqlite3_column_int64(st, 9);
		s->fs_used = sqlite3_column_int64(st, 10);
		s->fs_total = sqlite3_column_int64(st, 11);
		gpus_parse((const char *)sqlite3_column_text(st, 12), s);
		s->ranks = xcalloc(1, sizeof(*s->ranks));
	}
	if (rc != SQLITE_DONE)
		ret = fail(t->conn, "cannot read host samples", err);
	for (i = 0; i < *n / 2; i++) {
		struct tm_host_sample x = (*out)[i];

		(*out)[i] = (*out)[*n - 1 - i];
		(*out)[*n - 1 - i] = x;
	}
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int db_tm_job_range(struct db_tm *t, const char *job, const char *uid,
		    const char *algo, int64_t start_ms, int64_t end_ms,
		    struct db_tm_point **out, size_t *n, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int ret = 0, rc;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&t->lock);
	if (sqlite3_prepare_v2(
		    t->conn,
		    "SELECT ts_ms, cores_percent, mem_percent, disk_percent, "
		    "gpu_percent, gpu_mem_percent, cpu_percent, rss_bytes, "
		    "attempt, host, cpus FROM job_samples WHERE job = ?1 AND "
		    "(?2 IS NULL OR uid = ?2) AND algo = ?3 AND ts_ms >= ?4 "
		    "AND ts_ms < ?5 ORDER BY ts_ms",
		    -1, &st, NULL) != SQLITE_OK) {
		ret = fail(t->conn, "cannot prepare", err);
		goto out;
	}
	sqlite3_bind_text(st, 1, job, -1, SQLITE_TRANSIENT);
	if (uid)
		sqlite3_bind_text(st, 2, uid, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, algo, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, start_ms);
	sqlite3_bind_int64(st, 5, end_ms);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_tm_point *p;

		ALLOC_GROW(*out, *n + 1, cap);
		p = &(*out)[(*n)++];
		p->ts_ms = sqlite3_column_int64(st, 0);
		p->cores_percent = sqlite3_column_double(st, 1);
		p->mem_percent = sqlite3_column_double(st, 2);
		p->disk_percent = sqlite3_column_double(st, 3);
		p->gpu_percent = sqlite3_column_double(st, 4);
		p->gpu_mem_percent = sqlite3_column_double(st, 5);
		p->cpu_percent = sqlite3_column_double(st, 6);
		p->rss_bytes = sqlite3_column_int64(st, 7);
		p->attempt = sqlite3_column_int(st, 8);
		p->host = xstrdup((const char *)sqlite3_column_text(st, 9));
		p->cpus = sqlite3_column_int(st, 10);
	}
	if (rc != SQLITE_DONE)
		ret = fail(t->conn, "cannot read job samples", err);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void db_tm_points_free(struct db_tm_point *p, size_t n)
{
	size_t i;

	for (i = 0; p && i < n; i++)
		free(p[i].host);
	free(p);
}

int db_tm_job_algos(struct db_tm *t, const char *job, const char *uid,
		    char ***algos, int64_t **last_ms, size_t *n,
		    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0, cap2 = 0;
	int ret = 0, rc;

	*algos = NULL;
	*last_ms = NULL;
	*n = 0;
	pthread_mutex_lock(&t->lock);
	if (sqlite3_prepare_v2(t->conn,
			       "SELECT algo, MAX(ts_ms) FROM job_samples WHERE "
			       "job = ?1 AND (?2 IS NULL OR uid = ?2) GROUP BY "
			       "algo ORDER BY algo",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = fail(t->conn, "cannot prepare", err);
		goto out;
	}
	sqlite3_bind_text(st, 1, job, -1, SQLITE_TRANSIENT);
	if (uid)
		sqlite3_bind_text(st, 2, uid, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ALLOC_GROW(*algos, *n + 1, cap);
		ALLOC_GROW(*last_ms, *n + 1, cap2);
		(*algos)[*n] =
			xstrdup((const char *)sqlite3_column_text(st, 0));
		(*last_ms)[*n] = sqlite3_column_int64(st, 1);
		(*n)++;
	}
	if (rc != SQLITE_DONE)
		ret = fail(t->conn, "cannot list job samples", err);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int db_tm_prune(struct db_tm *t, int64_t host_before_ms, int64_t job_before_ms,
		struct buf *err)
{
	char sql[160];
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	(void)snprintf(sql, sizeof(sql),
		       "DELETE FROM host_samples WHERE ts_ms < %lld",
		       (long long)host_before_ms);
	if (sqlite3_exec(t->conn, sql, NULL, NULL, NULL) != SQLITE_OK)
		ret = fail(t->conn, "cannot prune host samples", err);
	else
		ret = sqlite3_changes(t->conn);
	(void)snprintf(sql, sizeof(sql),
		       "DELETE FROM job_samples WHERE ts_ms < %lld",
		       (long long)job_before_ms);
	if (ret >= 0 &&
	    sqlite3_exec(t->conn, sql, NULL, NULL, NULL) != SQLITE_OK)
		ret = fail(t->conn, "cannot prune job samples", err);
	else if (ret >= 0)
		ret += sqlite3_changes(t->conn);
	pthread_mutex_unlock(&t->lock);
	return ret;
}
