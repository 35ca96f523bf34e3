#ifndef DB_RUN_H
#define DB_RUN_H

/*
 * What runs where: attempts of a job, the assignment of each attempt to a
 * host (algo-N), log streams and metric points. Jobs are named by their
 * TrainingJobName; every call is one transaction.
 */
#include <stddef.h>
#include <stdint.h>

#include "db/db.h"
#include "common/buf.h"

struct db_assignment {
	char *job;
	char *job_uid; /* the job's uid (db_job.uid) */
	int attempt;
	int host_index;	   /* 0-based: algo-(host_index+1) */
	char *host;	   /* inventory / local host name */
	char *action;	   /* "run", "stop" or "abort" */
	char *phase;	   /* "assigned" or an agent REPORT phase */
	char *report_json; /* the agent's last REPORT, may be NULL */
	int artifacts; /* bit 0 model.tar.gz, bit 1 output.tar.gz received */
};

void db_assignment_release(struct db_assignment *a);
void db_assignments_free(struct db_assignment *a, size_t n);

/*
 * Starts attempt number `attempt` of job: one assignment per host
 * (hosts[i] becomes algo-(i+1), action run, phase assigned) and the job's
 * current attempt. Returns 0, ERR_NOTFOUND, ERR_CONFLICT (attempt exists)
 * or ERR_DB.
 */
int db_attempt_start(struct db *db, const char *job, int attempt,
		     int master_port, const char *const *hosts, size_t n,
		     int64_t now_ms, struct buf *err);

/* How an attempt ended without spending a retry (attempts.planned). */
enum db_attempt_planned {
	DB_ATTEMPT_UNPLANNED = 0,
	DB_ATTEMPT_MOVED = 1,	  /* a planned move off a drained host */
	DB_ATTEMPT_PREEMPTED = 2, /* preempted for another job */
	DB_ATTEMPT_ELASTIC = 3,	  /* an elastic job lost a host */
};

/*
 * Marks an attempt as ended by a planned move or a preemption (how): it
 * does not count against the job's retries. Returns 0 or ERR_DB.
 */
int db_attempt_set_planned(struct db *db, const char *job, int attempt,
			   enum db_attempt_planned how, struct buf *err);

/* How an attempt ended (enum db_attempt_planned). Returns 0 or ERR_DB. */
int db_attempt_planned(struct db *db, const char *job, int attempt,
		       int *planned, struct buf *err);

/* The owner of job (its creator, "" for old jobs). Returns 0,
 * ERR_NOTFOUND or ERR_DB. Caller frees *owner. */
int db_job_owner(struct db *db, const char *job, char **owner, struct buf *err);

/* How many of job's attempts spent no retry. Returns 0 or ERR_DB. */

/*
 * How long job waited in the queue after its preemptions: from each
 * preempted attempt's end to the next attempt's start (to now_ms while it
 * waits still), in ms. Returns 0 or ERR_DB.
 */
int db_job_requeued_ms(struct db *db, const char *job, int64_t now_ms,
		       int64_t *ms, struct buf *err);
int db_job_planned_moves(struct db *db, const char *job, int *n,
			 struct buf *err);

/* A drained host: no new work, its jobs move (controller/jobrun.c). */
struct db_host_drain {
	char *host;
	char *reason; /* may be NULL */
	int64_t since_ms;
};

/* Drains host (again: the reason and time are replaced). 0 or ERR_DB. */
int db_host_drain_set(struct db *db, const char *host, const char *reason,
		      int64_t now_ms, struct buf *err);

/* Undrains host. Returns 0, ERR_NOTFOUND (it was not drained) or ERR_DB. */
int db_host_drain_clear(struct db *db, const char *host, struct buf *err);

/* Every drained host. The caller frees *out with db_host_drains_free(). */
int db_host_drains_list(struct db *db, struct db_host_drain **out, size_t *n,
			struct buf *err);
void db_host_drains_free(struct db_host_drain *v, size_t n);

/*
 * Lays the failure of a job's attempt at host (its first failing rank's).
 * Returns 0 or ERR_DB.
 */
int db_attempt_set_failed_host(struct db *db, const char *job, int attempt,
			       const char *host, struct buf *err);

/*
 * The attempt after a failed one started without the host the failure
 * was laid at. Returns 0 or ERR_DB.
 */
int db_attempt_set_failed_host_left(struct db *db, const char *job,
				    int attempt, struct buf *err);

/*
 * The hosts that failures ending at since_ms or later were laid at, each
 * once, into *hosts (free each and the array). Returns 0 or ERR_DB.
 */
int db_failed_hosts(struct db *db, int64_t since_ms, char ***hosts, size_t *n,
		    struct buf *err);

/*
 * The host an attempt's failure was laid at into *host (NULL: none), for
 * the caller to free. Returns 0 or ERR_DB.
 */
int db_attempt_failed_host(struct db *db, const char *job, int attempt,
			   char **host, struct buf *err);

