/*
 * JSON of the blob endpoint: wire JSON into plain C values and back; no
 * json_t leaves this file.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/blob_wire.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Appends j compactly ("{}" when it could not be built) and drops it. */
static void dump(json_t *j, struct buf *out)
{
	if (!j || api__json_dump_to(j, out))
		(void)buf_adds(out, "{}");
	json_decref(j);
}

void api_blob_list_encode(const struct api_blob_list *l, struct buf *out)
{
	json_t *root = json_object(), *arr = json_array();
	char when[40];
	size_t i;

	for (i = 0; i < l->n; i++) {
		const struct api_blob_object *o = &l->v[i];

		time_format_iso(o->mtime_ms, when, sizeof(when));
		json_array_append_new(arr, json_pack("{s:s, s:I, s:s}", "Key",
						     o->key, "Size",
						     (json_int_t)o->size,
						     "LastModified", when));
	}
	json_object_set_new(root, "Contents", arr);
	json_object_set_new(root, "KeyCount", json_integer((json_int_t)l->n));
	json_object_set_new(root, "IsTruncated", json_boolean(l->next != NULL));
	if (l->next)
		json_object_set_new(root, "NextContinuationToken",
				    json_string(l->next));
	dump(root, out);
}

int api_blob_list_decode(const char *json, size_t len,
			 struct api_blob_list *out, struct buf *err)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, 0, &je), *arr, *v;
	const char *tok = NULL;
	size_t i;
	int ret = 0;

	arr = root ? json_object_get(root, "Contents") : NULL;
	if (!json_is_array(arr)) {
		(void)buf_adds(err, "the listing is not a blob listing");
		ret = ERR_INVALID;
		goto out;
	}
	if (json_array_size(arr))
		out->v = xcalloc(json_array_size(arr), sizeof(*out->v));
	json_array_foreach(arr, i, v)
	{
		struct api_blob_object *o = &out->v[out->n];
		const char *key = NULL, *when = NULL;
		json_int_t size = 0;

		if (json_unpack(v, "{s:s, s:I, s?:s}", "Key", &key, "Size",
				&size, "LastModified", &when)) {
			(void)buf_adds(err, "a listing entry is malformed");
			ret = ERR_INVALID;
			goto out;
		}
		o->key = xstrdup(key);
		o->size = (int64_t)size;
		o->mtime_ms =
			api__json_time_ms(json_object_get(v, "LastModified"));
		out->n++;
	}
	if (json_is_true(json_object_get(root, "IsTruncated"))) {
		tok = json_string_value(
			json_object_get(root, "NextContinuationToken"));
		if (!tok || !*tok) {
			(void)buf_adds(err, "a truncated listing has no "
					    "NextContinuationToken");
			ret = ERR_INVALID;
			goto out;
		}
		out->next = xstrdup(tok);
	}
out:
	json_decref(root);
	return ret;
}

void api_blob_list_release(struct api_blob_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].key);
	FREE_AND_NULL(l->v);
	FREE_AND_NULL(l->next);
	l->n = 0;
}

void api_blob_put_encode(const char *key, int64_t size, const char *sha256,
			 struct buf *out)
{
	dump(json_pack("{s:s, s:I, s:s}", "Key", key, "Size", (json_int_t)size,
		       "Sha256", sha256),
	     out);
}

int api_blob_put_decode(const char *json, size_t len, int64_t *size,
			char sha256[65], struct buf *err)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, 0, &je);
	const char *sha = NULL;
	json_int_t n = 0;
	int ret = 0;

	if (!root ||
	    json_unpack(root, "{s:I, s:s}", "Size", &n, "Sha256", &sha) ||
	    strlen(sha) != 64) {
		(void)buf_adds(err, "the answer to the upload is malformed");
		ret = ERR_INVALID;
	} else {
		*size = (int64_t)n;
		memcpy(sha256, sha, 65);
	}
	json_decref(root);
	return ret;
}

void api_blob_error_describe(const char *json, size_t len, struct buf *err)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, 0, &je);
	const char *type = NULL, *msg = NULL;

	if (root &&
	    !json_unpack(root, "{s:s, s?:s}", "__type", &type, "message", &msg))
		(void)buf_addf(err, "%s%s%s", type, msg ? ": " : "",
			       msg ? msg : "");
	else
		(void)buf_addf(err, "%.200s", len ? json : "(no body)");
	json_decref(root);
}
