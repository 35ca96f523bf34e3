/*
 * S3's multipart uploads (storage/s3d/multipart.h): create, upload a
 * part, complete, abort, list the parts; and the reaper of uploads
 * left open too long. An upload is a folder under the uploads root
 * (storage/s3d/meta.h).
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

#include "storage/s3d/intake.h"
#include "storage/s3d/multipart.h"
#include "storage/s3d/request.h"
#include "storage/s3d/xml.h"
#include "storage/fs.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/banned.h"

void s3d__upload_dir(const struct s3d *s, const char *id, struct buf *out)
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
	s3d__upload_dir(s, id, &p);
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
	s3d__upload_dir(s, id, &p);
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
	s3d__upload_dir(s, s->upload_id, &p);
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

	s3d__upload_dir(s, s->upload_id, &dir);
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

	s3d__upload_dir(s, s->upload_id, &dir);
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
	s3d__upload_dir(s, s->upload_id, &dir);
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
	s3d__changed(s, S3D_CH_PUT, s->bucket, s->key);
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

	if (!up ||
	    s3d__int_arg(s, "max-parts", S3D_LIST_MAX, S3D_LIST_MAX, &max) ||
	    s3d__int_arg(s, "part-number-marker", 0, S3D_MAX_PARTS, &marker))
		goto out;
	s3d__upload_dir(s, s->upload_id, &dir);
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
	s3d__xml_owner(&r->body);
	s3d__xml_close(&r->body, "ListPartsResult");
	r->status = 200;
out:
	free(parts);
	json_decref(up);
	buf_release(&dir);
	buf_release(&err);
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
