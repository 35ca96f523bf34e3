/*
 * AWS Signature Version 4, server side.
 *
 * The canonical request follows AWS's "Create a canonical request" rules for
 * services other than S3, as botocore (auth.py, SigV4Auth) implements them:
 *
 *   METHOD \n CanonicalURI \n CanonicalQuery \n CanonicalHeaders \n
 *   SignedHeaders \n PayloadHash
 *
 * Everything here works on spans of the caller's request and on bounded
 * buffers: every length is capped before it is used, there is no recursion
 * and nothing is sized by the input on the stack.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>

#include "api/sigv4.h"
#include "api/sigv4_int.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/hex.h"
#include "common/xalloc.h"
#include "common/banned.h"

static const char T_MISSING[] = "MissingAuthenticationToken";
static const char T_INCOMPLETE[] = "IncompleteSignature";
static const char T_BADKEY[] = "InvalidClientTokenId";
static const char T_MISMATCH[] = "SignatureDoesNotMatch";
static const char T_EXPIRED[] = "InvalidSignatureException";
static const char T_INTERNAL[] = "InternalFailure";
static const char T_DENIED[] = "AccessDeniedException";

static const char MSG_MISMATCH[] =
	"The request signature we calculated does not match the signature "
	"you provided. Check your AWS Secret Access Key and signing method.";

/*
 * The authentication parameters of one request, copied out of the
 * Authorization header or the X-Amz-* query parameters. Fixed sizes: the
 * copies are checked against them, so hostile input cannot grow them.
 */
struct sv4_auth {
	int presigned;
	char credential[SV4_MAX_CREDENTIAL + 1];
	char signed_headers[SV4_MAX_SIGNED_LIST + 1];
	char signature[SV4_MAX_SIGNATURE + 1];
	char date[SV4_MAX_DATE + 1];	/* presigned: X-Amz-Date */
	char expires[SV4_MAX_DATE + 1]; /* presigned: X-Amz-Expires */
	char algorithm[SV4_MAX_DATE + 1];
	/* Credential split at '/', each NUL-terminated inside credential. */
	const char *akid, *scope_date, *region, *service, *terminator;
	/* S3's rules (api_sigv4_verify_s3()): what the body needs, or NULL. */
	struct api_sigv4_s3 *s3;
};

/* Where verify() reports its outcome. */
struct sv4_result {
	const char *type;
	int status;
	struct buf *err;
};

