#ifndef API_SIGV4_H
#define API_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/*
 * AWS Signature Version 4 verification (server side), with OpenSSL's HMAC
 * and SHA-256. No I/O: the controller reads the credentials file and hands
 * its text to api_credentials_parse().
 */

struct api_header {
	const char *name; /* as received; compared case-insensitively */
	const char *value;
};

/* What the verifier needs from one HTTP request; nothing is owned. */
struct api_sigv4_request {
	const char *method;  /* "POST" */
	const char *raw_uri; /* path and query exactly as sent: "/a%20b?x=1" */
	const struct api_header *headers;
	size_t n_headers;
	const void *body;
	size_t body_len;
};

struct api_credential {
	char *profile;
	char *access_key_id;
	char *secret_access_key;
	/*
	 * trainctl_user: the Unix user the key's jobs run as on the hosts,
	 * NULL: the agent's own user. trainctl_role: admin (sees and acts on
	 * every job) or user (its own jobs only); admin by default when no
	 * trainctl_user is given, user otherwise.
	 */
	char *user;
	int admin;
	int role_set; /* trainctl_role was given (parsing only) */
	/*
	 * trainctl_s3_prefixes: what a user key's jobs and blob requests may
	 * name, each "bucket/" or "bucket/prefix" (a literal prefix of
	 * "bucket/key", as an IAM resource "bucket/prefix*"). A user key
	 * without any reaches no S3 URI; an admin key reaches every one.
	 */
	char **s3_prefixes;
	size_t n_s3_prefixes;
	/*
	 * trainctl_batch_queues: the AWS Batch job queues (names) a user
	 * key may submit service jobs to; NULL: every queue.
	 */
	char **batch_queues;
	size_t n_batch_queues;
};

/*
 * Whether "bucket/key" (a listing: "bucket/prefix") starts with one of the
 * n trainctl_s3_prefixes entries prefixes (each "bucket/" or
 * "bucket/prefix", compared as bytes). Shared by the controller's checks
 * and the agent's check of the locations an assignment allows.
 */
int api_s3_prefixes_allow(char *const *prefixes, size_t n,
			  const char *bucket_key);

/* Whether c may submit service jobs to the job queue named queue. */
int api_credential_queue_allowed(const struct api_credential *c,
				 const char *queue);

/* Whether c may name "bucket/key" (a listing: "bucket/prefix"). */
int api_credential_s3_allowed(const struct api_credential *c,
			      const char *bucket_key);

struct api_credentials {
	struct api_credential *items;
	size_t n;
	size_t alloc; /* allocated count of items */
};

/*
 * Parses the AWS shared-credentials format ("[profile]" sections with
 * aws_access_key_id / aws_secret_access_key, and trainctl_user /
 * trainctl_role). Returns 0, or ERR_INVALID with err naming the line;
 * profiles without both keys are an error, so is role user without a
 * trainctl_user and one key id with two different users or roles.
 */
int api_credentials_parse(const char *text, struct api_credentials *creds,
			  struct buf *err);

void api_credentials_release(struct api_credentials *creds);

/*
 * Verifies the request's Authorization header (or X-Amz-* query parameters)
 * for service (e.g. "sagemaker"), any region, at time now_ms, with at most 15
 * minutes of clock skew. Returns 0 when valid. Otherwise ERR_AUTH, with
 * *err_type set to the AWS error code (static string):
 *   MissingAuthenticationToken (403)  no Authorization at all
 *   IncompleteSignature (400)         malformed Authorization / missing parts
 *   InvalidClientTokenId (403)        unknown access key
 *   SignatureDoesNotMatch (403)       wrong signature
 *   InvalidSignatureException (400)   date outside the skew window
 *   AccessDeniedException (403)       a header that must be signed is
 *                                     not: any x-amz-* (except
 *                                     x-amz-content-sha256, X-Amz-Target
 *                                     among them) and Content-MD5
 *                                     (AccessDenied for service s3)
 * and *http_status to the status, and err to a message for the body. A
 * wrong scope (date, service, terminator) or an x-amz-content-sha256 that
 * does not match the body is SignatureDoesNotMatch. When OpenSSL itself
 * fails it returns ERR_INTERNAL with InternalFailure (500).
 */
