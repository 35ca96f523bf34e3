/*
 * Tests for api/sigv4.c and api/credentials.c.
 *
 * Data lives in tests/api/sigv4/ (or $SIGV4_TESTDATA), see its README.md:
 *   aws/<case>/<case>.{req,creq,sts,authz}  AWS's published SigV4 suite
 *   clients/botocore-<name>.sreq            requests signed by botocore
 *   clients/libcurl-<name>.sreq             requests signed by libcurl
 *   clients/credentials                     the keys they used
 * One cmocka test runs per vector, so the counts say what was checked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/sigv4.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/xalloc.h"

#define AWS_NOW_MS 1440938160000LL  /* 2015-08-30T12:36:00Z */
#define BOTO_NOW_MS 1738324800000LL /* 2025-01-31T12:00:00Z */
#define BOTO_DATE "20250131T120000Z"
#define MIN_MS 60000LL
#define MAX_HDRS 64
#define MAX_VECTORS 256

static const char AWS_CREDS[] =
	"[example]\n"
	"aws_access_key_id = AKIDEXAMPLE\n"
	"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n";
static const char AWS_SECRET[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/* The shared fixtures, loaded once by group_setup(). */
static struct api_credentials aws_creds;
static struct api_credentials boto_creds;
static char *create_text; /* clients/botocore-create-training-job.sreq */
static size_t create_len;

/* ---- files ---- */

static const char *data_root(void)
{
	const char *r = getenv("SIGV4_TESTDATA");

	return r && r[0] ? r : "tests/api/sigv4";
}

static char *data_path(const char *a, const char *b, const char *c)
{
	struct buf p = BUF_INIT;

	if (buf_addf(&p, "%s/%s%s%s", data_root(), a, b ? b : "", c ? c : ""))
		return NULL;
	return buf_detach(&p, NULL);
}

/* Reads a whole file; NULL when it cannot. The caller frees. */
static char *slurp(const char *path, size_t *len)
{
	struct buf b = BUF_INIT_MAX(1 << 20);
	char chunk[4096];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (buf_add(&b, chunk, n)) {
			fclose(f);
			buf_release(&b);
			return NULL;
		}
	}
	fclose(f);
	return buf_detach(&b, len);
}

/* ---- HTTP messages as in the .req / .sreq files ---- */

struct msg {
	char *text; /* our copy, cut into the pieces below */
	const char *method;
	const char *uri;
	struct api_header h[MAX_HDRS];
	size_t n;
	char *body;
	size_t body_len;
	char *owned[MAX_HDRS]; /* values set by the tests */
	size_t n_owned;
};

/*
 * "METHOD URI HTTP/1.1", "Name:value" lines, a blank line, the body. The
 * URI may hold spaces (AWS's get-space), so it runs to the last space.
 * A line starting with white space continues the previous header: it is
 * passed on as one more header of that name, which gives the comma-joined
 * value AWS's get-header-value-multiline expects.
 */
static int msg_parse(struct msg *m, const char *text, size_t len)
{
	char *p, *end, *line, *nl, *sp;
	int first = 1;

	memset(m, 0, sizeof(*m));
	m->text = xmalloc(len + 1);
	memcpy(m->text, text, len);
	m->text[len] = '\0';
	p = m->text;
	end = m->text + len;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		line = p;
		p = nl ? nl + 1 : end;
		if (nl) {
			*nl = '\0';
			if (nl > line && nl[-1] == '\r')
				nl[-1] = '\0';
		}
		if (first) {
			first = 0;
			sp = strchr(line, ' ');
			if (!sp)
				return -1;
			*sp = '\0';
			m->method = line;
			m->uri = sp + 1;
			sp = strrchr(sp + 1, ' ');
			if (!sp)
				return -1;
			*sp = '\0';
			continue;
		}
		if (line[0] == '\0') {
			m->body = p;
			m->body_len = (size_t)(end - p);
			return 0;
		}
		if (m->n == MAX_HDRS)
			return -1;
		if (line[0] == ' ' || line[0] == '\t') {
			if (m->n == 0)
				return -1;
			m->h[m->n].name = m->h[m->n - 1].name;
			m->h[m->n].value = line;
			m->n++;
			continue;
		}
		sp = strchr(line, ':');
		if (!sp)
			return -1;
		*sp = '\0';
		m->h[m->n].name = line;
		m->h[m->n].value = sp + 1;
		m->n++;
	}
	m->body = end;
	m->body_len = 0;
	return first ? -1 : 0;
}

static void msg_free(struct msg *m)
{
	size_t i;

	for (i = 0; i < m->n_owned; i++)
		free(m->owned[i]);
	free(m->text);
	memset(m, 0, sizeof(*m));
}

static const char *own(struct msg *m, const char *s)
{
	assert_true(m->n_owned < MAX_HDRS);
	m->owned[m->n_owned] = xstrdup(s);
	return m->owned[m->n_owned++];
}

static void msg_add(struct msg *m, const char *name, const char *value)
{
	assert_true(m->n < MAX_HDRS);
	m->h[m->n].name = own(m, name);
	m->h[m->n].value = own(m, value);
	m->n++;
}

static void msg_del(struct msg *m, const char *name)
{
	size_t i = 0;

	while (i < m->n) {
		if (strcasecmp(m->h[i].name, name) == 0) {
			memmove(&m->h[i], &m->h[i + 1],
				(m->n - i - 1) * sizeof(m->h[0]));
			m->n--;
		} else {
			i++;
		}
	}
}

/* Replaces the value of header name (which must exist). */
static void msg_set(struct msg *m, const char *name, const char *value)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (strcasecmp(m->h[i].name, name) == 0) {
			m->h[i].value = own(m, value);
			return;
		}
	}
	fail_msg("no header %s", name);
}

static const char *msg_get(const struct msg *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (strcasecmp(m->h[i].name, name) == 0) {
			const char *v = m->h[i].value;

			while (*v == ' ')
				v++;
			return v;
		}
	}
	return NULL;
}

static struct api_sigv4_request msg_req(const struct msg *m)
{
	struct api_sigv4_request r;

	r.method = m->method;
	r.raw_uri = m->uri;
	r.headers = m->h;
	r.n_headers = m->n;
	r.body = m->body;
	r.body_len = m->body_len;
	return r;
}

