#ifndef CTRL_LOCAL_CLUSTER_H
#define CTRL_LOCAL_CLUSTER_H

/*
 * The embedded local cluster: with no inventory, trainctld runs
 * --local-hosts agents on this machine (hosts local-1 .. local-N), each with
 * its own work directory and token. They speak the same protocol as remote
 * agents; only the way they are started differs. An agent that dies is
 * started again; agents left running by a controller that was killed are
 * adopted, not duplicated.
 */
#include "common/buf.h"

struct ctrl_ctx;

int ctrl_local_start(struct ctrl_ctx *ctx, struct buf *err);

/* Reaps and restarts agents; called by the reconciler. */
void ctrl_local_tick(struct ctrl_ctx *ctx);

/* Stops every local agent (SIGTERM, then SIGKILL after a few seconds). */
void ctrl_local_stop(struct ctrl_ctx *ctx);

#endif
