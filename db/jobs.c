/*
 * Jobs in the store: insert, get, state changes, delete, counts and the
 * reconciler's queue. Listing pages is list.c's; connections, locks and
 * commits are db.c's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db.h"
#include "db/db_internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * The statements db.c prepares on every connection. They live here, beside
 * the code that reads their columns by position (row_to_job(),
 * writer_find()).
 */
const char *const db__stmt_sql[ST_COUNT] = {
	[ST_GET_JOB] =
		"SELECT id, name, arn, status, secondary_status, "
		"failure_reason, model_artifacts, request_json, "
		"instance_type, instance_count, creation_ms, "
		"last_modified_ms, start_ms, end_ms, training_s, "
		"billable_s, spec_json, attempt, stop_reason, uid, owner, "
		"run_as, image, wp_status, wp_keep_alive_s, wp_key, "
		"wp_since_ms, wp_end_ms, wp_reused_by, rule_statuses "
		"FROM jobs WHERE name = ?1",
	[ST_GET_TRANSITIONS] =
		"SELECT status, start_ms, end_ms, message "
		"FROM transitions WHERE job_id = ?1 ORDER BY seq",
	[ST_GET_METRICS] =
		"SELECT name, value, timestamp_ms FROM final_metrics "
		"WHERE job_id = ?1 ORDER BY name",
	[ST_INSERT_JOB] =
		"INSERT INTO jobs (name, arn, status, "
		"secondary_status, request_json, instance_type, "
		"instance_count, creation_ms, last_modified_ms, "
		"spec_json, waiting, uid, owner, run_as, wp_status, "
		"wp_keep_alive_s, wp_key, rule_statuses) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, "
		"lower(hex(randomblob(8))), coalesce(?11, ''), ?12, "
		"CASE WHEN ?13 > 0 THEN 'InUse' END, ?13, ?14, ?15) "
		"RETURNING uid",
	[ST_INSERT_TRANSITION] =
		"INSERT INTO transitions (job_id, seq, status, "
		"start_ms, message) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_LAST_TRANSITION] = "SELECT seq, status FROM transitions WHERE "
			       "job_id = ?1 ORDER BY seq DESC LIMIT 1",
	[ST_CLOSE_TRANSITION] = "UPDATE transitions SET end_ms = ?3 WHERE "
				"job_id = ?1 AND seq = ?2",
	[ST_UPDATE_MESSAGE] = "UPDATE transitions SET message = ?3 WHERE "
			      "job_id = ?1 AND seq = ?2",
	[ST_INSERT_JOB_TAG] = "INSERT INTO job_tags (job_id, key, value) "
			      "VALUES (?1, ?2, ?3) ON CONFLICT(job_id, key) "
			      "DO UPDATE SET value = excluded.value",
	[ST_BEGIN] = "BEGIN",
	[ST_COMMIT] = "COMMIT",
};

void db_job_release(struct db_job *job)
{
	size_t i;

	free(job->name);
	free(job->uid);
	free(job->owner);
	free(job->run_as);
	free(job->image);
	free(job->arn);
	free(job->status);
	free(job->secondary_status);
	free(job->failure_reason);
	free(job->model_artifacts);
	free(job->request_json);
	free(job->spec_json);
	free(job->stop_reason);
	free(job->instance_type);
	free(job->wp_status);
	free(job->wp_key);
	free(job->wp_reused_by);
	free(job->rule_statuses);
	for (i = 0; i < job->n_transitions; i++) {
		free(job->transitions[i].status);
		free(job->transitions[i].message);
	}
	free(job->transitions);
	for (i = 0; i < job->n_metrics; i++)
		free(job->metrics[i].name);
	free(job->metrics);
	memset(job, 0, sizeof(*job));
}

/* What db_job_insert() hands its batch member. */
struct job_insert {
	struct db_job *job;
	const char *first_message;
	char **uid; /* NULL: not wanted */
};

