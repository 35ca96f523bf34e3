#ifndef AGENT_PEERSERVE_H
#define AGENT_PEERSERVE_H

/*
 * The server of checkpoint copies to the job's other hosts
 * (agent/peerckpt.h has the paths): libmicrohttpd's threads, one per
 * connection, which share with the agent's loop only the jobs' tokens.
 */
#include "common/buf.h"

struct agent_ctx;

/*
 * Started when both --memory-checkpoint-mb and --peer-checkpoint-port are
 * set; 0 (also when off) or an error code with err (the agent then runs
 * without it).
 */
int agent_peerserve_start(struct agent_ctx *ctx, struct buf *err);
/* Hands the server the tokens of the jobs this host runs (each turn of
 * the loop; cheap). */
void agent_peerserve_run(struct agent_ctx *ctx);
void agent_peerserve_stop(struct agent_ctx *ctx);

#endif
