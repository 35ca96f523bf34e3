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
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "api/sigv4.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/hex.h"
#include "common/xalloc.h"
#include "common/banned.h"

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

/* A piece of someone else's string: not NUL-terminated, not owned. */
struct span {
	const char *p;
	size_t n;
};

/* The parsed SignedHeaders list; names point into the list's own copy. */
struct sv4_signed {
	struct span name[SV4_MAX_SIGNED];
	size_t n;
};

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

/* One query parameter, encoded, as offsets into the arena buffer. */
struct sv4_param {
	size_t ko, kn, vo, vn;
	const char *k, *v; /* set once the arena stops moving */
};

static void add_err(struct buf *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_err(struct buf *err, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (!err)
		return;
	va_start(ap, fmt);
	r = buf_vaddf(err, fmt, ap);
	va_end(ap);
	/* A message cut short by the buffer's cap is still a message. */
	(void)r;
}

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

/* ---- characters ---- */

static int is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	       c == '\f';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
	       c == '~';
}

/* RFC 7230 tchar, lower case only: what a SignedHeaders name may hold. */
static int is_lower_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive (ASCII) comparison of a NUL-terminated s with a span. */
static int name_eq(const char *s, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == '\0' || lower(s[i]) != lower(p[i]))
			return 0;
	return s[n] == '\0';
}

static int is_lower_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!is_digit(s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return 0;
	return 1;
}

static void to_hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Copies a span into a fixed array of size cap+1; -1 if it does not fit. */
static int copy_span(char *dst, size_t cap, const char *p, size_t n)
{
	if (n > cap)
		return -1;
	memcpy(dst, p, n);
	dst[n] = '\0';
	return 0;
}

/* ---- crypto: OpenSSL only ---- */

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

static void crypto_close(struct sv4_crypto *c)
{
	EVP_MAC_CTX_free(c->hmac);
	EVP_MAC_free(c->mac);
	EVP_MD_CTX_free(c->md);
	EVP_MD_free(c->sha256);
	memset(c, 0, sizeof(*c));
}

static int crypto_open(struct sv4_crypto *c)
{
	static char digest[] = "SHA256";
	OSSL_PARAM params[2];

	memset(c, 0, sizeof(*c));
	c->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	c->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	c->md = EVP_MD_CTX_new();
	if (c->mac)
		c->hmac = EVP_MAC_CTX_new(c->mac);
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						     digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (!c->mac || !c->sha256 || !c->md || !c->hmac ||
	    !EVP_MAC_CTX_set_params(c->hmac, params)) {
		crypto_close(c);
		return ERR_INTERNAL;
	}
	return 0;
}

static int sha256_hex(struct sv4_crypto *c, const void *data, size_t n,
		      char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (!EVP_DigestInit_ex(c->md, c->sha256, NULL) ||
	    !EVP_DigestUpdate(c->md, n ? data : "", n) ||
	    !EVP_DigestFinal_ex(c->md, md, &len) || len != 32)
		return ERR_INTERNAL;
	to_hex(md, 32, out);
	return 0;
}

/* out may be key: the key is copied in before out is written. */
static int hmac256(struct sv4_crypto *c, const void *key, size_t key_len,
		   const void *msg, size_t msg_len, unsigned char out[32])
{
	size_t len = 0;

	if (!EVP_MAC_init(c->hmac, key, key_len, NULL) ||
	    !EVP_MAC_update(c->hmac, (const unsigned char *)msg, msg_len) ||
	    !EVP_MAC_final(c->hmac, out, &len, 32) || len != 32)
		return ERR_INTERNAL;
	return 0;
}

/*
 * The signing key: HMAC(HMAC(HMAC(HMAC("AWS4" secret, date), region),
 * service), "aws4_request").
 */
static int derive_key(struct sv4_crypto *c, const char *secret,
		      const char *date8, const char *region,
		      const char *service, unsigned char k[32])
{
	unsigned char kbuf[4 + SV4_MAX_SECRET];
	size_t slen = strlen(secret);
	int r;

	if (slen > SV4_MAX_SECRET)
		return ERR_INVALID;
	memcpy(kbuf, "AWS4", 4);
	memcpy(kbuf + 4, secret, slen);
	r = hmac256(c, kbuf, 4 + slen, date8, 8, k);
	if (!r)
		r = hmac256(c, k, 32, region, strlen(region), k);
	if (!r)
		r = hmac256(c, k, 32, service, strlen(service), k);
	if (!r)
		r = hmac256(c, k, 32, SV4_TERMINATOR, strlen(SV4_TERMINATOR),
			    k);
	OPENSSL_cleanse(kbuf, 4 + slen);
	return r;
}

