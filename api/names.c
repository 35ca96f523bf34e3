/* Wire names of enums (api/names.h). */
#include <string.h>

#include "api/names.h"
#include "common/banned.h"

const char *api__name_of(const char *const *names, size_t n, long v,
			 const char *fallback)
{
	if (v < 0 || (size_t)v >= n || !names[v])
		return fallback;
	return names[v];
}

long api__name_find(const char *const *names, size_t n, const char *s)
{
	size_t i;

	for (i = 0; s && i < n; i++)
		if (names[i] && !strcmp(s, names[i]))
			return (long)i;
	return -1;
}
