#ifndef AGENT_PEERSERVE_H
#define AGENT_PEERSERVE_H

/*
 * The server of checkpoint copies to the job's other hosts
 * (agent/peerckpt.h has the paths), in the agent's poll loop: libmicrohttpd
 * with its epoll descriptor polled there, so the agent stays one thread.
 */
#include <stdint.h>

#include "common/buf.h"

struct agent_ctx;

/*
 * Started when both --memory-checkpoint-mb and --peer-checkpoint-port are
 * set; 0 (also when off) or an error code with err (the agent then runs
 * without it).
 */
int agent_peerserve_start(struct agent_ctx *ctx, struct buf *err);
/* The descriptor to poll for it, -1 when off. */
int agent_peerserve_fd(const struct agent_ctx *ctx);
/* When it next needs agent_peerserve_run() (monotonic ms), INT64_MAX. */
int64_t agent_peerserve_next(const struct agent_ctx *ctx);
/* Serves what is ready; cheap when nothing is. */
void agent_peerserve_run(struct agent_ctx *ctx);
void agent_peerserve_stop(struct agent_ctx *ctx);

#endif
