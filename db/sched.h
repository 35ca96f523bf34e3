#ifndef DB_SCHED_H
#define DB_SCHED_H

/*
 * What the scheduler reads of the store in one pass
 * (controller/sched/pass.c): every unfinished job with its hosts, and,
 * for a service job, its queue, policy and share; the capacity limits of
 * quota shares and service environments.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct db;

struct db_sched_job {
	char *name;
	char *owner;
	char *type; /* jobs.instance_type; NULL: instance groups */
	int count;
	int64_t id; /* creation order */
	int attempt;
	char *status;
	char *secondary;
	char *message; /* of its open transition */
	int waiting;
	int64_t started_ms; /* of its current attempt; 0: none */
	char *hosts;	    /* its current attempt's, '\n'-separated; NULL */
	int preempted;	    /* its attempts that ended preempted */
	/* A service job's; queue NULL: a job sent directly. */
	char *queue; /* the job queue's ARN */
	int queue_priority;
	char *queue_state;
	char *policy_kind; /* FAIRSHARE, QUOTA_SHARE or NULL */
	int64_t decay_s;
	int reservation;
	char *share_id;
	double weight;
	char *quota_share; /* the quota share's ARN */
	int priority;	   /* schedulingPriority */
	int preempt_limit; /* preemptionRetriesBeforeTermination, -1: none */
	char *env;	   /* the queue's first service environment */
	int64_t ended_ms;  /* db_sched_ended(): the attempt's end */
};

/* Every job InProgress or Stopping, in creation order. */
int db_sched_jobs(struct db *db, struct db_sched_job **out, size_t *n,
		  struct buf *err);
void db_sched_jobs_free(struct db_sched_job *v, size_t n);

/*
 * The attempts that ended after since_ms: each as a job with the members
 * that name its share (owner, count, queue, policy_kind, share_id,
 * quota_share, decay_s), started_ms and ended_ms; for fair-share usage.
 */
int db_sched_ended(struct db *db, int64_t since_ms,
		   struct db_sched_job **out, size_t *n, struct buf *err);

/* One capacity limit of a quota share or a service environment. */
struct db_sched_cap {
	char *arn;
	char *kind; /* "quota-share" or "service-environment" */
	char *name;
	char *queue; /* a quota share's */
	char *state;
	char *strategy;
	char *in_share_preemption;
	int64_t borrow_limit;
	char *unit;
	int64_t max;
};

/* The limits of every quota share and service environment, by ARN. */
int db_sched_caps(struct db *db, struct db_sched_cap **out, size_t *n,
		  struct buf *err);
void db_sched_caps_free(struct db_sched_cap *v, size_t n);

#endif
