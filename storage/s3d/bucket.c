/*
 * S3 operations on buckets, listings and multipart uploads
 * (storage/s3d/request.h). One object's operations are in storage/s3d/s3d.c.
 */
#define LOG_TAG "s3"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pthread.h>
#include <openssl/evp.h>

#include "storage/s3d/request.h"
#include "storage/s3d/xml.h"
#include "storage/fs.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define LIST_MAX 1000
#define DELETE_MAX 1000

static const char OWNER_ID[] = "trainctl";

static void owner(struct buf *b)
{
	s3d__xml_open(b, "Owner");
	s3d__xml_el(b, "ID", OWNER_ID);
	s3d__xml_el(b, "DisplayName", OWNER_ID);
	s3d__xml_close(b, "Owner");
}

/* A non-negative integer argument, default def, at most cap. */
static int int_arg(struct s3d *s, const char *name, long def, long cap,
		   long *out)
{
	const char *v = s3d__query(s, name);
	char *end;

	*out = def;
	if (!v)
		return 0;
	*out = strtol(v, &end, 10);
	if (!*v || *end || *out < 0)
		return s3d__fail(s, "InvalidArgument", 400,
				 "%s must be a non-negative integer", name);
	if (*out > cap)
		*out = cap;
	return 0;
}

/* -------------------------------------------------------------- buckets */

static int64_t dir_time_ms(const struct stat *st)
{
	return (int64_t)st->st_ctim.tv_sec * 1000 +
	       st->st_ctim.tv_nsec / 1000000;
}

