#ifndef AGENT_LAUNCH_H
#define AGENT_LAUNCH_H

/* The argv and environment of a job's ranks, and their start (agent/launch.c).
 */
#include "common/buf.h"

struct agent_ctx;
struct agent_assign;

/* The PATH a job's processes start from. */
#define AGENT_BASE_PATH \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
int agent_launch(struct agent_ctx *ctx, struct agent_assign *a,
		 struct buf *err);

#endif
