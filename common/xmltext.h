#ifndef COMMON_XMLTEXT_H
#define COMMON_XMLTEXT_H

#include "common/buf.h"

/*
 * Appends s (NULL: nothing) as XML character data: & < > " escaped, and
 * CR as &#13; so that a parser's line-end normalization keeps it.
 */
void xml_add_text(struct buf *b, const char *s);

/*
 * Whether the len bytes at p declare a document type or an entity
 * ("<!DOCTYPE", "<!ENTITY"): S3's bodies never do, and one that does could
 * expand its entities without bound, so it is refused before any parser
 * sees it.
 */
int xml_declares_dtd(const char *p, size_t len);

#endif
