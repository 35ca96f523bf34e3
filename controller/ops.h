#ifndef CTRL_OPS_H
#define CTRL_OPS_H

#include <stddef.h>

#include "api/requests.h"
#include "common/buf.h"

struct ctrl_ctx;
struct ctrl_route_block;

/* What a handler answers: status, body and its media type. */
struct ctrl_response {
	int status;
	struct buf body;
	const char *error_type; /* set for errors, for the log and metrics */
	/* x-amzn-query-error (AWS query-compatible errors), static text or
	 * NULL. */
	const char *query_error;
	/* Static text or NULL: the body's media type when it is not the
	 * face's own, and a Content-Disposition (downloads). */
	const char *content_type;
	const char *disposition;
};

/*
 * Who sent a request (docs/security.md): the credential's user and role,
 * or ctrl_caller_admin when the controller has no credentials.
 */
struct api_credential;

struct ctrl_caller {
	const struct api_credential *cred; /* NULL: no credentials */
	const char *owner;		   /* recorded on the jobs it creates */
	const char *run_as; /* Unix user of their ranks, NULL: the agent's */
	int admin;	    /* sees and acts on every job */
};

extern const struct ctrl_caller ctrl_caller_admin;

/* The caller a verified credential stands for (pointers into c). */
void ctrl_caller_of(const struct api_credential *c, struct ctrl_caller *out);

/* Whether who may see and act on a job that owner created. */
int ctrl_caller_sees(const struct ctrl_caller *who, const char *owner);

/*
 * Whether who may see job name: 0, ERR_NOTFOUND (no such job) or ERR_AUTH
 * (another user's job), with err saying so.
 */
int ctrl_caller_check_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			  const char *name, struct buf *err);

/*
 * The errors the HTTP faces answer, each named once with its HTTP status
 * and AWS error type (controller/ops.c has the table). SageMaker answers
 * most client errors 400; the REST face, the agents' and the rendezvous'
 * endpoints use the status HTTP would.
 */
enum ctrl_error {
	CTRL_E_VALIDATION,	  /* 400 ValidationException */
	CTRL_E_VALUE_TOO_BIG,	  /* 413 ValidationException */
	CTRL_E_RDZV_METHOD,	  /* 405 ValidationException */
	CTRL_E_METHOD,		  /* 405 MethodNotAllowed */
	CTRL_E_NOT_FOUND,	  /* 404 ResourceNotFound */
	CTRL_E_JOB_NOT_FOUND,	  /* 400 ResourceNotFound */
	CTRL_E_LOGS_NOT_FOUND,	  /* 400 ResourceNotFoundException */
	CTRL_E_NO_SUCH_PATH,	  /* 404 UnknownOperationException */
	CTRL_E_UNKNOWN_OPERATION, /* 400 UnknownOperationException */
	CTRL_E_INVALID_PARAMETER, /* 400 InvalidParameterException */
	CTRL_E_IN_USE,		  /* 400 ResourceInUse */
	CTRL_E_CONFLICT,	  /* 409 ResourceInUse */
	CTRL_E_ACCESS_DENIED,	  /* 400 AccessDeniedException */
	CTRL_E_UNAUTHORIZED,	  /* 401 AccessDeniedException */
	CTRL_E_FORBIDDEN,	  /* 403 AccessDeniedException */
	CTRL_E_MEDIA_TYPE,	  /* 415 UnsupportedMediaTypeException */
	CTRL_E_TOO_LARGE,	  /* 413 RequestEntityTooLarge */
	CTRL_E_TOO_MANY,	  /* 413 ResourceLimitExceeded */
	CTRL_E_LIMIT,		  /* 400 ResourceLimitExceeded */
	CTRL_E_SIGNATURE,	  /* 400 IncompleteSignature */
	CTRL_E_INTERNAL,	  /* 500 InternalFailure */
	CTRL_E_COUNT
};

/* Fills resp with error e and message, as an AWS JSON error body. */
void ctrl_reply_err(struct ctrl_response *resp, enum ctrl_error e,
		    const char *message);

/* The same with a status and type named elsewhere (SigV4's verdicts). */
void ctrl_reply_error(struct ctrl_response *resp, int status, const char *type,
		      const char *message);

/*
 * Maps an error code from a lower layer to the SageMaker error and fills
 * resp. This is the one table of code -> (type, HTTP status).
 */
void ctrl_reply_err_code(struct ctrl_response *resp, int code,
			 const char *message);

/* Answers 200 with json as the body (taken: json is left empty). */
void ctrl_reply_json(struct ctrl_response *resp, struct buf *json);

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

/* A JSON 1.1 operation: the request body in, resp out. */
typedef void (*ctrl_op_fn)(struct ctrl_ctx *, const struct ctrl_caller *,
			   const char *, size_t, struct ctrl_response *);

/* The SageMaker operations' rows, by X-Amz-Target (controller/route.h). */
extern const struct ctrl_route_block ctrl_op_routes;

#endif
