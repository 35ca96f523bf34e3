#define LOG_TAG "cwlogs"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/cwlogs_json.h"
#include "controller/ctrl.h"
#include "controller/obs/cwlogs.h"
#include "controller/obs/logs.h"
#include "controller/route.h"
#include "controller/caller.h"
#include "controller/reply.h"
#include "db/db.h"
#include "db/run.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * The service caps an answer at 1 MB of events, counting each event as its
 * message plus 26 bytes.
 */
#define ANSWER_MAX (1 << 20)
#define EVENT_OVERHEAD 26
#define CHUNK (64 << 10)
#define LINE_MAX_BYTES (2 << 20) /* longer lines are skipped */

#define GROUP_MISSING "The specified log group does not exist."
#define STREAM_MISSING "The specified log stream does not exist."
#define BAD_TOKEN "The specified nextToken is invalid."

/* ------------------------------------------------------------ streams */

/*
 * A log stream of the group: <job>/algo-<n>-<epoch>, one per host of the
 * job. A retried job writes each attempt to files of its own
 * (controller/obs/logs.h); here a host's files are one stream, its parts
 * in attempt order, named after the first. The SageMaker SDK's log loop
 * asks DescribeLogStreams for InstanceCount streams by name and never
 * pages: with one stream per host it reads every line of every attempt
 * once, and boto3's and the CLIs' paginators see the same streams.
 */
struct stream {
	char *full;
	char **paths; /* its files, oldest attempt first */
	size_t n_paths, alloc_paths;
	int64_t created_ms;
};

struct stream_list {
	struct stream *items;
	size_t n, cap;
};

static void stream_release(struct stream *s)
{
	size_t i;

	free(s->full);
	for (i = 0; i < s->n_paths; i++)
		free(s->paths[i]);
	free(s->paths);
	memset(s, 0, sizeof(*s));
}

static void streams_release(struct stream_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		stream_release(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct stream *)a)->full,
		      ((const struct stream *)b)->full);
}

/* The length of the host part of a file's name: "algo-2" of "algo-2-E". */
static size_t host_len(const char *name)
{
	const char *dash = strrchr(name, '-');

	return dash ? (size_t)(dash - name) : strlen(name);
}

/* The epoch second that ends a file's name, for ordering a host's parts. */
static long long name_epoch(const char *name)
{
	const char *dash = strrchr(name, '-');

	return dash ? atoll(dash + 1) : 0;
}

static void stream_add_path(struct ctrl_ctx *ctx, const char *job,
			    struct stream *s, const char *name)
{
	struct buf path = BUF_INIT;

	(void)ctrl_logs_path(ctx, job, name, &path);
	ALLOC_GROW(s->paths, s->n_paths + 1, s->alloc_paths);
	s->paths[s->n_paths++] = buf_detach(&path, NULL);
}

static int by_epoch(const void *a, const void *b)
{
	const struct db_log_stream *x = a, *y = b;
	size_t hx = host_len(x->name), hy = host_len(y->name);
	int c = strncmp(x->name, y->name, hx < hy ? hx : hy);
	long long ex, ey;

	if (c || hx != hy)
		return c ? c : hx < hy ? -1 : 1;
	ex = name_epoch(x->name);
	ey = name_epoch(y->name);
	return ex < ey ? -1 : ex > ey;
}

/*
 * Adds the streams of job (its canonical name) that start with prefix:
 * one per host, or, when only is given, the file of that name alone
 * (an attempt's part, as trainctl and the web page name them).
 */
static int add_job_streams(struct ctrl_ctx *ctx, const char *job,
			   const char *prefix, const char *only,
			   struct stream_list *l, struct buf *err)
{
	struct db_log_stream *s = NULL;
	size_t n = 0, i;
	int ret = db_log_streams(ctx->db, job, &s, &n, err);

