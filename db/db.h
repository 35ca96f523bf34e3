#ifndef DB_DB_H
#define DB_DB_H

/*
 * The store: one SQLite file in WAL mode. Only db/ sees SQL. One writer
 * connection behind a mutex; readers take a connection from a small pool,
 * so reads never wait for a write. Every write commits durably
 * (synchronous=FULL) before the call returns: a caller that answers 200 after
 * a successful call has the fact on disk.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct db_service_job;

struct db;

struct db_transition {
	char *status;
	int64_t start_ms;
	int64_t end_ms; /* 0 while current */
	char *message;
};

struct db_metric {
	char *name;
	double value;
	int64_t timestamp_ms;
	int host; /* the algo-N that printed it; 0: not known */
};

/* A job row with its transitions; strings owned, see db_job_release(). */
/* A tag of a job. */
struct db_tag {
	char *key;
	char *value;
};

struct db_job {
	int64_t id;
	char *name;
	char *uid;    /* 16 hex digits, chosen at insert (read only) */
	char *owner;  /* who created it ("" for jobs older than owners) */
	char *run_as; /* Unix user of its ranks, NULL: the agent's own */
	char *image;  /* its container image pinned by digest, or NULL */
	char *arn;
	char *status;
	char *secondary_status;
	char *failure_reason;
	char *model_artifacts;
	char *request_json;
	char *spec_json;   /* the CreateTrainingJob body as received */
	char *stop_reason; /* NULL, "user" or "MaxRuntimeExceeded" */
	int attempt;	   /* current attempt, 0 before the first */
	char *instance_type;
	int instance_count;
	int waiting; /* insert: queued at once, no host being free */
	int64_t creation_ms;
	int64_t last_modified_ms;
	int64_t start_ms;
	int64_t end_ms;
	int64_t training_s;
	int64_t billable_s;
	struct db_transition *transitions;
	size_t n_transitions;
	struct db_metric *metrics;
	size_t n_metrics;
	/*
	 * Its managed warm pool (db/warmpool.h): status NULL when it asked
	 * for none, else InUse, Available, Reused or Terminated; at insert,
	 * keep_alive_s > 0 with wp_key gives it one (InUse).
	 */
	char *wp_status;
	int keep_alive_s;
	char *wp_key;
	int64_t wp_since_ms; /* became Available, 0: never */
	int64_t wp_end_ms;   /* stopped being Available, 0: not yet */
	char *wp_reused_by;
	/*
	 * The Debugger and Profiler rules' statuses, as Describe shows them
	 * (api/rule_status.h); NULL: the job has no rules. Set at insert.
	 */
	char *rule_statuses;
	/* insert only, not owned: the tags given at CreateTrainingJob */
	const struct db_tag *tags;
	size_t n_tags;
	/*
	 * insert only, not owned: the AWS Batch service job the training job
	 * runs for (db/batch.h), inserted in the same transaction, so that no
	 * reader sees the one without the other; NULL: none.
	 */
	const struct db_service_job *service;
};

void db_job_release(struct db_job *job);

/*
 * Replaces the request Describe echoes (UpdateTrainingJob) and sets
 * LastModifiedTime to now_ms. Returns 0, ERR_NOTFOUND or ERR_DB.
 */
int db_job_set_request(struct db *db, const char *name,
		       const char *request_json, int64_t now_ms,
		       struct buf *err);

/*
 * Tags of a training job or a tuning job (by name). db_tags_add() adds or
 * overwrites tags and fails with ERR_LIMIT, changing nothing, when the
 * resource would have more than max_total; db_tags_delete() ignores keys
 * it lacks; db_tags_list() gives at most limit tags in key order after
 * after_key (NULL: from the first), with *more set when there are others.
 * Each returns 0, ERR_NOTFOUND (no such resource) or ERR_DB.
 */
enum db_tag_kind { DB_TAGS_JOB, DB_TAGS_TUNING };

int db_tags_add(struct db *db, enum db_tag_kind kind, const char *name,
		const struct db_tag *tags, size_t n, size_t max_total,
		struct buf *err);
int db_tags_delete(struct db *db, enum db_tag_kind kind, const char *name,
		   char *const *keys, size_t n, struct buf *err);
