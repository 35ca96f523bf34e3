/*
 * The S3 REST face of the embedded store (storage/s3d/s3d.h): parsing,
 * authentication, dispatch, errors, and the operations on one object.
 * Buckets, listings and multipart uploads are in storage/s3d/bucket.c.
 */
#define LOG_TAG "s3"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storage/s3d/request.h"
#include "storage/s3d/xml.h"
#include "storage/fs.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define WRITE_CHUNK (1u << 20)

/* ------------------------------------------------------------ helpers */

int s3d__fail(struct s3d *s, const char *code, int status, const char *fmt, ...)
{
	va_list ap;

	if (s->code)
		return -1;
	s->code = code;
	s->status = status;
	va_start(ap, fmt);
	(void)buf_vaddf(&s->msg, fmt, ap);
	va_end(ap);
	return -1;
}

const char *s3d__header(const struct s3d *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nh; i++)
		if (!strcmp(s->h[i].name, name))
			return s->h[i].value;
	return NULL;
}

const char *s3d__query(const struct s3d *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nq; i++)
		if (!strcmp(s->q[i].k, name))
			return s->q[i].v;
	return NULL;
}

int s3d__allowed(const struct s3d *s, const char *bucket, const char *key)
{
	struct buf bk = BUF_INIT;
	int ok;

	if (!s->who || s->who->admin)
		return 1;
	(void)buf_addf(&bk, "%s/%s", bucket, key ? key : "");
	ok = api_credential_s3_allowed(s->who, bk.data);
	buf_release(&bk);
	return ok;
}

void s3d__bucket_path(const struct s3d *s, const char *bucket, struct buf *out)
{
	buf_reset(out);
	(void)buf_addf(out, "%s/%s", s->env->root, bucket);
}

void s3d__object_path(const struct s3d *s, const char *bucket, const char *key,
		      struct buf *out)
{
	buf_reset(out);
	(void)buf_addf(out, "%s/%s/%s", s->env->root, bucket, key);
}

int s3d__need_bucket(struct s3d *s, const char *bucket)
{
	struct buf p = BUF_INIT;
	struct stat st;
	int ok;

	s3d__bucket_path(s, bucket, &p);
	ok = !lstat(p.data, &st) && S_ISDIR(st.st_mode);
	buf_release(&p);
	if (ok)
		return 0;
	return s3d__fail(s, "NoSuchBucket", 404,
			 "The specified bucket does not exist");
}

void s3d__iso_time(int64_t ms, char out[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 24, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + strlen(out), 8, ".%03dZ", (int)(ms % 1000) % 1000);
}

void s3d__http_time(int64_t ms, char out[40])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 40, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

void s3d__reply_header(struct s3d_reply *r, const char *name, const char *value)
{
	if (r->n_headers == S3D_MAX_HEADERS)
		return;
	r->name[r->n_headers] = xstrdup(name);
	r->value[r->n_headers] = xstrdup(value);
	r->n_headers++;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes n bytes of p ('+' too when plus, as in a query).
 * NULL for a malformed escape or a NUL. */
static char *decode(const char *p, size_t n, int plus)
{
	char *out = xmalloc(n + 1);
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		int hi, lo;

		if (p[i] == '+' && plus) {
			out[o++] = ' ';
		} else if (p[i] != '%') {
			out[o++] = p[i];
		} else if (i + 2 < n && (hi = hex_digit(p[i + 1])) >= 0 &&
			   (lo = hex_digit(p[i + 2])) >= 0 && (hi || lo)) {
			out[o++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			free(out);
			return NULL;
		}
	}
	out[o] = '\0';
	return out;
}

/* ------------------------------------------------------------ parsing */

static int parse_query(struct s3d *s, const char *q)
{
	while (q && *q) {
		const char *amp = strchr(q, '&');
		size_t n = amp ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', n);
		size_t kn = eq ? (size_t)(eq - q) : n;

		if (n) {
			if (s->nq == S3D_MAX_QUERY)
				return s3d__fail(s, "InvalidArgument", 400,
						 "too many query parameters");
			s->q[s->nq].k = decode(q, kn, 1);
			s->q[s->nq].v = eq ? decode(eq + 1, n - kn - 1, 1) :
					     xstrdup("");
			if (!s->q[s->nq].k || !s->q[s->nq].v) {
				free(s->q[s->nq].k);
				free(s->q[s->nq].v);
				return s3d__fail(s, "InvalidArgument", 400,
						 "malformed query string");
			}
			s->nq++;
		}
		q = amp ? amp + 1 : NULL;
	}
	return 0;
}

/* The bucket a Host header names under the configured domain, or NULL. */
static char *host_bucket(const struct s3d_env *env, const char *host)
{
	size_t dl, hl;
	const char *colon;

	if (!env->domain || !*env->domain || !host)
		return NULL;
	colon = strrchr(host, ':');
	hl = colon && !strchr(colon, ']') ? (size_t)(colon - host) :
					    strlen(host);
	dl = strlen(env->domain);
	if (hl <= dl + 1 || host[hl - dl - 1] != '.' ||
	    strncasecmp(host + hl - dl, env->domain, dl))
		return NULL;
	return xstrndup(host, hl - dl - 1);
}

static const char *req_header(const struct s3d_req *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->n_headers; i++)
		if (!strcasecmp(r->headers[i].name, name))
			return r->headers[i].value;
	return NULL;
}

/* Splits the path into bucket and key (path style, or key only when the
 * Host names the bucket). */
static int parse_path(struct s3d *s, const struct s3d_req *r, const char *path,
		      size_t n)
{
	const char *slash;
	size_t bn;
	char *vb;

	if (!n || path[0] != '/')
		return s3d__fail(s, "InvalidURI", 400,
				 "the path must start with '/'");
	vb = host_bucket(s->env, req_header(r, "host"));
	path++;
	n--;
	if (vb) {
		s->bucket = vb;
		if (n)
			s->key = decode(path, n, 0);
		return n && !s->key ? s3d__fail(s, "InvalidURI", 400,
						"malformed path") :
				      0;
	}
	if (!n)
		return 0;
	slash = memchr(path, '/', n);
	bn = slash ? (size_t)(slash - path) : n;
	s->bucket = decode(path, bn, 0);
	if (slash && n - bn > 1)
		s->key = decode(slash + 1, n - bn - 1, 0);
	if (!s->bucket || (slash && n - bn > 1 && !s->key))
		return s3d__fail(s, "InvalidURI", 400, "malformed path");
	return 0;
}

