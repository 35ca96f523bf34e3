/*
 * The queue of job output lines waiting to be POSTed to the controller.
 *
 * Bounded: while the controller cannot be reached the queue keeps at most
 * max_bytes; past that the oldest lines that are not in flight are
 * dropped, counted per assignment, and the next batch starts with one
 * marker line per assignment saying how many were lost. Lines leave the
 * queue only when the controller has acknowledged them.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/logq.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Fixed JSON and bookkeeping overhead of one line. */
#define LINE_OVERHEAD 160

void agent_logq_init(struct agent_logq *q, size_t max_bytes)
{
	memset(q, 0, sizeof(*q));
	q->max_bytes = max_bytes ? max_bytes : AGENT_LOGQ_MAX;
	buf_init(&q->inflight_body, 0);
}

/* Bytes text takes inside a JSON string (jansson's escaping). */
static size_t json_len(const char *s, size_t n)
{
	size_t i, len = 0;
	unsigned char c;

	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c == '"' || c == '\\' || c == '\b' || c == '\f' ||
		    c == '\n' || c == '\r' || c == '\t')
			len += 2;
		else if (c < 0x20 || c == 0x7f)
			len += 6;
		else
			len++;
	}
	return len;
}

static int same_uid(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static void entry_free(struct agent_logq_entry *e)
{
	free(e->line.job);
	free(e->line.job_uid);
	free(e->line.algo);
	free(e->line.text);
	free(e);
}

static struct agent_logq_entry *
entry_new(const char *job, const char *uid, int attempt, const char *algo,
	  int rank, int is_stderr, int64_t ts_ms, const char *text, size_t len)
{
	struct agent_logq_entry *e = xcalloc(1, sizeof(*e));

	e->line.job = xstrdup(job);
	e->line.job_uid = uid ? xstrdup(uid) : NULL;
	e->line.attempt = attempt;
	e->line.algo = xstrdup(algo);
	e->line.rank = rank;
	e->line.is_stderr = is_stderr;
	e->line.ts_ms = ts_ms;
	e->line.text = xstrndup(text, len);
	e->cost = json_len(text, len) + strlen(job) + strlen(algo) +
		  (uid ? strlen(uid) + 12 : 0) + LINE_OVERHEAD;
	return e;
}

static void count_drop(struct agent_logq *q, const struct agent_logq_entry *e)
{
	struct agent_logq_drop *d;
	uint64_t n = e->marker_count ? e->marker_count : 1;

	q->dropped_total += n;
	for (d = q->drops; d; d = d->next)
		if (d->attempt == e->line.attempt &&
		    !strcmp(d->job, e->line.job) &&
		    same_uid(d->uid, e->line.job_uid) &&
		    !strcmp(d->algo, e->line.algo)) {
			d->n += n;
			return;
		}
	d = xcalloc(1, sizeof(*d));
	d->job = xstrdup(e->line.job);
	d->uid = e->line.job_uid ? xstrdup(e->line.job_uid) : NULL;
	d->attempt = e->line.attempt;
	d->algo = xstrdup(e->line.algo);
	d->n = n;
	d->next = q->drops;
	q->drops = d;
}

/* The first entry that is not in flight, and the one before it. */
static struct agent_logq_entry *first_unsent(const struct agent_logq *q,
					     struct agent_logq_entry **prev)
{
	if (prev)
		*prev = q->inflight_last;
	return q->inflight_last ? q->inflight_last->next : q->head;
}

static void drop_oldest(struct agent_logq *q)
{
	struct agent_logq_entry *prev, *e, *next;

	e = first_unsent(q, &prev);
	while (q->bytes > q->max_bytes && e) {
		next = e->next;
		if (prev)
			prev->next = next;
		else
			q->head = next;
		if (q->tail == e)
			q->tail = prev;
		q->bytes -= e->cost;
		q->n--;
		count_drop(q, e);
		entry_free(e);
		e = next;
	}
}

static void append(struct agent_logq *q, struct agent_logq_entry *e)
{
	if (q->tail)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	q->n++;
	q->bytes += e->cost;
}

void agent_logq_push(struct agent_logq *q, const char *job, const char *uid,
		     int attempt, const char *algo, int rank, int is_stderr,
		     int64_t ts_ms, const char *text, size_t len,
		     int64_t now_mono)
{
	struct agent_logq_entry *e;

	e = entry_new(job, uid, attempt, algo, rank, is_stderr, ts_ms, text,
		      len);
	e->queued_ms = now_mono;
	append(q, e);
	if (q->bytes > q->max_bytes)
		drop_oldest(q);
}

size_t agent_logq_unsent_bytes(const struct agent_logq *q)
{
	return q->bytes - q->inflight_bytes;
}

int64_t agent_logq_oldest_unsent(const struct agent_logq *q)
{
	struct agent_logq_entry *e = first_unsent(q, NULL);

	return e ? e->queued_ms : -1;
}

/* Turns the drop counters into marker lines at the head of the queue. */
static void insert_markers(struct agent_logq *q, int64_t now_ms)
{
	struct agent_logq_drop *d;
	struct agent_logq_entry *e;
	struct buf text = BUF_INIT;

	while ((d = q->drops)) {
		q->drops = d->next;
		buf_reset(&text);
		(void)buf_addf(&text,
			       "trainagent: %llu log lines dropped: the "
			       "controller did not take them as fast as they "
			       "came (or could not be reached)",
			       (unsigned long long)d->n);
		e = entry_new(d->job, d->uid, d->attempt, d->algo, 0, 1, now_ms,
			      text.data, text.len);
		e->marker_count = d->n;
		e->next = q->head;
		q->head = e;
		if (!q->tail)
			q->tail = e;
		q->n++;
		q->bytes += e->cost;
		free(d->job);
		free(d->uid);
		free(d->algo);
		free(d);
	}
	buf_release(&text);
}

size_t agent_logq_take(struct agent_logq *q, const char *boot_id,
		       int64_t now_ms, struct buf *out)
{
	struct agent_logq_entry *e;
	struct api_log_batch b;
	size_t n = 0, cap, bytes = 0;

	if (q->inflight_n) {
		if (!q->resend ||
		    buf_add(out, q->inflight_body.data, q->inflight_body.len))
			return 0;
		q->resend = 0;
		return q->inflight_n;
	}
	insert_markers(q, now_ms);
	if (!q->head)
		return 0;
	cap = q->n < 1024 ? q->n : 1024;
	b.lines = xcalloc(cap, sizeof(*b.lines));
	for (e = q->head; e; e = e->next) {
		if (n && bytes + e->cost > AGENT_LOGQ_BATCH_MAX)
			break;
		q->inflight_last = e;
		ALLOC_GROW(b.lines, n + 1, cap);
		/* Shallow copies: the batch only borrows the strings. */
		b.lines[n++] = e->line;
		bytes += e->cost;
	}
	b.n = n;
	b.boot_id = (char *)boot_id;
	b.seq = q->seq + 1;
	buf_reset(&q->inflight_body);
	if (api_log_batch_build(&b, &q->inflight_body) ||
	    buf_add(out, q->inflight_body.data, q->inflight_body.len)) {
		free(b.lines);
		q->inflight_last = NULL;
		return 0;
	}
	free(b.lines);
	q->seq = b.seq;
	q->inflight_n = n;
	q->inflight_bytes = bytes;
	q->resend = 0;
	return n;
}

void agent_logq_ack(struct agent_logq *q)
{
	struct agent_logq_entry *e;

	while (q->inflight_n && (e = q->head)) {
		q->head = e->next;
		if (q->tail == e)
			q->tail = NULL;
		q->n--;
		q->bytes -= e->cost;
		q->inflight_n--;
		entry_free(e);
	}
	q->inflight_n = 0;
	q->inflight_last = NULL;
	q->inflight_bytes = 0;
	q->resend = 0;
	buf_reset(&q->inflight_body);
}

void agent_logq_nack(struct agent_logq *q)
{
	/* The lines stay in flight: the same batch goes again. */
	q->resend = q->inflight_n != 0;
	if (q->bytes > q->max_bytes)
		drop_oldest(q);
}

void agent_logq_release(struct agent_logq *q)
{
	struct agent_logq_entry *e;
	struct agent_logq_drop *d;

	while ((e = q->head)) {
		q->head = e->next;
		entry_free(e);
	}
	while ((d = q->drops)) {
		q->drops = d->next;
		free(d->job);
		free(d->uid);
		free(d->algo);
		free(d);
	}
	buf_release(&q->inflight_body);
	agent_logq_init(q, q->max_bytes);
}
