/*
 * AWS Batch's objects and service jobs in the store (db/batch.h).
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/batch.h"
#include "db/db_internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define OBJ_COLS                                                       \
	"arn, kind, name, queue_arn, policy_arn, policy_kind, state, " \
	"priority, share_decay_s, compute_reservation, strategy, "     \
	"borrow_limit, in_share_preemption, request_json, created_ms"

void db_batch_object_release(struct db_batch_object *o)
{
	free(o->arn);
	free(o->kind);
	free(o->name);
	free(o->queue_arn);
	free(o->policy_arn);
	free(o->policy_kind);
	free(o->state);
	free(o->strategy);
	free(o->in_share_preemption);
	free(o->request_json);
	memset(o, 0, sizeof(*o));
}

void db_batch_objects_free(struct db_batch_object *o, size_t n)
{
	size_t i;

	for (i = 0; o && i < n; i++)
		db_batch_object_release(&o[i]);
	free(o);
}

static void read_object(sqlite3_stmt *st, struct db_batch_object *o)
{
	memset(o, 0, sizeof(*o));
	o->arn = db__col_dup(st, 0);
	o->kind = db__col_dup(st, 1);
	o->name = db__col_dup(st, 2);
	o->queue_arn = db__col_dup(st, 3);
	o->policy_arn = db__col_dup(st, 4);
	o->policy_kind = db__col_dup(st, 5);
	o->state = db__col_dup(st, 6);
	o->priority = sqlite3_column_int(st, 7);
	o->decay_s = sqlite3_column_int64(st, 8);
	o->reservation = sqlite3_column_int(st, 9);
	o->strategy = db__col_dup(st, 10);
	o->borrow_limit = sqlite3_column_int64(st, 11);
	o->in_share_preemption = db__col_dup(st, 12);
	o->request_json = db__col_dup(st, 13);
	o->created_ms = sqlite3_column_int64(st, 14);
}

/* Runs sql with ?1 = arn, then for each i ?2 = texts[i], ?3 = ints[i] or
 * reals[i]. */
static int put_children(sqlite3 *conn, const char *sql, const char *arn,
			const char *const *texts, const int64_t *ints,
			const double *reals, size_t n, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	size_t i;
	int ret = 0;

	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare batch child", err);
	for (i = 0; i < n && !ret; i++) {
		db__bind_text(st, 1, arn);
		db__bind_text(st, 2, texts[i]);
		if (ints)
			sqlite3_bind_int64(st, 3, ints[i]);
		else if (reals)
			sqlite3_bind_double(st, 3, reals[i]);
		else
			sqlite3_bind_int64(st, 3, (int64_t)i + 1);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db__error(conn, "cannot store batch child", err);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return ret;
}

static int exec1(sqlite3 *conn, const char *sql, const char *arn,
		 struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;

	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare batch write", err);
	db__bind_text(st, 1, arn);
	if (sqlite3_step(st) != SQLITE_DONE)
		ret = db__error(conn, "cannot write batch object", err);
	sqlite3_finalize(st);
	return ret;
}

static void bind_object(sqlite3_stmt *st, const struct db_batch_object *o)
{
	db__bind_text(st, 1, o->arn);
	db__bind_text(st, 2, o->kind);
	db__bind_text(st, 3, o->name);
	db__bind_text(st, 4, o->queue_arn ? o->queue_arn : "");
	db__bind_text(st, 5, o->policy_arn);
	db__bind_text(st, 6, o->policy_kind);
	db__bind_text(st, 7, o->state ? o->state : "ENABLED");
	sqlite3_bind_int(st, 8, o->priority);
	sqlite3_bind_int64(st, 9, o->decay_s);
	sqlite3_bind_int(st, 10, o->reservation);
	db__bind_text(st, 11, o->strategy);
	sqlite3_bind_int64(st, 12, o->borrow_limit);
	db__bind_text(st, 13, o->in_share_preemption);
	db__bind_text(st, 14, o->request_json);
	sqlite3_bind_int64(st, 15, o->created_ms);
}

static int put_row(sqlite3 *conn, const struct db_batch_object *o, int create,
		   struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	rc = sqlite3_prepare_v2(
		conn,
		create ? "INSERT INTO batch_objects(" OBJ_COLS
			 ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
			 "?10, ?11, ?12, ?13, ?14, ?15)" :
			 "UPDATE batch_objects SET policy_arn = ?5, "
			 "policy_kind = ?6, state = ?7, priority = ?8, "
			 "share_decay_s = ?9, compute_reservation = ?10, "
			 "strategy = ?11, borrow_limit = ?12, "
			 "in_share_preemption = ?13, request_json = ?14 "
			 "WHERE arn = ?1 AND kind = ?2 AND name = ?3 AND "
			 "queue_arn = ?4",
		-1, &st, NULL);
	if (rc != SQLITE_OK)
		return db__error(conn, "cannot prepare batch object", err);
	bind_object(st, o);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT)
		ret = ERR_CONFLICT;
	else if (rc != SQLITE_DONE)
		ret = db__error(conn, "cannot store batch object", err);
	else if (!create && !sqlite3_changes(conn))
		ret = ERR_NOTFOUND;
	sqlite3_finalize(st);
	return ret;
}

