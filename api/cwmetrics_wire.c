#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cbor.h>

#include "api/cwmetrics.h"
#include "api/cwmetrics_wire.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/hex.h"
#include "common/xmltext.h"
#include "common/banned.h"

#define FORM_MAX_PARAMS 40000
#define FORM_MAX_DEPTH 16
#define FORM_MAX_INDEX 1000
#define CBOR_MAX_DEPTH API_JSON_MAX_DEPTH

/* --------------------------------------------------------------- form */

/* Percent-decodes s[0..n) ('+' is a space) into out. 0 or -1. */
static int unescape(const char *s, size_t n, struct buf *out)
{
	size_t i;

	buf_reset(out);
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			int hi = i + 2 < n ? hex_digit(s[i + 1]) : -1;
			int lo = i + 2 < n ? hex_digit(s[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -1;
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (c == '\0' || buf_addch(out, c))
			return -1;
	}
	return 0;
}

static int utf8_ok(const char *s)
{
	json_t *t = json_string(s); /* NULL when not UTF-8 */

	json_decref(t);
	return t != NULL;
}

static int is_index(const char *s, long *out)
{
	char *end;
	long x;

	if (!(*s >= '1' && *s <= '9'))
		return 0;
	x = strtol(s, &end, 10);
	if (*end || x < 1 || x > FORM_MAX_INDEX)
		return 0;
	*out = x;
	return 1;
}

/*
 * Sets path (its parts, n of them) to value under root. A part followed by
 * "member", N makes a list whose item N-1 is what follows. Names and value
 * must be UTF-8 (jansson refuses anything else).
 */
static int form_set(json_t *root, char **parts, size_t n, const char *value,
		    struct buf *err)
{
	json_t *node = root;
	size_t i = 0;

	while (i < n) {
		const char *key = parts[i];
		int last = i + 1 == n;
		long idx;
		json_t *child;

		if (!json_is_object(node) || !*key)
			goto bad;
		child = json_object_get(node, key);
		if (last) {
			if (child)
				goto dup;
			if (json_object_set_new(node, key, json_string(value)))
				goto bad;
			return 0;
		}
		if (!strcmp(parts[i + 1], "member")) {
			json_t *item;

			if (i + 2 >= n || !is_index(parts[i + 2], &idx))
				goto bad;
			if (!child) {
				child = json_array();
				if (json_object_set_new(node, key, child))
					goto bad;
			}
			if (!json_is_array(child))
				goto bad;
			while (json_array_size(child) < (size_t)idx)
				if (json_array_append_new(child, json_null()))
					goto bad;
			item = json_array_get(child, (size_t)idx - 1);
			if (i + 3 == n) {
				if (!json_is_null(item))
					goto dup;
				if (json_array_set_new(child, (size_t)idx - 1,
						       json_string(value)))
					goto bad;
				return 0;
			}
			if (json_is_null(item)) {
				item = json_object();
				if (json_array_set_new(child, (size_t)idx - 1,
						       item))
					goto bad;
			}
			node = item;
			i += 3;
			continue;
		}
		if (!child) {
			child = json_object();
			if (json_object_set_new(node, key, child))
				goto bad;
		}
		node = child;
		i++;
	}
bad:
	(void)buf_adds(err, "malformed parameter name");
	return ERR_INVALID;
dup:
	(void)buf_adds(err, "a parameter is given twice");
	return ERR_INVALID;
}

/* Whether every list is without holes (member.1 .. member.N all given). */
static int no_holes(const json_t *v, int depth)
{
	const char *key;
	json_t *child;
	size_t i;

	if (depth > FORM_MAX_DEPTH)
		return 0;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, child)
		{
			if (!no_holes(child, depth + 1))
				return 0;
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, child)
		{
			if (json_is_null(child) || !no_holes(child, depth + 1))
				return 0;
		}
	}
	return 1;
}

int api__cwm_form_decode(const char *body, size_t len, json_t **out,
			 struct buf *err)
{
	json_t *root = json_object();
	struct buf name = BUF_INIT, value = BUF_INIT;
	size_t pos = 0, count = 0;
	int ret = 0;

