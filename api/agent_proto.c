/*
 * The agent protocol's JSON (docs/agent-protocol.md). Parsers check every
 * member they read and copy it out, so no json_t outlives a call; builders
 * make a jansson tree and dump it compact, reals in Python's shortest repr
 * so the embedded config objects keep their numbers exactly.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/agent_proto.h"
#include "api/agent_wire.h"
#include "api/json_util.h"
#include "api/names.h"
#include "api/telemetry.h"
#include "api/pyobj.h"
#include "common/err.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "common/banned.h"

static const char *const phase_names[] = {
	"preparing", "downloading", "running", "exited",
	"uploading", "done",	    "error",
};

static const char *const action_names[] = { "run", "stop", "abort" };

const char *api_phase_name(enum api_phase p)
{
	return api__name_of(phase_names, ARRAY_SIZE(phase_names), p, "unknown");
}

int api_phase_parse(const char *s, enum api_phase *out)
{
	long v = api__name_find(phase_names, ARRAY_SIZE(phase_names), s);

	if (v < 0)
		return ERR_INVALID;
	*out = (enum api_phase)v;
	return 0;
}

const char *api_action_name(enum api_action a)
{
	return api__name_of(action_names, ARRAY_SIZE(action_names), a,
			    "unknown");
}

int api_action_parse(const char *s, enum api_action *out)
{
	long v = api__name_find(action_names, ARRAY_SIZE(action_names), s);

	if (v < 0)
		return ERR_INVALID;
	*out = (enum api_action)v;
	return 0;
}

/* ---- UTF-8 ---- */

/*
 * Copies s to out with each ill-formed subpart and each NUL replaced by
 * one U+FFFD (common/utf8.h: no surrogates, no overlong forms, nothing
 * above U+10FFFF).
 */
int api_utf8_sanitize(const char *s, size_t len, struct buf *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, n;
	int ret = 0;

	while (!ret && i < len) {
		if (utf8_decode(u + i, len - i, 0, &n) > 0) {
			i += n;
			run += n;
			continue;
		}
		ret = buf_add(out, s + i - run, run);
		ret = ret ? ret : buf_adds(out, "\xef\xbf\xbd");
		i += n;
		run = 0;
	}
	return ret ? ret : buf_add(out, s + i - run, run);
}

/* ---- reading ---- */

void api__ap_path_fmt(char *dst, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(dst, n, fmt, ap);
	va_end(ap);
}

/* The path of a member in messages: "assignments[2].launch.argv". */
void api__ap_member(char *dst, size_t n, const char *where, const char *key)
{
	api__ap_path_fmt(dst, n, "%s%s%s", where, *where ? "." : "", key);
}

int api__ap_bad(struct buf *err, const char *where, const char *key,
		const char *what)
{
	char m[256];

	api__ap_member(m, sizeof(m), where, key);
	(void)buf_addf(err, "member '%s' %s", m, what);
	return ERR_INVALID;
}

/*
 * Refuses strings (and keys) over API_PROTO_MAX_STRING anywhere in v. The
 * depth is bounded by api__json_load_object().
 */
static int check_strings(const json_t *v, const char *where, struct buf *err)
{
	char m[256];
	size_t i;
	void *it;

	if (json_is_string(v) && json_string_length(v) > API_PROTO_MAX_STRING)
		return api__ap_bad(err, where, "", "is longer than 1 MiB");
	if (json_is_array(v))
		for (i = 0; i < json_array_size(v); i++) {
			api__ap_path_fmt(m, sizeof(m), "%s[%zu]", where, i);
			if (check_strings(json_array_get(v, i), m, err))
				return ERR_INVALID;
		}
	if (!json_is_object(v))
		return 0;
	for (it = json_object_iter((json_t *)v); it;
	     it = json_object_iter_next((json_t *)v, it)) {
		const char *key = json_object_iter_key(it);

		if (strlen(key) > API_PROTO_MAX_STRING)
			return api__ap_bad(err, where, "",
					   "has a key longer than 1 MiB");
		api__ap_member(m, sizeof(m), where, key);
		if (check_strings(json_object_iter_value(it), m, err))
			return ERR_INVALID;
	}
	return 0;
}

