#ifndef CTRL_JOBRUN_H
#define CTRL_JOBRUN_H

/*
 * The job half of the reconciler: places waiting jobs on free hosts,
 * follows each attempt through the agents' reports, and ends it (Completed,
 * Failed, Stopped, MaxRuntimeExceeded), collecting the model.
 */
struct ctrl_ctx;

struct buf;

void ctrl_jobs_reconcile(struct ctrl_ctx *ctx);

/* Why a queued job waits: "Waiting for 2 free hosts of type T (1 free now)". */
void ctrl_wait_message(struct buf *b, int want, const char *type, int free);

#endif
