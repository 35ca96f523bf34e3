#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json_util.h"
#include "api/update.h"
#include "api/validate.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

int api_update_request_parse(const char *json, size_t len,
			     struct api_update_request *req, struct buf *err)
{
	json_t *root;
	json_t *v;
	int ret;

	memset(req, 0, sizeof(*req));
	req->keep_alive = -1;
	req->remote_debug = -1;
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	ret = api_validate("UpdateTrainingJobRequest", root, err);
	if (ret)
		goto out;
	req->name = xstrdup(
		json_string_value(json_object_get(root, "TrainingJobName")));
	v = json_object_get(json_object_get(root, "ResourceConfig"),
			    "KeepAlivePeriodInSeconds");
	if (v)
		req->keep_alive = (int)json_integer_value(v);
	v = json_object_get(root, "RemoteDebugConfig");
	if (v)
		req->remote_debug = json_is_true(
			json_object_get(v, "EnableRemoteDebug"));
	req->profiler = json_object_get(root, "ProfilerConfig") ||
			json_object_get(root, "ProfilerRuleConfigurations");
	if (req->keep_alive < 0 && req->remote_debug < 0 && !req->profiler) {
		(void)buf_adds(err,
			       "UpdateTrainingJob needs at least one of "
			       "ResourceConfig, RemoteDebugConfig, "
			       "ProfilerConfig or ProfilerRuleConfigurations");
		ret = ERR_INVALID;
	}
out:
	json_decref(root);
	if (ret)
		api_update_request_release(req);
	return ret;
}

void api_update_request_release(struct api_update_request *req)
{
	free(req->name);
	memset(req, 0, sizeof(*req));
}

/* The object member key of obj, created empty when absent. */
static json_t *member(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_object(v)) {
		v = json_object();
		json_object_set_new(obj, key, v);
	}
	return v;
}

int api_request_apply_update(const char *request_json,
			     const struct api_update_request *u, char **out)
{
	struct buf b = BUF_INIT;
	json_t *root;
	int ret;

	*out = NULL;
	ret = api__json_load_object(request_json, strlen(request_json), &root,
				    &b);
	if (ret) {
		buf_release(&b);
		return ERR_INVALID;
	}
	buf_reset(&b);
	if (u->keep_alive >= 0)
		json_object_set_new(member(root, "ResourceConfig"),
				    "KeepAlivePeriodInSeconds",
				    json_integer(u->keep_alive));
	if (u->remote_debug >= 0)
		json_object_set_new(member(root, "RemoteDebugConfig"),
				    "EnableRemoteDebug",
				    json_boolean(u->remote_debug));
	ret = api__json_dump_to(root, &b);
	json_decref(root);
	if (ret) {
		buf_release(&b);
		return ret;
	}
	*out = buf_detach(&b, NULL);
	return 0;
}
