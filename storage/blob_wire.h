#ifndef STORAGE_BLOB_WIRE_H
#define STORAGE_BLOB_WIRE_H

/*
 * The JSON bodies of the controller's blob endpoint (docs/storage.md),
 * shared by its handler (controller/blob.c) and its client
 * (storage/blob_client.c). Field names follow S3's ListObjectsV2.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "storage/storage.h"

/*
 * {"Contents":[{"Key":..,"Size":..,"LastModified":"..Z"}],
 *  "KeyCount":n,"IsTruncated":bool[,"NextContinuationToken":".."]}
 * for l->v[from .. from+n); next NULL when not truncated.
 */
void stor_blob_list_encode(const struct stor_list *l, size_t from, size_t n,
			   const char *next, struct buf *out);

/*
 * Parses a listing, appending to out; *next gets the continuation token
 * (malloc'ed) or NULL. Returns 0 or ERR_INVALID.
 */
int stor_blob_list_decode(const char *json, size_t len, struct stor_list *out,
			  char **next, struct buf *err);

/* {"Key":..,"Size":..,"Sha256":".."}: the answer to a PUT. */
void stor_blob_put_encode(const char *key, int64_t size, const char *sha256,
			  struct buf *out);
int stor_blob_put_decode(const char *json, size_t len, int64_t *size,
			 char sha256[65], struct buf *err);

/* {"__type":"NoSuchKey","message":".."}, as every controller error. */
void stor_blob_error_encode(const char *type, const char *message,
			    struct buf *out);
/* Appends "type: message" of an error body (or the raw text) to err. */
void stor_blob_error_describe(const char *json, size_t len, struct buf *err);

#endif