static int copy_headers(struct s3d *s, const struct s3d_req *r)
{
	size_t i;

	for (i = 0; i < r->n_headers; i++) {
		char *name;
		size_t j;

		if (s->nh == sizeof(s->h) / sizeof(s->h[0]))
			return s3d__fail(s, "InvalidRequest", 400,
					 "too many request headers");
		name = xstrdup(r->headers[i].name);
		for (j = 0; name[j]; j++)
			if (name[j] >= 'A' && name[j] <= 'Z')
				name[j] = (char)(name[j] - 'A' + 'a');
		s->h[s->nh].name = name;
		s->h[s->nh].value =
			xstrdup(r->headers[i].value ? r->headers[i].value : "");
		s->nh++;
	}
	return 0;
}

/* ------------------------------------------------------------- claims */

static int signed_for_s3(const struct s3d_req *r, const char *query)
{
	const char *a = req_header(r, "authorization");

	if (a && !strncmp(a, "AWS4-HMAC-SHA256", 16) &&
	    strstr(a, "/s3/aws4_request"))
		return 1;
	return query && strstr(query, "X-Amz-Credential=") &&
	       (strstr(query, "%2Fs3%2Faws4_request") ||
		strstr(query, "/s3/aws4_request"));
}

int s3d_claims_signed(const struct s3d_env *env, const struct s3d_req *r)
{
	const char *uri = r->raw_uri ? r->raw_uri : "/";
	char *vb = host_bucket(env, req_header(r, "host"));

	if (vb) {
		free(vb);
		return 1;
	}
	return signed_for_s3(r, strchr(uri, '?'));
}

int s3d_claims(const struct s3d_env *env, const struct s3d_req *r)
{
	const char *uri = r->raw_uri ? r->raw_uri : "/";
	const char *query = strchr(uri, '?');
	size_t plen = query ? (size_t)(query - uri) : strlen(uri);
	char *vb = host_bucket(env, req_header(r, "host"));
	struct buf p = BUF_INIT;
	struct stat st;
	const char *slash;
	char *bucket;
	int yes;

	if (vb) {
		free(vb);
		return 1;
	}
	if (!strncmp(uri, "/v1/", 4) || !strncmp(uri, "/healthz", 8) ||
	    req_header(r, "x-amz-target"))
		return 0;
	if (signed_for_s3(r, query))
		return 1;
	/* An unsigned request naming a bucket: answered by S3 (anonymous
	 * access where the controller is open, AccessDenied where not). */
	if (plen < 2)
		return 0;
	slash = memchr(uri + 1, '/', plen - 1);
	bucket = decode(uri + 1, slash ? (size_t)(slash - uri - 1) : plen - 1,
			0);
	yes = bucket && !stor_bucket_check(bucket, &p);
	if (yes) {
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s", env->root, bucket);
		yes = !lstat(p.data, &st) && S_ISDIR(st.st_mode);
	}
	free(bucket);
	buf_release(&p);
	return yes;
}

/* ------------------------------------------------------- authentication */

/* SigV4's failures in S3's words. */
static void auth_failed(struct s3d *s, const char *type, int status,
			const char *msg)
{
	if (!type)
		type = "AccessDenied";
	if (!strcmp(type, "InvalidClientTokenId"))
		type = "InvalidAccessKeyId";
	else if (!strcmp(type, "MissingAuthenticationToken"))
		type = "AccessDenied";
	else if (!strcmp(type, "IncompleteSignature"))
		type = "AuthorizationHeaderMalformed";
	else if (!strcmp(type, "InvalidSignatureException")) {
		/* an expired presigned URL, or a clock too far off */
		if (strstr(msg, "expired") && strstr(msg, "Request has"))
			type = "AccessDenied", status = 403;
		else
			type = "RequestTimeTooSkewed", status = 403;
	}
	(void)s3d__fail(s, type, status, "%s", msg);
}

/* A request signed the old way: "AWS AKID:sig", or a query signed so. */
static int sigv2(const struct s3d_req *r)
{
	const char *a = req_header(r, "authorization");
	const char *q = r->raw_uri ? strchr(r->raw_uri, '?') : NULL;

	if (a && !strncmp(a, "AWS ", 4))
		return 1;
	return !a && q && strstr(q, "AWSAccessKeyId=") &&
	       strstr(q, "Signature=");
}

static int authenticate(struct s3d *s, const struct s3d_req *r)
{
	struct api_sigv4_request sr;
	struct buf err = BUF_INIT;
	const char *type = NULL;
	int status = 403;

	if (!s->env->creds)
		return 0;
	if (sigv2(r)) {
		(void)s3d__fail(
			s, "AccessDenied", 403,
			"Signature Version 2 is not accepted here: sign "
			"with SigV4 (AWS4-HMAC-SHA256; boto3: "
			"Config(signature_version='s3v4'))");
		return -1;
	}
	memset(&sr, 0, sizeof(sr));
	sr.method = r->method;
	sr.raw_uri = r->raw_uri;
	sr.headers = r->headers;
	sr.n_headers = r->n_headers;
	sr.body = "";
	if (api_sigv4_verify_s3(&sr, s->env->creds, r->now_ms, &s->sig, &type,
				&status, &err, &s->who)) {
		auth_failed(s, type, status, err.len ? err.data : "denied");
		log_info("S3 %s %.200s refused: %s", r->method, r->raw_uri,
			 err.data ? err.data : "");
		buf_release(&err);
		return -1;
	}
	buf_release(&err);
	s->have_sig = 1;
	return 0;
}

/* ------------------------------------------------------------ dispatch */

/* Query names that pick no sub-resource (arguments of an operation). */
static const char *const plain_args[] = {
	"prefix",
	"delimiter",
	"max-keys",
	"marker",
	"continuation-token",
	"start-after",
	"encoding-type",
	"fetch-owner",
	"list-type",
	"key-marker",
	"upload-id-marker",
	"max-uploads",
	"max-parts",
	"part-number-marker",
	"partNumber",
	"uploadId",
	"uploads",
	"delete",
	"location",
	"versioning",
	"x-id",
	"response-content-type",
	"response-content-language",
	"response-expires",
	"response-cache-control",
	"response-content-disposition",
	"response-content-encoding",
	"X-Amz-Algorithm",
	"X-Amz-Credential",
	"X-Amz-Date",
	"X-Amz-Expires",
	"X-Amz-SignedHeaders",
	"X-Amz-Signature",
	"X-Amz-Security-Token",
};

