#ifndef CTRL_REPLY_H
#define CTRL_REPLY_H

/*
 * What the controller's HTTP faces answer: the response a handler fills,
 * the errors it may answer (one table of status and AWS error type) and
 * the helpers that fill a response. A leaf: it knows nothing of jobs.
 */
#include <stddef.h>

#include "common/buf.h"

struct ctrl_ctx;
struct ctrl_caller;

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

/* The answer of a job that does not exist (or that the caller may not see). */
#define CTRL_NOT_FOUND_MSG "Requested resource not found."

/*
 * The errors the HTTP faces answer, each named once with its HTTP status
 * and AWS error type (controller/reply.c has the table). SageMaker answers
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
	CTRL_E_CLIENT,		  /* 400 ClientException (AWS Batch) */
	CTRL_E_SERVER,		  /* 500 ServerException (AWS Batch) */
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

/* A handler of the JSON 1.1 face: body is the request. */
typedef void (*ctrl_op_fn)(struct ctrl_ctx *, const struct ctrl_caller *,
			   const char *, size_t, struct ctrl_response *);

#endif
