#define LOG_TAG "ctrl"

#include <string.h>

#include "api/requests.h"
#include "controller/ctrl.h"
#include "controller/reply.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/log.h"
#include "common/banned.h"

void ctrl_reply_error(struct ctrl_response *resp, int status, const char *type,
		      const char *message)
{
	resp->status = status;
	resp->error_type = type;
	buf_reset(&resp->body);
	if (api_error_body(type, message, &resp->body))
		BUG("error body too big");
}

static const struct {
	int status;
	const char *type;
} errors[CTRL_E_COUNT] = {
	[CTRL_E_VALIDATION] = { 400, "ValidationException" },
	[CTRL_E_VALUE_TOO_BIG] = { 413, "ValidationException" },
	[CTRL_E_RDZV_METHOD] = { 405, "ValidationException" },
	[CTRL_E_METHOD] = { 405, "MethodNotAllowed" },
	[CTRL_E_NOT_FOUND] = { 404, "ResourceNotFound" },
	[CTRL_E_JOB_NOT_FOUND] = { 400, "ResourceNotFound" },
	[CTRL_E_LOGS_NOT_FOUND] = { 400, "ResourceNotFoundException" },
	[CTRL_E_NO_SUCH_PATH] = { 404, "UnknownOperationException" },
	[CTRL_E_UNKNOWN_OPERATION] = { 400, "UnknownOperationException" },
	[CTRL_E_INVALID_PARAMETER] = { 400, "InvalidParameterException" },
	[CTRL_E_IN_USE] = { 400, "ResourceInUse" },
	[CTRL_E_CONFLICT] = { 409, "ResourceInUse" },
	[CTRL_E_ACCESS_DENIED] = { 400, "AccessDeniedException" },
	[CTRL_E_UNAUTHORIZED] = { 401, "AccessDeniedException" },
	[CTRL_E_FORBIDDEN] = { 403, "AccessDeniedException" },
	[CTRL_E_MEDIA_TYPE] = { 415, "UnsupportedMediaTypeException" },
	[CTRL_E_TOO_LARGE] = { 413, "RequestEntityTooLarge" },
	[CTRL_E_TOO_MANY] = { 413, "ResourceLimitExceeded" },
	[CTRL_E_LIMIT] = { 400, "ResourceLimitExceeded" },
	[CTRL_E_SIGNATURE] = { 400, "IncompleteSignature" },
	[CTRL_E_INTERNAL] = { 500, "InternalFailure" },
	[CTRL_E_CLIENT] = { 400, "ClientException" },
	[CTRL_E_SERVER] = { 500, "ServerException" },
};

void ctrl_reply_err(struct ctrl_response *resp, enum ctrl_error e,
		    const char *message)
{
	if ((unsigned)e >= CTRL_E_COUNT || !errors[e].type)
		BUG("unknown error %d", (int)e);
	ctrl_reply_error(resp, errors[e].status, errors[e].type, message);
}

void ctrl_reply_err_code(struct ctrl_response *resp, int code,
			 const char *message)
{
	switch (code) {
	case ERR_INVALID:
		ctrl_reply_err(resp, CTRL_E_VALIDATION, message);
		break;
	case ERR_NOTFOUND:
		ctrl_reply_err(resp, CTRL_E_VALIDATION,
			       message && *message ? message :
						     CTRL_NOT_FOUND_MSG);
		break;
	case ERR_CONFLICT:
		ctrl_reply_err(resp, CTRL_E_IN_USE, message);
		break;
	case ERR_LIMIT:
		ctrl_reply_err(resp, CTRL_E_LIMIT, message);
		break;
	case ERR_TOOBIG:
		ctrl_reply_err(resp, CTRL_E_TOO_LARGE, message);
		break;
	case ERR_AUTH:
		ctrl_reply_err(resp, CTRL_E_ACCESS_DENIED, message);
		break;
	default:
		/* Only genuine server faults are 5xx: clients retry those. */
		log_error("internal error (%s): %s", err_str(code),
			  message ? message : "");
		ctrl_reply_err(resp, CTRL_E_INTERNAL,
			       "We encountered an internal error. Please "
			       "try again.");
		break;
	}
}

char *ctrl_job_arn(const struct ctrl_ctx *ctx, const char *name)
{
	struct buf b = BUF_INIT;
	size_t i;

	(void)buf_addf(&b, "arn:aws:sagemaker:%s:%s:training-job/",
		       ctx->cfg.region, ctx->cfg.account_id);
	/* The service lower-cases the name in ARNs. */
	for (i = 0; name[i]; i++) {
		char c = name[i];

		(void)buf_addch(&b, c >= 'A' && c <= 'Z' ? (char)(c + 32) : c);
	}
	return buf_detach(&b, NULL);
}

void ctrl_reply_json(struct ctrl_response *resp, struct buf *json)
{
	resp->status = 200;
	buf_release(&resp->body);
	resp->body = *json;
	buf_init(json, 0);
}