static int unsupported_query(struct s3d *s)
{
	size_t i, j;

	for (i = 0; i < s->nq; i++) {
		for (j = 0; j < sizeof(plain_args) / sizeof(plain_args[0]); j++)
			if (!strcmp(s->q[i].k, plain_args[j]))
				break;
		if (j == sizeof(plain_args) / sizeof(plain_args[0]))
			return s3d__fail(s, "NotImplemented", 501,
					 "'%.60s' is not supported by the "
					 "embedded store (no ACLs, policies, "
					 "tagging, versioning or lifecycle "
					 "rules)",
					 s->q[i].k);
	}
	return 0;
}

static enum s3d_op service_op(struct s3d *s)
{
	if (!strcmp(s->method, "GET"))
		return S3D_LIST_BUCKETS;
	s3d__fail(s, "MethodNotAllowed", 405,
		  "The specified method is not allowed against this resource.");
	return S3D_OP_NONE;
}

static enum s3d_op bucket_op(struct s3d *s)
{
	const char *m = s->method;

	if (!strcmp(m, "PUT") && !s->nq)
		return S3D_CREATE_BUCKET;
	if (!strcmp(m, "HEAD"))
		return S3D_HEAD_BUCKET;
	if (!strcmp(m, "DELETE") && !s->nq)
		return S3D_DELETE_BUCKET;
	if (!strcmp(m, "POST") && s3d__query(s, "delete"))
		return S3D_DELETE_OBJECTS;
	if (!strcmp(m, "GET")) {
		const char *lt = s3d__query(s, "list-type");

		if (s3d__query(s, "location"))
			return S3D_GET_BUCKET_LOCATION;
		if (s3d__query(s, "versioning"))
			return S3D_GET_BUCKET_VERSIONING;
		if (s3d__query(s, "uploads"))
			return S3D_LIST_UPLOADS;
		if (lt && strcmp(lt, "2")) {
			s3d__fail(s, "InvalidArgument", 400,
				  "list-type must be 2");
			return S3D_OP_NONE;
		}
		return lt ? S3D_LIST_OBJECTS_V2 : S3D_LIST_OBJECTS;
	}
	s3d__fail(s, "MethodNotAllowed", 405,
		  "The specified method is not allowed against this resource.");
	return S3D_OP_NONE;
}

static enum s3d_op object_op(struct s3d *s)
{
	const char *m = s->method;
	int upload = s3d__query(s, "uploadId") != NULL;

	if (!strcmp(m, "PUT") && upload && s3d__query(s, "partNumber")) {
		if (s3d__header(s, "x-amz-copy-source")) {
			s3d__fail(s, "NotImplemented", 501,
				  "UploadPartCopy is not supported by the "
				  "embedded store: upload the part's bytes");
			return S3D_OP_NONE;
		}
		return S3D_UPLOAD_PART;
	}
	if (!strcmp(m, "PUT"))
		return s3d__header(s, "x-amz-copy-source") ? S3D_COPY_OBJECT :
							     S3D_PUT_OBJECT;
	if (s3d__query(s, "partNumber")) {
		s3d__fail(s, "NotImplemented", 501,
			  "partNumber on %s is not supported by the embedded "
			  "store: use a Range",
			  m);
		return S3D_OP_NONE;
	}
	if (!strcmp(m, "GET"))
		return upload ? S3D_LIST_PARTS : S3D_GET_OBJECT;
	if (!strcmp(m, "HEAD"))
		return S3D_HEAD_OBJECT;
	if (!strcmp(m, "DELETE"))
		return upload ? S3D_ABORT_UPLOAD : S3D_DELETE_OBJECT;
	if (!strcmp(m, "POST") && s3d__query(s, "uploads"))
		return S3D_CREATE_UPLOAD;
	if (!strcmp(m, "POST") && upload)
		return S3D_COMPLETE_UPLOAD;
	s3d__fail(s, "MethodNotAllowed", 405,
		  "The specified method is not allowed against this resource.");
	return S3D_OP_NONE;
}

static const char *const op_names[] = {
	[S3D_OP_NONE] = "S3",
	[S3D_LIST_BUCKETS] = "ListBuckets",
	[S3D_CREATE_BUCKET] = "CreateBucket",
	[S3D_HEAD_BUCKET] = "HeadBucket",
	[S3D_DELETE_BUCKET] = "DeleteBucket",
	[S3D_GET_BUCKET_LOCATION] = "GetBucketLocation",
	[S3D_GET_BUCKET_VERSIONING] = "GetBucketVersioning",
	[S3D_LIST_OBJECTS] = "ListObjects",
	[S3D_LIST_OBJECTS_V2] = "ListObjectsV2",
	[S3D_LIST_UPLOADS] = "ListMultipartUploads",
	[S3D_DELETE_OBJECTS] = "DeleteObjects",
	[S3D_PUT_OBJECT] = "PutObject",
	[S3D_COPY_OBJECT] = "CopyObject",
	[S3D_GET_OBJECT] = "GetObject",
	[S3D_HEAD_OBJECT] = "HeadObject",
	[S3D_DELETE_OBJECT] = "DeleteObject",
	[S3D_CREATE_UPLOAD] = "CreateMultipartUpload",
	[S3D_UPLOAD_PART] = "UploadPart",
	[S3D_COMPLETE_UPLOAD] = "CompleteMultipartUpload",
	[S3D_ABORT_UPLOAD] = "AbortMultipartUpload",
	[S3D_LIST_PARTS] = "ListParts",
};

const char *s3d_op_name(const struct s3d *s)
{
	return s ? op_names[s->op] : "S3";
}

/* Whether op writes an object under s->key. */
static int s3_creates(enum s3d_op op)
{
	return op == S3D_PUT_OBJECT || op == S3D_COPY_OBJECT ||
	       op == S3D_CREATE_UPLOAD || op == S3D_UPLOAD_PART ||
	       op == S3D_COMPLETE_UPLOAD;
}

