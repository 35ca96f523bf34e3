#ifndef AGENT_STAGE_H
#define AGENT_STAGE_H

/* Staging: what a job needs before it starts (agent/stage.c). */
#include "api/agent_proto.h"
#include "common/buf.h"

struct agent_ctx;
struct agent_assign;
struct stor_config;

/* Storage settings for an assignment (the caller releases cfg). */
void agent_stor_config(struct agent_ctx *ctx, const struct api_assignment *s,
		       struct stor_config *cfg);
/* Whether the assignment has anything to download (checkpoints, channels,
 * code); without, it launches without a staging worker. */
int agent_stage_needed(const struct agent_ctx *ctx,
		       const struct api_assignment *s);
int agent_stage_start(struct agent_ctx *ctx, struct agent_assign *a,
		      struct buf *err);

#endif
