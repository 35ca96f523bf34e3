/*
 * aws-chunked decoding and body checks of S3 requests
 * (storage/s3d/body.h). A chunk is
 *
 *   <hex size>[;chunk-signature=<64 hex>]\r\n<size bytes>\r\n
 *
 * and the last one has size 0; with trailing headers the last chunk's
 * line is followed by "name:value\r\n" lines (and, when signed,
 * "x-amz-trailer-signature:<64 hex>\r\n") and an empty line.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <zlib.h>

#include "storage/s3d/body.h"
#include "storage/s3d/meta.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define TRAILERS_MAX 4096

enum { ST_LINE, ST_DATA, ST_DATA_LF, ST_TRAILER, ST_DONE };

static int failf(struct s3d_body *b, const char *code, int status,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int failf(struct s3d_body *b, const char *code, int status,
		 const char *fmt, ...)
{
	va_list ap;

	if (b->code)
		return -1;
	b->code = code;
	b->status = status;
	va_start(ap, fmt);
	(void)buf_vaddf(&b->msg, fmt, ap);
	va_end(ap);
	return -1;
}

static const struct {
	const char *name; /* algorithm as x-amz-sdk-checksum-algorithm says */
	enum s3d_ck ck;
} ck_algos[] = {
	{ "CRC32", S3D_CK_CRC32 },
	{ "SHA1", S3D_CK_SHA1 },
	{ "SHA256", S3D_CK_SHA256 },
};

/* "x-amz-checksum-crc32" -> S3D_CK_CRC32; unsupported ones fail b. */
static int ck_from_header(struct s3d_body *b, const char *hdr)
{
	const char *alg = hdr + strlen("x-amz-checksum-");
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ck_algos); i++)
		if (!strcasecmp(alg, ck_algos[i].name)) {
			b->ck = ck_algos[i].ck;
			snprintf(b->ck_name, sizeof(b->ck_name),
				 "x-amz-checksum-%s", ck_algos[i].name);
			for (char *p = b->ck_name; *p; p++)
				*p = (char)tolower((unsigned char)*p);
			return 0;
		}
	return failf(b, "InvalidRequest", 400,
		     "checksum %.40s is not supported here: use CRC32, SHA1 "
		     "or SHA256 (or none)",
		     alg);
}

static int b64_decode16(const char *s, unsigned char out[16])
{
	unsigned char tmp[32];
	int n;

	if (strlen(s) != 24)
		return -1;
	n = EVP_DecodeBlock(tmp, (const unsigned char *)s, 24);
	if (n != 18)
		return -1;
	memcpy(out, tmp, 16);
	return 0;
}

/* The checksum headers: x-amz-trailer names one that trails the body,
 * x-amz-checksum-<alg> gives one now. */
static int init_checksum(struct s3d_body *b, s3d_header_fn *get, void *ctx)
{
	static const char *const names[] = {
		"x-amz-checksum-crc32",	    "x-amz-checksum-crc32c",
		"x-amz-checksum-sha1",	    "x-amz-checksum-sha256",
		"x-amz-checksum-crc64nvme",
	};
	const char *tr = get(ctx, "x-amz-trailer");
	size_t i;

	if (tr) {
		if (!b->trailer)
			return failf(b, "InvalidRequest", 400,
				     "x-amz-trailer needs an aws-chunked body "
				     "with a STREAMING-*-TRAILER payload");
		if (strncasecmp(tr, "x-amz-checksum-", 15) || strchr(tr, ','))
			return failf(b, "InvalidRequest", 400,
				     "x-amz-trailer may name one "
				     "x-amz-checksum-* header, not '%.80s'",
				     tr);
		return ck_from_header(b, tr);
	}
	if (b->trailer)
		return failf(b, "InvalidRequest", 400,
			     "a STREAMING-*-TRAILER payload needs an "
			     "x-amz-trailer header");
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		const char *v = get(ctx, names[i]);

		if (!v)
			continue;
		if (ck_from_header(b, names[i]))
			return -1;
		if (strlen(v) >= sizeof(b->want_ck))
			return failf(b, "InvalidRequest", 400, "%s is too long",
				     names[i]);
		snprintf(b->want_ck, sizeof(b->want_ck), "%s", v);
		return 0;
	}
	return 0;
}

