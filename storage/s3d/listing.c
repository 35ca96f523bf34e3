/*
 * S3's listings of a bucket (storage/s3d/listing.h): ListObjects,
 * ListObjectsV2 and ListMultipartUploads, with their markers,
 * continuation tokens, delimiter roll-up and URL encoding.
 */
#define LOG_TAG "s3"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/s3d/listing.h"
#include "storage/s3d/meta.h"
#include "storage/s3d/multipart.h"
#include "storage/s3d/request.h"
#include "storage/s3d/xml.h"
#include "storage/fs.h"
#include "storage/storage.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* ------------------------------------------------------ ListObjects(V2) */

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
		s3d__xml_owner(&l->contents);
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
	if (s3d__int_arg(s, "max-keys", S3D_LIST_MAX, S3D_LIST_MAX, &l->max))
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

/* ------------------------------------------------ ListMultipartUploads */

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
		s3d__upload_dir(s, de->d_name, &p);
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
	s3d__xml_el(&pg->uploads, "ID", S3D_OWNER_ID);
	s3d__xml_el(&pg->uploads, "DisplayName", S3D_OWNER_ID);
	s3d__xml_close(&pg->uploads, "Initiator");
	s3d__xml_owner(&pg->uploads);
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
	    s3d__int_arg(s, "max-uploads", S3D_LIST_MAX, S3D_LIST_MAX,
			 &pg.l.max))
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
