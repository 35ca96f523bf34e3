/*
 * The body of an S3 request (storage/s3d/intake.h): streamed through the
 * decoder of storage/s3d/body.h into a temp file beside the object, or
 * into a buffer for an XML body; the headers an object keeps; the
 * commit that puts a finished temp file in place.
 */
#define LOG_TAG "s3"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "storage/s3d/intake.h"
#include "storage/s3d/request.h"
#include "storage/fs.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define WRITE_CHUNK (1u << 20)

/* -------------------------------------------------------------- bodies */

static const char *get_header(void *ctx, const char *name)
{
	return s3d__header(ctx, name);
}

static int flush_pending(struct s3d *s)
{
	size_t off = 0;

	while (off < s->pending.len && !s->write_failed) {
		ssize_t w = write(s->fd, s->pending.data + off,
				  s->pending.len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			s->write_failed = errno;
			break;
		}
		off += (size_t)w;
	}
	buf_reset(&s->pending);
	return s->write_failed ? -1 : 0;
}

static int sink_file(void *ctx, const char *data, size_t n)
{
	struct s3d *s = ctx;

	if (s->write_failed)
		return -1;
	if (s->pending.len + n > WRITE_CHUNK && flush_pending(s))
		return -1;
	if (n >= WRITE_CHUNK) {
		(void)buf_add(&s->pending, data, n);
		return flush_pending(s);
	}
	return buf_add(&s->pending, data, n) ? -1 : 0;
}

static int sink_xml(void *ctx, const char *data, size_t n)
{
	struct s3d *s = ctx;

	return buf_add(&s->xml, data, n) ? -1 : 0;
}

static int intake_init(struct s3d *s, int64_t limit)
{
	if (s3d__body_init(&s->body, s->have_sig ? &s->sig : NULL, get_header,
			   s, limit)) {
		s3d__fail(s, s->body.code, s->body.status, "%s",
			  s->body.msg.data);
		s3d__body_release(&s->body);
		return -1;
	}
	s->body_ready = 1;
	return 0;
}

int s3d__intake_file(struct s3d *s, const char *path, int64_t limit)
{
	struct buf err = BUF_INIT;

	if (intake_init(s, limit))
		return -1;
	buf_reset(&s->path);
	(void)buf_adds(&s->path, path);
	if (stor_fs_tmp_open(path, &s->fd, &s->tmp, &err)) {
		log_error("S3 %s: %s", s->path.data, err.data);
		s3d__fail(s, "InternalError", 500,
			  "the object cannot be written: %s", err.data);
		buf_release(&err);
		return -1;
	}
	buf_release(&err);
	s->intake = S3D_IN_FILE;
	return 0;
}

int s3d__intake_xml(struct s3d *s)
{
	if (intake_init(s, S3D_XML_BODY_MAX))
		return -1;
	s->intake = S3D_IN_XML;
	return 0;
}

int s3d__intake_end(struct s3d *s)
{
	if (s->code)
		return -1;
	if (!s->body_ready)
		return 0;
	if (s->intake == S3D_IN_FILE && flush_pending(s))
		return s3d__fail(s, "InternalError", 500,
				 "the object could not be written: %s",
				 strerror(s->write_failed));
	if (s3d__body_end(&s->body))
		return s3d__fail(s, s->body.code, s->body.status, "%s",
				 s->body.msg.data);
	return 0;
}

int s3d_refused(const struct s3d *s)
{
	return s->code != NULL;
}

void s3d_data(struct s3d *s, const char *data, size_t n)
{
	if (s->code || !s->body_ready)
		return;
	if (s3d__body_feed(&s->body, data, n,
			   s->intake == S3D_IN_XML ? sink_xml : sink_file, s))
		s3d__fail(s, s->body.code, s->body.status, "%s",
			  s->body.msg.data);
}

/* ------------------------------------------------------- kept headers */

/* Request headers an object keeps, as S3 does. */
static const char *const kept[] = {
	"content-type",	    "content-encoding", "content-disposition",
	"content-language", "cache-control",	"expires",
};

/* x-amz-* request headers that would change what S3 does with the object
 * and that the embedded store cannot honour. */
