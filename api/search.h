#ifndef API_SEARCH_H
#define API_SEARCH_H

#include <stddef.h>

#include "common/buf.h"

/*
 * Search (Resource TrainingJob): the request as a tree of filters. The
 * types are plain data so that db/ can turn a tree into SQL.
 */
enum search_op {
	SEARCH_EQ,
	SEARCH_NE,
	SEARCH_GT,
	SEARCH_GE,
	SEARCH_LT,
	SEARCH_LE,
	SEARCH_CONTAINS,
	SEARCH_EXISTS,
	SEARCH_NOT_EXISTS,
	SEARCH_IN
};

struct search_filter {
	char *name; /* property path, e.g. "Tags.team", "HyperParameters.lr" */
	enum search_op op;
	char *value; /* NULL for Exists / NotExists */
};

/* Filters that one element of a list property must meet together. */
struct search_nested {
	char *property; /* e.g. "InputDataConfig" */
	struct search_filter *filters;
	size_t n_filters;
};

struct search_expr {
	struct search_filter *filters;
	size_t n_filters;
	struct search_nested *nested;
	size_t n_nested;
	struct search_expr *subs;
	size_t n_subs;
	int any; /* Operator Or; And (every member) by default */
};

struct api_search_request {
	struct search_expr *expr; /* NULL: every job */
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
