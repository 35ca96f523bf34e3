#ifndef CTRL_ROUTE_H
#define CTRL_ROUTE_H

/*
 * Path patterns for the controller's route tables (after git's
 * http-backend.c services[]): literal segments, "{}" for one segment
 * (non-empty, no '/'), and a last "*" for the rest of the path, which may
 * be empty. A table lists {method, pattern, auth, handler} and asks
 * ctrl_route_match() which entry a request names.
 */
#include <stddef.h>

#define CTRL_ROUTE_MAX_PARAMS 6

/* What the "{}" and "*" of a matched pattern stood for, in order. */
struct ctrl_route_params {
	size_t n;
	const char *s[CTRL_ROUTE_MAX_PARAMS];
	size_t len[CTRL_ROUTE_MAX_PARAMS];
};

/* Whether path matches pattern; fills p (p may be NULL). */
int ctrl_route_match(const char *pattern, const char *path,
		     struct ctrl_route_params *p);

#endif