int api_sigv4_verify(const struct api_sigv4_request *req,
		     const struct api_credentials *creds, const char *service,
		     int64_t now_ms, const char **err_type, int *http_status,
		     struct buf *err);

/* api_sigv4_verify() that also says who signed: *who is the credential
 * of the request's key id when it returns 0, NULL otherwise. */
int api_sigv4_verify_as(const struct api_sigv4_request *req,
			const struct api_credentials *creds,
			const char *service, int64_t now_ms,
			const char **err_type, int *http_status,
			struct buf *err, const struct api_credential **who);

/* The credential whose key id is key_id, or NULL. */
const struct api_credential *
api_credentials_find(const struct api_credentials *creds, const char *key_id);

/*
 * Computes the signature for req as a client would (used by tests and by
 * the verifier itself): fills the hex signature of 64 chars + NUL. The
 * Authorization header of req is ignored; signed_headers is the
 * semicolon-separated lower-case list, amz_date "20150830T123600Z",
 * region/service the scope; payload_hash NULL means "as the verifier works
 * it out" (x-amz-content-sha256 when present, else the body's SHA-256).
 * Returns 0 or ERR_INVALID.
 */
int api_sigv4_sign(const struct api_sigv4_request *req, const char *secret,
		   const char *amz_date, const char *region,
		   const char *service, const char *signed_headers,
		   const char *payload_hash, char out_hex[65], struct buf *err);

/* x-amz-content-sha256 values of streamed (aws-chunked) S3 bodies. */
#define API_SIGV4_STREAMING "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
#define API_SIGV4_STREAMING_TRAILER "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
#define API_SIGV4_STREAMING_UNSIGNED_TRAILER \
	"STREAMING-UNSIGNED-PAYLOAD-TRAILER"
#define API_SIGV4_EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* What an S3 request's signature leaves for checking its body. */
struct api_sigv4_s3 {
	/* x-amz-content-sha256 as signed: UNSIGNED-PAYLOAD, a STREAMING-*
	 * mode, or the hex SHA-256 the body must have. */
	char payload[72];
	char seed[65];	       /* the request's signature */
	char amz_date[17];     /* 20130524T000000Z */
	char scope[160];       /* 20130524/us-east-1/s3/aws4_request */
	unsigned char key[32]; /* signing key, for chunk signatures */
	int presigned;	       /* signed in the query string */
};

/*
 * api_sigv4_verify_as() for service s3 under S3's rules: the path is
 * signed as sent (not normalised, not encoded again), header signing
 * needs x-amz-content-sha256 (InvalidRequest 400 without it) and takes
 * its value as the payload hash without reading the body, a presigned URL
 * signs UNSIGNED-PAYLOAD. On success out says what the body must match;
 * the caller checks a hex payload hash and chunk signatures as the body
 * streams in. On failure out->key is wiped.
 */
int api_sigv4_verify_s3(const struct api_sigv4_request *req,
			const struct api_credentials *creds, int64_t now_ms,
			struct api_sigv4_s3 *out, const char **err_type,
			int *http_status, struct buf *err,
			const struct api_credential **who);

/*
 * The signature of one aws-chunked chunk (trailer 0: string to sign
 * "AWS4-HMAC-SHA256-PAYLOAD", date, scope, prev_sig, the empty SHA-256
 * and hash_hex, the chunk data's SHA-256) or of the trailing headers
 * (trailer 1: "AWS4-HMAC-SHA256-TRAILER", date, scope, prev_sig and
 * hash_hex, the SHA-256 of the "name:value\n" lines), with s3's signing
 * key. prev_sig is the seed signature for the first chunk. Returns 0 or
 * ERR_INTERNAL.
 */
int api_sigv4_chunk_sign(const struct api_sigv4_s3 *s3, int trailer,
			 const char *prev_sig, const char *hash_hex,
			 char out_hex[65]);

#endif