/* Copies the value after "key=" up to ',', '&', space or end. */
static int param_of(const char *s, const char *key, char *out, size_t cap)
{
	size_t kl = strlen(key), n = 0;
	const char *p = s;

	while ((p = strstr(p, key)) != NULL) {
		if ((p == s || strchr(" ,&?", p[-1])) && p[kl] == '=')
			break;
		p += kl;
	}
	if (!p)
		return -1;
	p += kl + 1;
	while (p[n] && !strchr(", &", p[n]))
		n++;
	if (n >= cap)
		return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

struct outcome {
	int rc;
	const char *type;
	int status;
	char msg[512];
};

static struct outcome run_verify(const struct msg *m,
				 const struct api_credentials *c,
				 const char *service, int64_t now)
{
	struct api_sigv4_request r = msg_req(m);
	struct buf err = BUF_INIT_MAX(4096);
	struct outcome o;

	o.type = "unset";
	o.status = -1;
	o.rc = api_sigv4_verify(&r, c, service, now, &o.type, &o.status, &err);
	snprintf(o.msg, sizeof(o.msg), "%s", err.data);
	buf_release(&err);
	return o;
}

static void expect_ok(const struct outcome *o)
{
	if (o->rc != 0)
		print_message("# verify: %s %d %s\n", o->type ? o->type : "-",
			      o->status, o->msg);
	assert_int_equal(o->rc, 0);
	assert_null(o->type);
}

static void expect_fail(const struct outcome *o, const char *type, int status)
{
	assert_int_equal(o->rc, ERR_AUTH);
	assert_non_null(o->type);
	assert_string_equal(o->type, type);
	assert_int_equal(o->status, status);
	assert_true(o->msg[0] != '\0');
}

/* ---- 1. AWS's published suite ---- */

struct vector {
	char name[128];
	char *path;  /* the .req / .sreq file */
	char *authz; /* AWS only: the .authz file */
};

static struct vector aws_vectors[MAX_VECTORS];
static size_t n_aws;
static struct vector boto_vectors[MAX_VECTORS];
static size_t n_boto;

static void test_aws_vector(void **state)
{
	const struct vector *v = *state;
	char *req_text, *authz, sh[512], sig[128], hex[65];
	size_t len, alen;
	struct msg m;
	struct api_sigv4_request r;
	struct buf err = BUF_INIT;
	struct outcome o;

	req_text = slurp(v->path, &len);
	assert_non_null(req_text);
	authz = slurp(v->authz, &alen);
	assert_non_null(authz);
	while (alen && (authz[alen - 1] == '\n' || authz[alen - 1] == '\r'))
		authz[--alen] = '\0';
	assert_int_equal(msg_parse(&m, req_text, len), 0);
	assert_int_equal(param_of(authz, "SignedHeaders", sh, sizeof(sh)), 0);
	assert_int_equal(param_of(authz, "Signature", sig, sizeof(sig)), 0);

	r = msg_req(&m);
	assert_int_equal(api_sigv4_sign(&r, AWS_SECRET, "20150830T123600Z",
					"us-east-1", "service", sh, NULL, hex,
					&err),
			 0);
	assert_string_equal(hex, sig);

	msg_add(&m, "Authorization", authz);
	o = run_verify(&m, &aws_creds, "service", AWS_NOW_MS);
	expect_ok(&o);

	buf_release(&err);
	msg_free(&m);
	free(authz);
	free(req_text);
}

/* ---- 2. requests signed by the real clients ---- */

/*
 * The time a vector was signed: its X-Amz-Date (header or query), else the
 * frozen botocore clock (the Date-header vector). libcurl vectors carry the
 * time they were made, so "now" comes from the request.
 */
static void vector_time(const struct msg *m, char amz[17], int64_t *ms)
{
	const char *h = msg_get(m, "X-Amz-Date");
	struct tm tm;

	if (h)
		snprintf(amz, 17, "%s", h);
	else if (param_of(m->uri, "X-Amz-Date", amz, 17))
		snprintf(amz, 17, "%s", BOTO_DATE);
	memset(&tm, 0, sizeof(tm));
	assert_int_equal(sscanf(amz, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year,
				&tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
				&tm.tm_min, &tm.tm_sec),
			 6);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*ms = (int64_t)timegm(&tm) * 1000;
}

/* The secret of the key named in the Credential (header or query). */
static const char *vector_secret(const char *credential)
{
	size_t i, n = strcspn(credential, "/%");

	for (i = 0; i < boto_creds.n; i++)
		if (strlen(boto_creds.items[i].access_key_id) == n &&
		    !strncmp(boto_creds.items[i].access_key_id, credential, n))
			return boto_creds.items[i].secret_access_key;
	fail_msg("no secret for %s", credential);
	return NULL;
}

static void test_boto_vector(void **state)
{
	const struct vector *v = *state;
	char *text, cred[256], sh[512], sig[128], hex[65], amz[17];
	const char *authz, *src;
	size_t len;
	int64_t now;
	struct msg m;
	struct api_sigv4_request r;
	struct buf err = BUF_INIT;
	struct outcome o;

	text = slurp(v->path, &len);
	assert_non_null(text);
	assert_int_equal(msg_parse(&m, text, len), 0);
	vector_time(&m, amz, &now);

	o = run_verify(&m, &boto_creds, "sagemaker", now);
	expect_ok(&o);

	/* And our signer agrees with the client's. */
	authz = msg_get(&m, "Authorization");
	src = authz ? authz : m.uri;
	assert_int_equal(param_of(src,
				  authz ? "Credential" : "X-Amz-Credential",
				  cred, sizeof(cred)),
			 0);
	assert_int_equal(
		param_of(src, authz ? "SignedHeaders" : "X-Amz-SignedHeaders",
			 sh, sizeof(sh)),
		0);
	assert_int_equal(param_of(src, authz ? "Signature" : "X-Amz-Signature",
				  sig, sizeof(sig)),
			 0);
	r = msg_req(&m);
	assert_int_equal(api_sigv4_sign(&r, vector_secret(cred), amz,
					"us-west-2", "sagemaker", sh, NULL, hex,
					&err),
			 0);
	assert_string_equal(hex, sig);

	buf_release(&err);
	msg_free(&m);
	free(text);
}

static void load_create(struct msg *m)
{
	assert_non_null(create_text);
	assert_int_equal(msg_parse(m, create_text, create_len), 0);
}

static struct msg load_boto(const char *name)
{
	struct msg m;
	char *path = data_path("clients/botocore-", name, ".sreq");
	size_t len;
	char *text = slurp(path, &len);

	free(path);
	assert_non_null(text);
	assert_int_equal(msg_parse(&m, text, len), 0);
	free(text);
	return m;
}

static void test_vector_counts(void **state)
{
	(void)state;
	/* A missing data folder must fail, not pass with nothing checked. */
	print_message("# %zu AWS and %zu client vectors in %s\n", n_aws, n_boto,
		      data_root());
	assert_true(n_aws >= 25);
	assert_true(n_boto >= 10);
}

/* ---- rejections, on botocore's CreateTrainingJob request ---- */

static void test_tampered_body(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	assert_true(m.body_len > 20);
	m.body[m.body_len / 2] ^= 0x01;
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	assert_non_null(strstr(o.msg, "does not match the signature"));
	m.body[m.body_len / 2] ^= 0x01;
	m.body_len--; /* truncated */
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	msg_free(&m);
}

static void test_tampered_signed_header(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	msg_set(&m, "X-Amz-Target", "SageMaker.DeleteTrainingJob");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	msg_free(&m);
}

static void test_injected_signed_header(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	/* A second X-Amz-Target joins the first: "a,b" is not what was signed
	 */
	msg_add(&m, "x-amz-target", "SageMaker.DeleteTrainingJob");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	msg_free(&m);
}

static void test_signed_header_removed(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	msg_del(&m, "Content-Type");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	msg_free(&m);
}

static void test_tampered_method_and_uri(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	m.method = "PUT";
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	m.method = "POST";
	m.uri = "/?x=1";
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	msg_free(&m);
}

static void test_unsigned_header_changes_ok(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	msg_set(&m, "User-Agent", "something else");
	msg_add(&m, "X-Forwarded-For", "10.0.0.1");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_ok(&o);
	/* Header names are case-insensitive, values are trimmed. */
	msg_set(&m, "X-Amz-Target", "  SageMaker.CreateTrainingJob\t ");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_ok(&o);
	msg_free(&m);
}

/* A header that changes what the request does must be signed. */
static void test_unsigned_amz_header_refused(void **state)
{
	static const char *const names[] = { "x-amz-copy-source",
					     "X-Amz-Meta-Evil", "x-amz-acl",
					     "Content-MD5" };
	struct msg m;
	struct outcome o;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		load_create(&m);
		msg_add(&m, names[i], "1");
		o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
		expect_fail(&o, "AccessDeniedException", 403);
		assert_non_null(strstr(o.msg, names[i]));
		msg_free(&m);
	}
	/* x-amzn-* is no x-amz-* header. */
	load_create(&m);
	msg_add(&m, "X-Amzn-Trace-Id", "Root=1");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_ok(&o);
	msg_free(&m);
}

