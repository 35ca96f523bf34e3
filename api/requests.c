#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/requests.h"
#include "api/validate.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

int api_member_request_parse(const char *shape, const char *member,
			     const char *json, size_t len, char **name_out,
			     struct buf *err)
{
	json_t *root;
	int ret;

	*name_out = NULL;
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	ret = api_validate(shape, root, err);
	if (!ret)
		*name_out = xstrdup(
			json_string_value(json_object_get(root, member)));
	json_decref(root);
	return ret;
}

int api_name_request_parse(const char *shape, const char *json, size_t len,
			   char **name_out, struct buf *err)
{
	return api_member_request_parse(shape, "TrainingJobName", json, len,
					name_out, err);
}

int api_job_name_check(const char *name, struct buf *err)
{
	json_t *root = json_object();
	json_t *v = json_string(name);
	int ret;

	if (!root || !v) {
		json_decref(root);
		json_decref(v);
		return ERR_INVALID;
	}
	json_object_set_new(root, "TrainingJobName", v);
	ret = api_validate("DescribeTrainingJobRequest", root, err);
	json_decref(root);
	return ret;
}

static int parse_sort_by(const char *s, enum api_sort_by *out)
{
	if (!s || !strcmp(s, "CreationTime"))
		*out = API_SORT_CREATION_TIME;
	else if (!strcmp(s, "Name"))
		*out = API_SORT_NAME;
	else if (!strcmp(s, "Status"))
		*out = API_SORT_STATUS;
	else
		return ERR_INVALID;
	return 0;
}

static char *dup_member(json_t *root, const char *key)
{
	const char *s = json_string_value(json_object_get(root, key));

	return s ? xstrdup(s) : NULL;
}

static int list_request_fill(json_t *root, struct api_list_request *req,
			     struct buf *err)
{
	json_t *v;
	const char *order;
	int ret;

	memset(req, 0, sizeof(*req));
	ret = api_validate("ListTrainingJobsRequest", root, err);
	if (ret)
		goto out;
	req->max_results = 10;
	v = json_object_get(root, "MaxResults");
	if (json_is_integer(v))
		req->max_results = (int)json_integer_value(v);
	req->next_token = dup_member(root, "NextToken");
	req->name_contains = dup_member(root, "NameContains");
	req->status_equals = dup_member(root, "StatusEquals");
	req->warm_pool_status_equals = dup_member(root, "WarmPoolStatusEquals");
	if (parse_sort_by(json_string_value(json_object_get(root, "SortBy")),
			  &req->sort_by)) {
		/* The model's enum check has already rejected anything else. */
		ret = ERR_INVALID;
		goto out;
	}
	order = json_string_value(json_object_get(root, "SortOrder"));
	req->descending = order && !strcmp(order, "Descending");
	req->creation_after_ms =
		api__json_time_ms(json_object_get(root, "CreationTimeAfter"));
	req->creation_before_ms =
		api__json_time_ms(json_object_get(root, "CreationTimeBefore"));
	req->modified_after_ms = api__json_time_ms(
		json_object_get(root, "LastModifiedTimeAfter"));
	req->modified_before_ms = api__json_time_ms(
		json_object_get(root, "LastModifiedTimeBefore"));
out:
	if (ret)
		api_list_request_release(req);
	return ret;
}

int api_list_request_parse(const char *json, size_t len,
			   struct api_list_request *req, struct buf *err)
{
	json_t *root;
	int ret;

	memset(req, 0, sizeof(*req));
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	ret = list_request_fill(root, req, err);
	json_decref(root);
	return ret;
}

static const char *const query_numbers[] = {
	"MaxResults",
	"CreationTimeAfter",
	"CreationTimeBefore",
	"LastModifiedTimeAfter",
	"LastModifiedTimeBefore",
};

static const char *const query_strings[] = {
	"NextToken", "NameContains", "StatusEquals",
	"SortBy",    "SortOrder",    "WarmPoolStatusEquals",
};

static int query_arg_to_json(json_t *root, const struct api_query_arg *a,
			     struct buf *err)
{
	size_t i;
	char *end;
	double d;

