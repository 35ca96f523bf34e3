/*
 * Object metadata in an extended attribute, and the parts of multipart
 * uploads (storage/s3d/meta.h).
 */
#define LOG_TAG "s3"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "storage/s3d/meta.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define META_BUF 8192

void s3d__obj_release(struct s3d_obj *o)
{
	if (!o)
		return;
	json_decref(o->headers);
	json_decref(o->checksums);
	o->headers = o->checksums = NULL;
}

static int64_t st_mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

/* The MD5 of fd's bytes, read from the start. */
static int md5_of_fd(int fd, char out[33], struct buf *err)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char d[16];
	char *b = xmalloc(1 << 20);
	off_t off = 0;
	ssize_t n;
	int ret = 0;

	if (!md || !EVP_DigestInit_ex(md, EVP_md5(), NULL))
		ret = ERR_INTERNAL;
	while (!ret && (n = pread(fd, b, 1 << 20, off)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			(void)buf_addf(err, "read: %s", strerror(errno));
			ret = ERR_IO;
			break;
		}
		off += n;
		if (!EVP_DigestUpdate(md, b, (size_t)n))
			ret = ERR_INTERNAL;
	}
	if (!ret && !EVP_DigestFinal_ex(md, d, NULL))
		ret = ERR_INTERNAL;
	if (!ret)
		stor_hex(d, 16, out);
	EVP_MD_CTX_free(md);
	free(b);
	return ret;
}

/* Fills o from the attribute's JSON when it describes st; 0 when it does. */
static int meta_parse(const char *text, size_t len, const struct stat *st,
		      struct s3d_obj *o)
{
	json_t *root = json_loadb(text, len, 0, NULL);
	json_int_t size = -1, mtime = -1;
	const char *etag = NULL;
	json_t *headers = NULL, *checksums = NULL;
	int ok;

	if (!root)
		return -1;
	ok = !json_unpack(root, "{s:s, s:I, s:I, s?o, s?o}", "etag", &etag,
			  "size", &size, "mtime_ns", &mtime, "headers",
			  &headers, "checksums", &checksums) &&
	     size == st->st_size && mtime == st_mtime_ns(st) &&
	     strlen(etag) < sizeof(o->etag) &&
	     (!headers || json_is_object(headers)) &&
	     (!checksums || json_is_object(checksums));
	if (ok) {
		snprintf(o->etag, sizeof(o->etag), "%s", etag);
		o->headers = json_incref(headers);
		o->checksums = json_incref(checksums);
	}
	json_decref(root);
	return ok ? 0 : -1;
}

int s3d__meta_load(int fd, const struct stat *st, struct s3d_obj *o,
		   struct buf *err)
{
	char *text = xmalloc(META_BUF);
	ssize_t n;
	int ret = 0;

	memset(o, 0, sizeof(*o));
	o->size = (int64_t)st->st_size;
	o->mtime_ms = st_mtime_ns(st) / 1000000;
	n = fgetxattr(fd, S3D_META_XATTR, text, META_BUF);
	if (n > 0 && !meta_parse(text, (size_t)n, st, o))
		goto out;
	/* Written by a path that keeps no metadata: work the ETag out once. */
	ret = md5_of_fd(fd, o->etag, err);
	if (!ret)
		(void)s3d__meta_store(fd, o, err), buf_reset(err);
out:
	free(text);
	return ret;
}

int s3d__meta_store(int fd, const struct s3d_obj *o, struct buf *err)
{
	struct stat st;
	json_t *root;
	char *text;
	int ret = 0;

	if (fstat(fd, &st)) {
		(void)buf_addf(err, "fstat: %s", strerror(errno));
		return ERR_IO;
	}
	root = json_pack("{s:s, s:I, s:I}", "etag", o->etag, "size",
			 (json_int_t)st.st_size, "mtime_ns",
			 (json_int_t)st_mtime_ns(&st));
	if (root && o->headers && json_object_size(o->headers))
		json_object_set(root, "headers", o->headers);
	if (root && o->checksums && json_object_size(o->checksums))
		json_object_set(root, "checksums", o->checksums);
	text = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	if (!text)
		return ERR_NOMEM;
	if (strlen(text) > META_BUF) {
		(void)buf_addf(err, "object metadata is larger than %d bytes",
			       META_BUF);
		ret = ERR_TOOBIG;
	} else if (fsetxattr(fd, S3D_META_XATTR, text, strlen(text), 0)) {
		(void)buf_addf(err,
			       "cannot keep object metadata (extended "
			       "attribute %s): %s",
			       S3D_META_XATTR, strerror(errno));
		ret = ERR_IO;
	}
	free(text);
	return ret;
}

void s3d__upload_owner_tag(const char *owner, char out[S3D_OWNER_TAG + 1])
{
	unsigned char d[SHA256_DIGEST_LENGTH];

	SHA256((const unsigned char *)owner, strlen(owner), d);
	stor_hex(d, S3D_OWNER_TAG / 2, out);
	out[S3D_OWNER_TAG] = '\0';
}

int s3d__upload_id(const char *owner, char out[33])
{
	unsigned char raw[(32 - S3D_OWNER_TAG) / 2];

	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return ERR_INTERNAL;
	s3d__upload_owner_tag(owner, out);
	stor_hex(raw, sizeof(raw), out + S3D_OWNER_TAG);
	return 0;
}

int s3d__upload_id_ok(const char *id)
{
	size_t i;

	if (!id || strlen(id) != 32)
		return 0;
	for (i = 0; i < 32; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		      (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	return 1;
}

static int part_cmp(const void *a, const void *b)
{
	const struct s3d_part *x = a, *y = b;

	return (x->number > y->number) - (x->number < y->number);
}

/* The part number a file name spells ("00042"), or 0. */
static int part_number(const char *name)
{
	char *end;
	long n;

	if (strlen(name) != 5 || name[0] < '0' || name[0] > '9')
		return 0;
	n = strtol(name, &end, 10);
	return *end || n < 1 || n > S3D_MAX_PARTS ? 0 : (int)n;
}

int s3d__parts_list(const char *dir, struct s3d_part **parts, size_t *n,
		    struct buf *err)
{
	size_t alloc = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	*parts = NULL;
	*n = 0;
	if (!d) {
		(void)buf_addf(err, "cannot list upload '%s': %s", dir,
			       strerror(errno));
		return errno == ENOENT ? ERR_NOTFOUND : ERR_IO;
	}
	while ((de = readdir(d))) {
		int num = part_number(de->d_name), fd;
		struct s3d_part *p;
		struct s3d_obj o;
		struct stat st;

		if (!num)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) || s3d__meta_load(fd, &st, &o, err)) {
			close(fd);
			continue;
		}
		close(fd);
		ALLOC_GROW(*parts, *n + 1, alloc);
		p = &(*parts)[(*n)++];
		p->number = num;
		p->size = o.size;
		p->mtime_ms = o.mtime_ms;
		snprintf(p->md5, sizeof(p->md5), "%.32s", o.etag);
		s3d__obj_release(&o);
	}
	closedir(d);
	buf_reset(err);
	if (*n)
		qsort(*parts, *n, sizeof(**parts), part_cmp);
	return 0;
}
