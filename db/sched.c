#include <sqlite3.h>
#include <stdlib.h>

#include "db/db_internal.h"
#include "db/sched.h"
#include "common/err.h"
#include "common/banned.h"

/*
 * One row per unfinished job: the current attempt's start and hosts, the
 * open transition's message, the attempts that ended preempted
 * (attempts.planned = 2, db/run.h), and a service job's members from the
 * view batch_sched.
 */
static const char jobs_sql[] =
	"SELECT j.name, j.owner, j.instance_type, j.instance_count, j.id,"
	" j.attempt, j.status, j.secondary_status,"
	" (SELECT message FROM transitions t WHERE t.job_id = j.id"
	"  ORDER BY seq DESC LIMIT 1), j.waiting,"
	" (SELECT started_ms FROM attempts a WHERE a.job_id = j.id"
	"  AND a.attempt = j.attempt),"
	" (SELECT group_concat(host, char(10)) FROM assignments s"
	"  WHERE s.job_id = j.id AND s.attempt = j.attempt),"
	" (SELECT count(*) FROM attempts a WHERE a.job_id = j.id"
	"  AND a.planned = 2),"
	" b.queue_arn, b.queue_priority, b.queue_state, b.policy_kind,"
	" b.share_decay_s, b.compute_reservation, b.share_identifier,"
	" b.weight, b.quota_share_arn, b.scheduling_priority,"
	" b.preemption_retries,"
	" (SELECT env_arn FROM batch_queue_envs e WHERE e.queue_arn ="
	"  b.queue_arn ORDER BY ord LIMIT 1)"
	" FROM jobs j LEFT JOIN batch_sched b ON b.training_job = j.name"
	" WHERE j.status IN ('InProgress', 'Stopping')"
	" ORDER BY j.creation_ms, j.id";

static const char ended_sql[] =
	"SELECT j.name, j.owner, j.instance_count, s.queue_arn,"
	" p.policy_kind, p.share_decay_s, s.share_identifier, qs.arn,"
	" a.started_ms, a.ended_ms"
	" FROM attempts a INDEXED BY attempts_by_end"
	" JOIN jobs j ON j.id = a.job_id"
	" LEFT JOIN service_jobs s ON s.training_job = j.name"
	" LEFT JOIN batch_objects q ON q.arn = s.queue_arn"
	" LEFT JOIN batch_objects p ON p.arn = q.policy_arn"
	" LEFT JOIN batch_objects qs ON qs.kind = 'quota-share'"
	"  AND qs.queue_arn = s.queue_arn AND qs.name = s.quota_share"
	" WHERE a.ended_ms > 0 AND a.ended_ms > ?1";

static int64_t col_i64(sqlite3_stmt *st, int i, int64_t dflt)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ?
		       dflt :
		       sqlite3_column_int64(st, i);
}

static int job_row(sqlite3_stmt *st, void *arg)
{
	struct db_sched_job *j = db__vec_push(arg);

	j->name = db__col_dup(st, 0);
	j->owner = db__col_dup(st, 1);
	j->type = db__col_dup(st, 2);
	j->count = sqlite3_column_int(st, 3);
	j->id = sqlite3_column_int64(st, 4);
	j->attempt = sqlite3_column_int(st, 5);
	j->status = db__col_dup(st, 6);
	j->secondary = db__col_dup(st, 7);
	j->message = db__col_dup(st, 8);
	j->waiting = sqlite3_column_int(st, 9);
	j->started_ms = col_i64(st, 10, 0);
	j->hosts = db__col_dup(st, 11);
	j->preempted = sqlite3_column_int(st, 12);
	j->queue = db__col_dup(st, 13);
	j->queue_priority = (int)col_i64(st, 14, 0);
	j->queue_state = db__col_dup(st, 15);
	j->policy_kind = db__col_dup(st, 16);
	j->decay_s = col_i64(st, 17, 0);
	j->reservation = (int)col_i64(st, 18, 0);
	j->share_id = db__col_dup(st, 19);
	j->weight = sqlite3_column_type(st, 20) == SQLITE_NULL ?
			    1.0 :
			    sqlite3_column_double(st, 20);
	j->quota_share = db__col_dup(st, 21);
	j->priority = (int)col_i64(st, 22, 0);
	j->preempt_limit = (int)col_i64(st, 23, -1);
	j->env = db__col_dup(st, 24);
	return 0;
}

