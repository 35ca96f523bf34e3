#ifndef AGENT_ASSIGN_H
#define AGENT_ASSIGN_H

/*
 * The state machine that moves each assignment towards what the
 * controller wants, and its bookkeeping (agent/assign.c).
 */
#include <stddef.h>
#include <stdint.h>

#include "agent/assignment.h"
#include "api/agent_proto.h"
#include "common/buf.h"

struct agent_ctx;

/* Bookkeeping, the steps, reports. */
struct agent_assign *agent_assign_find(struct agent_ctx *ctx, const char *job,
				       const char *uid, int attempt,
				       const char *algo);
/* A new assignment in phase preparing, appended to ctx->assigns. */
struct agent_assign *agent_assign_new(struct agent_ctx *ctx, const char *job,
				      const char *uid, int attempt,
				      const char *algo);
/* The agent's own note in a job's log ("trainagent: ..."), rank 0 stderr. */
void agent_assign_note(struct agent_ctx *ctx, const struct agent_assign *a,
		       const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void agent_reconcile(struct agent_ctx *ctx);
void agent_assign_fence_all(struct agent_ctx *ctx, const char *why);
void agent_assign_shutdown(struct agent_ctx *ctx, int sig);
int agent_assign_all_quiet(struct agent_ctx *ctx);
void agent_assign_mark(struct agent_ctx *ctx, struct agent_assign *a);
void agent_assign_set_phase(struct agent_ctx *ctx, struct agent_assign *a,
			    enum api_phase phase);
/*
 * Appends the status body (every assignment's REPORT) to out; the reports
 * of forgotten-to-be assignments are marked as in flight, and
 * agent_assign_status_done() says whether the controller took them.
 */
int agent_assign_status_build(struct agent_ctx *ctx, struct buf *out);
void agent_assign_status_done(struct agent_ctx *ctx, int ok);
int64_t agent_assign_next(struct agent_ctx *ctx);
void agent_assign_free(struct agent_ctx *ctx, struct agent_assign *a);
/* Logs one line of a job's output (text need not be NUL-terminated). */
void agent_assign_log(struct agent_ctx *ctx, const struct agent_assign *a,
		      int rank, int is_stderr, const char *text, size_t len);

/* Files of the checkpoint folder completed: mirror them soon. */
void agent_assign_on_watch(struct agent_ctx *ctx, struct agent_assign *a);
/* Watches the checkpoint folder of a running assignment (launch, adoption). */
void agent_assign_watch_checkpoints(struct agent_assign *a);

#endif