static void test_wrong_secret(void **state)
{
	struct api_credentials c;
	struct buf err = BUF_INIT;
	struct msg m;
	struct outcome o;

	(void)state;
	assert_int_equal(api_credentials_parse(
				 "[default]\n"
				 "aws_access_key_id = AKIDTRAINCTLTEST0001\n"
				 "aws_secret_access_key = not-the-secret\n",
				 &c, &err),
			 0);
	load_create(&m);
	o = run_verify(&m, &c, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	assert_string_equal(o.msg,
			    "The request signature we calculated does not "
			    "match the signature you provided. Check your AWS "
			    "Secret Access Key and signing method.");
	msg_free(&m);
	api_credentials_release(&c);
	buf_release(&err);
}

static void test_unknown_key(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	o = run_verify(&m, &aws_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "InvalidClientTokenId", 403);
	assert_string_equal(o.msg, "The security token included in the "
				   "request is invalid.");
	o = run_verify(&m, NULL, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "InvalidClientTokenId", 403);
	msg_free(&m);
}

static void test_skew_16min_past(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS + 16 * MIN_MS);
	expect_fail(&o, "InvalidSignatureException", 400);
	assert_string_equal(o.msg, "Signature expired: 20250131T120000Z is "
				   "now earlier than 20250131T120100Z "
				   "(20250131T121600Z - 15 min.)");
	msg_free(&m);
}

static void test_skew_16min_future(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS - 16 * MIN_MS);
	expect_fail(&o, "InvalidSignatureException", 400);
	assert_non_null(strstr(o.msg, "Signature not yet current"));
	msg_free(&m);
}

static void test_skew_15min_ok(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS + 15 * MIN_MS);
	expect_ok(&o);
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS - 15 * MIN_MS);
	expect_ok(&o);
	o = run_verify(&m, &boto_creds, "sagemaker",
		       BOTO_NOW_MS + 15 * MIN_MS + 1000);
	expect_fail(&o, "InvalidSignatureException", 400);
	msg_free(&m);
}

static void test_missing_authorization(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	msg_del(&m, "Authorization");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "MissingAuthenticationToken", 403);
	assert_string_equal(o.msg, "Request is missing Authentication Token");
	msg_free(&m);
}

static void test_two_authorizations(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	msg_add(&m, "authorization", msg_get(&m, "Authorization"));
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "IncompleteSignature", 400);
	msg_free(&m);
}

static void test_missing_date(void **state)
{
	struct msg m;
	struct outcome o;

	(void)state;
	load_create(&m);
	msg_del(&m, "X-Amz-Date");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "IncompleteSignature", 400);
	msg_free(&m);
}

/* Rewrites the Credential's scope of the create request. */
static void set_credential(struct msg *m, const char *cred)
{
	char sh[512], sig[128], v[1024];

	assert_int_equal(param_of(msg_get(m, "Authorization"), "SignedHeaders",
				  sh, sizeof(sh)),
			 0);
	assert_int_equal(param_of(msg_get(m, "Authorization"), "Signature", sig,
				  sizeof(sig)),
			 0);
	snprintf(v, sizeof(v),
		 "AWS4-HMAC-SHA256 Credential=%s, SignedHeaders=%s, "
		 "Signature=%s",
		 cred, sh, sig);
	msg_set(m, "Authorization", v);
}

/* A Credential scope that disagrees with the request or the service. */
struct scope_case {
	const char *name;
	const char *credential;
	const char *want; /* part of the message */
};

static const struct scope_case scope_cases[] = {
	{ "scope_date_mismatch",
	  "AKIDTRAINCTLTEST0001/20250130/us-west-2/sagemaker/aws4_request",
	  "Date in Credential scope does not match YYYYMMDD from ISO-8601 "
	  "version of date from HTTP: '20250130' != '20250131', from "
	  "'20250131T120000Z'." },
	{ "scope_wrong_service",
	  "AKIDTRAINCTLTEST0001/20250131/us-west-2/s3/aws4_request",
	  "Credential should be scoped to correct service: 'sagemaker'." },
	{ "scope_wrong_terminator",
	  "AKIDTRAINCTLTEST0001/20250131/us-west-2/sagemaker/aws4_reques",
	  "valid terminator" },
	/* Any region is accepted, but it is part of the key. */
	{ "scope_other_region",
	  "AKIDTRAINCTLTEST0001/20250131/eu-west-1/sagemaker/aws4_request",
	  "does not match the signature you provided" },
};

