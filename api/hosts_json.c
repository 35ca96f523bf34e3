#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/hosts_json.h"
#include "api/json_util.h"
#include "api/telemetry.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

int api_hosts_build(const struct api_host_info *h, size_t n, struct buf *out)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "name", json_string(h[i].name));
		json_object_set_new(o, "state", json_string(h[i].state));
		json_object_set_new(o, "address",
				    h[i].address ? json_string(h[i].address) :
						   json_null());
		json_object_set_new(o, "cpus", json_integer(h[i].cpus));
		json_object_set_new(o, "gpus", json_integer(h[i].gpus));
		json_object_set_new(
			o, "last_heartbeat_ms_ago",
			h[i].heartbeat_age_ms < 0 ?
				json_null() :
				json_integer(h[i].heartbeat_age_ms));
		json_object_set_new(o, "job",
				    h[i].job ? json_string(h[i].job) :
					       json_null());
		json_object_set_new(o, "algo",
				    h[i].algo ? json_string(h[i].algo) :
						json_null());
		json_object_set_new(o, "error",
				    h[i].error ? json_string(h[i].error) :
						 json_null());
		json_object_set_new(o, "instance_type",
				    json_string(h[i].instance_type ?
							h[i].instance_type :
							"any"));
		json_object_set_new(o, "rack",
				    h[i].rack ? json_string(h[i].rack) :
						json_null());
		json_object_set_new(o, "drained", json_boolean(h[i].drained));
		json_object_set_new(o, "drain_reason",
				    h[i].drain_reason ?
					    json_string(h[i].drain_reason) :
					    json_null());
		json_object_set_new(o, "telemetry",
				    h[i].sample ?
					    api__host_sample_json(h[i].sample) :
					    json_null());
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "hosts", arr);
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

int api_host_drain_parse(const char *json, size_t len, char **reason,
			 struct buf *err)
{
	const json_t *v;
	const char *key;
	json_t *root;
	int ret;

	*reason = NULL;
	if (!len)
		return 0;
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	json_object_foreach((json_t *)root, key, v)
	{
		if (strcmp(key, "reason")) {
			(void)buf_addf(err,
				       "unknown member '%.64s' (only 'reason')",
				       key);
			ret = ERR_INVALID;
			break;
		}
		if (!json_is_string(v) ||
		    strlen(json_string_value(v)) > API_DRAIN_REASON_MAX) {
			(void)buf_addf(err,
				       "member 'reason' must be a string of at "
				       "most %d bytes",
				       API_DRAIN_REASON_MAX);
			ret = ERR_INVALID;
			break;
		}
		*reason = xstrdup(json_string_value(v));
	}
	json_decref(root);
	if (ret)
		FREE_AND_NULL(*reason);
	return ret;
}

int api_host_drain_build(const char *reason, struct buf *out)
{
	json_t *root = json_object();
	int ret;

	if (reason)
		json_object_set_new(root, "reason", json_string(reason));
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

static const char *str_or(const json_t *o, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : def;
}

int api_hosts_table(const char *json, size_t len, struct buf *out,
		    struct buf *err)
{
	json_t *root;
	json_t *h;
	size_t i;
	int ret = api__json_load_object(json, len, &root, err);

	if (ret)
		return ret;
	(void)buf_addf(out, "%-16s %-12s %-16s %-15s %4s %4s %9s  %s\n", "NAME",
		       "STATE", "TYPE", "ADDRESS", "CPUS", "GPUS", "HEARTBEAT",
		       "JOB");
	json_array_foreach(json_object_get(root, "hosts"), i, h)
	{
		const json_t *age = json_object_get(h, "last_heartbeat_ms_ago");
		char hb[32];

		if (json_is_integer(age))
			snprintf(hb, sizeof(hb), "%lldms",
				 (long long)json_integer_value(age));
		else
			snprintf(hb, sizeof(hb), "-");
		(void)buf_addf(
			out,
			"%-16s %-12s %-16s %-15s %4lld %4lld %9s  %s%s%s\n",
			str_or(h, "name", "?"), str_or(h, "state", "?"),
			str_or(h, "instance_type", "-"),
			str_or(h, "address", "-"),
			(long long)json_integer_value(
				json_object_get(h, "cpus")),
			(long long)json_integer_value(
				json_object_get(h, "gpus")),
			hb, str_or(h, "job", "-"),
			json_is_string(json_object_get(h, "algo")) ? " " : "",
			str_or(h, "algo", ""));
		if (json_is_string(json_object_get(h, "error")))
			(void)buf_addf(out, "  error: %s\n",
				       str_or(h, "error", ""));
		if (json_is_string(json_object_get(h, "rack")))
			(void)buf_addf(out, "  rack: %s\n",
				       str_or(h, "rack", ""));
		if (json_is_string(json_object_get(h, "drain_reason")))
			(void)buf_addf(out, "  drained: %s\n",
				       str_or(h, "drain_reason", ""));
	}
	json_decref(root);
	return 0;
}

static char *str_dup(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? xstrdup(s) : NULL;
}

int api_host_images_parse(const char *json, size_t len,
			  struct api_host_images *out)
{
	json_t *root = json_loadb(json, len, 0, NULL);
	json_t *list = json_object_get(root, "images");
	json_t *done = json_object_get(json_object_get(root, "prune"), "done");
	json_t *e;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(root)) {
		json_decref(root);
		return ERR_INVALID;
	}
	out->reported = json_is_array(list);
	out->prune = json_integer_value(json_object_get(root, "prune"));
	out->prune_done = json_is_integer(done) ? json_integer_value(done) : -1;
	if (json_array_size(list))
		out->images =
			xcalloc(json_array_size(list), sizeof(*out->images));
	json_array_foreach(list, i, e)
	{
		struct api_host_image *im = &out->images[i];
		const char *name = json_string_value(
			json_array_get(json_object_get(e, "names"), 0));

		im->name = name ? xstrdup(name) : str_dup(e, "digest");
		im->id = str_dup(e, "id");
		im->created = str_dup(e, "created");
		im->size = json_integer_value(json_object_get(e, "size"));
	}
	out->n = json_array_size(list);
	json_decref(root);
	return 0;
}

void api_host_images_release(struct api_host_images *im)
{
	size_t i;

	for (i = 0; i < im->n; i++) {
		free(im->images[i].name);
		free(im->images[i].id);
		free(im->images[i].created);
	}
	free(im->images);
	memset(im, 0, sizeof(*im));
}