/* The job row and its first transition, in the batch's savepoint. */
static int insert_job(struct db__conn *c, void *arg, struct buf *err)
{
	struct job_insert *in = arg;
	struct db_job *job = in->job;
	const char *first_message = in->first_message;
	sqlite3_stmt *st;
	size_t i;
	int rc;

	st = c->st[ST_INSERT_JOB];
	db__bind_text(st, 1, job->name);
	db__bind_text(st, 2, job->arn);
	db__bind_text(st, 3, job->status);
	db__bind_text(st, 4, job->secondary_status);
	db__bind_text(st, 5, job->request_json);
	db__bind_text(st, 6, job->instance_type);
	sqlite3_bind_int(st, 7, job->instance_count);
	sqlite3_bind_int64(st, 8, job->creation_ms);
	db__bind_text(st, 9, job->spec_json);
	sqlite3_bind_int(st, 10, job->waiting != 0);
	db__bind_text(st, 11, job->owner);
	db__bind_text(st, 12, job->run_as);
	sqlite3_bind_int(st, 13, job->wp_key ? job->keep_alive_s : 0);
	db__bind_text(st, 14, job->wp_key);
	db__bind_text(st, 15, job->rule_statuses);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		if (in->uid) {
			free(*in->uid);
			*in->uid = db__col_dup(st, 0);
		}
		rc = sqlite3_step(st);
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_CONSTRAINT)
		return ERR_CONFLICT;
	if (rc != SQLITE_DONE)
		return db__error(c->db, "cannot insert job", err);
	job->id = sqlite3_last_insert_rowid(c->db);
	job->last_modified_ms = job->creation_ms;
	st = c->st[ST_INSERT_TRANSITION];
	sqlite3_bind_int64(st, 1, job->id);
	sqlite3_bind_int(st, 2, 1);
	db__bind_text(st, 3, job->secondary_status);
	sqlite3_bind_int64(st, 4, job->creation_ms);
	db__bind_text(st, 5, first_message);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return db__error(c->db, "cannot insert transition", err);
	st = c->st[ST_INSERT_JOB_TAG];
	for (i = 0; i < job->n_tags; i++) {
		sqlite3_bind_int64(st, 1, job->id);
		db__bind_text(st, 2, job->tags[i].key);
		db__bind_text(st, 3, job->tags[i].value);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		if (rc != SQLITE_DONE)
			return db__error(c->db, "cannot insert tag", err);
	}
	return job->service ? db__service_job_insert(c, job->service, err) : 0;
}

int db_job_insert(struct db *db, struct db_job *job, const char *first_message,
		  struct buf *err)
{
	return db_job_insert_uid(db, job, first_message, NULL, err);
}

int db_job_insert_uid(struct db *db, struct db_job *job,
		      const char *first_message, char **uid, struct buf *err)
{
	struct job_insert in = { job, first_message, uid };
	int ret;

	if (uid)
		*uid = NULL;
	ret = db__batch_write(db, insert_job, &in, err);
	if (ret && uid) {
		free(*uid);
		*uid = NULL;
	}
	return ret;
}

static void row_to_job(sqlite3_stmt *st, struct db_job *j)
{
	j->id = sqlite3_column_int64(st, 0);
	j->name = db__col_dup(st, 1);
	j->arn = db__col_dup(st, 2);
	j->status = db__col_dup(st, 3);
	j->secondary_status = db__col_dup(st, 4);
	j->failure_reason = db__col_dup(st, 5);
	j->model_artifacts = db__col_dup(st, 6);
	j->request_json = db__col_dup(st, 7);
	j->instance_type = db__col_dup(st, 8);
	j->instance_count = sqlite3_column_int(st, 9);
	j->creation_ms = sqlite3_column_int64(st, 10);
	j->last_modified_ms = sqlite3_column_int64(st, 11);
	j->start_ms = sqlite3_column_int64(st, 12);
	j->end_ms = sqlite3_column_int64(st, 13);
	j->training_s = sqlite3_column_int64(st, 14);
	j->billable_s = sqlite3_column_int64(st, 15);
	j->spec_json = db__col_dup(st, 16);
	j->attempt = sqlite3_column_int(st, 17);
	j->stop_reason = db__col_dup(st, 18);
	j->uid = db__col_dup(st, 19);
	j->owner = db__col_dup(st, 20);
	j->run_as = db__col_dup(st, 21);
	j->image = db__col_dup(st, 22);
	j->wp_status = db__col_dup(st, 23);
	j->keep_alive_s = sqlite3_column_int(st, 24);
	j->wp_key = db__col_dup(st, 25);
	j->wp_since_ms = sqlite3_column_int64(st, 26);
	j->wp_end_ms = sqlite3_column_int64(st, 27);
	j->wp_reused_by = db__col_dup(st, 28);
	j->rule_statuses = db__col_dup(st, 29);
}