static int put_all(sqlite3 *conn, const struct db_batch_object *o, int create,
		   struct buf *err)
{
	int ret = put_row(conn, o, create, err);

	if (!ret && !create)
		ret = exec1(conn, "DELETE FROM batch_capacity WHERE arn = ?1",
			    o->arn, err);
	if (!ret && !create)
		ret = exec1(conn,
			    "DELETE FROM batch_share_weights "
			    "WHERE policy_arn = ?1",
			    o->arn, err);
	if (!ret && !create)
		ret = exec1(conn,
			    "DELETE FROM batch_queue_envs WHERE queue_arn = ?1",
			    o->arn, err);
	if (!ret)
		ret = put_children(conn,
				   "INSERT INTO batch_capacity(arn, unit, "
				   "max_capacity) VALUES (?1, ?2, ?3)",
				   o->arn, o->limit_units, o->limit_max, NULL,
				   o->n_limits, err);
	if (!ret)
		ret = put_children(conn,
				   "INSERT INTO batch_share_weights("
				   "policy_arn, share_identifier, weight) "
				   "VALUES (?1, ?2, ?3)",
				   o->arn, o->weight_ids, NULL, o->weights,
				   o->n_weights, err);
	if (!ret)
		ret = put_children(conn,
				   "INSERT INTO batch_queue_envs(queue_arn, "
				   "env_arn, ord) VALUES (?1, ?2, ?3)",
				   o->arn, o->envs, NULL, NULL, o->n_envs, err);
	return ret;
}

int db_batch_object_put(struct db *db, const struct db_batch_object *o,
			int create, struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	int ret;

	if (!conn)
		return ERR_DB;
	ret = put_all(conn, o, create, err);
	if (db__writer_end(db, !ret, err) && !ret)
		ret = ERR_DB;
	return ret;
}

struct find_arg {
	const char *kind, *ident, *queue_arn, *after;
	int limit;
};

static void bind_find(sqlite3_stmt *st, const void *arg)
{
	const struct find_arg *a = arg;

	db__bind_text(st, 1, a->kind);
	db__bind_text(st, 2, a->ident);
	db__bind_text(st, 3, a->queue_arn);
	db__bind_text(st, 4, a->after);
	sqlite3_bind_int(st, 5, a->limit);
}

static int object_list_row(sqlite3_stmt *st, void *arg)
{
	read_object(st, db__vec_push(arg));
	return 0;
}

int db_batch_object_find(struct db *db, const char *kind, const char *ident,
			 const char *queue_arn, struct db_batch_object *o,
			 struct buf *err)
{
	struct find_arg a = { kind, ident, queue_arn, NULL, 1 };
	struct db__query q = {
		.sql = "SELECT " OBJ_COLS " FROM batch_objects WHERE "
		       "kind = ?1 AND (arn = ?2 OR (name = ?2 AND "
		       "queue_arn = COALESCE(?3, ''))) LIMIT 1",
		.prepare_what = "cannot prepare batch lookup",
		.step_what = "cannot read batch object",
		.bind = bind_find,
		.bind_arg = &a,
	};
	struct db__vec v = DB__VEC_INIT(sizeof(*o));
	int ret = db__rows(db, &q, object_list_row, &v, err);

