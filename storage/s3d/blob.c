/*
 * The blob endpoint's handler, written against storage/s3d/blob.h's three
 * calls so that the HTTP loop (controller/http.c) only moves bytes. It
 * writes the embedded store with the same primitives as the local
 * backend (storage/fs.h): temp file, fsync, rename.
 */
#define LOG_TAG "blob"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "api/blob_wire.h"
#include "api/requests.h"
#include "storage/s3d/blob.h"
#include "storage/s3d/meta.h"
#include "storage/fs.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Largest object a PUT may create (S3's single-PUT limit is 5 GiB). */
#define BLOB_MAX_OBJECT (1024LL * 1024 * 1024 * 1024)
#define BLOB_LIST_MAX 1000
#define BLOB_WRITE_CHUNK (1u * 1024 * 1024)

enum blob_op {
	BLOB_BAD = 0, /* answered with b->status and b->msg */
	BLOB_GET,
	BLOB_HEAD,
	BLOB_PUT,
	BLOB_DELETE,
	BLOB_LIST
};

struct s3d_blob {
	enum blob_op op;
	int status; /* BLOB_BAD: the answer */
	const char *err_type;
	struct buf msg;
	char *root; /* <root>/<bucket> */
	char *bucket;
	char *key; /* object key, or the listing prefix */
	char *continuation;
	long max_keys;
	int64_t content_length;

	/* PUT in progress */
	int fd;
	struct buf tmp;
	struct buf pending; /* written in BLOB_WRITE_CHUNK blocks */
	EVP_MD_CTX *sha;
	EVP_MD_CTX *md5; /* the ETag S3 requests see (storage/s3d/s3d.h) */
	int64_t received;
	int failed; /* an error code once the upload broke */
};

int s3d_blob_is_route(const char *url)
{
	return !strncmp(url, S3D_BLOB_PREFIX, strlen(S3D_BLOB_PREFIX));
}

int s3d_blob_auth_ok(const char *authorization, const char *token)
{
	size_t n, i;
	unsigned char diff = 0;

	if (!authorization || !token || !*token ||
	    strncasecmp(authorization, "Bearer ", 7))
		return 0;
	authorization += 7;
	n = strlen(token);
	if (strlen(authorization) != n)
		return 0;
	for (i = 0; i < n; i++)
		diff |= (unsigned char)(authorization[i] ^ token[i]);
	return diff == 0;
}

static void bad(struct s3d_blob *b, int status, const char *type,
		const char *fmt, const char *arg)
{
	b->op = BLOB_BAD;
	b->status = status;
	b->err_type = type;
	buf_reset(&b->msg);
	(void)buf_addf(&b->msg, fmt, arg);
}

static void parse_route(struct s3d_blob *b, const char *root,
			const char *method, const char *url)
{
	const char *rest = url + strlen(S3D_BLOB_PREFIX);
	const char *slash = strchr(rest, '/');
	struct buf why = BUF_INIT, r = BUF_INIT;

	b->bucket = slash ? xstrndup(rest, (size_t)(slash - rest)) :
			    xstrdup(rest);
	if (stor_bucket_check(b->bucket, &why)) {
		bad(b, 400, "InvalidBucketName", "%s", why.data);
		goto out;
	}
	stor_fs_path(&r, root, b->bucket);
	b->root = buf_detach(&r, NULL);
	if (!slash || !slash[1]) {
		if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
			bad(b, 405, "MethodNotAllowed",
			    "%s is not allowed on a bucket", method);
			goto out;
		}
		b->op = BLOB_LIST;
		goto out;
	}
	b->key = xstrdup(slash + 1);
	if (stor_key_check(b->key, 0, &why)) {
		bad(b, 400, "InvalidKey", "%s", why.data);
		goto out;
	}
	if (!strcmp(method, "GET"))
		b->op = BLOB_GET;
	else if (!strcmp(method, "HEAD"))
		b->op = BLOB_HEAD;
	else if (!strcmp(method, "PUT"))
		b->op = BLOB_PUT;
	else if (!strcmp(method, "DELETE"))
		b->op = BLOB_DELETE;
	else
		bad(b, 405, "MethodNotAllowed",
		    "%s is not allowed on an object", method);
