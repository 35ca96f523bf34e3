/*
 * The SigV4 canonical request and signing (api/sigv4.h): canonical URI,
 * query and headers as botocore (auth.py, SigV4Auth) builds them, the
 * SignedHeaders list, the payload hash and the signature.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>

#include "api/sigv4.h"
#include "api/sigv4_int.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/hex.h"
#include "common/xalloc.h"
#include "common/banned.h"

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

/* ---- request pieces ---- */

/* Finds the header called name; *count gets how many there are. */
const struct api_header *api__sv4_find_header(const struct api_sigv4_request *r,
					      const char *name, size_t *count)
{
	const struct api_header *first = NULL;
	size_t i, c = 0;

	for (i = 0; i < r->n_headers; i++) {
		const char *hn = r->headers[i].name;

		if (hn && api__sv4_lower(hn[0]) == name[0] &&
		    api__sv4_name_eq(hn, name, strlen(name))) {
			if (!first)
				first = &r->headers[i];
			c++;
		}
	}
	if (count)
		*count = c;
	return first;
}

const char *api__sv4_header_value(const struct api_header *h)
{
	return h && h->value ? h->value : "";
}

/* Trims s into out (cap+1 bytes); -1 if the trimmed value is too long. */
int api__sv4_copy_trimmed(char *out, size_t cap, const char *s)
{
	size_t n = strlen(s);

	while (n && api__sv4_is_ws(*s)) {
		s++;
		n--;
	}
	while (n && api__sv4_is_ws(s[n - 1]))
		n--;
	return api__sv4_copy_span(out, cap, s, n);
}

void api__sv4_split_uri(const char *uri, struct sv4_span *path,
			struct sv4_span *query)
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
int api__sv4_add_strs(struct buf *b, ...)
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

		need += (api__sv4_is_unreserved(c) ||
			 (keep_slash && c == '/')) ?
				1 :
				3;
	}
	r = buf_grow(b, need);
	if (r)
		return r;
	o = b->data + b->len;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (api__sv4_is_unreserved(c) || (keep_slash && c == '/')) {
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
char api__sv4_decode_at(const char *s, size_t n, size_t *i)
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
		char c = api__sv4_decode_at(s, n, &i);

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
static int add_canonical_query(struct buf *b, struct sv4_span q,
			       int skip_signature)
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

		if (api__sv4_is_ws(*v)) {
			while (api__sv4_is_ws(*v))
				v++;
			space = 1;
			continue;
		}
		while (*v && !api__sv4_is_ws(*v))
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
				 struct sv4_span *missing)
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

			/* api__sv4_name_eq() stops at hn's NUL: no strlen()
			 * needed. */
			if (!hn ||
			    !api__sv4_name_eq(hn, sl->name[i].p, sl->name[i].n))
				continue;
			if (found) {
				r = buf_addch(b, ',');
				if (r)
					return r;
			}
			r = add_trimmed(
				b, api__sv4_header_value(&req->headers[j]));
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
const char *api__sv4_parse_signed_list(const char *list, struct sv4_signed *sl)
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
			if (!api__sv4_is_lower_tchar(list[k]))
				return "SignedHeaders names must be lower-case "
				       "header names";
		sl->name[sl->n].p = list + i;
		sl->name[sl->n].n = j - i;
		if (sl->n) {
			const struct sv4_span *a = &sl->name[sl->n - 1];
			const struct sv4_span *c = &sl->name[sl->n];
			size_t m = a->n < c->n ? a->n : c->n;
			int cmp = memcmp(a->p, c->p, m);

			if (cmp > 0 || (cmp == 0 && a->n >= c->n))
				return "SignedHeaders must be sorted and "
				       "without duplicates";
		}
		if (api__sv4_name_eq("authorization", list + i, j - i))
			return "SignedHeaders must not include Authorization";
		sl->n++;
		i = j + 1;
	}
	return NULL;
}

int api__sv4_signed_has(const struct sv4_signed *sl, const char *name)
{
	size_t i;

	for (i = 0; i < sl->n; i++)
		if (api__sv4_name_eq(name, sl->name[i].p, sl->name[i].n))
			return 1;
	return 0;
}

/*
 * The payload hash line: the x-amz-content-sha256 header when there is one
 * (it must be UNSIGNED-PAYLOAD or the body's real hash), else the body's
 * SHA-256. Returns 0; -1 with *why for a bad header; ERR_INTERNAL.
 */
