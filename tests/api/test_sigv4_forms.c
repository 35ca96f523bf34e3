/*
 * Tests for api/sigv4.c: Authorization headers malformed and odd but
 * valid, and the botocore vectors with rules of their own (a body hash
 * that does not match, UNSIGNED-PAYLOAD, the Date header, presigned URLs,
 * an unsigned Host, signing arguments, random damage). The data is
 * test_sigv4.c's (tests/api/sigv4/).
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

int main(void)
{
	static const struct CMUnitTest fixed[] = {
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
	};
	struct CMUnitTest *tests;
	size_t n = 0, i;
	int rc;

	tests = xcalloc(ARRAY_SIZE(fixed) + ARRAY_SIZE(authz_cases),
			sizeof(*tests));
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		tests[n++] = fixed[i];
	for (i = 0; i < ARRAY_SIZE(authz_cases); i++) {
		tests[n].name = authz_cases[i].name;
		tests[n].test_func = test_authz_case;
		tests[n].initial_state = (void *)&authz_cases[i];
		n++;
	}
	rc = _cmocka_run_group_tests("sigv4_forms", tests, n, group_setup,
				     group_teardown);
	free(tests);
	return rc;
}
