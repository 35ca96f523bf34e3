#ifndef CTRL_JOBRT_H
#define CTRL_JOBRT_H

/*
 * What the controller keeps in memory per active job so that hot paths (log
 * ingestion, assignments) do not reparse the request: the parsed spec and the
 * compiled MetricDefinitions. Rebuilt from the store on demand, so losing it
 * (a restart) loses nothing. Guarded by ctx->jobs_lock.
 */
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "api/job_spec.h"

struct ctrl_ctx;

struct ctrl_jobrt {
	char *name;
	char *uid;    /* db_job.uid; may be NULL */
	char *run_as; /* db_job.run_as; NULL: the agent's own user */
	struct api_job_spec spec;
	pcre2_code **regexes; /* one per spec.metrics, NULL if it did not
				 compile */
	/* Its container image pinned by digest (db_job.image), NULL until
	 * pinned; while a pin runs, pinning; a pin that failed, why. */
	char *image;
	int pinning;
	char *pin_error;
	int attempt;	      /* attempt whose start time is cached */
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