static void test_scope_case(void **state)
{
	const struct scope_case *c = *state;
	struct msg m;
	struct outcome o;

	load_create(&m);
	set_credential(&m, c->credential);
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	if (!strstr(o.msg, c->want))
		print_message("# got '%s'\n", o.msg);
	assert_non_null(strstr(o.msg, c->want));
	msg_free(&m);
}

/* The right signature in the wrong form, and other wrong ones. */
static void test_bad_signature_forms(void **state)
{
	char sh[512], good[128], bad[8][130], v[2048];
	struct msg m;
	struct outcome o;
	size_t i, n = 0;

	(void)state;
	load_create(&m);
	assert_int_equal(param_of(msg_get(&m, "Authorization"), "SignedHeaders",
				  sh, sizeof(sh)),
			 0);
	assert_int_equal(param_of(msg_get(&m, "Authorization"), "Signature",
				  good, sizeof(good)),
			 0);
	for (i = 0; good[i]; i++) /* upper case */
		bad[n][i] = (char)(good[i] >= 'a' && good[i] <= 'f' ?
					   good[i] - 32 :
					   good[i]);
	bad[n++][i] = '\0';
	snprintf(bad[n++], sizeof(bad[0]), "%.63s", good);  /* one short */
	snprintf(bad[n++], sizeof(bad[0]), "%s0", good);    /* one more */
	snprintf(bad[n++], sizeof(bad[0]), "%.63sg", good); /* not hex */
	snprintf(bad[n++], sizeof(bad[0]), "%s", "0");
	for (i = 0; i < n; i++) {
		snprintf(v, sizeof(v),
			 "AWS4-HMAC-SHA256 Credential=AKIDTRAINCTLTEST0001/"
			 "20250131/us-west-2/sagemaker/aws4_request, "
			 "SignedHeaders=%s, Signature=%s",
			 sh, bad[i]);
		msg_set(&m, "Authorization", v);
		o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
		expect_fail(&o, "SignatureDoesNotMatch", 403);
	}
	msg_free(&m);
}

/* ---- Authorization headers: malformed ones, and odd but valid ones ---- */

struct authz_case {
	const char *name;
	const char *fmt; /* %1$s credential, %2$s signed headers, %3$s sig */
	int ok;
};

static const struct authz_case authz_cases[] = {
	{ "authz_empty", "", 0 },
	{ "authz_only_algorithm", "AWS4-HMAC-SHA256", 0 },
	{ "authz_only_algorithm_space", "AWS4-HMAC-SHA256   ", 0 },
	{ "authz_bearer", "Bearer abcdef", 0 },
	{ "authz_sigv2", "AWS AKIDTRAINCTLTEST0001:c2lnbmF0dXJl", 0 },
	{ "authz_other_algorithm",
	  "AWS4-HMAC-SHA512 Credential=%1$s, SignedHeaders=%2$s, "
	  "Signature=%3$s",
	  0 },
	{ "authz_no_space_after_algorithm",
	  "AWS4-HMAC-SHA256Credential=%1$s, SignedHeaders=%2$s, "
	  "Signature=%3$s",
	  0 },
	{ "authz_no_signature",
	  "AWS4-HMAC-SHA256 Credential=%1$s, "
	  "SignedHeaders=%2$s",
	  0 },
	{ "authz_no_credential",
	  "AWS4-HMAC-SHA256 SignedHeaders=%2$s, Signature=%3$s", 0 },
	{ "authz_no_signed_headers",
	  "AWS4-HMAC-SHA256 Credential=%1$s, Signature=%3$s", 0 },
	{ "authz_empty_signature",
	  "AWS4-HMAC-SHA256 Credential=%1$s, SignedHeaders=%2$s, Signature=",
	  0 },
	{ "authz_duplicate_signature",
	  "AWS4-HMAC-SHA256 Credential=%1$s, SignedHeaders=%2$s, "
	  "Signature=%3$s, Signature=%3$s",
	  0 },
	{ "authz_key_without_value",
	  "AWS4-HMAC-SHA256 Credential=%1$s, SignedHeaders, Signature=%3$s",
	  0 },
	{ "authz_lower_case_keys",
	  "AWS4-HMAC-SHA256 credential=%1$s, signedheaders=%2$s, "
	  "signature=%3$s",
	  0 },
	{ "authz_credential_four_parts",
	  "AWS4-HMAC-SHA256 Credential=AKIDTRAINCTLTEST0001/20250131/"
	  "us-west-2/sagemaker, SignedHeaders=%2$s, Signature=%3$s",
	  0 },
	{ "authz_credential_six_parts",
	  "AWS4-HMAC-SHA256 Credential=%1$s/x, SignedHeaders=%2$s, "
	  "Signature=%3$s",
	  0 },
	{ "authz_credential_bad_date",
	  "AWS4-HMAC-SHA256 Credential=AKIDTRAINCTLTEST0001/2025013x/"
	  "us-west-2/sagemaker/aws4_request, SignedHeaders=%2$s, "
	  "Signature=%3$s",
	  0 },
	{ "authz_credential_empty_key",
	  "AWS4-HMAC-SHA256 Credential=/20250131/us-west-2/sagemaker/"
	  "aws4_request, SignedHeaders=%2$s, Signature=%3$s",
	  0 },
	{ "authz_signed_headers_unsorted",
	  "AWS4-HMAC-SHA256 Credential=%1$s, SignedHeaders=host;content-type;"
	  "x-amz-date;x-amz-target, Signature=%3$s",
	  0 },
	{ "authz_signed_headers_upper_case",
	  "AWS4-HMAC-SHA256 Credential=%1$s, SignedHeaders=Content-Type;Host;"
	  "X-Amz-Date;X-Amz-Target, Signature=%3$s",
	  0 },
	{ "authz_signed_headers_empty_name",
	  "AWS4-HMAC-SHA256 Credential=%1$s, SignedHeaders=content-type;;host;"
	  "x-amz-date;x-amz-target, Signature=%3$s",
	  0 },
	{ "authz_signed_headers_duplicate",
	  "AWS4-HMAC-SHA256 Credential=%1$s, SignedHeaders=content-type;host;"
	  "host;x-amz-date;x-amz-target, Signature=%3$s",
	  0 },
	{ "authz_host_not_signed",
	  "AWS4-HMAC-SHA256 Credential=%1$s, SignedHeaders=content-type;"
	  "x-amz-date;x-amz-target, Signature=%3$s",
	  0 },
	{ "authz_binary_junk", "AWS4-HMAC-SHA256 \x01\x02\xff\xfe=\x80", 0 },
	{ "authz_only_commas", "AWS4-HMAC-SHA256 ,,,,, , ,", 0 },
	/* Spacing and order are free. */
	{ "authz_reordered",
	  "AWS4-HMAC-SHA256 Signature=%3$s, SignedHeaders=%2$s, "
	  "Credential=%1$s",
	  1 },
	{ "authz_no_spaces",
	  "AWS4-HMAC-SHA256 Credential=%1$s,SignedHeaders=%2$s,Signature=%3$s",
	  1 },
	{ "authz_extra_white_space",
	  "  AWS4-HMAC-SHA256 \t Credential=%1$s ,  SignedHeaders=%2$s\t,"
	  "Signature=%3$s , ",
	  1 },
	{ "authz_unknown_parameter",
	  "AWS4-HMAC-SHA256 Credential=%1$s, SignedHeaders=%2$s, "
	  "Signature=%3$s, Foo=bar",
	  1 },
};

