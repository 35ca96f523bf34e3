#include <errno.h>
#include <stdlib.h>

#include "common/err.h"
#include "common/opt.h"
#include "common/banned.h"

int opt_parse_long(const char *opt, const char *value, long lo, long hi,
		   long *out, struct buf *err)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(value, &end, 10);
	if (errno || !*value || *end || v < lo || v > hi) {
		(void)buf_addf(err,
			       "option '--%s' needs a number from %ld to "
			       "%ld, not '%s'",
			       opt, lo, hi, value);
		return ERR_INVALID;
	}
	*out = v;
	return 0;
}
