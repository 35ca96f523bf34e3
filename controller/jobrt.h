#ifndef CTRL_JOBRT_H
#define CTRL_JOBRT_H

/*
 * What the controller keeps in memory per active job so that hot paths
 * (placement, log ingestion, assignments) do not parse the request again:
 * the parsed spec and distribution and the compiled MetricDefinitions.
 * A create puts the request it parsed (ctrl_jobrt_put); anything else is
 * rebuilt from the store on demand, so losing it (a restart) loses
 * nothing. A hash table by job name, guarded by ctx->jobs_lock; nothing
 * reads the store, parses JSON or compiles a regex while holding it.
 */
#include <stdint.h>

#include "api/distribution.h"
#include "api/job_spec.h"
#include "common/bregex.h"

struct ctrl_ctx;
struct db_job;

/*
 * One MetricDefinition, compiled with the bounds of common/bregex.h, and
 * what matching it has cost so far (atomics: batches of several hosts
 * match it at once). A definition that keeps hitting the bounds or costs
 * too much CPU per line is disabled for the rest of the job, once, with a
 * line in the job's log saying so (controller/obs/logs.c).
 */
/* Bytes of a line a MetricDefinition is matched against. */
#define CTRL_METRIC_SUBJECT_MAX 1024

struct ctrl_metric_def {
	char *name;
	struct bregex *re; /* NULL: it did not compile */
	int64_t cpu_ns;	   /* matcher CPU time spent on it */
	int64_t lines;	   /* lines it was matched against */
	int limit_hits;	   /* matches stopped by a bound */
	int disabled;
};

/*
 * The MetricDefinitions of a job, shared by reference so that log
 * ingestion matches them without jobs_lock: a batch takes a reference
 * under the lock and drops it when done, even if the job ended meanwhile.
 */
struct ctrl_metric_set {
	int refs; /* atomic */
	size_t n;
	struct ctrl_metric_def *defs;
};

/* Takes a reference (any thread) / drops one, freeing the last. */
struct ctrl_metric_set *ctrl_metric_set_ref(struct ctrl_metric_set *ms);
void ctrl_metric_set_unref(struct ctrl_metric_set *ms);

struct ctrl_jobrt {
	char *name;
	char *uid;    /* db_job.uid; may be NULL */
	char *run_as; /* db_job.run_as; NULL: the agent's own user */
	char *owner;  /* db_job.owner; "" or NULL: none */
	struct api_job_spec spec;
	/* The distribution of spec; when it does not parse, dist_err says
	 * why (read both with ctrl_jobrt_dist()). */
	struct api_distribution dist;
	char *dist_err;
	struct ctrl_metric_set *metrics; /* one def per spec.metrics */
	/* Its container image pinned by digest (db_job.image), NULL until
	 * pinned; while a pin runs, pinning; a pin that failed, why. */
	char *image;
	int pinning;
	char *pin_error;
	int checks_released; /* attempt whose hosts all passed their checks,
			      * told to them (controller/jobrun.c) */
	int attempt;	     /* attempt whose start time is cached */
	int64_t attempt_start_ms;
	int64_t attempt_stream_s; /* the epoch second in its stream names */
	struct ctrl_jobrt *next;  /* in its hash bucket */
};

/*
 * A job that finds no hosts keeps its runtime while no more than this many
 * jobs have one; beyond it the runtime is given up and loaded again when
 * the job can run, so a long queue costs little memory. (A job queued as
 * it is created gets none until a pass looks at it.)
 */
#define CTRL_JOBRT_QUEUED_MAX 4096

/*
 * The runtime of job name, loaded from the store when not cached; NULL
 * when the job does not exist. Caller holds jobs_lock. On a miss the lock
 * is released while the store is read and the request parsed, and taken
 * again: a runtime the caller found before the call may be gone after it.
 */
struct ctrl_jobrt *ctrl_jobrt_get(struct ctrl_ctx *ctx, const char *name);

/* The cached runtime of job name, or NULL. Caller holds jobs_lock. */
struct ctrl_jobrt *ctrl_jobrt_find(struct ctrl_ctx *ctx, const char *name);

/* How many jobs have a runtime cached. Caller holds jobs_lock. */
size_t ctrl_jobrt_count(const struct ctrl_ctx *ctx);

/*
 * A job just stored (job: its name, uid, owner, run_as and image) with
 * the spec and distribution its create parsed: both are taken (left
 * empty). A runtime of an earlier job of the same name is replaced.
 * Takes jobs_lock.
 */
void ctrl_jobrt_put(struct ctrl_ctx *ctx, const struct db_job *job,
		    struct api_job_spec *spec, struct api_distribution *dist);

/* rt's distribution: 0 and *d, or ERR_INVALID with err saying why. */
int ctrl_jobrt_dist(const struct ctrl_jobrt *rt,
		    const struct api_distribution **d, struct buf *err);

/* Forgets job name (it ended or was deleted). Takes jobs_lock. */
void ctrl_jobrt_drop(struct ctrl_ctx *ctx, const char *name);

/* Frees every cached job. */
void ctrl_jobrt_release_all(struct ctrl_ctx *ctx);

#endif
