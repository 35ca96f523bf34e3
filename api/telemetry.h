#ifndef API_TELEMETRY_H
#define API_TELEMETRY_H

/*
 * Host and rank telemetry on the wire (docs/agent-protocol.md, "Telemetry"):
 * the samples an agent sends with its status heartbeat, and the JSON the
 * controller serves them as (GET /v1/hosts, /v1/hosts/{name}/telemetry,
 * the job runtime view). Plain C structs; parsed and built here only.
 */
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/tm_sample.h"

/*
 * What the parser accepts in one status message: a bigger batch or list
 * is refused with ERR_INVALID and a message naming the member and the
 * limit. An agent that could not send for a while keeps only the newest
 * API_TELEMETRY_MAX_SAMPLES samples.
 */
#define API_TELEMETRY_MAX_SAMPLES 64 /* samples in one status */
#define API_TELEMETRY_MAX_GPUS 64    /* GPUs of one sample */
#define API_TELEMETRY_MAX_RANKS 256  /* assignments of one sample */

/*
 * The "telemetry" member of a status message: reads root's member into
 * *out and *n (NULL and 0 when absent or null; caller releases each and
 * frees the array). Returns 0, or ERR_INVALID with err naming the member
 * ("telemetry[3].cpu_percent must be 0..100"); nothing to free then.
 * Internal to api/: agent_status.c calls it from api_status_parse().
 */
int api__telemetry_parse(const json_t *root, struct tm_host_sample **out,
			 size_t *n, struct buf *err);

/* One sample as api_host_sample_build() writes it (a new reference). */
json_t *api__host_sample_json(const struct tm_host_sample *s);

/* The JSON array of samples s[0..n) (a new reference), NULL: no memory. */
json_t *api__telemetry_json(const struct tm_host_sample *s, size_t n);

/*
 * One sample as the controller serves it: the members above plus the
 * derived percentages ("mem_percent", "disk_percent", "gpu_percent",
 * "gpu_mem_percent"). Appends compact JSON to out; 0, ERR_TOOBIG or
 * ERR_NOMEM.
 */
int api_host_sample_build(const struct tm_host_sample *s, struct buf *out);

/*
 * GET /v1/hosts/{name}/telemetry: {"host", "start_ms", "end_ms",
 * "truncated", "samples": [SAMPLE...]} in time order, each SAMPLE as
 * api_host_sample_build() writes it plus per-second rates of the counters
 * since the sample before it ("disk_read_bps", "disk_write_bps",
 * "net_rx_bps", "net_tx_bps"; absent for the first).
 */
int api_telemetry_series_build(const char *host, int64_t start_ms,
			       int64_t end_ms, int truncated,
			       const struct tm_host_sample *s, size_t n,
			       struct buf *out);

/* One sample of the host a job's node ran on, while it ran the job. */
struct api_tm_job_point {
	int64_t ts_ms;
	int attempt;
	const char *host;
	double cpu_percent; /* the host's, of all cores, 0..100; < 0: unknown */
	double mem_percent;
	double disk_percent;
	double gpu_percent;	/* the sum over GPUs, 0..100 x GPUs */
	double gpu_mem_percent; /* the same for their memory */
	double job_cpu_percent; /* the job's processes, of one core */
	int64_t job_rss_bytes;
};

/* A node (algo-N) of a job and its samples. */
struct api_tm_job_node {
	const char *algo;
	const struct api_tm_job_point *points;
	size_t n;
	size_t total; /* samples in the range before thinning */
};

/*
 * GET /v1/ui/jobs/NAME/telemetry: {"job", "last_ms", "nodes": [{"algo",
 * "host", "attempt" (of its newest sample), "total", "samples":
 * [{"ts_ms", "attempt", "host", "cpu_percent" (null: unknown),
 * "mem_percent", "disk_percent", "gpu_percent", "gpu_mem_percent",
 * "job_cpu_percent", "job_rss_bytes"}...]}]}.
 */
int api_tm_job_build(const char *job, int64_t last_ms,
		     const struct api_tm_job_node *nodes, size_t n,
		     struct buf *out);

#endif