int api__sv4_payload_hash(struct sv4_crypto *c,
			  const struct api_sigv4_request *req, char out[65],
			  const char **why, int *is_mismatch)
{
	const struct api_header *h;
	char given[65];
	size_t count, i;
	int r;

	*is_mismatch = 0;
	r = api__sv4_sha256_hex(c, req->body, req->body ? req->body_len : 0,
				out);
	if (r)
		return r;
	h = api__sv4_find_header(req, "x-amz-content-sha256", &count);
	if (!h)
		return 0;
	if (count > 1) {
		*why = "Multiple x-amz-content-sha256 headers";
		return -1;
	}
	if (api__sv4_copy_trimmed(given, 64, api__sv4_header_value(h)) == 0 &&
	    strcmp(given, SV4_UNSIGNED) == 0) {
		memcpy(out, SV4_UNSIGNED, sizeof(SV4_UNSIGNED));
		return 0;
	}
	if (api__sv4_copy_trimmed(given, 64, api__sv4_header_value(h)) ||
	    strlen(given) != 64) {
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
		if (api__sv4_lower(given[i]) != out[i]) {
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
int api__sv4_compute(struct sv4_crypto *c, const struct api_sigv4_request *req,
		     const char *secret, const char *amz_date,
		     const char *region, const char *service,
		     const struct sv4_signed *sl, const char *signed_list,
		     const char *payload, int skip_signature, char out_hex[65],
		     struct sv4_span *missing, unsigned char *key_out)
{
	struct buf cr = BUF_INIT_MAX(SV4_MAX_CANON);
	struct buf sts = BUF_INIT_MAX(1024);
	struct sv4_span path, query;
	char cr_hash[65], date8[9];
	const char *uri = req->raw_uri && req->raw_uri[0] ? req->raw_uri : "/";
	int r;

	if (strlen(uri) > SV4_MAX_URI)
		return ERR_TOOBIG;
	api__sv4_split_uri(uri, &path, &query);
	r = api__sv4_add_strs(&cr, req->method ? req->method : "", "\n", NULL);
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
		r = api__sv4_add_strs(&cr, "\n", signed_list, "\n", payload,
				      NULL);
	if (!r)
		r = api__sv4_sha256_hex(c, cr.data, cr.len, cr_hash);
	memcpy(date8, amz_date, 8);
	date8[8] = '\0';
	if (!r)
		r = api__sv4_add_strs(&sts, SV4_ALGORITHM "\n", amz_date, "\n",
				      date8, "/", region, "/", service,
				      "/" SV4_TERMINATOR "\n", cr_hash, NULL);
	if (!r)
		r = api__sv4_derive_signature(c, secret, amz_date, region,
					      service, sts.data, sts.len,
					      out_hex, key_out);
	buf_release(&cr);
	buf_release(&sts);
	return r;
}

int api__sv4_valid_scope_part(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > SV4_MAX_SCOPE_PART)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || api__sv4_is_digit(s[i]) ||
		      s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return 0;
	return 1;
}

static void sign_error(struct buf *err, int r, struct sv4_span missing)
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
	struct sv4_span missing = { "", 0 };
	char payload[65], list[SV4_MAX_SIGNED_LIST + 1];
	const char *why = NULL;
	int64_t ms;
	int r = 0, is_mismatch;

	out_hex[0] = '\0';
	if (!req || !req->method || !secret || !amz_date || !region ||
	    !service || !signed_headers)
		why = "missing argument";
	else if (api__sv4_parse_amz_date(amz_date, &ms))
		why = "the date is not YYYYMMDDTHHMMSSZ";
	else if (!api__sv4_valid_scope_part(region) ||
		 !api__sv4_valid_scope_part(service))
		why = "bad region or service";
	else if (api__sv4_copy_span(list, SV4_MAX_SIGNED_LIST, signed_headers,
				    strlen(signed_headers)))
		why = "signed header list too long";
	else if (payload_hash_in &&
		 api__sv4_copy_span(payload, 64, payload_hash_in,
				    strlen(payload_hash_in)))
		why = "payload hash too long";
	else
		why = api__sv4_parse_signed_list(list, &sl);
	if (why) {
		add_err(err, "sigv4: %s", why);
		return ERR_INVALID;
	}
	if (api__sv4_crypto_open(&c)) {
		add_err(err, "sigv4: OpenSSL has no HMAC-SHA256");
		return ERR_INTERNAL;
	}
	if (!payload_hash_in) {
		r = api__sv4_payload_hash(&c, req, payload, &why, &is_mismatch);
		if (r)
			add_err(err, "sigv4: %s",
				r == ERR_INTERNAL ? "sha256 failed" : why);
	}
	/*
	 * X-Amz-Signature is left out of the query, so that the signature of
	 * a presigned URL can be recomputed from the URL itself.
	 */
	if (!r) {
		r = api__sv4_compute(&c, req, secret, amz_date, region, service,
				     &sl, list, payload, 1, out_hex, &missing,
				     NULL);
		sign_error(err, r, missing);
	}
	api__sv4_crypto_close(&c);
	if (r) {
		out_hex[0] = '\0';
		return r == ERR_INTERNAL ? r : ERR_INVALID;
	}
	return 0;
}