	memset(o, 0, sizeof(*o));
	if (!ret && !v.n)
		ret = ERR_NOTFOUND;
	if (!ret)
		*o = *(struct db_batch_object *)v.v;
	else
		db_batch_objects_free(v.v, v.n);
	if (!ret)
		free(v.v);
	return ret;
}

int db_batch_object_list(struct db *db, const char *kind, const char *queue_arn,
			 const char *after_arn, int limit,
			 struct db_batch_object **out, size_t *n,
			 struct buf *err)
{
	struct find_arg a = { kind, NULL, queue_arn, after_arn, limit };
	struct db__query q = {
		.sql = "SELECT " OBJ_COLS " FROM batch_objects WHERE "
		       "kind = ?1 AND (?3 IS NULL OR queue_arn = ?3) AND "
		       "(?4 IS NULL OR arn > ?4) ORDER BY arn LIMIT ?5",
		.prepare_what = "cannot prepare batch list",
		.step_what = "cannot list batch objects",
		.bind = bind_find,
		.bind_arg = &a,
	};
	struct db__vec v = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &q, object_list_row, &v, err);

	if (ret) {
		db_batch_objects_free(v.v, v.n);
		v.v = NULL;
		v.n = 0;
	}
	*out = v.v;
	*n = v.n;
	return ret;
}

/* The first column of sql's first row (?1 = arn) as text into why, or 0. */
static int first_text(sqlite3 *conn, const char *sql, const char *arn,
		      struct buf *why, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int rc, found = 0;

	if (sqlite3_prepare_v2(conn, sql, -1, &st, NULL) != SQLITE_OK)
		return db__error(conn, "cannot prepare batch check", err);
	db__bind_text(st, 1, arn);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		(void)buf_adds(why, (const char *)sqlite3_column_text(st, 0));
		found = 1;
	} else if (rc != SQLITE_DONE) {
		found = db__error(conn, "cannot check batch object", err);
	}
	sqlite3_finalize(st);
	return found;
}

static const struct {
	const char *kind;
	const char *sql;
	const char *what;
} users[] = {
	{ "service-environment",
	  "SELECT queue_arn FROM batch_queue_envs WHERE env_arn = ?1",
	  "it is in the serviceEnvironmentOrder of job queue " },
	{ "scheduling-policy",
	  "SELECT arn FROM batch_objects WHERE kind = 'job-queue' AND "
	  "policy_arn = ?1",
	  "it is the scheduling policy of job queue " },
	{ "job-queue",
	  "SELECT arn FROM batch_objects WHERE kind = 'quota-share' AND "
	  "queue_arn = ?1",
	  "delete its quota shares first: " },
	{ "job-queue",
	  "SELECT s.job_id FROM service_jobs s JOIN jobs j ON j.name = "
	  "s.training_job WHERE s.queue_arn = ?1 AND j.status IN "
	  "('InProgress', 'Stopping')",
	  "it has unfinished service jobs, e.g. " },
};

static int delete_in(sqlite3 *conn, const char *kind, const char *arn,
		     struct buf *err)
{
	struct buf why = BUF_INIT;
	size_t i;
	int ret = 0;

	for (i = 0; i < sizeof(users) / sizeof(users[0]) && !ret; i++) {
		if (strcmp(users[i].kind, kind))
			continue;
		buf_reset(&why);
		ret = first_text(conn, users[i].sql, arn, &why, err);
		if (ret > 0) {
			(void)buf_addf(err, "%s%s", users[i].what, why.data);
			ret = ERR_CONFLICT;
		}
	}
	buf_release(&why);
	if (!ret)
		ret = exec1(conn, "DELETE FROM batch_objects WHERE arn = ?1",
			    arn, err);
	if (!ret && !sqlite3_changes(conn))
		ret = ERR_NOTFOUND;
	return ret;
}

int db_batch_object_delete(struct db *db, const char *kind, const char *arn,
			   struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	int ret;

	if (!conn)
		return ERR_DB;
	ret = delete_in(conn, kind, arn, err);
	if (db__writer_end(db, !ret, err) && !ret)
		ret = ERR_DB;
	return ret;
}

/* ------------------------------------------------------- service jobs */

#define JOB_COLS                                                            \
	"s.seq, s.job_id, s.arn, s.name, s.queue_arn, s.share_identifier, " \
	"s.quota_share, s.scheduling_priority, s.training_job, s.owner, "   \
	"s.created_ms, s.client_token, s.request_json, s.attempts, "        \
	"s.timeout_s, s.preemption_retries, j.arn, j.status, "              \
	"j.secondary_status, j.failure_reason, j.start_ms, j.end_ms"