/* signature = HMAC(signing key, string_to_sign), in hex; key_out (may be
 * NULL) receives the signing key. */
static int derive_signature(struct sv4_crypto *c, const char *secret,
			    const char *date8, const char *region,
			    const char *service, const char *sts,
			    size_t sts_len, char out_hex[65],
			    unsigned char *key_out)
{
	unsigned char k[32], sig[32];
	int r = derive_key(c, secret, date8, region, service, k);

	if (!r)
		r = hmac256(c, k, 32, sts, sts_len, sig);
	if (!r)
		to_hex(sig, 32, out_hex);
	if (!r && key_out)
		memcpy(key_out, k, 32);
	OPENSSL_cleanse(k, sizeof(k));
	return r;
}

/* ---- dates ---- */

static int digits_at(const char *s, size_t n, int *out)
{
	size_t i;
	int v = 0;

	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static int make_time(int y, int mo, int d, int h, int mi, int s, int64_t *ms)
{
	struct tm tm, back;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	t = timegm(&tm);
	/* timegm() turns 31 Feb into 3 Mar: a time that does not come back
	 * unchanged was not a time. */
	if (t == (time_t)-1 || !gmtime_r(&t, &back) ||
	    back.tm_year != y - 1900 || back.tm_mon != mo - 1 ||
	    back.tm_mday != d || back.tm_hour != h || back.tm_min != mi ||
	    back.tm_sec != s)
		return -1;
	*ms = (int64_t)t * 1000;
	return 0;
}

/* "20150830T123600Z" (ISO 8601 basic format, UTC). */
static int parse_amz_date(const char *s, int64_t *ms)
{
	int y, mo, d, h, mi, sec;

	if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z' ||
	    digits_at(s, 4, &y) || digits_at(s + 4, 2, &mo) ||
	    digits_at(s + 6, 2, &d) || digits_at(s + 9, 2, &h) ||
	    digits_at(s + 11, 2, &mi) || digits_at(s + 13, 2, &sec))
		return -1;
	return make_time(y, mo, d, h, mi, sec, ms);
}

/* Which of the n three-letter names in names s starts with, or -1. */
static int name3_index(const char *s, const char *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (memcmp(s, names + 3 * i, 3) == 0)
			return i;
	return -1;
}

/* "hh:mm:ss". */
static int hms_at(const char *s, int *h, int *mi, int *sec)
{
	if (digits_at(s, 2, h) || s[2] != ':' || digits_at(s + 3, 2, mi) ||
	    s[5] != ':' || digits_at(s + 6, 2, sec))
		return -1;
	return 0;
}

/* The names of UTC an HTTP date may end with. */
static int is_utc_zone(const char *zone)
{
	static const char *const zones[] = { "GMT", "UTC", "+0000", "-0000" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(zones); i++)
		if (!strcmp(zone, zones[i]))
			return 1;
	return 0;
}

/*
 * RFC 1123 "Sun, 30 Aug 2015 12:36:00 GMT". botocore writes the zone as
 * "-0000" (email.utils.formatdate), so the numeric UTC forms count too.
 */
static int parse_http_date(const char *s, int64_t *ms)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	static const char wdays[] = "MonTueWedThuFriSatSun";
	int y, mo, d, h, mi, sec;
	size_t dl;

	if (strlen(s) < 28 || s[3] != ',' || s[4] != ' ')
		return -1;
	if (name3_index(s, wdays, 7) < 0)
		return -1;
	s += 5;
	dl = is_digit(s[1]) ? 2 : 1;
	if (digits_at(s, dl, &d) || s[dl] != ' ')
		return -1;
	s += dl + 1;
	mo = name3_index(s, months, 12) + 1;
	if (!mo || s[3] != ' ' || digits_at(s + 4, 4, &y) || s[8] != ' ' ||
	    hms_at(s + 9, &h, &mi, &sec) || s[17] != ' ')
		return -1;
	if (!is_utc_zone(s + 18))
		return -1;
	return make_time(y, mo, d, h, mi, sec, ms);
}

static void format_amz_date(int64_t ms, char out[17])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) ||
	    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		memcpy(out, "00000000T000000Z", 17);
}

/* ---- request pieces ---- */