static int fail(struct sv4_result *res, const char *type, int status,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail(struct sv4_result *res, const char *type, int status,
		const char *fmt, ...)
{
	va_list ap;
	int r;

	res->type = type;
	res->status = status;
	if (res->err) {
		va_start(ap, fmt);
		r = buf_vaddf(res->err, fmt, ap);
		va_end(ap);
		(void)r;
	}
	return type == T_INTERNAL ? ERR_INTERNAL : ERR_AUTH;
}

static int incomplete(struct sv4_result *res, const char *msg)
{
	return fail(res, T_INCOMPLETE, 400, "%s", msg);
}

static int mismatch(struct sv4_result *res)
{
	return fail(res, T_MISMATCH, 403, "%s", MSG_MISMATCH);
}

/* ---- verification ---- */

/*
 * The parameters of the Authorization header that are kept, in the order
 * in which a missing one is reported; the others are ignored.
 */
static const struct auth_param {
	const char *name;
	size_t offset; /* of its buffer in struct sv4_auth */
	size_t cap;
	const char *missing;
} auth_params[] = {
	{ "Credential", offsetof(struct sv4_auth, credential),
	  SV4_MAX_CREDENTIAL,
	  "Authorization header requires 'Credential' parameter." },
	{ "SignedHeaders", offsetof(struct sv4_auth, signed_headers),
	  SV4_MAX_SIGNED_LIST,
	  "Authorization header requires 'SignedHeaders' parameter." },
	{ "Signature", offsetof(struct sv4_auth, signature), SV4_MAX_SIGNATURE,
	  "Authorization header requires 'Signature' parameter." },
};

#define N_AUTH_PARAMS ARRAY_SIZE(auth_params)

/* The kept parameter named by the n bytes at k, or -1. */
static int auth_param(const char *k, size_t n)
{
	size_t i;

	for (i = 0; i < N_AUTH_PARAMS; i++)
		if (strlen(auth_params[i].name) == n &&
		    memcmp(k, auth_params[i].name, n) == 0)
			return (int)i;
	return -1;
}

/*
 * The next key=value pair from v[*i], after white space and commas:
 * 1 with key and val set, 0 at the end, -1 for a key without '='.
 */
static int next_auth_pair(const char *v, size_t n, size_t *i,
			  struct sv4_span *key, struct sv4_span *val)
{
	size_t j = *i;

	while (j < n && (api__sv4_is_ws(v[j]) || v[j] == ','))
		j++;
	*i = j;
	if (j == n)
		return 0;
	key->p = v + j;
	while (j < n && v[j] != '=' && v[j] != ',' && !api__sv4_is_ws(v[j]))
		j++;
	key->n = (size_t)(v + j - key->p);
	*i = j;
	if (j == n || v[j] != '=')
		return -1;
	val->p = v + ++j;
	while (j < n && v[j] != ',' && !api__sv4_is_ws(v[j]))
		j++;
	val->n = (size_t)(v + j - val->p);
	*i = j;
	return 1;
}

/*
 * Parses "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..."
 * in any order, with any white space and commas between the parts.
 */
static int parse_authorization(const char *v, struct sv4_auth *a,
			       struct sv4_result *res)
{
	static const char algo[] = SV4_ALGORITHM;
	size_t n = strlen(v), i = 0, k;
	int seen[N_AUTH_PARAMS] = { 0 };
	struct sv4_span key, val;
	int r;

	if (n > SV4_MAX_AUTHZ)
		return incomplete(res, "Authorization header is too long.");
	while (i < n && api__sv4_is_ws(v[i]))
		i++;
	if (n - i < sizeof(algo) - 1 ||
	    memcmp(v + i, algo, sizeof(algo) - 1) != 0 ||
	    (i + sizeof(algo) - 1 < n &&
	     !api__sv4_is_ws(v[i + sizeof(algo) - 1])))
		return incomplete(res, "Unsupported authorization type: only "
				       "AWS4-HMAC-SHA256 is accepted.");
	i += sizeof(algo) - 1;
	while ((r = next_auth_pair(v, n, &i, &key, &val)) > 0) {
		int p = auth_param(key.p, key.n);

		if (p < 0)
			continue; /* unknown parameters are ignored */
		if (seen[p])
			return incomplete(res, "Authorization header has a "
					       "parameter more than once.");
		if (!val.n)
			continue; /* empty: reported as missing below */
		if (api__sv4_copy_span((char *)a + auth_params[p].offset,
				       auth_params[p].cap, val.p, val.n))
			return incomplete(res, "Authorization header has a "
					       "parameter that is too long.");
		seen[p] = 1;
	}
	if (r < 0)
		return incomplete(res, "Authorization header is malformed: "
				       "expected key=value pairs.");
	for (k = 0; k < N_AUTH_PARAMS; k++)
		if (!seen[k])
			return incomplete(res, auth_params[k].missing);
	return 0;
}

/* Copies the decoded value of query parameter name into dst (cap+1). */
static int query_param(struct sv4_span q, const char *name, char *dst,
		       size_t cap, int *found)
{
	size_t i = 0, nl = strlen(name);

	*found = 0;
	while (i < q.n) {
		size_t j = i, eq, k, o = 0;

		while (j < q.n && q.p[j] != '&')
			j++;
		eq = i;
		while (eq < j && q.p[eq] != '=')
			eq++;
		if (eq - i == nl && memcmp(q.p + i, name, nl) == 0) {
			if (*found)
				return -1; /* twice */
			*found = 1;
			k = 0;
			while (eq + 1 + k < j) {
				char c = api__sv4_decode_at(q.p + eq + 1,
							    j - eq - 1, &k);

				if (o == cap || c == '\0')
					return -1;
				dst[o++] = c;
			}
			dst[o] = '\0';
		}
		i = j + 1;
	}
	return 0;
}

static int parse_presigned(struct sv4_span q, struct sv4_auth *a,
			   struct sv4_result *res)
{
	static const struct {
		const char *name;
		size_t off, cap;
	} want[] = {
		{ "X-Amz-Algorithm", offsetof(struct sv4_auth, algorithm),
		  SV4_MAX_DATE },
		{ "X-Amz-Credential", offsetof(struct sv4_auth, credential),
		  SV4_MAX_CREDENTIAL },
		{ "X-Amz-Date", offsetof(struct sv4_auth, date), SV4_MAX_DATE },
		{ "X-Amz-Expires", offsetof(struct sv4_auth, expires),
		  SV4_MAX_DATE },
		{ "X-Amz-SignedHeaders",
		  offsetof(struct sv4_auth, signed_headers),
		  SV4_MAX_SIGNED_LIST },
		{ "X-Amz-Signature", offsetof(struct sv4_auth, signature),
		  SV4_MAX_SIGNATURE },
	};
	size_t i;
	int found;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		char *dst = (char *)a + want[i].off;

		if (query_param(q, want[i].name, dst, want[i].cap, &found))
			return fail(res, T_INCOMPLETE, 400,
				    "Query parameter %s is malformed or "
				    "repeated.",
				    want[i].name);
		if (!found || !dst[0])
			return fail(res, T_INCOMPLETE, 400,
				    "Query-string authentication requires the "
				    "%s parameter.",
				    want[i].name);
	}
	if (strcmp(a->algorithm, SV4_ALGORITHM))
		return incomplete(res, "X-Amz-Algorithm only supports "
				       "AWS4-HMAC-SHA256.");
	return 0;
}

