/*
 * S3 operations on one object (storage/s3d/object.h): PutObject,
 * GetObject and HeadObject (ranges, preconditions), DeleteObject and
 * CopyObject.
 */
#define LOG_TAG "s3"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/s3d/intake.h"
#include "storage/s3d/object.h"
#include "storage/s3d/request.h"
#include "storage/s3d/xml.h"
#include "storage/fs.h"
#include "storage/storage.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* --------------------------------------------------------- object PUT */

int s3d__begin_put_object(struct s3d *s)
{
	const char *cl = s3d__header(s, "content-length");
	json_t *h = NULL;

	if (s3d__need_bucket(s, s->bucket) || s3d__kept_headers(s, &h))
		return -1;
	json_decref(h);
	if (!cl && !s3d__header(s, "x-amz-decoded-content-length"))
		return s3d__fail(s, "MissingContentLength", 411,
				 "You must provide the Content-Length HTTP "
				 "header.");
	if (cl && strtoll(cl, NULL, 10) >
			  (s3d__header(s, "x-amz-decoded-content-length") ?
				   s->env->max_object * 2 :
				   s->env->max_object))
		return s3d__fail(s, "EntityTooLarge", 400,
				 "Your proposed upload exceeds the maximum "
				 "allowed size (%lld bytes)",
				 (long long)s->env->max_object);
	{
		struct buf p = BUF_INIT;
		int r;

		s3d__object_path(s, s->bucket, s->key, &p);
		r = s3d__intake_file(s, p.data, s->env->max_object);
		buf_release(&p);
		return r;
	}
}

/* The full-object checksum a PUT carried, kept to answer
 * x-amz-checksum-mode: ENABLED. */
static json_t *checksums_of(const struct s3d_body *b)
{
	json_t *c;

	if (b->ck == S3D_CK_NONE)
		return NULL;
	c = json_object();
	json_object_set_new(c, b->ck_name, json_string(b->ck_b64));
	return c;
}

static void etag_header(struct s3d_reply *r, const char *etag)
{
	char q[64];

	snprintf(q, sizeof(q), "\"%s\"", etag);
	s3d__reply_header(r, "ETag", q);
}

void s3d__op_put_object(struct s3d *s, struct s3d_reply *r)
{
	struct s3d_obj o;
	const char *inm = s3d__header(s, "if-none-match");
	struct stat st;

	memset(&o, 0, sizeof(o));
	if (s3d__intake_end(s))
		return;
	if (inm && !strcmp(inm, "*") && !stat(s->path.data, &st)) {
		s3d__fail(s, "PreconditionFailed", 412,
			  "At least one of the pre-conditions you specified "
			  "did not hold");
		return;
	}
	if (s3d__kept_headers(s, &o.headers))
		return;
	snprintf(o.etag, sizeof(o.etag), "%s", s->body.md5_hex);
	o.checksums = checksums_of(&s->body);
	if (!s3d__commit(s, &o, 1)) {
		s3d__changed(s, S3D_CH_PUT, s->bucket, s->key);
		r->status = 200;
		etag_header(r, o.etag);
		if (o.checksums)
			s3d__reply_header(r, s->body.ck_name, s->body.ck_b64);
	}
	s3d__obj_release(&o);
}

/* ---------------------------------------------------------- GET, HEAD */