static int init_digests(struct s3d_body *b)
{
	b->md5 = EVP_MD_CTX_new();
	if (!b->md5 || !EVP_DigestInit_ex(b->md5, EVP_md5(), NULL))
		return failf(b, "InternalError", 500, "no MD5");
	if (b->want_sha256[0]) {
		b->sha256 = EVP_MD_CTX_new();
		if (!b->sha256 ||
		    !EVP_DigestInit_ex(b->sha256, EVP_sha256(), NULL))
			return failf(b, "InternalError", 500, "no SHA-256");
	}
	if (b->signed_chunks) {
		b->chunk_md = EVP_MD_CTX_new();
		if (!b->chunk_md ||
		    !EVP_DigestInit_ex(b->chunk_md, EVP_sha256(), NULL))
			return failf(b, "InternalError", 500, "no SHA-256");
	}
	if (b->ck == S3D_CK_SHA1 || b->ck == S3D_CK_SHA256) {
		b->ck_md = EVP_MD_CTX_new();
		if (!b->ck_md ||
		    !EVP_DigestInit_ex(b->ck_md,
				       b->ck == S3D_CK_SHA1 ? EVP_sha1() :
							      EVP_sha256(),
				       NULL))
			return failf(b, "InternalError", 500, "no digest");
	}
	b->crc = crc32(0L, Z_NULL, 0);
	return 0;
}

/* x-amz-content-sha256 and Content-Encoding decide the framing. */
static int init_mode(struct s3d_body *b, const struct api_sigv4_s3 *sig,
		     s3d_header_fn *get, void *ctx)
{
	const char *payload = sig ? sig->payload :
				    get(ctx, "x-amz-content-sha256");

	if (!payload)
		return 0;
	if (!strcmp(payload, API_SIGV4_STREAMING) ||
	    !strcmp(payload, API_SIGV4_STREAMING_TRAILER)) {
		b->chunked = 1;
		b->signed_chunks = sig != NULL;
		b->trailer = !strcmp(payload, API_SIGV4_STREAMING_TRAILER);
	} else if (!strcmp(payload, API_SIGV4_STREAMING_UNSIGNED_TRAILER)) {
		b->chunked = 1;
		b->trailer = 1;
	} else if (strlen(payload) == 64 && sig) {
		memcpy(b->want_sha256, payload, 65);
	}
	if (b->signed_chunks)
		snprintf(b->prev_sig, sizeof(b->prev_sig), "%s", sig->seed);
	return 0;
}

int s3d__body_init(struct s3d_body *b, const struct api_sigv4_s3 *sig,
		   s3d_header_fn *get, void *ctx, int64_t limit)
{
	const char *md5 = get(ctx, "content-md5");
	const char *dcl = get(ctx, "x-amz-decoded-content-length");

	memset(b, 0, sizeof(*b));
	buf_init(&b->msg, 1024);
	buf_init(&b->trailers, TRAILERS_MAX);
	b->decoded_want = -1;
	b->limit = limit;
	if (sig)
		b->sig = *sig;
	if (init_mode(b, sig, get, ctx))
		return -1;
	if (md5) {
		if (b64_decode16(md5, b->want_md5))
			return failf(b, "InvalidDigest", 400,
				     "The Content-MD5 you specified was "
				     "invalid.");
		b->have_md5 = 1;
	}
	if (dcl) {
		char *end;

		b->decoded_want = strtoll(dcl, &end, 10);
		if (*end || b->decoded_want < 0)
			return failf(b, "InvalidArgument", 400,
				     "x-amz-decoded-content-length is not a "
				     "number");
		if (b->decoded_want > limit)
			return failf(b, "EntityTooLarge", 400,
				     "Your proposed upload exceeds the "
				     "maximum allowed size (%lld bytes)",
				     (long long)limit);
	}
	if (b->chunked && b->decoded_want < 0)
		return failf(b, "MissingContentLength", 411,
			     "an aws-chunked body needs "
			     "x-amz-decoded-content-length");
	if (init_checksum(b, get, ctx))
		return -1;
	return init_digests(b);
}

