/*
 * Objects handed between the members of a replicated controller
 * (storage/s3d/mirror.h).
 */
#define LOG_TAG "s3"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "storage/s3d/meta.h"
#include "storage/s3d/mirror.h"
#include "storage/fs.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

int s3d_mirror_split(const char *tail, char **bucket, char **key,
		     struct buf *err)
{
	const char *slash = strchr(tail, '/');

	*bucket = *key = NULL;
	if (!slash) {
		(void)buf_adds(err, "no key");
		return ERR_INVALID;
	}
	*bucket = xstrndup(tail, (size_t)(slash - tail));
	*key = xstrdup(slash + 1);
	if (!stor_bucket_check(*bucket, err) && !stor_key_check(*key, 0, err))
		return 0;
	free(*bucket);
	free(*key);
	*bucket = *key = NULL;
	return ERR_INVALID;
}

/* root/bucket/key into out, both names checked: 0 or ERR_INVALID. */
static int object_path(const char *root, const char *bucket, const char *key,
		       struct buf *out, struct buf *err)
{
	if (stor_bucket_check(bucket, err) ||
	    (key && stor_key_check(key, 0, err)))
		return ERR_INVALID;
	buf_reset(out);
	if (key)
		(void)buf_addf(out, "%s/%s/%s", root, bucket, key);
	else
		(void)buf_addf(out, "%s/%s", root, bucket);
	return 0;
}

int s3d_mirror_open(const char *root, const char *bucket, const char *key,
		    int *fd, int64_t *size, struct buf *meta, struct buf *err)
{
	struct buf p = BUF_INIT;
	struct s3d_obj o;
	struct stat st;
	char *text;
	ssize_t n;
	int ret = object_path(root, bucket, key, &p, err);

	*fd = -1;
	if (ret)
		goto out;
	*fd = open(p.data, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0 || fstat(*fd, &st) || !S_ISREG(st.st_mode)) {
		ret = ERR_NOTFOUND;
		goto out;
	}
	/* Metadata written where the file system keeps none is worked out
	 * (and kept) by the load. */
	ret = s3d__meta_load(*fd, &st, &o, err);
	s3d__obj_release(&o);
	if (ret)
		goto out;
	text = xmalloc(S3D_META_MAX * 4);
	n = fgetxattr(*fd, S3D_META_XATTR, text, S3D_META_MAX * 4);
	buf_reset(meta);
	if (n > 0)
		(void)buf_add(meta, text, (size_t)n);
	free(text);
	if (n <= 0) {
		(void)buf_addf(err, "%s: no metadata kept", p.data);
		ret = ERR_IO;
	}
	*size = (int64_t)st.st_size;
out:
	if (ret && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	buf_release(&p);
	return ret;
}

int s3d_mirror_meta_etag(const char *meta, char etag[S3D_ETAG_MAX])
{
	json_t *root = json_loads(meta, 0, NULL);
	const char *e = NULL;
	int ret = ERR_INVALID;

	if (root && !json_unpack(root, "{s:s}", "etag", &e) &&
	    strlen(e) < S3D_ETAG_MAX && strlen(e) >= 32) {
		memcpy(etag, e, strlen(e) + 1);
		ret = 0;
	}
	json_decref(root);
	return ret;
}

int s3d_mirror_etag(const char *root, const char *bucket, const char *key,
		    char etag[S3D_ETAG_MAX])
{
	struct buf p = BUF_INIT, err = BUF_INIT;
	struct s3d_obj o;
	struct stat st;
	int fd, ret = object_path(root, bucket, key, &p, &err);

	if (ret)
		goto out;
	fd = open(p.data, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ret = ERR_NOTFOUND;
	if (fd < 0)
		goto out;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) &&
	    !s3d__meta_load(fd, &st, &o, &err)) {
		memcpy(etag, o.etag, sizeof(o.etag));
		s3d__obj_release(&o);
		ret = 0;
	}
	close(fd);
out:
	buf_release(&p);
	buf_release(&err);
	return ret;
}

int s3d_mirror_bucket(const char *root, const char *bucket, struct buf *err)
{
	struct buf p = BUF_INIT;
	int ret = object_path(root, bucket, NULL, &p, err);

	if (!ret && mkdir(p.data, 0755) && errno != EEXIST) {
		(void)buf_addf(err, "mkdir %s: %s", p.data, strerror(errno));
		ret = ERR_IO;
	}
	buf_release(&p);
	return ret;
}

int s3d_mirror_remove(const char *root, const char *bucket, const char *key,
		      struct buf *err)
{
	struct buf p = BUF_INIT;
	int ret = object_path(root, bucket, NULL, &p, err);

	if (ret)
		goto out;
	if (!key) {
		(void)fs_remove_tree(p.data);
		goto out;
	}
	if (stor_key_check(key, 0, err))
		ret = ERR_INVALID;
	else
		ret = stor_fs_delete(p.data, key, 1, err);
out:
	buf_release(&p);
	return ret;
}

/* ------------------------------------------------------------ incoming */

struct s3d_mirror_in {
	struct s3d_obj o;
	int64_t mtime_ns;
	int64_t length, got;
	int fd;
	int failed;
	struct buf tmp, path, err;
	EVP_MD_CTX *md5;
};