out:
	buf_release(&why);
	buf_release(&r);
}

static void put_start(struct s3d_blob *b)
{
	struct buf path = BUF_INIT;
	int ret;

	if (b->content_length > BLOB_MAX_OBJECT) {
		bad(b, 413, "EntityTooLarge", "objects are limited to %s",
		    "1 TiB");
		return;
	}
	stor_fs_path(&path, b->root, b->key);
	ret = stor_fs_tmp_open(path.data, &b->fd, &b->tmp, &b->msg);
	if (ret) {
		b->op = BLOB_BAD;
		b->status = ret == ERR_CONFLICT ? 409 : 500;
		b->err_type = ret == ERR_CONFLICT ? "KeyConflict" :
						    "InternalError";
		log_warn("PUT %s/%s: %s", b->bucket, b->key, b->msg.data);
	} else {
		b->sha = EVP_MD_CTX_new();
		b->md5 = EVP_MD_CTX_new();
		if (!b->sha || !EVP_DigestInit_ex(b->sha, EVP_sha256(), NULL) ||
		    !b->md5 || !EVP_DigestInit_ex(b->md5, EVP_md5(), NULL)) {
			log_error("cannot start SHA-256");
			exit(1);
		}
		buf_init(&b->pending, 0);
	}
	buf_release(&path);
}

struct s3d_blob *s3d_blob_begin(const char *root, const char *method,
				const char *url, const char *prefix,
				const char *continuation, const char *max_keys,
				int64_t content_length)
{
	struct s3d_blob *b = xcalloc(1, sizeof(*b));
	struct buf why = BUF_INIT;

	b->fd = -1;
	buf_init(&b->msg, 4096);
	buf_init(&b->tmp, 0);
	buf_init(&b->pending, 0);
	b->content_length = content_length;
	b->max_keys = BLOB_LIST_MAX;
	if (!s3d_blob_is_route(url)) {
		bad(b, 404, "NotFound", "no route '%.200s'", url);
		return b;
	}
	parse_route(b, root, method, url);
	if (b->op == BLOB_LIST) {
		b->key = xstrdup(prefix ? prefix : "");
		if (stor_key_check(b->key, 1, &why))
			bad(b, 400, "InvalidPrefix", "%s", why.data);
		if (continuation && *continuation)
			b->continuation = xstrdup(continuation);
		if (max_keys) {
			char *end;
			long n = strtol(max_keys, &end, 10);

			if (*end || n < 1 || n > BLOB_LIST_MAX)
				bad(b, 400, "InvalidArgument",
				    "max-keys '%.40s' must be 1..1000",
				    max_keys);
			else
				b->max_keys = n;
		}
	}
	if (b->op == BLOB_PUT)
		put_start(b);
	buf_release(&why);
	return b;
}

static int flush_pending(struct s3d_blob *b)
{
	size_t off = 0;

	while (off < b->pending.len) {
		ssize_t n = write(b->fd, b->pending.data + off,
				  b->pending.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			buf_reset(&b->msg);
			(void)buf_addf(&b->msg, "cannot store the object: %s",
				       strerror(errno));
			b->failed = errno == ENOSPC ? ERR_LIMIT : ERR_IO;
			return b->failed;
		}
		off += (size_t)n;
	}
	buf_reset(&b->pending);
	return 0;
}

