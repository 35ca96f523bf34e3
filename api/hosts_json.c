#include <jansson.h>

#include "api/hosts_json.h"
#include "api/json_util.h"
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
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "hosts", arr);
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}
