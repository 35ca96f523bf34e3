#ifndef S3D_REQUEST_H
#define S3D_REQUEST_H

/*
 * One S3 request inside storage/s3d/ (internal to the folder): what was
 * parsed from it, who signed it, its first refusal and its body's state;
 * and the accessors every operation uses. request.c fills it.
 */
#include "storage/s3d/s3d.h"
#include "storage/s3d/body.h"
#include "api/sigv4.h"
#include "common/buf.h"

#define S3D_MAX_QUERY 32
#define S3D_XML_BODY_MAX (4 * 1024 * 1024)
#define S3D_KEY_MAX 1024  /* bytes of a key, as S3 */
#define S3D_LIST_MAX 1000 /* keys, parts or uploads in one listing */

enum s3d_op {
	S3D_OP_NONE = 0, /* refused before dispatch */
	S3D_LIST_BUCKETS,
	S3D_CREATE_BUCKET,
	S3D_HEAD_BUCKET,
	S3D_DELETE_BUCKET,
	S3D_GET_BUCKET_LOCATION,
	S3D_GET_BUCKET_VERSIONING,
	S3D_LIST_OBJECTS,
	S3D_LIST_OBJECTS_V2,
	S3D_LIST_UPLOADS,
	S3D_DELETE_OBJECTS,
	S3D_PUT_OBJECT,
	S3D_COPY_OBJECT,
	S3D_GET_OBJECT,
	S3D_HEAD_OBJECT,
	S3D_DELETE_OBJECT,
	S3D_CREATE_UPLOAD,
	S3D_UPLOAD_PART,
	S3D_COMPLETE_UPLOAD,
	S3D_ABORT_UPLOAD,
	S3D_LIST_PARTS,
};

/* How the body is taken. */
enum s3d_intake { S3D_IN_DROP, S3D_IN_FILE, S3D_IN_XML };

struct s3d_qarg {
	char *k, *v; /* decoded; v "" when given without '=' */
};

struct s3d {
	const struct s3d_env *env;
	enum s3d_op op;
	const char *method;
	const char *request_id;
	int64_t now_ms;
	char *bucket; /* decoded; NULL for the service */
	char *key;    /* decoded; NULL for a bucket */
	struct s3d_qarg q[S3D_MAX_QUERY];
	size_t nq;
	/* headers, lower-case names, copied */
	struct api_header h[S3D_MAX_HEADERS * 2];
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
	enum s3d_intake intake;
	struct s3d_body body;
	int body_ready;
	struct buf xml; /* S3D_IN_XML */
	int fd;		/* S3D_IN_FILE: the temp file */
	struct buf tmp, path, pending;
	int write_failed;
	char upload_id[33];
	int part;

	/* what it changed (s3d_changes()) */
	struct s3d_change *changes;
	size_t n_changes;
};

/* Records a change (s3d_changes()); key NULL for a bucket. */
void s3d__changed(struct s3d *s, enum s3d_change_kind kind, const char *bucket,
		  const char *key);

/* Remembers the first refusal; returns -1. */
int s3d__fail(struct s3d *s, const char *code, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A header's value by lower-case name, or NULL. */
const char *s3d__header(const struct s3d *s, const char *name);
/* A query argument's value, or NULL when absent. */
const char *s3d__query(const struct s3d *s, const char *name);

/* Whether the caller may reach "bucket/key" (a listing: "bucket/prefix"). */
int s3d__allowed(const struct s3d *s, const char *bucket, const char *key);

/* <root>/<bucket>, and <root>/<bucket>/<key>. */
void s3d__bucket_path(const struct s3d *s, const char *bucket, struct buf *out);
void s3d__object_path(const struct s3d *s, const char *bucket, const char *key,
		      struct buf *out);
/* 0 when the bucket exists; else NoSuchBucket is remembered. */
int s3d__need_bucket(struct s3d *s, const char *bucket);

/* S3's dates: ISO 8601 with milliseconds, and RFC 1123. */
void s3d__iso_time(int64_t ms, char out[32]);
void s3d__http_time(int64_t ms, char out[40]);

/* Adds a reply header (copied). */
void s3d__reply_header(struct s3d_reply *r, const char *name,
		       const char *value);

/*
 * Reads the request into s: headers copied, path split into bucket and
 * key, the signature checked (when the controller has credentials), the
 * query decoded. Returns 0, or -1 with the refusal remembered.
 */
int s3d__request_read(struct s3d *s, const struct s3d_req *r);

/* Percent-decodes n bytes of p ('+' too when plus, as in a query).
 * NULL for a malformed escape or a NUL. */
char *s3d__decode(const char *p, size_t n, int plus);

/* A non-negative integer query argument, default def, at most cap.
 * Returns 0, or -1 with InvalidArgument remembered. */
int s3d__int_arg(struct s3d *s, const char *name, long def, long cap,
		 long *out);

/* Whether the caller may reach bucket at all: an admin or open
 * controller always, a user key when one of its prefixes is in it. */
int s3d__reaches_bucket(const struct s3d *s, const char *bucket);

#endif