static void test_authz_case(void **state)
{
	const struct authz_case *c = *state;
	char cred[256], sh[512], sig[128], v[1024];
	struct msg m;
	struct outcome o;
	const char *orig;

	load_create(&m);
	orig = msg_get(&m, "Authorization");
	assert_int_equal(param_of(orig, "Credential", cred, sizeof(cred)), 0);
	assert_int_equal(param_of(orig, "SignedHeaders", sh, sizeof(sh)), 0);
	assert_int_equal(param_of(orig, "Signature", sig, sizeof(sig)), 0);
	/* Positional %n$s arguments are POSIX printf, which glibc has. */
	snprintf(v, sizeof(v), c->fmt, cred, sh, sig);
	msg_set(&m, "Authorization", v);
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	if (c->ok)
		expect_ok(&o);
	else
		expect_fail(&o, "IncompleteSignature", 400);
	msg_free(&m);
}

static void test_authz_too_long(void **state)
{
	struct buf v = BUF_INIT;
	struct msg m;
	struct outcome o;
	int i;

	(void)state;
	load_create(&m);
	assert_int_equal(buf_adds(&v, msg_get(&m, "Authorization")), 0);
	assert_int_equal(buf_adds(&v, ", Padding="), 0);
	for (i = 0; i < 5000; i++)
		assert_int_equal(buf_addch(&v, 'a'), 0);
	msg_set(&m, "Authorization", v.data);
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "IncompleteSignature", 400);
	buf_release(&v);
	msg_free(&m);
}

/* ---- botocore vectors with special rules ---- */

static void test_content_sha256_mismatch(void **state)
{
	struct msg m = load_boto("content-sha256");
	struct outcome o;

	(void)state;
	m.body[0] ^= 0x01;
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	assert_non_null(strstr(o.msg, "x-amz-content-sha256"));
	msg_free(&m);
}

static void test_content_sha256_not_a_hash(void **state)
{
	struct msg m = load_boto("content-sha256");
	struct outcome o;

	(void)state;
	msg_set(&m, "X-Amz-Content-SHA256",
		"STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "IncompleteSignature", 400);
	msg_free(&m);
}

static void test_unsigned_payload_body_free(void **state)
{
	struct msg m = load_boto("unsigned-payload");
	struct outcome o;

	(void)state;
	/* UNSIGNED-PAYLOAD is the client's choice not to sign the body. */
	m.body[0] ^= 0x01;
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_ok(&o);
	/* But the header itself is signed: dropping it breaks the signature */
	msg_del(&m, "X-Amz-Content-SHA256");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	msg_free(&m);
}

static void test_date_header_skew(void **state)
{
	struct msg m = load_boto("date-header");
	struct outcome o;

	(void)state;
	assert_null(msg_get(&m, "X-Amz-Date"));
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS + 16 * MIN_MS);
	expect_fail(&o, "InvalidSignatureException", 400);
	msg_set(&m, "Date", "Fri, 31 Jan 2025 12:00:01 GMT");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	msg_set(&m, "Date", "Friday, 31-Jan-25 12:00:00 GMT");
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "IncompleteSignature", 400);
	msg_free(&m);
}

static void test_presigned_expired(void **state)
{
	struct msg m = load_boto("presigned");
	struct outcome o;

	(void)state;
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS + 300000);
	expect_ok(&o);
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS + 301000);
	expect_fail(&o, "InvalidSignatureException", 400);
	msg_free(&m);
}

static void test_presigned_tampered(void **state)
{
	struct msg m = load_boto("presigned");
	struct buf uri = BUF_INIT;
	const char *p;
	struct outcome o;

	(void)state;
	p = strstr(m.uri, "Name=mnist-3");
	assert_non_null(p);
	assert_int_equal(buf_add(&uri, m.uri, (size_t)(p - m.uri)), 0);
	assert_int_equal(buf_adds(&uri, "Name=mnist-4"), 0);
	assert_int_equal(buf_adds(&uri, p + strlen("Name=mnist-3")), 0);
	m.uri = uri.data;
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "SignatureDoesNotMatch", 403);
	/* The same URL without its signature. */
	p = strstr(m.uri, "&X-Amz-Signature=");
	assert_non_null(p);
	uri.len = (size_t)(p - uri.data);
	uri.data[uri.len] = '\0';
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "IncompleteSignature", 400);
	buf_release(&uri);
	msg_free(&m);
}

static void test_host_not_signed_but_valid(void **state)
{
	struct msg m;
	struct api_sigv4_request r;
	struct buf err = BUF_INIT;
	char hex[65], v[512];
	struct outcome o;

	(void)state;
	/* A correct signature that leaves Host out is still refused. */
	load_create(&m);
	r = msg_req(&m);
	assert_int_equal(api_sigv4_sign(&r,
					"trainctl/Secret+Key/"
					"EXAMPLE0123456789abcd",
					BOTO_DATE, "us-west-2", "sagemaker",
					"content-type;x-amz-date;x-amz-target",
					NULL, hex, &err),
			 0);
	snprintf(v, sizeof(v),
		 "AWS4-HMAC-SHA256 Credential=AKIDTRAINCTLTEST0001/20250131/"
		 "us-west-2/sagemaker/aws4_request, SignedHeaders=content-type;"
		 "x-amz-date;x-amz-target, Signature=%s",
		 hex);
	msg_set(&m, "Authorization", v);
	o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
	expect_fail(&o, "IncompleteSignature", 400);
	assert_non_null(strstr(o.msg, "'Host'"));
	buf_release(&err);
	msg_free(&m);
}