static int load_children(struct db__conn *c, struct db_job *j, struct buf *err)
{
	sqlite3_stmt *st = c->st[ST_GET_TRANSITIONS];
	size_t cap = 0;
	int rc;

	sqlite3_bind_int64(st, 1, j->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_transition *t;

		ALLOC_GROW(j->transitions, j->n_transitions + 1, cap);
		t = &j->transitions[j->n_transitions++];
		t->status = db__col_dup(st, 0);
		t->start_ms = sqlite3_column_int64(st, 1);
		t->end_ms = sqlite3_column_int64(st, 2);
		t->message = db__col_dup(st, 3);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return db__error(c->db, "cannot read transitions", err);
	st = c->st[ST_GET_METRICS];
	cap = 0;
	sqlite3_bind_int64(st, 1, j->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_metric *m;

		ALLOC_GROW(j->metrics, j->n_metrics + 1, cap);
		m = &j->metrics[j->n_metrics++];
		m->name = db__col_dup(st, 0);
		m->value = sqlite3_column_double(st, 1);
		m->timestamp_ms = sqlite3_column_int64(st, 2);
		m->host = 0;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return db__error(c->db, "cannot read metrics", err);
	return 0;
}

int db_job_get(struct db *db, const char *name, struct db_job *out,
	       struct buf *err)
{
	struct db__conn *c = db__reader_get(db);
	sqlite3_stmt *st = c->st[ST_GET_JOB];
	int ret = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	/*
	 * The job and its children in one read transaction: one consistent
	 * snapshot, and one round of WAL read locks instead of three.
	 */
	(void)sqlite3_step(c->st[ST_BEGIN]);
	sqlite3_reset(c->st[ST_BEGIN]);
	db__bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		row_to_job(st, out);
	else if (rc == SQLITE_DONE)
		ret = ERR_NOTFOUND;
	else
		ret = db__error(c->db, "cannot read job", err);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (!ret)
		ret = load_children(c, out, err);
	if (sqlite3_get_autocommit(c->db) == 0) {
		(void)sqlite3_step(c->st[ST_COMMIT]);
		sqlite3_reset(c->st[ST_COMMIT]);
	}
	db__reader_put(db, c);
	if (ret)
		db_job_release(out);
	return ret;
}

/* Loads id and current status inside the writer's transaction. */
static int writer_find(struct db__conn *c, const char *name, int64_t *id,
		       char **status, char **secondary, struct buf *err)
{
	sqlite3_stmt *st = c->st[ST_GET_JOB];
	int rc;
	int ret = 0;

	db__bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		*status = db__col_dup(st, 3);
		if (secondary)
			*secondary = db__col_dup(st, 4);
	} else if (rc == SQLITE_DONE) {
		ret = ERR_NOTFOUND;
	} else {
		ret = db__error(c->db, "cannot read job", err);
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return ret;
}

static int exec_update(struct db__conn *c, int64_t id,
		       const struct db_state_change *ch, struct buf *err)
{
	static const char *const sql =
		"UPDATE jobs SET status = ?2, secondary_status = ?3, "
		"last_modified_ms = ?4, "
		"failure_reason = coalesce(?5, failure_reason), "
		"model_artifacts = coalesce(?6, model_artifacts), "
		"start_ms = CASE WHEN ?7 AND start_ms = 0 THEN ?4 ELSE start_ms END, "
		"end_ms = CASE WHEN ?8 THEN ?4 ELSE end_ms END, "
		"training_s = CASE WHEN ?8 AND start_ms > 0 THEN "
		" max(1, (?4 - start_ms + 999) / 1000) ELSE training_s END, "
		"billable_s = CASE WHEN ?8 AND start_ms > 0 THEN "
		" max(1, (?4 - start_ms + 999) / 1000) ELSE billable_s END "
		"WHERE id = ?1";
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
			       NULL) != SQLITE_OK)
		return db__error(c->db, "cannot prepare update", err);
	sqlite3_bind_int64(st, 1, id);
	db__bind_text(st, 2, ch->status);
	db__bind_text(st, 3, ch->secondary);
	sqlite3_bind_int64(st, 4, ch->now_ms);
	db__bind_text(st, 5, ch->failure_reason);
	db__bind_text(st, 6, ch->model_artifacts);
	sqlite3_bind_int(st, 7, ch->set_start);
	sqlite3_bind_int(st, 8, ch->set_end);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db__error(c->db, "cannot update job", err);
	return 0;
}

static int step_done(struct db__conn *c, sqlite3_stmt *st, const char *what,
		     struct buf *err)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : db__error(c->db, what, err);
}