	if (!ret && n > 1)
		qsort(s, n, sizeof(*s), by_epoch);
	for (i = 0; !ret && i < n; i++) {
		struct buf full = BUF_INIT;
		struct stream *st;

		if (only && strcmp(s[i].name, only))
			continue;
		if (!only && l->n && i &&
		    host_len(s[i].name) == host_len(s[i - 1].name) &&
		    !strncmp(s[i].name, s[i - 1].name, host_len(s[i].name))) {
			/* A later attempt's part of the host's stream. */
			st = &l->items[l->n - 1];
			if (st->n_paths)
				stream_add_path(ctx, job, st, s[i].name);
			continue;
		}
		(void)buf_addf(&full, "%s/%s", job, s[i].name);
		ALLOC_GROW(l->items, l->n + 1, l->cap);
		st = &l->items[l->n++];
		memset(st, 0, sizeof(*st));
		st->created_ms = s[i].created_ms;
		if (prefix && strncmp(full.data, prefix, strlen(prefix))) {
			/* Kept without parts, so that the host's later
			 * parts are not taken for a stream of their own. */
			st->full = buf_detach(&full, NULL);
			continue;
		}
		st->full = buf_detach(&full, NULL);
		stream_add_path(ctx, job, st, s[i].name);
	}
	db_log_streams_free(s, n);
	/* Drop the hosts the prefix left out. */
	for (i = 0; i < l->n;) {
		if (l->items[i].n_paths) {
			i++;
			continue;
		}
		stream_release(&l->items[i]);
		l->items[i] = l->items[--l->n];
	}
	return ret;
}

/* The canonical name of job, or NULL when there is no such job. */
static char *canonical_job(struct ctrl_ctx *ctx, const char *name)
{
	struct buf err = BUF_INIT;
	struct db_job job;
	char *out = NULL;

	if (!db_job_get(ctx->db, name, &job, &err)) {
		out = xstrdup(job.name);
		db_job_release(&job);
	}
	buf_release(&err);
	return out;
}

/*
 * Every stream whose name starts with prefix (NULL: all), sorted by name.
 * A prefix naming a job ("job/...") looks at that job only; otherwise
 * every job whose name could start the prefix is looked at. With only
 * (a prefix naming a job), the one file of that name of the job instead.
 */
static int collect_streams(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const char *prefix, const char *only,
			   struct stream_list *l, struct buf *err)
{
	const char *slash = prefix ? strchr(prefix, '/') : NULL;
	struct db_list_query q = { 0 };
	char *token = NULL;
	int ret = 0;

	memset(l, 0, sizeof(*l));
	if (slash) {
		char *want = xstrndup(prefix, (size_t)(slash - prefix));
		char *job = canonical_job(ctx, want);

		/* Another user's job has no streams this caller can see. */
		if (job && !strcmp(job, want) &&
		    !ctrl_caller_check_job(ctx, who, job, err))
			ret = add_job_streams(ctx, job, prefix, only, l, err);
		buf_reset(err);
		free(job);
		free(want);
		goto out;
	}
	q.limit = 1000;
	q.name_contains = prefix && strlen(prefix) <= 63 ? prefix : NULL;
	q.owner = who->admin ? NULL : who->owner;
	do {
		struct db_job *jobs = NULL;
		char *next = NULL;
		size_t n = 0, i;

		q.token = token;
		ret = db_job_list(ctx->db, &q, &jobs, &n, &next, err);
		for (i = 0; i < n; i++) {
			if (!ret && (!prefix || !strncmp(jobs[i].name, prefix,
							 strlen(prefix))))
				ret = add_job_streams(ctx, jobs[i].name, prefix,
						      NULL, l, err);
			db_job_release(&jobs[i]);
		}
		free(jobs);
		free(token);
		token = next;
	} while (token && !ret);
	free(token);
out:
	if (ret)
		streams_release(l);
	else if (l->n > 1)
		qsort(l->items, l->n, sizeof(*l->items), by_name);
	return ret;
}

/* The stream of full in l, moved to l->items[0]; 0 or ERR_NOTFOUND. */
static int pick_stream(struct stream_list *l, const char *full)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		if (!strcmp(l->items[i].full, full)) {
			struct stream keep = l->items[i];

			l->items[i] = l->items[0];
			l->items[0] = keep;
			return 0;
		}
	}
	streams_release(l);
	return ERR_NOTFOUND;
}

/*
 * One stream by its full name: a host's stream, or one attempt's part of
 * it by the part's own name. Returns 0 or ERR_NOTFOUND.
 */
