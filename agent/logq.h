#ifndef AGENT_LOGQ_H
#define AGENT_LOGQ_H

/* The bounded queue of log lines (agent/logq.c). */
#include <stddef.h>
#include <stdint.h>

#include "api/agent_proto.h"
#include "common/buf.h"

struct agent_logq_entry {
	struct agent_logq_entry *next;
	struct api_log_line line;
	size_t cost;	       /* bytes of memory and (about) of JSON */
	uint64_t marker_count; /* a "lines dropped" marker for that many */
	int64_t queued_ms;     /* monotonic */
};

struct agent_logq_drop {
	struct agent_logq_drop *next;
	char *job;
	char *uid; /* may be NULL */
	int attempt;
	char *algo;
	uint64_t n;
};

struct agent_logq {
	struct agent_logq_entry *head;
	struct agent_logq_entry *tail;
	size_t n;
	size_t bytes;	   /* of every queued entry */
	size_t inflight_n; /* the first inflight_n entries are being sent */
	struct agent_logq_entry *inflight_last; /* the last of them */
	size_t inflight_bytes;
	size_t max_bytes;
	struct agent_logq_drop *drops;
	uint64_t dropped_total;
	/* The batch in flight as sent, its number, and whether it is to be
	 * sent again as it is (nacked): a batch sent again is the same
	 * bytes with the same seq, so the controller stores it once. */
	struct buf inflight_body;
	int64_t seq;
	int resend;
};

#define AGENT_LOGQ_MAX (16u << 20)
#define AGENT_LOGQ_BATCH_MAX (1u << 20)
#define AGENT_LOGQ_FLUSH_BYTES (64u << 10)
#define AGENT_LOGQ_FLUSH_MS 50

void agent_logq_init(struct agent_logq *q, size_t max_bytes);

/* Queues a copy of one line; drops the oldest unsent lines past max. */
void agent_logq_push(struct agent_logq *q, const char *job, const char *uid,
		     int attempt, const char *algo, int rank, int is_stderr,
		     int64_t ts_ms, const char *text, size_t len,
		     int64_t now_mono);

/* Bytes and age (monotonic ms of the oldest) of what is not in flight. */
size_t agent_logq_unsent_bytes(const struct agent_logq *q);
int64_t agent_logq_oldest_unsent(const struct agent_logq *q);

/*
 * Marks the oldest unsent lines (up to AGENT_LOGQ_BATCH_MAX of JSON, drop
 * markers first) as in flight and appends their JSON batch, named by
 * boot_id and the next seq, to out. After a nack it appends the batch in
 * flight again, unchanged. Returns the number of lines taken (0: nothing
 * to send).
 */
size_t agent_logq_take(struct agent_logq *q, const char *boot_id,
		       int64_t now_ms, struct buf *out);

/* The batch in flight was delivered (ack) or not (nack: the next take
 * sends the same batch again). */
void agent_logq_ack(struct agent_logq *q);
void agent_logq_nack(struct agent_logq *q);

void agent_logq_release(struct agent_logq *q);

#endif
