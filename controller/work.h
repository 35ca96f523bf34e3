#ifndef CTRL_WORK_H
#define CTRL_WORK_H

#include <stdint.h>

#include "common/buf.h"

struct ctrl_ctx;

/*
 * Appends the desired state of host (docs/agent-protocol.md, GET work) at
 * version to out: every assignment the store holds for the host, built
 * from its job's request. Returns 0 or an error with err set.
 */
int ctrl_work_build(struct ctrl_ctx *ctx, const char *host, int64_t version,
		    struct buf *out, struct buf *err);

/* The path where an uploaded artifact of an assignment is kept. */
int ctrl_artifact_path(struct ctrl_ctx *ctx, const char *job, int attempt,
		       int host_index, const char *file, struct buf *out);

#endif
