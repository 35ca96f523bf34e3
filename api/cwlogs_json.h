#ifndef API_CWLOGS_JSON_H
#define API_CWLOGS_JSON_H

/*
 * The CloudWatch Logs subset (JSON 1.1, X-Amz-Target Logs_20140328.*) that
 * reads training job logs: DescribeLogStreams, GetLogEvents and
 * FilterLogEvents requests as plain structs, and their answers. Members and
 * limits follow the service model (botocore logs/2014-03-28); timestamps
 * are epoch milliseconds on the wire. Parsers return 0, or ERR_INVALID
 * with err holding the message of an InvalidParameterException; on failure
 * there is nothing to release. Builders return 0 or ERR_TOOBIG (out's max)
 * or ERR_INVALID (a string that is not UTF-8).
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define API_CWL_MAX_STREAM_NAMES 100 /* logStreamNames of FilterLogEvents */

struct api_cwl_describe_req {
	char *group;	   /* logGroupName or logGroupIdentifier */
	char *prefix;	   /* logStreamNamePrefix, NULL = any */
	int by_last_event; /* orderBy LastEventTime (default LogStreamName) */
	int descending;
	char *next_token; /* NULL = first page */
	int limit;	  /* 1..50, default 50 */
};

struct api_cwl_get_req {
	char *group;
	char *stream;	     /* required */
	int64_t start_ms;    /* -1 = unset; inclusive */
	int64_t end_ms;	     /* -1 = unset; exclusive */
	char *next_token;    /* NULL = none */
	int limit;	     /* 1..10000, default 10000 */
	int start_from_head; /* default false: the newest events */
};

struct api_cwl_filter_req {
	char *group;
	char **streams; /* logStreamNames, n_streams of them, or NULL */
	size_t n_streams;
	char *prefix; /* logStreamNamePrefix, NULL = any */
	int64_t start_ms;
	int64_t end_ms;
	char *pattern; /* filterPattern, NULL = everything */
	char *next_token;
	int limit; /* 1..10000, default 10000 */
};

/*
 * The group named by a request, when it came as logGroupIdentifier it may
 * be an ARN ("arn:aws:logs:...:log-group:NAME[:*]"): the name is kept.
 * Giving both logGroupName and logGroupIdentifier, or neither, is an error.
 */
int api_cwl_describe_req_parse(const char *json, size_t len,
			       struct api_cwl_describe_req *r, struct buf *err);
void api_cwl_describe_req_release(struct api_cwl_describe_req *r);

int api_cwl_get_req_parse(const char *json, size_t len,
			  struct api_cwl_get_req *r, struct buf *err);
void api_cwl_get_req_release(struct api_cwl_get_req *r);

int api_cwl_filter_req_parse(const char *json, size_t len,
			     struct api_cwl_filter_req *r, struct buf *err);
void api_cwl_filter_req_release(struct api_cwl_filter_req *r);

/* One log stream of DescribeLogStreams; nothing owned. */
struct api_cwl_stream {
	const char *name;
	const char *arn;
	int64_t creation_ms;
	int64_t first_event_ms; /* 0 = the stream is empty: omitted */
	int64_t last_event_ms;
	int64_t last_ingestion_ms;
	long long stored_bytes;
};

/* {"logStreams": [...], "nextToken"} (nextToken omitted when NULL). */
int api_cwl_streams_build(const struct api_cwl_stream *s, size_t n,
			  const char *next_token, struct buf *out);

/* One event; nothing owned. stream and event_id only for FilterLogEvents. */
struct api_cwl_event {
	const char *stream;
	const char *event_id;
	int64_t timestamp_ms;
	int64_t ingestion_ms;
	const char *message;
};

/* GetLogEvents: {"events", "nextForwardToken", "nextBackwardToken"}. */
int api_cwl_events_build(const struct api_cwl_event *e, size_t n,
			 const char *forward, const char *backward,
			 struct buf *out);

/* A stream FilterLogEvents looked at (searchedLogStreams). */
struct api_cwl_searched {
	const char *name;
	int completely;
};

/* FilterLogEvents: {"events", "searchedLogStreams", "nextToken"}. */
int api_cwl_filtered_build(const struct api_cwl_event *e, size_t n,
			   const struct api_cwl_searched *s, size_t n_s,
			   const char *next_token, struct buf *out);

#endif