static int find_stream(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		       const char *full, struct stream_list *l)
{
	struct buf err = BUF_INIT;
	const char *slash = strchr(full, '/');
	int ret = ERR_NOTFOUND;

	memset(l, 0, sizeof(*l));
	if (slash && !collect_streams(ctx, who, full, NULL, l, &err))
		ret = pick_stream(l, full);
	if (ret && slash &&
	    !collect_streams(ctx, who, full, slash + 1, l, &err))
		ret = pick_stream(l, full);
	buf_release(&err);
	if (ret)
		memset(l, 0, sizeof(*l));
	return ret;
}

static int group_ok(const char *group, struct ctrl_response *resp)
{
	if (!strcmp(group, CTRL_CWLOGS_GROUP))
		return 1;
	ctrl_reply_err(resp, CTRL_E_LOGS_NOT_FOUND, GROUP_MISSING);
	return 0;
}

/* ------------------------------------------------------------ reading */

/* A line of a stream file: "ts_ms \t O|E \t rank \t text". */
struct line {
	int64_t ts_ms;
	const char *text;
};

static int parse_line(char *p, struct line *l)
{
	char *f1 = strchr(p, '\t');
	char *f2 = f1 ? strchr(f1 + 1, '\t') : NULL;
	char *f3 = f2 ? strchr(f2 + 1, '\t') : NULL;

	if (!f3)
		return ERR_INVALID;
	l->ts_ms = strtoll(p, NULL, 10);
	l->text = f3 + 1;
	return 0;
}

/*
 * Reads a stream's files line by line from an offset. An offset is a
 * file's index in the top bits and a place in that file below
 * (PART_SHIFT), so that tokens made of it stay plain numbers and grow
 * along the stream.
 */
#define PART_SHIFT 40
#define PART_OFF_MASK ((1LL << PART_SHIFT) - 1)

struct reader {
	char *const *paths;
	size_t n_paths, part;
	int fd;
	long long base; /* offset in the part of data[0] */
	char *data;
	size_t len, pos, cap;
	int eof;
};

static void reader_open_part(struct reader *r)
{
	r->fd = r->part < r->n_paths ?
			open(r->paths[r->part], O_RDONLY | O_CLOEXEC) :
			-1;
	r->eof = r->fd < 0;
}

static void reader_open(struct reader *r, const struct stream *s, long long off)
{
	memset(r, 0, sizeof(*r));
	r->paths = s->paths;
	r->n_paths = s->n_paths;
	r->part = (size_t)(off >> PART_SHIFT);
	r->base = off & PART_OFF_MASK;
	r->cap = CHUNK;
	r->data = xmalloc(r->cap + 1);
	reader_open_part(r);
}

/*
 * At the end of a part, goes on with the next one from its start; a
 * partial last line of the part is dropped. Returns 0 when there is none.
 */
static int reader_next_part(struct reader *r)
{
	if (r->part + 1 >= r->n_paths)
		return 0;
	if (r->fd >= 0)
		close(r->fd);
	r->part++;
	r->base = 0;
	r->len = r->pos = 0;
	reader_open_part(r);
	return 1;
}

static void reader_close(struct reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->data);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/* The offset of the next line the reader would return. */
static long long reader_offset(const struct reader *r)
{
	return ((long long)r->part << PART_SHIFT) |
	       (r->base + (long long)r->pos);
}

/*
 * The next complete line (NUL-terminated in the reader's buffer, valid
 * until the next call) and its offset. Returns 1, or 0 at the end (a last
 * line without its newline is still being written and counts as not there).
 */