int api__ap_load(const char *json, size_t len, json_t **root, struct buf *err)
{
	int ret;

	*root = NULL;
	if (len > API_PROTO_MAX_BODY) {
		(void)buf_addf(err, "message is larger than %d bytes",
			       API_PROTO_MAX_BODY);
		return ERR_INVALID;
	}
	/* An empty body would read as {}; no message of ours is empty. */
	if (len == 0) {
		(void)buf_adds(err, "message is empty");
		return ERR_INVALID;
	}
	ret = api__json_load_object(json, len, root, err);
	if (ret)
		return ERR_INVALID;
	if (check_strings(*root, "", err)) {
		json_decref(*root);
		*root = NULL;
		return ERR_INVALID;
	}
	return 0;
}

int api__ap_get_str(const json_t *o, const char *where, const char *key,
		    int opt, char **out, struct buf *err)
{
	const json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (opt)
			return 0;
		return api__ap_bad(err, where, key,
				   v ? "must not be null" : "is missing");
	}
	if (!json_is_string(v))
		return api__ap_bad(err, where, key,
				   opt ? "must be a string or null" :
					 "must be a string");
	*out = xstrdup(json_string_value(v));
	return 0;
}

/* An optional job uid: 1..API_PROTO_UID_MAX lower-case hex digits. */
int api__ap_get_uid(const json_t *o, const char *where, char **out,
		    struct buf *err)
{
	int ret = api__ap_get_str(o, where, "job_uid", API__AP_OPT, out, err);
	size_t n;

	if (ret || !*out)
		return ret;
	n = strlen(*out);
	if (!n || n > API_PROTO_UID_MAX ||
	    strspn(*out, "0123456789abcdef") != n) {
		FREE_AND_NULL(*out);
		return api__ap_bad(err, where, "job_uid",
				   "must be 1..32 lower-case hex digits");
	}
	return 0;
}

/* A string that must also be non-empty. */
int api__ap_get_name(const json_t *o, const char *where, const char *key,
		     char **out, struct buf *err)
{
	int ret = api__ap_get_str(o, where, key, API__AP_REQ, out, err);

	if (!ret && !**out) {
		FREE_AND_NULL(*out);
		return api__ap_bad(err, where, key, "must not be empty");
	}
	return ret;
}

/* *is_null (when given) says the member was null or absent. */
int api__ap_get_int(const json_t *o, const char *where, const char *key,
		    long long min, long long max, int *is_null, long long *out,
		    struct buf *err)
{
	const json_t *v = json_object_get(o, key);
	char what[96];

	*out = 0;
	if (is_null)
		*is_null = 0;
	if (!v || json_is_null(v)) {
		if (is_null) {
			*is_null = 1;
			return 0;
		}
		return api__ap_bad(err, where, key,
				   v ? "must not be null" : "is missing");
	}
	if (!json_is_integer(v)) {
		(void)snprintf(what, sizeof(what), "must be an integer%s",
			       is_null ? " or null" : "");
		return api__ap_bad(err, where, key, what);
	}
	if (json_integer_value(v) < min || json_integer_value(v) > max) {
		(void)snprintf(what, sizeof(what), "must be %lld..%lld", min,
			       max);
		return api__ap_bad(err, where, key, what);
	}
	*out = json_integer_value(v);
	return 0;
}

int api__ap_get_intv(const json_t *o, const char *where, const char *key,
		     long long min, long long max, int *out, struct buf *err)
{
	long long v = 0;
	int ret = api__ap_get_int(o, where, key, min, max, NULL, &v, err);

	*out = (int)v;
	return ret;
}

int api__ap_get_array(const json_t *o, const char *where, const char *key,
		      size_t min, size_t max, const json_t **out,
		      struct buf *err)
{
	const json_t *v = json_object_get(o, key);
	char what[96];

	*out = NULL;
	if (!v)
		return api__ap_bad(err, where, key, "is missing");
	if (!json_is_array(v))
		return api__ap_bad(err, where, key, "must be an array");
	if (json_array_size(v) < min || json_array_size(v) > max) {
		(void)snprintf(what, sizeof(what), "must have %zu..%zu entries",
			       min, max);
		return api__ap_bad(err, where, key, what);
	}
	*out = v;
	return 0;
}

int api__ap_get_object(const json_t *o, const char *where, const char *key,
		       int opt, const json_t **out, struct buf *err)
{
	const json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (opt)
			return 0;
		return api__ap_bad(err, where, key,
				   v ? "must not be null" : "is missing");
	}
	if (!json_is_object(v))
		return api__ap_bad(err, where, key,
				   opt ? "must be an object or null" :
					 "must be an object");
	*out = v;
	return 0;
}

