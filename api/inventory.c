#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/inventory.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MAX_HOSTS 65536

static int name_ok(const char *s)
{
	size_t i;

	if (!s || !*s || strlen(s) > 63)
		return 0;
	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		      c == '_'))
			return 0;
	}
	return 1;
}

static int get_str(const json_t *o, const char *key, const char *def,
		   int required, char **out, size_t i, struct buf *err)
{
	const json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v)) {
		if (required) {
			(void)buf_addf(err,
				       "inventory host %zu: '%s' is "
				       "required",
				       i + 1, key);
			return ERR_INVALID;
		}
		*out = def ? xstrdup(def) : NULL;
		return 0;
	}
	if (!json_is_string(v) || !*json_string_value(v)) {
		(void)buf_addf(err,
			       "inventory host %zu: '%s' must be a "
			       "non-empty string",
			       i + 1, key);
		return ERR_INVALID;
	}
	*out = xstrdup(json_string_value(v));
	return 0;
}

static int get_int(const json_t *o, const char *key, int def, int lo, int hi,
		   int *out, size_t i, struct buf *err)
{
	const json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo ||
	    json_integer_value(v) > hi) {
		(void)buf_addf(err,
			       "inventory host %zu: '%s' must be an "
			       "integer from %d to %d",
			       i + 1, key, lo, hi);
		return ERR_INVALID;
	}
	*out = (int)json_integer_value(v);
	return 0;
}

/* "agent": "ssh" (the default) or "external". */
static int get_agent_kind(const json_t *o, size_t i, int *external,
			  struct buf *err)
{
	const json_t *v = json_object_get(o, "agent");
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;

	*external = 0;
	if (!v || json_is_null(v) || (s && !strcmp(s, "ssh")))
		return 0;
	if (s && !strcmp(s, "external")) {
		*external = 1;
		return 0;
	}
	(void)buf_addf(err,
		       "inventory host %zu: 'agent' must be \"ssh\" or "
		       "\"external\"",
		       i + 1);
	return ERR_INVALID;
}

static int parse_host(const json_t *o, size_t i, struct api_inventory_host *h,
		      struct buf *err)
{
	const json_t *acc = json_object_get(o, "accept_new_host_key");
	int ret;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "inventory host %zu must be an object",
			       i + 1);
		return ERR_INVALID;
	}
	ret = get_str(o, "name", NULL, 1, &h->name, i, err);
	if (!ret && !name_ok(h->name)) {
		(void)buf_addf(err,
			       "inventory host %zu: name '%s' may hold "
			       "only letters, digits, '-', '.' and '_' (1..63)",
			       i + 1, h->name);
		ret = ERR_INVALID;
	}
	if (!ret)
		ret = get_agent_kind(o, i, &h->external, err);
	if (!ret)
		ret = get_str(o, "address", NULL, !h->external, &h->address, i,
			      err);
	if (!ret)
		ret = get_int(o, "port", 22, 1, 65535, &h->port, i, err);
	if (!ret)
		ret = get_str(o, "user", "root", 0, &h->user, i, err);
	if (!ret)
		ret = get_str(o, "identity_file", NULL, !h->external,
			      &h->identity_file, i, err);
	if (!ret)
		ret = get_str(o, "known_hosts", NULL, !h->external,
			      &h->known_hosts, i, err);
	if (!ret)
		ret = get_str(o, "instance_type", "ml.m5.large", 0,
			      &h->instance_type, i, err);
	if (!ret)
		ret = get_int(o, "cpus", 0, 0, 100000, &h->cpus, i, err);
	if (!ret)
		ret = get_int(o, "gpus", 0, 0, 1024, &h->gpus, i, err);
	if (!ret)
		ret = get_str(o, "agent_path", "/tmp/trainagent", 0,
			      &h->agent_path, i, err);
	if (!ret)
		ret = get_str(o, "work_dir", "/var/lib/trainagent", 0,
			      &h->work_dir, i, err);
	if (!ret)
		ret = get_str(o, "rack", NULL, 0, &h->rack, i, err);
	if (!ret && h->rack && !name_ok(h->rack)) {
		(void)buf_addf(err,
			       "inventory host %zu: rack '%s' may hold only "
			       "letters, digits, '-', '.' and '_' (1..63)",
			       i + 1, h->rack);
		ret = ERR_INVALID;
	}
	if (!ret && acc && !json_is_boolean(acc)) {
		(void)buf_addf(err,
			       "inventory host %zu: "
			       "'accept_new_host_key' must be true or false",
			       i + 1);
		ret = ERR_INVALID;
	}
	h->accept_new_host_key = json_is_true(acc);
	return ret;
}

static void host_release(struct api_inventory_host *h)
{
	free(h->name);
	free(h->address);
	free(h->user);
	free(h->identity_file);
	free(h->known_hosts);
	free(h->instance_type);
	free(h->agent_path);
	free(h->work_dir);
	free(h->rack);
	memset(h, 0, sizeof(*h));
}

int api_inventory_parse(const char *json, size_t len, struct api_inventory *inv,
			struct buf *err)
{
	json_t *root;
	json_t *hosts;
	size_t i, k;
	int ret;

	memset(inv, 0, sizeof(*inv));
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	hosts = json_object_get(root, "hosts");
	if (!json_is_array(hosts) || json_array_size(hosts) > MAX_HOSTS) {
		(void)buf_addf(err,
			       "inventory: 'hosts' must be a list of at "
			       "most %d hosts",
			       MAX_HOSTS);
		json_decref(root);
		return ERR_INVALID;
	}
	inv->hosts = xcalloc(json_array_size(hosts) + 1, sizeof(*inv->hosts));
	for (i = 0; i < json_array_size(hosts) && !ret; i++) {
		ret = parse_host(json_array_get(hosts, i), i, &inv->hosts[i],
				 err);
		inv->n = i + 1;
		for (k = 0; !ret && k < i; k++) {
			if (!strcmp(inv->hosts[k].name, inv->hosts[i].name)) {
				(void)buf_addf(err,
					       "inventory: host name '%s' "
					       "is used twice",
					       inv->hosts[i].name);
				ret = ERR_INVALID;
			}
		}
	}
	json_decref(root);
	if (ret)
		api_inventory_release(inv);
	return ret;
}

void api_inventory_release(struct api_inventory *inv)
{
	size_t i;

	for (i = 0; i < inv->n; i++)
		host_release(&inv->hosts[i]);
	free(inv->hosts);
	memset(inv, 0, sizeof(*inv));
}
