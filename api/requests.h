#ifndef API_REQUESTS_H
#define API_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/*
 * The small requests: {"TrainingJobName": ...} for Describe, Stop and Delete,
 * and ListTrainingJobs.
 */

/*
 * Parses a request whose only member that matters is TrainingJobName,
 * validated against the named input shape (e.g. "DescribeTrainingJobRequest").
 * On success *name_out is a copy the caller frees. Returns 0 or ERR_INVALID.
 * api_member_request_parse() does the same for another member (e.g.
 * HyperParameterTuningJobName).
 */
int api_member_request_parse(const char *shape, const char *member,
			     const char *json, size_t len, char **name_out,
			     struct buf *err);
int api_name_request_parse(const char *shape, const char *json, size_t len,
			   char **name_out, struct buf *err);

enum api_sort_by { API_SORT_CREATION_TIME = 0, API_SORT_NAME, API_SORT_STATUS };

struct api_list_request {
	int max_results;	   /* 1..100, defaulted to 10 */
	char *next_token;	   /* NULL = first page */
	char *name_contains;	   /* NULL = any */
	char *status_equals;	   /* NULL = any */
	char *warm_pool_status_equals; /* WarmPoolStatusEquals, NULL = any */
	enum api_sort_by sort_by;  /* default CreationTime */
	int descending;		   /* SortOrder; default Ascending */
	int64_t creation_after_ms; /* 0 = unset (exclusive bounds) */
	int64_t creation_before_ms;
	int64_t modified_after_ms;
	int64_t modified_before_ms;
};

/* A name=value pair of a URL query, already percent-decoded. */
struct api_query_arg {
	const char *name;
	const char *value;
};

/*
 * Builds a ListTrainingJobs request from the REST face's query arguments
 * (MaxResults, NextToken, NameContains, StatusEquals, SortBy, SortOrder,
 * CreationTimeAfter/Before and LastModifiedTimeAfter/Before as epoch
 * seconds) and validates it like the JSON body. Unknown arguments are an
 * error. Returns 0 or ERR_INVALID.
 */
int api_list_request_from_query(const struct api_query_arg *args, size_t n,
				struct api_list_request *req, struct buf *err);

/* Parses a ListTrainingJobs body. Returns 0 or ERR_INVALID. */
int api_list_request_parse(const char *json, size_t len,
			   struct api_list_request *req, struct buf *err);

void api_list_request_release(struct api_list_request *req);

/*
 * Builds {"TrainingJobName": name} into out (JSON-escaped). Returns 0 or
 * ERR_TOOBIG.
 */
int api_name_request_build(const char *name, struct buf *out);

/*
 * Checks a job name as a TrainingJobName of the service model (what the
 * REST face takes from a path). Returns 0, or ERR_INVALID with err saying
 * why (err empty when name is not UTF-8).
 */
int api_job_name_check(const char *name, struct buf *err);

/*
 * The version tag of a Describe answer for the REST long-poll
 * (GET /v1/training-jobs/NAME?wait=S&etag=E): 16 hex digits of the
 * FNV-1a 64 hash of the body, computed the same way by server and client.
 */
void api_body_etag(const char *body, size_t len, char out[17]);

/* Builds {"TrainingJobArn": arn}. Returns 0 or ERR_TOOBIG. */
int api_create_response(const char *arn, struct buf *out);

/*
 * Writes the AWS JSON error body {"__type": type, "message": message}
 * into out.
 */
int api_error_body(const char *type, const char *message, struct buf *out);

/*
 * Parses an error body into *type_out and *message_out (copies the caller
 * frees); "Unknown" / "" when members are missing. Returns 0 or ERR_INVALID.
 */
int api_error_parse(const char *json, size_t len, char **type_out,
		    char **message_out);

#endif
