/*
 * The S3 REST face of the embedded store (storage/s3d/s3d.h): a request
 * is read (request.c), matched to an operation, checked, and run by the
 * files that own the operation: object.c, bucket.c, listing.c and
 * multipart.c. Errors are answered here.
 */
#define LOG_TAG "s3"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/s3d/bucket.h"
#include "storage/s3d/intake.h"
#include "storage/s3d/listing.h"
#include "storage/s3d/multipart.h"
#include "storage/s3d/object.h"
#include "storage/s3d/request.h"
#include "storage/s3d/xml.h"
#include "storage/fs.h"
#include "storage/storage.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* ------------------------------------------------------------ dispatch */

/* Query names that pick no sub-resource (arguments of an operation). */
static const char *const plain_args[] = {
	"prefix",
	"delimiter",
	"max-keys",
	"marker",
	"continuation-token",
	"start-after",
	"encoding-type",
	"fetch-owner",
	"list-type",
	"key-marker",
	"upload-id-marker",
	"max-uploads",
	"max-parts",
	"part-number-marker",
	"partNumber",
	"uploadId",
	"uploads",
	"delete",
	"location",
	"versioning",
	"x-id",
	"response-content-type",
	"response-content-language",
	"response-expires",
	"response-cache-control",
	"response-content-disposition",
	"response-content-encoding",
	"X-Amz-Algorithm",
	"X-Amz-Credential",
	"X-Amz-Date",
	"X-Amz-Expires",
	"X-Amz-SignedHeaders",
	"X-Amz-Signature",
	"X-Amz-Security-Token",
};

static int unsupported_query(struct s3d *s)
{
	size_t i, j;

	for (i = 0; i < s->nq; i++) {
		for (j = 0; j < ARRAY_SIZE(plain_args); j++)
			if (!strcmp(s->q[i].k, plain_args[j]))
				break;
		if (j == ARRAY_SIZE(plain_args))
			return s3d__fail(s, "NotImplemented", 501,
					 "'%.60s' is not supported by the "
					 "embedded store (no ACLs, policies, "
					 "tagging, versioning or lifecycle "
					 "rules)",
					 s->q[i].k);
	}
	return 0;
}

static enum s3d_op service_op(struct s3d *s)
{
	if (!strcmp(s->method, "GET"))
		return S3D_LIST_BUCKETS;
	s3d__fail(s, "MethodNotAllowed", 405,
		  "The specified method is not allowed against this resource.");
	return S3D_OP_NONE;
}

static enum s3d_op bucket_op(struct s3d *s)
{
	const char *m = s->method;

	if (!strcmp(m, "PUT") && !s->nq)
		return S3D_CREATE_BUCKET;
	if (!strcmp(m, "HEAD"))
		return S3D_HEAD_BUCKET;
	if (!strcmp(m, "DELETE") && !s->nq)
		return S3D_DELETE_BUCKET;
	if (!strcmp(m, "POST") && s3d__query(s, "delete"))
		return S3D_DELETE_OBJECTS;
	if (!strcmp(m, "GET")) {
		const char *lt = s3d__query(s, "list-type");

		if (s3d__query(s, "location"))
			return S3D_GET_BUCKET_LOCATION;
		if (s3d__query(s, "versioning"))
			return S3D_GET_BUCKET_VERSIONING;
		if (s3d__query(s, "uploads"))
			return S3D_LIST_UPLOADS;
		if (lt && strcmp(lt, "2")) {
			s3d__fail(s, "InvalidArgument", 400,
				  "list-type must be 2");
			return S3D_OP_NONE;
		}
		return lt ? S3D_LIST_OBJECTS_V2 : S3D_LIST_OBJECTS;
	}
	s3d__fail(s, "MethodNotAllowed", 405,
		  "The specified method is not allowed against this resource.");
	return S3D_OP_NONE;
}

static enum s3d_op object_op(struct s3d *s)
{
	const char *m = s->method;
	int upload = s3d__query(s, "uploadId") != NULL;

