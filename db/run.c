#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db_internal.h"
#include "db/run.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define JOB_ID "(SELECT id FROM jobs WHERE name = ?1)"
/* The same, when ?7 (a uid, or NULL for any) names the job too. */
#define JOB_ID_UID \
	"(SELECT id FROM jobs WHERE name = ?1 AND (?7 IS NULL OR uid = ?7))"

void db_assignment_release(struct db_assignment *a)
{
	free(a->job);
	free(a->job_uid);
	free(a->host);
	free(a->action);
	free(a->phase);
	free(a->report_json);
	memset(a, 0, sizeof(*a));
}

void db_assignments_free(struct db_assignment *a, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		db_assignment_release(&a[i]);
	free(a);
}

/* Runs one prepared statement to completion; returns 0 or ERR_DB. */
static int run(sqlite3 *conn, sqlite3_stmt *st, const char *what,
	       struct buf *err)
{
	int rc = sqlite3_step(st);

	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : db__error(conn, what, err);
}

static sqlite3_stmt *prep(sqlite3 *conn, const char *sql, struct buf *err)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK) {
		db__error(conn, "cannot prepare", err);
		return NULL;
	}
	return st;
}

/*
 * One write statement in its own transaction, with up to five parameters
 * (binding a parameter the statement does not have is harmless). Returns the
 * number of changed rows or an error.
 */
static int write_one(struct db *db, const char *sql, const char *job,
		     int64_t a2, int64_t a3, const char *t4, int64_t a5,
		     struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st;
	int ret;
	int changes;

	if (!conn)
		return ERR_DB;
	st = prep(conn, sql, err);
	if (!st) {
		db__writer_end(db, 0, err);
		return ERR_DB;
	}
	db__bind_text(st, 1, job);
	sqlite3_bind_int64(st, 2, a2);
	sqlite3_bind_int64(st, 3, a3);
	db__bind_text(st, 4, t4);
	sqlite3_bind_int64(st, 5, a5);
	ret = run(conn, st, "cannot write", err);
	changes = sqlite3_changes(conn);
	ret = db__writer_end(db, ret == 0, err) ? ERR_DB : ret;
	return ret ? ret : changes;
}

int db_attempt_start(struct db *db, const char *job, int attempt,
		     int master_port, const char *const *hosts, size_t n,
		     int64_t now_ms, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	int ret;

	if (!conn)
		return ERR_DB;
	ret = db__attempt_insert(conn, job, attempt, master_port, hosts, n,
				 now_ms, err);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

int db__attempt_insert(sqlite3 *conn, const char *job, int attempt,
		       int master_port, const char *const *hosts, size_t n,
		       int64_t now_ms, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;
	size_t i;
	int rc;

	st = prep(conn,
		  "INSERT INTO attempts (job_id, attempt, master_port, "
		  "started_ms) VALUES (" JOB_ID ", ?2, ?3, ?4)",
		  err);
	if (!st) {
		ret = ERR_DB;
		goto out;
	}
	db__bind_text(st, 1, job);
	sqlite3_bind_int(st, 2, attempt);
	sqlite3_bind_int(st, 3, master_port);
	sqlite3_bind_int64(st, 4, now_ms);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc == SQLITE_CONSTRAINT) {
		/* NULL job_id (unknown job) or a duplicate attempt. */
		ret = sqlite3_extended_errcode(conn) ==
				      SQLITE_CONSTRAINT_NOTNULL ?
			      ERR_NOTFOUND :
			      ERR_CONFLICT;
		goto out;
	}
	if (rc != SQLITE_DONE) {
		ret = db__error(conn, "cannot insert attempt", err);
		goto out;
	}
	for (i = 0; i < n; i++) {
		st = prep(conn,
			  "INSERT INTO assignments (job_id, attempt, "
			  "host_index, host, action, phase) VALUES (" JOB_ID
			  ", ?2, ?3, ?4, 'run', 'assigned')",
			  err);
		if (!st) {
			ret = ERR_DB;
			goto out;
		}
		db__bind_text(st, 1, job);
		sqlite3_bind_int(st, 2, attempt);
		sqlite3_bind_int(st, 3, (int)i);
		db__bind_text(st, 4, hosts[i]);
		ret = run(conn, st, "cannot insert assignment", err);
		if (ret)
			goto out;
	}
	st = prep(conn,
		  "UPDATE jobs SET attempt = ?2, waiting = 0 WHERE name = ?1",
		  err);
	if (!st) {
		ret = ERR_DB;
		goto out;
	}
	db__bind_text(st, 1, job);
	sqlite3_bind_int(st, 2, attempt);
	ret = run(conn, st, "cannot update job", err);
out:
	return ret;
}