static int reader_next(struct reader *r, char **line, long long *off)
{
	for (;;) {
		char *start = r->data + r->pos;
		char *nl = memchr(start, '\n', r->len - r->pos);
		ssize_t got;

		if (nl) {
			*nl = '\0';
			*line = start;
			*off = reader_offset(r);
			r->pos = (size_t)(nl + 1 - r->data);
			return 1;
		}
		if (r->eof && reader_next_part(r))
			continue;
		if (r->eof)
			return 0;
		/* Keep the partial line, read more after it. */
		r->base += (long long)r->pos;
		memmove(r->data, start, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
		if (r->len == r->cap) {
			if (r->cap >= LINE_MAX_BYTES) {
				/* Skip an absurdly long line. */
				r->base += (long long)r->len;
				r->len = 0;
				while ((got = pread(r->fd, r->data, r->cap,
						    r->base)) > 0) {
					char *e = memchr(r->data, '\n',
							 (size_t)got);

					if (e) {
						r->base += e + 1 - r->data;
						break;
					}
					r->base += got;
				}
				continue;
			}
			r->cap *= 2;
			r->data = xrealloc(r->data, r->cap + 1);
		}
		got = pread(r->fd, r->data + r->len, r->cap - r->len,
			    r->base + (long long)r->len);
		if (got <= 0) {
			r->eof = 1;
			continue;
		}
		r->len += (size_t)got;
	}
}

/* FNV-1a, for event ids that stay the same from call to call. */
static uint32_t fnv32(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

/* Events being collected for an answer, with their strings owned. */
struct events {
	struct api_cwl_event *items;
	size_t n, cap;
	size_t bytes;
};

static void events_add(struct events *ev, const char *stream,
		       const struct line *l, long long off)
{
	struct api_cwl_event *e;

	ALLOC_GROW(ev->items, ev->n + 1, ev->cap);
	e = &ev->items[ev->n++];
	memset(e, 0, sizeof(*e));
	e->timestamp_ms = l->ts_ms;
	e->ingestion_ms = l->ts_ms;
	e->message = xstrdup(l->text);
	if (stream) {
		struct buf id = BUF_INIT;

		(void)buf_addf(&id, "%010" PRIu32 "%016lld", fnv32(stream),
			       off);
		e->event_id = buf_detach(&id, NULL);
		e->stream = stream;
	}
	ev->bytes += strlen(l->text) + EVENT_OVERHEAD;
}

static void events_release(struct events *ev)
{
	size_t i;

	for (i = 0; i < ev->n; i++) {
		free((char *)ev->items[i].message);
		free((char *)ev->items[i].event_id);
	}
	free(ev->items);
	memset(ev, 0, sizeof(*ev));
}

static int in_window(int64_t ts, int64_t start_ms, int64_t end_ms)
{
	return (start_ms < 0 || ts >= start_ms) && (end_ms < 0 || ts < end_ms);
}

/* Whether one more event of add bytes would pass a limit; the first event
 * always fits, so that a reader always moves on. */
static int full(const struct events *ev, size_t add, int limit)
{
	return (int)ev->n >= limit || (ev->n && ev->bytes + add > ANSWER_MAX);
}

/* ------------------------------------------------------ GetLogEvents */

/* "f/<offset>" or "b/<offset>". Returns 'f', 'b' or 0 when malformed. */
static int token_parse(const char *tok, long long *off)
{
	char *end;

	if ((tok[0] != 'f' && tok[0] != 'b') || tok[1] != '/' || !tok[2])
		return 0;
	errno = 0;
	*off = strtoll(tok + 2, &end, 10);
	if (*end || errno || *off < 0)
		return 0;
	return tok[0];
}

/* Forward from off: the first events that fit. */
static long long read_forward(const struct stream *s, long long off,
			      const struct api_cwl_get_req *q,
			      struct events *ev, long long *first_off)
{
	struct reader r;
	struct line l;
	char *text;
	long long at;
	long long next = off;

	*first_off = off;
	reader_open(&r, s, off);
	while (reader_next(&r, &text, &at)) {
		if (parse_line(text, &l) ||
		    !in_window(l.ts_ms, q->start_ms, q->end_ms)) {
			next = reader_offset(&r);
			continue;
		}
		if (full(ev, strlen(l.text) + EVENT_OVERHEAD, q->limit))
			break;
		if (!ev->n)
			*first_off = at;
		events_add(ev, NULL, &l, at);
		next = reader_offset(&r);
	}
	reader_close(&r);
	return next;
}

/*
 * Backward from end (-1: the end of the file): the last events before it
 * that fit, oldest first. Scans from the start, keeping a window.
 */
static long long read_backward(const struct stream *s, long long end,
			       const struct api_cwl_get_req *q,
			       struct events *ev, long long *first_off)
{
	struct reader r;
	struct line l;
	char *text;
	long long at;
	long long *offs = NULL;
	size_t offs_cap = 0;
	size_t head = 0;

	reader_open(&r, s, 0);
	while ((end < 0 || reader_offset(&r) < end) &&
	       reader_next(&r, &text, &at)) {
		if (parse_line(text, &l) ||
		    !in_window(l.ts_ms, q->start_ms, q->end_ms))
			continue;
		events_add(ev, NULL, &l, at);
		ALLOC_GROW(offs, ev->n, offs_cap);
		offs[ev->n - 1] = at;
		/* Drop the oldest while the window is too big. */
		while ((int)(ev->n - head) > q->limit ||
		       (ev->n - head > 1 && ev->bytes > ANSWER_MAX)) {
			ev->bytes -= strlen(ev->items[head].message) +
				     EVENT_OVERHEAD;
			free((char *)ev->items[head].message);
			ev->items[head].message = NULL;
			head++;
		}
		/* Keep memory to about the window, not the whole file. */
		if (head >= 4096 && head * 2 >= ev->n) {
			memmove(ev->items, ev->items + head,
				(ev->n - head) * sizeof(*ev->items));
			memmove(offs, offs + head,
				(ev->n - head) * sizeof(*offs));
			ev->n -= head;
			head = 0;
		}
	}
	if (end < 0)
		end = reader_offset(&r);
	reader_close(&r);
	*first_off = head < ev->n ? offs[head] : end;
	if (head) {
		memmove(ev->items, ev->items + head,
			(ev->n - head) * sizeof(*ev->items));
		ev->n -= head;
	}
	free(offs);
	return end;
}

static void op_get(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		   const char *body, size_t len, struct ctrl_response *resp)
{
	struct api_cwl_get_req q;
	struct stream_list l = { 0 };
	struct events ev = { 0 };
	struct buf err = BUF_INIT;
	struct buf fwd = BUF_INIT;
	struct buf bwd = BUF_INIT;
	long long off = 0, first = 0, next;
	int dir = 0;
	int ret;

	ret = api_cwl_get_req_parse(body, len, &q, &err);
	if (ret) {
		ctrl_reply_err(resp, CTRL_E_INVALID_PARAMETER, err.data);
		goto out;
	}
	if (!group_ok(q.group, resp))
		goto out;
	if (find_stream(ctx, who, q.stream, &l)) {
		ctrl_reply_err(resp, CTRL_E_LOGS_NOT_FOUND, STREAM_MISSING);
		goto out;
	}
	if (q.next_token) {
		dir = token_parse(q.next_token, &off);
		if (!dir) {
			ctrl_reply_err(resp, CTRL_E_INVALID_PARAMETER,
				       BAD_TOKEN);
			goto out;
		}
	}
	if (dir == 'f' || (!dir && q.start_from_head)) {
		next = read_forward(&l.items[0], off, &q, &ev, &first);
		(void)buf_addf(&fwd, "f/%lld", next);
		(void)buf_addf(&bwd, "b/%lld", first);
	} else {
		next = read_backward(&l.items[0], dir ? off : -1, &q, &ev,
				     &first);
		(void)buf_addf(&fwd, "f/%lld", next);
		(void)buf_addf(&bwd, "b/%lld", first);
	}
	resp->status = 200;
	buf_reset(&resp->body);
	if (api_cwl_events_build(ev.items, ev.n, fwd.data, bwd.data,
				 &resp->body))
		ctrl_reply_err_code(resp, ERR_INTERNAL,
				    "cannot encode log events");
out:
	api_cwl_get_req_release(&q);
	streams_release(&l);
	events_release(&ev);
	buf_release(&err);
	buf_release(&fwd);
	buf_release(&bwd);
}

/* --------------------------------------------------- FilterLogEvents */

/*
 * The part of the filter pattern syntax that plain text logs need: terms
 * that must all occur, "quoted phrases", ?terms of which one must occur,
 * and -terms that must not. JSON and space-delimited patterns are refused.
 */
struct pattern {
	char **terms;
	char *kinds; /* '+', '?' or '-' per term */
	size_t n;
	size_t terms_alloc, kinds_alloc; /* allocated counts */
};

static void pattern_release(struct pattern *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->terms[i]);
	free(p->terms);
	free(p->kinds);
	memset(p, 0, sizeof(*p));
}

static int pattern_parse(const char *s, struct pattern *p, struct buf *err)
{
	memset(p, 0, sizeof(*p));
	while (s && *s) {
		char kind = '+';
		const char *end;
		size_t n;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		if (*s == '{' || *s == '[') {
			(void)buf_adds(err, "Invalid filter pattern: JSON and "
					    "space-delimited patterns are not "
					    "supported here.");
			pattern_release(p);
			return ERR_INVALID;
		}
		if (*s == '?' || *s == '-')
			kind = *s++;
		if (*s == '"') {
			end = strchr(s + 1, '"');
			if (!end) {
				(void)buf_adds(err, "Invalid filter pattern: "
						    "unbalanced quote.");
				pattern_release(p);
				return ERR_INVALID;
			}
			s++;
			n = (size_t)(end - s);
			end++;
		} else {
			n = strcspn(s, " \t");
			end = s + n;
		}
		if (n) {
			ALLOC_GROW(p->terms, p->n + 1, p->terms_alloc);
			ALLOC_GROW(p->kinds, p->n + 1, p->kinds_alloc);
			p->terms[p->n] = xstrndup(s, n);
			p->kinds[p->n] = kind;
			p->n++;
		}
		s = end;
	}
	return 0;
}

static int pattern_match(const struct pattern *p, const char *text)
{
	int any_wanted = 0, any_found = 0;
	size_t i;

	for (i = 0; i < p->n; i++) {
		int found = strstr(text, p->terms[i]) != NULL;

		if (p->kinds[i] == '+' && !found)
			return 0;
		if (p->kinds[i] == '-' && found)
			return 0;
		if (p->kinds[i] == '?') {
			any_wanted = 1;
			any_found |= found;
		}
	}
	return !any_wanted || any_found;
}

/*
 * A FilterLogEvents token holds where each stream stopped:
 * "v1;<stream>=<offset>;..." (stream names hold no ';' or '=').
 */
static long long token_offset(const char *tok, const char *stream)
{
	size_t n = strlen(stream);
	const char *p = tok;

	while ((p = strchr(p, ';'))) {
		p++;
		if (!strncmp(p, stream, n) && p[n] == '=')
			return strtoll(p + n + 1, NULL, 10);
	}
	return 0;
}

/* One stream being merged: its reader and its next matching event. */
struct cursor {
	struct reader r;
	int have; /* head holds an event */
	struct line head;
	long long head_off;
};

static void cursor_advance(struct cursor *c, const struct api_cwl_filter_req *q,
			   const struct pattern *p)
{
	char *text;
	long long at;

	c->have = 0;
	while (reader_next(&c->r, &text, &at)) {
		if (parse_line(text, &c->head) ||
		    !in_window(c->head.ts_ms, q->start_ms, q->end_ms) ||
		    !pattern_match(p, c->head.text))
			continue;
		c->have = 1;
		c->head_off = at;
		return;
	}
}

static void filter_run(struct stream_list *l,
		       const struct api_cwl_filter_req *q,
		       const struct pattern *p, struct ctrl_response *resp)
{
	struct cursor *cs = xcalloc(l->n + 1, sizeof(*cs));
	struct api_cwl_searched *searched =
		xcalloc(l->n + 1, sizeof(*searched));
	struct events ev = { 0 };
	struct buf token = BUF_INIT;
	int more = 0;
	size_t i;

	for (i = 0; i < l->n; i++) {
		reader_open(&cs[i].r, &l->items[i],
			    q->next_token ? token_offset(q->next_token,
							 l->items[i].full) :
					    0);
		cursor_advance(&cs[i], q, p);
	}
	for (;;) {
		size_t best = l->n;

		for (i = 0; i < l->n; i++)
			if (cs[i].have &&
			    (best == l->n ||
			     cs[i].head.ts_ms < cs[best].head.ts_ms))
				best = i;
		if (best == l->n)
			break;
		if (full(&ev, strlen(cs[best].head.text) + EVENT_OVERHEAD,
			 q->limit)) {
			more = 1;
			break;
		}
		events_add(&ev, l->items[best].full, &cs[best].head,
			   cs[best].head_off);
		cursor_advance(&cs[best], q, p);
	}
	if (more)
		(void)buf_adds(&token, "v1");
	for (i = 0; i < l->n; i++) {
		searched[i].name = l->items[i].full;
		searched[i].completely = !cs[i].have;
		if (more)
			(void)buf_addf(&token, ";%s=%lld", l->items[i].full,
				       cs[i].have ? cs[i].head_off :
						    reader_offset(&cs[i].r));
		reader_close(&cs[i].r);
	}
	resp->status = 200;
	buf_reset(&resp->body);
	if (api_cwl_filtered_build(ev.items, ev.n, searched, l->n,
				   more ? token.data : NULL, &resp->body))
		ctrl_reply_err_code(resp, ERR_INTERNAL,
				    "cannot encode log events");
	events_release(&ev);
	buf_release(&token);
	free(searched);
	free(cs);
}

static void op_filter(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      const char *body, size_t len, struct ctrl_response *resp)
{
	struct api_cwl_filter_req q;
	struct stream_list l = { 0 };
	struct pattern p = { 0 };
	struct buf err = BUF_INIT;
	size_t i;
	int ret;

	ret = api_cwl_filter_req_parse(body, len, &q, &err);
	if (!ret && q.next_token && strncmp(q.next_token, "v1", 2)) {
		(void)buf_adds(&err, BAD_TOKEN);
		ret = ERR_INVALID;
	}
	if (!ret)
		ret = pattern_parse(q.pattern, &p, &err);
	if (ret) {
		ctrl_reply_err(resp, CTRL_E_INVALID_PARAMETER, err.data);
		goto out;
	}
	if (!group_ok(q.group, resp))
		goto out;
	if (q.streams) {
		/* Named streams that do not exist are simply not searched. */
		for (i = 0; i < q.n_streams; i++) {
			struct stream_list one;
			size_t k;

			if (find_stream(ctx, who, q.streams[i], &one))
				continue;
			for (k = 0; k < l.n; k++)
				if (!strcmp(l.items[k].full, one.items[0].full))
					break;
			if (k == l.n) {
				ALLOC_GROW(l.items, l.n + 1, l.cap);
				l.items[l.n++] = one.items[0];
				one.items[0] = one.items[--one.n];
			}
			streams_release(&one);
		}
		if (l.n > 1)
			qsort(l.items, l.n, sizeof(*l.items), by_name);
	} else if (collect_streams(ctx, who, q.prefix, NULL, &l, &err)) {
		ctrl_reply_err_code(resp, ERR_DB, err.data);
		goto out;
	}
	filter_run(&l, &q, &p, resp);
out:
	api_cwl_filter_req_release(&q);
	streams_release(&l);
	pattern_release(&p);
	buf_release(&err);
}

/* ------------------------------------------------ DescribeLogStreams */

/* Size, times of the first and last events, last write of a file. */
static void file_stats(const char *path, struct api_cwl_stream *out)
{
	struct stat st;
	char *data = xmalloc(CHUNK + 1);
	struct line l;
	ssize_t got;
	char *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st))
		goto out;
	out->stored_bytes = (long long)st.st_size;
	out->last_ingestion_ms = (int64_t)st.st_mtim.tv_sec * 1000 +
				 st.st_mtim.tv_nsec / 1000000;
	got = pread(fd, data, CHUNK, 0);
	if (got <= 0)
		goto out;
	data[got] = '\0';
	p = strchr(data, '\n');
	if (!p)
		goto out;
	*p = '\0';
	if (parse_line(data, &l))
		goto out;
	out->first_event_ms = l.ts_ms;
	out->last_event_ms = l.ts_ms;
	/* The last complete line lies within the file's last chunk. */
	got = pread(fd, data, CHUNK,
		    st.st_size > CHUNK ? st.st_size - CHUNK : 0);
	if (got <= 1)
		goto out;
	data[got] = '\0';
	if (data[got - 1] == '\n')
		data[--got] = '\0';
	p = strrchr(data, '\n');
	if (p && !parse_line(p + 1, &l))
		out->last_event_ms = l.ts_ms;
	else if (!p && st.st_size <= CHUNK && !parse_line(data, &l))
		out->last_event_ms = l.ts_ms;
