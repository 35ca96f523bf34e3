#ifndef CTRL_S3_INT_H
#define CTRL_S3_INT_H

/* What storage/s3d/s3d.c and storage/s3d/bucket.c share; nothing else. */
#include "storage/s3d/s3d.h"
#include "storage/s3d/body.h"
#include "storage/s3d/meta.h"
#include "api/sigv4.h"
#include "common/buf.h"

#define S3_MAX_QUERY 32
#define S3_XML_BODY_MAX (4 * 1024 * 1024)
#define S3_KEY_MAX 1024 /* bytes of a key, as S3 */

enum s3_op {
	S3_OP_NONE = 0, /* refused before dispatch */
	S3_LIST_BUCKETS,
	S3_CREATE_BUCKET,
	S3_HEAD_BUCKET,
	S3_DELETE_BUCKET,
	S3_GET_BUCKET_LOCATION,
	S3_GET_BUCKET_VERSIONING,
	S3_LIST_OBJECTS,
	S3_LIST_OBJECTS_V2,
	S3_LIST_UPLOADS,
	S3_DELETE_OBJECTS,
	S3_PUT_OBJECT,
	S3_COPY_OBJECT,
	S3_GET_OBJECT,
	S3_HEAD_OBJECT,
	S3_DELETE_OBJECT,
	S3_CREATE_UPLOAD,
	S3_UPLOAD_PART,
	S3_COMPLETE_UPLOAD,
	S3_ABORT_UPLOAD,
	S3_LIST_PARTS,
};

/* How the body is taken. */
enum s3_intake { S3_IN_DROP, S3_IN_FILE, S3_IN_XML };

struct s3_qarg {
	char *k, *v; /* decoded; v "" when given without '=' */
};

struct ctrl_s3 {
	const struct ctrl_s3_env *env;
	enum s3_op op;
	const char *method;
	const char *request_id;
	int64_t now_ms;
	char *bucket; /* decoded; NULL for the service */
	char *key;    /* decoded; NULL for a bucket */
	struct s3_qarg q[S3_MAX_QUERY];
	size_t nq;
	/* headers, lower-case names, copied */
	struct api_header h[CTRL_S3_MAX_HEADERS * 2];
	size_t nh;
	const struct api_credential *who; /* NULL: open controller */
	struct api_sigv4_s3 sig;
	int have_sig;

	/* the first refusal */
	const char *code;
	int status;
	struct buf msg;
	int64_t actual_size; /* InvalidRange: the object's size, else -1 */

	/* the body */
	enum s3_intake intake;
	struct s3_body body;
	int body_ready;
	struct buf xml; /* S3_IN_XML */
	int fd;		/* S3_IN_FILE: the temp file */
	struct buf tmp, path, pending;
	int write_failed;
	char upload_id[33];
	int part;
};

/* Remembers the first refusal; returns -1. */
int s3_fail(struct ctrl_s3 *s, const char *code, int status, const char *fmt,
	    ...) __attribute__((format(printf, 4, 5)));

/* A header's value by lower-case name, or NULL. */
const char *s3_header(const struct ctrl_s3 *s, const char *name);
/* A query argument's value, or NULL when absent. */
const char *s3_query(const struct ctrl_s3 *s, const char *name);

/* Whether the caller may reach "bucket/key" (a listing: "bucket/prefix"). */
int s3_allowed(const struct ctrl_s3 *s, const char *bucket, const char *key);

/* <root>/<bucket>, and <root>/<bucket>/<key>. */
void s3_bucket_path(const struct ctrl_s3 *s, const char *bucket,
		    struct buf *out);
void s3_object_path(const struct ctrl_s3 *s, const char *bucket,
		    const char *key, struct buf *out);
/* 0 when the bucket exists; else NoSuchBucket is remembered. */
int s3_need_bucket(struct ctrl_s3 *s, const char *bucket);

/* S3's dates: ISO 8601 with milliseconds, and RFC 1123. */
void s3_iso_time(int64_t ms, char out[32]);
void s3_http_time(int64_t ms, char out[40]);

/* Adds a reply header (copied). */
void s3_reply_header(struct ctrl_s3_reply *r, const char *name,
		     const char *value);

/* The kept headers of a PUT or a multipart start (JSON object, may be
 * NULL); remembers a refusal for headers that cannot be honoured. */
int s3_kept_headers(struct ctrl_s3 *s, json_t **out);

/* Sets up the request's body: the temp file beside path or the XML
 * buffer. Returns 0 or -1 (refusal remembered). */
int s3_intake_file(struct ctrl_s3 *s, const char *path, int64_t limit);
int s3_intake_xml(struct ctrl_s3 *s);
/*
 * Makes the temp file s->tmp the file s->path: o's metadata on the
 * inode, then (flushed when flush) renamed into place. Returns 0, or -1
 * with the refusal remembered (a key that is also a folder of others,
 * a write that failed). The temp file is gone either way.
 */
int s3_commit(struct ctrl_s3 *s, const struct s3_obj *o, int flush);

/* Flushes and checks the body; 0 when it may be committed. */
int s3_intake_end(struct ctrl_s3 *s);

/* s3_ops.c: operations on buckets, listings, multipart uploads. */
void s3_op_list_buckets(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
void s3_op_create_bucket(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
void s3_op_head_bucket(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
void s3_op_delete_bucket(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
void s3_op_bucket_location(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
void s3_op_bucket_versioning(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
void s3_op_list_objects(struct ctrl_s3 *s, struct ctrl_s3_reply *r, int v2);
void s3_op_delete_objects(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
int s3_begin_create_upload(struct ctrl_s3 *s);
void s3_op_create_upload(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
int s3_begin_upload_part(struct ctrl_s3 *s);
void s3_op_upload_part(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
void s3_op_complete_upload(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
void s3_op_abort_upload(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
void s3_op_list_parts(struct ctrl_s3 *s, struct ctrl_s3_reply *r);
void s3_op_list_uploads(struct ctrl_s3 *s, struct ctrl_s3_reply *r);

#endif
