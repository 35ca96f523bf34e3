#ifndef S3D_MIRROR_H
#define S3D_MIRROR_H

/*
 * The embedded store's objects as one member of a replicated controller
 * hands them to another (controller/replicate.h, docs/ha.md): an object
 * is its bytes and its metadata, the JSON of the attribute
 * storage/s3d/meta.h keeps (ETag, kept headers, checksums, its time). A
 * copy written here lands exactly as the store writes an object: a temp
 * file, the attribute, fsync, rename, fsync of the folder; its time is
 * the one the metadata gives, so every member shows the same
 * Last-Modified.
 *
 * Bucket and key are checked as S3 checks them (stor_bucket_check(),
 * stor_key_check()): nothing here reaches outside root.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define S3D_ETAG_MAX 48

/*
 * Splits "BUCKET/KEY" (a decoded path tail) into its bucket and key
 * (malloc'd), both checked. Returns 0 or ERR_INVALID (err says why).
 */
int s3d_mirror_split(const char *tail, char **bucket, char **key,
		     struct buf *err);

/*
 * Opens root/bucket/key for reading: *fd, *size, and its metadata's JSON
 * into meta (worked out now when the file has none). Returns 0,
 * ERR_NOTFOUND, ERR_INVALID (bad names) or ERR_IO.
 */
int s3d_mirror_open(const char *root, const char *bucket, const char *key,
		    int *fd, int64_t *size, struct buf *meta, struct buf *err);

/* The ETag of root/bucket/key into etag: 0 or ERR_NOTFOUND. */
int s3d_mirror_etag(const char *root, const char *bucket, const char *key,
		    char etag[S3D_ETAG_MAX]);

/* The ETag a metadata JSON names: 0 or ERR_INVALID. */
int s3d_mirror_meta_etag(const char *meta, char etag[S3D_ETAG_MAX]);

/* Creates the bucket's folder (0 when it exists). 0 or ERR_IO. */
int s3d_mirror_bucket(const char *root, const char *bucket, struct buf *err);

/*
 * Removes root/bucket/key (key NULL: the bucket's folder and whatever is
 * left in it). Missing is no error. Returns 0, ERR_INVALID or ERR_IO.
 */
int s3d_mirror_remove(const char *root, const char *bucket, const char *key,
		      struct buf *err);

/*
 * An incoming copy, driven like a request: begin with the metadata and
 * the announced length (refused over max, or when meta is not an
 * object's metadata), data for every piece, finish to make it the
 * object. An unfinished copy's temp file goes with s3d_mirror_in_free().
 */
struct s3d_mirror_in;

struct s3d_mirror_in *s3d_mirror_in_begin(const char *root, const char *bucket,
					  const char *key, const char *meta,
					  int64_t length, int64_t max,
					  struct buf *err);
/* 0, or -1 once the copy failed (finish says why). */
int s3d_mirror_in_data(struct s3d_mirror_in *in, const char *data, size_t n);
/* 0, or ERR_INVALID (length or single-part ETag do not match), ERR_IO. */
int s3d_mirror_in_finish(struct s3d_mirror_in *in, struct buf *err);
void s3d_mirror_in_free(struct s3d_mirror_in *in);

#endif
