#ifndef CTRL_JOBRT_H
#define CTRL_JOBRT_H

/*
 * What the controller keeps in memory per active job so that hot paths (log
 * ingestion, assignments) do not reparse the request: the parsed spec and the
 * compiled MetricDefinitions. Rebuilt from the store on demand, so losing it
 * (a restart) loses nothing. Guarded by ctx->jobs_lock.
 */
#include <stdint.h>

#include "api/job_spec.h"
#include "common/bregex.h"

struct ctrl_ctx;

/*
 * One MetricDefinition, compiled with the bounds of common/bregex.h, and
 * what matching it has cost so far (atomics: batches of several hosts
 * match it at once). A definition that keeps hitting the bounds or costs
 * too much CPU per line is disabled for the rest of the job, once, with a
 * line in the job's log saying so (controller/logs.c).
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
	struct ctrl_metric_set *metrics; /* one def per spec.metrics */
	/* Its container image pinned by digest (db_job.image), NULL until
	 * pinned; while a pin runs, pinning; a pin that failed, why. */
	char *image;
	int pinning;
	char *pin_error;
	int attempt; /* attempt whose start time is cached */
	int64_t attempt_start_ms;
	int64_t attempt_stream_s; /* the epoch second in its stream names */
	struct ctrl_jobrt *next;
};

/*
 * The runtime of job name, loaded from the store when not cached. Caller
 * holds jobs_lock. NULL when the job does not exist.
 */
struct ctrl_jobrt *ctrl_jobrt_get(struct ctrl_ctx *ctx, const char *name);

/* Forgets job name (it ended or was deleted). Takes jobs_lock. */
void ctrl_jobrt_drop(struct ctrl_ctx *ctx, const char *name);

/* Frees every cached job. */
void ctrl_jobrt_release_all(struct ctrl_ctx *ctx);

#endif
