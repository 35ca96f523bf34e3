#ifndef S3D_H
#define S3D_H

/*
 * The S3 REST API of the embedded store (docs/storage.md): path-style
 * requests on the controller's own address (virtual-hosted style under
 * --s3-domain), SigV4 for service s3 with the controller's credentials,
 * S3's XML bodies and error codes. Objects are the files of
 * storage/s3d/meta.h.
 *
 * Driven like the blob endpoint, without libmicrohttpd, so it is tested
 * without a server:
 *
 *   1. s3d_claims(): whether a request is for S3 at all;
 *   2. s = s3d_begin(env, &req): authenticates, parses and checks
 *      everything the headers tell; a PUT opens its temp file;
 *   3. s3d_data(s, bytes, n) for every piece of the body;
 *   4. s3d_finish(s, &reply): commits and fills the reply;
 *   5. s3d_reply_release(&reply), s3d_free(s) (an unfinished
 *      upload's temp file is removed).
 *
 * This header and blob.h are storage/s3d/'s face; its other headers are
 * its own. A request is read in request.c, matched to its operation and
 * answered in dispatch.c, and run by the file of its noun: object.c,
 * bucket.c, listing.c, multipart.c; intake.c takes the body (decoded by
 * body.c), meta.c keeps what S3 stores beside an object's bytes, xml.c
 * writes and reads S3's XML. Nothing here includes controller/.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/sigv4.h"
#include "common/buf.h"

struct s3d_env {
	const char *root;    /* <state-dir>/s3: a folder per bucket */
	const char *uploads; /* <state-dir>/s3-uploads */
	const char *region;
	const char *domain; /* --s3-domain, or NULL */
	/* NULL: requests are not authenticated (an open controller) */
	const struct api_credentials *creds;
	int64_t max_object; /* largest single PUT */
	/* --s3-max-uploads: open multipart uploads one access key may
	 * hold (0: no cap); --s3-upload-max-age: an upload older than
	 * this is aborted by s3d_reap_uploads() (0: never). */
	long max_uploads;
	int64_t upload_max_age_ms;
};

/* One request as received. Nothing is owned. */
struct s3d_req {
	const char *method;
	const char *raw_uri; /* path and query exactly as sent */
	const struct api_header *headers;
	size_t n_headers;
	int64_t now_ms;
	const char *request_id;
};

#define S3D_MAX_HEADERS 48

struct s3d_reply {
	int status;
	struct buf body; /* XML, unless fd >= 0 */
	int fd;		 /* the object, sent from offset for size bytes */
	uint64_t offset, size;
	size_t n_headers;
	char *name[S3D_MAX_HEADERS];
	char *value[S3D_MAX_HEADERS];
};

/*
 * Whether the request is an S3 one: a Host under env->domain, a SigV4
 * signature scoped to service s3 (Authorization header or presigned
 * query), or a path whose first segment names an existing bucket. Paths
 * under /v1/ and /healthz never are.
 */
int s3d_claims(const struct s3d_env *env, const struct s3d_req *r);

/* s3d_claims() for a path another face serves (the status page):
 * only a request signed for s3 or addressed to a bucket's host is S3. */
int s3d_claims_signed(const struct s3d_env *env, const struct s3d_req *r);

struct s3d;

/* Never returns NULL; problems are answered by s3d_finish(). */
struct s3d *s3d_begin(const struct s3d_env *env, const struct s3d_req *r);
void s3d_data(struct s3d *s, const char *data, size_t n);

/* Whether s is already refused (its body need not be read). */
int s3d_refused(const struct s3d *s);
void s3d_finish(struct s3d *s, struct s3d_reply *reply);
void s3d_reply_release(struct s3d_reply *reply);
void s3d_free(struct s3d *s);

/*
 * Aborts the multipart uploads older than env->upload_max_age_ms, freeing
 * their parts. Called from the reconciler's passes; does the work at most
 * every quarter of the age (between 250 ms and a minute). Returns how
 * many uploads it aborted.
 */
size_t s3d_reap_uploads(const struct s3d_env *env, int64_t now_ms);

/* For logs and metrics: the operation's S3 name ("PutObject"). */
const char *s3d_op_name(const struct s3d *s);

/*
 * What a finished request changed in the store, for a replicated
 * controller (controller/replicate.h): an object written (PutObject,
 * CopyObject, CompleteMultipartUpload), an object removed (DeleteObject,
 * each key DeleteObjects removed), a bucket created or removed.
 */
enum s3d_change_kind {
	S3D_CH_PUT = 1,
	S3D_CH_DELETE,
	S3D_CH_BUCKET,
	S3D_CH_UNBUCKET
};

struct s3d_change {
	enum s3d_change_kind kind;
	char *bucket;
	char *key; /* NULL for a bucket */
};

/* The changes s3d_finish() made, in order; *n of them (0: none). */
const struct s3d_change *s3d_changes(const struct s3d *s, size_t *n);

/*
 * Replaces reply (a success of s3d_finish()) with the error code/status
 * and message: the change was made here but could not be made durable
 * elsewhere, so it is not acknowledged.
 */
void s3d_refuse_reply(struct s3d *s, struct s3d_reply *reply, const char *code,
		      int status, const char *msg);

#endif