static const char *const refused[] = {
	"x-amz-server-side-encryption-customer-algorithm",
	"x-amz-acl",
	"x-amz-grant-read",
	"x-amz-grant-write",
	"x-amz-grant-full-control",
	"x-amz-tagging",
	"x-amz-object-lock-mode",
	"x-amz-object-lock-retain-until-date",
	"x-amz-object-lock-legal-hold",
	"x-amz-website-redirect-location",
};

/* Content-Encoding without the transfer's "aws-chunked" token. */
static void add_encoding(json_t *h, const char *v)
{
	struct buf out = BUF_INIT;
	char *copy = xstrdup(v), *save = NULL, *tok;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (!strcasecmp(tok, "aws-chunked"))
			continue;
		(void)buf_addf(&out, "%s%s", out.len ? "," : "", tok);
	}
	if (out.len)
		json_object_set_new(h, "content-encoding",
				    json_string(out.data));
	free(copy);
	buf_release(&out);
}

int s3d__kept_headers(struct s3d *s, json_t **out)
{
	json_t *h = json_object();
	size_t i, j, meta = 0;
	const char *sc = s3d__header(s, "x-amz-storage-class");

	*out = NULL;
	if (sc && strcmp(sc, "STANDARD")) {
		json_decref(h);
		return s3d__fail(s, "InvalidStorageClass", 400,
				 "The storage class you specified is not valid "
				 "here: only STANDARD is kept");
	}
	for (i = 0; i < s->nh; i++) {
		const char *n = s->h[i].name, *v = s->h[i].value;

		/*
		 * SSE-S3 and SSE-KMS ask the server to encrypt at rest: here
		 * that is the controller's disk's job (docs/storage.md), and
		 * answers carry no encryption header claiming otherwise.
		 * Another algorithm is an error, as on S3.
		 */
		if (!strcmp(n, "x-amz-server-side-encryption") &&
		    strcmp(v, "AES256") && strcmp(v, "aws:kms") &&
		    strcmp(v, "aws:kms:dsse")) {
			json_decref(h);
			return s3d__fail(s, "InvalidArgument", 400,
					 "Server Side Encryption with %.40s is "
					 "not valid: AES256, aws:kms or "
					 "aws:kms:dsse",
					 v);
		}
		for (j = 0; j < ARRAY_SIZE(refused); j++)
			if (!strcmp(n, refused[j])) {
				json_decref(h);
				return s3d__fail(s, "NotImplemented", 501,
						 "%s is not supported by the "
						 "embedded store",
						 n);
			}
		if (!strncmp(n, "x-amz-meta-", 11)) {
			meta += strlen(n) - 11 + strlen(v);
			json_object_set_new(h, n, json_string(v));
			continue;
		}
		if (!strcmp(n, "content-encoding")) {
			add_encoding(h, v);
			continue;
		}
		for (j = 0; j < ARRAY_SIZE(kept); j++)
			if (!strcmp(n, kept[j]))
				json_object_set_new(h, n, json_string(v));
	}
	if (meta > S3D_META_MAX) {
		json_decref(h);
		return s3d__fail(s, "MetadataTooLarge", 400,
				 "Your metadata headers exceed the maximum "
				 "allowed metadata size (%d bytes)",
				 S3D_META_MAX);
	}
	*out = h;
	return 0;
}

int s3d__commit(struct s3d *s, const struct s3d_obj *o, int flush)
{
	struct buf err = BUF_INIT;
	int r;

	r = s3d__meta_store(s->fd, o, &err);
	if (!r)
		r = stor_fs_tmp_commit(s->fd, s->tmp.data, s->path.data, flush,
				       &err);
	else
		stor_fs_tmp_abort(s->fd, s->tmp.data);
	s->fd = -1;
	buf_reset(&s->tmp);
	if (r == ERR_TOOBIG)
		s3d__fail(s, "MetadataTooLarge", 400,
			  "Your metadata headers exceed the maximum allowed "
			  "metadata size: %s",
			  err.data);
	else if (r == ERR_CONFLICT ||
		 (r && strstr(err.data, "Not a directory")))
		s3d__fail(s, "InvalidArgument", 400,
			  "The key cannot be kept by the embedded store: %s "
			  "(a key cannot be both an object and a folder of "
			  "others)",
			  err.data);
	else if (r)
		s3d__fail(s, "InternalError", 500, "%s", err.data);
	buf_release(&err);
	return r ? -1 : 0;
}
