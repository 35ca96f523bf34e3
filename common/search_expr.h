#ifndef COMMON_SEARCH_EXPR_H
#define COMMON_SEARCH_EXPR_H

#include <stddef.h>

/*
 * Search (Resource TrainingJob) as a tree of filters: plain data, which
 * api/search.h parses a request into and db/ turns into SQL.
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

#endif
