#ifndef S3D_BODY_H
#define S3D_BODY_H

/*
 * The body of an S3 request as it streams in: aws-chunked framing taken
 * off (Content-Encoding: aws-chunked, x-amz-content-sha256 STREAMING-*),
 * each chunk's signature checked against the chain that starts at the
 * request's own signature, trailing headers read (x-amz-trailer), and the
 * decoded bytes hashed for what the request promised: its signed SHA-256,
 * Content-MD5, an x-amz-checksum-* (CRC32, SHA1, SHA256), the decoded
 * length. The bytes go on to a sink; nothing is judged final until
 * s3d__body_end(), so a caller commits only after it says yes.
 */
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "api/sigv4.h"
#include "common/buf.h"

/* Where decoded bytes go; returns 0, or nonzero to stop (disk full). */
typedef int s3d_sink_fn(void *ctx, const char *data, size_t len);

enum s3d_ck { S3D_CK_NONE, S3D_CK_CRC32, S3D_CK_SHA1, S3D_CK_SHA256 };

struct s3d_body {
	/* set by s3d__body_init() */
	int chunked;	   /* aws-chunked framing */
	int signed_chunks; /* chunk (and trailer) signatures checked */
	int trailer;	   /* trailing headers follow the last chunk */
	struct api_sigv4_s3 sig;
	char want_sha256[65]; /* signed hex payload hash, or "" */
	unsigned char want_md5[16];
	int have_md5;
	enum s3d_ck ck;
	char ck_name[32];     /* "x-amz-checksum-crc32" */
	char want_ck[96];     /* base64 from the header, or "" (trailer) */
	int64_t decoded_want; /* x-amz-decoded-content-length, or -1 */
	int64_t limit;	      /* most decoded bytes accepted */

	/* decoding */
	int state;
	char line[512];
	size_t line_len;
	uint64_t left; /* bytes of the current chunk still to come */
	char chunk_sig[65];
	char prev_sig[65];
	struct buf trailers; /* "name:value\n" lines, as signed */
	char trailer_sig[65];

	/* digests of the decoded bytes */
	EVP_MD_CTX *md5, *sha256, *ck_md, *chunk_md;
	unsigned long crc;
	int64_t decoded;
	char md5_hex[33];
	char ck_b64[96]; /* the checksum computed, base64 */

	/* the first failure: an S3 error code, status and message */
	const char *code;
	int status;
	struct buf msg;
};

/*
 * Sets b up from the request: the verified signature (NULL when the
 * controller checks none), x-amz-content-sha256, Content-Encoding,
 * Content-MD5, x-amz-decoded-content-length, x-amz-trailer,
 * x-amz-sdk-checksum-algorithm and x-amz-checksum-*, found through get
 * (a header lookup by lower-case name, NULL when absent). limit bounds
 * the decoded size. Returns 0, or -1 with b->code/status/msg set.
 */
typedef const char *s3d_header_fn(void *ctx, const char *name);
int s3d__body_init(struct s3d_body *b, const struct api_sigv4_s3 *sig,
		   s3d_header_fn *get, void *ctx, int64_t limit);

/* Takes n bytes as received. Returns 0, or -1 once b has failed. */
int s3d__body_feed(struct s3d_body *b, const char *data, size_t n,
		   s3d_sink_fn *sink, void *sink_ctx);

/* The body is complete: checks everything promised. 0 or -1. */
int s3d__body_end(struct s3d_body *b);

void s3d__body_release(struct s3d_body *b);

#endif
