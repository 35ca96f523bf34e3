#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/cwlogs_json.h"
#include "api/json_util.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* What a request member must be, after the service model. */
enum member_kind { M_STRING, M_LONG, M_BOOL, M_STRING_LIST };

struct member {
	const char *name;
	enum member_kind kind;
	long long min, max; /* string length, number value or list size */
};

#define TS_MAX 9223372036854775807LL

static const struct member describe_members[] = {
	{ "logGroupName", M_STRING, 1, 512 },
	{ "logGroupIdentifier", M_STRING, 1, 2048 },
	{ "logStreamNamePrefix", M_STRING, 1, 512 },
	{ "orderBy", M_STRING, 1, 32 },
	{ "descending", M_BOOL, 0, 0 },
	{ "nextToken", M_STRING, 1, 65536 },
	{ "limit", M_LONG, 1, 50 },
	{ NULL, M_STRING, 0, 0 },
};

static const struct member get_members[] = {
	{ "logGroupName", M_STRING, 1, 512 },
	{ "logGroupIdentifier", M_STRING, 1, 2048 },
	{ "logStreamName", M_STRING, 1, 512 },
	{ "startTime", M_LONG, 0, TS_MAX },
	{ "endTime", M_LONG, 0, TS_MAX },
	{ "nextToken", M_STRING, 1, 65536 },
	{ "limit", M_LONG, 1, 10000 },
	{ "startFromHead", M_BOOL, 0, 0 },
	{ "unmask", M_BOOL, 0, 0 },
	{ NULL, M_STRING, 0, 0 },
};

static const struct member filter_members[] = {
	{ "logGroupName", M_STRING, 1, 512 },
	{ "logGroupIdentifier", M_STRING, 1, 2048 },
	{ "logStreamNames", M_STRING_LIST, 1, API_CWL_MAX_STREAM_NAMES },
	{ "logStreamNamePrefix", M_STRING, 1, 512 },
	{ "startTime", M_LONG, 0, TS_MAX },
	{ "endTime", M_LONG, 0, TS_MAX },
	{ "filterPattern", M_STRING, 0, 1024 },
	{ "nextToken", M_STRING, 1, 65536 },
	{ "limit", M_LONG, 1, 10000 },
	{ "interleaved", M_BOOL, 0, 0 },
	{ "unmask", M_BOOL, 0, 0 },
	{ NULL, M_STRING, 0, 0 },
};

static int fail(struct buf *err, const char *name, const char *what)
{
	(void)buf_addf(err,
		       "1 validation error detected: Value at '%s' failed to "
		       "satisfy constraint: %s",
		       name, what);
	return ERR_INVALID;
}

static int check_string(const struct member *m, json_t *v, struct buf *err)
{
	size_t n;

	if (!json_is_string(v))
		return fail(err, m->name, "Member must be a string");
	n = json_string_length(v);
	if ((long long)n < m->min)
		return fail(err, m->name,
			    "Member must have length greater than or equal "
			    "to 1");
	if ((long long)n > m->max) {
		struct buf why = BUF_INIT;
		int ret;

		(void)buf_addf(&why,
			       "Member must have length less than or equal "
			       "to %lld",
			       m->max);
		ret = fail(err, m->name, why.data);
		buf_release(&why);
		return ret;
	}
	return 0;
}

/* Checks every known member of root; unknown members are ignored. */
static int check_members(json_t *root, const struct member *ms, struct buf *err)
{
	const struct member *m;

	for (m = ms; m->name; m++) {
		json_t *v = json_object_get(root, m->name);
		struct buf why = BUF_INIT;
		json_t *item;
		size_t i;
		int ret = 0;

		if (!v || json_is_null(v))
			continue;
		switch (m->kind) {
		case M_STRING:
			ret = check_string(m, v, err);
			break;
		case M_BOOL:
			if (!json_is_boolean(v))
				ret = fail(err, m->name,
					   "Member must be a boolean");
			break;
		case M_LONG:
			if (!json_is_integer(v)) {
				ret = fail(err, m->name,
					   "Member must be an integer");
			} else if (json_integer_value(v) < m->min ||
				   json_integer_value(v) > m->max) {
				(void)buf_addf(&why,
					       "Member must have value "
					       "between %lld and %lld",
					       m->min, m->max);
				ret = fail(err, m->name, why.data);
			}
			break;
		case M_STRING_LIST:
			if (!json_is_array(v) ||
			    (long long)json_array_size(v) < m->min ||
			    (long long)json_array_size(v) > m->max) {
				(void)buf_addf(&why,
					       "Member must be a list of "
					       "%lld to %lld strings",
					       m->min, m->max);
				ret = fail(err, m->name, why.data);
				break;
			}
			json_array_foreach(v, i, item)
			{
				struct member one = { m->name, M_STRING, 1,
						      512 };

				if (!ret)
					ret = check_string(&one, item, err);
			}
			break;
		}
		buf_release(&why);
		if (ret)
			return ret;
	}
	return 0;
}

