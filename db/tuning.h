#ifndef DB_TUNING_H
#define DB_TUNING_H

/*
 * Hyperparameter tuning jobs in the store (migration 11). A tuning job's
 * training jobs are rows of tuning_children, written before the training
 * job itself (created 0) and marked once it exists, so that a controller
 * killed in between creates it exactly once after a restart. Every call
 * is one transaction.
 */
#include <stddef.h>
#include <stdint.h>

#include "db/db.h"
#include "common/buf.h"

struct db_tuning {
	char *name;
	char *arn;
	char *uid;
	char *owner;
	char *run_as;
	char *status; /* InProgress, Completed, Failed, Stopping, Stopped */
	char *request_json;
	uint64_t seed;
	char *failure_reason;
	int64_t creation_ms;
	int64_t last_modified_ms;
	int64_t end_ms;
	int64_t convergence_ms;
	/* insert only, not owned */
	const struct db_tag *tags;
	size_t n_tags;
};

void db_tuning_release(struct db_tuning *t);
void db_tunings_free(struct db_tuning *t, size_t n);

/* Returns 0, ERR_CONFLICT (the name exists) or ERR_DB. */
int db_tuning_insert(struct db *db, const struct db_tuning *t, struct buf *err);

/* Returns 0, ERR_NOTFOUND or ERR_DB. */
int db_tuning_get(struct db *db, const char *name, struct db_tuning *out,
		  struct buf *err);

/*
 * Tuning jobs with status (NULL: every one), newest first. The caller
 * frees *out with db_tunings_free(). Returns 0 or ERR_DB.
 */
int db_tuning_list(struct db *db, const char *status, struct db_tuning **out,
		   size_t *n, struct buf *err);

/* The names of tuning jobs InProgress or Stopping. 0 or ERR_DB. */
int db_tuning_active(struct db *db, char ***names, size_t *n, struct buf *err);

/*
 * Moves a tuning job from status `from` to `to` (compare-and-set), with a
 * failure reason (may be NULL) and, for an end, end_ms. Returns 0,
 * ERR_CONFLICT (not in `from`), ERR_NOTFOUND or ERR_DB.
 */
int db_tuning_set_status(struct db *db, const char *name, const char *from,
			 const char *to, const char *reason, int64_t end_ms,
			 int64_t now_ms, struct buf *err);

/* Records when convergence was detected. Returns 0 or ERR_DB. */
int db_tuning_set_convergence(struct db *db, const char *name, int64_t ms,
			      struct buf *err);

/*
 * Deletes a tuning job that is Completed, Failed or Stopped, with its
 * rows of children and tags (its training jobs stay). Returns 0,
 * ERR_NOTFOUND, ERR_CONFLICT (not ended; err says its status) or ERR_DB.
 */
int db_tuning_delete(struct db *db, const char *name, struct buf *err);

/* One training job of a tuning job, with what the store knows of it. */
struct db_tuning_child {
	int idx;
	char *job;
	int def;
	char *point; /* the point, "%.17g" values separated by ',' */
	char *metric;
	int created;
	int retry_of;	  /* idx of the failed job it retries, -1: none */
	char *early_stop; /* why the tuning job stopped it, or NULL */
	/* from the training job (NULL / 0 when it does not exist) */
	char *arn;
	char *status;
	char *secondary_status;
	char *failure_reason;
	int64_t creation_ms;
	int64_t start_ms;
	int64_t end_ms;
	int has_objective;
	double objective; /* the metric's final value */
};

void db_tuning_children_free(struct db_tuning_child *c, size_t n);

/* Every child of a tuning job in idx order. Returns 0 or ERR_DB. */
int db_tuning_children(struct db *db, const char *tuning,
		       struct db_tuning_child **out, size_t *n,
		       struct buf *err);

/*
 * Adds child idx (created 0). Returns 0, ERR_CONFLICT (idx or the job
 * name is taken) or ERR_DB.
 */
int db_tuning_child_add(struct db *db, const char *tuning,
			const struct db_tuning_child *c, struct buf *err);

/* Marks child idx created. Returns 0 or ERR_DB. */
int db_tuning_child_created(struct db *db, const char *tuning, int idx,
			    struct buf *err);

/* Records why the tuning job stopped child idx. Returns 0 or ERR_DB. */
int db_tuning_child_early_stop(struct db *db, const char *tuning, int idx,
			       const char *why, struct buf *err);

/* The tuning job a training job belongs to (NULL: none). 0 or ERR_DB. */
int db_tuning_of_job(struct db *db, const char *job, char **tuning,
		     struct buf *err);

/* The tags of a tuning job, in key order (db_tags_free()). 0 or ERR_DB. */
int db_tuning_tags(struct db *db, const char *tuning, struct db_tag **out,
		   size_t *n, struct buf *err);

#endif