/* Finds the header called name; *count gets how many there are. */
static const struct api_header *find_header(const struct api_sigv4_request *r,
					    const char *name, size_t *count)
{
	const struct api_header *first = NULL;
	size_t i, c = 0;

	for (i = 0; i < r->n_headers; i++) {
		const char *hn = r->headers[i].name;

		if (hn && lower(hn[0]) == name[0] &&
		    name_eq(hn, name, strlen(name))) {
			if (!first)
				first = &r->headers[i];
			c++;
		}
	}
	if (count)
		*count = c;
	return first;
}

static const char *header_value(const struct api_header *h)
{
	return h && h->value ? h->value : "";
}

/* Trims s into out (cap+1 bytes); -1 if the trimmed value is too long. */
static int copy_trimmed(char *out, size_t cap, const char *s)
{
	size_t n = strlen(s);

	while (n && is_ws(*s)) {
		s++;
		n--;
	}
	while (n && is_ws(s[n - 1]))
		n--;
	return copy_span(out, cap, s, n);
}

static void split_uri(const char *uri, struct span *path, struct span *query)
{
	const char *q = strchr(uri, '?');

	path->p = uri;
	path->n = q ? (size_t)(q - uri) : strlen(uri);
	query->p = q ? q + 1 : uri + path->n;
	query->n = q ? strlen(q + 1) : 0;
}

/* Sets len, keeping the NUL the buffer promises. */
static void buf_setlen(struct buf *b, size_t len)
{
	b->len = len;
	if (b->cap)
		b->data[len] = '\0';
}

/*
 * Appends each string up to a NULL, without printf's cost (this runs on
 * every request). Returns 0 or ERR_TOOBIG.
 */
static int add_strs(struct buf *b, ...) __attribute__((sentinel));

static int add_strs(struct buf *b, ...)
{
	const char *s;
	va_list ap;
	int r = 0;

	va_start(ap, b);
	while (!r && (s = va_arg(ap, const char *)) != NULL)
		r = buf_adds(b, s);
	va_end(ap);
	return r;
}

/* Appends s percent-encoded: RFC 3986 unreserved bytes stay, others %XX. */
static int add_encoded(struct buf *b, const char *s, size_t n, int keep_slash)
{
	static const char digits[] = "0123456789ABCDEF";
	size_t i, need = 0;
	char *o;
	int r;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		need += (is_unreserved(c) || (keep_slash && c == '/')) ? 1 : 3;
	}
	r = buf_grow(b, need);
	if (r)
		return r;
	o = b->data + b->len;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (is_unreserved(c) || (keep_slash && c == '/')) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = digits[c >> 4];
			*o++ = digits[c & 15];
		}
	}
	buf_setlen(b, b->len + need);
	return 0;
}

/*
 * Decodes the byte of a query name or value at s[*i] and moves *i past it:
 * %XX, and '+' as a space, as form encoding and botocore's own URLs have
 * it. A '%' not followed by two hex digits stands for itself.
 */
static char decode_at(const char *s, size_t n, size_t *i)
{
	char c = s[*i];

	if (c == '%' && *i + 2 < n && hex_digit(s[*i + 1]) >= 0 &&
	    hex_digit(s[*i + 2]) >= 0) {
		c = (char)(hex_digit(s[*i + 1]) * 16 + hex_digit(s[*i + 2]));
		*i += 2;
	} else if (c == '+') {
		c = ' ';
	}
	(*i)++;
	return c;
}

/* Appends a query name or value as AWS canonicalises it: decoded, then
 * encoded again. */
static int add_requoted(struct buf *b, const char *s, size_t n)
{
	size_t i = 0;
	int r = 0;

	while (i < n && !r) {
		char c = decode_at(s, n, &i);

		r = add_encoded(b, &c, 1, 0);
	}
	return r;
}

/*
 * The canonical URI: dot segments removed and empty segments dropped
 * (botocore's remove_dot_segments()), then each byte of the path as sent
 * URI-encoded once more. The path is not decoded first: for services other
 * than S3 AWS encodes the already encoded path again, so "/a%20b" signs as
 * "/a%2520b".
 */