static int user_reaches_bucket(const struct s3d *s, const char *bucket)
{
	size_t i, bl = strlen(bucket);

	if (!s->who || s->who->admin)
		return 1;
	for (i = 0; i < s->who->n_s3_prefixes; i++)
		if (!strncmp(s->who->s3_prefixes[i], bucket, bl) &&
		    s->who->s3_prefixes[i][bl] == '/')
			return 1;
	return 0;
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
		    !user_reaches_bucket(s, de->d_name)) {
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
	owner(&r->body);
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

/* ------------------------------------------------------------- listings */

struct listing {
	const char *prefix, *delim, *after;
	int url;
	long max;
	size_t count;
	int truncated;
	char *last; /* the last key or common prefix returned */
	struct buf contents, prefixes;
};

static void enc(struct s3d *s, const struct listing *l, struct buf *b,
		const char *name, const char *v)
{
	struct buf e = BUF_INIT;

	(void)s;
	if (l->url) {
		stor_uri_encode(&e, v, 1);
		s3d__xml_el(b, name, e.data ? e.data : "");
	} else {
		s3d__xml_el(b, name, v);
	}
	buf_release(&e);
}

static void add_content(struct s3d *s, struct listing *l, const char *bucket,
			const char *key, int v2)
{
	struct buf p = BUF_INIT, err = BUF_INIT;
	struct s3d_obj o;
	struct stat st;
	char t[32];
	int fd;

	s3d__object_path(s, bucket, key, &p);
	fd = open(p.data, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	memset(&o, 0, sizeof(o));
	if (fd < 0 || fstat(fd, &st) || s3d__meta_load(fd, &st, &o, &err)) {
		/* deleted since the walk */
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	s3d__xml_open(&l->contents, "Contents");
	enc(s, l, &l->contents, "Key", key);
	s3d__iso_time(o.mtime_ms, t);
	s3d__xml_el(&l->contents, "LastModified", t);
	s3d__xml_elf(&l->contents, "ETag", "\"%s\"", o.etag);
	s3d__xml_elf(&l->contents, "Size", "%lld", (long long)o.size);
	s3d__xml_el(&l->contents, "StorageClass", "STANDARD");
	if (!v2 || (s3d__query(s, "fetch-owner") &&
		    !strcmp(s3d__query(s, "fetch-owner"), "true")))
		owner(&l->contents);
	s3d__xml_close(&l->contents, "Contents");
	s3d__obj_release(&o);
out:
	buf_release(&p);
	buf_release(&err);
}

/* Walks the sorted keys, rolling up common prefixes, up to max. */
static void collect(struct s3d *s, struct listing *l,
		    const struct stor_list *keys, int v2)
{
	size_t i, plen = strlen(l->prefix);
	char *last_cp = NULL;

	for (i = 0; i < keys->n; i++) {
		const char *k = keys->v[i].key;
		const char *d = NULL;

		if (strncmp(k, l->prefix, plen))
			continue;
		if (l->delim && *l->delim)
			d = strstr(k + plen, l->delim);
		if (d) {
			size_t cl = (size_t)(d - k) + strlen(l->delim);
			char *cp = xstrndup(k, cl);

			if ((l->after && strcmp(cp, l->after) <= 0) ||
			    (last_cp && !strcmp(cp, last_cp))) {
				free(cp);
				continue;
			}
			if ((long)l->count == l->max) {
				l->truncated = 1;
				free(cp);
				break;
			}
			free(last_cp);
			last_cp = cp;
			s3d__xml_open(&l->prefixes, "CommonPrefixes");
			enc(s, l, &l->prefixes, "Prefix", cp);
			s3d__xml_close(&l->prefixes, "CommonPrefixes");
			free(l->last);
			l->last = xstrdup(cp);
			l->count++;
			continue;
		}
		if (l->after && strcmp(k, l->after) <= 0)
			continue;
		if ((long)l->count == l->max) {
			l->truncated = 1;
			break;
		}
		add_content(s, l, s->bucket, k, v2);
		free(l->last);
		l->last = xstrdup(k);
		l->count++;
	}
	free(last_cp);
}

/* The keys under prefix, sorted. A prefix that no stored key can start
 * with a path of lists the bucket and filters (collect() does). */
static int keys_under(struct s3d *s, const char *prefix, struct stor_list *keys)
{
	struct buf root = BUF_INIT, err = BUF_INIT;
	int r;

	s3d__bucket_path(s, s->bucket, &root);
	if (stor_key_check(prefix, 1, &err))
		prefix = "";
	buf_reset(&err);
	r = stor_fs_list(root.data, prefix, 0, keys, &err);
	if (r)
		s3d__fail(s, "InternalError", 500, "%s", err.data);
	buf_release(&root);
	buf_release(&err);
	return r;
}

/* Continuation tokens are the hex of the last key returned. */
static char *token_encode(const char *key)
{
	size_t n = strlen(key);
	char *t = xmalloc(2 * n + 1);

	stor_hex((const unsigned char *)key, n, t);
	return t;
}

static char *token_decode(const char *t)
{
	size_t n = strlen(t), i;
	char *k;

	if (n % 2 || n > 4096)
		return NULL;
	k = xmalloc(n / 2 + 1);
	for (i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(t + 2 * i, "%2x", &v) != 1 || !v) {
			free(k);
			return NULL;
		}
		k[i] = (char)v;
	}
	k[n / 2] = '\0';
	return k;
}

static int listing_args(struct s3d *s, struct listing *l, int v2,
			char **after_owned)
{
	const char *et = s3d__query(s, "encoding-type");
	const char *tok = s3d__query(s, "continuation-token");

	*after_owned = NULL;
	l->prefix = s3d__query(s, "prefix") ? s3d__query(s, "prefix") : "";
	l->delim = s3d__query(s, "delimiter");
	if (et && strcmp(et, "url"))
		return s3d__fail(s, "InvalidArgument", 400,
				 "Invalid Encoding Method specified in "
				 "Request");
	l->url = et != NULL;
	if (int_arg(s, "max-keys", LIST_MAX, LIST_MAX, &l->max))
		return -1;
	if (!v2) {
		l->after = s3d__query(s, "marker");
		return 0;
	}
	l->after = s3d__query(s, "start-after");
	if (tok) {
		*after_owned = token_decode(tok);
		if (!*after_owned)
			return s3d__fail(s, "InvalidArgument", 400,
					 "The continuation token provided is "
					 "incorrect");
		l->after = *after_owned;
	}
	return 0;
}

static void listing_xml(struct s3d *s, struct listing *l, int v2, struct buf *b)
{
	s3d__xml_begin(b, "ListBucketResult");
	s3d__xml_el(b, "Name", s->bucket);
	enc(s, l, b, "Prefix", l->prefix);
	if (!v2) {
		enc(s, l, b, "Marker",
		    s3d__query(s, "marker") ? s3d__query(s, "marker") : "");
		if (l->truncated && l->delim && l->last)
			enc(s, l, b, "NextMarker", l->last);
	} else {
		s3d__xml_elf(b, "KeyCount", "%zu", l->count);
		if (s3d__query(s, "continuation-token"))
			s3d__xml_el(b, "ContinuationToken",
				    s3d__query(s, "continuation-token"));
		if (l->truncated && l->last) {
			char *t = token_encode(l->last);

			s3d__xml_el(b, "NextContinuationToken", t);
			free(t);
		}
		if (s3d__query(s, "start-after"))
			enc(s, l, b, "StartAfter",
			    s3d__query(s, "start-after"));
	}
	s3d__xml_elf(b, "MaxKeys", "%ld", l->max);
	if (l->delim)
		enc(s, l, b, "Delimiter", l->delim);
	if (l->url)
		s3d__xml_el(b, "EncodingType", "url");
	s3d__xml_el(b, "IsTruncated", l->truncated ? "true" : "false");
	(void)buf_add(b, l->contents.data, l->contents.len);
	(void)buf_add(b, l->prefixes.data, l->prefixes.len);
	s3d__xml_close(b, "ListBucketResult");
}

void s3d__op_list_objects(struct s3d *s, struct s3d_reply *r, int v2)
{
	struct stor_list keys = STOR_LIST_INIT;
	struct listing l;
	char *after = NULL;

	memset(&l, 0, sizeof(l));
	if (s3d__need_bucket(s, s->bucket) || listing_args(s, &l, v2, &after))
		goto out;
	if (!s3d__allowed(s, s->bucket, l.prefix)) {
		s3d__fail(s, "AccessDenied", 403,
			  "Access Denied: listing '%s/%s' is outside the S3 "
			  "prefixes of key %s",
			  s->bucket, l.prefix, s->who->access_key_id);
		goto out;
	}
	if (l.max && keys_under(s, l.prefix, &keys))
		goto out;
	collect(s, &l, &keys, v2);
	listing_xml(s, &l, v2, &r->body);
	r->status = 200;
out:
	stor_list_release(&keys);
	buf_release(&l.contents);
	buf_release(&l.prefixes);
	free(l.last);
	free(after);
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

/* ------------------------------------------------------------ multipart */

static void upload_dir(const struct s3d *s, const char *id, struct buf *out)
{
	buf_reset(out);
	(void)buf_addf(out, "%s/%s", s->env->uploads, id);
}

/* The upload named by ?uploadId, for this bucket and key: its record. */
static json_t *load_upload(struct s3d *s)
{
	const char *id = s3d__query(s, "uploadId");
	struct buf p = BUF_INIT;
	const char *b = NULL, *k = NULL;
	json_t *j;

	snprintf(s->upload_id, sizeof(s->upload_id), "%.32s", id ? id : "");
	if (!s3d__upload_id_ok(id)) {
		s3d__fail(s, "NoSuchUpload", 404,
			  "The specified upload does not exist. The upload ID "
			  "may be invalid, or the upload may have been aborted "
			  "or completed.");
		return NULL;
	}
	upload_dir(s, id, &p);
	(void)buf_adds(&p, "/upload.json");
	j = json_load_file(p.data, 0, NULL);
	buf_release(&p);
	if (!j || json_unpack(j, "{s:s, s:s}", "bucket", &b, "key", &k) ||
	    strcmp(b, s->bucket) || strcmp(k, s->key)) {
		json_decref(j);
		s3d__fail(s, "NoSuchUpload", 404,
			  "The specified upload does not exist. The upload ID "
			  "may be invalid, or the upload may have been aborted "
			  "or completed.");
		return NULL;
	}
	return j;
}

int s3d__begin_create_upload(struct s3d *s)
{
	json_t *h = NULL;
	int r = s3d__need_bucket(s, s->bucket) || s3d__kept_headers(s, &h);

	json_decref(h);
	return r ? -1 : 0;
}

/* CreateMultipartUpload's count and mkdir, and the reaper's pass. */
static pthread_mutex_t uploads_lock = PTHREAD_MUTEX_INITIALIZER;

/* How many uploads owner holds open: folders whose id carries its tag. */
static long open_uploads(const struct s3d_env *env, const char *owner)
{
	char tag[S3D_OWNER_TAG + 1];
	struct dirent *de;
	DIR *d = opendir(env->uploads);
	long n = 0;

	s3d__upload_owner_tag(owner, tag);
	while (d && (de = readdir(d)))
		if (s3d__upload_id_ok(de->d_name) &&
		    !memcmp(de->d_name, tag, S3D_OWNER_TAG))
			n++;
	if (d)
		closedir(d);
	return n;
}

void s3d__op_create_upload(struct s3d *s, struct s3d_reply *r)
{
	struct buf p = BUF_INIT, err = BUF_INIT;
	json_t *h = NULL, *rec = NULL;
	char id[33], *text = NULL;
	const char *owner = s->who ? s->who->access_key_id : "";
	long open_n = 0;
	int made;

	if (s3d__kept_headers(s, &h))
		goto out;
	if (s3d__upload_id(owner, id) ||
	    fs_mkdir_p(s->env->uploads, 0700, &err)) {
		s3d__fail(s, "InternalError", 500, "cannot start an upload: %s",
			  err.data ? err.data : "no randomness");
		goto out;
	}
	upload_dir(s, id, &p);
	/* Counted and made under one lock: two creates never both pass
	 * the cap with its last place. */
	pthread_mutex_lock(&uploads_lock);
	open_n = s->env->max_uploads > 0 ? open_uploads(s->env, owner) : 0;
	made = s->env->max_uploads > 0 && open_n >= s->env->max_uploads ?
		       1 :
		       mkdir(p.data, 0700);
	pthread_mutex_unlock(&uploads_lock);
	if (made > 0) {
		s3d__fail(
			s, "TooManyUploads", 400,
			"Access key %s already has %ld open multipart uploads, "
			"the most allowed (--s3-max-uploads): complete or "
			"abort some first",
			owner[0] ? owner : "(anonymous)", open_n);
		goto out;
	}
	if (made) {
		s3d__fail(s, "InternalError", 500, "mkdir %s: %s", p.data,
			  strerror(errno));
		goto out;
	}
	rec = json_pack("{s:s, s:s, s:O, s:I}", "bucket", s->bucket, "key",
			s->key, "headers", h, "initiated",
			(json_int_t)s->now_ms);
	text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
	(void)buf_adds(&p, "/upload.json");
	if (!text || fs_write_atomic(p.data, text, strlen(text), 0600,
				     FS_WRITE_SYNC, &err)) {
		s3d__fail(s, "InternalError", 500, "cannot start an upload: %s",
			  err.data ? err.data : "no memory");
		/* No half-made upload counts against the key's cap. */
		p.len -= strlen("/upload.json");
		p.data[p.len] = '\0';
		(void)rmdir(p.data);
		goto out;
	}
	r->status = 200;
	s3d__xml_begin(&r->body, "InitiateMultipartUploadResult");
	s3d__xml_el(&r->body, "Bucket", s->bucket);
	s3d__xml_el(&r->body, "Key", s->key);
	s3d__xml_el(&r->body, "UploadId", id);
	s3d__xml_close(&r->body, "InitiateMultipartUploadResult");
out:
	free(text);
	json_decref(rec);
	json_decref(h);
	buf_release(&p);
	buf_release(&err);
}

int s3d__begin_upload_part(struct s3d *s)
{
	const char *pn = s3d__query(s, "partNumber");
	struct buf p = BUF_INIT;
	json_t *up;
	char *end;
	long n = strtol(pn, &end, 10);
	int r;

	if (!*pn || *end || n < 1 || n > S3D_MAX_PARTS)
		return s3d__fail(s, "InvalidArgument", 400,
				 "Part number must be an integer between 1 "
				 "and %d, inclusive",
				 S3D_MAX_PARTS);
	s->part = (int)n;
	up = load_upload(s);
	if (!up)
		return -1;
	json_decref(up);
	upload_dir(s, s->upload_id, &p);
	(void)buf_addf(&p, "/%05d", s->part);
	r = s3d__intake_file(s, p.data, S3D_MAX_PART);
	buf_release(&p);
	return r;
}

void s3d__op_upload_part(struct s3d *s, struct s3d_reply *r)
{
	struct s3d_obj o;
	char q[40];

	memset(&o, 0, sizeof(o));
	if (s3d__intake_end(s))
		return;
	snprintf(o.etag, sizeof(o.etag), "%s", s->body.md5_hex);
	/*
	 * Not flushed to disk: a part is read once more, by Complete, whose
	 * object is flushed; a part lost with the machine comes back short
	 * (the attribute's size no longer matches, its MD5 is worked out
	 * again) and Complete refuses it as InvalidPart. Flushing every part
	 * as well wrote each byte to disk twice.
	 */
	if (s3d__commit(s, &o, 0))
		return;
	r->status = 200;
	snprintf(q, sizeof(q), "\"%.32s\"", o.etag);
	s3d__reply_header(r, "ETag", q);
	if (s->body.ck)
		s3d__reply_header(r, s->body.ck_name, s->body.ck_b64);
}

/* The ETag of a part as the client quotes it, compared unquoted. */
static int etag_is(const char *given, const char *md5)
{
	size_t n = strlen(given);

	if (n == 34 && given[0] == '"' && given[33] == '"')
		return !strncmp(given + 1, md5, 32);
	return n == 32 && !strcmp(given, md5);
}

static const struct s3d_part *find_part(const struct s3d_part *parts, size_t n,
					int number)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (parts[i].number == number)
			return &parts[i];
	return NULL;
}

/* Checks the client's list against the parts held. */
static int check_complete(struct s3d *s, const struct s3d_xml_item *items,
			  size_t n, const struct s3d_part *parts, size_t np)
{
	int prev = 0;
	size_t i;

	if (!n)
		return s3d__fail(s, "MalformedXML", 400,
				 "You must specify at least one part");
	/* The order first, as S3 does: then sizes and ETags. */
	for (i = 0; i < n; i++) {
		long num = strtol(items[i].a ? items[i].a : "", NULL, 10);

		if (i && num <= prev)
			return s3d__fail(s, "InvalidPartOrder", 400,
					 "The list of parts was not in "
					 "ascending order. The parts list must "
					 "be specified in order by part "
					 "number.");
		prev = (int)num;
	}
	prev = 0;
	for (i = 0; i < n; i++) {
		char *end;
		long num = strtol(items[i].a ? items[i].a : "", &end, 10);
		const struct s3d_part *p;

		if (!items[i].a || *end || num < 1 || num > S3D_MAX_PARTS)
			return s3d__fail(s, "InvalidPart", 400,
					 "One or more of the specified parts "
					 "could not be found (bad PartNumber)");
		if (num <= prev)
			return s3d__fail(s, "InvalidPartOrder", 400,
					 "The list of parts was not in "
					 "ascending order. The parts list must "
					 "be specified in order by part "
					 "number.");
		prev = (int)num;
		p = find_part(parts, np, (int)num);
		if (!p || !items[i].b || !etag_is(items[i].b, p->md5))
			return s3d__fail(s, "InvalidPart", 400,
					 "One or more of the specified parts "
					 "could not be found. The part may not "
					 "have been uploaded, or the specified "
					 "entity tag may not match the part's "
					 "entity tag (part %ld).",
					 num);
		if (i + 1 < n && p->size < S3D_MIN_PART)
			return s3d__fail(s, "EntityTooSmall", 400,
					 "Your proposed upload is smaller than "
					 "the minimum allowed size (part %ld "
					 "has %lld bytes; all but the last "
					 "need %lld)",
					 num, (long long)p->size,
					 (long long)S3D_MIN_PART);
	}
	return 0;
}

/* Concatenates the parts into the object's temp file; fills etag. */
static int assemble(struct s3d *s, const struct s3d_xml_item *items, size_t n,
		    char etag[48])
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	struct buf dir = BUF_INIT, p = BUF_INIT, err = BUF_INIT;
	unsigned char d[16];
	size_t i;
	int r = md && EVP_DigestInit_ex(md, EVP_md5(), NULL) ? 0 : -1;

	upload_dir(s, s->upload_id, &dir);
	for (i = 0; !r && i < n; i++) {
		const char *q = items[i].b[0] == '"' ? items[i].b + 1 :
						       items[i].b;
		unsigned char bin[16];
		int64_t copied = 0;
		int fd, k;

		for (k = 0; k < 16; k++) {
			unsigned v;

			(void)sscanf(q + 2 * k, "%2x", &v);
			bin[k] = (unsigned char)v;
		}
		(void)EVP_DigestUpdate(md, bin, 16);
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%05ld", dir.data,
			       strtol(items[i].a, NULL, 10));
		fd = open(p.data, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || stor_fs_copy_fd(fd, s->fd, &copied, &err))
			r = s3d__fail(s, "InternalError", 500,
				      "cannot assemble part %s: %s", items[i].a,
				      err.len ? err.data : strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	if (!r && EVP_DigestFinal_ex(md, d, NULL)) {
		stor_hex(d, 16, etag);
		snprintf(etag + 32, 16, "-%zu", n);
	} else if (!r) {
		r = s3d__fail(s, "InternalError", 500, "md5 failed");
	}
	EVP_MD_CTX_free(md);
	buf_release(&dir);
	buf_release(&p);
	buf_release(&err);
	return r;
}

static void remove_upload(struct s3d *s)
{
	struct buf dir = BUF_INIT;

	upload_dir(s, s->upload_id, &dir);
	(void)fs_remove_tree(dir.data);
	buf_release(&dir);
}

static void complete_reply(struct s3d *s, struct s3d_reply *r, const char *etag)
{
	r->status = 200;
	s3d__xml_begin(&r->body, "CompleteMultipartUploadResult");
	s3d__xml_elf(&r->body, "Location", "/%s/%s", s->bucket, s->key);
	s3d__xml_el(&r->body, "Bucket", s->bucket);
	s3d__xml_el(&r->body, "Key", s->key);
	s3d__xml_elf(&r->body, "ETag", "\"%s\"", etag);
	s3d__xml_close(&r->body, "CompleteMultipartUploadResult");
}

void s3d__op_complete_upload(struct s3d *s, struct s3d_reply *r)
{
	struct s3d_xml_item *items = NULL;
	struct s3d_part *parts = NULL;
	struct buf err = BUF_INIT, dir = BUF_INIT;
	struct s3d_obj o;
	size_t n = 0, np = 0;
	json_t *up = NULL;

	memset(&o, 0, sizeof(o));
	if (s3d__intake_end(s) || s3d__need_bucket(s, s->bucket) ||
	    !(up = load_upload(s)))
		goto out;
	if (s3d__xml_parse_list(s->xml.data, s->xml.len,
				"CompleteMultipartUpload", "Part", "PartNumber",
				"ETag", NULL, NULL, S3D_MAX_PARTS, &items, &n,
				&err)) {
		s3d__fail(s, "MalformedXML", 400, "%s", err.data);
		goto out;
	}
	upload_dir(s, s->upload_id, &dir);
	if (s3d__parts_list(dir.data, &parts, &np, &err)) {
		s3d__fail(s, "NoSuchUpload", 404, "%s", err.data);
		goto out;
	}
	if (check_complete(s, items, n, parts, np))
		goto out;
	s3d__object_path(s, s->bucket, s->key, &s->path);
	if (stor_fs_tmp_open(s->path.data, &s->fd, &s->tmp, &err)) {
		s3d__fail(s, "InternalError", 500, "%s", err.data);
		goto out;
	}
	if (assemble(s, items, n, o.etag))
		goto out;
	o.headers = json_incref(json_object_get(up, "headers"));
	if (s3d__commit(s, &o, 1))
		goto out;
	remove_upload(s);
	complete_reply(s, r, o.etag);
out:
	s3d__xml_items_free(items, n);
	free(parts);
	json_decref(up);
	s3d__obj_release(&o);
	buf_release(&err);
	buf_release(&dir);
}

void s3d__op_abort_upload(struct s3d *s, struct s3d_reply *r)
{
	json_t *up = load_upload(s);

	if (!up)
		return;
	json_decref(up);
	remove_upload(s);
	r->status = 204;
}

void s3d__op_list_parts(struct s3d *s, struct s3d_reply *r)
{
	struct s3d_part *parts = NULL;
	struct buf dir = BUF_INIT, err = BUF_INIT;
	long max, marker;
	size_t np = 0, i, shown = 0;
	json_t *up = load_upload(s);
	int truncated = 0, last = 0;

	if (!up || int_arg(s, "max-parts", LIST_MAX, LIST_MAX, &max) ||
	    int_arg(s, "part-number-marker", 0, S3D_MAX_PARTS, &marker))
		goto out;
	upload_dir(s, s->upload_id, &dir);
	if (s3d__parts_list(dir.data, &parts, &np, &err)) {
		s3d__fail(s, "NoSuchUpload", 404, "%s", err.data);
		goto out;
	}
	s3d__xml_begin(&r->body, "ListPartsResult");
	s3d__xml_el(&r->body, "Bucket", s->bucket);
	s3d__xml_el(&r->body, "Key", s->key);
	s3d__xml_el(&r->body, "UploadId", s->upload_id);
	s3d__xml_elf(&r->body, "PartNumberMarker", "%ld", marker);
	for (i = 0; i < np; i++) {
		char t[32];

		if (parts[i].number <= marker)
			continue;
		if ((long)shown == max) {
			truncated = 1;
			break;
		}
		s3d__xml_open(&r->body, "Part");
		s3d__xml_elf(&r->body, "PartNumber", "%d", parts[i].number);
		s3d__iso_time(parts[i].mtime_ms, t);
		s3d__xml_el(&r->body, "LastModified", t);
		s3d__xml_elf(&r->body, "ETag", "\"%s\"", parts[i].md5);
		s3d__xml_elf(&r->body, "Size", "%lld",
			     (long long)parts[i].size);
		s3d__xml_close(&r->body, "Part");
		last = parts[i].number;
		shown++;
	}
	s3d__xml_elf(&r->body, "NextPartNumberMarker", "%d", last);
	s3d__xml_elf(&r->body, "MaxParts", "%ld", max);
	s3d__xml_el(&r->body, "IsTruncated", truncated ? "true" : "false");
	s3d__xml_el(&r->body, "StorageClass", "STANDARD");
	owner(&r->body);
	s3d__xml_close(&r->body, "ListPartsResult");
	r->status = 200;
out:
	free(parts);
	json_decref(up);
	buf_release(&dir);
	buf_release(&err);
}

/* One upload in progress, for ListMultipartUploads. */
struct upl {
	char *key;
	char id[33];
	int64_t initiated;
};

static int upl_cmp(const void *a, const void *b)
{
	const struct upl *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : strcmp(x->id, y->id);
}

/* The uploads of this bucket under prefix that the caller may see,
 * sorted by key, then upload id. */
static struct upl *uploads_of(struct s3d *s, const char *prefix, size_t *n)
{
	struct upl *v = NULL;
	size_t alloc = 0;
	struct dirent *de;
	DIR *d = opendir(s->env->uploads);

	*n = 0;
	while (d && (de = readdir(d))) {
		struct buf p = BUF_INIT;
		const char *bk = NULL, *k = NULL;
		json_int_t init = 0;
		json_t *j;

		if (!s3d__upload_id_ok(de->d_name))
			continue;
		upload_dir(s, de->d_name, &p);
		(void)buf_adds(&p, "/upload.json");
		j = json_load_file(p.data, 0, NULL);
		if (j &&
		    !json_unpack(j, "{s:s, s:s, s:I}", "bucket", &bk, "key", &k,
				 "initiated", &init) &&
		    !strcmp(bk, s->bucket) &&
		    !strncmp(k, prefix, strlen(prefix)) &&
		    s3d__allowed(s, bk, k)) {
			ALLOC_GROW(v, *n + 1, alloc);
			v[*n].key = xstrdup(k);
			memcpy(v[*n].id, de->d_name, sizeof(v[*n].id));
			v[*n].initiated = (int64_t)init;
			(*n)++;
		}
		json_decref(j);
		buf_release(&p);
	}
	if (d)
		closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), upl_cmp);
	return v;
}

