#ifndef CTRL_REQUEST_H
#define CTRL_REQUEST_H

/*
 * A request in flight: what libmicrohttpd's plumbing (controller/http.c),
 * the front door (controller/front.c) and the handlers of the route
 * table's rows share about it. Handlers include this, not http.h.
 */
#include <stdint.h>

#include "controller/caller.h"
#include "controller/reply.h"
#include "controller/route.h"
#include "storage/s3d/blob.h"
#include "storage/s3d/s3d.h"
#include "common/buf.h"

struct s3d_blob;
struct ctrl_logsearch;
struct ctrl_log_step;

/* Per-request state, from the URI log callback to the completion one. */
struct ctrl_http_req {
	char *raw_uri;
	struct buf body;
	int started;
	int too_big;
	int agent_port; /* came to --agent-listen */
	int64_t t0_us;
	int suspended; /* waiting in a waiter list */
	int resumed;   /* set by whoever resumed it */
	/* Streaming upload: the body goes to sink_fd instead of `body`. */
	int sink_fd;
	char *sink_tmp; /* temp file to rename on success */
	char *sink_final;
	long long sink_bytes;
	long long sink_max;
	int sink_error; /* a write failed */
	/* What the finishing step needs to know about the upload. */
	char *sink_job;
	int sink_attempt;
	int sink_host_index;
	int sink_bit;
	/* A blob request (storage/s3d/blob.h), NULL otherwise. */
	struct s3d_blob *blob;
	/* An S3 request (storage/s3d/s3d.h), NULL otherwise. */
	struct s3d *s3;
	/* A log search handed to a worker (controller/obs/logview.h). */
	struct ctrl_logsearch *logsearch;
	/* A log batch being stored by a worker (controller/agent_api.c). */
	struct ctrl_log_step *log_step;
	char s3_rid[37];
	struct s3d_reply s3_reply; /* set by the finishing step */
	int s3_done;		   /* s3_reply holds a reply to send */
	/* A blob request finished on a worker (a replicated controller's
	 * copy, controller/replicate.h): the reply to send. */
	struct s3d_blob_reply blob_reply;
	int blob_done;
	char *fence; /* its X-Trainctl-Fence: "job/uid/attempt", or NULL */
	/* Who signed it (set once authenticated; admin without
	 * credentials). */
	struct ctrl_caller caller;
	/* Its row of the route table (controller/front.h), once picked, and
	 * what the row's sniffer said. */
	const struct ctrl_route *route;
	int route_val;
};

/* A fresh request id in UUID v4 form. */

#endif
