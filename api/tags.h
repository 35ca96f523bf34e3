#ifndef API_TAGS_H
#define API_TAGS_H

#include <stddef.h>

#include "api/job_spec.h"
#include "common/buf.h"

/*
 * AddTags, ListTags and DeleteTags: tags on a resource named by its ARN.
 * Requests are validated against the service model; keys starting with
 * "aws:" are reserved, as on the service.
 */
enum api_tags_op { API_TAGS_ADD, API_TAGS_LIST, API_TAGS_DELETE };

struct api_tags_request {
	char *arn;
	struct api_kv *tags; /* AddTags */
	size_t n_tags;
	char **keys; /* DeleteTags */
	size_t n_keys;
	int max_results;  /* ListTags: 50.. (default 50) */
	char *next_token; /* ListTags: NULL = first page */
};

/* Parses the op's request. Returns 0 or ERR_INVALID (err says why). */
int api_tags_request_parse(enum api_tags_op op, const char *json, size_t len,
			   struct api_tags_request *req, struct buf *err);
void api_tags_request_release(struct api_tags_request *req);

/*
 * Checks tags as the service does beyond the model: no key twice, none
 * reserved ("aws:"). Returns 0 or ERR_INVALID.
 */
int api_tags_check(const struct api_kv *tags, size_t n, struct buf *err);

/* {"Tags": [{"Key", "Value"}...]} (AddTags), with NextToken (ListTags). */
int api_tags_response(const struct api_kv *tags, size_t n,
		      const char *next_token, struct buf *out);

/* The JSON array [{"Key", "Value"}...] alone. Returns 0 or ERR_TOOBIG. */
int api_tags_array(const struct api_kv *tags, size_t n, struct buf *out);

/*
 * Splits a SageMaker ARN "arn:PARTITION:sagemaker:REGION:ACCOUNT:TYPE/NAME".
 * On success *type and *name point into arn (type not terminated: *type_len)
 * and region/account are checked against the given ones. Returns 0 or
 * ERR_INVALID.
 */
int api_arn_split(const char *arn, const char *region, const char *account,
		  const char **type, size_t *type_len, const char **name,
		  struct buf *err);

#endif