	if (!strcmp(m, "PUT") && upload && s3d__query(s, "partNumber")) {
		if (s3d__header(s, "x-amz-copy-source")) {
			s3d__fail(s, "NotImplemented", 501,
				  "UploadPartCopy is not supported by the "
				  "embedded store: upload the part's bytes");
			return S3D_OP_NONE;
		}
		return S3D_UPLOAD_PART;
	}
	if (!strcmp(m, "PUT"))
		return s3d__header(s, "x-amz-copy-source") ? S3D_COPY_OBJECT :
							     S3D_PUT_OBJECT;
	if (s3d__query(s, "partNumber")) {
		s3d__fail(s, "NotImplemented", 501,
			  "partNumber on %s is not supported by the embedded "
			  "store: use a Range",
			  m);
		return S3D_OP_NONE;
	}
	if (!strcmp(m, "GET"))
		return upload ? S3D_LIST_PARTS : S3D_GET_OBJECT;
	if (!strcmp(m, "HEAD"))
		return S3D_HEAD_OBJECT;
	if (!strcmp(m, "DELETE"))
		return upload ? S3D_ABORT_UPLOAD : S3D_DELETE_OBJECT;
	if (!strcmp(m, "POST") && s3d__query(s, "uploads"))
		return S3D_CREATE_UPLOAD;
	if (!strcmp(m, "POST") && upload)
		return S3D_COMPLETE_UPLOAD;
	s3d__fail(s, "MethodNotAllowed", 405,
		  "The specified method is not allowed against this resource.");
	return S3D_OP_NONE;
}

static const char *const op_names[] = {
	[S3D_OP_NONE] = "S3",
	[S3D_LIST_BUCKETS] = "ListBuckets",
	[S3D_CREATE_BUCKET] = "CreateBucket",
	[S3D_HEAD_BUCKET] = "HeadBucket",
	[S3D_DELETE_BUCKET] = "DeleteBucket",
	[S3D_GET_BUCKET_LOCATION] = "GetBucketLocation",
	[S3D_GET_BUCKET_VERSIONING] = "GetBucketVersioning",
	[S3D_LIST_OBJECTS] = "ListObjects",
	[S3D_LIST_OBJECTS_V2] = "ListObjectsV2",
	[S3D_LIST_UPLOADS] = "ListMultipartUploads",
	[S3D_DELETE_OBJECTS] = "DeleteObjects",
	[S3D_PUT_OBJECT] = "PutObject",
	[S3D_COPY_OBJECT] = "CopyObject",
	[S3D_GET_OBJECT] = "GetObject",
	[S3D_HEAD_OBJECT] = "HeadObject",
	[S3D_DELETE_OBJECT] = "DeleteObject",
	[S3D_CREATE_UPLOAD] = "CreateMultipartUpload",
	[S3D_UPLOAD_PART] = "UploadPart",
	[S3D_COMPLETE_UPLOAD] = "CompleteMultipartUpload",
	[S3D_ABORT_UPLOAD] = "AbortMultipartUpload",
	[S3D_LIST_PARTS] = "ListParts",
};

const char *s3d_op_name(const struct s3d *s)
{
	return s ? op_names[s->op] : "S3";
}

/* Whether op writes an object under s->key. */
static int creates_object(enum s3d_op op)
{
	return op == S3D_PUT_OBJECT || op == S3D_COPY_OBJECT ||
	       op == S3D_CREATE_UPLOAD || op == S3D_UPLOAD_PART ||
	       op == S3D_COMPLETE_UPLOAD;
}

/* Whether op checks the caller's reach itself, key by key or for the
 * prefix it lists. */
static int checks_own_reach(enum s3d_op op)
{
	return op == S3D_DELETE_OBJECTS || op == S3D_LIST_OBJECTS ||
	       op == S3D_LIST_OBJECTS_V2 || op == S3D_LIST_UPLOADS;
}

/* The bucket's and the key's names: ones S3 and the store accept. */
static int check_names(struct s3d *s)
{
	struct buf err = BUF_INIT;
	int r = 0;

	if (s->bucket && stor_bucket_check(s->bucket, &err))
		r = s3d__fail(s, "InvalidBucketName", 400,
			      "The specified bucket is not valid: %s",
			      err.data);
	else if (s->key && strlen(s->key) > S3D_KEY_MAX)
		r = s3d__fail(s, "KeyTooLongError", 400,
			      "Your key is too long: %zu bytes, at most %d",
			      strlen(s->key), S3D_KEY_MAX);
	else if (s->key && creates_object(s->op) && !s3d__xml_text_ok(s->key))
		r = s3d__fail(s, "InvalidArgument", 400,
			      "The object key is not valid UTF-8 or holds a "
			      "control character that XML cannot carry");
	else if (s->key && stor_key_check(s->key, 0, &err))
		r = s3d__fail(s, "InvalidArgument", 400,
			      "The key cannot be kept by the embedded store: "
			      "%s",
			      err.data);
	buf_release(&err);
	return r;
}

