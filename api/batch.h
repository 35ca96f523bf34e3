#ifndef API_BATCH_H
#define API_BATCH_H

/*
 * AWS Batch's service-job API on the wire (docs/batch.md): the requests of
 * service environments, job queues, scheduling policies, quota shares and
 * service jobs, checked member by member against a table of the model's
 * shapes (a member no table row names is refused, not ignored), and the
 * answers of Describe and List.
 *
 * An object is stored as its canonical create request: what Create took,
 * with names resolved to ARNs and Update's members merged in. Describe
 * parses it again and writes the answer, so one parser checks what is
 * created, what an update leaves and what is read back.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

enum api_batch_kind {
	API_BATCH_ENV,	  /* service environment */
	API_BATCH_QUEUE,  /* job queue */
	API_BATCH_POLICY, /* scheduling policy */
	API_BATCH_SHARE,  /* quota share */
	API_BATCH_NKINDS
};

/* "service-environment", "job-queue", "scheduling-policy", "quota-share" */
const char *api_batch_kind_name(enum api_batch_kind k);

/* A capacity limit: maxCapacity of capacityUnit. */
struct api_batch_limit {
	char *unit;
	int64_t max;
};

/* A fair-share policy's share identifier and its weight. */
struct api_batch_weight {
	char *id;
	double weight;
};

enum api_batch_policy_kind {
	API_BATCH_POLICY_NONE,
	API_BATCH_POLICY_FAIRSHARE,
	API_BATCH_POLICY_QUOTA
};

/* One object, whichever kind (members of other kinds stay empty). */
struct api_batch_object {
	enum api_batch_kind kind;
	char *name;
	char *state;	 /* ENABLED or DISABLED (default ENABLED) */
	char *tags_json; /* a JSON object of strings, or NULL */
	/* environments and quota shares */
	struct api_batch_limit *limits;
	size_t n_limits;
	/* job queues */
	int priority;
	char *policy_arn; /* NULL: none */
	char **envs;	  /* serviceEnvironmentOrder, sorted by order */
	size_t n_envs;
	/* scheduling policies */
	enum api_batch_policy_kind policy_kind;
	int64_t decay_s;
	int reservation;
	struct api_batch_weight *weights;
	size_t n_weights;
	/* quota shares */
	char *queue;	      /* jobQueue: a name or ARN (stored: the ARN) */
	char *strategy;	      /* RESERVE, LEND or LEND_AND_BORROW */
	int64_t borrow_limit; /* -1: unlimited (LEND_AND_BORROW only) */
	char *in_share_preemption; /* ENABLED or DISABLED */
};

/*
 * Parses and checks a create request of kind k (or a stored one). Returns
 * 0 or ERR_INVALID with err naming the member; o is empty on failure.
 */
int api_batch_object_parse(enum api_batch_kind k, const char *json, size_t len,
			   struct api_batch_object *o, struct buf *err);
void api_batch_object_release(struct api_batch_object *o);

/* Writes o as its canonical create request. Returns 0 or ERR_TOOBIG. */
int api_batch_object_request(const struct api_batch_object *o, struct buf *out);

/*
 * An Update request of kind k: checks it, names the object it updates
 * (*ident, caller frees: the name or ARN given) and merges its members
 * into stored (a canonical request) as *merged (caller frees), which the
 * caller parses again. Returns 0 or ERR_INVALID (err names the member).
 */
int api_batch_update_merge(enum api_batch_kind k, const char *body, size_t len,
			   const char *stored, char **ident, char **merged,
			   struct buf *err);

/*
 * The identifier of a Delete or a DescribeQuotaShare (*ident, caller
 * frees). Returns 0 or ERR_INVALID.
 */
int api_batch_ident_parse(const char *op, const char *body, size_t len,
			  char **ident, struct buf *err);

/*
 * A Describe or List request: names (the list member, or NULL), the
 * jobQueue of ListQuotaShares, maxResults (0: none) and nextToken.
 */
struct api_batch_list_req {
	char **names;
	size_t n_names;
	char *queue;
	int max_results;
	char *next_token;
};

/* op: the operation's name, e.g. "DescribeJobQueues". */
int api_batch_list_parse(const char *op, const char *body, size_t len,
			 struct api_batch_list_req *r, struct buf *err);
