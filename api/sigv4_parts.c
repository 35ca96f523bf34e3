/*
 * The pieces SigV4 is made of (api/sigv4_int.h): character classes,
 * SHA-256 and HMAC through OpenSSL, and the dates of requests.
 */
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

#include "api/names.h"
#include "api/sigv4.h"
#include "api/sigv4_int.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/hex.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* ---- characters ---- */

int api__sv4_is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	       c == '\f';
}

int api__sv4_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int api__sv4_is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
	       c == '~';
}

/* RFC 7230 tchar, lower case only: what a SignedHeaders name may hold. */
int api__sv4_is_lower_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

char api__sv4_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive (ASCII) comparison of a NUL-terminated s with a span. */
int api__sv4_name_eq(const char *s, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == '\0' ||
		    api__sv4_lower(s[i]) != api__sv4_lower(p[i]))
			return 0;
	return s[n] == '\0';
}

int api__sv4_is_lower_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!api__sv4_is_digit(s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return 0;
	return 1;
}

void api__sv4_to_hex(const unsigned char *in, size_t n, char *out)
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
int api__sv4_copy_span(char *dst, size_t cap, const char *p, size_t n)
{
	if (n > cap)
		return -1;
	memcpy(dst, p, n);
	dst[n] = '\0';
	return 0;
}

/* ---- crypto: OpenSSL only ---- */

void api__sv4_crypto_close(struct sv4_crypto *c)
{
	EVP_MAC_CTX_free(c->hmac);
	EVP_MAC_free(c->mac);
	EVP_MD_CTX_free(c->md);
	EVP_MD_free(c->sha256);
	memset(c, 0, sizeof(*c));
}

int api__sv4_crypto_open(struct sv4_crypto *c)
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
		api__sv4_crypto_close(c);
		return ERR_INTERNAL;
	}
	return 0;
}

int api__sv4_sha256_hex(struct sv4_crypto *c, const void *data, size_t n,
			char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (!EVP_DigestInit_ex(c->md, c->sha256, NULL) ||
	    !EVP_DigestUpdate(c->md, n ? data : "", n) ||
	    !EVP_DigestFinal_ex(c->md, md, &len) || len != 32)
		return ERR_INTERNAL;
	api__sv4_to_hex(md, 32, out);
	return 0;
}

/* out may be key: the key is copied in before out is written. */
int api__sv4_hmac256(struct sv4_crypto *c, const void *key, size_t key_len,
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
	r = api__sv4_hmac256(c, kbuf, 4 + slen, date8, 8, k);
	if (!r)
		r = api__sv4_hmac256(c, k, 32, region, strlen(region), k);
	if (!r)
		r = api__sv4_hmac256(c, k, 32, service, strlen(service), k);
	if (!r)
		r = api__sv4_hmac256(c, k, 32, SV4_TERMINATOR,
				     strlen(SV4_TERMINATOR), k);
	OPENSSL_cleanse(kbuf, 4 + slen);
	return r;
}

/* signature = HMAC(signing key, string_to_sign), in hex; key_out (may be
 * NULL) receives the signing key. */
int api__sv4_derive_signature(struct sv4_crypto *c, const char *secret,
			      const char *date8, const char *region,
			      const char *service, const char *sts,
			      size_t sts_len, char out_hex[65],
			      unsigned char *key_out)
{
	unsigned char k[32], sig[32];
	int r = derive_key(c, secret, date8, region, service, k);

	if (!r)
		r = api__sv4_hmac256(c, k, 32, sts, sts_len, sig);
	if (!r)
		api__sv4_to_hex(sig, 32, out_hex);
	if (!r && key_out)
		memcpy(key_out, k, 32);
	OPENSSL_cleanse(k, sizeof(k));
	return r;
}

/* ---- dates ---- */

int api__sv4_digits_at(const char *s, size_t n, int *out)
{
	size_t i;
	int v = 0;

	for (i = 0; i < n; i++) {
		if (!api__sv4_is_digit(s[i]))
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
int api__sv4_parse_amz_date(const char *s, int64_t *ms)
{
	int y, mo, d, h, mi, sec;

	if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z' ||
	    api__sv4_digits_at(s, 4, &y) || api__sv4_digits_at(s + 4, 2, &mo) ||
	    api__sv4_digits_at(s + 6, 2, &d) ||
	    api__sv4_digits_at(s + 9, 2, &h) ||
	    api__sv4_digits_at(s + 11, 2, &mi) ||
	    api__sv4_digits_at(s + 13, 2, &sec))
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
	if (api__sv4_digits_at(s, 2, h) || s[2] != ':' ||
	    api__sv4_digits_at(s + 3, 2, mi) || s[5] != ':' ||
	    api__sv4_digits_at(s + 6, 2, sec))
		return -1;
	return 0;
}

/* The names of UTC an HTTP date may end with. */
static int is_utc_zone(const char *zone)
{
	static const char *const zones[] = { "GMT", "UTC", "+0000", "-0000" };

	return api__name_find(zones, ARRAY_SIZE(zones), zone) >= 0;
}

/*
 * RFC 1123 "Sun, 30 Aug 2015 12:36:00 GMT". botocore writes the zone as
 * "-0000" (email.utils.formatdate), so the numeric UTC forms count too.
 */
int api__sv4_parse_http_date(const char *s, int64_t *ms)
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
	dl = api__sv4_is_digit(s[1]) ? 2 : 1;
	if (api__sv4_digits_at(s, dl, &d) || s[dl] != ' ')
		return -1;
	s += dl + 1;
	mo = name3_index(s, months, 12) + 1;
	if (!mo || s[3] != ' ' || api__sv4_digits_at(s + 4, 4, &y) ||
	    s[8] != ' ' || hms_at(s + 9, &h, &mi, &sec) || s[17] != ' ')
		return -1;
	if (!is_utc_zone(s + 18))
		return -1;
	return make_time(y, mo, d, h, mi, sec, ms);
}

void api__sv4_format_amz_date(int64_t ms, char out[17])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) ||
	    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		memcpy(out, "00000000T000000Z", 17);
}
