#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/job_config.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

static int dump(json_t *root, struct buf *out)
{
	int ret = api__json_dump_to(root, out);

	json_decref(root);
	return ret;
}

int api_config_hyperparameters(const struct api_job_spec *spec, struct buf *out)
{
	json_t *root = json_object();
	size_t i;

	for (i = 0; i < spec->n_hyperparameters; i++)
		json_object_set_new(
			root, spec->hyperparameters[i].key,
			json_string(spec->hyperparameters[i].value));
	return dump(root, out);
}

const char *api_config_host_group(const struct api_job_spec *spec,
				  size_t host_index)
{
	size_t i, at = 0;

	for (i = 0; i < spec->n_groups; i++) {
		at += (size_t)spec->groups[i].count;
		if (host_index < at)
			return spec->groups[i].name;
	}
	return NULL;
}

int api_config_channel_on(const struct api_channel *c, const char *group)
{
	size_t i;

	if (!c->instance_groups || !group)
		return 1;
	for (i = 0; c->instance_groups[i]; i++)
		if (!strcmp(c->instance_groups[i], group))
			return 1;
	return 0;
}

int api_config_input_data(const struct api_job_spec *spec, const char *group,
			  struct buf *out)
{
	json_t *root = json_object();
	size_t i;

	for (i = 0; i < spec->n_channels; i++) {
		const struct api_channel *c = &spec->channels[i];
		const char *mode = c->input_mode ? c->input_mode :
						   spec->input_mode;
		json_t *o;

		if (!api_config_channel_on(c, group))
			continue;
		o = json_object();

		if (c->content_type)
			json_object_set_new(o, "ContentType",
					    json_string(c->content_type));
		if (!mode || !strcmp(mode, "FastFile"))
			mode = "File";
		json_object_set_new(o, "TrainingInputMode", json_string(mode));
		json_object_set_new(o, "S3DistributionType",
				    json_string(c->distribution));
		json_object_set_new(o, "RecordWrapperType",
				    json_string(c->record_wrapper ?
							c->record_wrapper :
							"None"));
		json_object_set_new(root, c->name, o);
	}
	return dump(root, out);
}

static json_t *host_list(const char *const *hosts, size_t from, size_t to)
{
	json_t *a = json_array();
	size_t i;

	for (i = from; i < to; i++)
		json_array_append_new(a, json_string(hosts[i]));
	return a;
}

int api_config_resource(const struct api_job_spec *spec,
			const char *const *hosts, size_t n, size_t current,
			const char *iface, struct buf *out)
{
	json_t *root = json_object();
	json_t *groups = json_array();
	const char *cur_type = spec->instance_type;
	const char *cur_group = "homogeneousCluster";
	size_t i, at = 0;

	if (spec->n_groups == 0) {
		json_t *g = json_object();

		json_object_set_new(g, "instance_group_name",
				    json_string(cur_group));
		json_object_set_new(g, "instance_type",
				    json_string(spec->instance_type));
		json_object_set_new(g, "hosts", host_list(hosts, 0, n));
		json_array_append_new(groups, g);
	}
	for (i = 0; i < spec->n_groups; i++) {
		const struct api_instance_group *ig = &spec->groups[i];
		size_t end = at + (size_t)ig->count;
		json_t *g = json_object();

		if (end > n)
			end = n;
		if (current >= at && current < end) {
			cur_type = ig->instance_type;
			cur_group = ig->name;
		}
		json_object_set_new(g, "instance_group_name",
				    json_string(ig->name));
		json_object_set_new(g, "instance_type",
				    json_string(ig->instance_type));
		json_object_set_new(g, "hosts", host_list(hosts, at, end));
		json_array_append_new(groups, g);
		at = end;
	}
	json_object_set_new(root, "current_host", json_string(hosts[current]));
	json_object_set_new(root, "current_instance_type",
			    json_string(cur_type ? cur_type : "local"));
	json_object_set_new(root, "current_group_name", json_string(cur_group));
	json_object_set_new(root, "hosts", host_list(hosts, 0, n));
	json_object_set_new(root, "instance_groups", groups);
	json_object_set_new(root, "network_interface_name",
			    json_string(iface ? iface : "eth0"));
	json_object_set_new(root, "topology", json_null());
	return dump(root, out);
}

char *api_hp_string(const char *value)
{
	json_t *v = json_loads(value, JSON_DECODE_ANY, NULL);
	char *s;

	if (json_is_string(v))
		s = xstrdup(json_string_value(v));
	else
		s = xstrdup(value);
	json_decref(v);
	return s;
}
