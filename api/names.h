#ifndef API_NAMES_H
#define API_NAMES_H

/*
 * Internal to api/: the wire names of an enum, one table read both ways.
 * The table is indexed by the enum's value (designated initializers are
 * welcome); a value without a name is a NULL entry.
 *
 *	static const char *const phase_names[] = { "preparing", ... };
 *
 *	return api__name_of(phase_names, ARRAY_SIZE(phase_names), p,
 *			    "unknown");
 */
#include <stddef.h>

/* The name of value v, or fallback when the table has none. */
const char *api__name_of(const char *const *names, size_t n, long v,
			 const char *fallback);

/* The value named s (s may be NULL), or -1 when no entry is s. */
long api__name_find(const char *const *names, size_t n, const char *s);

#endif
