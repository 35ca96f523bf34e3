#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/manifest.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

void api_manifest_release(char *prefix, char **keys, size_t n)
{
	size_t i;

	free(prefix);
	for (i = 0; keys && i < n; i++)
		free(keys[i]);
	free(keys);
}

int api_manifest_parse(const char *json, size_t len, char **prefix,
		       char ***keys, size_t *n, struct buf *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(json, len, 0, &jerr);
	json_t *first;
	json_t *v;
	const char *p;
	size_t i;

	*prefix = NULL;
	*keys = NULL;
	*n = 0;
	if (!json_is_array(root) || json_array_size(root) < 1) {
		(void)buf_addf(err,
			       "manifest must be a JSON array starting "
			       "with {\"prefix\": ...}%s%s",
			       root ? "" : ": ", root ? "" : jerr.text);
		json_decref(root);
		return ERR_INVALID;
	}
	if (json_array_size(root) - 1 > API_MANIFEST_MAX_KEYS) {
		(void)buf_addf(err, "manifest lists more than %d keys",
			       API_MANIFEST_MAX_KEYS);
		json_decref(root);
		return ERR_INVALID;
	}
	first = json_array_get(root, 0);
	p = json_string_value(json_object_get(first, "prefix"));
	if (!p || !*p) {
		(void)buf_adds(err, "manifest's first element must be "
				    "{\"prefix\": \"s3://bucket/path/\"}");
		json_decref(root);
		return ERR_INVALID;
	}
	*keys = xcalloc(json_array_size(root), sizeof(**keys));
	json_array_foreach(root, i, v)
	{
		if (i == 0)
			continue;
		if (!json_is_string(v) || !*json_string_value(v)) {
			(void)buf_addf(err,
				       "manifest element %zu must be a "
				       "non-empty key string",
				       i);
			api_manifest_release(NULL, *keys, *n);
			*keys = NULL;
			*n = 0;
			json_decref(root);
			return ERR_INVALID;
		}
		(*keys)[(*n)++] = xstrdup(json_string_value(v));
	}
	*prefix = xstrdup(p);
	json_decref(root);
	return 0;
}