static void test_sign_bad_arguments(void **state)
{
	struct msg m;
	struct api_sigv4_request r;
	struct buf err = BUF_INIT;
	char hex[65];

	(void)state;
	load_create(&m);
	r = msg_req(&m);
	assert_int_equal(api_sigv4_sign(&r, "s", "2025-01-31T12:00:00Z",
					"us-west-2", "sagemaker", "host", NULL,
					hex, &err),
			 ERR_INVALID);
	assert_int_equal(api_sigv4_sign(&r, "s", BOTO_DATE, "us-west-2",
					"sagemaker", "x-amz-date;host", NULL,
					hex, &err),
			 ERR_INVALID);
	assert_int_equal(api_sigv4_sign(&r, "s", BOTO_DATE, "us-west-2",
					"sagemaker", "host;x-missing", NULL,
					hex, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "x-missing"));
	assert_int_equal(api_sigv4_sign(&r, "s", BOTO_DATE, "", "sagemaker",
					"host", NULL, hex, &err),
			 ERR_INVALID);
	assert_int_equal(api_sigv4_sign(&r, "s", BOTO_DATE, "us-west-2",
					"sagemaker", "host",
					"e3b0c44298fc1c149afbf4c8996fb92427ae4"
					"1e4649b934ca495991b7852b855",
					hex, &err),
			 0);
	assert_int_equal(strlen(hex), 64);
	buf_release(&err);
	msg_free(&m);
}

/*
 * Hostile input: random damage to a valid request (Authorization, URI,
 * dates, header names) must give a clean answer every time. Run under
 * ASan/UBSan by `make check`.
 */
static void test_random_damage(void **state)
{
	static const char *const hdrs[] = { "Authorization", "X-Amz-Date",
					    "X-Amz-Target", "Content-Type",
					    "host" };
	uint32_t seed = 12345;
	struct buf v = BUF_INIT, tail = BUF_INIT;
	int i, j, accepted = 0;

	(void)state;
	for (i = 0; i < 20000; i++) {
		struct msg m;
		struct outcome o;
		const char *h;
		int k, edits;

		load_create(&m);
		seed = seed * 1103515245u + 12345u;
		h = hdrs[(seed >> 16) % 5];
		buf_reset(&v);
		if ((seed >> 8) % 7 == 0)
			assert_int_equal(buf_adds(&v, m.uri), 0);
		else
			assert_int_equal(buf_adds(&v, msg_get(&m, h)), 0);
		seed = seed * 1103515245u + 12345u;
		edits = 1 + (int)((seed >> 16) % 4);
		for (k = 0; k < edits; k++) {
			size_t pos;

			seed = seed * 1103515245u + 12345u;
			pos = v.len ? (seed >> 8) % v.len : 0;
			seed = seed * 1103515245u + 12345u;
			switch ((seed >> 16) % 4) {
			case 0: /* replace a byte */
				if (v.len)
					v.data[pos] = (char)(1 + (seed & 0xfe));
				break;
			case 1: /* cut */
				v.len = pos;
				v.data[pos] = '\0';
				break;
			case 2: /* insert a separator */
				if (v.len)
					v.data[pos] =
						",;=/ %&?."[seed % 10 % 9];
				break;
			default: /* repeat a tail */
				buf_reset(&tail);
				assert_int_equal(buf_adds(&tail, v.data + pos),
						 0);
				for (j = 0; j < 3; j++)
					assert_int_equal(
						buf_adds(&v, tail.data), 0);
				break;
			}
		}
		if ((seed >> 4) % 7 == 0)
			m.uri = v.data;
		else
			msg_set(&m, h, v.data);
		o = run_verify(&m, &boto_creds, "sagemaker", BOTO_NOW_MS);
		if (o.rc == 0) {
			accepted++;
		} else {
			assert_int_equal(o.rc, ERR_AUTH);
			assert_non_null(o.type);
			assert_true(o.status == 400 || o.status == 403);
		}
		msg_free(&m);
	}
	buf_release(&v);
	buf_release(&tail);
	/* Some edits leave the request valid (e.g. a cut of trailing spaces),
	 * but hardly any. */
	assert_true(accepted < 2000);
}

/* ---- credentials ---- */

static void test_credentials_two_profiles(void **state)
{
	struct api_credentials c;
	struct buf err = BUF_INIT;
	struct buf text = BUF_INIT;
	int i;

	(void)state;
	assert_int_equal(buf_adds(&text, "# AWS shared credentials\n"
					 "\n"
					 "; another comment\n"
					 "[default]\n"
					 "aws_access_key_id = AKIDONE\n"
					 "   \n"
					 "aws_secret_access_key=secret/one+x\n"
					 "region = us-west-2\n"
					 "aws_session_token = "),
			 0);
	/* Longer than libinih's line buffer: ignored, and lines still count. */
	for (i = 0; i < 1000; i++)
		assert_int_equal(buf_addch(&text, 'T'), 0);
	assert_int_equal(buf_adds(&text,
				  "\n"
				  "\n"
				  "[ci]\r\n"
				  "AWS_ACCESS_KEY_ID: AKIDTWO\r\n"
				  "aws_secret_access_key = s2 ; note\r\n"),
			 0);
	assert_int_equal(api_credentials_parse(text.data, &c, &err), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.items[0].profile, "default");
	assert_string_equal(c.items[0].access_key_id, "AKIDONE");
	assert_string_equal(c.items[0].secret_access_key, "secret/one+x");
	assert_string_equal(c.items[1].profile, "ci");
	assert_string_equal(c.items[1].access_key_id, "AKIDTWO");
	assert_string_equal(c.items[1].secret_access_key, "s2");
	assert_string_equal(err.data, "");
	api_credentials_release(&c);
	assert_int_equal(c.n, 0);
	assert_null(c.items);
	api_credentials_release(&c); /* twice is harmless */
	/* No text is an error; no err buffer is allowed. */
	assert_int_equal(api_credentials_parse(NULL, &c, &err), ERR_INVALID);
	assert_int_equal(api_credentials_parse("[a]\naws_access_key_id = A\n"
					       "aws_secret_access_key = s\n",
					       &c, NULL),
			 0);
	api_credentials_release(&c);
	buf_release(&text);
	buf_release(&err);
}