static int add_canonical_uri(struct buf *b, const char *path, size_t n)
{
	size_t start = b->len, i = 0, kept = 0;
	int lead, trail, r;

	if (n == 0)
		return buf_addch(b, '/');
	lead = path[0] == '/';
	trail = path[n - 1] == '/';
	while (i <= n) {
		size_t j = i, len;

		while (j < n && path[j] != '/')
			j++;
		len = j - i;
		if (len == 0 || (len == 1 && path[i] == '.')) {
			/* empty or "." segment: dropped */
		} else if (len == 2 && path[i] == '.' && path[i + 1] == '.') {
			if (kept) {
				size_t k = b->len;

				while (k > start && b->data[k - 1] != '/')
					k--;
				buf_setlen(b, k > start ? k - 1 : start);
				kept--;
			}
		} else {
			r = buf_addch(b, '/');
			if (!r)
				r = add_encoded(b, path + i, len, 0);
			if (r)
				return r;
			kept++;
		}
		i = j + 1;
	}
	if (kept == 0)
		return lead ? buf_addch(b, '/') : 0;
	if (!lead) {
		memmove(b->data + start, b->data + start + 1,
			b->len - start - 1);
		buf_setlen(b, b->len - 1);
	}
	return trail ? buf_addch(b, '/') : 0;
}

static int param_cmp(const void *a, const void *b)
{
	const struct sv4_param *x = a, *y = b;
	size_t n = x->kn < y->kn ? x->kn : y->kn;
	int c = memcmp(x->k, y->k, n);

	if (c || x->kn != y->kn)
		return c ? c : (x->kn < y->kn ? -1 : 1);
	n = x->vn < y->vn ? x->vn : y->vn;
	c = memcmp(x->v, y->v, n);
	if (c || x->vn != y->vn)
		return c ? c : (x->vn < y->vn ? -1 : 1);
	return 0;
}

/*
 * The canonical query string: every parameter encoded as above, sorted by
 * encoded name then value, "name=value" joined with '&'. skip_signature
 * leaves X-Amz-Signature out, as a presigned request needs.
 */
static int add_canonical_query(struct buf *b, struct span q, int skip_signature)
{
	struct sv4_param params[SV4_MAX_PARAMS];
	struct buf arena = BUF_INIT_MAX(SV4_MAX_CANON);
	size_t np = 0, i = 0;
	int r = 0;

	while (i < q.n) {
		size_t j = i, eq;

		while (j < q.n && q.p[j] != '&')
			j++;
		if (j > i) {
			if (np == SV4_MAX_PARAMS) {
				r = ERR_LIMIT;
				goto out;
			}
			eq = i;
			while (eq < j && q.p[eq] != '=')
				eq++;
			params[np].ko = arena.len;
			r = add_requoted(&arena, q.p + i, eq - i);
			if (r)
				goto out;
			params[np].kn = arena.len - params[np].ko;
			params[np].vo = arena.len;
			if (eq < j)
				r = add_requoted(&arena, q.p + eq + 1,
						 j - eq - 1);
			if (r)
				goto out;
			params[np].vn = arena.len - params[np].vo;
			/* A skipped entry is overwritten by the next. */
			if (!skip_signature || params[np].kn != 15 ||
			    memcmp(arena.data + params[np].ko,
				   "X-Amz-Signature", 15) != 0)
				np++;
		}
		i = j + 1;
	}
	for (i = 0; i < np; i++) {
		params[i].k = arena.data + params[i].ko;
		params[i].v = arena.data + params[i].vo;
	}
	if (np > 1)
		qsort(params, np, sizeof(params[0]), param_cmp);
	for (i = 0; i < np && !r; i++) {
		if (i)
			r = buf_addch(b, '&');
		if (!r)
			r = buf_add(b, params[i].k, params[i].kn);
		if (!r)
			r = buf_addch(b, '=');
		if (!r)
			r = buf_add(b, params[i].v, params[i].vn);
	}
out:
	buf_release(&arena);
	return r;
}

/* Appends value trimmed, with each run of white space made one space. */
static int add_trimmed(struct buf *b, const char *v)
{
	int space = 0, any = 0, r;

	while (*v) {
		const char *s = v;

		if (is_ws(*v)) {
			while (is_ws(*v))
				v++;
			space = 1;
			continue;
		}
		while (*v && !is_ws(*v))
			v++;
		if (space && any) {
			r = buf_addch(b, ' ');
			if (r)
				return r;
		}
		r = buf_add(b, s, (size_t)(v - s));
		if (r)
			return r;
		space = 0;
		any = 1;
	}
	return 0;
}

/*
 * "name:value\n" for every signed header, in the list's (sorted) order;
 * repeated headers give their values in arrival order, joined by commas.
 * Returns ERR_NOTFOUND, with *missing set, when a signed header is absent.
 */
static int add_canonical_headers(struct buf *b,
				 const struct api_sigv4_request *req,
				 const struct sv4_signed *sl,
				 struct span *missing)
{
	size_t i, j;
	int r;

