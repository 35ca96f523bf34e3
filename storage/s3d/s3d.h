#ifndef CTRL_S3_H
#define CTRL_S3_H

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
 *   1. ctrl_s3_claims(): whether a request is for S3 at all;
 *   2. s = ctrl_s3_begin(env, &req): authenticates, parses and checks
 *      everything the headers tell; a PUT opens its temp file;
 *   3. ctrl_s3_data(s, bytes, n) for every piece of the body;
 *   4. ctrl_s3_finish(s, &reply): commits and fills the reply;
 *   5. ctrl_s3_reply_release(&reply), ctrl_s3_free(s) (an unfinished
 *      upload's temp file is removed).
 */
#include <stddef.h>
#include <stdint.h>

#include "api/sigv4.h"
#include "common/buf.h"

struct ctrl_s3_env {
	const char *root;    /* <state-dir>/s3: a folder per bucket */
	const char *uploads; /* <state-dir>/s3-uploads */
	const char *region;
	const char *domain; /* --s3-domain, or NULL */
	/* NULL: requests are not authenticated (an open controller) */
	const struct api_credentials *creds;
	int64_t max_object; /* largest single PUT */
	/* --s3-max-uploads: open multipart uploads one access key may
	 * hold (0: no cap); --s3-upload-max-age: an upload older than
	 * this is aborted by ctrl_s3_reap_uploads() (0: never). */
	long max_uploads;
	int64_t upload_max_age_ms;
};

/* One request as received. Nothing is owned. */
struct ctrl_s3_req {
	const char *method;
	const char *raw_uri; /* path and query exactly as sent */
	const struct api_header *headers;
	size_t n_headers;
	int64_t now_ms;
	const char *request_id;
};

#define CTRL_S3_MAX_HEADERS 48

struct ctrl_s3_reply {
	int status;
	struct buf body; /* XML, unless fd >= 0 */
	int fd;		 /* the object, sent from offset for size bytes */
	uint64_t offset, size;
	size_t n_headers;
	char *name[CTRL_S3_MAX_HEADERS];
	char *value[CTRL_S3_MAX_HEADERS];
};

/*
 * Whether the request is an S3 one: a Host under env->domain, a SigV4
 * signature scoped to service s3 (Authorization header or presigned
 * query), or a path whose first segment names an existing bucket. Paths
 * under /v1/ and /healthz never are.
 */
int ctrl_s3_claims(const struct ctrl_s3_env *env, const struct ctrl_s3_req *r);

/* ctrl_s3_claims() for a path another face serves (the status page):
 * only a request signed for s3 or addressed to a bucket's host is S3. */
int ctrl_s3_claims_signed(const struct ctrl_s3_env *env,
			  const struct ctrl_s3_req *r);

struct ctrl_s3;

/* Never returns NULL; problems are answered by ctrl_s3_finish(). */
struct ctrl_s3 *ctrl_s3_begin(const struct ctrl_s3_env *env,
			      const struct ctrl_s3_req *r);
void ctrl_s3_data(struct ctrl_s3 *s, const char *data, size_t n);

/* Whether s is already refused (its body need not be read). */
int ctrl_s3_refused(const struct ctrl_s3 *s);
void ctrl_s3_finish(struct ctrl_s3 *s, struct ctrl_s3_reply *reply);
void ctrl_s3_reply_release(struct ctrl_s3_reply *reply);
void ctrl_s3_free(struct ctrl_s3 *s);

/*
 * Aborts the multipart uploads older than env->upload_max_age_ms, freeing
 * their parts. Called from the reconciler's passes; does the work at most
 * every quarter of the age (between 250 ms and a minute). Returns how
 * many uploads it aborted.
 */
size_t ctrl_s3_reap_uploads(const struct ctrl_s3_env *env, int64_t now_ms);

/* For logs and metrics: the operation's S3 name ("PutObject"). */
const char *ctrl_s3_op_name(const struct ctrl_s3 *s);

#endif