/* The caller's reach: buckets made and removed by an admin key only, a
 * bucket reached through a prefix in it, an object under a prefix. */
static int check_reach(struct s3d *s)
{
	if (!s->key && s->who && !s->who->admin &&
	    (s->op == S3D_CREATE_BUCKET || s->op == S3D_DELETE_BUCKET))
		return s3d__fail(s, "AccessDenied", 403,
				 "Only an admin key may create or delete "
				 "buckets");
	if (!s->key)
		return s3d__reaches_bucket(s, s->bucket) ?
			       0 :
			       s3d__fail(s, "AccessDenied", 403,
					 "Access Denied");
	if (!s3d__allowed(s, s->bucket, s->key))
		return s3d__fail(s, "AccessDenied", 403,
				 "Access Denied: '%s/%s' is outside the S3 "
				 "prefixes of key %s",
				 s->bucket, s->key, s->who->access_key_id);
	return 0;
}

/* Names checked, the caller's reach checked. */
static int check_request(struct s3d *s)
{
	if (check_names(s))
		return -1;
	if (!s->bucket || checks_own_reach(s->op))
		return 0; /* listings check their prefix */
	return check_reach(s);
}

/* -------------------------------------------------------------- begin */

/* What the headers decide: the body's intake for operations with one. */
static int begin_op(struct s3d *s)
{
	switch (s->op) {
	case S3D_PUT_OBJECT:
		return s3d__begin_put_object(s);
	case S3D_UPLOAD_PART:
		return s3d__begin_upload_part(s);
	case S3D_CREATE_BUCKET:
	case S3D_DELETE_OBJECTS:
	case S3D_COMPLETE_UPLOAD:
		return s3d__intake_xml(s);
	case S3D_CREATE_UPLOAD:
		return s3d__begin_create_upload(s);
	default:
		return 0;
	}
}

struct s3d *s3d_begin(const struct s3d_env *env, const struct s3d_req *r)
{
	struct s3d *s = xcalloc(1, sizeof(*s));

	s->env = env;
	s->fd = -1;
	s->actual_size = -1;
	s->method = r->method;
	s->request_id = r->request_id;
	s->now_ms = r->now_ms;
	buf_init(&s->msg, 2048);
	buf_init(&s->xml, S3D_XML_BODY_MAX);
	if (s3d__request_read(s, r) || unsupported_query(s))
		return s;
	if (!s->bucket)
		s->op = service_op(s);
	else if (!s->key)
		s->op = bucket_op(s);
	else
		s->op = object_op(s);
	if (s->op == S3D_OP_NONE || check_request(s))
		return s;
	(void)begin_op(s);
	return s;
}

/* ------------------------------------------------------------- finish */