	while (!ret && pos < len) {
		const char *amp = memchr(body + pos, '&', len - pos);
		size_t end = amp ? (size_t)(amp - body) : len;
		const char *eq = memchr(body + pos, '=', end - pos);
		size_t neq = eq ? (size_t)(eq - body) : end;
		char *parts[FORM_MAX_DEPTH];
		size_t n = 0;
		char *p;

		if (end == pos) {
			pos = end + 1;
			continue;
		}
		if (++count > FORM_MAX_PARAMS) {
			(void)buf_addf(err, "more than %d parameters",
				       FORM_MAX_PARAMS);
			ret = ERR_INVALID;
			break;
		}
		if (unescape(body + pos, neq - pos, &name) ||
		    unescape(eq ? eq + 1 : body + end, eq ? end - neq - 1 : 0,
			     &value)) {
			(void)buf_adds(err, "malformed form encoding");
			ret = ERR_INVALID;
			break;
		}
		if (!utf8_ok(name.data) || !utf8_ok(value.data)) {
			(void)buf_adds(err, "a parameter is not UTF-8");
			ret = ERR_INVALID;
			break;
		}
		p = name.data;
		parts[n++] = p;
		for (; *p; p++) {
			if (*p != '.')
				continue;
			if (n == FORM_MAX_DEPTH) {
				n = 0;
				break;
			}
			*p = '\0';
			parts[n++] = p + 1;
		}
		ret = n ? form_set(root, parts, n, value.data, err) :
			  ERR_INVALID;
		if (ret && !err->len)
			(void)buf_adds(err, "parameter name nested too deep");
		if (ret) {
			buf_reset(&value);
			(void)buf_addf(&value, " ('%.200s')",
				       parts[0] ? parts[0] : "");
			(void)buf_adds(err, value.data);
		}
		pos = end + 1;
	}
	if (!ret && !no_holes(root, 0)) {
		(void)buf_adds(err, "a list misses one of its members "
				    "(member.1 .. member.N must all be given)");
		ret = ERR_INVALID;
	}
	buf_release(&name);
	buf_release(&value);
	if (ret) {
		json_decref(root);
		root = NULL;
	}
	*out = root;
	return ret;
}

/* ---------------------------------------------------------------- XML */

/* The shortest decimal that reads back as x. */
static void add_double(struct buf *b, double x)
{
	char s[40];
	int prec;

	for (prec = 15; prec <= 17; prec++) {
		(void)snprintf(s, sizeof(s), "%.*g", prec, x);
		if (strtod(s, NULL) == x)
			break;
	}
	(void)buf_adds(b, s);
}

static void add_iso(struct buf *b, double secs)
{
	int64_t ms = (int64_t)llround(secs * 1000.0);
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char s[40];

	gmtime_r(&t, &tm);
	(void)strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	(void)buf_addf(b, "%s.%03dZ", s, (int)(ms % 1000));
}