int db_attempt_end(struct db *db, const char *job, int attempt,
		   const char *reason, int64_t now_ms, struct buf *err)
{
	int r = write_one(db,
			  "UPDATE attempts SET ended_ms = ?3, reason = ?4 "
			  "WHERE job_id = " JOB_ID " AND attempt = ?2 AND "
			  "ended_ms = 0",
			  job, attempt, now_ms, reason, 0, err);

	return r < 0 ? r : 0;
}

int db_attempt_set_planned(struct db *db, const char *job, int attempt,
			   enum db_attempt_planned how, struct buf *err)
{
	int r = write_one(
		db,
		"UPDATE attempts SET planned = ?3 WHERE job_id = " JOB_ID
		" AND attempt = ?2",
		job, attempt, (int64_t)how, NULL, 0, err);

	return r < 0 ? r : 0;
}

int db_attempt_planned(struct db *db, const char *job, int attempt,
		       int *planned, struct buf *err)
{
	void *h;
	sqlite3 *conn = db__reader_acquire(db, &h);
	sqlite3_stmt *st =
		prep(conn,
		     "SELECT planned FROM attempts WHERE job_id = " JOB_ID
		     " AND attempt = ?2",
		     err);
	int ret = ERR_DB;

	*planned = 0;
	if (st) {
		db__bind_text(st, 1, job);
		sqlite3_bind_int(st, 2, attempt);
		ret = 0;
		if (sqlite3_step(st) == SQLITE_ROW)
			*planned = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	db__reader_release(db, h);
	return ret;
}

/* A lookup's one row: its first column, found set. */
struct text_hit {
	char **text;
	int found;
};

static int text_row(sqlite3_stmt *st, void *arg)
{
	struct text_hit *hit = arg;

	*hit->text = db__col_dup(st, 0);
	hit->found = 1;
	return 1;
}

int db_job_owner(struct db *db, const char *job, char **owner, struct buf *err)
{
	struct db__query q = {
		.sql = "SELECT owner FROM jobs WHERE name = ?1",
		.prepare_what = "cannot prepare",
		.step_what = "cannot read job",
		.bind = db__bind_text1,
		.bind_arg = job,
	};
	struct text_hit hit = { owner, 0 };
	int ret;

	*owner = NULL;
	ret = db__rows(db, &q, text_row, &hit, err);
	if (!ret && !hit.found)
		ret = ERR_NOTFOUND;
	return ret;
}

int db_job_requeued_ms(struct db *db, const char *job, int64_t now_ms,
		       int64_t *ms, struct buf *err)
{
	void *h;
	sqlite3 *conn = db__reader_acquire(db, &h);
	sqlite3_stmt *st = prep(
		conn,
		"SELECT coalesce(sum(coalesce((SELECT n.started_ms FROM "
		"attempts n WHERE n.job_id = a.job_id AND n.attempt = "
		"a.attempt + 1), ?2) - a.ended_ms), 0) FROM attempts a WHERE "
		"a.job_id = " JOB_ID " AND a.planned = 2 AND a.ended_ms > 0",
		err);
	int ret = ERR_DB;

	*ms = 0;
	if (st) {
		db__bind_text(st, 1, job);
		sqlite3_bind_int64(st, 2, now_ms);
		if (sqlite3_step(st) == SQLITE_ROW) {
			*ms = sqlite3_column_int64(st, 0);
			ret = 0;
		} else {
			ret = db__error(conn, "cannot read attempts", err);
		}
		sqlite3_finalize(st);
	}
	db__reader_release(db, h);
	return ret;
}

int db_job_planned_moves(struct db *db, const char *job, int *n,
			 struct buf *err)
{
	void *h;
	sqlite3 *conn = db__reader_acquire(db, &h);
	sqlite3_stmt *st =
		prep(conn,
		     "SELECT count(*) FROM attempts WHERE job_id = " JOB_ID
		     " AND planned != 0",
		     err);
	int ret = ERR_DB;

	*n = 0;
	if (st) {
		db__bind_text(st, 1, job);
		if (sqlite3_step(st) == SQLITE_ROW) {
			*n = sqlite3_column_int(st, 0);
			ret = 0;
		} else {
			ret = db__error(conn, "cannot count attempts", err);
		}
		sqlite3_finalize(st);
	}
	db__reader_release(db, h);
	return ret;
}

int db_host_drain_set(struct db *db, const char *host, const char *reason,
		      int64_t now_ms, struct buf *err)
{
	int r = write_one(db,
			  "INSERT OR REPLACE INTO host_drains (host, reason, "
			  "since_ms) VALUES (?1, ?4, ?3)",
			  host, 0, now_ms, reason, 0, err);

	return r < 0 ? r : 0;
}

int db_host_drain_clear(struct db *db, const char *host, struct buf *err)
{
	int r = write_one(db, "DELETE FROM host_drains WHERE host = ?1", host,
			  0, 0, NULL, 0, err);

	return r < 0 ? r : r == 0 ? ERR_NOTFOUND : 0;
}

void db_host_drains_free(struct db_host_drain *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].host);
		free(v[i].reason);
	}
	free(v);
}

