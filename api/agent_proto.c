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
#include "api/json_util.h"
#include "api/telemetry.h"
#include "api/pyobj.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MAX_ATTEMPT 1000000
#define MAX_GRACE_MS (28LL * 86400 * 1000)
#define MAX_COUNT 1000000  /* cpus, gpus, ranks */
#define MAX_MS (1LL << 53) /* epoch milliseconds: anything a double holds */

static const char *const phase_names[] = {
	"preparing", "downloading", "running", "exited",
	"uploading", "done",	    "error",
};

static const char *const action_names[] = { "run", "stop", "abort" };

const char *api_phase_name(enum api_phase p)
{
	if ((unsigned)p >= sizeof(phase_names) / sizeof(phase_names[0]))
		return "unknown";
	return phase_names[p];
}

int api_phase_parse(const char *s, enum api_phase *out)
{
	size_t i;

	for (i = 0; i < sizeof(phase_names) / sizeof(phase_names[0]); i++)
		if (!strcmp(s, phase_names[i])) {
			*out = (enum api_phase)i;
			return 0;
		}
	return ERR_INVALID;
}

const char *api_action_name(enum api_action a)
{
	if ((unsigned)a >= sizeof(action_names) / sizeof(action_names[0]))
		return "unknown";
	return action_names[a];
}

int api_action_parse(const char *s, enum api_action *out)
{
	size_t i;

	for (i = 0; i < sizeof(action_names) / sizeof(action_names[0]); i++)
		if (!strcmp(s, action_names[i])) {
			*out = (enum api_action)i;
			return 0;
		}
	return ERR_INVALID;
}

/* ---- UTF-8 ---- */

/*
 * The length of the valid UTF-8 sequence at s[0..len) (no surrogates, no
 * overlong forms, nothing above U+10FFFF), or 0. When 0, *bad is the length
 * of the maximal invalid subpart to replace with one U+FFFD.
 */
static size_t utf8_seq(const unsigned char *s, size_t len, size_t *bad)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n, k;

	*bad = 1;
	if (c < 0x80)
		return c ? 1 : 0;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	for (k = 1; k < n; k++) {
		if (k >= len || s[k] < lo || s[k] > hi) {
			*bad = k;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

int api_utf8_sanitize(const char *s, size_t len, struct buf *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, n, bad;
	int ret = 0;

	while (!ret && i < len) {
		n = utf8_seq(u + i, len - i, &bad);
		if (n) {
			i += n;
			run += n;
			continue;
		}
		ret = buf_add(out, s + i - run, run);
		ret = ret ? ret : buf_adds(out, "\xef\xbf\xbd");
		i += bad;
		run = 0;
	}
	return ret ? ret : buf_add(out, s + i - run, run);
}

/* ---- reading ---- */

/* Formats a member path for messages; a long one is cut short. */
static void path_fmt(char *dst, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void path_fmt(char *dst, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(dst, n, fmt, ap);
	va_end(ap);
}

/* The path of a member in messages: "assignments[2].launch.argv". */
static void member(char *dst, size_t n, const char *where, const char *key)
{
	path_fmt(dst, n, "%s%s%s", where, *where ? "." : "", key);
}

static int bad(struct buf *err, const char *where, const char *key,
	       const char *what)
{
	char m[256];

	member(m, sizeof(m), where, key);
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
		return bad(err, where, "", "is longer than 1 MiB");
	if (json_is_array(v))
		for (i = 0; i < json_array_size(v); i++) {
			path_fmt(m, sizeof(m), "%s[%zu]", where, i);
			if (check_strings(json_array_get(v, i), m, err))
				return ERR_INVALID;
		}
	if (!json_is_object(v))
		return 0;
	for (it = json_object_iter((json_t *)v); it;
	     it = json_object_iter_next((json_t *)v, it)) {
		const char *key = json_object_iter_key(it);

		if (strlen(key) > API_PROTO_MAX_STRING)
			return bad(err, where, "",
				   "has a key longer than 1 MiB");
		member(m, sizeof(m), where, key);
		if (check_strings(json_object_iter_value(it), m, err))
			return ERR_INVALID;
	}
	return 0;
}

static int load(const char *json, size_t len, json_t **root, struct buf *err)
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

enum { REQ = 0, OPT = 1 }; /* OPT: absent or null reads as NULL / unset */

static int get_str(const json_t *o, const char *where, const char *key, int opt,
		   char **out, struct buf *err)
{
	const json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (opt)
			return 0;
		return bad(err, where, key,
			   v ? "must not be null" : "is missing");
	}
	if (!json_is_string(v))
		return bad(err, where, key,
			   opt ? "must be a string or null" :
				 "must be a string");
	*out = xstrdup(json_string_value(v));
	return 0;
}

/* An optional job uid: 1..API_PROTO_UID_MAX lower-case hex digits. */
static int get_uid(const json_t *o, const char *where, char **out,
		   struct buf *err)
{
	int ret = get_str(o, where, "job_uid", OPT, out, err);
	size_t n;

	if (ret || !*out)
		return ret;
	n = strlen(*out);
	if (!n || n > API_PROTO_UID_MAX ||
	    strspn(*out, "0123456789abcdef") != n) {
		FREE_AND_NULL(*out);
		return bad(err, where, "job_uid",
			   "must be 1..32 lower-case hex digits");
	}
	return 0;
}

/* A string that must also be non-empty. */
static int get_name(const json_t *o, const char *where, const char *key,
		    char **out, struct buf *err)
{
	int ret = get_str(o, where, key, REQ, out, err);

	if (!ret && !**out) {
		FREE_AND_NULL(*out);
		return bad(err, where, key, "must not be empty");
	}
	return ret;
}

/* *is_null (when given) says the member was null or absent. */
static int get_int(const json_t *o, const char *where, const char *key,
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
		return bad(err, where, key,
			   v ? "must not be null" : "is missing");
	}
	if (!json_is_integer(v)) {
		(void)snprintf(what, sizeof(what), "must be an integer%s",
			       is_null ? " or null" : "");
		return bad(err, where, key, what);
	}
	if (json_integer_value(v) < min || json_integer_value(v) > max) {
		(void)snprintf(what, sizeof(what), "must be %lld..%lld", min,
			       max);
		return bad(err, where, key, what);
	}
	*out = json_integer_value(v);
	return 0;
}

static int get_intv(const json_t *o, const char *where, const char *key,
		    long long min, long long max, int *out, struct buf *err)
{
	long long v = 0;
	int ret = get_int(o, where, key, min, max, NULL, &v, err);

	*out = (int)v;
	return ret;
}

static int get_array(const json_t *o, const char *where, const char *key,
		     size_t min, size_t max, const json_t **out,
		     struct buf *err)
{
	const json_t *v = json_object_get(o, key);
	char what[96];

	*out = NULL;
	if (!v)
		return bad(err, where, key, "is missing");
	if (!json_is_array(v))
		return bad(err, where, key, "must be an array");
	if (json_array_size(v) < min || json_array_size(v) > max) {
		(void)snprintf(what, sizeof(what), "must have %zu..%zu entries",
			       min, max);
		return bad(err, where, key, what);
	}
	*out = v;
	return 0;
}

static int get_object(const json_t *o, const char *where, const char *key,
		      int opt, const json_t **out, struct buf *err)
{
	const json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (opt)
			return 0;
		return bad(err, where, key,
			   v ? "must not be null" : "is missing");
	}
	if (!json_is_object(v))
		return bad(err, where, key,
			   opt ? "must be an object or null" :
				 "must be an object");
	*out = v;
	return 0;
}

