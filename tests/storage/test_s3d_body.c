/*
 * Tests for S3's SigV4 rules (api_sigv4_verify_s3, api_sigv4_chunk_sign)
 * and the aws-chunked body decoder (storage/s3d/body.c), against the
 * example AWS publishes for signed streaming uploads ("Signature
 * Calculations for the Authorization Header: Transferring Payload in
 * Multiple Chunks"): a PUT of 66,560 bytes of 'a' sent as a chunk of
 * 65,536, one of 1,024 and the empty last chunk.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>
#include <openssl/evp.h>

#include "api/sigv4.h"
#include "storage/s3d/body.h"
#include "storage/storage.h"
#include "common/buf.h"
#include "common/xalloc.h"

#define EX_NOW_MS 1369353600000LL /* 2013-05-24T00:00:00Z */
#define SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define SIG1 "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG3 "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"

static const char CREDS[] =
	"[example]\n"
	"aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
	"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n";

static const struct api_header ex_headers[] = {
	{ "Host", "s3.amazonaws.com" },
	{ "x-amz-date", "20130524T000000Z" },
	{ "x-amz-storage-class", "REDUCED_REDUNDANCY" },
	{ "Authorization",
	  "AWS4-HMAC-SHA256 "
	  "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
	  "aws4_request,SignedHeaders=content-encoding;content-length;host;"
	  "x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;"
	  "x-amz-storage-class,Signature=" SEED },
	{ "x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" },
	{ "Content-Encoding", "aws-chunked" },
	{ "x-amz-decoded-content-length", "66560" },
	{ "Content-Length", "66824" },
};

#define N_EX (sizeof(ex_headers) / sizeof(ex_headers[0]))

struct hdrs {
	const struct api_header *h;
	size_t n;
};

static const char *lookup(void *ctx, const char *name)
{
	struct hdrs *h = ctx;
	size_t i;

	for (i = 0; i < h->n; i++)
		if (!strcasecmp(h->h[i].name, name))
			return h->h[i].value;
	return NULL;
}

static int verify_example(struct api_sigv4_s3 *out,
			  const struct api_header *headers, size_t n)
{
	struct api_credentials creds = { 0 };
	struct api_sigv4_request req = { 0 };
	struct buf err = BUF_INIT;
	int r;

	assert_int_equal(api_credentials_parse(CREDS, &creds, &err), 0);
	req.method = "PUT";
	req.raw_uri = "/examplebucket/chunkObject.txt";
	req.headers = headers;
	req.n_headers = n;
	req.body = "";
	r = api_sigv4_verify_s3(&req, &creds, EX_NOW_MS, out, NULL, NULL, &err,
				NULL);
	buf_release(&err);
	api_credentials_release(&creds);
	return r;
}

static void test_seed_signature(void **state)
{
	struct api_sigv4_s3 s3;

	(void)state;
	assert_int_equal(verify_example(&s3, ex_headers, N_EX), 0);
	assert_string_equal(s3.seed, SEED);
	assert_string_equal(s3.payload, API_SIGV4_STREAMING);
	assert_string_equal(s3.scope, "20130524/us-east-1/s3/aws4_request");
	assert_string_equal(s3.amz_date, "20130524T000000Z");
}

static void test_seed_needs_content_sha256(void **state)
{
	struct api_header h[N_EX];
	struct api_sigv4_s3 s3;
	size_t i, n = 0;

	(void)state;
	for (i = 0; i < N_EX; i++)
		if (strcmp(ex_headers[i].name, "x-amz-content-sha256"))
			h[n++] = ex_headers[i];
	assert_int_not_equal(verify_example(&s3, h, n), 0);
}

static void test_chunk_signatures(void **state)
{
	struct api_sigv4_s3 s3;
	unsigned char d[32];
	char *a = xmalloc(65536);
	char hex[65], sig[65];
	size_t i;

	(void)state;
	assert_int_equal(verify_example(&s3, ex_headers, N_EX), 0);
	memset(a, 'a', 65536);
	EVP_Digest(a, 65536, d, NULL, EVP_sha256(), NULL);
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	assert_int_equal(api_sigv4_chunk_sign(&s3, 0, SEED, hex, sig), 0);
	assert_string_equal(sig, SIG1);
	EVP_Digest(a, 1024, d, NULL, EVP_sha256(), NULL);
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	assert_int_equal(api_sigv4_chunk_sign(&s3, 0, SIG1, hex, sig), 0);
	assert_string_equal(sig, SIG2);
	assert_int_equal(api_sigv4_chunk_sign(&s3, 0, SIG2,
					      API_SIGV4_EMPTY_SHA256, sig),
			 0);
	assert_string_equal(sig, SIG3);
	free(a);
}

/* The example's body; damage: 0 none, 1 a data byte, 2 a signature. */
static void example_body(struct buf *b, int damage)
{
	static const struct {
		size_t n;
		const char *sig;
	} chunks[] = { { 65536, SIG1 }, { 1024, SIG2 }, { 0, SIG3 } };
	size_t i, j;

	for (i = 0; i < 3; i++) {
		(void)buf_addf(b, "%zx;chunk-signature=%s\r\n", chunks[i].n,
			       chunks[i].sig);
		if (damage == 2 && i == 1)
			b->data[b->len - 3] ^= 1;
		for (j = 0; j < chunks[i].n; j++)
			(void)buf_addch(b, damage == 1 && i == 1 && j == 10 ?
						   'b' :
						   'a');
		(void)buf_adds(b, "\r\n");
	}
}