static int drain_row(sqlite3_stmt *st, void *arg)
{
	struct db_host_drain *d = db__vec_push(arg);

	d->host = db__col_dup(st, 0);
	d->reason = db__col_dup(st, 1);
	d->since_ms = sqlite3_column_int64(st, 2);
	return 0;
}

int db_host_drains_list(struct db *db, struct db_host_drain **out, size_t *n,
			struct buf *err)
{
	static const struct db__query q = {
		.sql = "SELECT host, reason, since_ms FROM host_drains ORDER "
		       "BY host",
		.prepare_what = "cannot prepare",
		.step_what = "cannot list drained hosts",
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, drain_row, &a, err);

	if (ret) {
		db_host_drains_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}

int db_attempt_set_failed_host(struct db *db, const char *job, int attempt,
			       const char *host, struct buf *err)
{
	int r = write_one(db,
			  "UPDATE attempts SET failed_host = ?4 WHERE "
			  "job_id = " JOB_ID " AND attempt = ?2",
			  job, attempt, 0, host, 0, err);

	return r < 0 ? r : 0;
}

int db_attempt_set_failed_host_left(struct db *db, const char *job,
				    int attempt, struct buf *err)
{
	int r = write_one(db,
			  "UPDATE attempts SET failed_host_left = 1 WHERE "
			  "job_id = " JOB_ID " AND attempt = ?2",
			  job, attempt, 0, NULL, 0, err);

	return r < 0 ? r : 0;
}

static void bind_since(sqlite3_stmt *st, const void *arg)
{
	sqlite3_bind_int64(st, 1, *(const int64_t *)arg);
}

int db_failed_hosts(struct db *db, int64_t since_ms, char ***hosts, size_t *n,
		    struct buf *err)
{
	const struct db__query q = {
		.sql = "SELECT DISTINCT failed_host FROM attempts WHERE "
		       "failed_host IS NOT NULL AND ended_ms >= ?1",
		.prepare_what = "cannot prepare",
		.step_what = "cannot list the hosts failures were laid at",
		.bind = bind_since,
		.bind_arg = &since_ms,
	};

	return db__names(db, &q, hosts, n, err);
}

/* A db__query bind: ?1 the job's name, ?2 the attempt. */
struct job_attempt {
	const char *job;
	int attempt;
};

static void bind_job_attempt(sqlite3_stmt *st, const void *arg)
{
	const struct job_attempt *k = arg;

	db__bind_text(st, 1, k->job);
	sqlite3_bind_int(st, 2, k->attempt);
}

int db_attempt_failed_host(struct db *db, const char *job, int attempt,
			   char **host, struct buf *err)
{
	struct job_attempt k = { job, attempt };
	struct db__query q = {
		.sql = "SELECT failed_host FROM attempts WHERE job_id = " JOB_ID
		       " AND attempt = ?2",
		.prepare_what = "cannot prepare",
		.step_what = "cannot read the attempt",
		.bind = bind_job_attempt,
		.bind_arg = &k,
	};
	struct text_hit hit = { host, 0 };

	*host = NULL;
	return db__rows(db, &q, text_row, &hit, err);
}

void db_host_failures_free(struct db_host_failure *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].job);
		free(v[i].reason);
	}
	free(v);
}

struct failures_args {
	const char *host;
	int64_t since_ms;
};