/* A NULL-terminated copy of an array of strings. */
static int get_str_list(const json_t *o, const char *where, const char *key,
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
	ret = get_array(o, where, key, min, max, &arr, err);
	if (ret)
		return ret;
	for (i = 0; i < json_array_size(arr); i++)
		if (!json_is_string(json_array_get(arr, i))) {
			member(m, sizeof(m), where, key);
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

static void free_list(char **l)
{
	size_t i;

	if (!l)
		return;
	for (i = 0; l[i]; i++)
		free(l[i]);
	free(l);
}

static void free_kvs(struct api_kv *kv, size_t n)
{
	size_t i;

	for (i = 0; kv && i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

/* An object of strings, in document order. */
static int get_str_map(const json_t *o, const char *where, const char *key,
		       struct api_kv **out, size_t *n, struct buf *err)
{
	const json_t *obj;
	char m[256];
	size_t i = 0;
	void *it;
	int ret;

	*out = NULL;
	*n = 0;
	ret = get_object(o, where, key, REQ, &obj, err);
	if (ret)
		return ret;
	member(m, sizeof(m), where, key);
	if (json_object_size(obj) > API_PROTO_MAX_LIST) {
		(void)buf_addf(err, "member '%s' must have at most %d entries",
			       m, API_PROTO_MAX_LIST);
		return ERR_INVALID;
	}
	for (it = json_object_iter((json_t *)obj); it;
	     it = json_object_iter_next((json_t *)obj, it))
		if (!json_is_string(json_object_iter_value(it)))
			return bad(err, m, json_object_iter_key(it),
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
static int get_json_text_opt(const json_t *o, const char *where,
			     const char *key, int opt, char **out,
			     struct buf *err)
{
	const json_t *obj;
	struct buf b = BUF_INIT;
	int ret;

	*out = NULL;
	ret = get_object(o, where, key, opt, &obj, err);
	if (ret || !obj)
		return ret;
	if (dump(obj, &b)) {
		buf_release(&b);
		return bad(err, where, key, "could not be serialized");
	}
	*out = buf_detach(&b, NULL);
	return 0;
}

static int get_json_text(const json_t *o, const char *where, const char *key,
			 char **out, struct buf *err)
{
	return get_json_text_opt(o, where, key, REQ, out, err);
}

/* ---- ASSIGNMENT ---- */

static void channel_release(struct api_channel *c)
{
	free(c->name);
	free(c->s3_uri);
	free(c->s3_data_type);
	free(c->distribution);
	free(c->content_type);
	free(c->input_mode);
	free(c->compression);
	free(c->record_wrapper);
}

void api_assignment_release(struct api_assignment *a)
{
	size_t i;

	free(a->job);
	free(a->job_uid);
	free(a->job_arn);
	free(a->algo);
	free_list(a->hosts);
	if (a->addresses) {
		for (i = 0; i < a->n_hosts; i++)
			free(a->addresses[i]);
		free(a->addresses);
	}
	free(a->instance_type);
	free(a->hyperparameters_json);
	free(a->input_data_config_json);
	free(a->resource_config_json);
	free(a->debug_hook_config_json);
	free(a->profiler_config_json);
	for (i = 0; a->channels && i < a->n_channels; i++)
		channel_release(&a->channels[i]);
	free(a->channels);
	free_kvs(a->environment, a->n_environment);
	free_list(a->argv);
	free(a->runtime);
	free(a->program);
	free(a->submit_directory);
	free(a->image);
	free_list(a->entrypoint);
	free(a->registry_auth);
	free(a->run_as);
	free(a->output_path);
	free(a->checkpoint_s3_uri);
	free(a->checkpoint_local_path);
	free(a->debug_s3_uri);
	free(a->debug_local_path);
	free(a->profiler_s3_uri);
	free(a->profiler_local_path);
	free(a->tensorboard_s3_uri);
	free(a->tensorboard_local_path);
	free(a->blob_url);
	free(a->local_root);
	free(a->master_addr);
	free(a->rdzv_url);
	free(a->rdzv_token);
	free(a->mpi_options);
	free_list(a->loc_s3_prefixes);
	free_list(a->loc_file_roots);
	memset(a, 0, sizeof(*a));
}

static int parse_channels(const json_t *o, const char *where,
			  struct api_assignment *a, struct buf *err)
{
	const json_t *arr, *c;
	char m[256];
	long long v;
	size_t i;
	int ret, is_null;

	ret = get_array(o, where, "channels", 0, API_PROTO_MAX_LIST, &arr, err);
	if (ret)
		return ret;
	a->channels = xcalloc(json_array_size(arr) + 1, sizeof(*a->channels));
	a->n_channels = json_array_size(arr);
	for (i = 0; !ret && i < a->n_channels; i++) {
		struct api_channel *ch = &a->channels[i];

		path_fmt(m, sizeof(m), "%s%schannels[%zu]", where,
			 *where ? "." : "", i);
		c = json_array_get(arr, i);
		if (!json_is_object(c)) {
			(void)buf_addf(err, "member '%s' must be an object", m);
			return ERR_INVALID;
		}
		ret = get_name(c, m, "name", &ch->name, err);
		ret = ret ? ret : get_str(c, m, "uri", REQ, &ch->s3_uri, err);
		ret = ret ? ret :
			    get_str(c, m, "data_type", REQ, &ch->s3_data_type,
				    err);
		ret = ret ? ret :
			    get_str(c, m, "distribution", REQ,
				    &ch->distribution, err);
		ret = ret ? ret :
			    get_str(c, m, "content_type", OPT,
				    &ch->content_type, err);
		ret = ret ? ret :
			    get_str(c, m, "input_mode", OPT, &ch->input_mode,
				    err);
		ret = ret ? ret :
			    get_str(c, m, "compression", OPT, &ch->compression,
				    err);
		ret = ret ? ret :
			    get_str(c, m, "record_wrapper", OPT,
				    &ch->record_wrapper, err);
		if (!ret) {
			long long seed = 0;
			int none = 1;

			ret = get_int(c, m, "shuffle_seed", LLONG_MIN,
				      LLONG_MAX, &none, &seed, err);
			ch->shuffle = !none;
			ch->shuffle_seed = seed;
		}
		/* Optional: an older controller sends no shares. */
		ret = ret ? ret :
			    get_int(c, m, "shard_count", 0, API_PROTO_MAX_HOSTS,
				    &is_null, &v, err);
		ch->shard_count = (int)v;
		ret = ret ? ret :
			    get_int(c, m, "shard_index", 0,
				    ch->shard_count ? ch->shard_count - 1 : 0,
				    &is_null, &v, err);
		ch->shard_index = (int)v;
	}
	return ret;
}

static int parse_hosts(const json_t *o, const char *where,
		       struct api_assignment *a, struct buf *err)
{
	const json_t *addrs, *v;
	char m[256];
	size_t i, j;
	int ret;

	ret = get_str_list(o, where, "hosts", 1, API_PROTO_MAX_HOSTS, &a->hosts,
			   &a->n_hosts, err);
	if (ret)
		return ret;
	for (i = 0; i < a->n_hosts; i++) {
		if (!a->hosts[i][0])
			return bad(err, where, "hosts",
				   "must not hold an empty name");
		for (j = 0; j < i; j++)
			if (!strcmp(a->hosts[i], a->hosts[j])) {
				member(m, sizeof(m), where, "hosts");
				(void)buf_addf(err,
					       "member '%s' lists '%s' twice",
					       m, a->hosts[i]);
				return ERR_INVALID;
			}
	}
	ret = get_object(o, where, "addresses", REQ, &addrs, err);
	if (ret)
		return ret;
	member(m, sizeof(m), where, "addresses");
	a->addresses = xcalloc(a->n_hosts + 1, sizeof(*a->addresses));
	for (i = 0; i < a->n_hosts; i++) {
		v = json_object_get(addrs, a->hosts[i]);
		if (!json_is_string(v))
			return bad(err, m, a->hosts[i],
				   v ? "must be a string" :
				       "is missing (every host needs an "
				       "address)");
		a->addresses[i] = xstrdup(json_string_value(v));
	}
	return 0;
}

/* "distribution" is optional: an older controller sends none. */
static int parse_distribution(const json_t *o, const char *where,
			      struct api_assignment *a, struct buf *err)
{
	const json_t *d;
	char m[256], *mode = NULL;
	long long v = 0;
	int is_null, ret;

	ret = get_object(o, where, "distribution", OPT, &d, err);
	if (ret || !d)
		return ret;
	member(m, sizeof(m), where, "distribution");
	ret = get_str(d, m, "mode", REQ, &mode, err);
	if (!ret && api_dist_mode_parse(mode, &a->dist_mode))
		ret = bad(err, m, "mode", "is not a distribution mode");
	free(mode);
	ret = ret ? ret :
		    get_int(d, m, "mpi_processes", 0, API_PROTO_MAX_PROCS * 256,
			    &is_null, &v, err);
	a->mpi_processes = (int)v;
	ret = ret ? ret :
		    get_str(d, m, "mpi_options", OPT, &a->mpi_options, err);
	ret = ret ? ret :
		    get_int(d, m, "ps_servers", 0, API_PROTO_MAX_HOSTS,
			    &is_null, &v, err);
	a->ps_servers = (int)v;
	return ret;
}

static int parse_container(const json_t *l, const char *m,
			   struct api_assignment *a, struct buf *err)
{
	const json_t *ep = json_object_get(l, "entrypoint");
	const json_t *tls = json_object_get(l, "tls_verify");
	int ret;

	ret = get_name(l, m, "image", &a->image, err);
	ret = ret ? ret :
		    get_str_list(l, m, "argv", 0, API_PROTO_MAX_LIST, &a->argv,
				 NULL, err);
	if (!ret && ep && !json_is_null(ep))
		ret = get_str_list(l, m, "entrypoint", 1, API_PROTO_MAX_LIST,
				   &a->entrypoint, NULL, err);
	ret = ret ? ret : get_str(l, m, "auth", OPT, &a->registry_auth, err);
	if (!ret && !json_is_boolean(tls))
		ret = bad(err, m, "tls_verify", "must be true or false");
	a->tls_verify = json_is_true(tls);
	return ret;
}

static int parse_launch(const json_t *o, const char *where,
			struct api_assignment *a, struct buf *err)
{
	const json_t *l;
	char m[256], *mode = NULL;
	int ret;

	ret = get_object(o, where, "launch", REQ, &l, err);
	if (ret)
		return ret;
	member(m, sizeof(m), where, "launch");
	ret = get_str(l, m, "mode", REQ, &mode, err);
	if (ret)
		return ret;
	if (!strcmp(mode, "exec")) {
		a->launch_mode = API_LAUNCH_EXEC;
		ret = get_str_list(l, m, "argv", 1, API_PROTO_MAX_LIST,
				   &a->argv, NULL, err);
	} else if (!strcmp(mode, "script")) {
		a->launch_mode = API_LAUNCH_SCRIPT;
		ret = get_name(l, m, "runtime", &a->runtime, err);
		ret = ret ? ret : get_name(l, m, "program", &a->program, err);
		ret = ret ? ret :
			    get_str(l, m, "submit_directory", OPT,
				    &a->submit_directory, err);
	} else if (!strcmp(mode, "container")) {
		a->launch_mode = API_LAUNCH_CONTAINER;
		ret = parse_container(l, m, a, err);
	} else {
		ret = bad(err, m, "mode",
			  "must be \"exec\", \"script\" or \"container\"");
	}
	free(mode);
	return ret;
}

static int parse_hyperparameters(const json_t *o, const char *where,
				 struct api_assignment *a, struct buf *err)
{
	const json_t *h;
	char m[256];
	void *it;
	int ret;

	ret = get_object(o, where, "hyperparameters", REQ, &h, err);
	if (ret)
		return ret;
	member(m, sizeof(m), where, "hyperparameters");
	for (it = json_object_iter((json_t *)h); it;
	     it = json_object_iter_next((json_t *)h, it))
		if (!json_is_string(json_object_iter_value(it)))
			return bad(err, m, json_object_iter_key(it),
				   "must be a string");
	return get_json_text(o, where, "hyperparameters",
			     &a->hyperparameters_json, err);
}

/* Which job, attempt and host the assignment is for, and what to do. */
static int parse_identity(const json_t *o, const char *where,
			  struct api_assignment *a, struct buf *err)
{
	char *action = NULL;
	int ret;

	ret = get_name(o, where, "job", &a->job, err);
	ret = ret ? ret : get_uid(o, where, &a->job_uid, err);
	ret = ret ? ret :
		    get_intv(o, where, "attempt", 1, MAX_ATTEMPT, &a->attempt,
			     err);
	ret = ret ? ret : get_str(o, where, "action", REQ, &action, err);
	if (!ret && api_action_parse(action, &a->action))
		ret = bad(err, where, "action",
			  "must be \"run\", \"stop\" or \"abort\"");
	free(action);
	ret = ret ? ret : get_str(o, where, "job_arn", REQ, &a->job_arn, err);
	ret = ret ? ret : get_name(o, where, "algo", &a->algo, err);
	ret = ret ? ret : parse_hosts(o, where, a, err);
	ret = ret ? ret :
		    get_intv(o, where, "host_index", 0, API_PROTO_MAX_HOSTS - 1,
			     &a->host_index, err);
	if (!ret && ((size_t)a->host_index >= a->n_hosts ||
		     strcmp(a->hosts[a->host_index], a->algo)))
		ret = bad(err, where, "host_index",
			  "must be the position of algo in hosts");
	return ret;
}

/* What the job runs: its configuration, program and output. */
static int parse_job(const json_t *o, const char *where,
		     struct api_assignment *a, struct buf *err)
{
	int ret;

	ret = get_str(o, where, "instance_type", REQ, &a->instance_type, err);
	ret = ret ? ret : parse_hyperparameters(o, where, a, err);
	ret = ret ? ret :
		    get_json_text(o, where, "input_data_config",
				  &a->input_data_config_json, err);
	ret = ret ? ret :
		    get_json_text(o, where, "resource_config",
				  &a->resource_config_json, err);
	ret = ret ? ret :
		    get_json_text_opt(o, where, "debug_hook_config", OPT,
				      &a->debug_hook_config_json, err);
	ret = ret ? ret :
		    get_json_text_opt(o, where, "profiler_config", OPT,
				      &a->profiler_config_json, err);
	ret = ret ? ret : parse_channels(o, where, a, err);
	ret = ret ? ret :
		    get_str_map(o, where, "environment", &a->environment,
				&a->n_environment, err);
	ret = ret ? ret : parse_launch(o, where, a, err);
	ret = ret ? ret :
		    get_str(o, where, "output_path", REQ, &a->output_path, err);
	ret = ret ? ret : get_str(o, where, "run_as", OPT, &a->run_as, err);
	if (!ret && a->run_as && !*a->run_as)
		ret = bad(err, where, "run_as", "must not be empty");
	return ret;
}

/* The optional "checkpoint" object. */
static int parse_checkpoint(const json_t *o, const char *where,
			    struct api_assignment *a, struct buf *err)
{
	const json_t *sub;
	char m[256];
	int ret;

	ret = get_object(o, where, "checkpoint", OPT, &sub, err);
	member(m, sizeof(m), where, "checkpoint");
	if (!ret && sub) {
		ret = get_str(sub, m, "s3_uri", REQ, &a->checkpoint_s3_uri,
			      err);
		ret = ret ? ret :
			    get_str(sub, m, "local_path", REQ,
				    &a->checkpoint_local_path, err);
	}
	return ret;
}

/* A folder mirrored to S3 ("debug_output", "profiler_output"), optional. */
static int parse_mirror(const json_t *o, const char *where, const char *key,
			char **s3_uri, char **local_path, struct buf *err)
{
	const json_t *sub;
	char m[256];
	int ret;

	ret = get_object(o, where, key, OPT, &sub, err);
	member(m, sizeof(m), where, key);
	if (!ret && sub) {
		ret = get_str(sub, m, "s3_uri", REQ, s3_uri, err);
		ret = ret ? ret :
			    get_str(sub, m, "local_path", REQ, local_path, err);
	}
	return ret;
}

/* The "storage" object. */
static int parse_storage(const json_t *o, const char *where,
			 struct api_assignment *a, struct buf *err)
{
	const json_t *sub;
	char m[256];
	int ret;

	ret = get_object(o, where, "storage", REQ, &sub, err);
	member(m, sizeof(m), where, "storage");
	ret = ret ? ret : get_str(sub, m, "blob_url", REQ, &a->blob_url, err);
	ret = ret ? ret :
		    get_str(sub, m, "local_root", OPT, &a->local_root, err);
	return ret;
}

/* One list of "locations": null (any) or an array of strings. */
static int parse_location_list(const json_t *sub, const char *m,
			       const char *key, int *any, char ***out,
			       size_t *n, struct buf *err)
{
	const json_t *v = json_object_get(sub, key);

	*any = v && json_is_null(v);
	if (*any)
		return 0;
	return get_str_list(sub, m, key, 0, API_PROTO_MAX_LIST, out, n, err);
}

/* The optional "locations" object: absent from an older controller. */
static int parse_locations(const json_t *o, const char *where,
			   struct api_assignment *a, struct buf *err)
{
	const json_t *sub;
	char m[256];
	size_t i;
	int ret;

	ret = get_object(o, where, "locations", OPT, &sub, err);
	if (ret || !sub)
		return ret;
	a->has_locations = 1;
	member(m, sizeof(m), where, "locations");
	ret = parse_location_list(sub, m, "s3_prefixes", &a->loc_s3_any,
				  &a->loc_s3_prefixes, &a->n_loc_s3_prefixes,
				  err);
	ret = ret ? ret :
		    parse_location_list(sub, m, "file_roots", &a->loc_file_any,
					&a->loc_file_roots,
					&a->n_loc_file_roots, err);
	for (i = 0; !ret && i < a->n_loc_file_roots; i++)
		if (a->loc_file_roots[i][0] != '/')
			ret = bad(err, m, "file_roots",
				  "must hold absolute folders");
	return ret;
}

/* The "rendezvous" object. */
static int parse_rendezvous(const json_t *o, const char *where,
			    struct api_assignment *a, struct buf *err)
{
	const json_t *sub;
	char m[256];
	int ret;

	ret = get_object(o, where, "rendezvous", REQ, &sub, err);
	member(m, sizeof(m), where, "rendezvous");
	ret = ret ? ret : get_name(sub, m, "master_addr", &a->master_addr, err);
	ret = ret ? ret :
		    get_intv(sub, m, "master_port", 1, 65535, &a->master_port,
			     err);
	ret = ret ? ret : get_str(sub, m, "url", OPT, &a->rdzv_url, err);
	ret = ret ? ret : get_str(sub, m, "token", OPT, &a->rdzv_token, err);
	return ret;
}

static int parse_assignment(const json_t *o, const char *where,
			    struct api_assignment *a, struct buf *err)
{
	const json_t *iso;
	long long v = 0;
	int ret;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = parse_identity(o, where, a, err);
	ret = ret ? ret : parse_job(o, where, a, err);
	if (ret)
		return ret;

	ret = parse_checkpoint(o, where, a, err);
	ret = ret ? ret :
		    parse_mirror(o, where, "debug_output", &a->debug_s3_uri,
				 &a->debug_local_path, err);
	ret = ret ? ret :
		    parse_mirror(o, where, "profiler_output",
				 &a->profiler_s3_uri, &a->profiler_local_path,
				 err);
	ret = ret ? ret :
		    parse_mirror(o, where, "tensorboard",
				 &a->tensorboard_s3_uri,
				 &a->tensorboard_local_path, err);
	ret = ret ? ret : parse_storage(o, where, a, err);
	ret = ret ? ret : parse_locations(o, where, a, err);
	ret = ret ? ret : parse_rendezvous(o, where, a, err);
	ret = ret ? ret :
		    get_intv(o, where, "processes_per_host", 1,
			     API_PROTO_MAX_PROCS, &a->processes_per_host, err);
	ret = ret ? ret : parse_distribution(o, where, a, err);
	ret = ret ? ret :
		    get_int(o, where, "grace_ms", 0, MAX_GRACE_MS, NULL, &v,
			    err);
	a->grace_ms = v;
	iso = json_object_get(o, "network_isolation");
	if (!ret && iso && !json_is_boolean(iso))
		ret = bad(err, where, "network_isolation",
			  "must be true or false");
	a->network_isolation = json_is_true(iso);
	return ret;
}

void api_work_release(struct api_work *w)
{
	size_t i;

	for (i = 0; w->items && i < w->n; i++)
		api_assignment_release(&w->items[i]);
	free(w->items);
	memset(w, 0, sizeof(*w));
}

int api_work_parse(const char *json, size_t len, struct api_work *w,
		   struct buf *err)
{
	const json_t *arr;
	json_t *root;
	char m[64];
	size_t i;
	long long v = 0;
	int ret, is_null;

	memset(w, 0, sizeof(*w));
	ret = load(json, len, &root, err);
	if (ret)
		return ret;
	ret = get_int(root, "", "version", 0, INT64_MAX, NULL, &v, err);
	w->version = v;
	ret = ret ? ret :
		    get_array(root, "", "assignments", 0,
			      API_PROTO_MAX_ASSIGNMENTS, &arr, err);
	if (!ret) {
		w->n = json_array_size(arr);
		w->items = xcalloc(w->n + 1, sizeof(*w->items));
	}
	for (i = 0; !ret && i < w->n; i++) {
		(void)snprintf(m, sizeof(m), "assignments[%zu]", i);
		ret = parse_assignment(json_array_get(arr, i), m, &w->items[i],
				       err);
	}
	ret = ret ? ret :
		    get_int(root, "", "prune_images", 0, INT64_MAX, &is_null,
			    &v, err);
	w->prune_images = ret ? 0 : v;
	json_decref(root);
	if (ret)
		api_work_release(w);
	return ret;
}

/* ---- building ---- */

/*
 * A builder's sticky error: the first failure is kept and later steps turn
 * into no-ops on NULL trees, so each builder checks once at the end.
 */
struct jb {
	int ret;
};

static json_t *jstr(struct jb *b, const char *s)
{
	json_t *v;

	if (!s)
		return json_null();
	v = json_string(s);
	if (!v && !b->ret)
		b->ret = ERR_INVALID; /* not UTF-8 */
	return v;
}

static json_t *jint(struct jb *b, long long v)
{
	json_t *j = json_integer(v);

	if (!j && !b->ret)
		b->ret = ERR_NOMEM;
	return j;
}

static void put(struct jb *b, json_t *o, const char *key, json_t *v)
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

static void push(struct jb *b, json_t *arr, json_t *v)
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

static json_t *jobj(struct jb *b)
{
	json_t *o = json_object();

	if (!o && !b->ret)
		b->ret = ERR_NOMEM;
	return o;
}

static json_t *jarr(struct jb *b)
{
	json_t *a = json_array();

	if (!a && !b->ret)
		b->ret = ERR_NOMEM;
	return a;
}

static json_t *jlist(struct jb *b, char *const *l, size_t n)
{
	json_t *arr = jarr(b);
	size_t i;

	for (i = 0; l && i < n && l[i]; i++)
		push(b, arr, jstr(b, l[i]));
	return arr;
}

static size_t list_len(char *const *l)
{
	size_t n = 0;

	while (l && l[n])
		n++;
	return n;
}

/* A config text as an embedded object; NULL is {}. */
static json_t *jtext(struct jb *b, const char *text)
{
	json_t *v;

	if (!text)
		return jobj(b);
	v = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(v)) {
		json_decref(v);
		if (!b->ret)
			b->ret = ERR_INVALID;
		return NULL;
	}
	return v;
}

static int finish(struct jb *b, json_t *root, struct buf *out)
{
	int ret = b->ret;

	if (!ret && !root)
		ret = ERR_NOMEM;
	if (!ret)
		ret = dump(root, out);
	json_decref(root);
	return ret;
}

static json_t *assignment_json(struct jb *b, const struct api_assignment *a)
{
	json_t *o = jobj(b), *addrs = jobj(b), *chans = jarr(b), *env = jobj(b);
	json_t *launch = jobj(b), *sub;
	size_t i;

	put(b, o, "job", jstr(b, a->job));
	if (a->job_uid)
		put(b, o, "job_uid", jstr(b, a->job_uid));
	put(b, o, "attempt", jint(b, a->attempt));
	put(b, o, "action", jstr(b, api_action_name(a->action)));
	put(b, o, "job_arn", jstr(b, a->job_arn));
	put(b, o, "algo", jstr(b, a->algo));
	put(b, o, "host_index", jint(b, a->host_index));
	put(b, o, "hosts", jlist(b, a->hosts, a->n_hosts));
	for (i = 0; a->hosts && a->addresses && i < a->n_hosts; i++)
		if (a->hosts[i])
			put(b, addrs, a->hosts[i], jstr(b, a->addresses[i]));
	put(b, o, "addresses", addrs);
	put(b, o, "instance_type", jstr(b, a->instance_type));
	put(b, o, "hyperparameters", jtext(b, a->hyperparameters_json));
	put(b, o, "input_data_config", jtext(b, a->input_data_config_json));
	put(b, o, "resource_config", jtext(b, a->resource_config_json));
	if (a->debug_hook_config_json)
		put(b, o, "debug_hook_config",
		    jtext(b, a->debug_hook_config_json));
	if (a->profiler_config_json)
		put(b, o, "profiler_config", jtext(b, a->profiler_config_json));
	for (i = 0; a->channels && i < a->n_channels; i++) {
		const struct api_channel *c = &a->channels[i];
		json_t *ch = jobj(b);

		put(b, ch, "name", jstr(b, c->name));
		put(b, ch, "uri", jstr(b, c->s3_uri));
		put(b, ch, "data_type", jstr(b, c->s3_data_type));
		put(b, ch, "distribution", jstr(b, c->distribution));
		if (c->content_type)
			put(b, ch, "content_type", jstr(b, c->content_type));
		if (c->input_mode)
			put(b, ch, "input_mode", jstr(b, c->input_mode));
		if (c->compression)
			put(b, ch, "compression", jstr(b, c->compression));
		if (c->record_wrapper)
			put(b, ch, "record_wrapper",
			    jstr(b, c->record_wrapper));
		if (c->shuffle)
			put(b, ch, "shuffle_seed",
			    jint(b, (long long)c->shuffle_seed));
		if (c->shard_count) {
			put(b, ch, "shard_count", jint(b, c->shard_count));
			put(b, ch, "shard_index", jint(b, c->shard_index));
		}
		push(b, chans, ch);
	}
	put(b, o, "channels", chans);
	for (i = 0; a->environment && i < a->n_environment; i++)
		put(b, env, a->environment[i].key ? a->environment[i].key : "",
		    jstr(b, a->environment[i].value));
	put(b, o, "environment", env);
	if (a->launch_mode == API_LAUNCH_SCRIPT) {
		put(b, launch, "mode", jstr(b, "script"));
		put(b, launch, "runtime", jstr(b, a->runtime));
		put(b, launch, "program", jstr(b, a->program));
		put(b, launch, "submit_directory",
		    jstr(b, a->submit_directory));
	} else if (a->launch_mode == API_LAUNCH_CONTAINER) {
		put(b, launch, "mode", jstr(b, "container"));
		put(b, launch, "image", jstr(b, a->image));
		put(b, launch, "argv", jlist(b, a->argv, list_len(a->argv)));
		put(b, launch, "entrypoint",
		    a->entrypoint ?
			    jlist(b, a->entrypoint, list_len(a->entrypoint)) :
			    json_null());
		put(b, launch, "auth", jstr(b, a->registry_auth));
		put(b, launch, "tls_verify", json_boolean(a->tls_verify));
	} else {
		put(b, launch, "mode", jstr(b, "exec"));
		put(b, launch, "argv", jlist(b, a->argv, list_len(a->argv)));
	}
	put(b, o, "launch", launch);
	put(b, o, "output_path", jstr(b, a->output_path));
	if (a->run_as)
		put(b, o, "run_as", jstr(b, a->run_as));
	if (a->debug_s3_uri) {
		sub = jobj(b);
		put(b, sub, "s3_uri", jstr(b, a->debug_s3_uri));
		put(b, sub, "local_path", jstr(b, a->debug_local_path));
		put(b, o, "debug_output", sub);
	}
	if (a->profiler_s3_uri) {
		sub = jobj(b);
		put(b, sub, "s3_uri", jstr(b, a->profiler_s3_uri));
		put(b, sub, "local_path", jstr(b, a->profiler_local_path));
		put(b, o, "profiler_output", sub);
	}
	if (a->checkpoint_s3_uri || a->checkpoint_local_path) {
		sub = jobj(b);
		put(b, sub, "s3_uri", jstr(b, a->checkpoint_s3_uri));
		put(b, sub, "local_path", jstr(b, a->checkpoint_local_path));
		put(b, o, "checkpoint", sub);
	} else {
		put(b, o, "checkpoint", json_null());
	}
	if (a->tensorboard_s3_uri && a->tensorboard_local_path) {
		sub = jobj(b);
		put(b, sub, "s3_uri", jstr(b, a->tensorboard_s3_uri));
		put(b, sub, "local_path", jstr(b, a->tensorboard_local_path));
		put(b, o, "tensorboard", sub);
	}
	sub = jobj(b);
	put(b, sub, "blob_url", jstr(b, a->blob_url));
	put(b, sub, "local_root", jstr(b, a->local_root));
	put(b, o, "storage", sub);
	if (a->has_locations) {
		sub = jobj(b);
		put(b, sub, "s3_prefixes",
		    a->loc_s3_any ?
			    json_null() :
			    jlist(b, a->loc_s3_prefixes, a->n_loc_s3_prefixes));
		put(b, sub, "file_roots",
		    a->loc_file_any ?
			    json_null() :
			    jlist(b, a->loc_file_roots, a->n_loc_file_roots));
		put(b, o, "locations", sub);
	}
	sub = jobj(b);
	put(b, sub, "master_addr", jstr(b, a->master_addr));
	put(b, sub, "master_port", jint(b, a->master_port));
	put(b, sub, "url", jstr(b, a->rdzv_url));
	put(b, sub, "token", jstr(b, a->rdzv_token));
	put(b, o, "rendezvous", sub);
	put(b, o, "processes_per_host", jint(b, a->processes_per_host));
	sub = jobj(b);
	put(b, sub, "mode", jstr(b, api_dist_mode_name(a->dist_mode)));
	put(b, sub, "mpi_processes", jint(b, a->mpi_processes));
	put(b, sub, "mpi_options", jstr(b, a->mpi_options));
	put(b, sub, "ps_servers", jint(b, a->ps_servers));
	put(b, o, "distribution", sub);
	put(b, o, "grace_ms", jint(b, a->grace_ms));
	if (a->network_isolation)
		put(b, o, "network_isolation", json_true());
	return o;
}

int api_work_build(const struct api_work *w, struct buf *out)
{
	struct jb b = { 0 };
	json_t *root = jobj(&b), *arr = jarr(&b);
	size_t i;

	put(&b, root, "version", jint(&b, w->version));
	for (i = 0; w->items && i < w->n; i++)
		push(&b, arr, assignment_json(&b, &w->items[i]));
	put(&b, root, "assignments", arr);
	if (w->prune_images)
		put(&b, root, "prune_images", jint(&b, w->prune_images));
	return finish(&b, root, out);
}

/* ---- REPORT / status ---- */

void api_report_release(struct api_report *r)
{
	size_t i;

	for (i = 0; r->procs && i < r->n_procs; i++)
		free(r->procs[i].tail);
	free(r->job);
	free(r->job_uid);
	free(r->algo);
	free(r->procs);
	free(r->failure);
	free(r->error);
	memset(r, 0, sizeof(*r));
}

void api_status_release(struct api_status *s)
{
	size_t i;

	free(s->boot_id);
	for (i = 0; s->items && i < s->n; i++)
		api_report_release(&s->items[i]);
	free(s->items);
	free(s->images_json);
	for (i = 0; s->samples && i < s->n_samples; i++)
		tm_host_sample_release(&s->samples[i]);
	free(s->samples);
	free(s->telemetry_error);
	memset(s, 0, sizeof(*s));
}

/*
 * A process is running while exited_ms is null, and then exit_code and
 * signal are null too; once exited, exactly one of them is set.
 */
static int parse_proc(const json_t *o, const char *where,
		      struct api_proc_report *p, struct buf *err)
{
	long long v = 0;
	int code_null, sig_null, exit_null, ret;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = get_intv(o, where, "rank", 0, MAX_COUNT, &p->rank, err);
	ret = ret ? ret : get_int(o, where, "pid", 1, INT32_MAX, NULL, &v, err);
	p->pid = v;
	ret = ret ? ret :
		    get_int(o, where, "started_ms", 0, MAX_MS, NULL, &v, err);
	p->started_ms = v;
	ret = ret ? ret :
		    get_int(o, where, "exit_code", 0, 255, &code_null, &v, err);
	p->exit_code = (int)v;
	ret = ret ? ret :
		    get_int(o, where, "signal", 1, 255, &sig_null, &v, err);
	p->signal = (int)v;
	ret = ret ? ret :
		    get_int(o, where, "exited_ms", 0, MAX_MS, &exit_null, &v,
			    err);
	p->exited_ms = v;
	ret = ret ? ret : get_str(o, where, "tail", OPT, &p->tail, err);
	if (ret)
		return ret;
	p->exited = !exit_null;
	if (exit_null && (!code_null || !sig_null))
		return bad(err, where, "exited_ms",
			   "must be set with exit_code or signal");
	if (!exit_null && code_null == sig_null)
		return bad(err, where, "exit_code",
			   "or signal (exactly one) must be set once "
			   "exited_ms is");
	return 0;
}

static int parse_report(const json_t *o, const char *where,
			struct api_report *r, struct buf *err)
{
	const json_t *arr;
	char m[128], *phase = NULL;
	long long v = 0;
	int is_null, ret;
	size_t i;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = get_name(o, where, "job", &r->job, err);
	ret = ret ? ret : get_uid(o, where, &r->job_uid, err);
	ret = ret ? ret :
		    get_intv(o, where, "attempt", 1, MAX_ATTEMPT, &r->attempt,
			     err);
	ret = ret ? ret : get_name(o, where, "algo", &r->algo, err);
	ret = ret ? ret : get_str(o, where, "phase", REQ, &phase, err);
	if (!ret && api_phase_parse(phase, &r->phase))
		ret = bad(err, where, "phase", "is not a known phase");
	free(phase);
	ret = ret ? ret :
		    get_int(o, where, "started_ms", 0, MAX_MS, &is_null, &v,
			    err);
	r->started_ms = v;
	ret = ret ? ret :
		    get_array(o, where, "processes", 0, API_PROTO_MAX_PROCS,
			      &arr, err);
	if (!ret) {
		r->n_procs = json_array_size(arr);
		r->procs = xcalloc(r->n_procs + 1, sizeof(*r->procs));
	}
	for (i = 0; !ret && i < r->n_procs; i++) {
		path_fmt(m, sizeof(m), "%s.processes[%zu]", where, i);
		ret = parse_proc(json_array_get(arr, i), m, &r->procs[i], err);
	}
	ret = ret ? ret : get_str(o, where, "failure", OPT, &r->failure, err);
	ret = ret ? ret : get_str(o, where, "error", OPT, &r->error, err);
	return ret;
}

/* "images": {"pruned": N, "list": [{"id", "names", "size", ...}]} */
static int parse_images(const json_t *root, struct api_status *s,
			struct buf *err)
{
	const json_t *o = json_object_get(root, "images"), *list, *e;
	long long v = 0;
	size_t i;
	int ret;

	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return bad(err, "", "images", "must be an object or null");
	ret = get_int(o, "images", "pruned", 0, INT64_MAX, NULL, &v, err);
	s->images_pruned = v;
	ret = ret ? ret :
		    get_array(o, "images", "list", 0, API_PROTO_MAX_IMAGES,
			      &list, err);
	json_array_foreach(list, i, e)
	{
		const json_t *id = json_object_get(e, "id");
		const json_t *names = json_object_get(e, "names");

		if (ret)
			break;
		if (!json_is_object(e) || !json_is_string(id) ||
		    !json_is_array(names) ||
		    !json_is_integer(json_object_get(e, "size")))
			ret = bad(err, "images", "list",
				  "must hold objects with id, names and "
				  "size");
	}
	if (!ret)
		s->images_json = json_dumps(list, JSON_COMPACT);
	return ret;
}

int api_status_parse(const char *json, size_t len, struct api_status *s,
		     struct buf *err)
{
	const json_t *arr;
	json_t *root;
	char m[64];
	size_t i;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = load(json, len, &root, err);
	if (ret)
		return ret;
	ret = get_name(root, "", "boot_id", &s->boot_id, err);
	ret = ret ? ret :
		    get_array(root, "", "assignments", 0,
			      API_PROTO_MAX_ASSIGNMENTS, &arr, err);
	if (!ret) {
		s->n = json_array_size(arr);
		s->items = xcalloc(s->n + 1, sizeof(*s->items));
	}
	for (i = 0; !ret && i < s->n; i++) {
		(void)snprintf(m, sizeof(m), "assignments[%zu]", i);
		ret = parse_report(json_array_get(arr, i), m, &s->items[i],
				   err);
	}
	ret = ret ? ret : parse_images(root, s, err);
	if (!ret) {
		struct buf why = BUF_INIT;

		if (api__telemetry_parse(root, &s->samples, &s->n_samples,
					 &why))
			s->telemetry_error = buf_detach(&why, NULL);
		buf_release(&why);
	}
	json_decref(root);
	if (ret)
		api_status_release(s);
	return ret;
}

static json_t *jint_or_null(struct jb *b, int set, long long v)
{
	return set ? jint(b, v) : json_null();
}

static json_t *report_json(struct jb *b, const struct api_report *r)
{
	json_t *o = jobj(b), *procs = jarr(b);
	size_t i;

	put(b, o, "job", jstr(b, r->job));
	if (r->job_uid)
		put(b, o, "job_uid", jstr(b, r->job_uid));
	put(b, o, "attempt", jint(b, r->attempt));
	put(b, o, "algo", jstr(b, r->algo));
	put(b, o, "phase", jstr(b, api_phase_name(r->phase)));
	put(b, o, "started_ms",
	    jint_or_null(b, r->started_ms != 0, r->started_ms));
	for (i = 0; r->procs && i < r->n_procs; i++) {
		const struct api_proc_report *p = &r->procs[i];
		json_t *j = jobj(b);

		put(b, j, "rank", jint(b, p->rank));
		put(b, j, "pid", jint(b, p->pid));
		put(b, j, "started_ms", jint(b, p->started_ms));
		put(b, j, "exit_code",
		    jint_or_null(b, p->exited && !p->signal, p->exit_code));
		put(b, j, "signal",
		    jint_or_null(b, p->exited && p->signal, p->signal));
		put(b, j, "exited_ms",
		    jint_or_null(b, p->exited, p->exited_ms));
		if (p->tail)
			put(b, j, "tail", jstr(b, p->tail));
		push(b, procs, j);
	}
	put(b, o, "processes", procs);
	put(b, o, "failure", jstr(b, r->failure));
	put(b, o, "error", jstr(b, r->error));
	return o;
}

int api_status_build(const struct api_status *s, struct buf *out)
{
	struct jb b = { 0 };
	json_t *root = jobj(&b), *arr = jarr(&b);
	size_t i;

	put(&b, root, "boot_id", jstr(&b, s->boot_id));
	for (i = 0; s->items && i < s->n; i++)
		push(&b, arr, report_json(&b, &s->items[i]));
	put(&b, root, "assignments", arr);
	if (s->images_json) {
		json_t *img = jobj(&b), *list;

		list = json_loads(s->images_json, 0, NULL);
		if (!list && !b.ret)
			b.ret = ERR_INVALID;
		put(&b, img, "pruned", jint(&b, s->images_pruned));
		put(&b, img, "list", list ? list : json_array());
		put(&b, root, "images", img);
	}
	if (s->n_samples)
		put(&b, root, "telemetry",
		    api__telemetry_json(s->samples, s->n_samples));
	return finish(&b, root, out);
}

/* ---- register ---- */

void api_register_release(struct api_register *r)
{
	free(r->host);
	free(r->version);
	free(r->boot_id);
	free(r->address);
	memset(r, 0, sizeof(*r));
}

int api_register_parse(const char *json, size_t len, struct api_register *r,
		       struct buf *err)
{
	json_t *root;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = load(json, len, &root, err);
	if (ret)
		return ret;
	ret = get_name(root, "", "host", &r->host, err);
	ret = ret ? ret : get_str(root, "", "version", REQ, &r->version, err);
	ret = ret ? ret : get_name(root, "", "boot_id", &r->boot_id, err);
	ret = ret ? ret :
		    get_intv(root, "", "cpus", 0, MAX_COUNT, &r->cpus, err);
	ret = ret ? ret :
		    get_intv(root, "", "gpus", 0, MAX_COUNT, &r->gpus, err);
	ret = ret ? ret : get_str(root, "", "address", OPT, &r->address, err);
	json_decref(root);
	if (ret)
		api_register_release(r);
	return ret;
}

int api_register_build(const struct api_register *r, struct buf *out)
{
	struct jb b = { 0 };
	json_t *root = jobj(&b);

	put(&b, root, "host", jstr(&b, r->host));
	put(&b, root, "version", jstr(&b, r->version));
	put(&b, root, "boot_id", jstr(&b, r->boot_id));
	put(&b, root, "cpus", jint(&b, r->cpus));
	put(&b, root, "gpus", jint(&b, r->gpus));
	put(&b, root, "address", jstr(&b, r->address));
	return finish(&b, root, out);
}

int api_register_reply_build(int64_t heartbeat_ms, int64_t deadline_ms,
			     struct buf *out)
{
	return api_register_reply_build_tm(heartbeat_ms, deadline_ms, -1, out);
}

int api_register_reply_build_tm(int64_t heartbeat_ms, int64_t deadline_ms,
				int64_t telemetry_ms, struct buf *out)
{
	struct jb b = { 0 };
	json_t *root = jobj(&b);

	put(&b, root, "heartbeat_ms", jint(&b, heartbeat_ms));
	put(&b, root, "deadline_ms", jint(&b, deadline_ms));
	if (telemetry_ms >= 0)
		put(&b, root, "telemetry_ms", jint(&b, telemetry_ms));
	return finish(&b, root, out);
}

int api_register_reply_telemetry(const char *json, size_t len, int64_t *ms,
				 struct buf *err)
{
	json_t *root;
	long long v = 0;
	int is_null = 1, ret;

	*ms = -1;
	ret = load(json, len, &root, err);
	if (ret)
		return ret;
	ret = get_int(root, "", "telemetry_ms", 0, 3600000, &is_null, &v, err);
	json_decref(root);
	if (!ret && !is_null)
		*ms = v;
	return ret;
}

int api_register_reply_parse(const char *json, size_t len,
			     int64_t *heartbeat_ms, int64_t *deadline_ms,
			     struct buf *err)
{
	json_t *root;
	long long h = 0, d = 0;
	int ret;

	*heartbeat_ms = 0;
	*deadline_ms = 0;
	ret = load(json, len, &root, err);
	if (ret)
		return ret;
	ret = get_int(root, "", "heartbeat_ms", 1, 3600000, NULL, &h, err);
	ret = ret ? ret :
		    get_int(root, "", "deadline_ms", 1, 86400000, NULL, &d,
			    err);
	json_decref(root);
	if (!ret) {
		*heartbeat_ms = h;
		*deadline_ms = d;
	}
	return ret;
}

/* ---- log batches ---- */

void api_log_batch_release(struct api_log_batch *b)
{
	size_t i;

	for (i = 0; b->lines && i < b->n; i++) {
		free(b->lines[i].job);
		free(b->lines[i].job_uid);
		free(b->lines[i].algo);
		free(b->lines[i].text);
	}
	free(b->lines);
	free(b->boot_id);
	memset(b, 0, sizeof(*b));
}

static int parse_line(const json_t *o, const char *where,
		      struct api_log_line *l, struct buf *err)
{
	char *stream = NULL;
	long long v = 0;
	int ret;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = get_name(o, where, "job", &l->job, err);
	ret = ret ? ret : get_uid(o, where, &l->job_uid, err);
	ret = ret ? ret :
		    get_intv(o, where, "attempt", 1, MAX_ATTEMPT, &l->attempt,
			     err);
	ret = ret ? ret : get_name(o, where, "algo", &l->algo, err);
	ret = ret ? ret :
		    get_intv(o, where, "rank", 0, MAX_COUNT, &l->rank, err);
	ret = ret ? ret : get_str(o, where, "stream", REQ, &stream, err);
	if (!ret && !strcmp(stream, "stderr"))
		l->is_stderr = 1;
	else if (!ret && strcmp(stream, "stdout"))
		ret = bad(err, where, "stream",
			  "must be \"stdout\" or \"stderr\"");
	free(stream);
	ret = ret ? ret : get_int(o, where, "ts_ms", 0, MAX_MS, NULL, &v, err);
	l->ts_ms = v;
	ret = ret ? ret : get_str(o, where, "text", REQ, &l->text, err);
	return ret;
}

int api_log_batch_parse(const char *json, size_t len, struct api_log_batch *b,
			struct buf *err)
{
	const json_t *arr;
	json_t *root;
	char m[64];
	size_t i;
	int ret, seq_null = 0;
	long long seq = 0;

	memset(b, 0, sizeof(*b));
	ret = load(json, len, &root, err);
	if (ret)
		return ret;
	ret = get_str(root, "", "boot_id", OPT, &b->boot_id, err);
	if (!ret && b->boot_id &&
	    (!*b->boot_id || strlen(b->boot_id) > API_PROTO_BOOT_ID_MAX))
		ret = bad(err, "", "boot_id", "must be 1..64 bytes");
	ret = ret ? ret :
		    get_int(root, "", "seq", 1, MAX_MS, &seq_null, &seq, err);
	b->seq = seq;
	ret = ret ? ret :
		    get_array(root, "", "lines", 0, API_PROTO_MAX_LOG_LINES,
			      &arr, err);
	if (!ret) {
		b->n = json_array_size(arr);
		b->lines = xcalloc(b->n + 1, sizeof(*b->lines));
	}
	for (i = 0; !ret && i < b->n; i++) {
		(void)snprintf(m, sizeof(m), "lines[%zu]", i);
		ret = parse_line(json_array_get(arr, i), m, &b->lines[i], err);
	}
	json_decref(root);
	if (ret)
		api_log_batch_release(b);
	return ret;
}

int api_log_batch_build(const struct api_log_batch *lb, struct buf *out)
{
	struct jb b = { 0 };
	json_t *root = jobj(&b), *arr = jarr(&b);
	size_t i;

	for (i = 0; lb->lines && i < lb->n; i++) {
		const struct api_log_line *l = &lb->lines[i];
		json_t *o = jobj(&b);

		put(&b, o, "job", jstr(&b, l->job));
		if (l->job_uid)
			put(&b, o, "job_uid", jstr(&b, l->job_uid));
		put(&b, o, "attempt", jint(&b, l->attempt));
		put(&b, o, "algo", jstr(&b, l->algo));
		put(&b, o, "rank", jint(&b, l->rank));
		put(&b, o, "stream",
		    jstr(&b, l->is_stderr ? "stderr" : "stdout"));
		put(&b, o, "ts_ms", jint(&b, l->ts_ms));
		put(&b, o, "text", jstr(&b, l->text));
		push(&b, arr, o);
	}
	if (lb->boot_id)
		put(&b, root, "boot_id", jstr(&b, lb->boot_id));
	if (lb->seq > 0)
		put(&b, root, "seq", jint(&b, lb->seq));
	put(&b, root, "lines", arr);
	return finish(&b, root, out);
}