static int write_transition(struct db__conn *c, int64_t id,
			    const struct db_state_change *ch, struct buf *err)
{
	sqlite3_stmt *st = c->st[ST_LAST_TRANSITION];
	int64_t seq = 0;
	char *last = NULL;
	int ret;

	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		seq = sqlite3_column_int64(st, 0);
		last = db__col_dup(st, 1);
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (last && !strcmp(last, ch->secondary)) {
		free(last);
		if (!ch->message)
			return 0;
		st = c->st[ST_UPDATE_MESSAGE];
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, seq);
		db__bind_text(st, 3, ch->message);
		return step_done(c, st, "cannot update transition", err);
	}
	free(last);
	if (seq) {
		st = c->st[ST_CLOSE_TRANSITION];
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, seq);
		sqlite3_bind_int64(st, 3, ch->now_ms);
		ret = step_done(c, st, "cannot close transition", err);
		if (ret)
			return ret;
	}
	st = c->st[ST_INSERT_TRANSITION];
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, seq + 1);
	db__bind_text(st, 3, ch->secondary);
	sqlite3_bind_int64(st, 4, ch->now_ms);
	db__bind_text(st, 5, ch->message);
	return step_done(c, st, "cannot insert transition", err);
}

int db_job_change_state(struct db *db, const char *name,
			const struct db_state_change *ch, struct buf *err)
{
	struct db__conn *c = db__writer_conn(db);
	char *status = NULL;
	char *secondary = NULL;
	int64_t id = 0;
	int ret;

	if (!db__writer_begin(db, err))
		return ERR_DB;
	ret = writer_find(c, name, &id, &status, &secondary, err);
	if (ret)
		goto out;
	if ((ch->expect_status && strcmp(status, ch->expect_status)) ||
	    (ch->expect_secondary && strcmp(secondary, ch->expect_secondary))) {
		(void)buf_addf(err, "job is in status %s/%s", status,
			       secondary);
		ret = ERR_CONFLICT;
		goto out;
	}
	ret = exec_update(c, id, ch, err);
	if (!ret)
		ret = write_transition(c, id, ch, err);
out:
	free(status);
	free(secondary);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

int db_job_delete(struct db *db, const char *name,
		  int (*deletable)(const char *status), struct buf *err)
{
	struct db__conn *c = db__writer_conn(db);
	sqlite3_stmt *st = NULL;
	char *status = NULL;
	int64_t id = 0;
	int ret;

	if (!db__writer_begin(db, err))
		return ERR_DB;
	ret = writer_find(c, name, &id, &status, NULL, err);
	if (ret)
		goto out;
	if (!deletable(status)) {
		(void)buf_addf(err, "job is in status %s", status);
		ret = ERR_CONFLICT;
		goto out;
	}
	if (sqlite3_prepare_v2(c->db, "DELETE FROM jobs WHERE id = ?1", -1, &st,
			       NULL) != SQLITE_OK) {
		ret = db__error(c->db, "cannot prepare delete", err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		ret = db__error(c->db, "cannot delete job", err);
out:
	/* Before db__writer_end(): the statement is the writer's, and
	 * the write lock ends there. */
	sqlite3_finalize(st);
	free(status);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

/* db_jobs_with_status()'s callback and its argument. */
struct name_visit {
	void (*fn)(const char *name, void *arg);
	void *arg;
};

static int visit_row(sqlite3_stmt *st, void *arg)
{
	struct name_visit *v = arg;

	v->fn((const char *)sqlite3_column_text(st, 0), v->arg);
	return 0;
}

int db_jobs_with_status(struct db *db, const char *status,
			void (*fn)(const char *name, void *arg), void *arg,
			struct buf *err)
{
	struct db__query q = {
		.sql = "SELECT name FROM jobs WHERE status = ?1 ORDER BY "
		       "creation_ms, id",
		.prepare_what = "cannot prepare scan",
		.step_what = "cannot scan jobs",
		.bind = db__bind_text1,
		.bind_arg = status,
	};
	struct name_visit v = { fn, arg };

	return db__rows(db, &q, visit_row, &v, err);
}

int64_t db_job_count(struct db *db, const char *status)
{
	struct db__conn *c = db__reader_get(db);
	sqlite3_stmt *st = NULL;
	int64_t n = -1;

	if (sqlite3_prepare_v2(c->db,
			       status ? "SELECT count(*) FROM jobs WHERE "
					"status = ?1" :
					"SELECT count(*) FROM jobs",
			       -1, &st, NULL) == SQLITE_OK) {
		if (status)
			db__bind_text(st, 1, status);
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	db__reader_put(db, c);
	return n;
}

static void active_job_release(struct db_active_job *a)
{
	free(a->name);
	free(a->status);
	free(a->secondary_status);
	free(a->stop_reason);
	free(a->instance_type);
	free(a->message);
	free(a->wp_key);
}

void db_active_jobs_free(struct db_active_job *a, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		active_job_release(&a[i]);
	free(a);
}

/* Binds ?1 (limit) and, when given, ?2 (an instance type). */
static int read_active(struct db__conn *c, const char *sql, sqlite3_int64 limit,
		       const char *type, struct db_active_job **out, size_t *n,
		       size_t *cap, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db__error(c->db, "cannot prepare active jobs", err);
	sqlite3_bind_int64(st, 1, limit);
	if (type)
		db__bind_text(st, 2, type);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_active_job *a;

		ALLOC_GROW(*out, *n + 1, *cap);
		a = &(*out)[(*n)++];
		a->name = db__col_dup(st, 0);
		a->status = db__col_dup(st, 1);
		a->secondary_status = db__col_dup(st, 2);
		a->stop_reason = db__col_dup(st, 3);
		a->instance_type = db__col_dup(st, 4);
		a->message = db__col_dup(st, 5);
		a->attempt = sqlite3_column_int(st, 6);
		a->instance_count = sqlite3_column_int(st, 7);
		a->start_ms = sqlite3_column_int64(st, 8);
		a->creation_ms = sqlite3_column_int64(st, 9);
		a->id = sqlite3_column_int64(st, 10);
		a->wp_key = db__col_dup(st, 11);
	}
	if (rc != SQLITE_DONE)
		ret = db__error(c->db, "cannot read active jobs", err);
	sqlite3_finalize(st);
	return ret;
}

#define ACTIVE_COLUMNS                                                        \
	"SELECT name, status, secondary_status, stop_reason, instance_type, " \
	"(SELECT message FROM transitions t WHERE t.job_id = jobs.id ORDER "  \
	"BY seq DESC LIMIT 1), attempt, instance_count, start_ms, "           \
	"creation_ms, id, CASE WHEN wp_status = 'InUse' AND attempt = 0 "     \
	"THEN wp_key END FROM jobs "
#define QUEUED "status = 'InProgress' AND attempt = 0 AND waiting = 1 "

static int by_creation(const void *pa, const void *pb)
{
	const struct db_active_job *a = pa;
	const struct db_active_job *b = pb;

	if (a->creation_ms != b->creation_ms)
		return a->creation_ms < b->creation_ms ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* Sorts v[0..*n) by creation and drops repeated jobs. */
static void sort_unique(struct db_active_job *v, size_t *n)
{
	size_t i, k = 0;

	if (*n < 2)
		return;
	qsort(v, *n, sizeof(*v), by_creation);
	for (i = 0; i < *n; i++) {
		if (k && v[k - 1].id == v[i].id) {
			active_job_release(&v[i]);
			continue;
		}
		v[k++] = v[i];
	}
	*n = k;
}

static int read_queued(struct db__conn *c, const struct db_queue_look *look,
		       struct db_active_job **out, size_t *n, size_t *cap,
		       struct buf *err)
{
	sqlite3_int64 per = (sqlite3_int64)look->per;
	size_t first = *n;
	size_t i;
	int ret = 0;

	if (!per || (!look->any_type && !look->n_types))
		return 0;
	if (look->any_type)
		ret = read_active(c,
				  ACTIVE_COLUMNS "WHERE " QUEUED
						 "ORDER BY creation_ms, id "
						 "LIMIT ?1",
				  per, NULL, out, n, cap, err);
	for (i = 0; i < look->n_types && !ret; i++)
		ret = read_active(c,
				  ACTIVE_COLUMNS
				  "INDEXED BY jobs_queue WHERE instance_type "
				  "= ?2 AND " QUEUED "ORDER BY creation_ms, id "
				  "LIMIT ?1",
				  per, look->types[i], out, n, cap, err);
	if (!ret)
		ret = read_active(c,
				  ACTIVE_COLUMNS
				  "INDEXED BY jobs_queue WHERE instance_type "
				  "IS NULL AND " QUEUED
				  "ORDER BY creation_ms, id LIMIT ?1",
				  per, NULL, out, n, cap, err);
	if (!ret) {
		size_t m = *n - first;

		sort_unique(*out + first, &m);
		*n = first + m;
	}
	return ret;
}

int db_jobs_active(struct db *db, const struct db_queue_look *look,
		   struct db_active_job **out, size_t *n, struct buf *err)
{
	struct db__conn *c = db__reader_get(db);
	size_t cap = 0;
	int ret;

	*out = NULL;
	*n = 0;
	/* The first query reads the partial index jobs_attention only:
	 * without INDEXED BY the planner takes jobs_by_status and reads
	 * every queued job on every pass. */
	ret = read_active(c,
			  ACTIVE_COLUMNS
			  "INDEXED BY jobs_attention WHERE status IN "
			  "('InProgress', 'Stopping') AND NOT (status = "
			  "'InProgress' AND attempt = 0 AND waiting = 1) "
			  "ORDER BY creation_ms, id",
			  0, NULL, out, n, &cap, err);
	if (!ret && look)
		ret = read_queued(c, look, out, n, &cap, err);
	if (ret) {
		db_active_jobs_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	db__reader_put(db, c);
	return ret;
}

int db_job_set_image(struct db *db, const char *name, const char *image,
		     struct buf *err)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *conn = db__writer_begin_derived(db, err);
	int ret = 0;

	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn,
			       "UPDATE jobs SET image = ?2 WHERE name = ?1", -1,
			       &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare image", err);
	} else {
		db__bind_text(st, 1, name);
		db__bind_text(st, 2, image);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db__error(conn, "cannot record image", err);
		else if (!sqlite3_changes(conn))
			ret = ERR_NOTFOUND;
	}
	sqlite3_finalize(st);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

int db_job_set_rule_statuses(struct db *db, const char *name,
			     const char *statuses_json, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *conn = db__writer_begin(db, err);
	int ret = 0;

	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn,
			       "UPDATE jobs SET rule_statuses = ?2 "
			       "WHERE name = ?1",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare rule statuses", err);
	} else {
		db__bind_text(st, 1, name);
		db__bind_text(st, 2, statuses_json);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db__error(conn, "cannot record rule statuses",
					err);
		else if (!sqlite3_changes(conn))
			ret = ERR_NOTFOUND;
	}
	sqlite3_finalize(st);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

int db_jobs_set_waiting(struct db *db, const char *const *names,
			const char *const *messages, size_t n, struct buf *err)
{
	sqlite3 *conn;
	sqlite3_stmt *job = NULL;
	sqlite3_stmt *msg = NULL;
	size_t i;
	int ret = 0;

	if (!n)
		return 0;
	conn = db__writer_begin_derived(db, err);
	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn,
			       "UPDATE jobs SET waiting = 1 WHERE name = ?1 "
			       "AND attempt = 0",
			       -1, &job, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(conn,
			       "UPDATE transitions SET message = ?2 WHERE "
			       "job_id = (SELECT id FROM jobs WHERE name = ?1) "
			       "AND seq = (SELECT max(seq) FROM transitions t "
			       "WHERE t.job_id = transitions.job_id)",
			       -1, &msg, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare waiting", err);
		goto out;
	}
	for (i = 0; i < n && !ret; i++) {
		db__bind_text(job, 1, names[i]);
		db__bind_text(msg, 1, names[i]);
		db__bind_text(msg, 2, messages[i]);
		if (sqlite3_step(job) != SQLITE_DONE ||
		    sqlite3_step(msg) != SQLITE_DONE)
			ret = db__error(conn, "cannot mark waiting", err);
		sqlite3_reset(job);
		sqlite3_reset(msg);
	}
out:
	sqlite3_finalize(job);
	sqlite3_finalize(msg);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

int db_job_set_request(struct db *db, const char *name,
		       const char *request_json, int64_t now_ms,
		       struct buf *err)
{
	sqlite3_stmt *st = NULL;
	sqlite3 *conn = db__writer_begin(db, err);
	int ret = 0;

	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn,
			       "UPDATE jobs SET request_json = ?2, "
			       "last_modified_ms = ?3 WHERE name = ?1",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare request update", err);
	} else {
		db__bind_text(st, 1, name);
		db__bind_text(st, 2, request_json);
		sqlite3_bind_int64(st, 3, now_ms);
		if (sqlite3_step(st) != SQLITE_DONE)
			ret = db__error(conn, "cannot update request", err);
		else if (!sqlite3_changes(conn))
			ret = ERR_NOTFOUND;
	}
	sqlite3_finalize(st);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}