#define JOB_FROM \
	" FROM service_jobs s LEFT JOIN jobs j ON j.name = s.training_job "

void db_service_job_release(struct db_service_job *j)
{
	free(j->job_id);
	free(j->arn);
	free(j->name);
	free(j->queue_arn);
	free(j->share_identifier);
	free(j->quota_share);
	free(j->training_job);
	free(j->owner);
	free(j->client_token);
	free(j->request_json);
	free(j->tj_arn);
	free(j->tj_status);
	free(j->tj_secondary);
	free(j->tj_reason);
	memset(j, 0, sizeof(*j));
}

void db_service_jobs_free(struct db_service_job *j, size_t n)
{
	size_t i;

	for (i = 0; j && i < n; i++)
		db_service_job_release(&j[i]);
	free(j);
}

static int job_row(sqlite3_stmt *st, void *arg)
{
	struct db_service_job *j = db__vec_push(arg);

	j->seq = sqlite3_column_int64(st, 0);
	j->job_id = db__col_dup(st, 1);
	j->arn = db__col_dup(st, 2);
	j->name = db__col_dup(st, 3);
	j->queue_arn = db__col_dup(st, 4);
	j->share_identifier = db__col_dup(st, 5);
	j->quota_share = db__col_dup(st, 6);
	j->priority = sqlite3_column_int(st, 7);
	j->training_job = db__col_dup(st, 8);
	j->owner = db__col_dup(st, 9);
	j->created_ms = sqlite3_column_int64(st, 10);
	j->client_token = db__col_dup(st, 11);
	j->request_json = db__col_dup(st, 12);
	j->attempts = sqlite3_column_int(st, 13);
	j->timeout_s = sqlite3_column_int64(st, 14);
	j->preemption_retries = sqlite3_column_int(st, 15);
	j->tj_arn = db__col_dup(st, 16);
	j->tj_status = db__col_dup(st, 17);
	j->tj_secondary = db__col_dup(st, 18);
	j->tj_reason = db__col_dup(st, 19);
	j->tj_start_ms = sqlite3_column_int64(st, 20);
	j->tj_end_ms = sqlite3_column_int64(st, 21);
	return 0;
}

int db__service_job_insert(struct db__conn *c, const struct db_service_job *j,
			   struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	if (sqlite3_prepare_v2(
		    c->db,
		    "INSERT INTO service_jobs(job_id, arn, name, queue_arn, "
		    "share_identifier, quota_share, scheduling_priority, "
		    "training_job, owner, created_ms, client_token, "
		    "request_json, attempts, timeout_s, preemption_retries) "
		    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
		    "?12, ?13, ?14, ?15)",
		    -1, &st, NULL) != SQLITE_OK)
		return db__error(c->db, "cannot prepare service job insert",
				 err);
	db__bind_text(st, 1, j->job_id);
	db__bind_text(st, 2, j->arn);
	db__bind_text(st, 3, j->name);
	db__bind_text(st, 4, j->queue_arn);
	db__bind_text(st, 5, j->share_identifier);
	db__bind_text(st, 6, j->quota_share);
	sqlite3_bind_int(st, 7, j->priority);
	db__bind_text(st, 8, j->training_job);
	db__bind_text(st, 9, j->owner ? j->owner : "");
	sqlite3_bind_int64(st, 10, j->created_ms);
	db__bind_text(st, 11, j->client_token);
	db__bind_text(st, 12, j->request_json);
	sqlite3_bind_int(st, 13, j->attempts);
	sqlite3_bind_int64(st, 14, j->timeout_s);
	sqlite3_bind_int(st, 15, j->preemption_retries);
	rc = sqlite3_step(st);
	if (rc == SQLITE_CONSTRAINT) {
		(void)buf_adds(err, "clientToken was used for another "
				    "submission at the same time");
		ret = ERR_CONFLICT;
	} else if (rc != SQLITE_DONE) {
		ret = db__error(c->db, "cannot insert service job", err);
	}
	sqlite3_finalize(st);
	return ret;
}

struct get_arg {
	const char *job_id, *owner, *token;
};