/* Whether u comes after the markers (key-marker, upload-id-marker). */
static int after_markers(const struct upl *u, const char *km, const char *im)
{
	int c;

	if (!km || !*km)
		return 1;
	c = strcmp(u->key, km);
	if (c)
		return c > 0;
	return im && *im && strcmp(u->id, im) > 0;
}

struct upl_page {
	struct listing l; /* prefix, delimiter, encoding, max, count */
	const char *km, *im;
	char *next_key;
	char next_id[33];
	struct buf uploads;
};

static void upl_one(struct s3d *s, struct upl_page *pg, const struct upl *u)
{
	char t[32];

	s3d__xml_open(&pg->uploads, "Upload");
	enc(s, &pg->l, &pg->uploads, "Key", u->key);
	s3d__xml_el(&pg->uploads, "UploadId", u->id);
	s3d__xml_open(&pg->uploads, "Initiator");
	s3d__xml_el(&pg->uploads, "ID", OWNER_ID);
	s3d__xml_el(&pg->uploads, "DisplayName", OWNER_ID);
	s3d__xml_close(&pg->uploads, "Initiator");
	owner(&pg->uploads);
	s3d__iso_time(u->initiated, t);
	s3d__xml_el(&pg->uploads, "StorageClass", "STANDARD");
	s3d__xml_el(&pg->uploads, "Initiated", t);
	s3d__xml_close(&pg->uploads, "Upload");
}

