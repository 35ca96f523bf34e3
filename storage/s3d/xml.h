#ifndef S3D_XML_H
#define S3D_XML_H

/*
 * S3's XML: replies written into a buf (escaped text, S3's namespace on
 * the root element) and request bodies read with libxml2 (no network, no
 * entity expansion, no DTD).
 */
#include <stddef.h>

#include "common/buf.h"

/* `<?xml ...?><root xmlns="...">` */
void s3d__xml_begin(struct buf *b, const char *root);
void s3d__xml_open(struct buf *b, const char *name);
void s3d__xml_close(struct buf *b, const char *name);
/* <name>text</name>, text escaped. */
void s3d__xml_el(struct buf *b, const char *name, const char *text);
void s3d__xml_elf(struct buf *b, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The owner S3 names in listings: every object and bucket has one. */
#define S3D_OWNER_ID "trainctl"
/* <Owner><ID>..</ID><DisplayName>..</DisplayName></Owner> */
void s3d__xml_owner(struct buf *b);

/* Appends s escaped for XML text; bytes that are not a character XML 1.0
 * can carry (invalid UTF-8, control characters) become U+FFFD. */
void s3d__xml_text(struct buf *b, const char *s);

/* Whether s is valid UTF-8 made only of characters XML 1.0 can carry. */
int s3d__xml_text_ok(const char *s);

/* One element of a request body's list: the texts of its children. */
struct s3d_xml_item {
	char *a; /* PartNumber / Key */
	char *b; /* ETag / VersionId (may be NULL) */
};

/*
 * Parses a body whose root element is root and collects, for each child
 * named item, the texts of its children named fa and fb (NULL when
 * absent). flag, when not NULL, receives whether a child of the root
 * named flag_name has the text "true". At most max items. Returns 0, or
 * -1 with err saying what is wrong (MalformedXML).
 */
int s3d__xml_parse_list(const char *body, size_t len, const char *root,
			const char *item, const char *fa, const char *fb,
			const char *flag_name, int *flag, size_t max,
			struct s3d_xml_item **items, size_t *n,
			struct buf *err);

void s3d__xml_items_free(struct s3d_xml_item *items, size_t n);

/* The text of root's child name ("" when absent), for small bodies such
 * as CreateBucketConfiguration. Returns 0 or -1 (not well formed). */
int s3d__xml_parse_value(const char *body, size_t len, const char *root,
			 const char *name, struct buf *out);

#endif
