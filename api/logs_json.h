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

/*
 * The log views (controller/obs/logview.c): a job's streams labelled by
 * attempt and host, and search matches with their context.
 */
struct api_log_stream_info {
	const char *stream; /* <algo>-<second> */
	const char *host;   /* algo-N */
	int attempt;	    /* 0: unknown */
	int64_t start_ms;
	long long bytes;
};

int api_log_streams_build(const struct api_log_stream_info *s, size_t n,
			  struct buf *out);

struct api_log_match {
	const struct api_log_stream_info *stream;
	long long offset; /* of the line in its stream */
	struct api_log_event line;
	const struct api_log_event *before; /* context, oldest first */
	size_t n_before;
	const struct api_log_event *after;
	size_t n_after;
};

int api_log_matches_build(const struct api_log_match *m, size_t n,
			  int truncated, struct buf *out);

#endif