int db_tags_list(struct db *db, enum db_tag_kind kind, const char *name,
		 const char *after_key, size_t limit, struct db_tag **out,
		 size_t *n, int *more, struct buf *err);
void db_tags_free(struct db_tag *tags, size_t n);

/* Search over jobs (common/search_expr.h has the filter tree). */
struct search_expr;
struct db_search_query {
	const struct search_expr *expr; /* NULL: every job */
	const char *sort_by;		/* a property name */
	int descending;
	const char *owner; /* only this owner's jobs; NULL: everyone's */
	size_t offset;
	size_t limit;
};

/*
 * The names of the jobs that match q, in its order, from its offset: at
 * most q->limit, with *more set when others follow. The filter values of
 * an In filter are cut in place. Returns 0, ERR_INVALID (a value that
 * cannot be compared as its property needs; err says which) or ERR_DB.
 */
int db_search_jobs(struct db *db, const struct db_search_query *q,
		   char ***names, size_t *n, int *more, struct buf *err);

/*
 * Opens (creating and migrating as needed) the database at path. readers is
 * the size of the reader pool. Returns 0 and *out, or ERR_DB with err set.
 */
int db_open(const char *path, int readers, struct db **out, struct buf *err);

/* Closes every connection and frees db (NULL is fine). */
void db_close(struct db *db);

/*
 * A number that grows with every commit of the writer, counted once the
 * commit is visible to readers: a value computed from reads that began
 * after db_write_seq() returned S is current for as long as it still
 * returns S.
 */
uint64_t db_write_seq(struct db *db);

/* The schema version this build migrates to. */
#define DB_SCHEMA_LATEST 22

/* The schema version after migrations (PRAGMA user_version). */
int db_schema_version(struct db *db);

/*
 * Inserts a new job with its first transition (status/secondary from job,
 * start time creation_ms, message first_message). Returns 0 and sets job->id,
 * ERR_CONFLICT when the name exists (case-insensitively), ERR_DB otherwise.
 */
int db_job_insert(struct db *db, struct db_job *job, const char *first_message,
		  struct buf *err);
/* The same, with *uid set to the uid the job got (caller frees; NULL on
 * failure). */
int db_job_insert_uid(struct db *db, struct db_job *job,
		      const char *first_message, char **uid, struct buf *err);

/*
 * Loads the job named name (case-insensitive) with its transitions and final
 * metrics into out. Returns 0, ERR_NOTFOUND or ERR_DB.
 */
int db_job_get(struct db *db, const char *name, struct db_job *out,
	       struct buf *err);

enum db_sort { DB_SORT_CREATION = 0, DB_SORT_NAME, DB_SORT_STATUS };

struct db_list_query {
	int limit;		      /* page size, 1..1000 */
	const char *token;	      /* NULL for the first page */
	const char *name_contains;    /* NULL = any */
	const char *status;	      /* NULL = any */
	const char *warm_pool_status; /* WarmPoolStatusEquals, NULL = any */
	const char *owner;	      /* NULL = any */
	enum db_sort sort;
	int descending;
	int64_t created_after_ms, created_before_ms;   /* 0 = unbounded */
	int64_t modified_after_ms, modified_before_ms; /* 0 = unbounded */
	const char *instance_type;		       /* NULL = any */
	const char *tag_key;   /* a tag the job has, NULL = any */
	const char *tag_value; /* ... with this value, NULL = any */
};

/*
 * One page of jobs (without transitions) in the query's order. Pagination is
 * by key (the sort key and the row id of the last row), so a page boundary
 * never moves when rows are inserted meanwhile. On success *jobs (free each
 * with db_job_release, then the array) and *n are set, and *next_token is
 * NULL on the last page or an opaque string the caller frees. Returns 0,
 * ERR_INVALID for a token that is malformed or belongs to another sort
 * order, or ERR_DB.
 */
int db_job_list(struct db *db, const struct db_list_query *q,
		struct db_job **jobs, size_t *n, char **next_token,
		struct buf *err);

