#include <sqlite3.h>

#include "db/db.h"
#include "db/db_internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * Migrations, applied in order; PRAGMA user_version holds how many have
 * run. Never edit a shipped step: append a new one.
 */
static const char *const migrations[] = {
	/* 1: jobs, their status transitions and final metrics. */
	"CREATE TABLE jobs ("
	" id INTEGER PRIMARY KEY,"
	" name TEXT NOT NULL UNIQUE COLLATE NOCASE,"
	" arn TEXT NOT NULL,"
	" status TEXT NOT NULL,"
	" secondary_status TEXT NOT NULL,"
	" failure_reason TEXT,"
	" model_artifacts TEXT,"
	" request_json TEXT NOT NULL,"
	" instance_type TEXT,"
	" instance_count INTEGER NOT NULL DEFAULT 0,"
	" creation_ms INTEGER NOT NULL,"
	" last_modified_ms INTEGER NOT NULL,"
	" start_ms INTEGER NOT NULL DEFAULT 0,"
	" end_ms INTEGER NOT NULL DEFAULT 0,"
	" training_s INTEGER NOT NULL DEFAULT 0,"
	" billable_s INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX jobs_by_creation ON jobs(creation_ms, id);"
	"CREATE INDEX jobs_by_status ON jobs(status, creation_ms, id);"
	"CREATE TABLE transitions ("
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" seq INTEGER NOT NULL,"
	" status TEXT NOT NULL,"
	" start_ms INTEGER NOT NULL,"
	" end_ms INTEGER NOT NULL DEFAULT 0,"
	" message TEXT,"
	" PRIMARY KEY (job_id, seq)) WITHOUT ROWID;"
	"CREATE TABLE final_metrics ("
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL,"
	" value REAL NOT NULL,"
	" timestamp_ms INTEGER NOT NULL,"
	" PRIMARY KEY (job_id, name)) WITHOUT ROWID;",
	/* 2: attempts, host assignments, log streams and metric series. */
	"ALTER TABLE jobs ADD COLUMN spec_json TEXT;"
	"ALTER TABLE jobs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN stop_reason TEXT;"
	"CREATE TABLE attempts ("
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" attempt INTEGER NOT NULL,"
	" master_port INTEGER NOT NULL,"
	" started_ms INTEGER NOT NULL,"
	" ended_ms INTEGER NOT NULL DEFAULT 0,"
	" reason TEXT,"
	" PRIMARY KEY (job_id, attempt)) WITHOUT ROWID;"
	"CREATE TABLE assignments ("
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" attempt INTEGER NOT NULL,"
	" host_index INTEGER NOT NULL,"
	" host TEXT NOT NULL,"
	" action TEXT NOT NULL,"
	" phase TEXT NOT NULL,"
	" report_json TEXT,"
	" artifacts INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY (job_id, attempt, host_index)) WITHOUT ROWID;"
	"CREATE INDEX assignments_by_host ON assignments(host);"
	"CREATE TABLE log_streams ("
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL,"
	" host_index INTEGER NOT NULL,"
	" created_ms INTEGER NOT NULL,"
	" PRIMARY KEY (job_id, name)) WITHOUT ROWID;"
	"CREATE TABLE metric_points ("
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL,"
	" ts_ms INTEGER NOT NULL,"
	" value REAL NOT NULL);"
	"CREATE INDEX metric_points_by_job ON metric_points(job_id, name, ts_ms);",
	/* 3: queued jobs the reconciler need not look at while no host is
	 * free. */
	"ALTER TABLE jobs ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX jobs_attention ON jobs(creation_ms, id) WHERE status IN "
	"('InProgress', 'Stopping') AND NOT (status = 'InProgress' AND "
	"attempt = 0 AND waiting = 1);",
	/* 4: the queue by instance type, so that a free host of one type
	 * finds its jobs behind any number queued for other types. */
	"CREATE INDEX jobs_queue ON jobs(instance_type, creation_ms, id) "
	"WHERE status = 'InProgress' AND attempt = 0 AND waiting = 1;",
	/* 5: a uid per job, so that nothing of a deleted job (an agent's
	 * late report, log line or artifact) is taken for a new job of the
	 * same name. */
	"ALTER TABLE jobs ADD COLUMN uid TEXT;"
	"UPDATE jobs SET uid = lower(hex(randomblob(8)));",
	/* 6: drained hosts (planned maintenance), and attempts that ended
	 * as a planned move off such a host (no retry spent). */
	"CREATE TABLE host_drains ("
	" host TEXT PRIMARY KEY,"
	" reason TEXT,"
	" since_ms INTEGER NOT NULL) WITHOUT ROWID;"
	"ALTER TABLE attempts ADD COLUMN planned INTEGER NOT NULL DEFAULT 0;",
	/* 7: who created each job (the owner a user key sees), and the Unix
	 * user its ranks run as (NULL: the agent's own). */
	"ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE jobs ADD COLUMN run_as TEXT;"
	"CREATE INDEX jobs_owner ON jobs(owner, creation_ms, id);",
	/* 8: the container image a job runs, pinned by digest when it
	 * first started, so that every attempt runs the same one. */
	"ALTER TABLE jobs ADD COLUMN image TEXT;",
	/* 9: tags of jobs (AddTags, Tags at create), searchable by tag, and
	 * Search's default order. */
	"CREATE TABLE job_tags ("
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" key TEXT NOT NULL,"
	" value TEXT NOT NULL,"
	" PRIMARY KEY (job_id, key)) WITHOUT ROWID;"
	"CREATE INDEX job_tags_by_tag ON job_tags(key, value);"
	"CREATE INDEX jobs_by_modified ON jobs(last_modified_ms, id);"
	"CREATE INDEX jobs_by_status_modified ON jobs(status, "
	"last_modified_ms, id);",
	/* 10: managed warm pools (ResourceConfig.KeepAlivePeriodInSeconds):
	 * the pool's status (NULL: the job asked for none), its period, what
	 * a job must match to reuse it, the hosts it holds while Available,
	 * when it became Available and when it stopped being so, and the
	 * job that reused it. */
	"ALTER TABLE jobs ADD COLUMN wp_status TEXT;"
	"ALTER TABLE jobs ADD COLUMN wp_keep_alive_s INTEGER NOT NULL "
	"DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN wp_key TEXT;"
	"ALTER TABLE jobs ADD COLUMN wp_hosts TEXT;"
	"ALTER TABLE jobs ADD COLUMN wp_since_ms INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN wp_end_ms INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE jobs ADD COLUMN wp_reused_by TEXT;"
	"CREATE INDEX jobs_warm_available ON jobs(wp_since_ms, id) "
	"WHERE wp_status = 'Available';"
	"CREATE INDEX jobs_by_warm ON jobs(wp_status, creation_ms, id) "
	"WHERE wp_status IS NOT NULL;",
	/* 11: hyperparameter tuning jobs (db/tuning.h): the job, and each
	 * training job it launched or is about to launch (created 0: the
	 * row is written before the training job, so that a restart
	 * creates it once) with its point and objective metric; and the
	 * tuning jobs' tags. */
	"CREATE TABLE tuning_jobs ("
	" name TEXT PRIMARY KEY COLLATE NOCASE,"
	" arn TEXT NOT NULL,"
	" uid TEXT NOT NULL,"
	" owner TEXT NOT NULL DEFAULT '',"
	" run_as TEXT,"
	" status TEXT NOT NULL,"
	" request_json TEXT NOT NULL,"
	" seed INTEGER NOT NULL,"
	" failure_reason TEXT,"
	" creation_ms INTEGER NOT NULL,"
	" last_modified_ms INTEGER NOT NULL,"
	" end_ms INTEGER NOT NULL DEFAULT 0,"
	" convergence_ms INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
	"CREATE INDEX tuning_by_status ON tuning_jobs(status);"
	"CREATE TABLE tuning_children ("
	" tuning TEXT NOT NULL COLLATE NOCASE,"
	" idx INTEGER NOT NULL,"
	" job TEXT NOT NULL UNIQUE COLLATE NOCASE,"
	" def INTEGER NOT NULL,"
	" point TEXT NOT NULL,"
	" metric TEXT NOT NULL,"
	" created INTEGER NOT NULL DEFAULT 0,"
	" retry_of INTEGER NOT NULL DEFAULT -1,"
	" early_stop TEXT,"
	" PRIMARY KEY (tuning, idx)) WITHOUT ROWID;"
	"CREATE TABLE tuning_tags ("
	" tuning TEXT NOT NULL COLLATE NOCASE,"
	" key TEXT NOT NULL,"
	" value TEXT NOT NULL,"
	" PRIMARY KEY (tuning, key)) WITHOUT ROWID;",
	/* 12: which host's output a metric point was read from (algo-N's
	 * N; 0 for points stored before), for per-host series. */
	"ALTER TABLE metric_points ADD COLUMN host INTEGER NOT NULL "
	"DEFAULT 0;",
	/* 13: the status page's list at 100,000 jobs. The name in the
	 * creation and status indexes, so that a name filter reads the index
	 * and not every job's row; one status in name order (the status
	 * filter with the name sort sorted the whole status); one instance
	 * type newest first (a rare type read every job). */
	"DROP INDEX jobs_by_creation;"
	"CREATE INDEX jobs_by_creation ON jobs(creation_ms, id, name);"
	"DROP INDEX jobs_by_status;"
	"CREATE INDEX jobs_by_status ON jobs(status, creation_ms, id, name);"
	"CREATE INDEX jobs_by_status_name ON jobs(status, name, id);"
	"CREATE INDEX jobs_by_type ON jobs(instance_type, creation_ms, id);",
	/* 14: AWS Batch's objects and service jobs (db/batch.h). */
	"CREATE TABLE batch_objects ("
	" arn TEXT PRIMARY KEY,"
	" kind TEXT NOT NULL,"
	" name TEXT NOT NULL,"
	" queue_arn TEXT NOT NULL DEFAULT '',"
	" policy_arn TEXT,"
	" policy_kind TEXT,"
	" state TEXT NOT NULL DEFAULT 'ENABLED',"
	" priority INTEGER NOT NULL DEFAULT 0,"
	" share_decay_s INTEGER NOT NULL DEFAULT 0,"
	" compute_reservation INTEGER NOT NULL DEFAULT 0,"
	" strategy TEXT,"
	" borrow_limit INTEGER NOT NULL DEFAULT -1,"
	" in_share_preemption TEXT,"
	" request_json TEXT NOT NULL,"
	" created_ms INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE UNIQUE INDEX batch_objects_by_name"
	" ON batch_objects(kind, queue_arn, name);"
	"CREATE TABLE batch_capacity ("
	" arn TEXT NOT NULL REFERENCES batch_objects(arn) ON DELETE CASCADE,"
	" unit TEXT NOT NULL,"
	" max_capacity INTEGER NOT NULL,"
	" PRIMARY KEY (arn, unit)) WITHOUT ROWID;"
	"CREATE TABLE batch_share_weights ("
	" policy_arn TEXT NOT NULL"
	"  REFERENCES batch_objects(arn) ON DELETE CASCADE,"
	" share_identifier TEXT NOT NULL,"
	" weight REAL NOT NULL,"
	" PRIMARY KEY (policy_arn, share_identifier)) WITHOUT ROWID;"
	"CREATE TABLE batch_queue_envs ("
	" queue_arn TEXT NOT NULL"
	"  REFERENCES batch_objects(arn) ON DELETE CASCADE,"
	" ord INTEGER NOT NULL,"
	" env_arn TEXT NOT NULL,"
	" PRIMARY KEY (queue_arn, ord)) WITHOUT ROWID;"
	"CREATE INDEX batch_queue_envs_by_env ON batch_queue_envs(env_arn);"
	"CREATE TABLE service_jobs ("
	" seq INTEGER PRIMARY KEY,"
	" job_id TEXT NOT NULL UNIQUE,"
	" arn TEXT NOT NULL,"
	" name TEXT NOT NULL,"
	" queue_arn TEXT NOT NULL,"
	" share_identifier TEXT,"
	" quota_share TEXT,"
	" scheduling_priority INTEGER NOT NULL DEFAULT 0,"
	" training_job TEXT NOT NULL,"
	" owner TEXT NOT NULL,"
	" created_ms INTEGER NOT NULL,"
	" client_token TEXT,"
	" request_json TEXT NOT NULL,"
	" attempts INTEGER NOT NULL DEFAULT 0,"
	" timeout_s INTEGER NOT NULL DEFAULT 0,"
	" preemption_retries INTEGER NOT NULL DEFAULT -1);"
	"CREATE INDEX service_jobs_by_queue ON service_jobs(queue_arn, seq);"
	"CREATE INDEX service_jobs_by_training ON service_jobs(training_job);"
	"CREATE UNIQUE INDEX service_jobs_by_token"
	" ON service_jobs(owner, client_token) WHERE client_token IS NOT NULL;"
	/* What a scheduler reads of the service jobs whose training jobs
	 * are still to run or running, in one query: the queue and its
	 * priority, the policy's kind and decay, the share (identifier or
	 * quota share) and its weight, the job's priority and order. */
	"CREATE VIEW batch_sched AS SELECT"
	" s.seq, s.job_id, s.training_job, s.owner, s.created_ms,"
	" s.queue_arn, q.priority AS queue_priority, q.state AS queue_state,"
	" p.policy_kind, p.share_decay_s, p.compute_reservation,"
	" s.share_identifier, COALESCE(w.weight, 1.0) AS weight,"
	" s.quota_share, qs.arn AS quota_share_arn,"
	" s.scheduling_priority, s.preemption_retries, j.status,"
	" j.secondary_status"
	" FROM service_jobs s"
	" JOIN batch_objects q ON q.arn = s.queue_arn"
	" LEFT JOIN batch_objects p ON p.arn = q.policy_arn"
	" LEFT JOIN batch_share_weights w ON w.policy_arn = p.arn"
	"  AND w.share_identifier = s.share_identifier"
	" LEFT JOIN batch_objects qs ON qs.kind = 'quota-share'"
	"  AND qs.queue_arn = s.queue_arn AND qs.name = s.quota_share"
	" JOIN jobs j ON j.name = s.training_job"
	" WHERE j.status IN ('InProgress', 'Stopping');",
	/* 15: attempts by their end, for the scheduler's fair-share usage
	 * of the attempts that ended since its last pass (db/sched.h). */
	"CREATE INDEX attempts_by_end ON attempts(ended_ms) WHERE ended_ms > 0;",
	/* 16: the host a failed attempt's failure is laid at (its first
	 * failing rank's) and whether the next attempt left that host, for
	 * the quarantine of hosts that fail the jobs of many
	 * (controller/quarantine.c). */
	"ALTER TABLE attempts ADD COLUMN failed_host TEXT;"
	"ALTER TABLE attempts ADD COLUMN failed_host_left INTEGER NOT NULL "
	"DEFAULT 0;"
	"CREATE INDEX attempts_by_failed_host ON attempts(failed_host, "
	"ended_ms) WHERE failed_host IS NOT NULL;",
	/* 17: the statuses of a job's Debugger and Profiler rules, as
	 * Describe shows them (JSON; NULL: no rules). */
	"ALTER TABLE jobs ADD COLUMN rule_statuses TEXT;",
	/* 18: goodput accounting (db/goodput.h): each attempt's progress
	 * as its ranks reported it, the cluster's totals per category and
	 * the ended jobs already added to them. */
	"CREATE TABLE attempt_progress ("
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" attempt INTEGER NOT NULL,"
	" first_ms INTEGER NOT NULL,"
	" first_step INTEGER NOT NULL,"
	" last_ms INTEGER NOT NULL,"
	" max_step INTEGER NOT NULL,"
	" passed_ms INTEGER NOT NULL DEFAULT 0,"
	" ckpt_ms INTEGER NOT NULL DEFAULT 0,"
	" PRIMARY KEY (job_id, attempt)) WITHOUT ROWID;"
	"CREATE TABLE goodput_totals ("
	" category TEXT PRIMARY KEY,"
	" ms INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE TABLE goodput_settled ("
	" job_id INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE);",
	/* 19: the controller's secrets (db/secrets.h): agents' tokens and
	 * the rendezvous key, the same on every member of a replicated
	 * controller. */
	"CREATE TABLE secrets ("
	" name TEXT PRIMARY KEY,"
	" value TEXT NOT NULL) WITHOUT ROWID;",
	/* 20: replication (db/replica.h). The index of the last replicated
	 * entry this store holds (node-local: never replicated itself), and
	 * metric_points with a declared key, which the session extension
	 * needs to record a table's changes (its rowids are kept). */
	"CREATE TABLE replica_state ("
	" one INTEGER PRIMARY KEY CHECK (one = 1),"
	" applied_index INTEGER NOT NULL);"
	"INSERT INTO replica_state VALUES (1, 0);"
	"CREATE TABLE metric_points_20 ("
	" id INTEGER PRIMARY KEY,"
	" job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL,"
	" ts_ms INTEGER NOT NULL,"
	" value REAL NOT NULL,"
	" host INTEGER NOT NULL DEFAULT 0);"
	"INSERT INTO metric_points_20 (id, job_id, name, ts_ms, value, host)"
	" SELECT rowid, job_id, name, ts_ms, value, host FROM metric_points;"
	"DROP TABLE metric_points;"
	"ALTER TABLE metric_points_20 RENAME TO metric_points;"
	"CREATE INDEX metric_points_by_job ON metric_points(job_id, name, ts_ms);",
	/* 21: the members of a replicated controller (db/members.h): their
	 * raft and API addresses, changed with raft's configuration. */
	"CREATE TABLE ha_members ("
	" id INTEGER PRIMARY KEY,"
	" raft_address TEXT NOT NULL,"
	" api_url TEXT NOT NULL);",
	/* 22: the embedded S3 store's buckets (key "") and objects as a
	 * replicated controller records them (db/objects.h): size, ETag,
	 * a tombstone once removed, and the sequence of the last change. */
	"CREATE TABLE s3_objects ("
	" bucket TEXT NOT NULL,"
	" key TEXT NOT NULL,"
	" size INTEGER NOT NULL,"
	" etag TEXT NOT NULL,"
	" deleted INTEGER NOT NULL DEFAULT 0,"
	" seq INTEGER NOT NULL,"
	" PRIMARY KEY (bucket, key)) WITHOUT ROWID;"
	"CREATE INDEX s3_objects_by_seq ON s3_objects(seq);",
};

