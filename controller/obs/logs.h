#ifndef CTRL_LOGS_H
#define CTRL_LOGS_H

/*
 * Job logs: lines from the agents go to one append-only file per stream
 * (CloudWatch's naming, <job>/algo-<n>-<epoch of the attempt's start>) under
 * <state-dir>/logs/<job>/, indexed in the store; MetricDefinitions are
 * applied to every line on the way in. A later attempt's file starts with
 * a line that says so ("==== trainctl: attempt N of this job starts
 * here ... ===="): CloudWatch's face shows a host's files as one stream.
 */
#include <stdint.h>

#include "api/agent_proto.h"
#include "controller/request.h"
#include "common/buf.h"

struct ctrl_ctx;
struct MHD_Connection;

/*
 * Stores a batch of lines from host and wakes log followers. 0, or -1
 * when a replicated controller could not copy them to another member
 * (they are stored here; ctrl_repl_log_settle() sends them again).
 */
int ctrl_logs_ingest(struct ctrl_ctx *ctx, const char *host,
		     const struct api_log_batch *b);

/*
 * A line of the controller's own in the log of job's attempt (algo-1's
 * stream, stderr), as if its agent had sent it.
 */
void ctrl_logs_note(struct ctrl_ctx *ctx, const char *job, int attempt,
		    const char *text);

/*
 * Whether a line of b belongs to a job with MetricDefinitions still
 * enabled: storing b then matches user regexes, bounded but not free, so
 * the caller stores it off the HTTP threads (controller/agent_api.c).
 */
int ctrl_logs_has_metric_defs(struct ctrl_ctx *ctx,
			      const struct api_log_batch *b);

/* The file of stream (the part after "<job>/") of job. */
int ctrl_logs_path(struct ctrl_ctx *ctx, const char *job, const char *stream,
		   struct buf *out);

/*
 * The second that names the streams of attempt `attempt` of job
 * (<algo>-<second>), and when the attempt started (*started_ms, may be
 * NULL). Returns -1 when the attempt is unknown.
 */
int64_t ctrl_logs_stream_epoch(struct ctrl_ctx *ctx, const char *job,
			       int attempt, int64_t *started_ms);

/* GET /v1/training-jobs/{name}/logs (controller/rest.c): a job's log
 * lines, or a follower's long-poll. */
enum ctrl_route_result ctrl_logs_route(struct ctrl_ctx *ctx,
				       struct MHD_Connection *conn,
				       const char *name,
				       struct ctrl_http_req *req,
				       struct ctrl_response *resp);

#endif
