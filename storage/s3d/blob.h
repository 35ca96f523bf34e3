#ifndef S3D_BLOB_H
#define S3D_BLOB_H

/*
 * The blob endpoint: the embedded S3 store (<state-dir>/s3/<bucket>/<key>)
 * served over HTTP to hosts that do not share the controller's
 * filesystem (docs/storage.md).
 *
 *   GET    /v1/blobs/<bucket>/<key>   the object's bytes (200, or 404)
 *   HEAD   /v1/blobs/<bucket>/<key>   its size and Last-Modified
 *   PUT    /v1/blobs/<bucket>/<key>   body streamed to a temp file, renamed
 *                                     into place when complete (200 JSON
 *                                     {"Key","Size","Sha256"})
 *   DELETE /v1/blobs/<bucket>/<key>   204, also when missing
 *   GET    /v1/blobs/<bucket>?prefix=P&continuation=T&max-keys=N
 *                                     JSON listing, keys in byte order
 *
 * The caller authenticates (s3d_blob_auth_ok()) and drives a request in
 * three steps from its libmicrohttpd handler:
 *
 *   1. first call for a connection: b = s3d_blob_begin(root, method, url,
 *      query values, Content-Length); keep b in the connection's state;
 *   2. every call with *upload_data_size > 0: s3d_blob_data(b, data, n),
 *      then set *upload_data_size = 0;
 *   3. the call with *upload_data_size == 0 after the first:
 *      s3d_blob_finish(b, &reply), then queue the reply: reply.fd >= 0
 *      -> MHD_create_response_from_fd(reply.size, reply.fd) (MHD then
 *      owns and closes the fd), else the JSON reply.body;
 *   and from MHD_OPTION_NOTIFY_COMPLETED: s3d_blob_free(b), which throws
 *   away a PUT that never finished (client killed, connection lost).
 *
 * None of these call libmicrohttpd, so they are tested without a server.
 */
#include <stddef.h>
#include <stdint.h>

#include "storage/s3d/s3d.h"
#include "common/buf.h"

struct s3d_blob;

struct s3d_blob_reply {
	int status;		  /* HTTP status */
	const char *content_type; /* static string */
	struct buf body;	  /* JSON, unless fd >= 0 */
	int fd;			  /* GET 200: the object; the caller owns it */
	uint64_t size;		  /* bytes to send from fd (HEAD: none sent) */
	char last_modified[40];	  /* RFC 1123 for Last-Modified, or "" */
};

/*
 * Refuses a PUT in progress or a DELETE (its attempt was fenced, see
 * controller/front.c): a body is read and dropped, nothing changes, the
 * reply is 409 AttemptFenced with why. Other requests are left alone.
 */
void s3d_blob_fence(struct s3d_blob *b, const char *why);

/* Prefix of every blob route. */
#define S3D_BLOB_PREFIX "/v1/blobs/"

/* 1 when url (the decoded request path) is a blob route. */
int s3d_blob_is_route(const char *url);

/*
 * 1 when authorization (the Authorization header, may be NULL) is
 * "Bearer <token>", compared in constant time. token NULL or "" accepts
 * nothing.
 */
int s3d_blob_auth_ok(const char *authorization, const char *token);

/*
 * Starts a request. root is <state-dir>/s3 (borrowed, must outlive b);
 * url the decoded path; prefix, continuation and max_keys the query
 * values of a listing (NULL when absent); content_length -1 when not
 * given. Bad routes, keys and methods are remembered and answered by
 * s3d_blob_finish(). Never returns NULL; free with s3d_blob_free().
 */
struct s3d_blob *s3d_blob_begin(const char *root, const char *method,
				const char *url, const char *prefix,
				const char *continuation, const char *max_keys,
				int64_t content_length);

/*
 * Appends a chunk of the request body (PUT: to the temp file; other
 * methods: ignored). Returns 0, or a negative code once the upload has
 * failed (too big, disk full): the caller may keep calling; finish
 * reports the error.
 */
int s3d_blob_data(struct s3d_blob *b, const char *data, size_t len);

/*
 * Completes the request and fills reply (initialised here; release it
 * with s3d_blob_reply_release()). Call once.
 */
void s3d_blob_finish(struct s3d_blob *b, struct s3d_blob_reply *reply);

/* Frees the body and closes reply->fd if still open (set -1 if given away). */
void s3d_blob_reply_release(struct s3d_blob_reply *reply);

/*
 * What a finished request with reply r changed, for a replicated
 * controller (controller/replicate.h): S3D_CH_PUT (an object written) or
 * S3D_CH_DELETE with its bucket and key, else 0.
 */
int s3d_blob_changed(const struct s3d_blob *b, const struct s3d_blob_reply *r,
		     const char **bucket, const char **key);

/* Replaces a successful reply with 503 SlowDown and msg: the change was
 * made here but not made durable elsewhere. */
void s3d_blob_refuse_reply(struct s3d_blob_reply *r, const char *msg);

/* Frees b; an unfinished PUT's temp file is removed. NULL is fine. */
void s3d_blob_free(struct s3d_blob *b);

#endif