/* A NULL-terminated copy of an array of strings. */
int api__ap_get_str_list(const json_t *o, const char *where, const char *key,
			 size_t min, size_t max, char ***out, size_t *n,
			 struct buf *err)
{
	const json_t *arr;
	char m[256], idx[32];
	size_t i;
	int ret;

	*out = NULL;
	if (n)
		*n = 0;
	ret = api__ap_get_array(o, where, key, min, max, &arr, err);
	if (ret)
		return ret;
	for (i = 0; i < json_array_size(arr); i++)
		if (!json_is_string(json_array_get(arr, i))) {
			api__ap_member(m, sizeof(m), where, key);
			(void)snprintf(idx, sizeof(idx), "[%zu]", i);
			(void)buf_addf(err, "member '%s%s' must be a string", m,
				       idx);
			return ERR_INVALID;
		}
	*out = xcalloc(json_array_size(arr) + 1, sizeof(**out));
	for (i = 0; i < json_array_size(arr); i++)
		(*out)[i] = xstrdup(json_string_value(json_array_get(arr, i)));
	if (n)
		*n = json_array_size(arr);
	return 0;
}

/* An object of strings, in document order. */
int api__ap_get_str_map(const json_t *o, const char *where, const char *key,
			struct api_kv **out, size_t *n, struct buf *err)
{
	const json_t *obj;
	char m[256];
	size_t i = 0;
	void *it;
	int ret;

	*out = NULL;
	*n = 0;
	ret = api__ap_get_object(o, where, key, API__AP_REQ, &obj, err);
	if (ret)
		return ret;
	api__ap_member(m, sizeof(m), where, key);
	if (json_object_size(obj) > API_PROTO_MAX_LIST) {
		(void)buf_addf(err, "member '%s' must have at most %d entries",
			       m, API_PROTO_MAX_LIST);
		return ERR_INVALID;
	}
	for (it = json_object_iter((json_t *)obj); it;
	     it = json_object_iter_next((json_t *)obj, it))
		if (!json_is_string(json_object_iter_value(it)))
			return api__ap_bad(err, m, json_object_iter_key(it),
					   "must be a string");
	*out = xcalloc(json_object_size(obj) + 1, sizeof(**out));
	for (it = json_object_iter((json_t *)obj); it;
	     it = json_object_iter_next((json_t *)obj, it)) {
		(*out)[i].key = xstrdup(json_object_iter_key(it));
		(*out)[i].value =
			xstrdup(json_string_value(json_object_iter_value(it)));
		i++;
	}
	*n = i;
	return 0;
}

/*
 * Compact JSON, as json_dumps(JSON_COMPACT) writes it, except for reals:
 * jansson prints 17 digits (0.1 becomes 0.10000000000000001) or, with
 * api__json_dump_to()'s precision of 15, loses bits. Python's shortest
 * repr keeps every double exact and 0.1 as 0.1, so the config objects
 * come out as their authors wrote them.
 */
static int emit_str(const char *s, size_t len, struct buf *out)
{
	size_t i;
	int ret = buf_addch(out, '"');

	for (i = 0; !ret && i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			ret = buf_addch(out, '\\');
			ret = ret ? ret : buf_addch(out, (char)c);
		} else if (c == '\n') {
			ret = buf_adds(out, "\\n");
		} else if (c == '\t') {
			ret = buf_adds(out, "\\t");
		} else if (c == '\r') {
			ret = buf_adds(out, "\\r");
		} else if (c == '\b') {
			ret = buf_adds(out, "\\b");
		} else if (c == '\f') {
			ret = buf_adds(out, "\\f");
		} else if (c < 0x20) {
			ret = buf_addf(out, "\\u%04x", c);
		} else {
			ret = buf_addch(out, (char)c);
		}
	}
	return ret ? ret : buf_addch(out, '"');
}

