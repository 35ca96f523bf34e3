#ifndef S3D_STORE_H
#define S3D_STORE_H

/*
 * The embedded store as S3 sees it (docs/storage.md): an object is the file
 * <root>/<bucket>/<key>, written with storage/fs.h's primitives (temp file,
 * fsync, rename), and what S3 keeps beside the bytes (ETag, Content-Type,
 * x-amz-meta-*, checksums) sits in one extended attribute of that file,
 * S3D_META_XATTR, as JSON. The attribute belongs to the inode, so an object
 * replaced by rename can never show the metadata of the one before; one
 * written by a path that sets none (an agent on a shared folder) gets its
 * ETag worked out on first sight and kept.
 *
 * Multipart uploads live outside the buckets, in <uploads>/<upload id>/:
 * "upload.json" (bucket, key, kept headers, start time) and one file per
 * part, named by its number, with its MD5 in the same attribute.
 */
#include <stdint.h>
#include <sys/stat.h>

#include <jansson.h>

#include "common/buf.h"

#define S3D_META_XATTR "user.trainctl.s3"
#define S3D_META_MAX 2048 /* S3's limit on user metadata */
#define S3D_MAX_PARTS 10000
#define S3D_MIN_PART (5LL * 1024 * 1024)
#define S3D_MAX_PART (5LL * 1024 * 1024 * 1024)

/* One object's size, time and what S3 keeps with it. */
struct s3d_obj {
	int64_t size;
	int64_t mtime_ms;
	char etag[48]; /* unquoted: 32 hex, or 32 hex "-" part count */
	/* Kept request headers, lower-case name -> value (content-type,
	 * cache-control, x-amz-meta-*, ...); NULL when none. */
	json_t *headers;
	/* Full-object checksums, "crc32"/"sha1"/"sha256" -> base64; NULL
	 * when none. */
	json_t *checksums;
};

void s3d__obj_release(struct s3d_obj *o);

/*
 * Reads the metadata of the open object fd (stat st): the attribute when
 * it matches the file's size and time, else the MD5 worked out now (and
 * kept when the file system allows). Returns 0 or ERR_IO.
 */
int s3d__meta_load(int fd, const struct stat *st, struct s3d_obj *o,
		   struct buf *err);

/*
 * Stores o's ETag, headers and checksums on fd (its size and time from
 * fstat). Returns 0 or ERR_IO (err says why, e.g. a file system without
 * user extended attributes).
 */
int s3d__meta_store(int fd, const struct s3d_obj *o, struct buf *err);

/*
 * A new upload id: 32 hex characters, the first S3D_OWNER_TAG of them
 * the tag of the access key that opened it (s3d__upload_owner_tag()), so
 * that its open uploads are counted from the folder names alone, the
 * rest random. Returns 0 or ERR_INTERNAL.
 */
#define S3D_OWNER_TAG 8
int s3d__upload_id(const char *owner, char out[33]);

/* The first hex characters of the SHA-256 of owner (an access key id,
 * "" for anonymous requests). */
void s3d__upload_owner_tag(const char *owner, char out[S3D_OWNER_TAG + 1]);

/* Whether id has the form s3d__upload_id() makes (nothing else may name a
 * folder under the uploads root). */
int s3d__upload_id_ok(const char *id);

/*
 * One part of an upload: its number, size and MD5 (hex), as listed. The
 * part files are found under <uploads>/<id>/.
 */
struct s3d_part {
	int number;
	int64_t size;
	int64_t mtime_ms;
	char md5[33];
};

/* The parts of upload dir, sorted by number. *parts is malloc'd. */
int s3d__parts_list(const char *dir, struct s3d_part **parts, size_t *n,
		    struct buf *err);

#endif