struct sink {
	size_t n;
	int all_a;
};

static int count_sink(void *ctx, const char *data, size_t n)
{
	struct sink *s = ctx;
	size_t i;

	for (i = 0; i < n; i++)
		if (data[i] != 'a')
			s->all_a = 0;
	s->n += n;
	return 0;
}

/* Feeds body to a decoder in pieces of step bytes; returns end's result. */
static int decode(const struct buf *body, size_t step, struct sink *out,
		  const char **code)
{
	struct hdrs h = { ex_headers, N_EX };
	struct api_sigv4_s3 s3;
	struct s3d_body b;
	size_t off = 0;
	int r;

	assert_int_equal(verify_example(&s3, ex_headers, N_EX), 0);
	assert_int_equal(s3d__body_init(&b, &s3, lookup, &h, 1 << 20), 0);
	out->n = 0;
	out->all_a = 1;
	while (off < body->len) {
		size_t n = body->len - off < step ? body->len - off : step;

		if (s3d__body_feed(&b, body->data + off, n, count_sink, out))
			break;
		off += n;
	}
	r = s3d__body_end(&b);
	*code = b.code;
	s3d__body_release(&b);
	return r;
}

static void test_example_body(void **state)
{
	static const size_t steps[] = { 1, 7, 512, 4096, 65536, 1 << 20 };
	struct buf body = BUF_INIT;
	struct sink out;
	const char *code;
	size_t i;

	(void)state;
	example_body(&body, 0);
	assert_int_equal(body.len, 66824); /* the example's Content-Length */
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		assert_int_equal(decode(&body, steps[i], &out, &code), 0);
		assert_int_equal(out.n, 66560);
		assert_true(out.all_a);
	}
	buf_release(&body);
}

static void test_damaged_body(void **state)
{
	struct buf body = BUF_INIT;
	struct sink out;
	const char *code;
	int damage;

	(void)state;
	for (damage = 1; damage <= 2; damage++) {
		buf_reset(&body);
		example_body(&body, damage);
		assert_int_not_equal(decode(&body, 4096, &out, &code), 0);
		assert_string_equal(code, "SignatureDoesNotMatch");
	}
	/* Cut short: the last chunk never came. */
	buf_reset(&body);
	example_body(&body, 0);
	body.len -= 90;
	assert_int_not_equal(decode(&body, 4096, &out, &code), 0);
	assert_string_equal(code, "IncompleteBody");
	buf_release(&body);
}

/* STREAMING-UNSIGNED-PAYLOAD-TRAILER with a CRC32 trailer, as botocore
 * sends over HTTPS. */
static int unsigned_trailer(const char *data, const char *crc_b64,
			    const char **code)
{
	char dl[32];
	struct api_header hs[] = {
		{ "x-amz-content-sha256",
		  API_SIGV4_STREAMING_UNSIGNED_TRAILER },
		{ "content-encoding", "aws-chunked" },
		{ "x-amz-trailer", "x-amz-checksum-crc32" },
		{ "x-amz-decoded-content-length", dl },
	};
	struct hdrs h = { hs, 4 };
	struct buf body = BUF_INIT;
	struct sink out = { 0, 1 };
	struct s3d_body b;
	int r;

	snprintf(dl, sizeof(dl), "%zu", strlen(data));
	(void)buf_addf(&body,
		       "%zx\r\n%s\r\n0\r\nx-amz-checksum-crc32:%s\r\n\r\n",
		       strlen(data), data, crc_b64);
	assert_int_equal(s3d__body_init(&b, NULL, lookup, &h, 1 << 20), 0);
	r = s3d__body_feed(&b, body.data, body.len, count_sink, &out);
	if (!r)
		r = s3d__body_end(&b);
	*code = b.code;
	s3d__body_release(&b);
	buf_release(&body);
	return r;
}

static void test_unsigned_trailer(void **state)
{
	unsigned long c = crc32(0L, (const Bytef *)"aaaa", 4);
	unsigned char be[4] = { (unsigned char)(c >> 24),
				(unsigned char)(c >> 16),
				(unsigned char)(c >> 8), (unsigned char)c };
	char b64[16];
	const char *code;

	(void)state;
	EVP_EncodeBlock((unsigned char *)b64, be, 4);
	assert_int_equal(unsigned_trailer("aaaa", b64, &code), 0);
	assert_int_not_equal(unsigned_trailer("aaab", b64, &code), 0);
	assert_string_equal(code, "BadDigest");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_signature),
		cmocka_unit_test(test_seed_needs_content_sha256),
		cmocka_unit_test(test_chunk_signatures),
		cmocka_unit_test(test_example_body),
		cmocka_unit_test(test_damaged_body),
		cmocka_unit_test(test_unsigned_trailer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