static void failures_bind(sqlite3_stmt *st, const void *arg)
{
	const struct failures_args *a = arg;

	db__bind_text(st, 1, a->host);
	sqlite3_bind_int64(st, 2, a->since_ms);
}

static int failure_row(sqlite3_stmt *st, void *arg)
{
	struct db_host_failure *f = db__vec_push(arg);

	f->job = db__col_dup(st, 0);
	f->attempt = sqlite3_column_int(st, 1);
	f->ended_ms = sqlite3_column_int64(st, 2);
	f->reason = db__col_dup(st, 3);
	f->elsewhere = sqlite3_column_int(st, 4);
	f->started_ms = sqlite3_column_int64(st, 5);
	f->left = sqlite3_column_int(st, 6);
	f->later_ended_well = sqlite3_column_int(st, 7);
	f->later_running_ms = sqlite3_column_int64(st, 8);
	return 0;
}

int db_host_failures(struct db *db, const char *host, int64_t since_ms,
		     struct db_host_failure **out, size_t *n, struct buf *err)
{
	struct failures_args args = { host, since_ms };
	const struct db__query q = {
		.sql = "SELECT j.name, a.attempt, a.ended_ms, a.reason, "
		       "EXISTS (SELECT 1 FROM attempts o WHERE o.job_id = "
		       "a.job_id AND o.failed_host IS NOT NULL AND "
		       "o.failed_host != ?1), a.started_ms, "
		       "a.failed_host_left, "
		       "EXISTS (SELECT 1 FROM attempts o WHERE o.job_id = "
		       "a.job_id AND o.attempt > a.attempt AND o.ended_ms > 0 "
		       "AND o.failed_host IS NULL), "
		       "COALESCE((SELECT MIN(o.started_ms) FROM attempts o "
		       "WHERE o.job_id = a.job_id AND o.attempt > a.attempt "
		       "AND o.ended_ms = 0), 0) "
		       "FROM attempts a JOIN jobs j ON j.id = a.job_id "
		       "WHERE a.failed_host = ?1 AND a.ended_ms >= ?2 "
		       "ORDER BY a.ended_ms, j.name",
		.prepare_what = "cannot prepare",
		.step_what = "cannot list the failures of a host",
		.bind = failures_bind,
		.bind_arg = &args,
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, failure_row, &a, err);

	if (ret) {
		db_host_failures_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}

int db_host_failures_forget(struct db *db, const char *host, struct buf *err)
{
	int r = write_one(db,
			  "UPDATE attempts SET failed_host = NULL WHERE "
			  "failed_host = ?1",
			  host, 0, 0, NULL, 0, err);

	return r < 0 ? r : 0;
}

int db_attempt_info(struct db *db, const char *job, int attempt, int *port,
		    int64_t *started_ms, struct buf *err)
{
	void *h;
	sqlite3 *conn = db__reader_acquire(db, &h);
	sqlite3_stmt *st =
		prep(conn,
		     "SELECT master_port, started_ms FROM attempts WHERE "
		     "job_id = " JOB_ID " AND attempt = ?2",
		     err);
	int ret = ERR_DB;

	if (st) {
		db__bind_text(st, 1, job);
		sqlite3_bind_int(st, 2, attempt);
		if (sqlite3_step(st) == SQLITE_ROW) {
			*port = sqlite3_column_int(st, 0);
			*started_ms = sqlite3_column_int64(st, 1);
			ret = 0;
		} else {
			ret = ERR_NOTFOUND;
		}
		sqlite3_finalize(st);
	}
	db__reader_release(db, h);
	return ret;
}

int db_assignment_hosts(struct db *db, char ***hosts, size_t *n,
			struct buf *err)
{
	static const struct db__query q = {
		.sql = "SELECT DISTINCT host FROM assignments INDEXED BY "
		       "assignments_by_host",
		.prepare_what = "cannot prepare",
		.step_what = "cannot list busy hosts",
	};

