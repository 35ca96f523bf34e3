#ifndef COMMON_XMLTEXT_H
#define COMMON_XMLTEXT_H

#include "common/buf.h"

/*
 * Appends s (NULL: nothing) as XML character data: & < > " escaped, and
 * CR as &#13; so that a parser's line-end normalization keeps it.
 */
void xml_add_text(struct buf *b, const char *s);

#endif