	for (i = 0; i < sl->n; i++) {
		int found = 0;

		r = buf_add(b, sl->name[i].p, sl->name[i].n);
		if (!r)
			r = buf_addch(b, ':');
		if (r)
			return r;
		for (j = 0; j < req->n_headers; j++) {
			const char *hn = req->headers[j].name;

			/* name_eq() stops at hn's NUL: no strlen() needed. */
			if (!hn || !name_eq(hn, sl->name[i].p, sl->name[i].n))
				continue;
			if (found) {
				r = buf_addch(b, ',');
				if (r)
					return r;
			}
			r = add_trimmed(b, header_value(&req->headers[j]));
			if (r)
				return r;
			found = 1;
		}
		if (!found) {
			*missing = sl->name[i];
			return ERR_NOTFOUND;
		}
		r = buf_addch(b, '\n');
		if (r)
			return r;
	}
	return 0;
}

/*
 * Splits a SignedHeaders list ("host;x-amz-date") into sl, whose names
 * point into list. Names must be lower case tokens in strictly ascending
 * order, as every signer writes them; returns a reason when they are not.
 */
static const char *parse_signed_list(const char *list, struct sv4_signed *sl)
{
	size_t i = 0, k, n = strlen(list);

	sl->n = 0;
	if (n == 0)
		return "SignedHeaders is empty";
	while (i <= n) {
		size_t j = i;

		while (j < n && list[j] != ';')
			j++;
		if (j == i)
			return "SignedHeaders has an empty name";
		if (j - i > SV4_MAX_HEADER_NAME)
			return "SignedHeaders has a name too long";
		if (sl->n == SV4_MAX_SIGNED)
			return "SignedHeaders has too many names";
		for (k = i; k < j; k++)
			if (!is_lower_tchar(list[k]))
				return "SignedHeaders names must be lower-case "
				       "header names";
		sl->name[sl->n].p = list + i;
		sl->name[sl->n].n = j - i;
		if (sl->n) {
			const struct span *a = &sl->name[sl->n - 1];
			const struct span *c = &sl->name[sl->n];
			size_t m = a->n < c->n ? a->n : c->n;
			int cmp = memcmp(a->p, c->p, m);

			if (cmp > 0 || (cmp == 0 && a->n >= c->n))
				return "SignedHeaders must be sorted and "
				       "without duplicates";
		}
		if (name_eq("authorization", list + i, j - i))
			return "SignedHeaders must not include Authorization";
		sl->n++;
		i = j + 1;
	}
	return NULL;
}

static int signed_has(const struct sv4_signed *sl, const char *name)
{
	size_t i;

	for (i = 0; i < sl->n; i++)
		if (name_eq(name, sl->name[i].p, sl->name[i].n))
			return 1;
	return 0;
}

/*
 * The payload hash line: the x-amz-content-sha256 header when there is one
 * (it must be UNSIGNED-PAYLOAD or the body's real hash), else the body's
 * SHA-256. Returns 0; -1 with *why for a bad header; ERR_INTERNAL.
 */
static int payload_hash(struct sv4_crypto *c,
			const struct api_sigv4_request *req, char out[65],
			const char **why, int *is_mismatch)
{
	const struct api_header *h;
	char given[65];
	size_t count, i;
	int r;

	*is_mismatch = 0;
	r = sha256_hex(c, req->body, req->body ? req->body_len : 0, out);
	if (r)
		return r;
	h = find_header(req, "x-amz-content-sha256", &count);
	if (!h)
		return 0;
	if (count > 1) {
		*why = "Multiple x-amz-content-sha256 headers";
		return -1;
	}
	if (copy_trimmed(given, 64, header_value(h)) == 0 &&
	    strcmp(given, SV4_UNSIGNED) == 0) {
		memcpy(out, SV4_UNSIGNED, sizeof(SV4_UNSIGNED));
		return 0;
	}
	if (copy_trimmed(given, 64, header_value(h)) || strlen(given) != 64) {
		*why = "x-amz-content-sha256 must be UNSIGNED-PAYLOAD or the "
		       "hex SHA-256 of the body";
		return -1;
	}
	for (i = 0; i < 64; i++) {
		if (hex_digit(given[i]) < 0) {
			*why = "x-amz-content-sha256 must be UNSIGNED-PAYLOAD "
			       "or the hex SHA-256 of the body";
			return -1;
		}
		if (lower(given[i]) != out[i]) {
			*is_mismatch = 1;
			*why = "The provided 'x-amz-content-sha256' header "
			       "does not match what was computed.";
			return -1;
		}
	}
	/* botocore signs the header's value as sent, so do we. */
	memcpy(out, given, 65);
	return 0;
}

