#ifndef API_JSON_UTIL_H
#define API_JSON_UTIL_H

/* Small jansson helpers shared by the api/ files; internal to api/. */
#include <stdint.h>

#include <jansson.h>

#include "common/buf.h"

/*
 * Replaces the text of err (when not NULL) with the message; returns
 * ERR_INVALID, for "return api__invalid(err, ...)".
 */
int api__invalid(struct buf *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The document a --cli-input-json flag gave (base_json, len), or a new
 * empty object when base_json is NULL: *out holds a new reference to a
 * JSON object. Returns 0, or ERR_INVALID with err saying what is wrong.
 */
int api__cli_input_load(const char *base_json, size_t len, json_t **out,
			struct buf *err);

/* Upper bound on the nesting of accepted JSON documents. */
#define API_JSON_MAX_DEPTH 32

/*
 * Parses json[0..len) and requires a JSON object. On success *out holds a
 * new reference. Returns 0, or ERR_INVALID with err saying where the
 * document is malformed.
 */
int api__json_load_object(const char *json, size_t len, json_t **out,
			  struct buf *err);

/* Appends the compact serialization of v to out. Returns 0 or ERR_TOOBIG. */
int api__json_dump_to(const json_t *v, struct buf *out);

/*
 * The last step of a builder: appends root's compact serialization to out
 * unless bad is set (a value the builder could not encode, such as text
 * that is not UTF-8), and drops root either way. Returns 0, ERR_INVALID
 * when bad, or ERR_TOOBIG.
 */
int api__json_finish(json_t *root, int bad, struct buf *out);

/*
 * Reads a timestamp member as botocore sends it (epoch seconds as integer
 * or real) or as an ISO-8601 string, and returns epoch milliseconds; 0 when
 * v is NULL or neither.
 */
int64_t api__json_time_ms(const json_t *v);

/* Returns ms as a JSON real holding epoch seconds with ms precision. */
json_t *api__json_time(int64_t ms);

/*
 * Copies a validated Tags list ([{"Key", "Value"}...]) into *out (NULL and
 * 0 when arr is absent or empty), then checks it with api_tags_check().
 * Returns 0 or ERR_INVALID (nothing allocated then).
 */
struct api_kv;
int api__tags_from_json(const json_t *arr, struct api_kv **out, size_t *n,
			struct buf *err);

#endif