static int ended_row(sqlite3_stmt *st, void *arg)
{
	struct db_sched_job *j = db__vec_push(arg);

	j->name = db__col_dup(st, 0);
	j->owner = db__col_dup(st, 1);
	j->count = sqlite3_column_int(st, 2);
	j->queue = db__col_dup(st, 3);
	j->policy_kind = db__col_dup(st, 4);
	j->decay_s = col_i64(st, 5, 0);
	j->share_id = db__col_dup(st, 6);
	j->quota_share = db__col_dup(st, 7);
	j->started_ms = col_i64(st, 8, 0);
	j->ended_ms = col_i64(st, 9, 0);
	return 0;
}

static void bind_since(sqlite3_stmt *st, const void *arg)
{
	sqlite3_bind_int64(st, 1, *(const int64_t *)arg);
}

int db_sched_ended(struct db *db, int64_t since_ms,
		   struct db_sched_job **out, size_t *n, struct buf *err)
{
	struct db__query q = {
		.sql = ended_sql,
		.prepare_what = "cannot prepare the ended attempts' read",
		.step_what = "cannot read the ended attempts",
		.bind = bind_since,
		.bind_arg = &since_ms,
	};
	struct db__vec v = DB__VEC_INIT(sizeof(struct db_sched_job));
	int ret = db__rows(db, &q, ended_row, &v, err);

	*out = v.v;
	*n = v.n;
	if (ret) {
		db_sched_jobs_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return ret;
}

int db_sched_jobs(struct db *db, struct db_sched_job **out, size_t *n,
		  struct buf *err)
{
	struct db__query q = {
		.sql = jobs_sql,
		.prepare_what = "cannot prepare the scheduler's read",
		.step_what = "cannot read the jobs to schedule",
	};
	struct db__vec v = DB__VEC_INIT(sizeof(struct db_sched_job));
	int ret = db__rows(db, &q, job_row, &v, err);

	*out = v.v;
	*n = v.n;
	if (ret) {
		db_sched_jobs_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return ret;
}

void db_sched_jobs_free(struct db_sched_job *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct db_sched_job *j = &v[i];

		free(j->name);
		free(j->owner);
		free(j->type);
		free(j->status);
		free(j->secondary);
		free(j->message);
		free(j->hosts);
		free(j->queue);
		free(j->queue_state);
		free(j->policy_kind);
		free(j->share_id);
		free(j->quota_share);
		free(j->env);
	}
	free(v);
}

static int cap_row(sqlite3_stmt *st, void *arg)
{
	struct db_sched_cap *c = db__vec_push(arg);

	c->arn = db__col_dup(st, 0);
	c->kind = db__col_dup(st, 1);
	c->name = db__col_dup(st, 2);
	c->queue = db__col_dup(st, 3);
	c->state = db__col_dup(st, 4);
	c->strategy = db__col_dup(st, 5);
	c->in_share_preemption = db__col_dup(st, 6);
	c->borrow_limit = col_i64(st, 7, -1);
	c->unit = db__col_dup(st, 8);
	c->max = sqlite3_column_int64(st, 9);
	return 0;
}

int db_sched_caps(struct db *db, struct db_sched_cap **out, size_t *n,
		  struct buf *err)
{
	struct db__query q = {
		.sql = "SELECT o.arn, o.kind, o.name, o.queue_arn, o.state,"
		       " o.strategy, o.in_share_preemption, o.borrow_limit,"
		       " c.unit, c.max_capacity FROM batch_objects o"
		       " JOIN batch_capacity c ON c.arn = o.arn"
		       " WHERE o.kind IN ('quota-share',"
		       " 'service-environment') ORDER BY o.arn, c.unit",
		.prepare_what = "cannot prepare the capacity read",
		.step_what = "cannot read capacity limits",
	};
	struct db__vec v = DB__VEC_INIT(sizeof(struct db_sched_cap));
	int ret = db__rows(db, &q, cap_row, &v, err);

	*out = v.v;
	*n = v.n;
	if (ret) {
		db_sched_caps_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return ret;
}

void db_sched_caps_free(struct db_sched_cap *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].arn);
		free(v[i].kind);
		free(v[i].name);
		free(v[i].queue);
		free(v[i].state);
		free(v[i].strategy);
		free(v[i].in_share_preemption);
		free(v[i].unit);
	}
	free(v);
}