/*
 * Builds the canonical request and the string to sign, and computes the
 * signature. Returns 0; ERR_NOTFOUND with *missing for an absent signed
 * header; ERR_TOOBIG / ERR_LIMIT when the request is too large; ERR_INVALID
 * for a secret too long; ERR_INTERNAL.
 */
static int compute(struct sv4_crypto *c, const struct api_sigv4_request *req,
		   const char *secret, const char *amz_date, const char *region,
		   const char *service, const struct sv4_signed *sl,
		   const char *signed_list, const char *payload,
		   int skip_signature, char out_hex[65], struct span *missing,
		   unsigned char *key_out)
{
	struct buf cr = BUF_INIT_MAX(SV4_MAX_CANON);
	struct buf sts = BUF_INIT_MAX(1024);
	struct span path, query;
	char cr_hash[65], date8[9];
	const char *uri = req->raw_uri && req->raw_uri[0] ? req->raw_uri : "/";
	int r;

	if (strlen(uri) > SV4_MAX_URI)
		return ERR_TOOBIG;
	split_uri(uri, &path, &query);
	r = add_strs(&cr, req->method ? req->method : "", "\n", NULL);
	/* S3 signs the path exactly as sent: no dot segments removed, no
	 * second encoding (botocore's S3SigV4Auth). */
	if (!r && strcmp(service, "s3") == 0)
		r = path.n ? buf_add(&cr, path.p, path.n) : buf_addch(&cr, '/');
	else if (!r)
		r = add_canonical_uri(&cr, path.p, path.n);
	if (!r)
		r = buf_addch(&cr, '\n');
	if (!r)
		r = add_canonical_query(&cr, query, skip_signature);
	if (!r)
		r = buf_addch(&cr, '\n');
	if (!r)
		r = add_canonical_headers(&cr, req, sl, missing);
	if (!r)
		r = add_strs(&cr, "\n", signed_list, "\n", payload, NULL);
	if (!r)
		r = sha256_hex(c, cr.data, cr.len, cr_hash);
	memcpy(date8, amz_date, 8);
	date8[8] = '\0';
	if (!r)
		r = add_strs(&sts, SV4_ALGORITHM "\n", amz_date, "\n", date8,
			     "/", region, "/", service, "/" SV4_TERMINATOR "\n",
			     cr_hash, NULL);
	if (!r)
		r = derive_signature(c, secret, amz_date, region, service,
				     sts.data, sts.len, out_hex, key_out);
	buf_release(&cr);
	buf_release(&sts);
	return r;
}

static int valid_scope_part(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > SV4_MAX_SCOPE_PART)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || is_digit(s[i]) ||
		      s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return 0;
	return 1;
}

static void sign_error(struct buf *err, int r, struct span missing)
{
	if (r == ERR_NOTFOUND)
		add_err(err,
			"sigv4: signed header '%.*s' is not in the request",
			(int)missing.n, missing.p);
	else if (r == ERR_TOOBIG || r == ERR_LIMIT)
		add_err(err, "sigv4: request too large to sign");
	else if (r == ERR_INVALID)
		add_err(err, "sigv4: secret too long");
	else if (r)
		add_err(err, "sigv4: %s", err_str(r));
}

int api_sigv4_sign(const struct api_sigv4_request *req, const char *secret,
		   const char *amz_date, const char *region,
		   const char *service, const char *signed_headers,
		   const char *payload_hash_in, char out_hex[65],
		   struct buf *err)
{
	struct sv4_crypto c;
	struct sv4_signed sl;
	struct span missing = { "", 0 };
	char payload[65], list[SV4_MAX_SIGNED_LIST + 1];
	const char *why = NULL;
	int64_t ms;
	int r = 0, is_mismatch;

