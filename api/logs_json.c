#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json_util.h"
#include "api/logs_json.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

int api_log_events_build(const struct api_log_events *ev, struct buf *out)
{
	json_t *root = json_object();
	json_t *streams = json_array();
	json_t *events = json_array();
	size_t i;
	int ret;

	for (i = 0; i < ev->n_streams; i++)
		json_array_append_new(streams, json_string(ev->streams[i]));
	for (i = 0; i < ev->n; i++) {
		const struct api_log_event *e = &ev->items[i];
		/* Lines were made valid UTF-8 by the agent; stay safe anyway.
		 */
		json_t *msg = json_string(e->message);

		if (!msg)
			msg = json_string("(invalid UTF-8)");
		json_array_append_new(
			events,
			json_pack("{s:I,s:o,s:s,s:i}", "timestamp",
				  (json_int_t)e->timestamp_ms, "message", msg,
				  "stream", e->is_stderr ? "stderr" : "stdout",
				  "rank", e->rank));
	}
	json_object_set_new(root, "streams", streams);
	json_object_set_new(root, "events", events);
	json_object_set_new(root, "next_offset",
			    json_integer((json_int_t)ev->next_offset));
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