static char *dup_member(json_t *root, const char *key)
{
	const char *s = json_string_value(json_object_get(root, key));

	return s ? xstrdup(s) : NULL;
}

static int64_t long_member(json_t *root, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(root, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/*
 * logGroupName or logGroupIdentifier, exactly one. An identifier may be
 * the group's ARN; its name follows "log-group:" and may end in ":*".
 */
static int group_member(json_t *root, char **out, struct buf *err)
{
	const char *name =
		json_string_value(json_object_get(root, "logGroupName"));
	const char *id =
		json_string_value(json_object_get(root, "logGroupIdentifier"));
	const char *p;
	size_t n;

	*out = NULL;
	if (name && id) {
		(void)buf_adds(err, "LogGroup name and LogGroup ARN are "
				    "mutually exclusive parameters.");
		return ERR_INVALID;
	}
	if (!name && !id) {
		(void)buf_adds(err, "Either logGroupName or logGroupIdentifier "
				    "must be given.");
		return ERR_INVALID;
	}
	if (name) {
		*out = xstrdup(name);
		return 0;
	}
	p = strstr(id, ":log-group:");
	if (!strncmp(id, "arn:", 4) && p) {
		p += strlen(":log-group:");
		n = strcspn(p, ":");
		*out = xstrndup(p, n);
		return 0;
	}
	*out = xstrdup(id);
	return 0;
}

static int load(const char *json, size_t len, const struct member *ms,
		json_t **root, struct buf *err)
{
	int ret = api__json_load_object(json, len, root, err);

	if (ret)
		return ret;
	ret = check_members(*root, ms, err);
	if (ret) {
		json_decref(*root);
		*root = NULL;
	}
	return ret;
}

int api_cwl_describe_req_parse(const char *json, size_t len,
			       struct api_cwl_describe_req *r, struct buf *err)
{
	const char *order;
	json_t *root;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = load(json, len, describe_members, &root, err);
	if (ret)
		return ret;
	ret = group_member(root, &r->group, err);
	if (ret)
		goto out;
	order = json_string_value(json_object_get(root, "orderBy"));
	if (order && strcmp(order, "LogStreamName") &&
	    strcmp(order, "LastEventTime")) {
		ret = fail(err, "orderBy",
			   "Member must satisfy enum value set: "
			   "[LogStreamName, LastEventTime]");
		goto out;
	}
	r->by_last_event = order && !strcmp(order, "LastEventTime");
	r->descending = json_is_true(json_object_get(root, "descending"));
	r->prefix = dup_member(root, "logStreamNamePrefix");
	r->next_token = dup_member(root, "nextToken");
	r->limit = (int)long_member(root, "limit", 50);
	if (r->by_last_event && r->prefix) {
		(void)buf_adds(err, "Cannot order by LastEventTime with a "
				    "logStreamNamePrefix.");
		ret = ERR_INVALID;
	}
out:
	json_decref(root);
	if (ret)
		api_cwl_describe_req_release(r);
	return ret;
}

void api_cwl_describe_req_release(struct api_cwl_describe_req *r)
{
	free(r->group);
	free(r->prefix);
	free(r->next_token);
	memset(r, 0, sizeof(*r));
}

int api_cwl_get_req_parse(const char *json, size_t len,
			  struct api_cwl_get_req *r, struct buf *err)
{
	json_t *root;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = load(json, len, get_members, &root, err);
	if (ret)
		return ret;
	ret = group_member(root, &r->group, err);
	if (ret)
		goto out;
	r->stream = dup_member(root, "logStreamName");
	if (!r->stream) {
		ret = fail(err, "logStreamName", "Member must not be null");
		goto out;
	}
	r->start_ms = long_member(root, "startTime", -1);
	r->end_ms = long_member(root, "endTime", -1);
	r->next_token = dup_member(root, "nextToken");
	r->limit = (int)long_member(root, "limit", 10000);
	r->start_from_head =
		json_is_true(json_object_get(root, "startFromHead"));
out:
	json_decref(root);
	if (ret)
		api_cwl_get_req_release(r);
	return ret;
}

void api_cwl_get_req_release(struct api_cwl_get_req *r)
{
	free(r->group);
	free(r->stream);
	free(r->next_token);
	memset(r, 0, sizeof(*r));
}

int api_cwl_filter_req_parse(const char *json, size_t len,
			     struct api_cwl_filter_req *r, struct buf *err)
{
	json_t *root;
	json_t *names;
	json_t *v;
	size_t i;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = load(json, len, filter_members, &root, err);
	if (ret)
		return ret;
	ret = group_member(root, &r->group, err);
	if (ret)
		goto out;
	names = json_object_get(root, "logStreamNames");
	r->prefix = dup_member(root, "logStreamNamePrefix");
	if (json_is_array(names) && r->prefix) {
		(void)buf_adds(err, "You cannot specify both "
				    "logStreamNames and logStreamNamePrefix.");
		ret = ERR_INVALID;
		goto out;
	}
	if (json_is_array(names)) {
		r->streams = xcalloc(json_array_size(names) + 1,
				     sizeof(*r->streams));
		json_array_foreach(names, i, v)
		{
			r->streams[r->n_streams++] =
				xstrdup(json_string_value(v));
		}
	}
	r->start_ms = long_member(root, "startTime", -1);
	r->end_ms = long_member(root, "endTime", -1);
	r->pattern = dup_member(root, "filterPattern");
	r->next_token = dup_member(root, "nextToken");
	r->limit = (int)long_member(root, "limit", 10000);
out:
	json_decref(root);
	if (ret)
		api_cwl_filter_req_release(r);
	return ret;
}

void api_cwl_filter_req_release(struct api_cwl_filter_req *r)
{
	size_t i;

	free(r->group);
	for (i = 0; i < r->n_streams; i++)
		free(r->streams[i]);
	free(r->streams);
	free(r->prefix);
	free(r->pattern);
	free(r->next_token);
	memset(r, 0, sizeof(*r));
}

/* A JSON string, or NULL when s is not UTF-8. */
static json_t *str(const char *s)
{
	return json_string(s);
}

int api_cwl_streams_build(const struct api_cwl_stream *s, size_t n,
			  const char *next_token, struct buf *out)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	int bad = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		json_t *o = json_object();
		json_t *name = str(s[i].name);

		bad |= !name;
		json_object_set_new(o, "logStreamName", name);
		json_object_set_new(o, "creationTime",
				    json_integer(s[i].creation_ms));
		if (s[i].first_event_ms) {
			json_object_set_new(o, "firstEventTimestamp",
					    json_integer(s[i].first_event_ms));
			json_object_set_new(o, "lastEventTimestamp",
					    json_integer(s[i].last_event_ms));
			json_object_set_new(
				o, "lastIngestionTime",
				json_integer(s[i].last_ingestion_ms));
		}
		json_object_set_new(o, "arn", json_string(s[i].arn));
		json_object_set_new(o, "storedBytes",
				    json_integer(s[i].stored_bytes));
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "logStreams", arr);
	if (next_token)
		json_object_set_new(root, "nextToken", json_string(next_token));
	return api__json_finish(root, bad, out);
}

