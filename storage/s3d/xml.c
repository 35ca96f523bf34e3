/* S3's XML replies and request bodies (storage/s3d/xml.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "storage/s3d/xml.h"
#include "common/xalloc.h"
#include "common/xmltext.h"
#include "common/banned.h"

#define S3D_NS "http://s3.amazonaws.com/doc/2006-03-01/"

/*
 * The length of the character at s when it is well-formed UTF-8 (no
 * overlong form, no surrogate, at most U+10FFFF) and one XML 1.0 can
 * carry (tab, LF, CR, U+0020 and up, not U+FFFE or U+FFFF); 0 otherwise.
 */
static size_t xml_char(const unsigned char *s)
{
	unsigned int c;
	size_t n, i;

	if (s[0] < 0x80)
		return s[0] >= 0x20 || s[0] == '\t' || s[0] == '\n' ||
				       s[0] == '\r' ?
			       1 :
			       0;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10ffff ||
	    (c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff)
		return 0;
	return n;
}

int s3d__xml_text_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = xml_char(p);

		if (!n)
			return 0;
		p += n;
	}
	return 1;
}

/* Escaped; a byte that is no character XML can carry (a key stored
 * before keys were checked) becomes U+FFFD, so the reply still parses. */
void s3d__xml_text(struct buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	struct buf run = BUF_INIT;

	if (!s)
		return;
	if (s3d__xml_text_ok(s)) {
		xml_add_text(b, s);
		return;
	}
	while (*p) {
		size_t n = xml_char(p);

		if (n) {
			(void)buf_add(&run, p, n);
			p += n;
			continue;
		}
		xml_add_text(b, run.data);
		buf_reset(&run);
		(void)buf_adds(b, "\xef\xbf\xbd");
		p++;
	}
	xml_add_text(b, run.data);
	buf_release(&run);
}

void s3d__xml_begin(struct buf *b, const char *root)
{
	(void)buf_addf(b,
		       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		       "<%s xmlns=\"" S3D_NS "\">",
		       root);
}

void s3d__xml_open(struct buf *b, const char *name)
{
	(void)buf_addf(b, "<%s>", name);
}

void s3d__xml_close(struct buf *b, const char *name)
{
	(void)buf_addf(b, "</%s>", name);
}

void s3d__xml_el(struct buf *b, const char *name, const char *text)
{
	s3d__xml_open(b, name);
	s3d__xml_text(b, text);
	s3d__xml_close(b, name);
}

void s3d__xml_elf(struct buf *b, const char *name, const char *fmt, ...)
{
	struct buf t = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	(void)buf_vaddf(&t, fmt, ap);
	va_end(ap);
	s3d__xml_el(b, name, t.data ? t.data : "");
	buf_release(&t);
}

/* The longest text kept from a request body's element: S3's 1024-byte
 * keys; ETags, part numbers and version ids are far shorter. */
#define S3X_TEXT_MAX 1024

/*
 * Parses a request body. S3's bodies never carry a document type: one
 * with a DOCTYPE (an internal subset, entity declarations) is refused
 * before libxml2 sees it. The body is read as UTF-8 whatever it declares
 * (S3's bodies are), so no other encoding can hide a DOCTYPE from that
 * scan; the check after parsing stays as a second guard. So no entity is
 * ever expanded.
 * Returns NULL with err saying why.
 */
static xmlDocPtr parse(const char *body, size_t len, struct buf *err)
{
	xmlDocPtr doc;

	if (!len || len > (size_t)16 * 1024 * 1024)
		return NULL;
	if (xml_declares_dtd(body, len)) {
		(void)buf_adds(err, "The XML you provided has a DOCTYPE or an "
				    "entity declaration; S3 request bodies "
				    "must not declare a document type.");
		return NULL;
	}
	doc = xmlReadMemory(body, (int)len, "body.xml", "UTF-8",
			    XML_PARSE_NONET | XML_PARSE_NOBLANKS |
				    XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
				    XML_PARSE_IGNORE_ENC);
	if (doc && (doc->intSubset || doc->extSubset)) {
		xmlFreeDoc(doc);
		(void)buf_adds(err, "The XML you provided has a DOCTYPE; S3 "
				    "request bodies must not declare a "
				    "document type.");
		return NULL;
	}
	return doc;
}

static int named(xmlNodePtr n, const char *name)
{
	return n->type == XML_ELEMENT_NODE &&
	       !strcmp((const char *)n->name, name);
}

/*
 * The text of element n: its text and CDATA children, at most max bytes.
 * Returns NULL when it holds anything else (an entity reference, an
 * element) or is longer.
 */
