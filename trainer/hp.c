/*
 * Typed getters over SM_HPS. The toolkit decodes each hyperparameter
 * string as JSON when it can, so a number arrives as a number; one that
 * stayed a string ("3", "true") is accepted where its text is exactly
 * the asked type.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trainer/internal.h"
#include "common/banned.h"

static int lookup(const struct trainer *t, const char *key, json_t **v)
{
	if (!t || !key)
		return trainer__err(t, TRAINER_EINVAL,
				    "hyperparameter key is NULL");
	*v = json_object_get(t->hps, key);
	if (!*v)
		return trainer__err(t, TRAINER_ENOTFOUND,
				    "no hyperparameter '%s'", key);
	return 0;
}

static int type_err(const struct trainer *t, const char *key, const char *want)
{
	return trainer__err(t, TRAINER_EINVAL, "hyperparameter '%s' is not %s",
			    key, want);
}

/* 2^63 as a double: the first value that no longer fits an int64_t. */
#define TWO_POW_63 9223372036854775808.0

int trainer_hp_int(const struct trainer *t, const char *key, int64_t *v)
{
	json_t *j;
	double d;
	long long n;
	const char *s;
	char *end;
	int ret;

	ret = lookup(t, key, &j);
	if (ret)
		return ret;
	if (!v)
		return trainer__err(t, TRAINER_EINVAL, "v is NULL");
	if (json_is_integer(j)) {
		*v = (int64_t)json_integer_value(j);
		return 0;
	}
	if (json_is_real(j)) {
		/* 1e3 or 100.0: integral values written as reals. */
		d = json_real_value(j);
		if (d != floor(d) || d < -TWO_POW_63 || d >= TWO_POW_63)
			return type_err(t, key, "an integer");
		*v = (int64_t)d;
		return 0;
	}
	if (!json_is_string(j))
		return type_err(t, key, "an integer");
	s = json_string_value(j);
	errno = 0;
	n = strtoll(s, &end, 10);
	if (!*s || *end || errno || s[0] == ' ' || s[0] == '\t')
		return type_err(t, key, "an integer");
	*v = (int64_t)n;
	return 0;
}

int trainer_hp_double(const struct trainer *t, const char *key, double *v)
{
	json_t *j;
	const char *s;
	char *end;
	double d;
	int ret;

	ret = lookup(t, key, &j);
	if (ret)
		return ret;
	if (!v)
		return trainer__err(t, TRAINER_EINVAL, "v is NULL");
	if (json_is_number(j)) {
		*v = json_number_value(j);
		return 0;
	}
	if (!json_is_string(j))
		return type_err(t, key, "a number");
	s = json_string_value(j);
	errno = 0;
	d = strtod(s, &end);
	if (!*s || *end || errno == ERANGE || s[0] == ' ' || s[0] == '\t' ||
	    !isfinite(d))
		return type_err(t, key, "a number");
	*v = d;
	return 0;
}

int trainer_hp_bool(const struct trainer *t, const char *key, int *v)
{
	json_t *j;
	const char *s;
	int ret;

	ret = lookup(t, key, &j);
	if (ret)
		return ret;
	if (!v)
		return trainer__err(t, TRAINER_EINVAL, "v is NULL");
	if (json_is_boolean(j)) {
		*v = json_is_true(j);
		return 0;
	}
	if (json_is_integer(j) &&
	    (json_integer_value(j) == 0 || json_integer_value(j) == 1)) {
		*v = (int)json_integer_value(j);
		return 0;
	}
	if (!json_is_string(j))
		return type_err(t, key, "a boolean");
	s = json_string_value(j);
	if (!strcasecmp(s, "true") || !strcmp(s, "1")) {
		*v = 1;
		return 0;
	}
	if (!strcasecmp(s, "false") || !strcmp(s, "0")) {
		*v = 0;
		return 0;
	}
	return type_err(t, key, "a boolean");
}

int trainer_hp_string(const struct trainer *t, const char *key, const char **v)
{
	json_t *j;
	int ret;

	ret = lookup(t, key, &j);
	if (ret)
		return ret;
	if (!v)
		return trainer__err(t, TRAINER_EINVAL, "v is NULL");
	if (!json_is_string(j))
		return type_err(t, key, "a string");
	*v = json_string_value(j);
	return 0;
}
