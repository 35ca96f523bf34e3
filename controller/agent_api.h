#ifndef CTRL_AGENT_API_H
#define CTRL_AGENT_API_H

/* The agents' endpoints (docs/agent-protocol.md): their rows, the end of
 * an artifact upload, and a log batch stored on an I/O worker. */
#include "controller/request.h"

struct ctrl_ctx;

extern const struct ctrl_route_block ctrl_agent_routes;

/*
 * The agent protocol's PUT artifacts (controller/agent_api.c) streams to
 * req->sink_fd; this stores the file once it is read.
 */
void ctrl_agent_upload_done(struct ctrl_ctx *ctx, struct ctrl_http_req *req,
			    struct ctrl_response *resp);
/* Frees req->log_step when the request ends; NULL is fine. */
void ctrl_agent_log_step_free(struct ctrl_log_step *s);

/* GET /v1/training-jobs/{name}/logs (controller/obs/logs.c). */

#endif