/* Decoded bytes: hashed, counted, passed on. */
static int take(struct s3d_body *b, const char *p, size_t n, s3d_sink_fn *sink,
		void *sink_ctx)
{
	if (!n)
		return 0;
	b->decoded += (int64_t)n;
	if (b->decoded > b->limit)
		return failf(b, "EntityTooLarge", 400,
			     "Your proposed upload exceeds the maximum "
			     "allowed size (%lld bytes)",
			     (long long)b->limit);
	if (!EVP_DigestUpdate(b->md5, p, n) ||
	    (b->sha256 && !EVP_DigestUpdate(b->sha256, p, n)) ||
	    (b->ck_md && !EVP_DigestUpdate(b->ck_md, p, n)) ||
	    (b->chunk_md && !EVP_DigestUpdate(b->chunk_md, p, n)))
		return failf(b, "InternalError", 500, "digest failed");
	if (b->ck == S3D_CK_CRC32) {
		const char *q = p;
		size_t left = n;

		while (left) {
			uInt part = left > (1u << 30) ? 1u << 30 : (uInt)left;

			b->crc = crc32(b->crc, (const Bytef *)q, part);
			q += part;
			left -= part;
		}
	}
	if (sink(sink_ctx, p, n))
		return failf(b, "InternalError", 500,
			     "the object could not be written");
	return 0;
}

static int check_chunk_sig(struct s3d_body *b)
{
	unsigned char d[32];
	char hex[65], want[65];

	if (!b->signed_chunks)
		return 0;
	if (!EVP_DigestFinal_ex(b->chunk_md, d, NULL) ||
	    !EVP_DigestInit_ex(b->chunk_md, EVP_sha256(), NULL))
		return failf(b, "InternalError", 500, "digest failed");
	stor_hex(d, 32, hex);
	if (api_sigv4_chunk_sign(&b->sig, 0, b->prev_sig, hex, want))
		return failf(b, "InternalError", 500, "signing failed");
	if (strlen(b->chunk_sig) != 64 || CRYPTO_memcmp(want, b->chunk_sig, 64))
		return failf(b, "SignatureDoesNotMatch", 403,
			     "The chunk signature we calculated does not "
			     "match the signature you provided (chunk ending "
			     "at byte %lld).",
			     (long long)b->decoded);
	memcpy(b->prev_sig, want, 65);
	return 0;
}

/* "<hex>[;chunk-signature=<sig>]" */
static int chunk_line(struct s3d_body *b)
{
	char *semi = strchr(b->line, ';');
	char *end;
	unsigned long long size;

	if (semi)
		*semi = '\0';
	if (!b->line[0] || strlen(b->line) > 16 ||
	    strspn(b->line, "0123456789abcdefABCDEF") != strlen(b->line))
		return failf(b, "IncompleteBody", 400,
			     "malformed aws-chunked chunk header");
	size = strtoull(b->line, &end, 16);
	b->chunk_sig[0] = '\0';
	if (semi) {
		const char *k = "chunk-signature=";

		if (strncmp(semi + 1, k, strlen(k)) ||
		    strlen(semi + 1 + strlen(k)) != 64)
			return failf(b, "IncompleteBody", 400,
				     "malformed chunk-signature");
		memcpy(b->chunk_sig, semi + 1 + strlen(k), 65);
	} else if (b->signed_chunks) {
		return failf(b, "SignatureDoesNotMatch", 403,
			     "a chunk of a signed aws-chunked body has no "
			     "chunk-signature");
	}
	if ((int64_t)size > b->limit)
		return failf(b, "EntityTooLarge", 400,
			     "aws-chunked chunk is too large");
	b->left = size;
	if (size)
		b->state = ST_DATA;
	else if (check_chunk_sig(b))
		return -1;
	else
		b->state = ST_TRAILER; /* trailing headers, then "\r\n" */
	return 0;
}

