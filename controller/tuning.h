#ifndef CTRL_TUNING_H
#define CTRL_TUNING_H

/*
 * Hyperparameter tuning jobs (docs/tuning.md): the operations, and the
 * reconciler's step that launches, stops and ends their training jobs.
 * A tuning job keeps no state outside the store: each step reads the
 * job, its training jobs and their metrics, and asks the optimizer
 * (tuner/tuner.h) again, so that a restart simply looks again.
 *
 * This header is the face of controller/tuning/: ops.c answers the
 * operations and the status page, step.c runs the reconciler's step,
 * plan.c makes its decisions as pure functions (tests/controller/
 * test_tuning_plan.c), and job.c loads a tuning job with its training
 * jobs for both.
 */
#include <stddef.h>

#include "common/buf.h"
#include "controller/caller.h"
#include "controller/reply.h"

void ctrl_op_tuning_create(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const char *body, size_t len,
			   struct ctrl_response *resp);
void ctrl_op_tuning_describe(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who, const char *body,
			     size_t len, struct ctrl_response *resp);
void ctrl_op_tuning_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const char *body, size_t len,
			 struct ctrl_response *resp);
void ctrl_op_tuning_stop(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const char *body, size_t len,
			 struct ctrl_response *resp);
void ctrl_op_tuning_delete(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const char *body, size_t len,
			   struct ctrl_response *resp);
void ctrl_op_tuning_children(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who, const char *body,
			     size_t len, struct ctrl_response *resp);

/*
 * The status page's views: every tuning job of who (the List answer's
 * shape, newest first), and one tuning job's Describe with every training
 * job as "TrainingJobSummaries". Return 0 or an ERR_* code (err says why).
 */
int ctrl_tuning_page_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			  struct buf *out, struct buf *err);
int ctrl_tuning_page_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const char *name, struct buf *out, struct buf *err);

/*
 * Whether who may see tuning job name: 0, or ERR_NOTFOUND (none, or
 * another user's), with err saying so.
 */
int ctrl_tuning_check(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      const char *name, struct buf *err);

/* The reconciler's step: every InProgress or Stopping tuning job. */
void ctrl_tuning_tick(struct ctrl_ctx *ctx);

/* Something a tuning job may react to changed (a create, a stop): the
 * reconciler runs the step at once. */
void ctrl_tuning_wake(struct ctrl_ctx *ctx);

/* Frees what the step keeps in ctx->tuning (ctrl_ctx_release()). */
void ctrl_tuning_release(struct ctrl_ctx *ctx);

#endif