	for (i = 0; i < ARRAY_SIZE(query_strings); i++) {
		if (!strcmp(a->name, query_strings[i])) {
			json_t *s = json_string(a->value);

			/* jansson refuses invalid UTF-8; do not drop the
			 * argument silently. */
			if (!s) {
				(void)buf_addf(err,
					       "query parameter '%s' is not "
					       "valid UTF-8",
					       a->name);
				return ERR_INVALID;
			}
			json_object_set_new(root, a->name, s);
			return 0;
		}
	}
	for (i = 0; i < ARRAY_SIZE(query_numbers); i++) {
		if (strcmp(a->name, query_numbers[i]))
			continue;
		d = strtod(a->value, &end);
		/*
		 * NaN and infinities have no JSON form (json_real() refuses
		 * them, which would drop the argument), and converting a
		 * double outside json_int_t's range is undefined: bound the
		 * value so that seconds * 1000 still fits in 64 bits.
		 */
		if (!*a->value || *end || !isfinite(d) || fabs(d) > 1e15 ||
		    (i == 0 && d != floor(d))) {
			(void)buf_addf(err, "query parameter '%s' must be %s",
				       a->name,
				       i == 0 ? "a whole number" : "a number");
			return ERR_INVALID;
		}
		if (i == 0)
			json_object_set_new(root, a->name,
					    json_integer((json_int_t)d));
		else
			json_object_set_new(root, a->name, json_real(d));
		return 0;
	}
	(void)buf_addf(err, "unknown query parameter '%s'", a->name);
	return ERR_INVALID;
}

int api_list_request_from_query(const struct api_query_arg *args, size_t n,
				struct api_list_request *req, struct buf *err)
{
	json_t *root = json_object();
	size_t i;
	int ret = 0;

	memset(req, 0, sizeof(*req));
	for (i = 0; i < n && !ret; i++)
		ret = query_arg_to_json(root, &args[i], err);
	if (!ret)
		ret = list_request_fill(root, req, err);
	json_decref(root);
	return ret;
}

int api_create_response(const char *arn, struct buf *out)
{
	json_t *root = json_pack("{s:s}", "TrainingJobArn", arn);
	int ret;

	if (!root)
		return ERR_INVALID;
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

void api_list_request_release(struct api_list_request *req)
{
	free(req->next_token);
	free(req->name_contains);
	free(req->status_equals);
	free(req->warm_pool_status_equals);
	memset(req, 0, sizeof(*req));
}

void api_body_etag(const char *body, size_t len, char out[17])
{
	static const char hex[] = "0123456789abcdef";
	uint64_t h = 14695981039346656037ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)body[i]) * 1099511628211ull;
	for (i = 0; i < 16; i++)
		out[i] = hex[(h >> (60 - 4 * i)) & 15];
	out[16] = '\0';
}

int api_name_request_build(const char *name, struct buf *out)
{
	json_t *root = json_pack("{s:s}", "TrainingJobName", name);
	int ret;

	if (!root)
		return ERR_INVALID;
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

int api_error_body(const char *type, const char *message, struct buf *out)
{
	json_t *root = json_pack("{s:s,s:s}", "__type", type, "message",
				 message ? message : "");
	int ret;

	if (!root)
		return ERR_INVALID;
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

int api_error_parse(const char *json, size_t len, char **type_out,
		    char **message_out)
{
	json_t *root = json_loadb(json, len, 0, NULL);
	const char *type;
	const char *msg;
	const char *hash;

	if (!json_is_object(root)) {
		json_decref(root);
		*type_out = xstrdup("Unknown");
		*message_out = xstrndup(json, len > 512 ? 512 : len);
		return ERR_INVALID;
	}
	type = json_string_value(json_object_get(root, "__type"));
	msg = json_string_value(json_object_get(root, "message"));
	if (!msg)
		msg = json_string_value(json_object_get(root, "Message"));
	/* botocore strips a "namespace#" prefix from the code. */
	hash = type ? strchr(type, '#') : NULL;
	*type_out = xstrdup(hash ? hash + 1 : type ? type : "Unknown");
	*message_out = xstrdup(msg ? msg : "");
	json_decref(root);
	return 0;
}
