/*
 * S3's XML bodies (ListBucketResult, InitiateMultipartUploadResult,
 * CompleteMultipartUploadResult, Error), parsed with libxml2. The parser
 * never loads external entities or DTDs (XML_PARSE_NONET, no NOENT), and
 * a body that declares a document type is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "storage/stor_internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/xmltext.h"
#include "common/banned.h"

/*
 * S3's answers never declare a document type: one that does (an internal
 * subset whose entities could expand without bound) is not parsed; the
 * answer is read as UTF-8 whatever it declares, so no other encoding can
 * hide one from the scan, and the check after parsing stays as a guard.
 */
static xmlDocPtr parse(const char *xml, size_t len)
{
	xmlDocPtr doc;

	if (len > 64u * 1024 * 1024 || xml_declares_dtd(xml, len))
		return NULL;
	doc = xmlReadMemory(xml, (int)len, "s3.xml", "UTF-8",
			    XML_PARSE_NONET | XML_PARSE_NOERROR |
				    XML_PARSE_NOWARNING | XML_PARSE_IGNORE_ENC);
	if (doc && (doc->intSubset || doc->extSubset)) {
		xmlFreeDoc(doc);
		return NULL;
	}
	return doc;
}

static int is(xmlNodePtr n, const char *name)
{
	return n->type == XML_ELEMENT_NODE &&
	       !strcmp((const char *)n->name, name);
}

/* The text of child `name` of n, malloc'ed, or NULL when absent. */
static char *child_text(xmlNodePtr n, const char *name)
{
	xmlNodePtr c;

	for (c = n->children; c; c = c->next) {
		if (is(c, name)) {
			xmlChar *t = xmlNodeGetContent(c);
			char *s = xstrdup(t ? (const char *)t : "");

			xmlFree(t);
			return s;
		}
	}
	return NULL;
}

static void copy_etag(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= 2 && src[0] == '"' && src[n - 1] == '"') {
		src++;
		n -= 2;
	}
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

int stor__s3_xml_list(const char *xml, size_t len, struct stor_list *out,
		      char **next, struct buf *err)
{
	xmlDocPtr doc = parse(xml, len);
	xmlNodePtr root, c;
	char *trunc = NULL;
	int ret = 0;

	*next = NULL;
	root = doc ? xmlDocGetRootElement(doc) : NULL;
	if (!root || !is(root, "ListBucketResult")) {
		(void)buf_adds(err, "the listing is not a ListBucketResult");
		ret = ERR_INVALID;
		goto out;
	}
	for (c = root->children; c; c = c->next) {
		char *key, *size, *mtime, *etag;
		struct stor_object *o;

		if (!is(c, "Contents"))
			continue;
		key = child_text(c, "Key");
		size = child_text(c, "Size");
		mtime = child_text(c, "LastModified");
		etag = child_text(c, "ETag");
		if (key) {
			o = stor_list_push(out, key,
					   size ? strtoll(size, NULL, 10) : 0,
					   mtime ? stor__parse_time(mtime) : 0);
			if (etag)
				copy_etag(o->etag, sizeof(o->etag), etag);
		}
		free(key);
		free(size);
		free(mtime);
		free(etag);
	}
	trunc = child_text(root, "IsTruncated");
	if (trunc && !strcmp(trunc, "true")) {
		*next = child_text(root, "NextContinuationToken");
		if (!*next || !**next) {
			FREE_AND_NULL(*next);
			(void)buf_adds(err, "a truncated listing has no "
					    "NextContinuationToken");
			ret = ERR_INVALID;
		}
	}
out:
	free(trunc);
	if (doc)
		xmlFreeDoc(doc);
	return ret;
}

int stor__s3_xml_upload_id(const char *xml, size_t len, char **upload_id,
			   struct buf *err)
{
	xmlDocPtr doc = parse(xml, len);
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	int ret = 0;

	*upload_id = NULL;
	if (root && is(root, "InitiateMultipartUploadResult"))
		*upload_id = child_text(root, "UploadId");
	if (!*upload_id || !**upload_id) {
		FREE_AND_NULL(*upload_id);
		(void)buf_adds(err,
			       "the answer to CreateMultipartUpload has no "
			       "UploadId");
		ret = ERR_INVALID;
	}
	if (doc)
		xmlFreeDoc(doc);
	return ret;
}

int stor__s3_xml_error(const char *xml, size_t len, char **code, char **message)
{
	xmlDocPtr doc = parse(xml, len);
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	int ret = 0;

	*code = NULL;
	*message = NULL;
	if (root && is(root, "Error")) {
		*code = child_text(root, "Code");
		*message = child_text(root, "Message");
		ret = 1;
	}
	if (!*code)
		*code = xstrdup("");
	if (!*message)
		*message = xstrdup("");
	if (doc)
		xmlFreeDoc(doc);
	return ret;
}

int stor__s3_xml_complete(const char *xml, size_t len, char *etag,
			  size_t etag_size, struct buf *err)
{
	xmlDocPtr doc = parse(xml, len);
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	char *e = NULL, *code = NULL, *msg = NULL;
	int ret = 0;

	etag[0] = '\0';
	/* S3 may answer 200 and still fail the completion in the body. */
	if (root && is(root, "Error")) {
		code = child_text(root, "Code");
		msg = child_text(root, "Message");
		(void)buf_addf(err, "CompleteMultipartUpload failed: %s: %s",
			       code ? code : "", msg ? msg : "");
		ret = ERR_IO;
	} else if (root && is(root, "CompleteMultipartUploadResult")) {
		e = child_text(root, "ETag");
		if (e)
			copy_etag(etag, etag_size, e);
	} else {
		(void)buf_adds(err, "CompleteMultipartUpload answered no "
				    "CompleteMultipartUploadResult");
		ret = ERR_INVALID;
	}
	free(e);
	free(code);
	free(msg);
	if (doc)
		xmlFreeDoc(doc);
	return ret;
}

int64_t stor__parse_time(const char *s)
{
	struct tm tm;
	int ms = 0, n = 0;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
		   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) == 6) {
		if (s[n] == '.')
			ms = atoi(s + n + 1) % 1000;
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		t = timegm(&tm);
		return t < 0 ? 0 : (int64_t)t * 1000 + ms;
	}
	t = curl_getdate(s, NULL);
	return t < 0 ? 0 : (int64_t)t * 1000;
}