	return db__names(db, &q, hosts, n, err);
}

/* db_assignments_list()'s parameters. */
struct assignments_query {
	const char *job, *host;
	int attempt;
};

static void bind_assignments(sqlite3_stmt *st, const void *arg)
{
	const struct assignments_query *p = arg;

	db__bind_text(st, 1, p->job);
	db__bind_text(st, 2, p->host);
	sqlite3_bind_int(st, 3, p->attempt);
}

static int assignment_row(sqlite3_stmt *st, void *arg)
{
	struct db_assignment *a = db__vec_push(arg);

	a->job = db__col_dup(st, 0);
	a->attempt = sqlite3_column_int(st, 1);
	a->host_index = sqlite3_column_int(st, 2);
	a->host = db__col_dup(st, 3);
	a->action = db__col_dup(st, 4);
	a->phase = db__col_dup(st, 5);
	a->report_json = db__col_dup(st, 6);
	a->artifacts = sqlite3_column_int(st, 7);
	a->job_uid = db__col_dup(st, 8);
	return 0;
}

/*
 * Without a job the scan starts from the assignments, which only running
 * jobs have (CROSS JOIN keeps that order): the planner would otherwise walk
 * every job in the store on every pass.
 */
static const char *assignments_sql(const char *job, const char *host)
{
	/* One host's: through its index (an agent's work long-poll asks for
	 * these on every change of its desired state). */
	if (!job && host)
		return "SELECT j.name, a.attempt, a.host_index, a.host, "
		       "a.action, a.phase, a.report_json, a.artifacts, j.uid "
		       "FROM assignments a INDEXED BY assignments_by_host "
		       "CROSS JOIN jobs j ON j.id = a.job_id WHERE ?1 IS NULL AND "
		       "a.host = ?2 AND (?3 = 0 OR a.attempt = ?3) ORDER BY "
		       "j.creation_ms, j.id, a.attempt, a.host_index";
	if (job)
		return "SELECT j.name, a.attempt, a.host_index, a.host, "
		       "a.action, a.phase, a.report_json, a.artifacts, j.uid "
		       "FROM jobs "
		       "j JOIN assignments a ON a.job_id = j.id WHERE j.name = "
		       "?1 AND (?2 IS NULL OR a.host = ?2) AND (?3 = 0 OR "
		       "a.attempt = ?3) ORDER BY a.attempt, a.host_index";
	return "SELECT j.name, a.attempt, a.host_index, a.host, "
	       "a.action, a.phase, a.report_json, a.artifacts, j.uid "
	       "FROM assignments a CROSS JOIN jobs j ON j.id = a.job_id WHERE "
	       "?1 IS NULL AND (?2 IS NULL OR a.host = ?2) AND (?3 = 0 "
	       "OR a.attempt = ?3) ORDER BY j.creation_ms, j.id, "
	       "a.attempt, a.host_index";
}

int db_assignments_list(struct db *db, const char *job, const char *host,
			int attempt, struct db_assignment **out, size_t *n,
			struct buf *err)
{
	struct assignments_query p = { job, host, attempt };
	struct db__query q = {
		.sql = assignments_sql(job, host),
		.prepare_what = "cannot prepare",
		.step_what = "cannot list assignments",
		.bind = bind_assignments,
		.bind_arg = &p,
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, assignment_row, &a, err);

	if (ret) {
		db_assignments_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}

int db_assignments_set_action(struct db *db, const char *job, int attempt,
			      const char *action, struct buf *err)
{
	int r = write_one(
		db,
		"UPDATE assignments SET action = ?4 WHERE job_id = " JOB_ID
		" AND attempt = ?2",
		job, attempt, 0, action, 0, err);

	return r < 0 ? r : 0;
}

int db_assignment_report(struct db *db, const char *job, const char *job_uid,
			 int attempt, int host_index, const char *host,
			 const char *phase, const char *report_json,
			 struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st;
	int ret;
	int exists;

	if (!conn)
		return ERR_DB;
	st = prep(
		conn,
		"UPDATE assignments SET phase = ?4, report_json = ?5 WHERE "
		"job_id = " JOB_ID_UID " AND attempt = ?2 AND host_index = ?3 "
		"AND host = ?6 AND (phase IS NOT ?4 OR report_json IS NOT ?5)",
		err);
	if (!st) {
		db__writer_end(db, 0, err);
		return ERR_DB;
	}
	db__bind_text(st, 1, job);
	sqlite3_bind_int(st, 2, attempt);
	sqlite3_bind_int(st, 3, host_index);
	db__bind_text(st, 4, phase);
	db__bind_text(st, 5, report_json);
	db__bind_text(st, 6, host);
	db__bind_text(st, 7, job_uid);
	ret = run(conn, st, "cannot store report", err);
	if (!ret && sqlite3_changes(conn) > 0) {
		ret = 1;
	} else if (!ret) {
		st = prep(conn,
			  "SELECT 1 FROM assignments WHERE job_id = " JOB_ID_UID
			  " AND attempt = ?2 AND host_index = ?3 AND host = ?6",
			  err);
		exists = 0;
		if (st) {
			db__bind_text(st, 1, job);
			sqlite3_bind_int(st, 2, attempt);
			sqlite3_bind_int(st, 3, host_index);
			db__bind_text(st, 6, host);
			db__bind_text(st, 7, job_uid);
			exists = sqlite3_step(st) == SQLITE_ROW;
			sqlite3_finalize(st);
		}
		ret = exists ? 0 : ERR_NOTFOUND;
	}
	if (db__writer_end(db, ret >= 0, err))
		return ERR_DB;
	return ret;
}

int db_assignment_add_artifact(struct db *db, const char *job, int attempt,
			       int host_index, int bit, struct buf *err)
{
	int r = write_one(db,
			  "UPDATE assignments SET artifacts = artifacts | ?5 "
			  "WHERE job_id = " JOB_ID " AND attempt = ?2 AND "
			  "host_index = ?3",
			  job, attempt, host_index, NULL, bit, err);

	return r < 0 ? r : r == 0 ? ERR_NOTFOUND : 0;
}

int db_assignments_delete(struct db *db, const char *job, int attempt,
			  struct buf *err)
{
	int r = write_one(db,
			  "DELETE FROM assignments WHERE job_id = " JOB_ID
			  " AND (?2 = 0 OR attempt = ?2)",
			  job, attempt, 0, NULL, 0, err);

