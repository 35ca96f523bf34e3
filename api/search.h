#ifndef API_SEARCH_H
#define API_SEARCH_H

#include <stddef.h>

#include "common/buf.h"
#include "common/search_expr.h"

struct api_search_request {
	struct search_expr *expr;     /* NULL: every job */
	char *sort_by;		      /* defaulted to LastModifiedTime */
	int descending;		      /* SortOrder; default Descending */
	int max_results;	      /* 1..100, default 10 */
	char *next_token;	      /* NULL = first page */
};

/*
 * Parses a Search body: validated against the model, Resource must be
 * TrainingJob, every property named must be one of a TrainingJob (the
 * members of the service's TrainingJob shape, dotted paths below them,
 * Tags.KEY, HyperParameters.NAME, Metrics.NAME), Exists / NotExists take
 * no Value and the others need one, at most 50 filters, nested filters and
 * subexpressions in all. Returns 0 or ERR_INVALID (err says why).
 */
int api_search_request_parse(const char *json, size_t len,
			     struct api_search_request *req, struct buf *err);
void api_search_request_release(struct api_search_request *req);

/*
 * Appends one SearchRecord, {"TrainingJob": DESCRIBE with "Tags"}, where
 * describe is a DescribeTrainingJob answer and tags_json a JSON array.
 * Returns 0, ERR_INVALID (describe is not an object) or ERR_TOOBIG.
 */
int api_search_record(const char *describe, size_t len, const char *tags_json,
		      struct buf *out);

#endif
