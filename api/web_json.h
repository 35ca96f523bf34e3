#ifndef API_WEB_JSON_H
#define API_WEB_JSON_H

/*
 * The JSON the status page reads besides the SageMaker and REST answers
 * (docs/web.md):
 *
 *   GET /v1/ui/jobs          {"jobs": [job...], "next_token"}
 *   GET /v1/ui/jobs/{name}   {"name", "attempt", "stop_reason", "hosts",
 *                             "first_failure", "streams", "metric_names"}
 *   GET /v1/ui/jobs/{name}/metrics
 *                            {"metrics": [{"name", "points": [[ms, v]]}],
 *                             "last_ms"}
 *   GET /v1/changes          {"cursor", "jobs", "logs", "hosts"}
 *
 * Times are epoch milliseconds. Nothing in these structs is owned: they
 * point into the caller's data. Builders append compact JSON to out and
 * return 0, ERR_INVALID (a string that is not UTF-8) or ERR_TOOBIG.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/agent_proto.h"
#include "common/buf.h"

struct tm_host_sample;
struct tm_rank_sample;

/* One row of the jobs list. */
struct api_web_job {
	const char *name;
	const char *status;
	const char *secondary_status;
	const char *instance_type; /* may be NULL (instance groups) */
	int instance_count;
	int attempt;
	const char *failure_reason; /* may be NULL */
	int64_t creation_ms;
	int64_t start_ms; /* 0 = not yet */
	int64_t end_ms;	  /* 0 = not yet */
	int64_t last_modified_ms;
};

int api_web_jobs_build(const struct api_web_job *j, size_t n,
		       const char *next_token, struct buf *out);

/* A host of the job's current attempt, with its agent's last report. */
struct api_web_host {
	const char *algo;	  /* "algo-1" */
	const char *host;	  /* the real host */
	const char *host_state;	  /* ready, busy, lost, provisioning */
	int64_t heartbeat_age_ms; /* -1: never */
	int attempt;
	const char *action; /* run, stop, abort */
	const char *phase;  /* assigned or a REPORT phase */
	const struct api_proc_report *procs;
	size_t n_procs;
	const char *failure; /* output/failure text, may be NULL */
	const char *error;   /* agent-side error, may be NULL */
	/* The host's latest telemetry sample ("telemetry", null when
	 * NULL), and the job's processes on it in that sample (its "job"
	 * member: cpu_percent, rss_bytes, procs; null when NULL). */
	const struct tm_host_sample *telemetry;
	const struct tm_rank_sample *job_procs;
};

/* The rank that failed first (in time) in the current attempt. */
struct api_web_failure {
	const char *algo;
	const char *host;
	int rank;
	int exit_code;
	int signal;
	int64_t exited_ms;
};

struct api_web_stream {
	const char *name; /* full: "<job>/algo-1-1796211299" */
	int host_index;	  /* 0-based */
	int64_t created_ms;
};

struct api_web_runtime {
	const char *name;
	int attempt;
	const char *stop_reason; /* may be NULL */
	const struct api_web_host *hosts;
	size_t n_hosts;
	const struct api_web_failure *first_failure; /* NULL: none */
	const struct api_web_stream *streams;
	size_t n_streams;
	const char *const *metric_names; /* MetricDefinitions, in order */
	size_t n_metric_names;
};

int api_web_runtime_build(const struct api_web_runtime *rt, struct buf *out);

struct api_web_point {
	int64_t ts_ms;
	double value;
	int host; /* algo-N's N; 0: not known */
};

struct api_web_series {
	const char *name;
	const struct api_web_point *points;
	size_t n;
};

/*
 * last_ms: the newest point's time over all series (0 = no points). The
 * body's "hosts" lists algo-1 .. algo-M for the highest host M of any
 * point; a point of host N is [ts_ms, value, N - 1], of no known host
 * [ts_ms, value].
 */
int api_web_metrics_build(const struct api_web_series *s, size_t n,
			  int64_t last_ms, struct buf *out);

/* What changed since the cursor the client sent. */
int api_web_changes_build(const char *cursor, int jobs, int logs, int hosts,
			  struct buf *out);

#endif
