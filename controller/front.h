#ifndef CTRL_FRONT_H
#define CTRL_FRONT_H

/*
 * The front door (controller/front.c): every request the controller's
 * listeners take is served by the first row of one route table
 * (controller/route.h) that matches it. controller/http.c calls
 * ctrl_front_start() with the headers, reads the body as the row says,
 * then calls ctrl_front_serve() (or ctrl_front_upload_done() for a body
 * streamed to a file).
 */
#include <stdio.h>

#include "controller/http.h"

enum ctrl_front_start {
	CTRL_FRONT_READ, /* read the body as req->route says */
	CTRL_FRONT_SEND	 /* resp is filled (or req->too_big): answer now */
};

/*
 * Picks req->route at the headers: on --agent-listen only a path it
 * serves; a blob request's caller is checked here; a row whose body is
 * not buffered starts (S3, blob, a file upload, or an answer at once);
 * a buffered body over --body-max sets req->too_big.
 */
enum ctrl_front_start
ctrl_front_start(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
		 const char *method, const char *url, struct ctrl_http_req *req,
		 struct ctrl_response *resp, const char **content_type);

/* With the body read: the row's caller checks, then its handler. */
enum ctrl_route_result
ctrl_front_serve(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
		 const char *method, const char *url, struct ctrl_http_req *req,
		 struct ctrl_response *resp, const char **content_type);

/* A CTRL_BODY_FILE upload has been read: the row stores it. */
void ctrl_front_upload_done(struct ctrl_ctx *ctx, struct ctrl_http_req *req,
			    struct ctrl_response *resp);

/* Before a blob is committed: refuses it if its attempt is fenced. */
void ctrl_front_blob_fence(struct ctrl_ctx *ctx, struct ctrl_http_req *req);

/* The table, one row a line: listener, method, pattern or X-Amz-Target
 * (and what else it looks for), auth, body, serves/refuses. */
void ctrl_front_print(FILE *out);

#endif