static void error_reply(struct s3d *s, struct s3d_reply *r)
{
	char res[600];

	r->status = s->status;
	buf_reset(&r->body);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (!strcmp(s->method, "HEAD"))
		return; /* S3 answers HEAD errors without a body */
	snprintf(res, sizeof(res), "/%s%s%s", s->bucket ? s->bucket : "",
		 s->key ? "/" : "", s->key ? s->key : "");
	(void)buf_adds(&r->body,
		       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
	s3d__xml_el(&r->body, "Code", s->code);
	s3d__xml_el(&r->body, "Message", s->msg.data ? s->msg.data : "");
	if (!strcmp(s->code, "NoSuchBucket") && s->bucket)
		s3d__xml_el(&r->body, "BucketName", s->bucket);
	if (!strcmp(s->code, "NoSuchKey") && s->key)
		s3d__xml_el(&r->body, "Key", s->key);
	if (!strcmp(s->code, "NoSuchUpload") && s->upload_id[0])
		s3d__xml_el(&r->body, "UploadId", s->upload_id);
	if (s->actual_size >= 0) {
		/* The CRT client knows an empty object by this size. */
		s3d__xml_el(&r->body, "RangeRequested",
			    s3d__header(s, "range"));
		s3d__xml_elf(&r->body, "ActualObjectSize", "%lld",
			     (long long)s->actual_size);
	}
	s3d__xml_el(&r->body, "Resource", res);
	s3d__xml_el(&r->body, "RequestId", s->request_id ? s->request_id : "");
	(void)buf_adds(&r->body, "</Error>");
	s3d__reply_header(r, "Content-Type", "application/xml");
}

static void run_op(struct s3d *s, struct s3d_reply *r)
{
	switch (s->op) {
	case S3D_LIST_BUCKETS:
		s3d__op_list_buckets(s, r);
		break;
	case S3D_CREATE_BUCKET:
		s3d__op_create_bucket(s, r);
		break;
	case S3D_HEAD_BUCKET:
		s3d__op_head_bucket(s, r);
		break;
	case S3D_DELETE_BUCKET:
		s3d__op_delete_bucket(s, r);
		break;
	case S3D_GET_BUCKET_LOCATION:
		s3d__op_bucket_location(s, r);
		break;
	case S3D_GET_BUCKET_VERSIONING:
		s3d__op_bucket_versioning(s, r);
		break;
	case S3D_LIST_OBJECTS:
	case S3D_LIST_OBJECTS_V2:
		s3d__op_list_objects(s, r, s->op == S3D_LIST_OBJECTS_V2);
		break;
	case S3D_LIST_UPLOADS:
		s3d__op_list_uploads(s, r);
		break;
	case S3D_DELETE_OBJECTS:
		s3d__op_delete_objects(s, r);
		break;
	case S3D_PUT_OBJECT:
		s3d__op_put_object(s, r);
		break;
	case S3D_COPY_OBJECT:
		s3d__op_copy_object(s, r);
		break;
	case S3D_GET_OBJECT:
	case S3D_HEAD_OBJECT:
		s3d__op_get_object(s, r, s->op == S3D_HEAD_OBJECT);
		break;
	case S3D_DELETE_OBJECT:
		s3d__op_delete_object(s, r);
		break;
	case S3D_CREATE_UPLOAD:
		s3d__op_create_upload(s, r);
		break;
	case S3D_UPLOAD_PART:
		s3d__op_upload_part(s, r);
		break;
	case S3D_COMPLETE_UPLOAD:
		s3d__op_complete_upload(s, r);
		break;
	case S3D_ABORT_UPLOAD:
		s3d__op_abort_upload(s, r);
		break;
	case S3D_LIST_PARTS:
		s3d__op_list_parts(s, r);
		break;
	case S3D_OP_NONE:
		break;
	}
}

void s3d_finish(struct s3d *s, struct s3d_reply *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->body, 0);
	r->fd = -1;
	/*
	 * Objects are served from the status page's origin with the
	 * uploader's Content-Type: no answer may run script there or be
	 * sniffed into HTML. First, so the header cap never drops them.
	 */
	s3d__reply_header(r, "Content-Security-Policy", "sandbox");
	s3d__reply_header(r, "X-Content-Type-Options", "nosniff");
	if (!s->code)
		run_op(s, r);
	if (!s->code && !r->status)
		s3d__fail(s, "InternalError", 500, "no reply");
	if (s->code)
		error_reply(s, r);
	else if (r->body.len)
		s3d__reply_header(r, "Content-Type", "application/xml");
	if (s->request_id)
		s3d__reply_header(r, "x-amz-request-id", s->request_id);
}

const struct s3d_change *s3d_changes(const struct s3d *s, size_t *n)
{
	*n = s ? s->n_changes : 0;
	return s ? s->changes : NULL;
}

void s3d_refuse_reply(struct s3d *s, struct s3d_reply *reply, const char *code,
		      int status, const char *msg)
{
	s3d_reply_release(reply);
	s->code = NULL;
	buf_reset(&s->msg);
	(void)s3d__fail(s, code, status, "%s", msg);
	s3d_finish(s, reply);
}

void s3d_reply_release(struct s3d_reply *r)
{
	size_t i;

	buf_release(&r->body);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	for (i = 0; i < r->n_headers; i++) {
		free(r->name[i]);
		free(r->value[i]);
	}
	r->n_headers = 0;
}

void s3d_free(struct s3d *s)
{
	size_t i;

	if (!s)
		return;
	if (s->fd >= 0)
		stor_fs_tmp_abort(s->fd, s->tmp.data);
	for (i = 0; i < s->nq; i++) {
		free(s->q[i].k);
		free(s->q[i].v);
	}
	for (i = 0; i < s->nh; i++) {
		free((char *)s->h[i].name);
		free((char *)s->h[i].value);
	}
	if (s->body_ready)
		s3d__body_release(&s->body);
	for (i = 0; i < s->n_changes; i++) {
		free(s->changes[i].bucket);
		free(s->changes[i].key);
	}
	free(s->changes);
	free(s->bucket);
	free(s->key);
	buf_release(&s->msg);
	buf_release(&s->xml);
	buf_release(&s->tmp);
	buf_release(&s->path);
	buf_release(&s->pending);
	free(s);
}