/* Names checked, the caller's reach checked. */
static int check_names(struct s3d *s)
{
	struct buf err = BUF_INIT;
	int r = 0;

	if (s->bucket && stor_bucket_check(s->bucket, &err))
		r = s3d__fail(s, "InvalidBucketName", 400,
			      "The specified bucket is not valid: %s",
			      err.data);
	else if (s->key && strlen(s->key) > S3D_KEY_MAX)
		r = s3d__fail(s, "KeyTooLongError", 400,
			      "Your key is too long: %zu bytes, at most %d",
			      strlen(s->key), S3D_KEY_MAX);
	else if (s->key && s3_creates(s->op) && !s3d__xml_text_ok(s->key))
		r = s3d__fail(s, "InvalidArgument", 400,
			      "The object key is not valid UTF-8 or holds a "
			      "control character that XML cannot carry");
	else if (s->key && stor_key_check(s->key, 0, &err))
		r = s3d__fail(s, "InvalidArgument", 400,
			      "The key cannot be kept by the embedded store: "
			      "%s",
			      err.data);
	buf_release(&err);
	if (r || !s->bucket || s->op == S3D_DELETE_OBJECTS ||
	    s->op == S3D_LIST_OBJECTS || s->op == S3D_LIST_OBJECTS_V2 ||
	    s->op == S3D_LIST_UPLOADS)
		return r; /* listings check their prefix */
	if (!s->key && s->who && !s->who->admin &&
	    (s->op == S3D_CREATE_BUCKET || s->op == S3D_DELETE_BUCKET))
		return s3d__fail(s, "AccessDenied", 403,
				 "Only an admin key may create or delete "
				 "buckets");
	if (!s->key) {
		/* A user key reaches a bucket it has a prefix in. */
		size_t i, bl = strlen(s->bucket);

		if (!s->who || s->who->admin)
			return 0;
		for (i = 0; i < s->who->n_s3_prefixes; i++)
			if (!strncmp(s->who->s3_prefixes[i], s->bucket, bl) &&
			    s->who->s3_prefixes[i][bl] == '/')
				return 0;
		return s3d__fail(s, "AccessDenied", 403, "Access Denied");
	}
	if (!s3d__allowed(s, s->bucket, s->key))
		return s3d__fail(s, "AccessDenied", 403,
				 "Access Denied: '%s/%s' is outside the S3 "
				 "prefixes of key %s",
				 s->bucket, s->key, s->who->access_key_id);
	return 0;
}

/* -------------------------------------------------------------- bodies */

static const char *get_header(void *ctx, const char *name)
{
	return s3d__header(ctx, name);
}

static int flush_pending(struct s3d *s)
{
	size_t off = 0;

	while (off < s->pending.len && !s->write_failed) {
		ssize_t w = write(s->fd, s->pending.data + off,
				  s->pending.len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			s->write_failed = errno;
			break;
		}
		off += (size_t)w;
	}
	buf_reset(&s->pending);
	return s->write_failed ? -1 : 0;
}

static int sink_file(void *ctx, const char *data, size_t n)
{
	struct s3d *s = ctx;

	if (s->write_failed)
		return -1;
	if (s->pending.len + n > WRITE_CHUNK && flush_pending(s))
		return -1;
	if (n >= WRITE_CHUNK) {
		(void)buf_add(&s->pending, data, n);
		return flush_pending(s);
	}
	return buf_add(&s->pending, data, n) ? -1 : 0;
}

static int sink_xml(void *ctx, const char *data, size_t n)
{
	struct s3d *s = ctx;

	return buf_add(&s->xml, data, n) ? -1 : 0;
}

static int intake_init(struct s3d *s, int64_t limit)
{
	if (s3d__body_init(&s->body, s->have_sig ? &s->sig : NULL, get_header,
			   s, limit)) {
		s3d__fail(s, s->body.code, s->body.status, "%s",
			  s->body.msg.data);
		s3d__body_release(&s->body);
		return -1;
	}
	s->body_ready = 1;
	return 0;
}

int s3d__intake_file(struct s3d *s, const char *path, int64_t limit)
{
	struct buf err = BUF_INIT;

	if (intake_init(s, limit))
		return -1;
	buf_reset(&s->path);
	(void)buf_adds(&s->path, path);
	if (stor_fs_tmp_open(path, &s->fd, &s->tmp, &err)) {
		log_error("S3 %s: %s", s->path.data, err.data);
		s3d__fail(s, "InternalError", 500,
			  "the object cannot be written: %s", err.data);
		buf_release(&err);
		return -1;
	}
	buf_release(&err);
	s->intake = S3D_IN_FILE;
	return 0;
}

int s3d__intake_xml(struct s3d *s)
{
	if (intake_init(s, S3D_XML_BODY_MAX))
		return -1;
	s->intake = S3D_IN_XML;
	return 0;
}

int s3d__intake_end(struct s3d *s)
{
	if (s->code)
		return -1;
	if (!s->body_ready)
		return 0;
	if (s->intake == S3D_IN_FILE && flush_pending(s))
		return s3d__fail(s, "InternalError", 500,
				 "the object could not be written: %s",
				 strerror(s->write_failed));
	if (s3d__body_end(&s->body))
		return s3d__fail(s, s->body.code, s->body.status, "%s",
				 s->body.msg.data);
	return 0;
}

int s3d_refused(const struct s3d *s)
{
	return s->code != NULL;
}

void s3d_data(struct s3d *s, const char *data, size_t n)
{
	if (s->code || !s->body_ready)
		return;
	if (s3d__body_feed(&s->body, data, n,
			   s->intake == S3D_IN_XML ? sink_xml : sink_file, s))
		s3d__fail(s, s->body.code, s->body.status, "%s",
			  s->body.msg.data);
}

/* --------------------------------------------------------- object PUT */

/* Request headers an object keeps, as S3 does. */
static const char *const kept[] = {
	"content-type",	    "content-encoding", "content-disposition",
	"content-language", "cache-control",	"expires",
};

/* x-amz-* request headers that would change what S3 does with the object
 * and that the embedded store cannot honour. */
static const char *const refused[] = {
	"x-amz-server-side-encryption-customer-algorithm",
	"x-amz-acl",
	"x-amz-grant-read",
	"x-amz-grant-write",
	"x-amz-grant-full-control",
	"x-amz-tagging",
	"x-amz-object-lock-mode",
	"x-amz-object-lock-retain-until-date",
	"x-amz-object-lock-legal-hold",
	"x-amz-website-redirect-location",
};