out:
	if (fd >= 0)
		close(fd);
	free(data);
}

/* The same of a stream: the sum of its parts' sizes, the first event of
 * its first part that has one, the last of its last. */
static void stream_stats(const struct stream *st, struct api_cwl_stream *out)
{
	size_t i;

	for (i = 0; i < st->n_paths; i++) {
		struct api_cwl_stream one;

		memset(&one, 0, sizeof(one));
		file_stats(st->paths[i], &one);
		out->stored_bytes += one.stored_bytes;
		if (one.last_ingestion_ms > out->last_ingestion_ms)
			out->last_ingestion_ms = one.last_ingestion_ms;
		if (!one.first_event_ms && !one.last_event_ms)
			continue;
		if (!out->first_event_ms)
			out->first_event_ms = one.first_event_ms;
		out->last_event_ms = one.last_event_ms;
	}
}

struct ranked {
	struct api_cwl_stream s;
	char *arn;
};

static int cmp_last_event(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->s.last_event_ms != y->s.last_event_ms)
		return x->s.last_event_ms < y->s.last_event_ms ? -1 : 1;
	return strcmp(x->s.name, y->s.name);
}

static void op_describe(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			const char *body, size_t len,
			struct ctrl_response *resp)
{
	struct api_cwl_describe_req q;
	struct stream_list l = { 0 };
	struct ranked *rk = NULL;
	struct api_cwl_stream *page = NULL;
	struct buf err = BUF_INIT;
	struct buf next = BUF_INIT;
	long long start = 0;
	size_t i, n_page = 0;
	int ret;

