/* S3's XML replies and request bodies (controller/s3_xml.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "controller/s3_xml.h"
#include "common/xalloc.h"
#include "common/xmltext.h"
#include "common/banned.h"

#define S3_NS "http://s3.amazonaws.com/doc/2006-03-01/"

void s3x_text(struct buf *b, const char *s)
{
	xml_add_text(b, s);
}

void s3x_begin(struct buf *b, const char *root)
{
	(void)buf_addf(b,
		       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		       "<%s xmlns=\"" S3_NS "\">",
		       root);
}

void s3x_open(struct buf *b, const char *name)
{
	(void)buf_addf(b, "<%s>", name);
}

void s3x_close(struct buf *b, const char *name)
{
	(void)buf_addf(b, "</%s>", name);
}

void s3x_el(struct buf *b, const char *name, const char *text)
{
	s3x_open(b, name);
	s3x_text(b, text);
	s3x_close(b, name);
}

void s3x_elf(struct buf *b, const char *name, const char *fmt, ...)
{
	struct buf t = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	(void)buf_vaddf(&t, fmt, ap);
	va_end(ap);
	s3x_el(b, name, t.data ? t.data : "");
	buf_release(&t);
}

static xmlDocPtr parse(const char *body, size_t len)
{
	if (!len || len > (size_t)16 * 1024 * 1024)
		return NULL;
	return xmlReadMemory(body, (int)len, "body.xml", NULL,
			     XML_PARSE_NONET | XML_PARSE_NOBLANKS |
				     XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
}

static int named(xmlNodePtr n, const char *name)
{
	return n->type == XML_ELEMENT_NODE &&
	       !strcmp((const char *)n->name, name);
}

static char *text_of(xmlNodePtr n)
{
	xmlChar *c = xmlNodeGetContent(n);
	char *s = xstrdup(c ? (const char *)c : "");

	xmlFree(c);
	return s;
}

void s3x_items_free(struct s3x_item *items, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(items[i].a);
		free(items[i].b);
	}
	free(items);
}

static void one_item(xmlNodePtr it, const char *fa, const char *fb,
		     struct s3x_item *out)
{
	xmlNodePtr c;

	out->a = out->b = NULL;
	for (c = it->children; c; c = c->next)
		if (named(c, fa) && !out->a)
			out->a = text_of(c);
		else if (fb && named(c, fb) && !out->b)
			out->b = text_of(c);
}

int s3x_parse_list(const char *body, size_t len, const char *root,
		   const char *item, const char *fa, const char *fb,
		   const char *flag_name, int *flag, size_t max,
		   struct s3x_item **items, size_t *n, struct buf *err)
{
	xmlDocPtr doc = parse(body, len);
	xmlNodePtr r, c;
	size_t alloc = 0;

	*items = NULL;
	*n = 0;
	if (flag)
		*flag = 0;
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
			char *t = text_of(c);

			*flag = !strcmp(t, "true");
			free(t);
		} else if (named(c, item)) {
			if (*n == max) {
				(void)buf_addf(err,
					       "more than %zu <%s> elements",
					       max, item);
				s3x_items_free(*items, *n);
				*items = NULL;
				*n = 0;
				xmlFreeDoc(doc);
				return -1;
			}
			ALLOC_GROW(*items, *n + 1, alloc);
			one_item(c, fa, fb, &(*items)[(*n)++]);
		}
	}
	xmlFreeDoc(doc);
	return 0;
}

int s3x_parse_value(const char *body, size_t len, const char *root,
		    const char *name, struct buf *out)
{
	xmlDocPtr doc = parse(body, len);
	xmlNodePtr r = doc ? xmlDocGetRootElement(doc) : NULL, c;

	if (!r || !named(r, root)) {
		xmlFreeDoc(doc);
		return -1;
	}
	for (c = r->children; c; c = c->next)
		if (named(c, name)) {
			char *t = text_of(c);

			(void)buf_adds(out, t);
			free(t);
			break;
		}
	xmlFreeDoc(doc);
	return 0;
}