static void bind_get(sqlite3_stmt *st, const void *arg)
{
	const struct get_arg *a = arg;

	db__bind_text(st, 1, a->job_id);
	db__bind_text(st, 2, a->owner);
	db__bind_text(st, 3, a->token);
}

int db_service_job_get(struct db *db, const char *job_id, const char *owner,
		       const char *client_token, struct db_service_job *j,
		       struct buf *err)
{
	struct get_arg a = { job_id, owner ? owner : "", client_token };
	struct db__query q = {
		.sql = "SELECT " JOB_COLS JOB_FROM
		       "WHERE (?1 IS NOT NULL AND s.job_id = ?1) OR "
		       "(?1 IS NULL AND s.owner = ?2 AND s.client_token = ?3)",
		.prepare_what = "cannot prepare service job lookup",
		.step_what = "cannot read service job",
		.bind = bind_get,
		.bind_arg = &a,
	};
	struct db__vec v = DB__VEC_INIT(sizeof(*j));
	int ret = db__rows(db, &q, job_row, &v, err);

	memset(j, 0, sizeof(*j));
	if (!ret && !v.n)
		ret = ERR_NOTFOUND;
	if (ret) {
		db_service_jobs_free(v.v, v.n);
		return ret;
	}
	*j = *(struct db_service_job *)v.v;
	db_service_jobs_free(v.v, 0);
	return 0;
}

static void bind_list(sqlite3_stmt *st, const void *arg)
{
	const struct db_service_job_query *q = arg;
	size_t n = q->name ? strlen(q->name) : 0;

	db__bind_text(st, 1, q->queue_arn);
	db__bind_text(st, 2, q->owner);
	if (n && q->name[n - 1] == '*')
		sqlite3_bind_text(st, 3, q->name, (int)n - 1, SQLITE_TRANSIENT);
	else
		db__bind_text(st, 3, q->name);
	sqlite3_bind_int(st, 4, n && q->name[n - 1] == '*');
	sqlite3_bind_int64(st, 5, q->before_ms);
	sqlite3_bind_int64(st, 6, q->after_ms);
	sqlite3_bind_int64(st, 7, q->after_seq);
	sqlite3_bind_int(st, 8, q->limit);
}

int db_service_job_list(struct db *db, const struct db_service_job_query *q,
			struct db_service_job **out, size_t *n, struct buf *err)
{
	struct db__query dq = {
		.sql = "SELECT " JOB_COLS JOB_FROM
		       "WHERE (?1 IS NULL OR s.queue_arn = ?1) AND "
		       "(?2 IS NULL OR s.owner = ?2) AND (?3 IS NULL OR "
		       "(?4 = 0 AND s.name = ?3) OR (?4 = 1 AND "
		       "substr(s.name, 1, length(?3)) = ?3)) AND "
		       "(?5 = 0 OR s.created_ms < ?5) AND "
		       "(?6 = 0 OR s.created_ms > ?6) AND s.seq > ?7 "
		       "ORDER BY s.seq LIMIT ?8",
		.prepare_what = "cannot prepare service job list",
		.step_what = "cannot list service jobs",
		.bind = bind_list,
		.bind_arg = q,
	};
	struct db__vec v = DB__VEC_INIT(sizeof(**out));
	int ret = db__rows(db, &dq, job_row, &v, err);

	if (ret) {
		db_service_jobs_free(v.v, v.n);
		v.v = NULL;
		v.n = 0;
	}
	*out = v.v;
	*n = v.n;
	return ret;
}

int db_service_job_set_priority(struct db *db, const char *job_id, int priority,
				struct buf *err)
{
	sqlite3 *conn = db__writer_begin(db, err);
	sqlite3_stmt *st = NULL;
	int ret = 0;

	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn,
			       "UPDATE service_jobs SET scheduling_priority = "
			       "?2 WHERE job_id = ?1",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare priority update", err);
		goto out;
	}
	db__bind_text(st, 1, job_id);
	sqlite3_bind_int(st, 2, priority);
	if (sqlite3_step(st) != SQLITE_DONE)
		ret = db__error(conn, "cannot update priority", err);
	else if (!sqlite3_changes(conn))
		ret = ERR_NOTFOUND;
out:
	sqlite3_finalize(st);
	if (db__writer_end(db, !ret, err) && !ret)
		ret = ERR_DB;
	return ret;
}