/* Content-Encoding without the transfer's "aws-chunked" token. */
static void add_encoding(json_t *h, const char *v)
{
	struct buf out = BUF_INIT;
	char *copy = xstrdup(v), *save = NULL, *tok;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (!strcasecmp(tok, "aws-chunked"))
			continue;
		(void)buf_addf(&out, "%s%s", out.len ? "," : "", tok);
	}
	if (out.len)
		json_object_set_new(h, "content-encoding",
				    json_string(out.data));
	free(copy);
	buf_release(&out);
}

int s3d__kept_headers(struct s3d *s, json_t **out)
{
	json_t *h = json_object();
	size_t i, j, meta = 0;
	const char *sc = s3d__header(s, "x-amz-storage-class");

	*out = NULL;
	if (sc && strcmp(sc, "STANDARD")) {
		json_decref(h);
		return s3d__fail(s, "InvalidStorageClass", 400,
				 "The storage class you specified is not valid "
				 "here: only STANDARD is kept");
	}
	for (i = 0; i < s->nh; i++) {
		const char *n = s->h[i].name, *v = s->h[i].value;

		/*
		 * SSE-S3 and SSE-KMS ask the server to encrypt at rest: here
		 * that is the controller's disk's job (docs/storage.md), and
		 * answers carry no encryption header claiming otherwise.
		 * Another algorithm is an error, as on S3.
		 */
		if (!strcmp(n, "x-amz-server-side-encryption") &&
		    strcmp(v, "AES256") && strcmp(v, "aws:kms") &&
		    strcmp(v, "aws:kms:dsse")) {
			json_decref(h);
			return s3d__fail(s, "InvalidArgument", 400,
					 "Server Side Encryption with %.40s is "
					 "not valid: AES256, aws:kms or "
					 "aws:kms:dsse",
					 v);
		}
		for (j = 0; j < sizeof(refused) / sizeof(refused[0]); j++)
			if (!strcmp(n, refused[j])) {
				json_decref(h);
				return s3d__fail(s, "NotImplemented", 501,
						 "%s is not supported by the "
						 "embedded store",
						 n);
			}
		if (!strncmp(n, "x-amz-meta-", 11)) {
			meta += strlen(n) - 11 + strlen(v);
			json_object_set_new(h, n, json_string(v));
			continue;
		}
		if (!strcmp(n, "content-encoding")) {
			add_encoding(h, v);
			continue;
		}
		for (j = 0; j < sizeof(kept) / sizeof(kept[0]); j++)
			if (!strcmp(n, kept[j]))
				json_object_set_new(h, n, json_string(v));
	}
	if (meta > S3D_META_MAX) {
		json_decref(h);
		return s3d__fail(s, "MetadataTooLarge", 400,
				 "Your metadata headers exceed the maximum "
				 "allowed metadata size (%d bytes)",
				 S3D_META_MAX);
	}
	*out = h;
	return 0;
}

static int begin_put(struct s3d *s)
{
	const char *cl = s3d__header(s, "content-length");
	json_t *h = NULL;

	if (s3d__need_bucket(s, s->bucket) || s3d__kept_headers(s, &h))
		return -1;
	json_decref(h);
	if (!cl && !s3d__header(s, "x-amz-decoded-content-length"))
		return s3d__fail(s, "MissingContentLength", 411,
				 "You must provide the Content-Length HTTP "
				 "header.");
	if (cl && strtoll(cl, NULL, 10) >
			  (s3d__header(s, "x-amz-decoded-content-length") ?
				   s->env->max_object * 2 :
				   s->env->max_object))
		return s3d__fail(s, "EntityTooLarge", 400,
				 "Your proposed upload exceeds the maximum "
				 "allowed size (%lld bytes)",
				 (long long)s->env->max_object);
	{
		struct buf p = BUF_INIT;
		int r;

		s3d__object_path(s, s->bucket, s->key, &p);
		r = s3d__intake_file(s, p.data, s->env->max_object);
		buf_release(&p);
		return r;
	}
}

/* The full-object checksum a PUT carried, kept to answer
 * x-amz-checksum-mode: ENABLED. */
static json_t *checksums_of(const struct s3d_body *b)
{
	json_t *c;

	if (b->ck == S3D_CK_NONE)
		return NULL;
	c = json_object();
	json_object_set_new(c, b->ck_name, json_string(b->ck_b64));
	return c;
}

int s3d__commit(struct s3d *s, const struct s3d_obj *o, int flush)
{
	struct buf err = BUF_INIT;
	int r;

	r = s3d__meta_store(s->fd, o, &err);
	if (!r)
		r = stor_fs_tmp_commit(s->fd, s->tmp.data, s->path.data, flush,
				       &err);
	else
		stor_fs_tmp_abort(s->fd, s->tmp.data);
	s->fd = -1;
	buf_reset(&s->tmp);
	if (r == ERR_TOOBIG)
		s3d__fail(s, "MetadataTooLarge", 400,
			  "Your metadata headers exceed the maximum allowed "
			  "metadata size: %s",
			  err.data);
	else if (r == ERR_CONFLICT ||
		 (r && strstr(err.data, "Not a directory")))
		s3d__fail(s, "InvalidArgument", 400,
			  "The key cannot be kept by the embedded store: %s "
			  "(a key cannot be both an object and a folder of "
			  "others)",
			  err.data);
	else if (r)
		s3d__fail(s, "InternalError", 500, "%s", err.data);
	buf_release(&err);
	return r ? -1 : 0;
}

static void etag_header(struct s3d_reply *r, const char *etag)
{
	char q[64];

	snprintf(q, sizeof(q), "\"%s\"", etag);
	s3d__reply_header(r, "ETag", q);
}

static void finish_put(struct s3d *s, struct s3d_reply *r)
{
	struct s3d_obj o;
	const char *inm = s3d__header(s, "if-none-match");
	struct stat st;

	memset(&o, 0, sizeof(o));
	if (s3d__intake_end(s))
		return;
	if (inm && !strcmp(inm, "*") && !stat(s->path.data, &st)) {
		s3d__fail(s, "PreconditionFailed", 412,
			  "At least one of the pre-conditions you specified "
			  "did not hold");
		return;
	}
	if (s3d__kept_headers(s, &o.headers))
		return;
	snprintf(o.etag, sizeof(o.etag), "%s", s->body.md5_hex);
	o.checksums = checksums_of(&s->body);
	if (!s3d__commit(s, &o, 1)) {
		r->status = 200;
		etag_header(r, o.etag);
		if (o.checksums)
			s3d__reply_header(r, s->body.ck_name, s->body.ck_b64);
	}
	s3d__obj_release(&o);
}

