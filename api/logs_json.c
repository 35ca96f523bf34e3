#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json_util.h"
#include "api/logs_json.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

static json_t *event_json(const struct api_log_event *e)
{
	json_t *msg = json_string(e->message);

	if (!msg)
		msg = json_string("(invalid UTF-8)");
	return json_pack("{s:I,s:o,s:s,s:i}", "timestamp",
			 (json_int_t)e->timestamp_ms, "message", msg, "stream",
			 e->is_stderr ? "stderr" : "stdout", "rank", e->rank);
}

int api_log_events_build(const struct api_log_events *ev, struct buf *out)
{
	json_t *root = json_object();
	json_t *streams = json_array();
	json_t *events = json_array();
	size_t i;
	int ret;

	for (i = 0; i < ev->n_streams; i++)
		json_array_append_new(streams, json_string(ev->streams[i]));
	/* Lines were made valid UTF-8 by the agent; event_json() stays
	 * safe anyway. */
	for (i = 0; i < ev->n; i++)
		json_array_append_new(events, event_json(&ev->items[i]));
	json_object_set_new(root, "streams", streams);
	json_object_set_new(root, "events", events);
	json_object_set_new(root, "next_offset",
			    json_integer((json_int_t)ev->next_offset));
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

static void set_label(json_t *o, const struct api_log_stream_info *s)
{
	char label[96];

	if (s->attempt)
		snprintf(label, sizeof(label), "attempt %d \xc2\xb7 %s",
			 s->attempt, s->host);
	else
		snprintf(label, sizeof(label), "%s", s->host);
	json_object_set_new(o, "log_stream", json_string(s->stream));
	json_object_set_new(o, "host", json_string(s->host));
	json_object_set_new(o, "attempt", json_integer(s->attempt));
	json_object_set_new(o, "label", json_string(label));
}

int api_log_streams_build(const struct api_log_stream_info *s, size_t n,
			  struct buf *out)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		json_t *o = json_object();

		set_label(o, &s[i]);
		json_object_set_new(o, "start", json_integer(s[i].start_ms));
		json_object_set_new(o, "bytes", json_integer(s[i].bytes));
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "streams", arr);
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

int api_log_matches_build(const struct api_log_match *m, size_t n,
			  int truncated, struct buf *out)
{
	json_t *root = json_object();
	json_t *arr = json_array();
	size_t i, k;
	int ret;

	for (i = 0; i < n; i++) {
		json_t *o = event_json(&m[i].line);
		json_t *before = json_array();
		json_t *after = json_array();

		set_label(o, m[i].stream);
		json_object_set_new(o, "offset", json_integer(m[i].offset));
		for (k = 0; k < m[i].n_before; k++)
			json_array_append_new(before,
					      event_json(&m[i].before[k]));
		for (k = 0; k < m[i].n_after; k++)
			json_array_append_new(after,
					      event_json(&m[i].after[k]));
		json_object_set_new(o, "before", before);
		json_object_set_new(o, "after", after);
		json_array_append_new(arr, o);
	}
	json_object_set_new(root, "matches", arr);
	json_object_set_new(root, "truncated", json_boolean(truncated));
	ret = api__json_dump_to(root, out);
	json_decref(root);
	return ret;
}

int api_log_events_parse(const char *json, size_t len,
			 struct api_log_events *ev, struct buf *err)
{
	json_t *root;
	json_t *arr;
	json_t *v;
	size_t i;
	int ret;

	memset(ev, 0, sizeof(*ev));
	ret = api__json_load_object(json, len, &root, err);
	if (ret)
		return ret;
	arr = json_object_get(root, "streams");
	ev->streams = xcalloc(json_array_size(arr) + 1, sizeof(*ev->streams));
	json_array_foreach(arr, i, v)
	{
		if (json_is_string(v))
			ev->streams[ev->n_streams++] =
				xstrdup(json_string_value(v));
	}
	arr = json_object_get(root, "events");
	ev->items = xcalloc(json_array_size(arr) + 1, sizeof(*ev->items));
	json_array_foreach(arr, i, v)
	{
		struct api_log_event *e = &ev->items[ev->n];
		const char *m =
			json_string_value(json_object_get(v, "message"));
		const char *s = json_string_value(json_object_get(v, "stream"));

		e->timestamp_ms =
			json_integer_value(json_object_get(v, "timestamp"));
		e->message = xstrdup(m ? m : "");
		e->is_stderr = s && !strcmp(s, "stderr");
		e->rank = (int)json_integer_value(json_object_get(v, "rank"));
		ev->n++;
	}
	ev->next_offset =
		json_integer_value(json_object_get(root, "next_offset"));
	json_decref(root);
	return 0;
}

void api_log_events_release(struct api_log_events *ev)
{
	size_t i;

	for (i = 0; i < ev->n_streams; i++)
		free(ev->streams[i]);
	free(ev->streams);
	for (i = 0; i < ev->n; i++)
		free(ev->items[i].message);
	free(ev->items);
	memset(ev, 0, sizeof(*ev));
}
