#ifndef API_BLOB_WIRE_H
#define API_BLOB_WIRE_H

/*
 * The JSON bodies of the controller's blob endpoint (docs/storage.md),
 * shared by its handler (storage/s3d/blob.c) and its client
 * (storage/blob_client.c), which convert to and from their storage
 * structs. Field names follow S3's ListObjectsV2. Errors are
 * {"__type":"NoSuchKey","message":".."}, as every controller error:
 * api_error_body() (api/requests.h) writes them.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* One entry of a listing. */
struct api_blob_object {
	char *key;
	int64_t size;
	int64_t mtime_ms; /* epoch ms ("LastModified"); 0 when absent */
};

/*
 * One page of a listing: n objects, and the continuation token when the
 * listing is truncated (NULL when not).
 */
struct api_blob_list {
	struct api_blob_object *v;
	size_t n;
	char *next;
};

#define API_BLOB_LIST_INIT    \
	{                     \
		NULL, 0, NULL \
	}

/*
 * {"Contents":[{"Key":..,"Size":..,"LastModified":"..Z"}],
 *  "KeyCount":n,"IsTruncated":bool[,"NextContinuationToken":".."]}
 * for l->v[0 .. l->n); not truncated when l->next is NULL. Only reads l,
 * so its keys may be borrowed.
 */
void api_blob_list_encode(const struct api_blob_list *l, struct buf *out);

/*
 * Parses a listing into out (which must be empty, API_BLOB_LIST_INIT);
 * out->next gets the continuation token (malloc'ed) or NULL. Returns 0 or
 * ERR_INVALID. The caller releases out with api_blob_list_release(), also
 * on failure.
 */
int api_blob_list_decode(const char *json, size_t len,
			 struct api_blob_list *out, struct buf *err);

/* Frees the keys, the array and the token of a decoded list. */
void api_blob_list_release(struct api_blob_list *l);

/* {"Key":..,"Size":..,"Sha256":".."}: the answer to a PUT. */
void api_blob_put_encode(const char *key, int64_t size, const char *sha256,
			 struct buf *out);
int api_blob_put_decode(const char *json, size_t len, int64_t *size,
			char sha256[65], struct buf *err);

/* Appends "type: message" of an error body (or the raw text) to err. */
void api_blob_error_describe(const char *json, size_t len, struct buf *err);

#endif