#define N_MIGRATIONS ((int)ARRAY_SIZE(migrations))

_Static_assert(N_MIGRATIONS == DB_SCHEMA_LATEST,
	       "DB_SCHEMA_LATEST in db.h must name the last migration");

int db__migrate(sqlite3 *conn, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int version = 0;
	int i;
	char *msg = NULL;

	if (sqlite3_prepare_v2(conn, "PRAGMA user_version", -1, &st, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version > N_MIGRATIONS) {
		(void)buf_addf(err,
			       "database schema version %d is newer than "
			       "this build knows (%d)",
			       version, N_MIGRATIONS);
		return ERR_DB;
	}
	for (i = version; i < N_MIGRATIONS; i++) {
		char pragma[64];

		if (sqlite3_exec(conn, "BEGIN IMMEDIATE", NULL, NULL, &msg) !=
		    SQLITE_OK)
			goto fail;
		if (sqlite3_exec(conn, migrations[i], NULL, NULL, &msg) !=
		    SQLITE_OK) {
			sqlite3_exec(conn, "ROLLBACK", NULL, NULL, NULL);
			goto fail;
		}
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d",
			 i + 1);
		if (sqlite3_exec(conn, pragma, NULL, NULL, &msg) != SQLITE_OK ||
		    sqlite3_exec(conn, "COMMIT", NULL, NULL, &msg) !=
			    SQLITE_OK) {
			sqlite3_exec(conn, "ROLLBACK", NULL, NULL, NULL);
			goto fail;
		}
	}
	return 0;
fail:
	(void)buf_addf(err, "migration %d failed: %s", i + 1,
		       msg ? msg : sqlite3_errmsg(conn));
	sqlite3_free(msg);
	return ERR_DB;
}

int db__schema_latest(void)
{
	return N_MIGRATIONS;
}
