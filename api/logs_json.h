#ifndef API_LOGS_JSON_H
#define API_LOGS_JSON_H

/*
 * GET /v1/training-jobs/{name}/logs: the job's log streams and, for one
 * stream, a page of events from a byte offset:
 *   {"streams": ["job/algo-1-1796211299", ...],
 *    "events": [{"timestamp": ms, "message": "...", "stream": "stdout",
 *                "rank": 0}],
 *    "next_offset": 1234}
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct api_log_event {
	int64_t timestamp_ms;
	char *message;
	int is_stderr;
	int rank;
};

struct api_log_events {
	char **streams;
	size_t n_streams;
	struct api_log_event *items;
	size_t n;
	long long next_offset;
};

int api_log_events_build(const struct api_log_events *ev, struct buf *out);
int api_log_events_parse(const char *json, size_t len,
			 struct api_log_events *ev, struct buf *err);
void api_log_events_release(struct api_log_events *ev);

#endif