/* AKID/YYYYMMDD/region/service/aws4_request, split in place. */
static int split_credential(struct sv4_auth *a, struct sv4_result *res)
{
	const char **part[5] = { &a->akid, &a->scope_date, &a->region,
				 &a->service, &a->terminator };
	char *p = a->credential;
	size_t i;
	int ymd;

	for (i = 0; i < 5; i++) {
		char *slash = strchr(p, '/');

		*part[i] = p;
		if (i < 4) {
			if (!slash)
				break;
			*slash = '\0';
			p = slash + 1;
		} else if (slash) {
			i = 0; /* too many parts */
			break;
		}
	}
	if (i != 5 || !a->akid[0])
		return incomplete(res, "Credential should be of the form "
				       "AKID/YYYYMMDD/region/service/"
				       "aws4_request.");
	if (strlen(a->scope_date) != 8 ||
	    api__sv4_digits_at(a->scope_date, 8, &ymd))
		return incomplete(res, "Credential should be scoped to a "
				       "valid date (YYYYMMDD).");
	if (!api__sv4_valid_scope_part(a->region))
		return incomplete(res, "Credential should be scoped to a valid "
				       "region.");
	return 0;
}

const struct api_credential *
api_credentials_find(const struct api_credentials *creds, const char *key_id)
{
	size_t i;

	if (!creds || !key_id)
		return NULL;
	for (i = 0; i < creds->n; i++)
		if (creds->items[i].access_key_id &&
		    strcmp(creds->items[i].access_key_id, key_id) == 0)
			return &creds->items[i];
	return NULL;
}

static const char *find_secret(const struct api_credentials *creds,
			       const char *akid)
{
	const struct api_credential *c = api_credentials_find(creds, akid);

	return c ? c->secret_access_key : NULL;
}