static int dump(const json_t *v, struct buf *out)
{
	size_t i;
	void *it;
	int ret = 0, first = 1;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		ret = buf_addch(out, '{');
		for (it = json_object_iter((json_t *)v); !ret && it;
		     it = json_object_iter_next((json_t *)v, it)) {
			const char *key = json_object_iter_key(it);

			if (!first)
				ret = buf_addch(out, ',');
			first = 0;
			ret = ret ? ret : emit_str(key, strlen(key), out);
			ret = ret ? ret : buf_addch(out, ':');
			ret = ret ? ret : dump(json_object_iter_value(it), out);
		}
		return ret ? ret : buf_addch(out, '}');
	case JSON_ARRAY:
		ret = buf_addch(out, '[');
		for (i = 0; !ret && i < json_array_size(v); i++) {
			if (i)
				ret = buf_addch(out, ',');
			ret = ret ? ret : dump(json_array_get(v, i), out);
		}
		return ret ? ret : buf_addch(out, ']');
	case JSON_STRING:
		return emit_str(json_string_value(v), json_string_length(v),
				out);
	case JSON_INTEGER:
		return buf_addf(out, "%" JSON_INTEGER_FORMAT,
				json_integer_value(v));
	case JSON_REAL:
		/* jansson holds only finite reals; repr is valid JSON then. */
		return api__py_float_repr(json_real_value(v), out);
	case JSON_TRUE:
		return buf_adds(out, "true");
	case JSON_FALSE:
		return buf_adds(out, "false");
	case JSON_NULL:
		return buf_adds(out, "null");
	}
	return ERR_INTERNAL;
}

/* An object member kept as its compact text (opt: NULL when absent). */
int api__ap_get_json_text_opt(const json_t *o, const char *where,
			      const char *key, int opt, char **out,
			      struct buf *err)
{
	const json_t *obj;
	struct buf b = BUF_INIT;
	int ret;

	*out = NULL;
	ret = api__ap_get_object(o, where, key, opt, &obj, err);
	if (ret || !obj)
		return ret;
	if (dump(obj, &b)) {
		buf_release(&b);
		return api__ap_bad(err, where, key, "could not be serialized");
	}
	*out = buf_detach(&b, NULL);
	return 0;
}

int api__ap_get_json_text(const json_t *o, const char *where, const char *key,
			  char **out, struct buf *err)
{
	return api__ap_get_json_text_opt(o, where, key, API__AP_REQ, out, err);
}

/* ---- building ---- */

json_t *api__ap_jstr(struct api__jb *b, const char *s)
{
	json_t *v;

	if (!s)
		return json_null();
	v = json_string(s);
	if (!v && !b->ret)
		b->ret = ERR_INVALID; /* not UTF-8 */
	return v;
}

json_t *api__ap_jint(struct api__jb *b, long long v)
{
	json_t *j = json_integer(v);

	if (!j && !b->ret)
		b->ret = ERR_NOMEM;
	return j;
}

void api__ap_put(struct api__jb *b, json_t *o, const char *key, json_t *v)
{
	if (!v || !o) {
		if (!b->ret)
			b->ret = ERR_NOMEM;
		json_decref(v);
		return;
	}
	if (json_object_set_new(o, key, v) && !b->ret)
		b->ret = ERR_INVALID; /* a key that is not UTF-8 */
}

void api__ap_push(struct api__jb *b, json_t *arr, json_t *v)
{
	if (!v || !arr) {
		if (!b->ret)
			b->ret = ERR_NOMEM;
		json_decref(v);
		return;
	}
	if (json_array_append_new(arr, v) && !b->ret)
		b->ret = ERR_NOMEM;
}

json_t *api__ap_jobj(struct api__jb *b)
{
	json_t *o = json_object();

	if (!o && !b->ret)
		b->ret = ERR_NOMEM;
	return o;
}

json_t *api__ap_jarr(struct api__jb *b)
{
	json_t *a = json_array();

	if (!a && !b->ret)
		b->ret = ERR_NOMEM;
	return a;
}

json_t *api__ap_jlist(struct api__jb *b, char *const *l, size_t n)
{
	json_t *arr = api__ap_jarr(b);
	size_t i;

	for (i = 0; l && i < n && l[i]; i++)
		api__ap_push(b, arr, api__ap_jstr(b, l[i]));
	return arr;
}

/* A config text as an embedded object; NULL is {}. */
json_t *api__ap_jtext(struct api__jb *b, const char *text)
{
	json_t *v;

	if (!text)
		return api__ap_jobj(b);
	v = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(v)) {
		json_decref(v);
		if (!b->ret)
			b->ret = ERR_INVALID;
		return NULL;
	}
	return v;
}

int api__ap_finish(struct api__jb *b, json_t *root, struct buf *out)
{
	int ret = b->ret;

	if (!ret && !root)
		ret = ERR_NOMEM;
	if (!ret)
		ret = dump(root, out);
	json_decref(root);
	return ret;
}