/* Pages v as S3 does: markers, delimiter roll-up, max-uploads. */
static void upl_collect(struct s3d *s, struct upl_page *pg, const struct upl *v,
			size_t n)
{
	size_t i, plen = strlen(pg->l.prefix);
	char *last_cp = NULL;

	for (i = 0; i < n; i++) {
		const char *d = NULL;
		char *cp = NULL;

		if (!after_markers(&v[i], pg->km, pg->im))
			continue;
		if (pg->l.delim && *pg->l.delim)
			d = strstr(v[i].key + plen, pg->l.delim);
		if (d) {
			cp = xstrndup(v[i].key, (size_t)(d - v[i].key) +
							strlen(pg->l.delim));
			if ((last_cp && !strcmp(cp, last_cp)) ||
			    (pg->km && strcmp(cp, pg->km) <= 0)) {
				free(cp);
				continue;
			}
		}
		if ((long)pg->l.count == pg->l.max) {
			pg->l.truncated = 1;
			free(cp);
			break;
		}
		pg->l.count++;
		free(pg->next_key);
		if (cp) {
			s3d__xml_open(&pg->l.prefixes, "CommonPrefixes");
			enc(s, &pg->l, &pg->l.prefixes, "Prefix", cp);
			s3d__xml_close(&pg->l.prefixes, "CommonPrefixes");
			free(last_cp);
			last_cp = cp;
			pg->next_key = xstrdup(cp);
			pg->next_id[0] = '\0';
			continue;
		}
		upl_one(s, pg, &v[i]);
		pg->next_key = xstrdup(v[i].key);
		memcpy(pg->next_id, v[i].id, sizeof(pg->next_id));
	}
	free(last_cp);
}