/* The request's time: X-Amz-Date, else an RFC 1123 Date header. */
static int request_time(const struct api_sigv4_request *req, struct sv4_auth *a,
			char amz_date[17], int64_t *ms, struct sv4_result *res)
{
	const struct api_header *h;
	char v[SV4_MAX_DATE + 1];
	size_t count;

	if (a->presigned) {
		if (api__sv4_parse_amz_date(a->date, ms))
			return incomplete(res, "X-Amz-Date must be in ISO-8601 "
					       "basic format "
					       "(YYYYMMDDTHHMMSSZ).");
		memcpy(amz_date, a->date, 17);
		return 0;
	}
	h = api__sv4_find_header(req, "x-amz-date", &count);
	if (h) {
		if (count > 1)
			return incomplete(res, "Multiple X-Amz-Date headers.");
		if (api__sv4_copy_trimmed(v, SV4_MAX_DATE,
					  api__sv4_header_value(h)) ||
		    api__sv4_parse_amz_date(v, ms))
			return incomplete(res, "X-Amz-Date must be in ISO-8601 "
					       "basic format "
					       "(YYYYMMDDTHHMMSSZ).");
		memcpy(amz_date, v, 17);
		return 0;
	}
	h = api__sv4_find_header(req, "date", &count);
	if (!h)
		return incomplete(res, "Authorization header requires "
				       "existence of either a 'X-Amz-Date' or "
				       "a 'Date' header.");
	if (count > 1 ||
	    api__sv4_copy_trimmed(v, SV4_MAX_DATE, api__sv4_header_value(h)) ||
	    api__sv4_parse_http_date(v, ms))
		return incomplete(res, "Date header must be in RFC 1123 form "
				       "(Sun, 30 Aug 2015 12:36:00 GMT).");
	api__sv4_format_amz_date(*ms, amz_date);
	return 0;
}

/* The skew error, in AWS's words. Formatting waits until it is needed. */
static int skew_fail(struct sv4_result *res, const char *amz_date,
		     int64_t now_ms, int future)
{
	char now_s[17], edge_s[17];

	api__sv4_format_amz_date(now_ms, now_s);
	if (future) {
		api__sv4_format_amz_date(now_ms + SV4_SKEW_MS, edge_s);
		return fail(res, T_EXPIRED, 400,
			    "Signature not yet current: %s is still later "
			    "than %s (%s + 15 min.)",
			    amz_date, edge_s, now_s);
	}
	api__sv4_format_amz_date(now_ms - SV4_SKEW_MS, edge_s);
	return fail(res, T_EXPIRED, 400,
		    "Signature expired: %s is now earlier than %s "
		    "(%s - 15 min.)",
		    amz_date, edge_s, now_s);
}

static int check_time(const struct sv4_auth *a, const char *amz_date,
		      int64_t req_ms, int64_t now_ms, struct sv4_result *res)
{
	char now_s[17];
	int e;

	if (req_ms > now_ms + SV4_SKEW_MS)
		return skew_fail(res, amz_date, now_ms, 1);
	if (!a->presigned)
		return req_ms < now_ms - SV4_SKEW_MS ?
			       skew_fail(res, amz_date, now_ms, 0) :
			       0;
	if (strlen(a->expires) > 6 ||
	    api__sv4_digits_at(a->expires, strlen(a->expires), &e) || e < 1 ||
	    e > SV4_MAX_EXPIRES)
		return incomplete(res, "X-Amz-Expires must be between 1 and "
				       "604800 seconds.");
	if (now_ms > req_ms + (int64_t)e * 1000) {
		api__sv4_format_amz_date(now_ms, now_s);
		return fail(res, T_EXPIRED, 400,
			    "Request has expired: signed at %s for %s "
			    "seconds, now %s",
			    amz_date, a->expires, now_s);
	}
	return 0;
}

/* The payload hashes S3 accepts in x-amz-content-sha256 besides a hex one. */
static const char *const s3_payloads[] = {
	SV4_UNSIGNED,
	API_SIGV4_STREAMING,
	API_SIGV4_STREAMING_TRAILER,
	API_SIGV4_STREAMING_UNSIGNED_TRAILER,
};

/*
 * S3's payload line: x-amz-content-sha256 as sent, which S3 requires with
 * header signing: UNSIGNED-PAYLOAD, a STREAMING-* mode or the body's hex
 * SHA-256, checked later against the body as it streams in. A presigned
 * URL signs UNSIGNED-PAYLOAD.
 */
static int s3_payload(const struct api_sigv4_request *req,
		      const struct sv4_auth *a, char out[72],
		      struct sv4_result *res)
{
	const struct api_header *h;
	size_t count, i;

