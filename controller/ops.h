#ifndef CTRL_OPS_H
#define CTRL_OPS_H

#include <stddef.h>

#include "api/requests.h"
#include "controller/caller.h"
#include "controller/reply.h"
#include "common/buf.h"

struct ctrl_ctx;
struct db_service_job;
struct ctrl_route_block;

/* The operations; body is the JSON 1.1 request. */
void ctrl_op_create(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *body, size_t len, struct ctrl_response *resp);
void ctrl_op_describe(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      const char *body, size_t len, struct ctrl_response *resp);
void ctrl_op_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		  const char *body, size_t len, struct ctrl_response *resp);
void ctrl_op_list_query(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			const struct api_query_arg *args, size_t n,
			struct ctrl_response *resp);
void ctrl_op_stop(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		  const char *body, size_t len, struct ctrl_response *resp);
void ctrl_op_delete(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *body, size_t len, struct ctrl_response *resp);

/*
 * The same on a job named by a name already checked (the REST face
 * checks it with api_job_name_check()).
 */
void ctrl_job_describe(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		       const char *name, struct ctrl_response *resp);
void ctrl_job_stop(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		   const char *name, struct ctrl_response *resp);
void ctrl_job_delete(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		     const char *name, struct ctrl_response *resp);

/*
 * Creates a training job from a CreateTrainingJob body as who; with
 * tuning_arn it is a training job of that tuning job (TuningJobArn in its
 * Describe). *arn_out is its ARN (caller frees). Returns 0 or an ERR_*
 * code with err saying why (ERR_CONFLICT: the name is taken).
 * ctrl_job_check() runs the same checks and creates nothing.
 */
int ctrl_job_create(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *body, size_t len, const char *tuning_arn,
		    char **arn_out, struct buf *err);
/* ctrl_job_create() of an AWS Batch service job's payload: the service
 * job's row is stored with the training job, in the same transaction. */
int ctrl_job_create_service(struct ctrl_ctx *ctx,
			    const struct ctrl_caller *who, const char *body,
			    size_t len, const struct db_service_job *service,
			    char **arn_out, struct buf *err);
/*
 * Stops an InProgress job, with message as the Stopping transition's.
 * Returns 0, ERR_INVALID (not InProgress), ERR_NOTFOUND or ERR_DB.
 */
int ctrl_job_stop_with(struct ctrl_ctx *ctx, const char *name,
		       const char *message, struct buf *err);
int ctrl_job_check(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		   const char *body, size_t len, struct buf *err);

/*
 * Appends the DescribeTrainingJob answer of job name, as who may see it,
 * to out. Returns 0, ERR_NOTFOUND, ERR_AUTH or ERR_INTERNAL (err says
 * why).
 */
int ctrl_describe_body(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		       const char *name, struct buf *out, struct buf *err);

/* The SageMaker operations' rows, by X-Amz-Target (controller/route.h). */
extern const struct ctrl_route_block ctrl_op_routes;

#endif
