#define LOG_TAG "ctrl"

#include <string.h>

#include "api/serving.h"
#include "controller/caller.h"
#include "controller/ctrl.h"
#include "controller/reply.h"
#include "controller/serving.h"
#include "db/db.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/banned.h"

#define SERVING_DOC "docs/serving.md"

/*
 * The model of the first training job named in r that the caller may see
 * and that has one: its name in *job_out and its S3ModelArtifacts in
 * *model_out (both owned by *job, which the caller releases when it
 * returns 0). Returns 0, or ERR_NOTFOUND.
 */
static int named_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		     const struct api_serving_req *r, struct db_job *job)
{
	struct buf err = BUF_INIT;
	size_t i;

	for (i = 0; i < r->n_names; i++) {
		buf_reset(&err);
		if (ctrl_caller_check_job(ctx, who, r->names[i], &err) ||
		    db_job_get(ctx->db, r->names[i], job, &err))
			continue;
		if (job->model_artifacts && *job->model_artifacts) {
			buf_release(&err);
			return 0;
		}
		db_job_release(job);
	}
	buf_release(&err);
	return ERR_NOTFOUND;
}

/* The refusal of op, with what the request points at. */
static void refuse(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		   const char *op, const char *body, size_t len,
		   struct ctrl_response *resp)
{
	struct api_serving_req r;
	struct buf msg = BUF_INIT, err = BUF_INIT;
	struct db_job job;

	(void)buf_addf(&msg,
		       "%s is not supported: trainctl trains models and does "
		       "not host them (no models, endpoints or transform "
		       "jobs).",
		       op);
	if (!api_serving_req_parse(body, len, &r, &err)) {
		if (!named_job(ctx, who, &r, &job)) {
			(void)buf_addf(&msg,
				       " The model of training job '%s' is "
				       "%s.",
				       job.name, job.model_artifacts);
			db_job_release(&job);
		} else if (r.model_data_url) {
			(void)buf_addf(&msg, " The model named is %.512s.",
				       r.model_data_url);
		}
	}
	api_serving_req_release(&r);
	(void)buf_adds(&msg,
		       " To serve a model trained here elsewhere (SageMaker "
		       "hosting, a container of your own, the "
		       "framework's own server), see " SERVING_DOC ".");
	ctrl_reply_err(resp, CTRL_E_UNKNOWN_OPERATION, msg.data);
	buf_release(&msg);
	buf_release(&err);
}

static void op_create_model(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			    const char *body, size_t len,
			    struct ctrl_response *resp)
{
	refuse(ctx, who, "CreateModel", body, len, resp);
}

static void op_create_endpoint_config(struct ctrl_ctx *ctx,
				      const struct ctrl_caller *who,
				      const char *body, size_t len,
				      struct ctrl_response *resp)
{
	refuse(ctx, who, "CreateEndpointConfig", body, len, resp);
}

static void op_create_endpoint(struct ctrl_ctx *ctx,
			       const struct ctrl_caller *who, const char *body,
			       size_t len, struct ctrl_response *resp)
{
	refuse(ctx, who, "CreateEndpoint", body, len, resp);
}

static void op_create_transform_job(struct ctrl_ctx *ctx,
				    const struct ctrl_caller *who,
				    const char *body, size_t len,
				    struct ctrl_response *resp)
{
	refuse(ctx, who, "CreateTransformJob", body, len, resp);
}

/* A row that refuses op: listed as refusing (trainctld --routes). */
#define REFUSED_OP(target_, op_)                                              \
	{                                                                     \
		CTRL_ROW(CTRL_LISTEN_API, "POST", CTRL_MATCH_TARGET, target_, \
			 CTRL_AUTH_API, CTRL_BODY_BUFFERED, NULL),            \
			.op = op_, .refusal = 1                               \
	}

static const struct ctrl_route rows[] = {
	REFUSED_OP("SageMaker.CreateModel", op_create_model),
	REFUSED_OP("SageMaker.CreateEndpointConfig", op_create_endpoint_config),
	REFUSED_OP("SageMaker.CreateEndpoint", op_create_endpoint),
	REFUSED_OP("SageMaker.CreateTransformJob", op_create_transform_job),
};

const struct ctrl_route_block ctrl_serving_routes = CTRL_ROUTE_BLOCK(rows);
