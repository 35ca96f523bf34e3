/*
 * Tests for api/sigv4.c: AWS's published suite, the requests real clients
 * signed, and the refusal of every tampered one (test_sigv4_forms.c has
 * the Authorization header forms and the vectors with rules of their own,
 * test_credentials.c the credentials file).
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
#include "tests/api/sigv4_fixture.h"
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
	};
	static char names[2 * MAX_VECTORS][160];
	struct CMUnitTest *tests;
	size_t n = 0, i, cap;
	int rc;

	find_vectors();
	cap = n_aws + n_boto + sizeof(fixed) / sizeof(fixed[0]) +
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
	for (i = 0; i < sizeof(scope_cases) / sizeof(scope_cases[0]); i++)
		ADD(tests, test_scope_case, &scope_cases[i],
		    scope_cases[i].name);
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
