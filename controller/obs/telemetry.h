#ifndef CTRL_TELEMETRY_H
#define CTRL_TELEMETRY_H

/*
 * Hosts' telemetry (docs/agent-protocol.md, "Telemetry"): what agents
 * send with their status heartbeats is checked, kept in memory as each
 * host's latest sample (GET /v1/hosts, /metrics, the job runtime view)
 * and stored (db/telemetry.h) for the series of
 * GET /v1/hosts/{name}/telemetry and the CloudWatch host metrics of
 * /aws/sagemaker/TrainingJobs (controller/obs/cwmetrics.c).
 */
#include <stddef.h>
#include <stdint.h>

#include "api/telemetry.h"
#include "common/buf.h"

struct ctrl_ctx;
struct ctrl_response;

/* Defaults of --telemetry-retention (hours) and --telemetry-job-retention
 * (days: as long as CloudWatch keeps one-minute data). */
#define CTRL_TM_RETENTION_H 24
#define CTRL_TM_JOB_RETENTION_D 15

/* Samples closer than this to the host's previous one are dropped. */
#define CTRL_TM_MIN_SPACING_MS 500

/* Samples newer than now + this are refused (a clock far ahead). */
#define CTRL_TM_FUTURE_MS (5 * 60 * 1000)

/* Most samples one GET /v1/hosts/{name}/telemetry answers. */
#define CTRL_TM_SERIES_MAX 5000

/* Opens <state-dir>/telemetry.db. Returns 0 or ERR_DB with err. */
int ctrl_tm_open(struct ctrl_ctx *ctx, struct buf *err);
void ctrl_tm_close(struct ctrl_ctx *ctx);

/*
 * Takes the samples of a status of host (validated by the parser): keeps
 * those within the retention, not in the future and at least
 * CTRL_TM_MIN_SPACING_MS after the host's previous one; remembers the
 * newest as the host's latest; stores them; prunes old rows at most once
 * a minute. Failures are logged: telemetry never fails a heartbeat.
 */
void ctrl_tm_ingest(struct ctrl_ctx *ctx, const char *host,
		    const struct tm_host_sample *s, size_t n);

/*
 * host's latest sample, without its ranks (a deep copy into out, to
 * release). Caller holds hosts_lock. Returns 1, or 0 when there is none.
 */
struct ctrl_host;
int ctrl_tm_latest(const struct ctrl_host *h, struct tm_host_sample *out);

/*
 * GET /v1/hosts/{name}/telemetry?start=MS&end=MS (path is what follows
 * /v1/hosts/; start and end may be NULL: the last hour until now). Fills
 * resp.
 */
void ctrl_tm_series_route(struct ctrl_ctx *ctx, const char *path,
			  const char *start, const char *end,
			  struct ctrl_response *resp);

/* Samples per node GET /v1/ui/jobs/NAME/telemetry answers by default. */
#define CTRL_TM_JOB_POINTS 600

/*
 * GET /v1/ui/jobs/NAME/telemetry?since_ms=T&max=N (the caller may read
 * the job): each node's samples newer than T, thinned evenly to at most N
 * (1..CTRL_TM_SERIES_MAX) with the newest kept. Fills resp.
 */
void ctrl_tm_job_route(struct ctrl_ctx *ctx, const char *job, const char *since,
		       const char *max, struct ctrl_response *resp);

/* Appends the per-host gauges of /metrics to out. */
void ctrl_tm_render_metrics(struct ctrl_ctx *ctx, struct buf *out);

#endif