	h = api__sv4_find_header(req, "x-amz-content-sha256", &count);
	if (!h && a->presigned) {
		memcpy(out, SV4_UNSIGNED, sizeof(SV4_UNSIGNED));
		return 0;
	}
	if (!h)
		return fail(res, "InvalidRequest", 400,
			    "Missing required header for this request: "
			    "x-amz-content-sha256");
	if (count > 1 ||
	    api__sv4_copy_trimmed(out, 71, api__sv4_header_value(h)))
		return fail(res, "InvalidArgument", 400,
			    "x-amz-content-sha256 is repeated or too long");
	for (i = 0; i < ARRAY_SIZE(s3_payloads); i++)
		if (strcmp(out, s3_payloads[i]) == 0)
			return 0;
	if (strlen(out) == 64 && api__sv4_is_lower_hex(out, 64))
		return 0;
	return fail(res, "InvalidArgument", 400,
		    "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
		    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER], "
		    "STREAMING-UNSIGNED-PAYLOAD-TRAILER or the lower-case hex "
		    "SHA-256 of the body");
}

/* Fills what the body of an S3 request needs once its signature holds. */
static void s3_fill(struct api_sigv4_s3 *s3, const struct sv4_auth *a,
		    const char *amz_date, const char *payload)
{
	snprintf(s3->payload, sizeof(s3->payload), "%s", payload);
	memcpy(s3->seed, a->signature, 64);
	s3->seed[64] = '\0';
	memcpy(s3->amz_date, amz_date, 17);
	snprintf(s3->scope, sizeof(s3->scope), "%s/%s/%s/%s", a->scope_date,
		 a->region, a->service, SV4_TERMINATOR);
}

/* The last step: the payload hash, then the signature itself. */
static int check_signature(struct sv4_crypto *c,
			   const struct api_sigv4_request *req,
			   const char *secret, const char *amz_date,
			   const struct sv4_auth *a,
			   const struct sv4_signed *sl, struct sv4_result *res)
{
	struct sv4_span missing = { "", 0 };
	char payload[72], want[65];
	const char *why = NULL;
	int r, is_mismatch;

	if (a->s3) {
		r = s3_payload(req, a, payload, res);
		if (r)
			return r;
	} else {
		r = api__sv4_payload_hash(c, req, payload, &why, &is_mismatch);
		if (r == ERR_INTERNAL)
			return fail(res, T_INTERNAL, 500,
				    "sigv4: sha256 failed");
		if (r)
			return is_mismatch ?
				       fail(res, T_MISMATCH, 403, "%s", why) :
				       incomplete(res, why);
	}
	r = api__sv4_compute(c, req, secret, amz_date, a->region, a->service,
			     sl, a->signed_headers, payload, a->presigned, want,
			     &missing, a->s3 ? a->s3->key : NULL);
	if (r == ERR_NOTFOUND)
		return mismatch(res);
	if (r == ERR_TOOBIG || r == ERR_LIMIT)
		return incomplete(res, "Request is too large to verify.");
	if (r == ERR_INVALID)
		return mismatch(res); /* a secret we could never match */
	if (r)
		return fail(res, T_INTERNAL, 500, "sigv4: %s", err_str(r));
	if (strlen(a->signature) != 64 ||
	    !api__sv4_is_lower_hex(a->signature, 64) ||
	    CRYPTO_memcmp(a->signature, want, 64) != 0)
		return mismatch(res);
	if (a->s3)
		s3_fill(a->s3, a, amz_date, payload);
	return 0;
}

/*
 * A signature covers only the headers it names. One that changes what a
 * request does (an x-amz-* header such as x-amz-copy-source, X-Amz-Target,
 * Content-MD5) must be among them, or anyone holding a signed request or a
 * presigned URL could add it: S3 answers AccessDenied ("There were headers
 * present in the request which were not signed"). x-amz-content-sha256 is
 * the one exception, as on S3: its value is the payload line of the
 * canonical request, so the signature covers it anyway.
 */
