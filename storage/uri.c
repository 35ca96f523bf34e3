/*
 * URIs and keys: parsing "file://" and "s3://" URIs, the checks that keep
 * a key inside its root folder, and S3's percent-encoding.
 */
#include <stdlib.h>
#include <string.h>

#include "storage/storage.h"
#include "storage/stor_internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* S3's own limit on a key, in bytes. */
#define KEY_MAX 1024

int stor_bucket_check(const char *b, struct buf *err)
{
	size_t n = strlen(b), i;

	if (n < 3 || n > 63)
		goto bad;
	for (i = 0; i < n; i++) {
		char c = b[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-'))
			goto bad;
	}
	if (b[0] == '.' || b[0] == '-' || b[n - 1] == '.' || b[n - 1] == '-' ||
	    strstr(b, ".."))
		goto bad;
	return 0;
bad:
	(void)buf_addf(err,
		       "invalid bucket name '%s': expected 3-63 characters of "
		       "a-z, 0-9, '.' and '-'",
		       b);
	return ERR_INVALID;
}

static int bad_key(struct buf *err, const char *key, const char *why)
{
	(void)buf_addf(err, "invalid key '%.200s': %s", key, why);
	return ERR_INVALID;
}

int stor_key_check(const char *key, int is_prefix, struct buf *err)
{
	size_t n = strlen(key);
	const char *p, *c;

	if (n > KEY_MAX)
		return bad_key(err, key, "longer than 1024 bytes");
	if (!n)
		return is_prefix ? 0 : bad_key(err, key, "empty");
	if (key[0] == '/')
		return bad_key(err, key, "starts with '/'");
	if (key[n - 1] == '/' && !is_prefix)
		return bad_key(err, key, "ends with '/'");
	for (p = key; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return bad_key(err, key, "holds a control character");
	/* Walk the components between slashes. */
	for (c = key; *c; c = p + (*p == '/')) {
		size_t len;

		p = strchr(c, '/');
		if (!p)
			p = c + strlen(c);
		len = (size_t)(p - c);
		if (!len) {
			if (!*p)
				break;
			return bad_key(err, key, "has an empty component");
		}
		if ((len == 1 && c[0] == '.') ||
		    (len == 2 && c[0] == '.' && c[1] == '.'))
			return bad_key(err, key, "has a '.' or '..' component");
		if (len > 255)
			return bad_key(err, key,
				       "has a component over 255 "
				       "bytes");
		if (len >= strlen(STOR_TMP_PREFIX) &&
		    !memcmp(c, STOR_TMP_PREFIX, strlen(STOR_TMP_PREFIX)))
			return bad_key(err, key,
				       "uses the reserved prefix "
				       "'" STOR_TMP_PREFIX "'");
		if (!*p)
			break;
	}
	return 0;
}

int stor_uri_parse(const char *uri, struct stor_uri *out, struct buf *err)
{
	const char *rest, *slash;
	struct buf tmp = BUF_INIT;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!strncmp(uri, "file://", 7)) {
		rest = uri + 7;
		if (rest[0] != '/') {
			(void)buf_addf(err,
				       "invalid URI '%s': file:// needs an "
				       "absolute path (file:///dir/...)",
				       uri);
			return ERR_INVALID;
		}
		while (rest[0] == '/' && rest[1] == '/')
			rest++;
		ret = stor_key_check(rest + 1, 1, &tmp);
		if (ret) {
			(void)buf_addf(err, "invalid URI '%s': %s", uri,
				       tmp.data);
			buf_release(&tmp);
			return ret;
		}
		out->scheme = STOR_SCHEME_FILE;
		out->key = xstrdup(rest + 1);
		return 0;
	}
	if (strncmp(uri, "s3://", 5)) {
		(void)buf_addf(err,
			       "invalid URI '%s': expected s3://bucket/key or "
			       "file:///path",
			       uri);
		return ERR_INVALID;
	}
	rest = uri + 5;
	slash = strchr(rest, '/');
	out->scheme = STOR_SCHEME_S3;
	out->bucket = slash ? xstrndup(rest, (size_t)(slash - rest)) :
			      xstrdup(rest);
	out->key = xstrdup(slash ? slash + 1 : "");
	ret = stor_bucket_check(out->bucket, &tmp);
	if (!ret)
		ret = stor_key_check(out->key, 1, &tmp);
	if (ret) {
		(void)buf_addf(err, "invalid URI '%s': %s", uri, tmp.data);
		stor_uri_release(out);
	}
	buf_release(&tmp);
	return ret;
}

void stor_uri_release(struct stor_uri *u)
{
	FREE_AND_NULL(u->bucket);
	FREE_AND_NULL(u->key);
}

void stor_uri_encode(struct buf *out, const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~' || (c == '/' && keep_slash)) {
			(void)buf_addch(out, (char)c);
		} else {
			(void)buf_addch(out, '%');
			(void)buf_addch(out, hex[c >> 4]);
			(void)buf_addch(out, hex[c & 15]);
		}
	}
}
