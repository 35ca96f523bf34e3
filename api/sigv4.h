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
};

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

#endif