/* What a state change writes besides status and transition. */
struct db_state_change {
	const char *expect_status; /* compare-and-set: current primary status */
	const char *expect_secondary; /* and secondary status; NULL = any */
	const char *status;	      /* new TrainingJobStatus */
	const char *secondary;	      /* new SecondaryStatus */
	const char *message;	     /* transition StatusMessage, may be NULL */
	const char *failure_reason;  /* set when not NULL */
	const char *model_artifacts; /* set when not NULL */
	int64_t now_ms;
	int set_start; /* set TrainingStartTime = now */
	int set_end;   /* set TrainingEndTime = now and times */
};

/*
 * Atomically moves job name from expect_status to the new state: updates
 * the row, closes the open transition and opens a new one (unless the
 * secondary status is unchanged, then only the message is updated).
 * Returns 0, ERR_NOTFOUND, ERR_CONFLICT (current status differs from
 * expect_status or expect_secondary, err says which it is) or ERR_DB.
 */
int db_job_change_state(struct db *db, const char *name,
			const struct db_state_change *ch, struct buf *err);

/*
 * Deletes a job and its transitions when deletable(its TrainingJobStatus)
 * says so, in one transaction. Returns 0, ERR_NOTFOUND, ERR_CONFLICT (err
 * names the status) or ERR_DB. Which statuses end a job is the
 * controller's to say (controller/job_state.c), not the store's.
 */
int db_job_delete(struct db *db, const char *name,
		  int (*deletable)(const char *status), struct buf *err);

/*
 * Calls fn(name, arg) for every job whose TrainingJobStatus is status, in
 * creation order. Names are valid during the call only. Returns 0 or ERR_DB.
 */
int db_jobs_with_status(struct db *db, const char *status,
			void (*fn)(const char *name, void *arg), void *arg,
			struct buf *err);

/* What the reconciler needs of an active job, without loading it. */
struct db_active_job {
	char *name;
	char *status;
	char *secondary_status;
	char *stop_reason;
	char *instance_type; /* NULL with InstanceGroups */
	char *message;	     /* of the open transition, may be NULL */
	int attempt;
	int instance_count;
	int64_t start_ms;
	int64_t creation_ms;
	int64_t id;
	char *wp_key; /* set while it may reuse a warm pool (queued) */
};

/*
 * Which queued jobs a pass looks at, given the free hosts: up to `per`
 * jobs of each of types[0..n_types) (hosts of one instance type), up to
 * `per` jobs of any type when any_type (a free host that serves every
 * type), and, when either, up to `per` InstanceGroups jobs; each in
 * creation order. All zero: none. A job of a type without a free host is
 * never read, however long the queue before it.
 */
struct db_queue_look {
	const char *const *types;
	size_t n_types;
	int any_type;
	size_t per;
};

/*
 * The InProgress or Stopping jobs the reconciler must look at: every one
 * except those queued for hosts (marked waiting at their insert or with
 * db_jobs_set_waiting()), in creation order, then the queued ones that
 * `look` selects (NULL: none), in creation order, each once. *out must be
 * freed with db_active_jobs_free(). Returns 0 or ERR_DB.
 */
int db_jobs_active(struct db *db, const struct db_queue_look *look,
		   struct db_active_job **out, size_t *n, struct buf *err);

/*
 * Marks jobs as queued for hosts, each with the message of its open
 * transition saying what it waits for, in one transaction. Placing a job
 * (db_attempt_start) clears the mark. Returns 0 or ERR_DB.
 */
/*
 * Records the container image job name runs, pinned by digest
 * (repo@sha256:...). Returns 0, ERR_NOTFOUND or ERR_DB.
 */
int db_job_set_image(struct db *db, const char *name, const char *image,
		     struct buf *err);

/*
 * Replaces job name's rule statuses (db_job.rule_statuses). Returns 0,
 * ERR_NOTFOUND or ERR_DB.
 */
int db_job_set_rule_statuses(struct db *db, const char *name,
			     const char *statuses_json, struct buf *err);

int db_jobs_set_waiting(struct db *db, const char *const *names,
			const char *const *messages, size_t n, struct buf *err);
void db_active_jobs_free(struct db_active_job *a, size_t n);

/* Number of jobs with the given status (NULL: all). -1 on error. */
int64_t db_job_count(struct db *db, const char *status);

#endif