	out_hex[0] = '\0';
	if (!req || !req->method || !secret || !amz_date || !region ||
	    !service || !signed_headers)
		why = "missing argument";
	else if (parse_amz_date(amz_date, &ms))
		why = "the date is not YYYYMMDDTHHMMSSZ";
	else if (!valid_scope_part(region) || !valid_scope_part(service))
		why = "bad region or service";
	else if (copy_span(list, SV4_MAX_SIGNED_LIST, signed_headers,
			   strlen(signed_headers)))
		why = "signed header list too long";
	else if (payload_hash_in && copy_span(payload, 64, payload_hash_in,
					      strlen(payload_hash_in)))
		why = "payload hash too long";
	else
		why = parse_signed_list(list, &sl);
	if (why) {
		add_err(err, "sigv4: %s", why);
		return ERR_INVALID;
	}
	if (crypto_open(&c)) {
		add_err(err, "sigv4: OpenSSL has no HMAC-SHA256");
		return ERR_INTERNAL;
	}
	if (!payload_hash_in) {
		r = payload_hash(&c, req, payload, &why, &is_mismatch);
		if (r)
			add_err(err, "sigv4: %s",
				r == ERR_INTERNAL ? "sha256 failed" : why);
	}
	/*
	 * X-Amz-Signature is left out of the query, so that the signature of
	 * a presigned URL can be recomputed from the URL itself.
	 */
	if (!r) {
		r = compute(&c, req, secret, amz_date, region, service, &sl,
			    list, payload, 1, out_hex, &missing, NULL);
		sign_error(err, r, missing);
	}
	crypto_close(&c);
	if (r) {
		out_hex[0] = '\0';
		return r == ERR_INTERNAL ? r : ERR_INVALID;
	}
	return 0;
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
static int next_auth_pair(const char *v, size_t n, size_t *i, struct span *key,
			  struct span *val)
{
	size_t j = *i;

	while (j < n && (is_ws(v[j]) || v[j] == ','))
		j++;
	*i = j;
	if (j == n)
		return 0;
	key->p = v + j;
	while (j < n && v[j] != '=' && v[j] != ',' && !is_ws(v[j]))
		j++;
	key->n = (size_t)(v + j - key->p);
	*i = j;
	if (j == n || v[j] != '=')
		return -1;
	val->p = v + ++j;
	while (j < n && v[j] != ',' && !is_ws(v[j]))
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
	struct span key, val;
	int r;