/* ---------------------------------------------------------- GET, HEAD */

/* Opens the object; 0, or -1 with NoSuchKey remembered. */
static int open_object(struct s3d *s, const char *bucket, const char *key,
		       int *fd, struct s3d_obj *o)
{
	struct buf p = BUF_INIT, err = BUF_INIT;
	struct stat st;
	int r = 0;

	*fd = -1;
	if (s3d__need_bucket(s, bucket))
		return -1;
	s3d__object_path(s, bucket, key, &p);
	*fd = open(p.data, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0 || fstat(*fd, &st) || !S_ISREG(st.st_mode)) {
		r = s3d__fail(s, "NoSuchKey", 404,
			      "The specified key does not exist.");
	} else if (s3d__meta_load(*fd, &st, o, &err)) {
		r = s3d__fail(s, "InternalError", 500, "%s", err.data);
	}
	if (r && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	buf_release(&p);
	buf_release(&err);
	return r;
}

/* Parses "bytes=a-b", "bytes=a-", "bytes=-n" against size. 1: whole
 * object (no or ignored range), 0: [*from, *to], -1: unsatisfiable. */
static int parse_range(const char *v, int64_t size, int64_t *from, int64_t *to)
{
	char *end;
	long long a, b;

	if (!v || strncmp(v, "bytes=", 6) || strchr(v, ','))
		return 1; /* S3 ignores what it does not understand */
	v += 6;
	if (*v == '-') {
		b = strtoll(v + 1, &end, 10);
		if (*end || end == v + 1)
			return 1;
		if (b <= 0 || size == 0)
			return -1;
		*from = b >= size ? 0 : size - b;
		*to = size - 1;
		return 0;
	}
	a = strtoll(v, &end, 10);
	if (end == v || *end != '-')
		return 1;
	if (end[1]) {
		char *e2;

		b = strtoll(end + 1, &e2, 10);
		if (*e2 || b < a)
			return 1;
	} else {
		b = size - 1;
	}
	if (a >= size)
		return -1;
	*from = a;
	*to = b >= size ? size - 1 : b;
	return 0;
}

/* If-Match and friends: 0 to go on, else the status (304 or 412). */
static int preconditions(const struct s3d *s, const struct s3d_obj *o)
{
	const char *im = s3d__header(s, "if-match");
	const char *inm = s3d__header(s, "if-none-match");
	char q[64];

	snprintf(q, sizeof(q), "\"%s\"", o->etag);
	if (im && strcmp(im, "*") && strcmp(im, q) && strcmp(im, o->etag))
		return 412;
	if (inm &&
	    (!strcmp(inm, "*") || !strcmp(inm, q) || !strcmp(inm, o->etag)))
		return 304;
	return 0;
}

static void object_headers(struct s3d *s, struct s3d_reply *r,
			   const struct s3d_obj *o)
{
	static const char *const overrides[][2] = {
		{ "response-content-type", "Content-Type" },
		{ "response-content-language", "Content-Language" },
		{ "response-expires", "Expires" },
		{ "response-cache-control", "Cache-Control" },
		{ "response-content-disposition", "Content-Disposition" },
		{ "response-content-encoding", "Content-Encoding" },
	};
	char lm[40];
	const char *k;
	json_t *v;
	size_t i;

	etag_header(r, o->etag);
	s3d__http_time(o->mtime_ms, lm);
	s3d__reply_header(r, "Last-Modified", lm);
	s3d__reply_header(r, "Accept-Ranges", "bytes");
	for (i = 0; i < sizeof(overrides) / sizeof(overrides[0]); i++) {
		const char *ov = s3d__query(s, overrides[i][0]);

		if (ov)
			s3d__reply_header(r, overrides[i][1], ov);
	}
	if (!json_object_get(o->headers, "content-type") &&
	    !s3d__query(s, "response-content-type"))
		s3d__reply_header(r, "Content-Type", "binary/octet-stream");
	json_object_foreach(o->headers, k, v)
	{
		int overridden = 0;

		for (i = 0; i < sizeof(overrides) / sizeof(overrides[0]); i++)
			if (!strcasecmp(k, overrides[i][1]) &&
			    s3d__query(s, overrides[i][0]))
				overridden = 1;
		if (!overridden && json_is_string(v))
			s3d__reply_header(r, k, json_string_value(v));
	}
}

/*
 * Whether a browser is opening the object as a page: a navigation, or a
 * read without a SigV4 signature (an open controller, a page's
 * credentials that S3 never accepts). Such reads download it instead.
 */
static int browser_read(const struct s3d *s)
{
	const char *mode = s3d__header(s, "sec-fetch-mode");
	const char *dest = s3d__header(s, "sec-fetch-dest");

	return !s->have_sig || (mode && !strcasecmp(mode, "navigate")) ||
	       (dest && strcasecmp(dest, "empty"));
}

/*
 * Replaces every header called name with one name: value. It always goes
 * out: when the answer already holds S3D_MAX_HEADERS headers (many
 * stored x-amz-meta-*), the last of them makes room.
 */
static void set_header(struct s3d_reply *r, const char *name, const char *value)
{
	size_t i, j = 0;

	for (i = 0; i < r->n_headers; i++) {
		if (!strcasecmp(r->name[i], name)) {
			free(r->name[i]);
			free(r->value[i]);
			continue;
		}
		r->name[j] = r->name[i];
		r->value[j] = r->value[i];
		j++;
	}
	r->n_headers = j;
	if (r->n_headers == S3D_MAX_HEADERS) {
		r->n_headers--;
		free(r->name[r->n_headers]);
		free(r->value[r->n_headers]);
	}
	s3d__reply_header(r, name, value);
}

static void finish_get(struct s3d *s, struct s3d_reply *r, int head)
{
	struct s3d_obj o;
	int64_t from = 0, to = 0;
	int fd, pre, whole;

	memset(&o, 0, sizeof(o));
	if (open_object(s, s->bucket, s->key, &fd, &o))
		return;
	pre = preconditions(s, &o);
	if (pre == 412) {
		s3d__fail(s, "PreconditionFailed", 412,
			  "At least one of the pre-conditions you specified "
			  "did not hold");
		goto out;
	}
	whole = parse_range(s3d__header(s, "range"), o.size, &from, &to);
	if (whole < 0) {
		s3d__fail(s, "InvalidRange", 416,
			  "The requested range is not satisfiable");
		s->actual_size = o.size;
		goto out;
	}
	object_headers(s, r, &o);
	if (browser_read(s))
		set_header(r, "Content-Disposition", "attachment");
	if (pre == 304) {
		r->status = 304;
		goto out;
	}
	r->status = whole ? 200 : 206;
	r->fd = fd;
	fd = -1;
	r->offset = whole ? 0 : (uint64_t)from;
	r->size = whole ? (uint64_t)o.size : (uint64_t)(to - from + 1);
	if (!whole) {
		char cr[96];

		snprintf(cr, sizeof(cr), "bytes %lld-%lld/%lld",
			 (long long)from, (long long)to, (long long)o.size);
		s3d__reply_header(r, "Content-Range", cr);
	}
	if (whole && o.checksums && s3d__header(s, "x-amz-checksum-mode")) {
		const char *k;
		json_t *v;

		json_object_foreach(o.checksums, k, v)
			s3d__reply_header(r, k, json_string_value(v));
	}
	(void)head;
out:
	if (fd >= 0)
		close(fd);
	s3d__obj_release(&o);
}

/* ------------------------------------------------------- DELETE, COPY */

static void finish_delete(struct s3d *s, struct s3d_reply *r)
{
	struct buf err = BUF_INIT, root = BUF_INIT;

	if (s3d__need_bucket(s, s->bucket))
		return;
	s3d__bucket_path(s, s->bucket, &root);
	if (stor_fs_delete(root.data, s->key, 1, &err))
		s3d__fail(s, "InternalError", 500, "%s", err.data);
	else
		r->status = 204;
	buf_release(&err);
	buf_release(&root);
}

/* "/bucket/key" or "bucket/key", URL-encoded. */
static int copy_source(struct s3d *s, char **bucket, char **key)
{
	const char *v = s3d__header(s, "x-amz-copy-source");
	struct buf err = BUF_INIT;
	char *all, *slash;

	*bucket = *key = NULL;
	if (*v == '/')
		v++;
	if (strchr(v, '?'))
		return s3d__fail(s, "NotImplemented", 501,
				 "versioned copy sources are not supported");
	all = decode(v, strlen(v), 0);
	slash = all ? strchr(all, '/') : NULL;
	if (!slash || !slash[1]) {
		free(all);
		return s3d__fail(s, "InvalidArgument", 400,
				 "Copy Source must mention the source bucket "
				 "and key: sourcebucket/sourcekey");
	}
	*slash = '\0';
	*bucket = xstrdup(all);
	*key = xstrdup(slash + 1);
	free(all);
	if (stor_bucket_check(*bucket, &err) || stor_key_check(*key, 0, &err))
		s3d__fail(s, "InvalidArgument", 400, "Copy Source: %s",
			  err.data);
	else if (!s3d__allowed(s, *bucket, *key))
		s3d__fail(s, "AccessDenied", 403,
			  "Access Denied to the copy source");
	buf_release(&err);
	return s->code ? -1 : 0;
}

static int copy_bytes(struct s3d *s, int in)
{
	struct buf err = BUF_INIT;
	int64_t copied = 0;
	int r;

	r = stor_fs_copy_fd(in, s->fd, &copied, &err);
	if (r)
		s3d__fail(s, "InternalError", 500, "copy failed: %s", err.data);
	buf_release(&err);
	return r;
}

static void finish_copy(struct s3d *s, struct s3d_reply *r)
{
	const char *dir = s3d__header(s, "x-amz-metadata-directive");
	int replace = dir && !strcmp(dir, "REPLACE");
	char *sb = NULL, *sk = NULL, t[32];
	struct s3d_obj src, dst;
	struct buf err = BUF_INIT;
	int in = -1;

	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	if (dir && !replace && strcmp(dir, "COPY")) {
		s3d__fail(s, "InvalidArgument", 400,
			  "Unknown metadata directive.");
		return;
	}
	if (copy_source(s, &sb, &sk) || open_object(s, sb, sk, &in, &src) ||
	    s3d__need_bucket(s, s->bucket))
		goto out;
	if (!strcmp(sb, s->bucket) && !strcmp(sk, s->key) && !replace) {
		s3d__fail(s, "InvalidRequest", 400,
			  "This copy request is illegal because it is trying "
			  "to copy an object to itself without changing the "
			  "object's metadata.");
		goto out;
	}
	dst.checksums = json_incref(src.checksums);
	snprintf(dst.etag, sizeof(dst.etag), "%s", src.etag);
	if (!replace)
		dst.headers = json_incref(src.headers);
	else if (s3d__kept_headers(s, &dst.headers))
		goto out;
	s3d__object_path(s, s->bucket, s->key, &s->path);
	if (stor_fs_tmp_open(s->path.data, &s->fd, &s->tmp, &err)) {
		s3d__fail(s, "InternalError", 500, "%s", err.data);
		goto out;
	}
	if (copy_bytes(s, in) || s3d__commit(s, &dst, 1))
		goto out;
	r->status = 200;
	s3d__xml_begin(&r->body, "CopyObjectResult");
	s3d__iso_time(s->now_ms, t);
	s3d__xml_el(&r->body, "LastModified", t);
	s3d__xml_elf(&r->body, "ETag", "\"%s\"", dst.etag);
	s3d__xml_close(&r->body, "CopyObjectResult");
out:
	if (in >= 0)
		close(in);
	free(sb);
	free(sk);
	s3d__obj_release(&src);
	s3d__obj_release(&dst);
	buf_release(&err);
}

/* -------------------------------------------------------------- begin */

/* What the headers decide: the body's intake for operations with one. */
static int begin_op(struct s3d *s)
{
	switch (s->op) {
	case S3D_PUT_OBJECT:
		return begin_put(s);
	case S3D_UPLOAD_PART:
		return s3d__begin_upload_part(s);
	case S3D_CREATE_BUCKET:
	case S3D_DELETE_OBJECTS:
	case S3D_COMPLETE_UPLOAD:
		return s3d__intake_xml(s);
	case S3D_CREATE_UPLOAD:
		return s3d__begin_create_upload(s);
	default:
		return 0;
	}
}

struct s3d *s3d_begin(const struct s3d_env *env, const struct s3d_req *r)
{
	struct s3d *s = xcalloc(1, sizeof(*s));
	const char *uri = r->raw_uri ? r->raw_uri : "/";
	const char *q = strchr(uri, '?');

	s->env = env;
	s->fd = -1;
	s->actual_size = -1;
	s->method = r->method;
	s->request_id = r->request_id;
	s->now_ms = r->now_ms;
	buf_init(&s->msg, 2048);
	buf_init(&s->xml, S3D_XML_BODY_MAX);
	if (copy_headers(s, r) ||
	    parse_path(s, r, uri, q ? (size_t)(q - uri) : strlen(uri)) ||
	    authenticate(s, r) || parse_query(s, q ? q + 1 : NULL) ||
	    unsupported_query(s))
		return s;
	if (!s->bucket)
		s->op = service_op(s);
	else if (!s->key)
		s->op = bucket_op(s);
	else
		s->op = object_op(s);
	if (s->op == S3D_OP_NONE || check_names(s))
		return s;
	(void)begin_op(s);
	return s;
}

/* ------------------------------------------------------------- finish */

static void error_reply(struct s3d *s, struct s3d_reply *r)
{
	char res[600];

	r->status = s->status;
	buf_reset(&r->body);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (!strcmp(s->method, "HEAD"))
		return; /* S3 answers HEAD errors without a body */
	snprintf(res, sizeof(res), "/%s%s%s", s->bucket ? s->bucket : "",
		 s->key ? "/" : "", s->key ? s->key : "");
	(void)buf_adds(&r->body,
		       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
	s3d__xml_el(&r->body, "Code", s->code);
	s3d__xml_el(&r->body, "Message", s->msg.data ? s->msg.data : "");
	if (!strcmp(s->code, "NoSuchBucket") && s->bucket)
		s3d__xml_el(&r->body, "BucketName", s->bucket);
	if (!strcmp(s->code, "NoSuchKey") && s->key)
		s3d__xml_el(&r->body, "Key", s->key);
	if (!strcmp(s->code, "NoSuchUpload") && s->upload_id[0])
		s3d__xml_el(&r->body, "UploadId", s->upload_id);
	if (s->actual_size >= 0) {
		/* The CRT client knows an empty object by this size. */
		s3d__xml_el(&r->body, "RangeRequested",
			    s3d__header(s, "range"));
		s3d__xml_elf(&r->body, "ActualObjectSize", "%lld",
			     (long long)s->actual_size);
	}
	s3d__xml_el(&r->body, "Resource", res);
	s3d__xml_el(&r->body, "RequestId", s->request_id ? s->request_id : "");
	(void)buf_adds(&r->body, "</Error>");
	s3d__reply_header(r, "Content-Type", "application/xml");
}

static void run_op(struct s3d *s, struct s3d_reply *r)
{
	switch (s->op) {
	case S3D_LIST_BUCKETS:
		s3d__op_list_buckets(s, r);
		break;
	case S3D_CREATE_BUCKET:
		s3d__op_create_bucket(s, r);
		break;
	case S3D_HEAD_BUCKET:
		s3d__op_head_bucket(s, r);
		break;
	case S3D_DELETE_BUCKET:
		s3d__op_delete_bucket(s, r);
		break;
	case S3D_GET_BUCKET_LOCATION:
		s3d__op_bucket_location(s, r);
		break;
	case S3D_GET_BUCKET_VERSIONING:
		s3d__op_bucket_versioning(s, r);
		break;
	case S3D_LIST_OBJECTS:
	case S3D_LIST_OBJECTS_V2:
		s3d__op_list_objects(s, r, s->op == S3D_LIST_OBJECTS_V2);
		break;
	case S3D_LIST_UPLOADS:
		s3d__op_list_uploads(s, r);
		break;
	case S3D_DELETE_OBJECTS:
		s3d__op_delete_objects(s, r);
		break;
	case S3D_PUT_OBJECT:
		finish_put(s, r);
		break;
	case S3D_COPY_OBJECT:
		finish_copy(s, r);
		break;
	case S3D_GET_OBJECT:
	case S3D_HEAD_OBJECT:
		finish_get(s, r, s->op == S3D_HEAD_OBJECT);
		break;
	case S3D_DELETE_OBJECT:
		finish_delete(s, r);
		break;
	case S3D_CREATE_UPLOAD:
		s3d__op_create_upload(s, r);
		break;
	case S3D_UPLOAD_PART:
		s3d__op_upload_part(s, r);
		break;
	case S3D_COMPLETE_UPLOAD:
		s3d__op_complete_upload(s, r);
		break;
	case S3D_ABORT_UPLOAD:
		s3d__op_abort_upload(s, r);
		break;
	case S3D_LIST_PARTS:
		s3d__op_list_parts(s, r);
		break;
	case S3D_OP_NONE:
		break;
	}
}

void s3d_finish(struct s3d *s, struct s3d_reply *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->body, 0);
	r->fd = -1;
	/*
	 * Objects are served from the status page's origin with the
	 * uploader's Content-Type: no answer may run script there or be
	 * sniffed into HTML. First, so the header cap never drops them.
	 */
	s3d__reply_header(r, "Content-Security-Policy", "sandbox");
	s3d__reply_header(r, "X-Content-Type-Options", "nosniff");
	if (!s->code)
		run_op(s, r);
	if (!s->code && !r->status)
		s3d__fail(s, "InternalError", 500, "no reply");
	if (s->code)
		error_reply(s, r);
	else if (r->body.len)
		s3d__reply_header(r, "Content-Type", "application/xml");
	if (s->request_id)
		s3d__reply_header(r, "x-amz-request-id", s->request_id);
}

void s3d_reply_release(struct s3d_reply *r)
{
	size_t i;

	buf_release(&r->body);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	for (i = 0; i < r->n_headers; i++) {
		free(r->name[i]);
		free(r->value[i]);
	}
	r->n_headers = 0;
}

void s3d_free(struct s3d *s)
{
	size_t i;

	if (!s)
		return;
	if (s->fd >= 0)
		stor_fs_tmp_abort(s->fd, s->tmp.data);
	for (i = 0; i < s->nq; i++) {
		free(s->q[i].k);
		free(s->q[i].v);
	}
	for (i = 0; i < s->nh; i++) {
		free((char *)s->h[i].name);
		free((char *)s->h[i].value);
	}
	if (s->body_ready)
		s3d__body_release(&s->body);
	free(s->bucket);
	free(s->key);
	buf_release(&s->msg);
	buf_release(&s->xml);
	buf_release(&s->tmp);
	buf_release(&s->path);
	buf_release(&s->pending);
	free(s);
}