/* trainctl_user / trainctl_role: users, roles and their defaults. */
static void test_credentials_users(void **state)
{
	static const char *const bad[][2] = {
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_role = user\n",
		  "no trainctl_user" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_role = root\n",
		  "'admin' or 'user'" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_user = al/ice\n",
		  "not a valid Unix user name" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_user = x\ntrainctl_user = y\n",
		  "given twice" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_s3_prefixes = AB/x\n",
		  "is not bucket[/prefix]" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_user = x\n[b]\naws_access_key_id = A\n"
		  "aws_secret_access_key = s\ntrainctl_user = y\n",
		  "different users or roles" },
	};
	struct api_credentials c;
	struct buf err = BUF_INIT;
	size_t i;

	(void)state;
	assert_int_equal(
		api_credentials_parse(
			"[ops]\naws_access_key_id = A1\naws_secret_access_key = s\n"
			"[alice]\naws_access_key_id = A2\n"
			"aws_secret_access_key = s\ntrainctl_user = alice\n"
			"[lead]\naws_access_key_id = A3\n"
			"aws_secret_access_key = s\ntrainctl_user = bob\n"
			"trainctl_role = admin\n",
			&c, &err),
		0);
	assert_int_equal(c.n, 3);
	assert_null(c.items[0].user);
	assert_true(c.items[0].admin);
	assert_string_equal(c.items[1].user, "alice");
	assert_false(c.items[1].admin);
	assert_string_equal(c.items[2].user, "bob");
	assert_true(c.items[2].admin);
	assert_ptr_equal(api_credentials_find(&c, "A2"), &c.items[1]);
	assert_null(api_credentials_find(&c, "A4"));
	/* An admin reaches every key; a user without prefixes none. */
	assert_true(api_credential_s3_allowed(&c.items[0], "any/x"));
	assert_false(api_credential_s3_allowed(&c.items[1], "any/x"));
	api_credentials_release(&c);
	assert_int_equal(
		api_credentials_parse(
			"[u]\naws_access_key_id = A\naws_secret_access_key = s\n"
			"trainctl_user = u\n"
			"trainctl_s3_prefixes = s3://team-a, team-b/u/ ,team-c/x\n",
			&c, &err),
		0);
	assert_int_equal(c.items[0].n_s3_prefixes, 3);
	assert_string_equal(c.items[0].s3_prefixes[0], "team-a/");
	assert_string_equal(c.items[0].s3_prefixes[1], "team-b/u/");
	assert_string_equal(c.items[0].s3_prefixes[2], "team-c/x");
	assert_true(api_credential_s3_allowed(&c.items[0], "team-a/k"));
	assert_false(api_credential_s3_allowed(&c.items[0], "team-ab/k"));
	assert_true(api_credential_s3_allowed(&c.items[0], "team-b/u/k"));
	assert_false(api_credential_s3_allowed(&c.items[0], "team-b/v/k"));
	assert_true(api_credential_s3_allowed(&c.items[0], "team-c/xy"));
	api_credentials_release(&c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		assert_int_equal(api_credentials_parse(bad[i][0], &c, &err),
				 ERR_INVALID);
		if (!strstr(err.data, bad[i][1]))
			fail_msg("'%s': error '%s' lacks '%s'", bad[i][0],
				 err.data, bad[i][1]);
	}
	buf_release(&err);
}

struct cred_case {
	const char *name;
	const char *text;
	const char *want; /* substring of the error */
};

static const struct cred_case cred_cases[] = {
	{ "credentials_missing_secret",
	  "[default]\naws_access_key_id = A\naws_secret_access_key = s\n\n"
	  "[second]\naws_access_key_id = B\n",
	  "profile 'second' (line 6) has no aws_secret_access_key" },
	{ "credentials_missing_key_id",
	  "[default]\n# comment\naws_secret_access_key = s\n",
	  "profile 'default' (line 3) has no aws_access_key_id" },
	{ "credentials_outside_profile", "aws_access_key_id = A\n",
	  "line 1: 'aws_access_key_id' outside a [profile] section" },
	{ "credentials_syntax_error",
	  "[default]\naws_access_key_id = A\nthis is not ini\n"
	  "aws_secret_access_key = s\n",
	  "line 3:" },
	{ "credentials_bad_section", "[default\naws_access_key_id = A\n",
	  "line 1:" },
	{ "credentials_duplicate_key",
	  "[default]\naws_access_key_id = A\naws_access_key_id = B\n"
	  "aws_secret_access_key = s\n",
	  "line 3: 'aws_access_key_id' given twice in profile 'default'" },
	{ "credentials_duplicate_profile",
	  "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
	  "[b]\naws_access_key_id = B\naws_secret_access_key = s\n"
	  "[a]\nregion = x\naws_access_key_id = C\n",
	  "line 9: profile 'a' appears more than once" },
	{ "credentials_empty_value",
	  "[default]\naws_access_key_id =\naws_secret_access_key = s\n",
	  "line 2:" },
	{ "credentials_bad_key_chars",
	  "[default]\naws_access_key_id = A/B\naws_secret_access_key = s\n",
	  "line 2:" },
	{ "credentials_conflicting_secrets",
	  "[a]\naws_access_key_id = A\naws_secret_access_key = s1\n"
	  "[b]\naws_access_key_id = A\naws_secret_access_key = s2\n",
	  "profiles 'a' and 'b'" },
	{ "credentials_empty", "", "no profile" },
	{ "credentials_only_comments", "# nothing\n; here\n\n", "no profile" },
	{ "credentials_key_line_too_long",
	  "[default]\naws_access_key_id = "
	  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	  "\naws_secret_access_key = s\n",
	  "line 2: value of 'aws_access_key_id' in profile 'default' is too "
	  "long" },
};

static void test_cred_case(void **state)
{
	const struct cred_case *c = *state;
	struct api_credentials creds;
	struct buf err = BUF_INIT;

	assert_int_equal(api_credentials_parse(c->text, &creds, &err),
			 ERR_INVALID);
	assert_int_equal(creds.n, 0);
	assert_null(creds.items);
	if (!strstr(err.data, c->want))
		print_message("# got '%s'\n", err.data);
	assert_non_null(strstr(err.data, c->want));
	api_credentials_release(&creds);
	buf_release(&err);
}

/* ---- runner ---- */

static int vec_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vector *)a)->name,
		      ((const struct vector *)b)->name);
}