void s3d__op_list_uploads(struct s3d *s, struct s3d_reply *r)
{
	const char *et = s3d__query(s, "encoding-type");
	struct upl_page pg;
	struct upl *v = NULL;
	size_t n = 0, i;
	struct buf *b = &r->body;

	memset(&pg, 0, sizeof(pg));
	pg.l.prefix = s3d__query(s, "prefix") ? s3d__query(s, "prefix") : "";
	pg.l.delim = s3d__query(s, "delimiter");
	pg.l.url = et != NULL;
	pg.km = s3d__query(s, "key-marker");
	pg.im = s3d__query(s, "upload-id-marker");
	if (s3d__need_bucket(s, s->bucket) ||
	    int_arg(s, "max-uploads", LIST_MAX, LIST_MAX, &pg.l.max))
		goto out;
	if (et && strcmp(et, "url")) {
		s3d__fail(s, "InvalidArgument", 400,
			  "Invalid Encoding Method specified in Request");
		goto out;
	}
	v = uploads_of(s, pg.l.prefix, &n);
	upl_collect(s, &pg, v, n);
	s3d__xml_begin(b, "ListMultipartUploadsResult");
	s3d__xml_el(b, "Bucket", s->bucket);
	enc(s, &pg.l, b, "KeyMarker", pg.km ? pg.km : "");
	s3d__xml_el(b, "UploadIdMarker", pg.im ? pg.im : "");
	if (pg.l.truncated && pg.next_key) {
		enc(s, &pg.l, b, "NextKeyMarker", pg.next_key);
		s3d__xml_el(b, "NextUploadIdMarker", pg.next_id);
	}
	enc(s, &pg.l, b, "Prefix", pg.l.prefix);
	if (pg.l.delim)
		enc(s, &pg.l, b, "Delimiter", pg.l.delim);
	s3d__xml_elf(b, "MaxUploads", "%ld", pg.l.max);
	if (pg.l.url)
		s3d__xml_el(b, "EncodingType", "url");
	s3d__xml_el(b, "IsTruncated", pg.l.truncated ? "true" : "false");
	(void)buf_add(b, pg.uploads.data, pg.uploads.len);
	(void)buf_add(b, pg.l.prefixes.data, pg.l.prefixes.len);
	s3d__xml_close(b, "ListMultipartUploadsResult");
	r->status = 200;
out:
	for (i = 0; i < n; i++)
		free(v[i].key);
	free(v);
	free(pg.next_key);
	buf_release(&pg.uploads);
	buf_release(&pg.l.prefixes);
}