/* Whether header name n starts with "x-amz-" (not "x-amzn-"). */
static int is_amz(const char *n)
{
	static const char p[] = "x-amz-";
	size_t i;

	for (i = 0; i < sizeof(p) - 1; i++)
		if (api__sv4_lower(n[i]) != p[i])
			return 0;
	return 1;
}

static int check_unsigned(const struct api_sigv4_request *req,
			  const struct sv4_signed *sl, int s3,
			  struct sv4_result *res)
{
	size_t i;

	for (i = 0; i < req->n_headers; i++) {
		const char *hn = req->headers[i].name;

		if (!hn)
			continue;
		if (!is_amz(hn) && !api__sv4_name_eq(hn, "content-md5", 11))
			continue;
		if (api__sv4_name_eq(hn, "x-amz-content-sha256", 20))
			continue;
		if (api__sv4_signed_has(sl, hn))
			continue;
		return fail(res, s3 ? "AccessDenied" : T_DENIED, 403,
			    "There were headers present in the request which "
			    "were not signed: %.64s",
			    hn);
	}
	return 0;
}

static int verify(const struct api_sigv4_request *req,
		  const struct api_credentials *creds, const char *service,
		  int64_t now_ms, struct sv4_auth *a, struct sv4_result *res)
{
	const struct api_header *authz;
	struct sv4_crypto c;
	struct sv4_signed sl;
	struct sv4_span path, query;
	char amz_date[17];
	const char *secret, *why = NULL, *uri;
	size_t count;
	int64_t req_ms;
	int r;

	if (!req || !req->method || !service)
		return fail(res, T_INTERNAL, 500, "sigv4: missing argument");
	uri = req->raw_uri && req->raw_uri[0] ? req->raw_uri : "/";
	if (strlen(uri) > SV4_MAX_URI)
		return incomplete(res, "Request URI is too long to verify.");
	api__sv4_split_uri(uri, &path, &query);

	authz = api__sv4_find_header(req, "authorization", &count);
	if (count > 1)
		return incomplete(res, "Multiple Authorization headers.");
	if (authz) {
		r = parse_authorization(api__sv4_header_value(authz), a, res);
	} else {
		int found_sig = 0, found_algo = 0;
		char tmp[SV4_MAX_DATE + 1];

		/* Both lookups fail or succeed without touching *a. */
		query_param(query, "X-Amz-Algorithm", tmp, SV4_MAX_DATE,
			    &found_algo);
		query_param(query, "X-Amz-Signature", tmp, SV4_MAX_DATE,
			    &found_sig);
		if (!found_algo && !found_sig)
			return fail(res, T_MISSING, 403,
				    "Request is missing Authentication Token");
		a->presigned = 1;
		r = parse_presigned(query, a, res);
	}
	if (r)
		return r;
	r = split_credential(a, res);
	if (r)
		return r;
	why = api__sv4_parse_signed_list(a->signed_headers, &sl);
	if (why)
		return incomplete(res, why);
	if (!api__sv4_signed_has(&sl, "host"))
		return incomplete(res, "'Host' or ':authority' must be a "
				       "'SignedHeader' in the AWS "
				       "Authorization.");
	r = request_time(req, a, amz_date, &req_ms, res);
	if (r)
		return r;
	if (memcmp(a->scope_date, amz_date, 8) != 0)
		return fail(res, T_MISMATCH, 403,
			    "Date in Credential scope does not match YYYYMMDD "
			    "from ISO-8601 version of date from HTTP: '%s' != "
			    "'%.8s', from '%s'.",
			    a->scope_date, amz_date, amz_date);
	if (strcmp(a->service, service) != 0)
		return fail(res, T_MISMATCH, 403,
			    "Credential should be scoped to correct service: "
			    "'%s'.",
			    service);
	if (strcmp(a->terminator, SV4_TERMINATOR) != 0)
		return fail(res, T_MISMATCH, 403,
			    "Credential should be scoped with a valid "
			    "terminator: 'aws4_request'.");
	r = check_time(a, amz_date, req_ms, now_ms, res);
	if (r)
		return r;
	secret = find_secret(creds, a->akid);
	if (!secret)
		return fail(res, T_BADKEY, 403,
			    "The security token included in the request is "
			    "invalid.");
	if (api__sv4_crypto_open(&c))
		return fail(res, T_INTERNAL, 500,
			    "sigv4: OpenSSL has no HMAC-SHA256");
	r = check_signature(&c, req, secret, amz_date, a, &sl, res);
	api__sv4_crypto_close(&c);
	if (!r)
		r = check_unsigned(req, &sl, a->s3 != NULL, res);
	return r;
}