	ret = api_cwl_describe_req_parse(body, len, &q, &err);
	if (!ret && q.next_token &&
	    (strncmp(q.next_token, "i/", 2) ||
	     (start = strtoll(q.next_token + 2, NULL, 10)) < 0)) {
		(void)buf_adds(&err, BAD_TOKEN);
		ret = ERR_INVALID;
	}
	if (ret) {
		ctrl_reply_err(resp, CTRL_E_INVALID_PARAMETER, err.data);
		goto out;
	}
	if (!group_ok(q.group, resp))
		goto out;
	if (collect_streams(ctx, who, q.prefix, NULL, &l, &err)) {
		ctrl_reply_err_code(resp, ERR_DB, err.data);
		goto out;
	}
	rk = xcalloc(l.n + 1, sizeof(*rk));
	for (i = 0; i < l.n; i++) {
		struct buf arn = BUF_INIT;

		rk[i].s.name = l.items[i].full;
		rk[i].s.creation_ms = l.items[i].created_ms;
		(void)buf_addf(&arn,
			       "arn:aws:logs:%s:%s:log-group:%s:log-stream:%s",
			       ctx->cfg.region, ctx->cfg.account_id,
			       CTRL_CWLOGS_GROUP, l.items[i].full);
		rk[i].arn = buf_detach(&arn, NULL);
		rk[i].s.arn = rk[i].arn;
		/* Ordering by time needs every stream's times. */
		if (q.by_last_event)
			stream_stats(&l.items[i], &rk[i].s);
	}
	if (q.by_last_event && l.n > 1)
		qsort(rk, l.n, sizeof(*rk), cmp_last_event);
	page = xcalloc((size_t)q.limit + 1, sizeof(*page));
	for (i = (size_t)start; i < l.n && n_page < (size_t)q.limit; i++) {
		size_t k = q.descending ? l.n - 1 - i : i;

		page[n_page] = rk[k].s;
		if (!q.by_last_event)
			stream_stats(&l.items[k], &page[n_page]);
		n_page++;
	}
	if (i < l.n)
		(void)buf_addf(&next, "i/%zu", i);
	resp->status = 200;
	buf_reset(&resp->body);
	if (api_cwl_streams_build(page, n_page, next.len ? next.data : NULL,
				  &resp->body))
		ctrl_reply_err_code(resp, ERR_INTERNAL,
				    "cannot encode log streams");
out:
	for (i = 0; rk && i < l.n; i++)
		free(rk[i].arn);
	free(rk);
	free(page);
	api_cwl_describe_req_release(&q);
	streams_release(&l);
	buf_release(&err);
	buf_release(&next);
}

/* The CloudWatch Logs operations, by X-Amz-Target. */
static const struct ctrl_route rows[] = {
	CTRL_ROUTE_OP("Logs_20140328.DescribeLogStreams", op_describe),
	CTRL_ROUTE_OP("Logs_20140328.GetLogEvents", op_get),
	CTRL_ROUTE_OP("Logs_20140328.FilterLogEvents", op_filter),
};

const struct ctrl_route_block ctrl_cwlogs_routes = CTRL_ROUTE_BLOCK(rows);