static void xml_scalar(struct buf *b, const char *key, const json_t *v)
{
	int time = !strcmp(key, "Timestamp") || !strcmp(key, "Timestamps");

	if (json_is_string(v))
		xml_add_text(b, json_string_value(v));
	else if (time && json_is_number(v))
		add_iso(b, json_number_value(v));
	else if (json_is_integer(v))
		(void)buf_addf(b, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		add_double(b, json_real_value(v));
	else if (json_is_boolean(v))
		(void)buf_adds(b, json_is_true(v) ? "true" : "false");
}

static void xml_value(struct buf *b, const char *key, const json_t *v);

static void xml_members(struct buf *b, const json_t *o)
{
	const char *key;
	json_t *child;

	json_object_foreach((json_t *)o, key, child)
	{
		(void)buf_addf(b, "<%s>", key);
		xml_value(b, key, child);
		(void)buf_addf(b, "</%s>", key);
	}
}

/* The content of element key holding v: lists as <member>s, maps as
 * <entry><key/><value/></entry>s. */
static void xml_value(struct buf *b, const char *key, const json_t *v)
{
	const char *k;
	json_t *child;
	size_t i;

	if (json_is_array(v)) {
		json_array_foreach(v, i, child)
		{
			(void)buf_adds(b, "<member>");
			xml_value(b, key, child);
			(void)buf_adds(b, "</member>");
		}
	} else if (json_is_object(v) && !strcmp(key, "ExtendedStatistics")) {
		json_object_foreach((json_t *)v, k, child)
		{
			(void)buf_adds(b, "<entry><key>");
			xml_add_text(b, k);
			(void)buf_adds(b, "</key><value>");
			xml_scalar(b, k, child);
			(void)buf_adds(b, "</value></entry>");
		}
	} else if (json_is_object(v)) {
		xml_members(b, v);
	} else {
		xml_scalar(b, key, v);
	}
}

int api__cwm_xml_emit(const char *op, const json_t *v, const char *rid,
		      struct buf *out)
{
	(void)buf_addf(out,
		       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		       "<%sResponse xmlns=\"%s\"><%sResult>",
		       op, API_CWM_NAMESPACE_URI, op);
	xml_members(out, v);
	(void)buf_addf(out, "</%sResult><ResponseMetadata><RequestId>", op);
	xml_add_text(out, rid);
	return buf_addf(out, "</RequestId></ResponseMetadata></%sResponse>\n",
			op) ?
		       ERR_TOOBIG :
		       0;
}

int api__cwm_xml_error(const char *code, int sender, const char *message,
		       const char *rid, struct buf *out)
{
	(void)buf_addf(out,
		       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		       "<ErrorResponse xmlns=\"%s\"><Error><Type>%s</Type>"
		       "<Code>",
		       API_CWM_NAMESPACE_URI, sender ? "Sender" : "Receiver");
	xml_add_text(out, code);
	(void)buf_adds(out, "</Code><Message>");
	xml_add_text(out, message);
	(void)buf_adds(out, "</Message></Error><RequestId>");
	xml_add_text(out, rid);
	return buf_adds(out, "</RequestId></ErrorResponse>\n") ? ERR_TOOBIG : 0;
}

/* --------------------------------------------------------------- CBOR */

/* A text string, definite or in chunks, as a new JSON string. */
static json_t *cbor_text(const cbor_item_t *it)
{
	struct buf b = BUF_INIT;
	json_t *out;
	size_t i;

	if (cbor_string_is_definite(it)) {
		(void)buf_add(&b, cbor_string_handle(it),
			      cbor_string_length(it));
	} else {
		cbor_item_t **chunks = cbor_string_chunks_handle(it);

		for (i = 0; i < cbor_string_chunk_count(it); i++)
			(void)buf_add(&b, cbor_string_handle(chunks[i]),
				      cbor_string_length(chunks[i]));
	}
	out = json_stringn(b.data, b.len); /* NULL when not UTF-8 */
	buf_release(&b);
	return out;
}

static json_t *from_cbor(const cbor_item_t *it, int depth)
{
	json_t *out = NULL;
	size_t i;

	if (depth > CBOR_MAX_DEPTH)
		return NULL;
	switch (cbor_typeof(it)) {
	case CBOR_TYPE_UINT:
		if (cbor_get_int(it) <= (uint64_t)INT64_MAX)
			out = json_integer((json_int_t)cbor_get_int(it));
		break;
	case CBOR_TYPE_NEGINT:
		if (cbor_get_int(it) < (uint64_t)INT64_MAX)
			out = json_integer(-1 - (json_int_t)cbor_get_int(it));
		break;
	case CBOR_TYPE_STRING:
		out = cbor_text(it);
		break;
	case CBOR_TYPE_ARRAY: {
		cbor_item_t **items = cbor_array_handle(it);

		out = json_array();
		for (i = 0; out && i < cbor_array_size(it); i++) {
			json_t *v = from_cbor(items[i], depth + 1);

			if (!v || json_array_append_new(out, v)) {
				json_decref(out);
				out = NULL;
			}
		}
		break;
	}
	case CBOR_TYPE_MAP: {
		struct cbor_pair *pairs = cbor_map_handle(it);

		out = json_object();
		for (i = 0; out && i < cbor_map_size(it); i++) {
			json_t *k = cbor_isa_string(pairs[i].key) ?
					    cbor_text(pairs[i].key) :
					    NULL;
			json_t *v = k ? from_cbor(pairs[i].value, depth + 1) :
					NULL;

			if (!v || json_object_get(out, json_string_value(k)) ||
			    json_object_set_new(out, json_string_value(k), v)) {
				json_decref(v);
				json_decref(out);
				out = NULL;
			}
			json_decref(k);
		}
		break;
	}
	case CBOR_TYPE_TAG: {
		/* Tag 1: a time as epoch seconds; other tags are refused. */
		cbor_item_t *t = cbor_tag_item(it);

		if (cbor_tag_value(it) == 1 &&
		    (cbor_isa_uint(t) || cbor_isa_negint(t) ||
		     cbor_is_float(t)))
			out = from_cbor(t, depth + 1);
		cbor_decref(&t);
		break;
	}
	case CBOR_TYPE_FLOAT_CTRL:
		if (cbor_is_float(it))
			out = json_real(cbor_float_get_float(it));
		else if (cbor_is_bool(it))
			out = json_boolean(cbor_get_bool(it));
		else if (cbor_is_null(it) || cbor_is_undef(it))
			out = json_null();
		break;
	default: /* byte strings: no member of these requests is a blob */
		break;
	}
	return out;
}

/* What sizes_ok() learnt so far. */
struct sizes {
	size_t len; /* of the whole body */
	int too_big;
};

static void check_array(void *arg, size_t n)
{
	struct sizes *z = arg;

	if (n > z->len)
		z->too_big = 1;
}

static void check_map(void *arg, size_t n)
{
	struct sizes *z = arg;

	if (n > z->len / 2)
		z->too_big = 1;
}

/*
 * cbor_load() allocates a definite array or map at the size its header
 * claims: a few bytes could ask for gigabytes. Every member takes at
 * least one byte, so no honest header claims more members than the body
 * has bytes; walk the headers with libcbor's streaming decoder first.
 */
static int sizes_ok(const char *body, size_t len)
{
	struct cbor_callbacks cb = cbor_empty_callbacks;
	struct sizes z = { len, 0 };
	size_t pos = 0;

	cb.array_start = check_array;
	cb.map_start = check_map;
	while (pos < len && !z.too_big) {
		struct cbor_decoder_result r = cbor_stream_decode(
			(cbor_data)body + pos, len - pos, &cb, &z);

		if (r.status != CBOR_DECODER_FINISHED || !r.read)
			return 0;
		pos += r.read;
	}
	return !z.too_big;
}

int api__cwm_cbor_decode(const char *body, size_t len, json_t **out,
			 struct buf *err)
{
	struct cbor_load_result res;
	cbor_item_t *it;

	*out = NULL;
	if (len == 0) {
		*out = json_object();
		return 0;
	}
	if (!sizes_ok(body, len)) {
		(void)buf_adds(err, "request body is not valid CBOR (an item "
				    "is cut short or claims more members than "
				    "the body holds)");
		return ERR_INVALID;
	}
	it = cbor_load((cbor_data)body, len, &res);
	if (!it || res.error.code != CBOR_ERR_NONE) {
		(void)buf_addf(err,
			       "request body is not valid CBOR (at byte "
			       "%zu)",
			       res.error.position);
		if (it)
			cbor_decref(&it);
		return ERR_INVALID;
	}
	if (res.read != len || !cbor_isa_map(it)) {
		(void)buf_adds(err, "request body must be one CBOR map");
		cbor_decref(&it);
		return ERR_INVALID;
	}
	*out = from_cbor(it, 0);
	cbor_decref(&it);
	if (!*out) {
		(void)buf_adds(err, "request body holds a CBOR item this "
				    "service does not take (byte string, "
				    "unknown tag, bad UTF-8, duplicate key or "
				    "too deep)");
		return ERR_INVALID;
	}
	return 0;
}

static cbor_item_t *to_cbor(const char *key, const json_t *v)
{
	cbor_item_t *out = NULL;
	const char *k;
	json_t *child;
	size_t i;

	if (json_is_object(v)) {
		out = cbor_new_definite_map(json_object_size(v));
		json_object_foreach((json_t *)v, k, child)
		{
			struct cbor_pair p;

			p.key = cbor_move(cbor_build_string(k));
			p.value = cbor_move(to_cbor(k, child));
			(void)cbor_map_add(out, p);
		}
	} else if (json_is_array(v)) {
		out = cbor_new_definite_array(json_array_size(v));
		json_array_foreach(v, i, child)
		{
			(void)cbor_array_push(out,
					      cbor_move(to_cbor(key, child)));
		}
	} else if (json_is_number(v) &&
		   (!strcmp(key, "Timestamp") || !strcmp(key, "Timestamps"))) {
		out = cbor_build_tag(
			1, cbor_move(cbor_build_float8(json_number_value(v))));
	} else if (json_is_string(v)) {
		out = cbor_build_stringn(json_string_value(v),
					 json_string_length(v));
	} else if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);

		out = x >= 0 ? cbor_build_uint64((uint64_t)x) :
			       cbor_build_negint64((uint64_t)(-1 - x));
	} else if (json_is_real(v)) {
		out = cbor_build_float8(json_real_value(v));
	} else if (json_is_boolean(v)) {
		out = cbor_build_bool(json_is_true(v));
	} else {
		out = cbor_new_null();
	}
	return out;
}

int api__cwm_cbor_emit(const json_t *v, struct buf *out)
{
	cbor_item_t *it = to_cbor("", v);
	unsigned char *data = NULL;
	size_t size = 0, n;
	int ret;

	n = cbor_serialize_alloc(it, &data, &size);
	cbor_decref(&it);
	ret = n ? buf_add(out, data, n) : ERR_TOOBIG;
	free(data);
	return ret ? ERR_TOOBIG : 0;
}