	return r < 0 ? r : 0;
}

int db_job_set_stop_reason(struct db *db, const char *job, const char *reason,
			   struct buf *err)
{
	int r = write_one(db,
			  "UPDATE jobs SET stop_reason = ?4 WHERE name = ?1",
			  job, 0, 0, reason, 0, err);

	return r < 0 ? r : r == 0 ? ERR_NOTFOUND : 0;
}

int db_log_stream_add(struct db *db, const char *job, const char *name,
		      int host_index, int64_t created_ms, struct buf *err)
{
	int r = write_one(db,
			  "INSERT OR IGNORE INTO log_streams (job_id, name, "
			  "host_index, created_ms) SELECT " JOB_ID
			  ", ?4, ?2, ?3",
			  job, host_index, created_ms, name, 0, err);

	return r < 0 ? r : 0;
}

void db_log_streams_free(struct db_log_stream *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(s[i].name);
	free(s);
}

static int log_stream_row(sqlite3_stmt *st, void *arg)
{
	struct db_log_stream *l = db__vec_push(arg);

	l->name = db__col_dup(st, 0);
	l->host_index = sqlite3_column_int(st, 1);
	l->created_ms = sqlite3_column_int64(st, 2);
	return 0;
}

int db_log_streams(struct db *db, const char *job, struct db_log_stream **out,
		   size_t *n, struct buf *err)
{
	struct db__query q = {
		.sql = "SELECT name, host_index, created_ms FROM log_streams "
		       "WHERE job_id = " JOB_ID " ORDER BY name",
		.prepare_what = "cannot prepare",
		.step_what = "cannot list log streams",
		.bind = db__bind_text1,
		.bind_arg = job,
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, log_stream_row, &a, err);

	if (ret) {
		db_log_streams_free(a.v, a.n);
		a.v = NULL;
		a.n = 0;
	}
	*out = a.v;
	*n = a.n;
	return ret;
}

int db_metrics_add(struct db *db, const char *job, const struct db_metric *m,
		   size_t n, struct buf *err)
{
	sqlite3 *conn;
	sqlite3_stmt *pt = NULL;
	sqlite3_stmt *fin = NULL;
	int ret = 0;
	size_t i;

	if (!n)
		return 0;
	conn = db__writer_begin(db, err);
	if (!conn)
		return ERR_DB;
	pt = prep(conn,
		  "INSERT INTO metric_points (job_id, name, ts_ms, value, "
		  "host) VALUES (" JOB_ID ", ?2, ?3, ?4, ?5)",
		  err);
	fin = prep(conn,
		   "INSERT INTO final_metrics (job_id, name, value, "
		   "timestamp_ms) VALUES (" JOB_ID ", ?2, ?4, ?3) ON CONFLICT "
		   "(job_id, name) DO UPDATE SET value = excluded.value, "
		   "timestamp_ms = excluded.timestamp_ms",
		   err);
	if (!pt || !fin) {
		ret = ERR_DB;
		goto out;
	}
	for (i = 0; i < n && !ret; i++) {
		sqlite3_stmt *sts[2] = { pt, fin };
		int k;

		for (k = 0; k < 2 && !ret; k++) {
			db__bind_text(sts[k], 1, job);
			db__bind_text(sts[k], 2, m[i].name);
			sqlite3_bind_int64(sts[k], 3, m[i].timestamp_ms);
			sqlite3_bind_double(sts[k], 4, m[i].value);
			if (!k)
				sqlite3_bind_int(sts[k], 5, m[i].host);
			if (sqlite3_step(sts[k]) != SQLITE_DONE)
				ret = db__error(conn, "cannot add metric", err);
			sqlite3_reset(sts[k]);
		}
	}
out:
	sqlite3_finalize(pt);
	sqlite3_finalize(fin);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

/*
 * Rows (name or NULL, value, ts_ms, host) of a metric query on a reader: ?1 the
 * job, ?2 the metric name (or NULL), ?3 and ?4 a time window when the
 * query has one.
 */
/* read_points()'s parameters. */
struct points_query {
	const char *job, *name;
	int64_t start_ms, end_ms;
};

static void bind_points(sqlite3_stmt *st, const void *arg)
{
	const struct points_query *p = arg;

	db__bind_text(st, 1, p->job);
	db__bind_text(st, 2, p->name);
	if (sqlite3_bind_parameter_count(st) >= 4) {
		sqlite3_bind_int64(st, 3, p->start_ms);
		sqlite3_bind_int64(st, 4, p->end_ms);
	}
}

static int point_row(sqlite3_stmt *st, void *arg)
{
	struct db_metric *m = db__vec_push(arg);

	m->name = db__col_dup(st, 0);
	m->value = sqlite3_column_double(st, 1);
	m->timestamp_ms = sqlite3_column_int64(st, 2);
	m->host = sqlite3_column_int(st, 3);
	return 0;
}

static int read_points(struct db *db, const char *sql, const char *what,
		       const char *job, const char *name, int64_t start_ms,
		       int64_t end_ms, struct db_metric **out, size_t *n,
		       struct buf *err)
{
	struct points_query p = { job, name, start_ms, end_ms };
	struct db__query q = {
		.sql = sql,
		.prepare_what = "cannot prepare",
		.step_what = what,
		.bind = bind_points,
		.bind_arg = &p,
	};
	struct db__vec a = DB__VEC_INIT(sizeof(**out));
	struct db_metric *v;
	int ret = db__rows(db, &q, point_row, &a, err);
	size_t i;

	v = a.v;
	if (ret) {
		for (i = 0; i < a.n; i++)
			free(v[i].name);
		free(v);
		v = NULL;
		a.n = 0;
	}
	*out = v;
	*n = a.n;
	return ret;
}

int db_metric_series(struct db *db, const char *job, const char *name,
		     struct db_metric **out, size_t *n, struct buf *err)
{
	return read_points(db,
			   "SELECT name, value, ts_ms, host FROM metric_points "
			   "WHERE job_id = " JOB_ID " AND (?2 IS NULL OR "
			   "name = ?2) ORDER BY name, ts_ms, rowid",
			   "cannot read metrics", job, name, 0, 0, out, n, err);
}

int db_metric_range(struct db *db, const char *job, const char *name,
		    int64_t start_ms, int64_t end_ms, struct db_metric **out,
		    size_t *n, struct buf *err)
{
	return read_points(db,
			   "SELECT NULL, value, ts_ms, host FROM metric_points "
			   "WHERE job_id = " JOB_ID " AND name = ?2 AND "
			   "ts_ms >= ?3 AND ts_ms < ?4 ORDER BY ts_ms, rowid",
			   "cannot read metrics", job, name, start_ms, end_ms,
			   out, n, err);
}

int db_metric_names(struct db *db, const char *job, const char *name,
		    struct db_metric **out, size_t *n, struct buf *err)
{
	return read_points(db,
			   "SELECT name, 0.0, MAX(ts_ms), 0 FROM metric_points "
			   "WHERE job_id = " JOB_ID " AND (?2 IS NULL OR "
			   "name = ?2) GROUP BY name ORDER BY name",
			   "cannot read metric names", job, name, 0, 0, out, n,
			   err);
}
