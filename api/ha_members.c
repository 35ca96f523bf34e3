/*
 * The members of a replicated controller on the wire (api/ha_members.h).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/ha_members.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define TEXT_MAX 256

static json_t *member_json(const struct api_member *m, int *bad)
{
	json_t *o = json_object();
	json_t *raft = json_string(m->raft_address);
	json_t *api = m->api_url ? json_string(m->api_url) : json_null();

	if (!raft || !api)
		*bad = 1;
	json_object_set_new(o, "Id", json_integer((json_int_t)m->id));
	json_object_set_new(o, "RaftAddress", raft ? raft : json_null());
	json_object_set_new(o, "ApiUrl", api ? api : json_null());
	json_object_set_new(o, "Role", json_string(m->role));
	json_object_set_new(o, "Reachable", json_boolean(m->reachable));
	json_object_set_new(o, "Lag", json_integer((json_int_t)m->lag));
	return o;
}

int api_members_build(const struct api_members *m, struct buf *out)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	int bad = 0;
	size_t i;

	for (i = 0; i < m->n; i++)
		json_array_append_new(arr, member_json(&m->members[i], &bad));
	json_object_set_new(root, "Term", json_integer((json_int_t)m->term));
	json_object_set_new(root, "LeaderId",
			    json_integer((json_int_t)m->leader_id));
	json_object_set_new(root, "LastIndex",
			    json_integer((json_int_t)m->last_index));
	json_object_set_new(root, "Members", arr);
	return api__json_finish(root, bad, out);
}

/* A string member of at most TEXT_MAX bytes, copied. */
static int get_text(const json_t *root, const char *key, char **out,
		    struct buf *err)
{
	const json_t *v = json_object_get(root, key);

	if (!v)
		return api__invalid(err, "'%s' is missing", key);
	if (!json_is_string(v) || !json_string_length(v) ||
	    json_string_length(v) > TEXT_MAX)
		return api__invalid(err,
				    "'%s' must be a string of 1 to %d bytes",
				    key, TEXT_MAX);
	*out = xstrdup(json_string_value(v));
	return 0;
}

static int check_keys(const json_t *root, struct buf *err)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)root, key, v)
	{
		if (strcmp(key, "Id") && strcmp(key, "RaftAddress") &&
		    strcmp(key, "ApiUrl"))
			return api__invalid(err,
					    "unknown member '%.64s' (Id, "
					    "RaftAddress and ApiUrl are "
					    "taken)",
					    key);
	}
	return 0;
}

int api_member_add_parse(const char *json, size_t len, unsigned long *id,
			 char **raft_address, char **api_url, struct buf *err)
{
	const json_t *v;
	json_t *root;
	int ret;

	*raft_address = NULL;
	*api_url = NULL;
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	ret = check_keys(root, err);
	v = json_object_get(root, "Id");
	if (!ret && !v)
		ret = api__invalid(err, "'Id' is missing");
	else if (!ret && (!json_is_integer(v) || json_integer_value(v) < 1))
		ret = api__invalid(err, "'Id' must be a positive integer");
	if (!ret) {
		*id = (unsigned long)json_integer_value(v);
		ret = get_text(root, "RaftAddress", raft_address, err);
	}
	if (!ret)
		ret = get_text(root, "ApiUrl", api_url, err);
	json_decref(root);
	if (ret) {
		free(*raft_address);
		free(*api_url);
		*raft_address = NULL;
		*api_url = NULL;
	}
	return ret;
}

int api_member_add_build(unsigned long id, const char *raft_address,
			 const char *api_url, struct buf *out)
{
	json_t *root = json_object();
	json_t *raft = json_string(raft_address);
	json_t *api = json_string(api_url);
	int bad = !raft || !api;

	json_object_set_new(root, "Id", json_integer((json_int_t)id));
	json_object_set_new(root, "RaftAddress", raft ? raft : json_null());
	json_object_set_new(root, "ApiUrl", api ? api : json_null());
	return api__json_finish(root, bad, out);
}

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : dflt;
}

int api_members_table(const char *json, size_t len, struct buf *out,
		      struct buf *err)
{
	const json_t *arr, *m;
	json_t *root;
	size_t i;
	int ret = api__json_load_object(json, len, &root, err);

	if (ret)
		return ret;
	arr = json_object_get(root, "Members");
	if (!json_is_array(arr)) {
		json_decref(root);
		return api__invalid(err, "no Members in the answer");
	}
	(void)buf_addf(
		out, "term %lld, leader %lld, last entry %lld\n",
		(long long)json_integer_value(json_object_get(root, "Term")),
		(long long)json_integer_value(
			json_object_get(root, "LeaderId")),
		(long long)json_integer_value(
			json_object_get(root, "LastIndex")));
	(void)buf_addf(out, "%-4s %-8s %-9s %6s  %-21s %s\n", "ID", "ROLE",
		       "REACHABLE", "LAG", "RAFT", "API");
	json_array_foreach(arr, i, m)
	{
		(void)buf_addf(
			out, "%-4lld %-8s %-9s %6lld  %-21s %s\n",
			(long long)json_integer_value(json_object_get(m, "Id")),
			str_or(m, "Role", "?"),
			json_is_true(json_object_get(m, "Reachable")) ? "yes" :
									"no",
			(long long)json_integer_value(
				json_object_get(m, "Lag")),
			str_or(m, "RaftAddress", "-"),
			str_or(m, "ApiUrl", "-"));
	}
	json_decref(root);
	return 0;
}