	if (n > SV4_MAX_AUTHZ)
		return incomplete(res, "Authorization header is too long.");
	while (i < n && is_ws(v[i]))
		i++;
	if (n - i < sizeof(algo) - 1 ||
	    memcmp(v + i, algo, sizeof(algo) - 1) != 0 ||
	    (i + sizeof(algo) - 1 < n && !is_ws(v[i + sizeof(algo) - 1])))
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
		if (copy_span((char *)a + auth_params[p].offset,
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
static int query_param(struct span q, const char *name, char *dst, size_t cap,
		       int *found)
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
				char c =
					decode_at(q.p + eq + 1, j - eq - 1, &k);

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

static int parse_presigned(struct span q, struct sv4_auth *a,
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
	if (strlen(a->scope_date) != 8 || digits_at(a->scope_date, 8, &ymd))
		return incomplete(res, "Credential should be scoped to a "
				       "valid date (YYYYMMDD).");
	if (!valid_scope_part(a->region))
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
		if (parse_amz_date(a->date, ms))
			return incomplete(res, "X-Amz-Date must be in ISO-8601 "
					       "basic format "
					       "(YYYYMMDDTHHMMSSZ).");
		memcpy(amz_date, a->date, 17);
		return 0;
	}
	h = find_header(req, "x-amz-date", &count);
	if (h) {
		if (count > 1)
			return incomplete(res, "Multiple X-Amz-Date headers.");
		if (copy_trimmed(v, SV4_MAX_DATE, header_value(h)) ||
		    parse_amz_date(v, ms))
			return incomplete(res, "X-Amz-Date must be in ISO-8601 "
					       "basic format "
					       "(YYYYMMDDTHHMMSSZ).");
		memcpy(amz_date, v, 17);
		return 0;
	}
	h = find_header(req, "date", &count);
	if (!h)
		return incomplete(res, "Authorization header requires "
				       "existence of either a 'X-Amz-Date' or "
				       "a 'Date' header.");
	if (count > 1 || copy_trimmed(v, SV4_MAX_DATE, header_value(h)) ||
	    parse_http_date(v, ms))
		return incomplete(res, "Date header must be in RFC 1123 form "
				       "(Sun, 30 Aug 2015 12:36:00 GMT).");
	format_amz_date(*ms, amz_date);
	return 0;
}

/* The skew error, in AWS's words. Formatting waits until it is needed. */
static int skew_fail(struct sv4_result *res, const char *amz_date,
		     int64_t now_ms, int future)
{
	char now_s[17], edge_s[17];

	format_amz_date(now_ms, now_s);
	if (future) {
		format_amz_date(now_ms + SV4_SKEW_MS, edge_s);
		return fail(res, T_EXPIRED, 400,
			    "Signature not yet current: %s is still later "
			    "than %s (%s + 15 min.)",
			    amz_date, edge_s, now_s);
	}
	format_amz_date(now_ms - SV4_SKEW_MS, edge_s);
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
	    digits_at(a->expires, strlen(a->expires), &e) || e < 1 ||
	    e > SV4_MAX_EXPIRES)
		return incomplete(res, "X-Amz-Expires must be between 1 and "
				       "604800 seconds.");
	if (now_ms > req_ms + (int64_t)e * 1000) {
		format_amz_date(now_ms, now_s);
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

	h = find_header(req, "x-amz-content-sha256", &count);
	if (!h && a->presigned) {
		memcpy(out, SV4_UNSIGNED, sizeof(SV4_UNSIGNED));
		return 0;
	}
	if (!h)
		return fail(res, "InvalidRequest", 400,
			    "Missing required header for this request: "
			    "x-amz-content-sha256");
	if (count > 1 || copy_trimmed(out, 71, header_value(h)))
		return fail(res, "InvalidArgument", 400,
			    "x-amz-content-sha256 is repeated or too long");
	for (i = 0; i < ARRAY_SIZE(s3_payloads); i++)
		if (strcmp(out, s3_payloads[i]) == 0)
			return 0;
	if (strlen(out) == 64 && is_lower_hex(out, 64))
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
	struct span missing = { "", 0 };
	char payload[72], want[65];
	const char *why = NULL;
	int r, is_mismatch;

	if (a->s3) {
		r = s3_payload(req, a, payload, res);
		if (r)
			return r;
	} else {
		r = payload_hash(c, req, payload, &why, &is_mismatch);
		if (r == ERR_INTERNAL)
			return fail(res, T_INTERNAL, 500,
				    "sigv4: sha256 failed");
		if (r)
			return is_mismatch ?
				       fail(res, T_MISMATCH, 403, "%s", why) :
				       incomplete(res, why);
	}
	r = compute(c, req, secret, amz_date, a->region, a->service, sl,
		    a->signed_headers, payload, a->presigned, want, &missing,
		    a->s3 ? a->s3->key : NULL);
	if (r == ERR_NOTFOUND)
		return mismatch(res);
	if (r == ERR_TOOBIG || r == ERR_LIMIT)
		return incomplete(res, "Request is too large to verify.");
	if (r == ERR_INVALID)
		return mismatch(res); /* a secret we could never match */
	if (r)
		return fail(res, T_INTERNAL, 500, "sigv4: %s", err_str(r));
	if (strlen(a->signature) != 64 || !is_lower_hex(a->signature, 64) ||
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
		if (lower(n[i]) != p[i])
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
		if (!is_amz(hn) && !name_eq(hn, "content-md5", 11))
			continue;
		if (name_eq(hn, "x-amz-content-sha256", 20))
			continue;
		if (signed_has(sl, hn))
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
	struct span path, query;
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
	split_uri(uri, &path, &query);

	authz = find_header(req, "authorization", &count);
	if (count > 1)
		return incomplete(res, "Multiple Authorization headers.");
	if (authz) {
		r = parse_authorization(header_value(authz), a, res);
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
	why = parse_signed_list(a->signed_headers, &sl);
	if (why)
		return incomplete(res, why);
	if (!signed_has(&sl, "host"))
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
	if (crypto_open(&c))
		return fail(res, T_INTERNAL, 500,
			    "sigv4: OpenSSL has no HMAC-SHA256");
	r = check_signature(&c, req, secret, amz_date, a, &sl, res);
	crypto_close(&c);
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

	if (crypto_open(&c))
		return ERR_INTERNAL;
	r = add_strs(&sts,
		     trailer ? "AWS4-HMAC-SHA256-TRAILER\n" :
			       "AWS4-HMAC-SHA256-PAYLOAD\n",
		     s3->amz_date, "\n", s3->scope, "\n", prev_sig, "\n", NULL);
	/* A trailer's string to sign has no empty-hash line. */
	if (!r && !trailer)
		r = add_strs(&sts, empty, "\n", NULL);
	if (!r)
		r = add_strs(&sts, hash_hex, NULL);
	if (!r)
		r = hmac256(&c, s3->key, 32, sts.data, sts.len, sig);
	if (!r)
		to_hex(sig, 32, out_hex);
	crypto_close(&c);
	buf_release(&sts);
	return r ? ERR_INTERNAL : 0;
}
