/*
 * An S3 request as received (storage/s3d/request.h): its path, query and
 * headers parsed, its SigV4 signature checked, and the accessors the
 * operations use. Also whether a request is for S3 at all
 * (s3d_claims()).
 */
#define LOG_TAG "s3"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "storage/s3d/request.h"
#include "storage/storage.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

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

void s3d__changed(struct s3d *s, enum s3d_change_kind kind, const char *bucket,
		  const char *key)
{
	struct s3d_change *c;

	s->changes =
		xrealloc(s->changes, (s->n_changes + 1) * sizeof(*s->changes));
	c = &s->changes[s->n_changes++];
	c->kind = kind;
	c->bucket = xstrdup(bucket);
	c->key = key ? xstrdup(key) : NULL;
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

int s3d__reaches_bucket(const struct s3d *s, const char *bucket)
{
	size_t i, bl = strlen(bucket);

	if (!s->who || s->who->admin)
		return 1;
	for (i = 0; i < s->who->n_s3_prefixes; i++)
		if (!strncmp(s->who->s3_prefixes[i], bucket, bl) &&
		    s->who->s3_prefixes[i][bl] == '/')
			return 1;
	return 0;
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

/* Percent-decodes n bytes of p ('+' too when plus, as in a query).
 * NULL for a malformed escape or a NUL. */
char *s3d__decode(const char *p, size_t n, int plus)
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
			s->q[s->nq].k = s3d__decode(q, kn, 1);
			s->q[s->nq].v =
				eq ? s3d__decode(eq + 1, n - kn - 1, 1) :
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
			s->key = s3d__decode(path, n, 0);
		return n && !s->key ? s3d__fail(s, "InvalidURI", 400,
						"malformed path") :
				      0;
	}
	if (!n)
		return 0;
	slash = memchr(path, '/', n);
	bn = slash ? (size_t)(slash - path) : n;
	s->bucket = s3d__decode(path, bn, 0);
	if (slash && n - bn > 1)
		s->key = s3d__decode(slash + 1, n - bn - 1, 0);
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

		if (s->nh == ARRAY_SIZE(s->h))
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
	bucket = s3d__decode(uri + 1,
			     slash ? (size_t)(slash - uri - 1) : plen - 1, 0);
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

/* A non-negative integer argument, default def, at most cap. */
int s3d__int_arg(struct s3d *s, const char *name, long def, long cap, long *out)
{
	const char *v = s3d__query(s, name);
	char *end;

	*out = def;
	if (!v)
		return 0;
	*out = strtol(v, &end, 10);
	if (!*v || *end || *out < 0)
		return s3d__fail(s, "InvalidArgument", 400,
				 "%s must be a non-negative integer", name);
	if (*out > cap)
		*out = cap;
	return 0;
}

int s3d__request_read(struct s3d *s, const struct s3d_req *r)
{
	const char *uri = r->raw_uri ? r->raw_uri : "/";
	const char *q = strchr(uri, '?');

	if (copy_headers(s, r) ||
	    parse_path(s, r, uri, q ? (size_t)(q - uri) : strlen(uri)) ||
	    authenticate(s, r) || parse_query(s, q ? q + 1 : NULL))
		return -1;
	return 0;
}
