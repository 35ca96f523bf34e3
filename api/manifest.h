#ifndef API_MANIFEST_H
#define API_MANIFEST_H

/*
 * A ManifestFile channel's manifest: a JSON array whose first element is
 * {"prefix": "s3://bucket/path/"} and whose other elements are object keys
 * relative to that prefix (contract section 7).
 */
#include <stddef.h>

#include "common/buf.h"

/* At most this many keys per manifest. */
#define API_MANIFEST_MAX_KEYS 1000000

/*
 * Parses a manifest. On success *prefix and *keys (NULL-terminated, *n
 * entries) are new allocations the caller frees with
 * api_manifest_release(). Returns 0 or ERR_INVALID with err saying what is
 * wrong.
 */
int api_manifest_parse(const char *json, size_t len, char **prefix,
		       char ***keys, size_t *n, struct buf *err);

void api_manifest_release(char *prefix, char **keys, size_t n);

#endif
