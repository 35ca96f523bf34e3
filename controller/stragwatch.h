#ifndef CTRL_STRAGWATCH_H
#define CTRL_STRAGWATCH_H

/*
 * Stragglers of running jobs (docs/distributed.md, "Stragglers"): the
 * scheduler figures that telemetry brings for each host of a multi-host
 * job are kept for a window, judged by the rule of controller/straggler.h
 * on every sample, and a host found slower is named once per attempt: in
 * the job's status message (Describe, the job page), the controller's log
 * and /metrics. With --straggler-action move, and a spare host free for
 * its place, the host is drained with the finding as its reason, so that
 * the job moves off it from its checkpoint as a planned move (no retry
 * spent, controller/jobrun.c).
 */
#include <stddef.h>

#include "common/buf.h"
#include "common/tm_sample.h"

struct ctrl_ctx;
struct ctrl_stragwatch;

enum ctrl_strag_action {
	CTRL_STRAG_NONE, /* not watched */
	CTRL_STRAG_NAME, /* named (the default) */
	CTRL_STRAG_MOVE	 /* named, and moved off when a spare is free */
};

/* The state, in ctx->strag (ctrl_ctx_init / ctrl_ctx_release). */
struct ctrl_stragwatch *ctrl_stragwatch_new(void);
void ctrl_stragwatch_free(struct ctrl_stragwatch *w);

/*
 * Samples s[0..n) of host, their rank entries already checked against
 * the host's assignments: kept, judged, and a straggler named (and
 * moved) when one is found. Call without any lock held.
 */
void ctrl_stragwatch_ingest(struct ctrl_ctx *ctx, const char *host,
			    const struct tm_host_sample *s, size_t n);

/*
 * The /metrics families: trainctl_job_straggler_ratio{job,algo,host}
 * for each host of a watched job, and the stragglers named so far.
 */
void ctrl_stragwatch_render_metrics(struct ctrl_ctx *ctx, struct buf *out);

#endif