static json_t *event_json(const struct api_cwl_event *e, int *bad)
{
	json_t *o = json_object();
	json_t *msg = str(e->message);

	/* Stored lines are UTF-8 already (the agent sanitizes them). */
	if (!msg)
		msg = json_string("(invalid UTF-8)");
	if (e->stream) {
		json_t *s = str(e->stream);

		*bad |= !s;
		json_object_set_new(o, "logStreamName", s);
	}
	json_object_set_new(o, "timestamp", json_integer(e->timestamp_ms));
	json_object_set_new(o, "message", msg);
	json_object_set_new(o, "ingestionTime", json_integer(e->ingestion_ms));
	if (e->event_id)
		json_object_set_new(o, "eventId", json_string(e->event_id));
	return o;
}

int api_cwl_events_build(const struct api_cwl_event *e, size_t n,
			 const char *forward, const char *backward,
			 struct buf *out)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	int bad = 0;
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(arr, event_json(&e[i], &bad));
	json_object_set_new(root, "events", arr);
	json_object_set_new(root, "nextForwardToken", json_string(forward));
	json_object_set_new(root, "nextBackwardToken", json_string(backward));
	return api__json_finish(root, bad, out);
}

int api_cwl_filtered_build(const struct api_cwl_event *e, size_t n,
			   const struct api_cwl_searched *s, size_t n_s,
			   const char *next_token, struct buf *out)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	json_t *searched = json_array();
	int bad = 0;
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(arr, event_json(&e[i], &bad));
	for (i = 0; i < n_s; i++) {
		json_t *name = str(s[i].name);

		bad |= !name;
		json_array_append_new(searched,
				      json_pack("{s:o,s:b}", "logStreamName",
						name ? name : json_null(),
						"searchedCompletely",
						s[i].completely));
	}
	json_object_set_new(root, "events", arr);
	json_object_set_new(root, "searchedLogStreams", searched);
	if (next_token)
		json_object_set_new(root, "nextToken", json_string(next_token));
	return api__json_finish(root, bad, out);
}
