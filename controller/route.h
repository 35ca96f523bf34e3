#ifndef CTRL_ROUTE_H
#define CTRL_ROUTE_H

/*
 * The controller's routes: one row per endpoint, walked in one order by
 * the front door (controller/front.c). A module serving endpoints exports
 * a block of rows (e.g. ctrl_web_routes[] in controller/obs/web.c); front.c
 * lists the blocks in the order they are tried. The first row that
 * matches a request serves it.
 *
 * Path patterns (after git's http-backend.c services[]): literal
 * segments, "{}" for one segment (non-empty, no '/'), and a last "*" for
 * the rest of the path, which may be empty. ctrl_route_match() says
 * whether a path matches one.
 */
#include <stddef.h>

#include "controller/reply.h"
#include "common/xalloc.h"

struct ctrl_ctx;
struct ctrl_http_req;
struct MHD_Connection;

#define CTRL_ROUTE_MAX_PARAMS 6

/* What the "{}" and "*" of a matched pattern stood for, in order. */
struct ctrl_route_params {
	size_t n;
	const char *s[CTRL_ROUTE_MAX_PARAMS];
	size_t len[CTRL_ROUTE_MAX_PARAMS];
};

/* Whether path matches pattern; fills p (p may be NULL). */
int ctrl_route_match(const char *pattern, const char *path,
		     struct ctrl_route_params *p);

/* What a route did with a request. */
enum ctrl_route_result {
	CTRL_ROUTE_DONE = 0,  /* resp is filled: send it */
	CTRL_ROUTE_SUSPENDED, /* the connection was suspended: send nothing */
	CTRL_ROUTE_CONTINUE,  /* a streaming upload started: keep reading */
	CTRL_ROUTE_QUEUED     /* the route queued its own answer (web.c) */
};

/* The listeners a row may be served on (bits). */
#define CTRL_LISTEN_API 1   /* --listen */
#define CTRL_LISTEN_AGENT 2 /* --agent-listen */
#define CTRL_LISTEN_BOTH (CTRL_LISTEN_API | CTRL_LISTEN_AGENT)

/* How a row matches. */
enum ctrl_route_kind {
	CTRL_MATCH_PATH,  /* method and path pattern */
	CTRL_MATCH_TARGET /* method and X-Amz-Target (a last '*': a prefix) */
};

/* Who may call a row, and who checks. */
enum ctrl_route_auth {
	CTRL_AUTH_NONE,	 /* anyone (/healthz) */
	CTRL_AUTH_AGENT, /* the host's agent token (the handler checks) */
	CTRL_AUTH_RDZV,	 /* the attempt's rendezvous token (the handler) */
	CTRL_AUTH_BLOB,	 /* agent token or SigV4 for s3, at the headers */
	CTRL_AUTH_S3,	 /* SigV4 for s3 (the S3 server checks) */
	/* Same-origin if it changes state, then HTTP Basic (reads, web.h)
	 * or SigV4: service "monitoring" for CloudWatch metrics requests,
	 * "logs" for Logs_ targets, else "sagemaker". */
	CTRL_AUTH_API,
	CTRL_AUTH_ADMIN /* CTRL_AUTH_API by an admin key */
};

/* How the body is read. */
enum ctrl_route_body {
	CTRL_BODY_BUFFERED, /* whole, at most --body-max (else 413) */
	CTRL_BODY_NONE,	    /* answered at the headers, the body unread */
	CTRL_BODY_FILE,	    /* streamed to req->sink_fd (handler at headers) */
	CTRL_BODY_S3,	    /* streamed to the S3 server (storage/s3d/s3d.h) */
	CTRL_BODY_BLOB /* streamed to the blob store (storage/s3d/blob.h) */
};

/* What a sniffer sees of a request: its headers. */
struct ctrl_route_head {
	struct ctrl_ctx *ctx;
	struct MHD_Connection *conn;
	const char *method;
	const char *url;
	const char *raw_uri;	  /* path and query exactly as sent */
	const char *target;	  /* X-Amz-Target, or NULL */
	const char *content_type; /* or NULL */
};

/*
 * A further condition on a row: >= 0 when the request is the row's (the
 * value is kept in req->route_val, e.g. a protocol), < 0 otherwise.
 */
typedef int ctrl_route_sniff(const struct ctrl_route_head *h);

/*
 * A handler: fills resp and *content_type, or parks or queues the answer
 * (enum ctrl_route_result). req->route is its row, req->route_val what its
 * sniffer said.
 */
typedef enum ctrl_route_result
ctrl_route_fn(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	      const char *method, const char *url, struct ctrl_http_req *req,
	      struct ctrl_response *resp, const char **content_type);

/* Called when a CTRL_BODY_FILE upload has been read. */
typedef void ctrl_route_done_fn(struct ctrl_ctx *ctx, struct ctrl_http_req *req,
				struct ctrl_response *resp);

struct ctrl_route {
	unsigned listen;    /* CTRL_LISTEN_* bits */
	const char *method; /* "GET", a list "GET,HEAD", or "*": any */
	enum ctrl_route_kind match;
	const char *pattern; /* a path pattern or an X-Amz-Target */
	ctrl_route_sniff *sniff;
	const char *sniff_doc; /* what sniff looks for, for the listing */
	enum ctrl_route_auth auth;
	enum ctrl_route_body body;
	/*
	 * The handler; NULL with op: a JSON 1.1 operation, called with the
	 * body once the Content-Type was checked.
	 */
	ctrl_route_fn *fn;
	ctrl_op_fn op;
	ctrl_route_done_fn *done; /* CTRL_BODY_FILE */
	const void *arg;	  /* the handler's own datum */
	const char *deny;	  /* CTRL_AUTH_ADMIN: why others are refused */
	/* CTRL_AUTH_API/ADMIN: the SigV4 service signed for; NULL: sagemaker
	 * (logs for Logs_ targets, monitoring for CloudWatch metrics) */
	const char *service;
	int refusal; /* a catch-all: answers "no such resource" or the like */
};

/* A module's rows. */
struct ctrl_route_block {
	const struct ctrl_route *rows;
	size_t n;
};

#define CTRL_ROUTE_BLOCK(rows)         \
	{                              \
		rows, ARRAY_SIZE(rows) \
	}

/*
 * The members of a row every row sets, in the order of the table's
 * columns; a row is { CTRL_ROW(...) } plus whatever else it needs.
 */
#define CTRL_ROW(listen_, method_, match_, pattern_, auth_, body_, fn_) \
	.listen = listen_, .method = method_, .match = match_,          \
	.pattern = pattern_, .auth = auth_, .body = body_, .fn = fn_

/* A JSON 1.1 operation by its X-Amz-Target (POST, --listen, SigV4). */
#define CTRL_ROUTE_OP(target_, op_)                                           \
	{                                                                     \
		CTRL_ROW(CTRL_LISTEN_API, "POST", CTRL_MATCH_TARGET, target_, \
			 CTRL_AUTH_API, CTRL_BODY_BUFFERED, NULL),            \
			.op = op_                                             \
	}

/*
 * What a row that only refuses answers (its arg): an error and its
 * message, as JSON of content_type (NULL: the answer's default type).
 */
struct ctrl_refusal {
	enum ctrl_error code;
	const char *msg;
	const char *content_type;
};

/* The handler of such rows: answers the row's struct ctrl_refusal. */
ctrl_route_fn ctrl_route_refuse;

#endif
