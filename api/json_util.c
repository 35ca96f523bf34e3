#include <math.h>
#include <string.h>

#include "api/json_util.h"
#include "common/err.h"
#include "common/banned.h"

static int depth_ok(const json_t *v, int depth)
{
	const char *key;
	json_t *child;
	size_t i;

	if (depth > API_JSON_MAX_DEPTH)
		return 0;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key,
				    child) if (!depth_ok(child,
							 depth + 1)) return 0;
	} else if (json_is_array(v)) {
		json_array_foreach(
			v, i, child) if (!depth_ok(child, depth + 1)) return 0;
	}
	return 1;
}

int api__json_load_object(const char *json, size_t len, json_t **out,
			  struct buf *err)
{
	json_error_t jerr;
	json_t *root;

	*out = NULL;
	/* botocore sends "{}" for empty inputs, some tools send nothing. */
	if (len == 0) {
		*out = json_object();
		return 0;
	}
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		(void)buf_addf(err,
			       "request body is not valid JSON: %s "
			       "(line %d, column %d)",
			       jerr.text, jerr.line, jerr.column);
		return ERR_INVALID;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		(void)buf_adds(err, "request body must be a JSON object");
		return ERR_INVALID;
	}
	if (!depth_ok(root, 0)) {
		json_decref(root);
		(void)buf_addf(err,
			       "request body is nested deeper than %d levels",
			       API_JSON_MAX_DEPTH);
		return ERR_INVALID;
	}
	*out = root;
	return 0;
}

static int dump_cb(const char *data, size_t size, void *ctx)
{
	return buf_add(ctx, data, size) ? -1 : 0;
}

int api__json_dump_to(const json_t *v, struct buf *out)
{
	if (json_dump_callback(v, dump_cb, out,
			       JSON_COMPACT | JSON_REAL_PRECISION(15)))
		return ERR_TOOBIG;
	return 0;
}

int64_t api__json_time_ms(const json_t *v)
{
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v) * 1000;
	if (json_is_real(v))
		return (int64_t)llround(json_real_value(v) * 1000.0);
	return 0;
}

json_t *api__json_time(int64_t ms)
{
	return json_real((double)ms / 1000.0);
}