void api_batch_list_req_release(struct api_batch_list_req *r);

/*
 * The answer item of an object: its canonical request stored with its
 * ARN (and for a quota share its queue's ARN in o->queue). Appends one
 * JSON object to out. Returns 0 or ERR_INVALID (a corrupt request).
 */
int api_batch_object_item(const char *stored, enum api_batch_kind k,
			  const char *arn, int list_form, struct buf *out);

/*
 * Wraps items (comma-separated JSON objects) as {"<member>":[items],
 * "nextToken"?}. Returns 0 or ERR_TOOBIG.
 */
int api_batch_items_answer(const char *member, const char *items,
			   const char *next_token, struct buf *out);

/* {"<k1>":"<v1>","<k2>":"<v2>"[,"<k3>":"<v3>"]} (k3 may be NULL). */
int api_batch_answer3(const char *k1, const char *v1, const char *k2,
		      const char *v2, const char *k3, const char *v3,
		      struct buf *out);

/* ------------------------------------------------------- service jobs */

/* SubmitServiceJob, checked. */
struct api_batch_submit {
	char *job_name;
	char *queue;
	char *payload; /* serviceRequestPayload, as sent */
	int priority;  /* schedulingPriority */
	int has_priority;
	char *share_identifier;
	char *quota_share;
	int attempts;		/* retryStrategy.attempts, 0: not given */
	int64_t timeout_s;	/* timeoutConfig.attemptDurationSeconds, 0 */
	int preemption_retries; /* -1: not given */
	char *tags_json;
	char *client_token;
};

int api_batch_submit_parse(const char *body, size_t len,
			   struct api_batch_submit *s, struct buf *err);
void api_batch_submit_release(struct api_batch_submit *s);

/*
 * The CreateTrainingJob request of a service job: the payload, with
 * TrainingJobName default_name when it has none, RetryStrategy from
 * attempts (MaximumRetryAttempts attempts - 1, when attempts > 1) and
 * StoppingCondition.MaxRuntimeInSeconds from timeout_s, each refused when
 * the payload says otherwise. *out and *name are the caller's to free.
 * Returns 0 or ERR_INVALID naming the member.
 */
int api_batch_payload(const struct api_batch_submit *s,
		      const char *default_name, char **out, char **name,
		      struct buf *err);

/* UpdateServiceJob / TerminateServiceJob / DescribeServiceJob. */
struct api_batch_job_req {
	char *job_id;
	int priority; /* Update */
	char *reason; /* Terminate */
};

int api_batch_job_req_parse(const char *op, const char *body, size_t len,
			    struct api_batch_job_req *r, struct buf *err);
void api_batch_job_req_release(struct api_batch_job_req *r);

/* ListServiceJobs. */
struct api_batch_jobs_list {
	char *queue;
	char *status;	   /* jobStatus or NULL */
	char *name;	   /* filter JOB_NAME (a trailing '*': a prefix) */
	int64_t before_ms; /* BEFORE_CREATED_AT, 0: none */
	int64_t after_ms;  /* AFTER_CREATED_AT, 0: none */
	int max_results;   /* 1..1000, default 100 */
	char *next_token;
};

int api_batch_jobs_list_parse(const char *body, size_t len,
			      struct api_batch_jobs_list *r, struct buf *err);
void api_batch_jobs_list_release(struct api_batch_jobs_list *r);

/* What a service job is, for its Describe and List entries. */
struct api_batch_job {
	const char *job_id, *arn, *name, *queue_arn;
	const char *share_identifier, *quota_share;
	int priority;
	const char *request_json; /* the SubmitServiceJob body stored */
	int64_t created_ms;
	/* its training job */
	const char *tj_arn;
	const char *tj_status, *tj_secondary, *tj_reason;
	int64_t tj_start_ms, tj_end_ms;
};

/*
 * The service job status of a training job's status and secondary
 * status (docs/batch.md has the table).
 */
const char *api_batch_job_status(const char *status, const char *secondary);

/* Whether s is one of the service job statuses. */
int api_batch_job_status_ok(const char *s);

/* DescribeServiceJob's answer, or (summary) a jobSummaryList entry. */
int api_batch_job_write(const struct api_batch_job *j, int summary,
			struct buf *out);

#endif