static int trailer_line(struct s3d_body *b)
{
	static const char sigk[] = "x-amz-trailer-signature:";
	char *colon;

	if (!b->line[0]) {
		b->state = ST_DONE;
		return 0;
	}
	if (!strncasecmp(b->line, sigk, strlen(sigk))) {
		snprintf(b->trailer_sig, sizeof(b->trailer_sig), "%.64s",
			 b->line + strlen(sigk));
		return 0;
	}
	colon = strchr(b->line, ':');
	if (!colon)
		return failf(b, "IncompleteBody", 400,
			     "malformed trailing header");
	if (buf_addf(&b->trailers, "%s\n", b->line))
		return failf(b, "IncompleteBody", 400,
			     "trailing headers are too long");
	*colon = '\0';
	if (!strcasecmp(b->line, b->ck_name)) {
		const char *v = colon + 1;

		while (*v == ' ')
			v++;
		snprintf(b->want_ck, sizeof(b->want_ck), "%s", v);
	}
	return 0;
}

/* A CRLF-terminated line is complete in b->line. */
static int line_done(struct s3d_body *b)
{
	if (b->state == ST_TRAILER)
		return trailer_line(b);
	if (b->state == ST_DATA_LF) {
		if (b->line[0])
			return failf(b, "IncompleteBody", 400,
				     "aws-chunked chunk does not end with "
				     "CRLF");
		b->state = ST_LINE;
		return 0;
	}
	return chunk_line(b);
}

/* Collects a line up to CRLF; returns bytes used, *done when complete. */
static size_t collect_line(struct s3d_body *b, const char *p, size_t n,
			   int *done)
{
	size_t i;

	*done = 0;
	for (i = 0; i < n; i++) {
		if (p[i] == '\n') {
			if (b->line_len && b->line[b->line_len - 1] == '\r')
				b->line_len--;
			b->line[b->line_len] = '\0';
			b->line_len = 0;
			*done = 1;
			return i + 1;
		}
		if (b->line_len == sizeof(b->line) - 1) {
			failf(b, "IncompleteBody", 400,
			      "aws-chunked line is too long");
			return n;
		}
		b->line[b->line_len++] = p[i];
	}
	return n;
}

static int feed_chunked(struct s3d_body *b, const char *p, size_t n,
			s3d_sink_fn *sink, void *sink_ctx)
{
	while (n && !b->code) {
		size_t used;
		int done;

		switch (b->state) {
		case ST_DATA:
			used = n < b->left ? n : (size_t)b->left;
			if (take(b, p, used, sink, sink_ctx))
				return -1;
			b->left -= used;
			if (!b->left) {
				if (check_chunk_sig(b))
					return -1;
				b->state = ST_DATA_LF;
			}
			break;
		case ST_DONE:
			return failf(b, "IncompleteBody", 400,
				     "bytes after the last aws-chunked chunk");
		default:
			used = collect_line(b, p, n, &done);
			if (done && line_done(b))
				return -1;
			break;
		}
		p += used;
		n -= used;
	}
	return b->code ? -1 : 0;
}

int s3d__body_feed(struct s3d_body *b, const char *data, size_t n,
		   s3d_sink_fn *sink, void *sink_ctx)
{
	if (b->code)
		return -1;
	if (!b->chunked)
		return take(b, data, n, sink, sink_ctx);
	return feed_chunked(b, data, n, sink, sink_ctx);
}

