#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/elastic.h"
#include "api/json_util.h"
#include "api/tags.h"
#include "api/validate.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define TAGS_PAGE_MIN 50

static const char *const shapes[] = {
	[API_TAGS_ADD] = "AddTagsInput",
	[API_TAGS_LIST] = "ListTagsInput",
	[API_TAGS_DELETE] = "DeleteTagsInput",
};

int api_tags_check(const struct api_kv *tags, size_t n, struct buf *err)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (!strncasecmp(tags[i].key, "aws:", 4)) {
			(void)buf_addf(err,
				       "Tag keys starting with 'aws:' are "
				       "reserved for system use: '%.128s'",
				       tags[i].key);
			return ERR_INVALID;
		}
		for (j = 0; j < i; j++) {
			if (!strcmp(tags[i].key, tags[j].key)) {
				(void)buf_addf(err,
					       "Duplicate tag key '%.128s' in "
					       "the request",
					       tags[i].key);
				return ERR_INVALID;
			}
		}
	}
	return 0;
}

int api__tags_from_json(const json_t *arr, struct api_kv **out, size_t *n,
			struct buf *err)
{
	struct api_kv *kv;
	json_t *v;
	size_t i;
	int ret;

	*out = NULL;
	*n = 0;
	if (!json_array_size(arr))
		return 0;
	kv = xcalloc(json_array_size(arr), sizeof(*kv));
	json_array_foreach(arr, i, v)
	{
		const char *value =
			json_string_value(json_object_get(v, "Value"));

		kv[i].key = xstrdup(
			json_string_value(json_object_get(v, "Key")));
		kv[i].value = xstrdup(value ? value : "");
	}
	ret = api_tags_check(kv, json_array_size(arr), err);
	if (ret) {
		api_kvs_free(kv, json_array_size(arr));
		return ret;
	}
	*out = kv;
	*n = json_array_size(arr);
	return 0;
}

/* trainctl's reserved keys are read at CreateTrainingJob only: adding or
 * removing one later would change nothing, so it is refused. */
static int reserved_later(const struct api_tags_request *req, struct buf *err)
{
	const char *key = NULL;
	size_t i;

	for (i = 0; i < req->n_tags && !key; i++)
		if (api_elastic_reserved_key(req->tags[i].key))
			key = req->tags[i].key;
	for (i = 0; i < req->n_keys && !key; i++)
		if (api_elastic_reserved_key(req->keys[i]))
			key = req->keys[i];
	if (!key)
		return 0;
	(void)buf_addf(err,
		       "Tag key '%.128s' is reserved: trainctl reads it at "
		       "CreateTrainingJob only, so it cannot be added or "
		       "removed later",
		       key);
	return ERR_INVALID;
}

int api_tags_request_parse(enum api_tags_op op, const char *json, size_t len,
			   struct api_tags_request *req, struct buf *err)
{
	json_t *root;
	json_t *v;
	size_t i;
	int ret;

	memset(req, 0, sizeof(*req));
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	ret = api_validate(shapes[op], root, err);
	if (ret)
		goto out;
	req->arn = xstrdup(json_string_value(json_object_get(root, "ResourceArn")));
	switch (op) {
	case API_TAGS_ADD:
		ret = api__tags_from_json(json_object_get(root, "Tags"),
					  &req->tags, &req->n_tags, err);
		break;
	case API_TAGS_DELETE:
		v = json_object_get(root, "TagKeys");
		req->keys = xcalloc(json_array_size(v) + 1, sizeof(*req->keys));
		for (i = 0; i < json_array_size(v); i++)
			req->keys[i] = xstrdup(
				json_string_value(json_array_get(v, i)));
		req->n_keys = json_array_size(v);
		break;
	case API_TAGS_LIST:
		v = json_object_get(root, "MaxResults");
		req->max_results =
			v ? (int)json_integer_value(v) : TAGS_PAGE_MIN;
		v = json_object_get(root, "NextToken");
		if (v)
			req->next_token = xstrdup(json_string_value(v));
		break;
	}
	if (!ret)
		ret = reserved_later(req, err);
out:
	json_decref(root);
	if (ret)
		api_tags_request_release(req);
	return ret;
}

void api_tags_request_release(struct api_tags_request *req)
{
	size_t i;

	free(req->arn);
	api_kvs_free(req->tags, req->n_tags);
	for (i = 0; i < req->n_keys; i++)
		free(req->keys[i]);
	free(req->keys);
	free(req->next_token);
	memset(req, 0, sizeof(*req));
}

static json_t *tags_array(const struct api_kv *tags, size_t n)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(arr, json_pack("{s:s,s:s}", "Key",
						      tags[i].key, "Value",
						      tags[i].value));
	return arr;
}

int api_tags_array(const struct api_kv *tags, size_t n, struct buf *out)
{
	json_t *arr = tags_array(tags, n);
	int ret = api__json_dump_to(arr, out);

	json_decref(arr);
	return ret;
}

int api_tags_response(const struct api_kv *tags, size_t n,
		      const char *next_token, struct buf *out)
{
	json_t *root = json_object();
	int ret;

	json_object_set_new(root, "Tags", tags_array(tags, n));
	if (next_token)
		json_object_set_new(root, "NextToken", json_string(next_token));
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

/* The next ':'-separated field of s, or NULL; *len is its length. */
static const char *field(const char *s, size_t *len)
{
	const char *colon = strchr(s, ':');

	if (!colon)
		return NULL;
	*len = (size_t)(colon - s);
	return colon + 1;
}

int api_arn_split(const char *arn, const char *region, const char *account,
		  const char **type, size_t *type_len, const char **name,
		  struct buf *err)
{
	const char *p = arn;
	const char *f[5];
	size_t flen[5];
	const char *slash;
	int i;

	for (i = 0; i < 5; i++) {
		f[i] = p;
		p = field(p, &flen[i]);
		if (!p)
			goto bad;
	}
	if (flen[0] != 3 || strncmp(f[0], "arn", 3) ||
	    flen[2] != 9 || strncmp(f[2], "sagemaker", 9))
		goto bad;
	if (flen[3] != strlen(region) || strncmp(f[3], region, flen[3]) ||
	    flen[4] != strlen(account) || strncmp(f[4], account, flen[4])) {
		(void)buf_addf(err,
			       "ResourceArn '%.256s' names another region or "
			       "account than this controller's (%s, %s)",
			       arn, region, account);
		return ERR_INVALID;
	}
	slash = strchr(p, '/');
	if (!slash || slash == p || !slash[1])
		goto bad;
	*type = p;
	*type_len = (size_t)(slash - p);
	*name = slash + 1;
	return 0;
bad:
	(void)buf_addf(err, "ResourceArn '%.256s' is not a SageMaker ARN "
			    "(arn:aws:sagemaker:REGION:ACCOUNT:TYPE/NAME)",
		       arn);
	return ERR_INVALID;
}