static char *text_of(xmlNodePtr n, size_t max)
{
	struct buf t = BUF_INIT;
	xmlNodePtr c;

	for (c = n->children; c; c = c->next) {
		size_t cl;

		if (c->type != XML_TEXT_NODE &&
		    c->type != XML_CDATA_SECTION_NODE)
			goto bad;
		cl = c->content ? strlen((const char *)c->content) : 0;
		if (cl > max - t.len)
			goto bad;
		if (cl && buf_add(&t, c->content, cl))
			goto bad;
	}
	return buf_detach(&t, NULL);
bad:
	buf_release(&t);
	return NULL;
}

void s3d__xml_items_free(struct s3d_xml_item *items, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(items[i].a);
		free(items[i].b);
	}
	free(items);
}

/* Returns -1 with err naming the element when a text is unusable. */
static int one_item(xmlNodePtr it, const char *fa, const char *fb,
		    struct s3d_xml_item *out, struct buf *err)
{
	xmlNodePtr c;

	out->a = out->b = NULL;
	for (c = it->children; c; c = c->next) {
		const char *name = NULL;
		char **dst = NULL;

		if (named(c, fa) && !out->a)
			name = fa, dst = &out->a;
		else if (fb && named(c, fb) && !out->b)
			name = fb, dst = &out->b;
		if (!dst)
			continue;
		*dst = text_of(c, S3X_TEXT_MAX);
		if (!*dst) {
			(void)buf_addf(err,
				       "<%s> must be plain text of at most %d "
				       "bytes",
				       name, S3X_TEXT_MAX);
			return -1;
		}
	}
	return 0;
}

/* Whether the root's flag child says "true"; -1 when unusable. */
static int flag_of(xmlNodePtr n)
{
	char *t = text_of(n, 16);
	int yes;

	if (!t)
		return -1;
	yes = !strcmp(t, "true");
	free(t);
	return yes;
}

int s3d__xml_parse_list(const char *body, size_t len, const char *root,
			const char *item, const char *fa, const char *fb,
			const char *flag_name, int *flag, size_t max,
			struct s3d_xml_item **items, size_t *n, struct buf *err)
{
	xmlDocPtr doc;
	xmlNodePtr r, c;
	size_t alloc = 0;
	struct buf why = BUF_INIT;

	*items = NULL;
	*n = 0;
	if (flag)
		*flag = 0;
	doc = parse(body, len, &why);
	if (why.len) {
		(void)buf_adds(err, why.data);
		buf_release(&why);
		return -1;
	}
	r = doc ? xmlDocGetRootElement(doc) : NULL;
	if (!r || !named(r, root)) {
		(void)buf_addf(err,
			       "The XML you provided was not well-formed or "
			       "did not validate against our published "
			       "schema (expected a <%s> document).",
			       root);
		xmlFreeDoc(doc);
		return -1;
	}
	for (c = r->children; c; c = c->next) {
		if (flag && flag_name && named(c, flag_name)) {
			*flag = flag_of(c);
			if (*flag < 0) {
				(void)buf_addf(err,
					       "<%s> must be true or false",
					       flag_name);
				goto fail;
			}
		} else if (named(c, item)) {
			if (*n == max) {
				(void)buf_addf(err,
					       "more than %zu <%s> elements",
					       max, item);
				goto fail;
			}
			ALLOC_GROW(*items, *n + 1, alloc);
			if (one_item(c, fa, fb, &(*items)[(*n)++], err))
				goto fail;
		}
	}
	xmlFreeDoc(doc);
	return 0;
fail:
	s3d__xml_items_free(*items, *n);
	*items = NULL;
	*n = 0;
	xmlFreeDoc(doc);
	return -1;
}

int s3d__xml_parse_value(const char *body, size_t len, const char *root,
			 const char *name, struct buf *out)
{
	struct buf why = BUF_INIT;
	xmlDocPtr doc = parse(body, len, &why);
	xmlNodePtr r = doc ? xmlDocGetRootElement(doc) : NULL, c;
	int ret = 0;

	buf_release(&why);
	if (!r || !named(r, root)) {
		xmlFreeDoc(doc);
		return -1;
	}
	for (c = r->children; c; c = c->next)
		if (named(c, name)) {
			char *t = text_of(c, S3X_TEXT_MAX);

			if (!t)
				ret = -1;
			else
				(void)buf_adds(out, t);
			free(t);
			break;
		}
	xmlFreeDoc(doc);
	return ret;
}

void s3d__xml_owner(struct buf *b)
{
	s3d__xml_open(b, "Owner");
	s3d__xml_el(b, "ID", S3D_OWNER_ID);
	s3d__xml_el(b, "DisplayName", S3D_OWNER_ID);
	s3d__xml_close(b, "Owner");
}