int s3d_blob_data(struct s3d_blob *b, const char *data, size_t len)
{
	if (b->op != BLOB_PUT)
		return 0;
	if (b->failed)
		return b->failed;
	if (b->received + (int64_t)len > BLOB_MAX_OBJECT ||
	    (b->content_length >= 0 &&
	     b->received + (int64_t)len > b->content_length)) {
		buf_reset(&b->msg);
		(void)buf_adds(&b->msg, "the body is longer than announced");
		b->failed = ERR_TOOBIG;
		return b->failed;
	}
	EVP_DigestUpdate(b->sha, data, len);
	EVP_DigestUpdate(b->md5, data, len);
	b->received += (int64_t)len;
	(void)buf_add(&b->pending, data, len);
	if (b->pending.len >= BLOB_WRITE_CHUNK)
		return flush_pending(b);
	return 0;
}

static void reply_error(struct s3d_blob_reply *r, int status, const char *type,
			const char *msg)
{
	r->status = status;
	buf_reset(&r->body);
	(void)api_error_body(type, msg, &r->body);
}

static void rfc1123(int64_t ms, char *out, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, size, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void finish_get(struct s3d_blob *b, struct s3d_blob_reply *r)
{
	struct buf path = BUF_INIT;
	struct stat st;
	int fd;

	stor_fs_path(&path, b->root, b->key);
	fd = open(path.data, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		reply_error(r, 404, "NoSuchKey", "no such object");
		goto out;
	}
	r->status = 200;
	r->content_type = "application/octet-stream";
	r->size = (uint64_t)st.st_size;
	rfc1123((int64_t)st.st_mtim.tv_sec * 1000, r->last_modified,
		sizeof(r->last_modified));
	r->fd = fd;
out:
	buf_release(&path);
}

/* The object's ETag for S3 requests, kept on the temp file's inode. */
static void keep_etag(struct s3d_blob *b)
{
	struct s3d_obj o;
	struct buf err = BUF_INIT;
	unsigned char d[16];

	memset(&o, 0, sizeof(o));
	if (EVP_DigestFinal_ex(b->md5, d, NULL)) {
		stor_hex(d, 16, o.etag);
		if (s3d__meta_store(b->fd, &o, &err))
			log_warn("PUT %s/%s: %s", b->bucket, b->key, err.data);
	}
	buf_release(&err);
}

static void finish_put(struct s3d_blob *b, struct s3d_blob_reply *r)
{
	struct buf path = BUF_INIT;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char hex[65];
	int ret;

	if (!b->failed)
		flush_pending(b);
	if (!b->failed && b->content_length >= 0 &&
	    b->received != b->content_length) {
		(void)buf_adds(&b->msg, "the body is shorter than announced");
		b->failed = ERR_INVALID;
	}
	if (b->failed) {
		reply_error(r,
			    b->failed == ERR_TOOBIG   ? 413 :
			    b->failed == ERR_LIMIT    ? 507 :
			    b->failed == ERR_INVALID  ? 400 :
			    b->failed == ERR_CONFLICT ? 409 :
							500,
			    b->failed == ERR_LIMIT    ? "InsufficientStorage" :
			    b->failed == ERR_CONFLICT ? "AttemptFenced" :
							"UploadFailed",
			    b->msg.data);
		stor_fs_tmp_abort(b->fd, b->tmp.data);
		b->fd = -1;
		buf_reset(&b->tmp);
		goto out;
	}
	EVP_DigestFinal_ex(b->sha, md, &n);
	stor_hex(md, n > 32 ? 32 : n, hex);
	keep_etag(b);
	stor_fs_path(&path, b->root, b->key);
	ret = stor_fs_tmp_commit(b->fd, b->tmp.data, path.data, 1, &b->msg);
	b->fd = -1;
	buf_reset(&b->tmp);
	if (ret) {
		log_warn("PUT %s/%s: %s", b->bucket, b->key, b->msg.data);
		reply_error(r, ret == ERR_CONFLICT ? 409 : 500,
			    ret == ERR_CONFLICT ? "KeyConflict" :
						  "InternalError",
			    b->msg.data);
		goto out;
	}
	r->status = 200;
	api_blob_put_encode(b->key, b->received, hex, &r->body);
out:
	buf_release(&path);
}

static void finish_list(struct s3d_blob *b, struct s3d_blob_reply *r)
{
	struct stor_list l = STOR_LIST_INIT;
	struct api_blob_list page = API_BLOB_LIST_INIT;
	size_t from = 0, i;

	if (stor_fs_list(b->root, b->key, 0, &l, &b->msg)) {
		reply_error(r, 500, "InternalError", b->msg.data);
		goto out;
	}
	/* The token is the last key of the previous page. */
	if (b->continuation)
		while (from < l.n &&
		       strcmp(l.v[from].key, b->continuation) <= 0)
			from++;
	page.n = l.n - from;
	if (page.n > (size_t)b->max_keys) {
		page.n = (size_t)b->max_keys;
		page.next = l.v[from + page.n - 1].key;
	}
	/* The page borrows the listing's keys. */
	if (page.n)
		page.v = xcalloc(page.n, sizeof(*page.v));
	for (i = 0; i < page.n; i++) {
		page.v[i].key = l.v[from + i].key;
		page.v[i].size = l.v[from + i].size;
		page.v[i].mtime_ms = l.v[from + i].mtime_ms;
	}
	r->status = 200;
	api_blob_list_encode(&page, &r->body);
	free(page.v);
out:
	stor_list_release(&l);
}

void s3d_blob_finish(struct s3d_blob *b, struct s3d_blob_reply *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->content_type = "application/json";
	buf_init(&r->body, 0);
	switch (b->op) {
	case BLOB_BAD:
		reply_error(r, b->status, b->err_type, b->msg.data);
		break;
	case BLOB_GET:
	case BLOB_HEAD:
		finish_get(b, r);
		break;
	case BLOB_PUT:
		finish_put(b, r);
		break;
	case BLOB_DELETE:
		if (stor_fs_delete(b->root, b->key, 1, &b->msg))
			reply_error(r, 500, "InternalError", b->msg.data);
		else
			r->status = 204;
		break;
	case BLOB_LIST:
		finish_list(b, r);
		break;
	}
	if (r->status >= 500)
		log_warn("blob %s/%s: %d %s", b->bucket ? b->bucket : "",
			 b->key ? b->key : "", r->status, r->body.data);
}

int s3d_blob_changed(const struct s3d_blob *b, const struct s3d_blob_reply *r,
		     const char **bucket, const char **key)
{
	*bucket = b->bucket;
	*key = b->key;
	if (b->op == BLOB_PUT && r->status == 200)
		return S3D_CH_PUT;
	if (b->op == BLOB_DELETE && r->status == 204)
		return S3D_CH_DELETE;
	return 0;
}

void s3d_blob_refuse_reply(struct s3d_blob_reply *r, const char *msg)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	reply_error(r, 503, "SlowDown", msg);
}

void s3d_blob_fence(struct s3d_blob *b, const char *why)
{
	if (b->op == BLOB_DELETE) {
		b->op = BLOB_BAD;
		b->status = 409;
		b->err_type = "AttemptFenced";
	} else if (b->op != BLOB_PUT || b->failed) {
		return;
	}
	buf_reset(&b->msg);
	(void)buf_adds(&b->msg, why);
	b->failed = b->op == BLOB_PUT ? ERR_CONFLICT : 0;
}

void s3d_blob_reply_release(struct s3d_blob_reply *r)
{
	buf_release(&r->body);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

void s3d_blob_free(struct s3d_blob *b)
{
	if (!b)
		return;
	if (b->fd >= 0)
		stor_fs_tmp_abort(b->fd, b->tmp.data);
	EVP_MD_CTX_free(b->sha);
	EVP_MD_CTX_free(b->md5);
	buf_release(&b->msg);
	buf_release(&b->tmp);
	buf_release(&b->pending);
	free(b->root);
	free(b->bucket);
	free(b->key);
	free(b->continuation);
	free(b);
}