static int check_trailer_sig(struct s3d_body *b)
{
	unsigned char d[32];
	char hex[65], want[65];

	if (!b->signed_chunks || !b->trailer)
		return 0;
	if (!EVP_Digest(b->trailers.data ? b->trailers.data : "",
			b->trailers.len, d, NULL, EVP_sha256(), NULL))
		return failf(b, "InternalError", 500, "digest failed");
	stor_hex(d, 32, hex);
	if (api_sigv4_chunk_sign(&b->sig, 1, b->prev_sig, hex, want))
		return failf(b, "InternalError", 500, "signing failed");
	if (strlen(b->trailer_sig) != 64 ||
	    CRYPTO_memcmp(want, b->trailer_sig, 64))
		return failf(b, "SignatureDoesNotMatch", 403,
			     "The trailer signature we calculated does not "
			     "match the signature you provided.");
	return 0;
}

/* The computed checksum in base64, against what was promised. */
static int check_checksum(struct s3d_body *b)
{
	unsigned char d[64];
	unsigned int len = 0;

	if (b->ck == S3D_CK_NONE)
		return 0;
	if (b->ck == S3D_CK_CRC32) {
		d[0] = (unsigned char)(b->crc >> 24);
		d[1] = (unsigned char)(b->crc >> 16);
		d[2] = (unsigned char)(b->crc >> 8);
		d[3] = (unsigned char)b->crc;
		len = 4;
	} else if (!EVP_DigestFinal_ex(b->ck_md, d, &len)) {
		return failf(b, "InternalError", 500, "digest failed");
	}
	EVP_EncodeBlock((unsigned char *)b->ck_b64, d, (int)len);
	if (!b->want_ck[0])
		return failf(b, "InvalidRequest", 400,
			     "the trailing %s header is missing", b->ck_name);
	if (strcmp(b->want_ck, b->ck_b64))
		return failf(b, "BadDigest", 400,
			     "The %s you specified did not match the "
			     "calculated checksum.",
			     b->ck_name);
	return 0;
}

int s3d__body_end(struct s3d_body *b)
{
	unsigned char d[32];
	char hex[65];

	if (b->code)
		return -1;
	if (b->chunked && b->state != ST_DONE && b->state != ST_TRAILER)
		return failf(b, "IncompleteBody", 400,
			     "You did not provide the number of bytes "
			     "specified by the Content-Length HTTP header");
	if (b->chunked && b->state == ST_TRAILER && b->trailer)
		return failf(b, "IncompleteBody", 400,
			     "the trailing headers did not end");
	if (b->decoded_want >= 0 && b->decoded != b->decoded_want)
		return failf(b, "IncompleteBody", 400,
			     "x-amz-decoded-content-length says %lld "
			     "bytes, the body had %lld",
			     (long long)b->decoded_want, (long long)b->decoded);
	if (check_trailer_sig(b))
		return -1;
	if (!EVP_DigestFinal_ex(b->md5, d, NULL))
		return failf(b, "InternalError", 500, "digest failed");
	stor_hex(d, 16, b->md5_hex);
	if (b->have_md5 && memcmp(d, b->want_md5, 16))
		return failf(b, "BadDigest", 400,
			     "The Content-MD5 you specified did not match "
			     "what we received.");
	if (b->sha256) {
		if (!EVP_DigestFinal_ex(b->sha256, d, NULL))
			return failf(b, "InternalError", 500, "digest failed");
		stor_hex(d, 32, hex);
		if (strcmp(hex, b->want_sha256))
			return failf(b, "XAmzContentSHA256Mismatch", 400,
				     "The provided 'x-amz-content-sha256' "
				     "header does not match what was "
				     "computed.");
	}
	return check_checksum(b);
}

void s3d__body_release(struct s3d_body *b)
{
	EVP_MD_CTX_free(b->md5);
	EVP_MD_CTX_free(b->sha256);
	EVP_MD_CTX_free(b->ck_md);
	EVP_MD_CTX_free(b->chunk_md);
	b->md5 = b->sha256 = b->ck_md = b->chunk_md = NULL;
	buf_release(&b->msg);
	buf_release(&b->trailers);
	OPENSSL_cleanse(b->sig.key, sizeof(b->sig.key));
}