/* Lists aws/<case>/<case>.req and clients/<name>.sreq. */
static void find_vectors(void)
{
	char *dir = data_path("aws", NULL, NULL);
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d)) != NULL && n_aws < MAX_VECTORS) {
		struct vector *v = &aws_vectors[n_aws];
		char *p;
		FILE *f;

		if (e->d_name[0] == '.' || strlen(e->d_name) >= 60)
			continue;
		snprintf(v->name, sizeof(v->name), "%.60s/%.60s", e->d_name,
			 e->d_name);
		p = data_path("aws/", v->name, ".req");
		f = fopen(p, "rb");
		if (!f) {
			free(p);
			continue;
		}
		fclose(f);
		v->path = p;
		v->authz = data_path("aws/", v->name, ".authz");
		snprintf(v->name, sizeof(v->name), "%.60s", e->d_name);
		n_aws++;
	}
	if (d)
		closedir(d);
	free(dir);
	qsort(aws_vectors, n_aws, sizeof(aws_vectors[0]), vec_cmp);

	dir = data_path("clients", NULL, NULL);
	d = opendir(dir);
	while (d && (e = readdir(d)) != NULL && n_boto < MAX_VECTORS) {
		size_t l = strlen(e->d_name);
		struct vector *v = &boto_vectors[n_boto];

		if (l < 6 || l >= 100 || strcmp(e->d_name + l - 5, ".sreq"))
			continue;
		snprintf(v->name, sizeof(v->name), "%.*s", (int)(l - 5),
			 e->d_name);
		v->path = data_path("clients/", e->d_name, NULL);
		n_boto++;
	}
	if (d)
		closedir(d);
	free(dir);
	qsort(boto_vectors, n_boto, sizeof(boto_vectors[0]), vec_cmp);
}

static int group_setup(void **state)
{
	struct buf err = BUF_INIT;
	char *path, *text;
	size_t len;

	(void)state;
	if (api_credentials_parse(AWS_CREDS, &aws_creds, &err))
		return -1;
	path = data_path("clients/credentials", NULL, NULL);
	text = slurp(path, &len);
	free(path);
	if (!text || api_credentials_parse(text, &boto_creds, &err)) {
		print_message("# clients/credentials: %s\n",
			      text ? err.data : "cannot read");
		free(text);
		/* Tests that need it fail on their own. */
		buf_release(&err);
		return 0;
	}
	free(text);
	path = data_path("clients/botocore-create-training-job.sreq", NULL,
			 NULL);
	create_text = slurp(path, &create_len);
	free(path);
	buf_release(&err);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	api_credentials_release(&aws_creds);
	api_credentials_release(&boto_creds);
	free(create_text);
	return 0;
}

#define ADD(t, fn, st, nm)                           \
	do {                                         \
		(t)[n].name = (nm);                  \
		(t)[n].test_func = (fn);             \
		(t)[n].setup_func = NULL;            \
		(t)[n].teardown_func = NULL;         \
		(t)[n].initial_state = (void *)(st); \
		n++;                                 \
	} while (0)

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_vector_counts),
		cmocka_unit_test(test_tampered_body),
		cmocka_unit_test(test_tampered_signed_header),
		cmocka_unit_test(test_injected_signed_header),
		cmocka_unit_test(test_signed_header_removed),
		cmocka_unit_test(test_tampered_method_and_uri),
		cmocka_unit_test(test_unsigned_header_changes_ok),
		cmocka_unit_test(test_unsigned_amz_header_refused),
		cmocka_unit_test(test_wrong_secret),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_skew_16min_past),
		cmocka_unit_test(test_skew_16min_future),
		cmocka_unit_test(test_skew_15min_ok),
		cmocka_unit_test(test_missing_authorization),
		cmocka_unit_test(test_two_authorizations),
		cmocka_unit_test(test_missing_date),
		cmocka_unit_test(test_bad_signature_forms),
		cmocka_unit_test(test_authz_too_long),
		cmocka_unit_test(test_content_sha256_mismatch),
		cmocka_unit_test(test_content_sha256_not_a_hash),
		cmocka_unit_test(test_unsigned_payload_body_free),
		cmocka_unit_test(test_date_header_skew),
		cmocka_unit_test(test_presigned_expired),
		cmocka_unit_test(test_presigned_tampered),
		cmocka_unit_test(test_host_not_signed_but_valid),
		cmocka_unit_test(test_sign_bad_arguments),
		cmocka_unit_test(test_random_damage),
		cmocka_unit_test(test_credentials_two_profiles),
		cmocka_unit_test(test_credentials_users),
	};
	static char names[2 * MAX_VECTORS][160];
	struct CMUnitTest *tests;
	size_t n = 0, i, cap;
	int rc;

	find_vectors();
	cap = n_aws + n_boto + sizeof(fixed) / sizeof(fixed[0]) +
	      sizeof(authz_cases) / sizeof(authz_cases[0]) +
	      sizeof(cred_cases) / sizeof(cred_cases[0]) +
	      sizeof(scope_cases) / sizeof(scope_cases[0]);
	tests = xcalloc(cap, sizeof(*tests));
	for (i = 0; i < n_aws; i++) {
		snprintf(names[i], sizeof(names[i]), "aws/%.120s",
			 aws_vectors[i].name);
		ADD(tests, test_aws_vector, &aws_vectors[i], names[i]);
	}
	for (i = 0; i < n_boto; i++) {
		snprintf(names[MAX_VECTORS + i], sizeof(names[0]),
			 "clients/%.120s", boto_vectors[i].name);
		ADD(tests, test_boto_vector, &boto_vectors[i],
		    names[MAX_VECTORS + i]);
	}
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		tests[n++] = fixed[i];
	for (i = 0; i < sizeof(authz_cases) / sizeof(authz_cases[0]); i++)
		ADD(tests, test_authz_case, &authz_cases[i],
		    authz_cases[i].name);
	for (i = 0; i < sizeof(scope_cases) / sizeof(scope_cases[0]); i++)
		ADD(tests, test_scope_case, &scope_cases[i],
		    scope_cases[i].name);
	for (i = 0; i < sizeof(cred_cases) / sizeof(cred_cases[0]); i++)
		ADD(tests, test_cred_case, &cred_cases[i], cred_cases[i].name);
	rc = _cmocka_run_group_tests("sigv4", tests, n, group_setup,
				     group_teardown);
	free(tests);
	for (i = 0; i < n_aws; i++) {
		free(aws_vectors[i].path);
		free(aws_vectors[i].authz);
	}
	for (i = 0; i < n_boto; i++)
		free(boto_vectors[i].path);
	return rc;
}