/* Removes one upload folder when its record says it began before
 * cutoff_ms (or, with no readable record, the folder is that old). */
static int reap_one(const struct s3d_env *env, const char *id,
		    int64_t cutoff_ms)
{
	struct buf dir = BUF_INIT, p = BUF_INIT;
	json_int_t init = -1;
	struct stat st;
	json_t *j;
	int reaped = 0;

	(void)buf_addf(&dir, "%s/%s", env->uploads, id);
	(void)buf_addf(&p, "%s/upload.json", dir.data);
	j = json_load_file(p.data, 0, NULL);
	if (!j || json_unpack(j, "{s:I}", "initiated", &init))
		init = !stat(dir.data, &st) ? (json_int_t)st.st_mtime * 1000 :
					      -1;
	json_decref(j);
	if (init >= 0 && init < cutoff_ms && !fs_remove_tree(dir.data)) {
		log_info("s3: aborted upload %s, older than %lld s", id,
			 (long long)(env->upload_max_age_ms / 1000));
		reaped = 1;
	}
	buf_release(&dir);
	buf_release(&p);
	return reaped;
}

size_t s3d_reap_uploads(const struct s3d_env *env, int64_t now_ms)
{
	static int64_t last_ms;
	int64_t every;
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	if (!env->uploads || env->upload_max_age_ms <= 0)
		return 0;
	every = env->upload_max_age_ms / 4;
	if (every < 250)
		every = 250;
	if (every > 60000)
		every = 60000;
	if (last_ms && now_ms - last_ms < every && now_ms >= last_ms)
		return 0;
	last_ms = now_ms;
	pthread_mutex_lock(&uploads_lock);
	d = opendir(env->uploads);
	while (d && (de = readdir(d)))
		if (s3d__upload_id_ok(de->d_name))
			n += (size_t)reap_one(env, de->d_name,
					      now_ms - env->upload_max_age_ms);
	if (d)
		closedir(d);
	pthread_mutex_unlock(&uploads_lock);
	return n;
}
