#ifndef DB_BATCH_H
#define DB_BATCH_H

/*
 * AWS Batch's objects and service jobs in the store (docs/batch.md).
 *
 * batch_objects holds every service environment, job queue, scheduling
 * policy and quota share: its canonical create request (request_json,
 * what Describe answers from) and the members a scheduler reads as
 * columns; batch_capacity their capacity limits, batch_share_weights a
 * fair-share policy's weights, batch_queue_envs a queue's environments in
 * order. service_jobs holds each service job with its training job; the
 * view batch_sched joins them into what a scheduler needs in one query
 * (see the migration in db/schema.c).
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct db;

struct db_batch_object {
	char *arn;
	char *kind; /* api_batch_kind_name(): "job-queue", ... */
	char *name;
	char *queue_arn;   /* a quota share's queue */
	char *policy_arn;  /* a queue's scheduling policy */
	char *policy_kind; /* a policy's: FAIRSHARE or QUOTA_SHARE */
	char *state;
	char *strategy; /* a quota share's */
	char *in_share_preemption;
	char *request_json;
	int priority;
	int reservation;
	int64_t decay_s;
	int64_t borrow_limit;
	int64_t created_ms;
	/* put only, not owned: capacity limits, weights, environments */
	const char *const *limit_units;
	const int64_t *limit_max;
	size_t n_limits;
	const char *const *weight_ids;
	const double *weights;
	size_t n_weights;
	const char *const *envs;
	size_t n_envs;
};

void db_batch_object_release(struct db_batch_object *o);
void db_batch_objects_free(struct db_batch_object *o, size_t n);

/*
 * Stores o (create: a new row, ERR_CONFLICT when kind and name, within
 * the queue for a quota share, are taken; else replaces the row of o->arn
 * and its limits, weights and environments, ERR_NOTFOUND when none).
 * Returns 0 or an ERR_* code.
 */
int db_batch_object_put(struct db *db, const struct db_batch_object *o,
			int create, struct buf *err);

/*
 * The object of kind named by ident (its ARN, or its name; a quota
 * share's name only within queue_arn). Returns 0 or ERR_NOTFOUND.
 */
int db_batch_object_find(struct db *db, const char *kind, const char *ident,
			 const char *queue_arn, struct db_batch_object *o,
			 struct buf *err);

/*
 * Objects of kind in ARN order after after_arn (NULL: from the first), at
 * most limit, only of queue_arn when given (quota shares).
 */
int db_batch_object_list(struct db *db, const char *kind, const char *queue_arn,
			 const char *after_arn, int limit,
			 struct db_batch_object **out, size_t *n,
			 struct buf *err);

/*
 * Deletes the object of arn, unless something uses it: ERR_CONFLICT with
 * err saying what (a queue's environment or policy; a queue's quota
 * shares or unfinished service jobs). Returns 0, ERR_NOTFOUND, ERR_CONFLICT
 * or ERR_DB.
 */
int db_batch_object_delete(struct db *db, const char *kind, const char *arn,
			   struct buf *err);

struct db_service_job {
	int64_t seq; /* submission order (read only) */
	char *job_id;
	char *arn;
	char *name;
	char *queue_arn;
	char *share_identifier;
	char *quota_share;
	int priority; /* schedulingPriority */
	char *training_job;
	char *owner;
	int64_t created_ms;
	char *client_token;
	char *request_json; /* the SubmitServiceJob body */
	int attempts;
	int64_t timeout_s;
	int preemption_retries; /* -1: not given */
	/* read only: its training job's */
	char *tj_arn;
	char *tj_status;
	char *tj_secondary;
	char *tj_reason;
	int64_t tj_start_ms;
	int64_t tj_end_ms;
};

void db_service_job_release(struct db_service_job *j);
void db_service_jobs_free(struct db_service_job *j, size_t n);

/*
 * The service job of job_id, or (job_id NULL) of owner's client_token.
 * Returns 0 or ERR_NOTFOUND.
 */
int db_service_job_get(struct db *db, const char *job_id, const char *owner,
		       const char *client_token, struct db_service_job *j,
		       struct buf *err);

struct db_service_job_query {
	const char *queue_arn;	     /* NULL: any */
	const char *owner;	     /* NULL: any */
	const char *name;	     /* exact, or a prefix ending in '*' */
	int64_t before_ms, after_ms; /* 0: none */
	int64_t after_seq;	     /* pagination: seq > after_seq */
	int limit;
};

/* Service jobs of q in submission order. */
int db_service_job_list(struct db *db, const struct db_service_job_query *q,
			struct db_service_job **out, size_t *n,
			struct buf *err);

/* Sets schedulingPriority. Returns 0, ERR_NOTFOUND or ERR_DB. */
int db_service_job_set_priority(struct db *db, const char *job_id, int priority,
				struct buf *err);

#endif
