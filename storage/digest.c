/*
 * Checksums with OpenSSL's EVP interface: MD5 (S3's ETag of a single-part
 * object, Content-MD5) and SHA-256 (x-amz-content-sha256, the blob
 * endpoint's integrity check).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "storage/stor_internal.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

void stor_hex(const unsigned char *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static EVP_MD_CTX *new_ctx(const EVP_MD *md)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (!c || EVP_DigestInit_ex(c, md, NULL) != 1)
		BUG("cannot start an OpenSSL digest");
	return c;
}

void stor_digest_init(struct stor_digest *d, int md5, int sha256)
{
	d->md5 = md5 ? new_ctx(EVP_md5()) : NULL;
	d->sha256 = sha256 ? new_ctx(EVP_sha256()) : NULL;
}

void stor_digest_reset(struct stor_digest *d)
{
	if (d->md5)
		EVP_DigestInit_ex(d->md5, EVP_md5(), NULL);
	if (d->sha256)
		EVP_DigestInit_ex(d->sha256, EVP_sha256(), NULL);
}

void stor_digest_update(struct stor_digest *d, const void *p, size_t n)
{
	if (d->md5)
		EVP_DigestUpdate(d->md5, p, n);
	if (d->sha256)
		EVP_DigestUpdate(d->sha256, p, n);
}

static void final_one(EVP_MD_CTX *c, char *out, unsigned char *raw)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	out[0] = '\0';
	if (!c)
		return;
	EVP_DigestFinal_ex(c, md, &n);
	stor_hex(md, n, out);
	if (raw)
		memcpy(raw, md, n);
}

void stor_digest_final(struct stor_digest *d, char md5[33], char sha256[65])
{
	char dummy[65];

	final_one(d->md5, md5 ? md5 : dummy, NULL);
	final_one(d->sha256, sha256 ? sha256 : dummy, NULL);
	stor_digest_release(d);
}

void stor_digest_release(struct stor_digest *d)
{
	EVP_MD_CTX_free(d->md5);
	EVP_MD_CTX_free(d->sha256);
	d->md5 = NULL;
	d->sha256 = NULL;
}

int stor_digest_fd(int fd, int64_t off, int64_t len, char md5[33],
		   unsigned char md5_raw[16], char sha256[65], struct buf *err)
{
	struct stor_digest d;
	char *b = xmalloc(STOR_IO_CHUNK);
	char dummy[65];
	int ret = 0;

	stor_digest_init(&d, md5 != NULL, sha256 != NULL);
	while (len > 0) {
		size_t want = len < STOR_IO_CHUNK ? (size_t)len : STOR_IO_CHUNK;
		ssize_t n = pread(fd, b, want, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			(void)buf_addf(err, "cannot read the file: %s",
				       n ? strerror(errno) : "it shrank");
			ret = ERR_IO;
			break;
		}
		stor_digest_update(&d, b, (size_t)n);
		off += n;
		len -= n;
	}
	if (!ret) {
		final_one(d.md5, md5 ? md5 : dummy, md5_raw);
		final_one(d.sha256, sha256 ? sha256 : dummy, NULL);
	}
	stor_digest_release(&d);
	free(b);
	return ret;
}

void stor__base64(const unsigned char *in, size_t n, struct buf *out)
{
	unsigned char tmp[4 * ((64 + 2) / 3) + 1];

	if (n > 64)
		BUG("base64 of more than 64 bytes");
	EVP_EncodeBlock(tmp, in, (int)n);
	(void)buf_adds(out, (const char *)tmp);
}
