#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <string.h>

#include "api/json_util.h"
#include "common/err.h"
#include "common/banned.h"

int api__invalid(struct buf *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return ERR_INVALID;
	buf_reset(err);
	va_start(ap, fmt);
	if (buf_vaddf(err, fmt, ap))
		buf_reset(err);
	va_end(ap);
	return ERR_INVALID;
}

int api__cli_input_load(const char *base_json, size_t len, json_t **out,
			struct buf *err)
{
	json_error_t je;
	json_t *root;

	*out = NULL;
	if (!base_json) {
		root = json_object();
		if (!root)
			return api__invalid(err, "out of memory");
		*out = root;
		return 0;
	}
	root = json_loadb(base_json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return api__invalid(err,
				    "invalid --cli-input-json: line %d column "
				    "%d: %s",
				    je.line, je.column, je.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return api__invalid(err, "invalid --cli-input-json: not a "
					 "JSON object");
	}
	*out = root;
	return 0;
}

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

int api__json_finish(json_t *root, int bad, struct buf *out)
{
	int ret = bad ? ERR_INVALID : api__json_dump_to(root, out);

	json_decref(root);
	return ret;
}

/* "2026-12-02T11:00:00[.123][Z|+hh:mm]" -> epoch ms; 0 when malformed. */
static int64_t iso_ms(const char *s)
{
	struct tm tm;
	int frac = 0, digits = 0, n = 0, oh = 0, om = 0;
	int64_t ms;
	char sign;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
		   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return 0;
	s += n;
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			if (digits < 3)
				frac = frac * 10 + (*s - '0');
		while (digits > 0 && digits < 3) {
			frac *= 10;
			digits++;
		}
	}
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	ms = (int64_t)timegm(&tm) * 1000 + frac;
	if (*s == 'Z' && s[1] == '\0')
		return ms;
	sign = *s;
	if ((sign == '+' || sign == '-') &&
	    sscanf(s + 1, "%2d:%2d", &oh, &om) == 2) {
		int64_t off = ((int64_t)oh * 60 + om) * 60000;

		return sign == '+' ? ms - off : ms + off;
	}
	return *s == '\0' ? ms : 0;
}

/*
 * Times outside 1970..year 316,000 are clamped into it, so no arithmetic
 * overflows and a filter with an absurd bound still means what it says
 * (0 is reserved for "absent").
 */
#define TIME_MAX_S 1e13

int64_t api__json_time_ms(const json_t *v)
{
	double secs;

	if (json_is_string(v))
		return iso_ms(json_string_value(v));
	if (json_is_integer(v))
		secs = (double)json_integer_value(v);
	else if (json_is_real(v))
		secs = json_real_value(v);
	else
		return 0;
	if (!(secs > 0.0))
		return 1;
	if (secs > TIME_MAX_S)
		secs = TIME_MAX_S;
	return (int64_t)llround(secs * 1000.0);
}

json_t *api__json_time(int64_t ms)
{
	return json_real((double)ms / 1000.0);
}