/* A failed attempt laid at a host (db_host_failures()). */
struct db_host_failure {
	char *job;
	int attempt;
	int64_t started_ms;
	int64_t ended_ms;
	char *reason; /* the attempt's FailureReason, may be NULL */
	/* Another attempt of the same job failed on another host. */
	int elsewhere;
	/* The next attempt left the host (db_attempt_set_failed_host_left()). */
	int left;
	/* A later attempt ended without a failure laid at any host. */
	int later_ended_well;
	/* When the running later attempt started (wall ms), 0: none runs. */
	int64_t later_running_ms;
};

/*
 * The failed attempts laid at host that ended at since_ms or later, oldest
 * first, into *out (free with db_host_failures_free()). Returns 0 or
 * ERR_DB, with nothing to free.
 */
int db_host_failures(struct db *db, const char *host, int64_t since_ms,
		     struct db_host_failure **out, size_t *n, struct buf *err);
void db_host_failures_free(struct db_host_failure *v, size_t n);

/* Forgets every failure laid at host (an admin returned it). */
int db_host_failures_forget(struct db *db, const char *host, struct buf *err);

/* Records the end of an attempt and why. Returns 0 or ERR_DB. */
int db_attempt_end(struct db *db, const char *job, int attempt,
		   const char *reason, int64_t now_ms, struct buf *err);

/* The master port and start time of an attempt, or ERR_NOTFOUND. */
int db_attempt_info(struct db *db, const char *job, int attempt, int *port,
		    int64_t *started_ms, struct buf *err);

/*
 * The hosts that hold any assignment, each once, into *hosts (free each and
 * the array). Reads only the host index. Returns 0 or ERR_DB.
 */
int db_assignment_hosts(struct db *db, char ***hosts, size_t *n,
			struct buf *err);

/*
 * Assignments filtered by job (NULL = any), host (NULL = any) and attempt
 * (0 = any), ordered by job, attempt, host_index. *out must be freed with
 * db_assignments_free(). Returns 0 or ERR_DB.
 */
int db_assignments_list(struct db *db, const char *job, const char *host,
			int attempt, struct db_assignment **out, size_t *n,
			struct buf *err);

/* Sets the action of every assignment of an attempt. */
int db_assignments_set_action(struct db *db, const char *job, int attempt,
			      const char *action, struct buf *err);

/*
 * Stores host's report for one assignment. Returns 1 when phase or report
 * changed, 0 when nothing changed, ERR_NOTFOUND when host has no such
 * assignment (an old attempt, or another host's: fenced), ERR_DB.
 */
int db_assignment_report(struct db *db, const char *job, const char *job_uid,
			 int attempt, int host_index, const char *host,
			 const char *phase, const char *report_json,
			 struct buf *err);

/* ORs bit into the assignment's artifacts. */
int db_assignment_add_artifact(struct db *db, const char *job, int attempt,
			       int host_index, int bit, struct buf *err);

/* Deletes the assignments of a job's attempt (0 = every attempt). */
int db_assignments_delete(struct db *db, const char *job, int attempt,
			  struct buf *err);

/* Sets why a job is stopping ("user", "MaxRuntimeExceeded"). */
int db_job_set_stop_reason(struct db *db, const char *job, const char *reason,
			   struct buf *err);

struct db_log_stream {
	char *name;
	int host_index;
	int64_t created_ms;
};

/* Adds a log stream if it does not exist yet. */
int db_log_stream_add(struct db *db, const char *job, const char *name,
		      int host_index, int64_t created_ms, struct buf *err);

/* The log streams of a job in name order; free with db_log_streams_free. */
int db_log_streams(struct db *db, const char *job, struct db_log_stream **out,
		   size_t *n, struct buf *err);
void db_log_streams_free(struct db_log_stream *s, size_t n);

/*
 * Appends metric points to the job's series and makes each the final value
 * of its metric (FinalMetricDataList). Returns 0 or ERR_DB.
 */
int db_metrics_add(struct db *db, const char *job, const struct db_metric *m,
		   size_t n, struct buf *err);

/*
 * Points of one metric series in time order (name NULL: all series, by
 * name), each with the host it was read from.
 */
int db_metric_series(struct db *db, const char *job, const char *name,
		     struct db_metric **out, size_t *n, struct buf *err);

/*
 * Points of series name of job with start_ms <= timestamp < end_ms, in
 * time order (their name is NULL). The caller frees *out. Returns 0 or
 * ERR_DB, with nothing to free.
 */
int db_metric_range(struct db *db, const char *job, const char *name,
		    int64_t start_ms, int64_t end_ms, struct db_metric **out,
		    size_t *n, struct buf *err);

/*
 * The series of job (name NULL: all; else that one if it has points) in
 * name order, each with its newest point's time in timestamp_ms. The
 * caller frees each name, then *out (also on ERR_DB).
 */
int db_metric_names(struct db *db, const char *job, const char *name,
		    struct db_metric **out, size_t *n, struct buf *err);

#endif