/* Opens the object; 0, or -1 with NoSuchKey remembered. */
static int open_object(struct s3d *s, const char *bucket, const char *key,
		       int *fd, struct s3d_obj *o)
{
	struct buf p = BUF_INIT, err = BUF_INIT;
	struct stat st;
	int r = 0;

	*fd = -1;
	if (s3d__need_bucket(s, bucket))
		return -1;
	s3d__object_path(s, bucket, key, &p);
	*fd = open(p.data, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0 || fstat(*fd, &st) || !S_ISREG(st.st_mode)) {
		r = s3d__fail(s, "NoSuchKey", 404,
			      "The specified key does not exist.");
	} else if (s3d__meta_load(*fd, &st, o, &err)) {
		r = s3d__fail(s, "InternalError", 500, "%s", err.data);
	}
	if (r && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	buf_release(&p);
	buf_release(&err);
	return r;
}

/* Parses "bytes=a-b", "bytes=a-", "bytes=-n" against size. 1: whole
 * object (no or ignored range), 0: [*from, *to], -1: unsatisfiable. */
static int parse_range(const char *v, int64_t size, int64_t *from, int64_t *to)
{
	char *end;
	long long a, b;

	if (!v || strncmp(v, "bytes=", 6) || strchr(v, ','))
		return 1; /* S3 ignores what it does not understand */
	v += 6;
	if (*v == '-') {
		b = strtoll(v + 1, &end, 10);
		if (*end || end == v + 1)
			return 1;
		if (b <= 0 || size == 0)
			return -1;
		*from = b >= size ? 0 : size - b;
		*to = size - 1;
		return 0;
	}
	a = strtoll(v, &end, 10);
	if (end == v || *end != '-')
		return 1;
	if (end[1]) {
		char *e2;

		b = strtoll(end + 1, &e2, 10);
		if (*e2 || b < a)
			return 1;
	} else {
		b = size - 1;
	}
	if (a >= size)
		return -1;
	*from = a;
	*to = b >= size ? size - 1 : b;
	return 0;
}

/* If-Match and friends: 0 to go on, else the status (304 or 412). */
static int preconditions(const struct s3d *s, const struct s3d_obj *o)
{
	const char *im = s3d__header(s, "if-match");
	const char *inm = s3d__header(s, "if-none-match");
	char q[64];

	snprintf(q, sizeof(q), "\"%s\"", o->etag);
	if (im && strcmp(im, "*") && strcmp(im, q) && strcmp(im, o->etag))
		return 412;
	if (inm &&
	    (!strcmp(inm, "*") || !strcmp(inm, q) || !strcmp(inm, o->etag)))
		return 304;
	return 0;
}

static void object_headers(struct s3d *s, struct s3d_reply *r,
			   const struct s3d_obj *o)
{
	static const char *const overrides[][2] = {
		{ "response-content-type", "Content-Type" },
		{ "response-content-language", "Content-Language" },
		{ "response-expires", "Expires" },
		{ "response-cache-control", "Cache-Control" },
		{ "response-content-disposition", "Content-Disposition" },
		{ "response-content-encoding", "Content-Encoding" },
	};
	char lm[40];
	const char *k;
	json_t *v;
	size_t i;

	etag_header(r, o->etag);
	s3d__http_time(o->mtime_ms, lm);
	s3d__reply_header(r, "Last-Modified", lm);
	s3d__reply_header(r, "Accept-Ranges", "bytes");
	for (i = 0; i < ARRAY_SIZE(overrides); i++) {
		const char *ov = s3d__query(s, overrides[i][0]);

		if (ov)
			s3d__reply_header(r, overrides[i][1], ov);
	}
	if (!json_object_get(o->headers, "content-type") &&
	    !s3d__query(s, "response-content-type"))
		s3d__reply_header(r, "Content-Type", "binary/octet-stream");
	json_object_foreach(o->headers, k, v)
	{
		int overridden = 0;

		for (i = 0; i < ARRAY_SIZE(overrides); i++)
			if (!strcasecmp(k, overrides[i][1]) &&
			    s3d__query(s, overrides[i][0]))
				overridden = 1;
		if (!overridden && json_is_string(v))
			s3d__reply_header(r, k, json_string_value(v));
	}
}

/*
 * Whether a browser is opening the object as a page: a navigation, or a
 * read without a SigV4 signature (an open controller, a page's
 * credentials that S3 never accepts). Such reads download it instead.
 */
static int browser_read(const struct s3d *s)
{
	const char *mode = s3d__header(s, "sec-fetch-mode");
	const char *dest = s3d__header(s, "sec-fetch-dest");

	return !s->have_sig || (mode && !strcasecmp(mode, "navigate")) ||
	       (dest && strcasecmp(dest, "empty"));
}

/*
 * Replaces every header called name with one name: value. It always goes
 * out: when the answer already holds S3D_MAX_HEADERS headers (many
 * stored x-amz-meta-*), the last of them makes room.
 */
static void set_header(struct s3d_reply *r, const char *name, const char *value)
{
	size_t i, j = 0;

	for (i = 0; i < r->n_headers; i++) {
		if (!strcasecmp(r->name[i], name)) {
			free(r->name[i]);
			free(r->value[i]);
			continue;
		}
		r->name[j] = r->name[i];
		r->value[j] = r->value[i];
		j++;
	}
	r->n_headers = j;
	if (r->n_headers == S3D_MAX_HEADERS) {
		r->n_headers--;
		free(r->name[r->n_headers]);
		free(r->value[r->n_headers]);
	}
	s3d__reply_header(r, name, value);
}

void s3d__op_get_object(struct s3d *s, struct s3d_reply *r, int head)
{
	struct s3d_obj o;
	int64_t from = 0, to = 0;
	int fd, pre, whole;

	memset(&o, 0, sizeof(o));
	if (open_object(s, s->bucket, s->key, &fd, &o))
		return;
	pre = preconditions(s, &o);
	if (pre == 412) {
		s3d__fail(s, "PreconditionFailed", 412,
			  "At least one of the pre-conditions you specified "
			  "did not hold");
		goto out;
	}
	whole = parse_range(s3d__header(s, "range"), o.size, &from, &to);
	if (whole < 0) {
		s3d__fail(s, "InvalidRange", 416,
			  "The requested range is not satisfiable");
		s->actual_size = o.size;
		goto out;
	}
	object_headers(s, r, &o);
	if (browser_read(s))
		set_header(r, "Content-Disposition", "attachment");
	if (pre == 304) {
		r->status = 304;
		goto out;
	}
	r->status = whole ? 200 : 206;
	r->fd = fd;
	fd = -1;
	r->offset = whole ? 0 : (uint64_t)from;
	r->size = whole ? (uint64_t)o.size : (uint64_t)(to - from + 1);
	if (!whole) {
		char cr[96];

		snprintf(cr, sizeof(cr), "bytes %lld-%lld/%lld",
			 (long long)from, (long long)to, (long long)o.size);
		s3d__reply_header(r, "Content-Range", cr);
	}
	if (whole && o.checksums && s3d__header(s, "x-amz-checksum-mode")) {
		const char *k;
		json_t *v;

		json_object_foreach(o.checksums, k, v)
			s3d__reply_header(r, k, json_string_value(v));
	}
	(void)head;
out:
	if (fd >= 0)
		close(fd);
	s3d__obj_release(&o);
}

/* ------------------------------------------------------- DELETE, COPY */

void s3d__op_delete_object(struct s3d *s, struct s3d_reply *r)
{
	struct buf err = BUF_INIT, root = BUF_INIT;

	if (s3d__need_bucket(s, s->bucket))
		return;
	s3d__bucket_path(s, s->bucket, &root);
	if (stor_fs_delete(root.data, s->key, 1, &err)) {
		s3d__fail(s, "InternalError", 500, "%s", err.data);
	} else {
		s3d__changed(s, S3D_CH_DELETE, s->bucket, s->key);
		r->status = 204;
	}
	buf_release(&err);
	buf_release(&root);
}

/* "/bucket/key" or "bucket/key", URL-encoded. */
static int copy_source(struct s3d *s, char **bucket, char **key)
{
	const char *v = s3d__header(s, "x-amz-copy-source");
	struct buf err = BUF_INIT;
	char *all, *slash;

	*bucket = *key = NULL;
	if (*v == '/')
		v++;
	if (strchr(v, '?'))
		return s3d__fail(s, "NotImplemented", 501,
				 "versioned copy sources are not supported");
	all = s3d__decode(v, strlen(v), 0);
	slash = all ? strchr(all, '/') : NULL;
	if (!slash || !slash[1]) {
		free(all);
		return s3d__fail(s, "InvalidArgument", 400,
				 "Copy Source must mention the source bucket "
				 "and key: sourcebucket/sourcekey");
	}
	*slash = '\0';
	*bucket = xstrdup(all);
	*key = xstrdup(slash + 1);
	free(all);
	if (stor_bucket_check(*bucket, &err) || stor_key_check(*key, 0, &err))
		s3d__fail(s, "InvalidArgument", 400, "Copy Source: %s",
			  err.data);
	else if (!s3d__allowed(s, *bucket, *key))
		s3d__fail(s, "AccessDenied", 403,
			  "Access Denied to the copy source");
	buf_release(&err);
	return s->code ? -1 : 0;
}

static int copy_bytes(struct s3d *s, int in)
{
	struct buf err = BUF_INIT;
	int64_t copied = 0;
	int r;

	r = stor_fs_copy_fd(in, s->fd, &copied, &err);
	if (r)
		s3d__fail(s, "InternalError", 500, "copy failed: %s", err.data);
	buf_release(&err);
	return r;
}

void s3d__op_copy_object(struct s3d *s, struct s3d_reply *r)
{
	const char *dir = s3d__header(s, "x-amz-metadata-directive");
	int replace = dir && !strcmp(dir, "REPLACE");
	char *sb = NULL, *sk = NULL, t[32];
	struct s3d_obj src, dst;
	struct buf err = BUF_INIT;
	int in = -1;

	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	if (dir && !replace && strcmp(dir, "COPY")) {
		s3d__fail(s, "InvalidArgument", 400,
			  "Unknown metadata directive.");
		return;
	}
	if (copy_source(s, &sb, &sk) || open_object(s, sb, sk, &in, &src) ||
	    s3d__need_bucket(s, s->bucket))
		goto out;
	if (!strcmp(sb, s->bucket) && !strcmp(sk, s->key) && !replace) {
		s3d__fail(s, "InvalidRequest", 400,
			  "This copy request is illegal because it is trying "
			  "to copy an object to itself without changing the "
			  "object's metadata.");
		goto out;
	}
	dst.checksums = json_incref(src.checksums);
	snprintf(dst.etag, sizeof(dst.etag), "%s", src.etag);
	if (!replace)
		dst.headers = json_incref(src.headers);
	else if (s3d__kept_headers(s, &dst.headers))
		goto out;
	s3d__object_path(s, s->bucket, s->key, &s->path);
	if (stor_fs_tmp_open(s->path.data, &s->fd, &s->tmp, &err)) {
		s3d__fail(s, "InternalError", 500, "%s", err.data);
		goto out;
	}
	if (copy_bytes(s, in) || s3d__commit(s, &dst, 1))
		goto out;
	s3d__changed(s, S3D_CH_PUT, s->bucket, s->key);
	r->status = 200;
	s3d__xml_begin(&r->body, "CopyObjectResult");
	s3d__iso_time(s->now_ms, t);
	s3d__xml_el(&r->body, "LastModified", t);
	s3d__xml_elf(&r->body, "ETag", "\"%s\"", dst.etag);
	s3d__xml_close(&r->body, "CopyObjectResult");
out:
	if (in >= 0)
		close(in);
	free(sb);
	free(sk);
	s3d__obj_release(&src);
	s3d__obj_release(&dst);
	buf_release(&err);
}
