/*
 * S3 operations on buckets (storage/s3d/bucket.h): ListBuckets,
 * CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation,
 * GetBucketVersioning and DeleteObjects.
 */
#define LOG_TAG "s3"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "storage/s3d/bucket.h"
#include "storage/s3d/intake.h"
#include "storage/s3d/request.h"
#include "storage/s3d/xml.h"
#include "storage/fs.h"
#include "storage/storage.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define DELETE_MAX 1000

/* -------------------------------------------------------------- buckets */

static int64_t dir_time_ms(const struct stat *st)
{
	return (int64_t)st->st_ctim.tv_sec * 1000 +
	       st->st_ctim.tv_nsec / 1000000;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void s3d__op_list_buckets(struct s3d *s, struct s3d_reply *r)
{
	DIR *d = opendir(s->env->root);
	struct buf err = BUF_INIT;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, alloc = 0, i;

	while (d && (de = readdir(d))) {
		if (stor_bucket_check(de->d_name, &err) ||
		    !s3d__reaches_bucket(s, de->d_name)) {
			buf_reset(&err);
			continue;
		}
		ALLOC_GROW(names, n + 1, alloc);
		names[n++] = xstrdup(de->d_name);
	}
	if (d)
		closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	s3d__xml_begin(&r->body, "ListAllMyBucketsResult");
	s3d__xml_owner(&r->body);
	s3d__xml_open(&r->body, "Buckets");
	for (i = 0; i < n; i++) {
		struct buf p = BUF_INIT;
		struct stat st;
		char t[32];

		s3d__bucket_path(s, names[i], &p);
		if (!lstat(p.data, &st) && S_ISDIR(st.st_mode)) {
			s3d__xml_open(&r->body, "Bucket");
			s3d__xml_el(&r->body, "Name", names[i]);
			s3d__iso_time(dir_time_ms(&st), t);
			s3d__xml_el(&r->body, "CreationDate", t);
			s3d__xml_close(&r->body, "Bucket");
		}
		buf_release(&p);
		free(names[i]);
	}
	free(names);
	s3d__xml_close(&r->body, "Buckets");
	s3d__xml_close(&r->body, "ListAllMyBucketsResult");
	buf_release(&err);
	r->status = 200;
}

void s3d__op_create_bucket(struct s3d *s, struct s3d_reply *r)
{
	struct buf p = BUF_INIT, loc = BUF_INIT;

	if (s3d__intake_end(s))
		goto out;
	if (s->xml.len && s3d__xml_parse_value(s->xml.data, s->xml.len,
					       "CreateBucketConfiguration",
					       "LocationConstraint", &loc)) {
		s3d__fail(s, "MalformedXML", 400,
			  "The XML you provided was not well-formed");
		goto out;
	}
	if (loc.len && strcmp(loc.data, s->env->region)) {
		s3d__fail(s, "IllegalLocationConstraintException", 400,
			  "The %s location constraint is incompatible for the "
			  "region specific endpoint this request was sent to "
			  "(%s).",
			  loc.data, s->env->region);
		goto out;
	}
	s3d__bucket_path(s, s->bucket, &p);
	if (mkdir(p.data, 0755)) {
		if (errno == EEXIST)
			s3d__fail(s, "BucketAlreadyOwnedByYou", 409,
				  "Your previous request to create the named "
				  "bucket succeeded and you already own it.");
		else
			s3d__fail(s, "InternalError", 500, "mkdir %s: %s",
				  p.data, strerror(errno));
		goto out;
	}
	s3d__changed(s, S3D_CH_BUCKET, s->bucket, NULL);
	r->status = 200;
	buf_reset(&p);
	(void)buf_addf(&p, "/%s", s->bucket);
	s3d__reply_header(r, "Location", p.data);
out:
	buf_release(&p);
	buf_release(&loc);
}

void s3d__op_head_bucket(struct s3d *s, struct s3d_reply *r)
{
	if (s3d__need_bucket(s, s->bucket))
		return;
	r->status = 200;
	s3d__reply_header(r, "x-amz-bucket-region", s->env->region);
}

void s3d__op_delete_bucket(struct s3d *s, struct s3d_reply *r)
{
	struct stor_list l = STOR_LIST_INIT;
	struct buf p = BUF_INIT, err = BUF_INIT;

	if (s3d__need_bucket(s, s->bucket))
		goto out;
	s3d__bucket_path(s, s->bucket, &p);
	if (stor_fs_list(p.data, "", 0, &l, &err)) {
		s3d__fail(s, "InternalError", 500, "%s", err.data);
		goto out;
	}
	if (l.n) {
		s3d__fail(s, "BucketNotEmpty", 409,
			  "The bucket you tried to delete is not empty");
		goto out;
	}
	/* Only empty folders and stale temp files are left. */
	(void)fs_remove_tree(p.data);
	s3d__changed(s, S3D_CH_UNBUCKET, s->bucket, NULL);
	r->status = 204;
out:
	stor_list_release(&l);
	buf_release(&p);
	buf_release(&err);
}

void s3d__op_bucket_location(struct s3d *s, struct s3d_reply *r)
{
	if (s3d__need_bucket(s, s->bucket))
		return;
	r->status = 200;
	(void)buf_adds(&r->body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				 "<LocationConstraint xmlns=\"http://"
				 "s3.amazonaws.com/doc/2006-03-01/\">");
	/* us-east-1 is the empty constraint, as S3 says it. */
	if (strcmp(s->env->region, "us-east-1"))
		s3d__xml_text(&r->body, s->env->region);
	(void)buf_adds(&r->body, "</LocationConstraint>");
}

void s3d__op_bucket_versioning(struct s3d *s, struct s3d_reply *r)
{
	if (s3d__need_bucket(s, s->bucket))
		return;
	r->status = 200;
	/* Never enabled: S3 answers an empty configuration. */
	s3d__xml_begin(&r->body, "VersioningConfiguration");
	s3d__xml_close(&r->body, "VersioningConfiguration");
}

/* ------------------------------------------------------- DeleteObjects */

static void delete_one(struct s3d *s, const char *key, int quiet, struct buf *b)
{
	struct buf err = BUF_INIT, root = BUF_INIT;
	const char *code = NULL;

	if (stor_key_check(key, 0, &err))
		code = "InvalidArgument";
	else if (!s3d__allowed(s, s->bucket, key))
		code = "AccessDenied";
	else {
		s3d__bucket_path(s, s->bucket, &root);
		if (stor_fs_delete(root.data, key, 1, &err))
			code = "InternalError";
		else
			s3d__changed(s, S3D_CH_DELETE, s->bucket, key);
	}
	if (code) {
		s3d__xml_open(b, "Error");
		s3d__xml_el(b, "Key", key);
		s3d__xml_el(b, "Code", code);
		s3d__xml_el(b, "Message", err.len ? err.data : "Access Denied");
		s3d__xml_close(b, "Error");
	} else if (!quiet) {
		s3d__xml_open(b, "Deleted");
		s3d__xml_el(b, "Key", key);
		s3d__xml_close(b, "Deleted");
	}
	buf_release(&err);
	buf_release(&root);
}

void s3d__op_delete_objects(struct s3d *s, struct s3d_reply *r)
{
	struct s3d_xml_item *items = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0, i;
	int quiet = 0;

	if (s3d__intake_end(s) || s3d__need_bucket(s, s->bucket))
		goto out;
	if (!s3d__header(s, "content-md5") && !s->body.ck) {
		s3d__fail(s, "InvalidRequest", 400,
			  "Missing required header for this request: "
			  "Content-MD5");
		goto out;
	}
	if (s3d__xml_parse_list(s->xml.data, s->xml.len, "Delete", "Object",
				"Key", "VersionId", "Quiet", &quiet, DELETE_MAX,
				&items, &n, &err)) {
		s3d__fail(s, "MalformedXML", 400, "%s", err.data);
		goto out;
	}
	s3d__xml_begin(&r->body, "DeleteResult");
	for (i = 0; i < n; i++) {
		if (items[i].b) {
			s3d__xml_open(&r->body, "Error");
			s3d__xml_el(&r->body, "Key",
				    items[i].a ? items[i].a : "");
			s3d__xml_el(&r->body, "Code", "NotImplemented");
			s3d__xml_el(&r->body, "Message",
				    "versions are not supported");
			s3d__xml_close(&r->body, "Error");
			continue;
		}
		delete_one(s, items[i].a ? items[i].a : "", quiet, &r->body);
	}
	s3d__xml_close(&r->body, "DeleteResult");
	r->status = 200;
out:
	s3d__xml_items_free(items, n);
	buf_release(&err);
}
