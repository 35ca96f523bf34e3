#ifndef COMMON_OPT_H
#define COMMON_OPT_H

#include "common/buf.h"

/*
 * Parses the value of option --opt as a decimal number from lo to hi.
 * Returns 0 with *out set, or ERR_INVALID with err naming the option, the
 * range and the value.
 */
int opt_parse_long(const char *opt, const char *value, long lo, long hi,
		   long *out, struct buf *err);

#endif
