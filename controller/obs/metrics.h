#ifndef CTRL_METRICS_H
#define CTRL_METRICS_H

/*
 * The controller's own health in the Prometheus text format (version
 * 0.0.4), served at GET /metrics. Two kinds of numbers:
 *
 *  - counters the hot paths bump: API requests by operation and status,
 *    their latency histogram, log lines ingested. Each bump is one relaxed
 *    atomic add on a fixed slot, never a lock or an allocation;
 *  - gauges read from the store and the host table at scrape time: jobs
 *    by status, hosts by state, heartbeat age, restarts.
 *
 * The counters are process-wide: one controller runs per process, and the
 * HTTP layer that bumps them has no context at hand in every place.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct ctrl_ctx;
struct ctrl_response;
struct MHD_Connection;

/*
 * Counts one answered request: the operation is worked out from method,
 * url and the X-Amz-Target header (a fixed set of names, so labels stay
 * few), status is the HTTP status sent, us the time since the request
 * arrived. Lock-free.
 */
void ctrl_metrics_request(struct MHD_Connection *conn, const char *method,
			  const char *url, int status, int64_t us);

/* Counts n log lines stored by ctrl_logs_ingest(). Lock-free. */
void ctrl_metrics_log_lines(size_t n);

/* Counts a host drained by the quarantine. Lock-free. */
void ctrl_metrics_host_quarantined(void);

/*
 * Counts a rule's verdict: kind (enum ctrl_rule_kind, the rule invoked)
 * reached status (enum ctrl_rule_status, not InProgress), for
 * trainctl_rule_verdicts_total and trainctl_rule_issues_found_total.
 * Lock-free.
 */
void ctrl_metrics_rule_verdict(int kind, int status);

/*
 * The operation label ctrl_metrics_request() uses for a request (static
 * text, never NULL): "CreateTrainingJob", "logs:GetLogEvents",
 * "rest:DescribeTrainingJob", "agent:work", "web:changes", "other".
 * target is the X-Amz-Target header or NULL.
 */
const char *ctrl_metrics_operation(const char *method, const char *url,
				   const char *target);

/*
 * Appends the counters and the histogram (no store or host access) to
 * out, which should have no max (an append past it is cut off).
 */
void ctrl_metrics_render_counters(struct buf *out);

/* Fills resp with GET /metrics: every metric, as text/plain 0.0.4. */
void ctrl_metrics_serve(struct ctrl_ctx *ctx, struct ctrl_response *resp);

/* The media type of the /metrics answer. */
#define CTRL_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
