#ifndef CTRL_JOBRUN_H
#define CTRL_JOBRUN_H

/*
 * The job half of the reconciler: places waiting jobs on free hosts,
 * follows each attempt through the agents' reports, and ends it (Completed,
 * Failed, Stopped, MaxRuntimeExceeded), collecting the model.
 */
struct ctrl_ctx;

void ctrl_jobs_reconcile(struct ctrl_ctx *ctx);

#endif