/* Fills in->o and in->mtime_ns from meta; 0 or ERR_INVALID. */
static int in_meta(struct s3d_mirror_in *in, const char *meta)
{
	json_t *root = json_loads(meta, 0, NULL);
	json_t *headers = NULL, *checksums = NULL;
	json_int_t size = -1, mtime = -1;
	const char *etag = NULL;
	int ok;

	ok = root &&
	     !json_unpack(root, "{s:s, s:I, s:I, s?o, s?o}", "etag", &etag,
			  "size", &size, "mtime_ns", &mtime, "headers",
			  &headers, "checksums", &checksums) &&
	     strlen(etag) >= 32 && strlen(etag) < sizeof(in->o.etag) &&
	     size == in->length && mtime >= 0 &&
	     (!headers || json_is_object(headers)) &&
	     (!checksums || json_is_object(checksums));
	if (ok) {
		memcpy(in->o.etag, etag, strlen(etag) + 1);
		in->o.headers = json_incref(headers);
		in->o.checksums = json_incref(checksums);
		in->mtime_ns = (int64_t)mtime;
	}
	json_decref(root);
	return ok ? 0 : ERR_INVALID;
}

struct s3d_mirror_in *s3d_mirror_in_begin(const char *root, const char *bucket,
					  const char *key, const char *meta,
					  int64_t length, int64_t max,
					  struct buf *err)
{
	struct s3d_mirror_in *in = xcalloc(1, sizeof(*in));

	in->fd = -1;
	in->length = length;
	if (object_path(root, bucket, key, &in->path, err))
		goto fail;
	if (length < 0 || length > max) {
		(void)buf_addf(err, "length %lld is not within 0..%lld",
			       (long long)length, (long long)max);
		goto fail;
	}
	if (!meta || in_meta(in, meta)) {
		(void)buf_adds(err, "no valid object metadata");
		goto fail;
	}
	if (s3d_mirror_bucket(root, bucket, err) ||
	    stor_fs_tmp_open(in->path.data, &in->fd, &in->tmp, err))
		goto fail;
	in->md5 = EVP_MD_CTX_new();
	if (!in->md5 || !EVP_DigestInit_ex(in->md5, EVP_md5(), NULL)) {
		(void)buf_adds(err, "out of memory");
		goto fail;
	}
	return in;
fail:
	s3d_mirror_in_free(in);
	return NULL;
}

int s3d_mirror_in_data(struct s3d_mirror_in *in, const char *data, size_t n)
{
	size_t off = 0;

	if (in->failed)
		return -1;
	if (in->got + (int64_t)n > in->length) {
		(void)buf_adds(&in->err, "more bytes than announced");
		in->failed = 1;
		return -1;
	}
	(void)EVP_DigestUpdate(in->md5, data, n);
	while (off < n) {
		ssize_t w = write(in->fd, data + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			(void)buf_addf(&in->err, "write: %s", strerror(errno));
			in->failed = 1;
			return -1;
		}
		off += (size_t)w;
	}
	in->got += (int64_t)n;
	return 0;
}

/* Whether a single-part ETag (an MD5) matches the bytes received. */
static int md5_matches(struct s3d_mirror_in *in)
{
	unsigned char d[16];
	char hex[33];

	if (strchr(in->o.etag, '-'))
		return 1; /* a multipart ETag: not the MD5 of the whole */
	if (!EVP_DigestFinal_ex(in->md5, d, NULL))
		return 0;
	stor_hex(d, 16, hex);
	return !strcmp(hex, in->o.etag);
}

int s3d_mirror_in_finish(struct s3d_mirror_in *in, struct buf *err)
{
	struct timespec ts[2];
	int r;

	if (in->failed) {
		(void)buf_addf(err, "%s", in->err.data);
		return ERR_IO;
	}
	if (in->got != in->length || !md5_matches(in)) {
		(void)buf_addf(err, "%lld of %lld bytes, or not the ETag's",
			       (long long)in->got, (long long)in->length);
		return ERR_INVALID;
	}
	ts[0].tv_sec = ts[1].tv_sec = (time_t)(in->mtime_ns / 1000000000LL);
	ts[0].tv_nsec = ts[1].tv_nsec = (long)(in->mtime_ns % 1000000000LL);
	if (futimens(in->fd, ts)) {
		(void)buf_addf(err, "futimens: %s", strerror(errno));
		return ERR_IO;
	}
	r = s3d__meta_store(in->fd, &in->o, err);
	if (r)
		return r;
	r = stor_fs_tmp_commit(in->fd, in->tmp.data, in->path.data, 1, err);
	in->fd = -1;
	return r;
}

void s3d_mirror_in_free(struct s3d_mirror_in *in)
{
	if (!in)
		return;
	if (in->fd >= 0)
		stor_fs_tmp_abort(in->fd, in->tmp.data);
	EVP_MD_CTX_free(in->md5);
	s3d__obj_release(&in->o);
	buf_release(&in->tmp);
	buf_release(&in->path);
	buf_release(&in->err);
	free(in);
}
