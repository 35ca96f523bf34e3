#ifndef API_SIGV4_INT_H
#define API_SIGV4_INT_H

/*
 * Internal to api/: what the SigV4 files share. api/sigv4_parts.c holds
 * character classes, hashes and dates, api/sigv4_canon.c the canonical
 * request and signing, api/sigv4.c the parsing of the authentication
 * parameters and the verification.
 */
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "api/sigv4.h"
#include "common/buf.h"

#define SV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SV4_TERMINATOR "aws4_request"
#define SV4_UNSIGNED "UNSIGNED-PAYLOAD"

#define SV4_SKEW_MS (15 * 60 * 1000)
#define SV4_MAX_EXPIRES 604800	   /* 7 days, as AWS allows */
#define SV4_MAX_AUTHZ 4096	   /* Authorization header */
#define SV4_MAX_CREDENTIAL 512	   /* AKID/date/region/service/aws4_request */
#define SV4_MAX_SIGNED_LIST 2048   /* "host;x-amz-date;..." */
#define SV4_MAX_SIGNED 64	   /* names in that list */
#define SV4_MAX_HEADER_NAME 128	   /* one of those names */
#define SV4_MAX_SIGNATURE 128	   /* hex, 64 when well formed */
#define SV4_MAX_DATE 64		   /* X-Amz-Date or Date value */
#define SV4_MAX_URI 16384	   /* path and query as sent */
#define SV4_MAX_PARAMS 256	   /* query parameters */
#define SV4_MAX_SECRET 1024	   /* secret access key */
#define SV4_MAX_SCOPE_PART 64	   /* region, service */
#define SV4_MAX_CANON (256 * 1024) /* canonical request */

/* A piece of someone else's string: not NUL-terminated, not owned. */
struct sv4_span {
	const char *p;
	size_t n;
};

/* The parsed SignedHeaders list; names point into the list's own copy. */
struct sv4_signed {
	struct sv4_span name[SV4_MAX_SIGNED];
	size_t n;
};

/*
 * OpenSSL 3 objects for one verification. HMAC() and EVP_Digest() fetch
 * their algorithm from the provider on every call, which made up most of
 * the ~15 us a verification took; fetching once and reusing the contexts
 * brings it to a few microseconds, without any state kept between calls.
 */
struct sv4_crypto {
	EVP_MAC *mac;
	EVP_MAC_CTX *hmac;
	EVP_MD *sha256;
	EVP_MD_CTX *md;
};

/* ---- characters, hashes, dates (api/sigv4_parts.c) ---- */

int api__sv4_is_ws(char c);

int api__sv4_is_digit(char c);

int api__sv4_is_unreserved(unsigned char c);

/* RFC 7230 tchar, lower case only: what a SignedHeaders name may hold. */
int api__sv4_is_lower_tchar(char c);

char api__sv4_lower(char c);

/* Case-insensitive (ASCII) comparison of a NUL-terminated s with a span. */
int api__sv4_name_eq(const char *s, const char *p, size_t n);

int api__sv4_is_lower_hex(const char *s, size_t n);

void api__sv4_to_hex(const unsigned char *in, size_t n, char *out);

/* Copies a span into a fixed array of size cap+1; -1 if it does not fit. */
int api__sv4_copy_span(char *dst, size_t cap, const char *p, size_t n);

void api__sv4_crypto_close(struct sv4_crypto *c);

int api__sv4_crypto_open(struct sv4_crypto *c);

int api__sv4_sha256_hex(struct sv4_crypto *c, const void *data, size_t n,
			char out[65]);

/* out may be key: the key is copied in before out is written. */
int api__sv4_hmac256(struct sv4_crypto *c, const void *key, size_t key_len,
		     const void *msg, size_t msg_len, unsigned char out[32]);

/* signature = HMAC(signing key, string_to_sign), in hex; key_out (may be
 * NULL) receives the signing key. */
int api__sv4_derive_signature(struct sv4_crypto *c, const char *secret,
			      const char *date8, const char *region,
			      const char *service, const char *sts,
			      size_t sts_len, char out_hex[65],
			      unsigned char *key_out);

int api__sv4_digits_at(const char *s, size_t n, int *out);

/* "20150830T123600Z" (ISO 8601 basic format, UTC). */
int api__sv4_parse_amz_date(const char *s, int64_t *ms);

/*
 * RFC 1123 "Sun, 30 Aug 2015 12:36:00 GMT". botocore writes the zone as
 * "-0000" (email.utils.formatdate), so the numeric UTC forms count too.
 */
int api__sv4_parse_http_date(const char *s, int64_t *ms);

void api__sv4_format_amz_date(int64_t ms, char out[17]);

/* ---- request pieces (api/sigv4_canon.c) ---- */

/* Finds the header called name; *count gets how many there are. */
const struct api_header *api__sv4_find_header(const struct api_sigv4_request *r,
					      const char *name, size_t *count);

const char *api__sv4_header_value(const struct api_header *h);

/* Trims s into out (cap+1 bytes); -1 if the trimmed value is too long. */
int api__sv4_copy_trimmed(char *out, size_t cap, const char *s);

void api__sv4_split_uri(const char *uri, struct sv4_span *path,
			struct sv4_span *query);

/* Appends the strings up to a NULL. */
int api__sv4_add_strs(struct buf *b, ...) __attribute__((sentinel));

/*
 * Decodes the byte of a query name or value at s[*i] and moves *i past it:
 * %XX, and '+' as a space, as form encoding and botocore's own URLs have
 * it. A '%' not followed by two hex digits stands for itself.
 */
char api__sv4_decode_at(const char *s, size_t n, size_t *i);

/*
 * Splits a SignedHeaders list ("host;x-amz-date") into sl, whose names
 * point into list. Names must be lower case tokens in strictly ascending
 * order, as every signer writes them; returns a reason when they are not.
 */
const char *api__sv4_parse_signed_list(const char *list, struct sv4_signed *sl);

int api__sv4_signed_has(const struct sv4_signed *sl, const char *name);

/*
 * The payload hash line: the x-amz-content-sha256 header when there is one
 * (it must be UNSIGNED-PAYLOAD or the body's real hash), else the body's
 * SHA-256. Returns 0; -1 with *why for a bad header; ERR_INTERNAL.
 */
int api__sv4_payload_hash(struct sv4_crypto *c,
			  const struct api_sigv4_request *req, char out[65],
			  const char **why, int *is_mismatch);

/*
 * Builds the canonical request and the string to sign, and computes the
 * signature. Returns 0; ERR_NOTFOUND with *missing for an absent signed
 * header; ERR_TOOBIG / ERR_LIMIT when the request is too large; ERR_INVALID
 * for a secret too long; ERR_INTERNAL.
 */
int api__sv4_compute(struct sv4_crypto *c, const struct api_sigv4_request *req,
		     const char *secret, const char *amz_date,
		     const char *region, const char *service,
		     const struct sv4_signed *sl, const char *signed_list,
		     const char *payload, int skip_signature, char out_hex[65],
		     struct sv4_span *missing, unsigned char *key_out);

int api__sv4_valid_scope_part(const char *s);

#endif