int api_sigv4_verify(const struct api_sigv4_request *req,
		     const struct api_credentials *creds, const char *service,
		     int64_t now_ms, const char **err_type, int *http_status,
		     struct buf *err)
{
	return api_sigv4_verify_as(req, creds, service, now_ms, err_type,
				   http_status, err, NULL);
}

static int verify_with(const struct api_sigv4_request *req,
		       const struct api_credentials *creds, const char *service,
		       int64_t now_ms, struct api_sigv4_s3 *s3,
		       const char **err_type, int *http_status, struct buf *err,
		       const struct api_credential **who)
{
	struct sv4_result res = { NULL, 200, err };
	struct sv4_auth a;
	int r;

	/* Only the start of each field: the struct is 3 KiB. */
	a.presigned = 0;
	a.credential[0] = a.signed_headers[0] = a.signature[0] = '\0';
	a.date[0] = a.expires[0] = a.algorithm[0] = '\0';
	a.akid = a.scope_date = a.region = a.service = a.terminator = NULL;
	a.s3 = s3;
	r = verify(req, creds, service, now_ms, &a, &res);
	if (!r) {
		res.type = NULL;
		res.status = 200;
	}
	if (s3)
		s3->presigned = a.presigned;
	if (r && s3)
		OPENSSL_cleanse(s3->key, sizeof(s3->key));
	if (who)
		*who = r ? NULL : api_credentials_find(creds, a.akid);
	if (err_type)
		*err_type = res.type;
	if (http_status)
		*http_status = res.status;
	return r;
}

int api_sigv4_verify_as(const struct api_sigv4_request *req,
			const struct api_credentials *creds,
			const char *service, int64_t now_ms,
			const char **err_type, int *http_status,
			struct buf *err, const struct api_credential **who)
{
	return verify_with(req, creds, service, now_ms, NULL, err_type,
			   http_status, err, who);
}

int api_sigv4_verify_s3(const struct api_sigv4_request *req,
			const struct api_credentials *creds, int64_t now_ms,
			struct api_sigv4_s3 *out, const char **err_type,
			int *http_status, struct buf *err,
			const struct api_credential **who)
{
	memset(out, 0, sizeof(*out));
	return verify_with(req, creds, "s3", now_ms, out, err_type, http_status,
			   err, who);
}

int api_sigv4_chunk_sign(const struct api_sigv4_s3 *s3, int trailer,
			 const char *prev_sig, const char *hash_hex,
			 char out_hex[65])
{
	static const char empty[] = API_SIGV4_EMPTY_SHA256;
	struct sv4_crypto c;
	struct buf sts = BUF_INIT_MAX(512);
	unsigned char sig[32];
	int r;

	if (api__sv4_crypto_open(&c))
		return ERR_INTERNAL;
	r = api__sv4_add_strs(&sts,
			      trailer ? "AWS4-HMAC-SHA256-TRAILER\n" :
					"AWS4-HMAC-SHA256-PAYLOAD\n",
			      s3->amz_date, "\n", s3->scope, "\n", prev_sig,
			      "\n", NULL);
	/* A trailer's string to sign has no empty-hash line. */
	if (!r && !trailer)
		r = api__sv4_add_strs(&sts, empty, "\n", NULL);
	if (!r)
		r = api__sv4_add_strs(&sts, hash_hex, NULL);
	if (!r)
		r = api__sv4_hmac256(&c, s3->key, 32, sts.data, sts.len, sig);
	if (!r)
		api__sv4_to_hex(sig, 32, out_hex);
	api__sv4_crypto_close(&c);
	buf_release(&sts);
	return r ? ERR_INTERNAL : 0;
}
