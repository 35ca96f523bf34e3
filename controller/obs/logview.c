#define LOG_TAG "ctrl"

/*
 * The log views of a job (docs/web.md): its streams labelled by attempt
 * and host, a search over every stream with the lines around each match,
 * the line to jump to when a rank failed, and the whole log as text.
 * Every read is bounded: a search scans at most SCAN_MAX bytes and returns
 * at most MATCH_MAX matches, a download is at most DOWNLOAD_MAX bytes.
 *
 * A search runs on an I/O worker (controller/iopool.h) with its
 * connection suspended, never on an HTTP thread, and at most SEARCH_SLOTS
 * at once, SEARCH_SLOTS_OWNER of them on the jobs of one owner (more are
 * answered 429 at once): the threads that answer agents' heartbeats are
 * never the ones scanning, and one user cannot keep every other out. Each
 * search stops at SEARCH_MS, when the client has gone, when the controller
 * stops, or when its regex hit the matcher's bounds (common/bregex.h: 20,000
 * steps from each start position, the first SEARCH_SUBJECT_MAX bytes of a line)
 * on SEARCH_LIMIT_HITS lines; what it found by then is answered with
 * "truncated": true (a regex that only hit the bounds is refused, 400).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <microhttpd.h>

#include "api/logs_json.h"
#include "controller/ctrl.h"
#include "controller/request.h"
#include "controller/iopool.h"
#include "controller/obs/logs.h"
#include "controller/obs/logview.h"
#include "controller/reply.h"
#include "db/db.h"
#include "db/run.h"
#include "common/bregex.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define SCAN_MAX (256LL << 20)
#define MATCH_MAX 500
#define MATCH_DEFAULT 100
#define CONTEXT_MAX 10
#define DOWNLOAD_MAX (64LL << 20)
#define LINE_MAX_BYTES (64 << 10)
#define QUERY_MAX 256
#define SEARCH_SLOTS 4
#define SEARCH_SLOTS_OWNER 2
#define SEARCH_MS 10000
#define SEARCH_SUBJECT_MAX (4 << 10)
#define SEARCH_LIMIT_HITS 20
#define SEARCH_CHECK_LINES 16

/* Words that make a line an error line (level=error), any case. */
static const char *const error_words[] = { "error",     "exception",
					   "traceback", "fatal",
					   "killed",    "failed" };

struct streams {
	struct api_log_stream_info *s;
	char **names; /* owned strings behind s[i].stream and .host */
	char **hosts;
	size_t n;
};

static void streams_release(struct streams *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->names[i]);
		free(l->hosts[i]);
	}
	free(l->s);
	free(l->names);
	free(l->hosts);
	memset(l, 0, sizeof(*l));
}

/* The job's streams with their attempt, host and size. */
static int streams_load(struct ctrl_ctx *ctx, const char *job,
			struct streams *l, struct buf *err)
{
	struct db_log_stream *rows = NULL;
	struct db_job j;
	int64_t *epochs = NULL;
	int attempts = 0;
	size_t n = 0, i;
	int a, ret;

	memset(l, 0, sizeof(*l));
	ret = db_job_get(ctx->db, job, &j, err);
	if (ret)
		return ret;
	attempts = j.attempt;
	db_job_release(&j);
	ret = db_log_streams(ctx->db, job, &rows, &n, err);
	if (ret)
		return ret;
	epochs = xcalloc((size_t)attempts + 1, sizeof(*epochs));
	for (a = 1; a <= attempts; a++)
		epochs[a] = ctrl_logs_stream_epoch(ctx, job, a, NULL);
	l->s = xcalloc(n + 1, sizeof(*l->s));
	l->names = xcalloc(n + 1, sizeof(*l->names));
	l->hosts = xcalloc(n + 1, sizeof(*l->hosts));
	for (i = 0; i < n; i++) {
		struct api_log_stream_info *s = &l->s[l->n];
		const char *dash = strrchr(rows[i].name, '-');
		struct buf path = BUF_INIT;
		struct stat st;
		long long sec = dash ? atoll(dash + 1) : -1;

		l->names[l->n] = xstrdup(rows[i].name);
		l->hosts[l->n] = xstrndup(rows[i].name,
					  dash ? (size_t)(dash - rows[i].name) :
						 strlen(rows[i].name));
		s->stream = l->names[l->n];
		s->host = l->hosts[l->n];
		s->start_ms = rows[i].created_ms;
		for (a = 1; a <= attempts; a++)
			if (epochs[a] == sec)
				s->attempt = a;
		(void)ctrl_logs_path(ctx, job, rows[i].name, &path);
		s->bytes = stat(path.data, &st) ? 0 : (long long)st.st_size;
		buf_release(&path);
		l->n++;
	}
	free(epochs);
	db_log_streams_free(rows, n);
	return 0;
}

static const char *arg(struct MHD_Connection *conn, const char *key)
{
	return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
}

void ctrl_logview_streams(struct ctrl_ctx *ctx, const char *job,
			  struct ctrl_response *resp)
{
	struct streams l;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	int ret = streams_load(ctx, job, &l, &err);

	if (!ret)
		ret = api_log_streams_build(l.s, l.n, &out) ? ERR_TOOBIG : 0;
	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		ctrl_reply_json(resp, &out);
	streams_release(&l);
	buf_release(&err);
	buf_release(&out);
}

/* One stored line: "ms\tO|E\trank\ttext". Returns 0, or -1 when malformed. */
static int line_parse(char *p, struct api_log_event *e)
{
	char *f1 = strchr(p, '\t');
	char *f2 = f1 ? strchr(f1 + 1, '\t') : NULL;
	char *f3 = f2 ? strchr(f2 + 1, '\t') : NULL;

	if (!f3)
		return -1;
	e->timestamp_ms = strtoll(p, NULL, 10);
	e->is_stderr = f1[1] == 'E';
	e->rank = atoi(f2 + 1);
	e->message = f3 + 1;
	return 0;
}

/* Reads the next line of f into buf (at most LINE_MAX_BYTES; the rest of
 * a longer line is skipped). Returns its length with the newline, 0 at
 * the end. */
static size_t line_next(FILE *f, char *buf)
{
	size_t n;
	int c;

	if (!fgets(buf, LINE_MAX_BYTES, f))
		return 0;
	n = strlen(buf);
	if (n && buf[n - 1] == '\n') {
		buf[n - 1] = '\0';
		return n;
	}
	while ((c = fgetc(f)) != EOF && c != '\n')
		n++;
	return n + 1;
}

static int contains_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return 1;
	return !n;
}

/* Why a search stopped early. */
enum search_stop {
	SEARCH_RUNS = 0,
	SEARCH_DEADLINE, /* SEARCH_MS ran out */
	SEARCH_GONE,	 /* the client closed its connection */
	SEARCH_STOPPING, /* the controller is stopping */
	SEARCH_COSTLY,	 /* the regex kept hitting its bounds */
};

/* The state a scan checks between lines (written by the scan only). */
struct search_ctl {
	struct ctrl_ctx *ctx;
	int fd;		     /* the client's socket, -1: none */
	int64_t deadline_ms; /* monotonic */
	int limit_hits;
	unsigned lines;
	enum search_stop stop;
};

struct query {
	const char *text;  /* substring, any case (NULL: every line) */
	struct bregex *re; /* regex=1 */
	struct search_ctl *ctl;
	const char *host; /* algo-N or NULL */
	int attempt;	  /* 0: any */
	int stderr_only;  /* level=stderr */
	int errors_only;  /* level=error */
	int rank;	  /* -1: any */
	int context;
	int limit;
};

static int query_match(const struct query *q, const struct api_log_event *e)
{
	size_t i;
	int hit = 0;

	if (q->stderr_only && !e->is_stderr)
		return 0;
	if (q->rank >= 0 && e->rank != q->rank)
		return 0;
	if (q->errors_only) {
		for (i = 0; i < sizeof(error_words) / sizeof(*error_words); i++)
			hit |= contains_ci(e->message, error_words[i]);
		if (!hit)
			return 0;
	}
	if (q->re) {
		int rc = bregex_match(q->re, e->message, SIZE_MAX, NULL, NULL);

		if (rc == BREGEX_LIMIT && q->ctl)
			q->ctl->limit_hits++;
		return rc == 1;
	}
	return !q->text || contains_ci(e->message, q->text);
}

/* A match in progress, with its context. */
struct found {
	struct api_log_match m;
	char *text;
	struct api_log_event *before;
	struct api_log_event *after;
};

static void event_copy(struct api_log_event *dst,
		       const struct api_log_event *src)
{
	*dst = *src;
	dst->message = xstrdup(src->message);
}

static void found_free_one(struct found *f)
{
	size_t k;

	free(f->m.line.message);
	for (k = 0; k < f->m.n_before; k++)
		free(f->before[k].message);
	for (k = 0; k < f->m.n_after; k++)
		free(f->after[k].message);
	free(f->before);
	free(f->after);
}

static void found_release(struct found *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		found_free_one(&f[i]);
	free(f);
}

/* Keeps only found[keep], as found[0]. Returns the new count. */
static size_t found_keep(struct found *f, size_t n, size_t keep)
{
	struct found k = f[keep];
	size_t i;

	for (i = 0; i < n; i++)
		if (i != keep)
			found_free_one(&f[i]);
	f[0] = k;
	return n ? 1 : 0;
}

/* The client closed its side: a read would see the end, not data. */
static int client_gone(int fd)
{
	char c;
	ssize_t n;

	if (fd < 0)
		return 0;
	n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			  errno != EINTR);
}

/*
 * Whether the scan must stop now: checked before each line (one line may
 * cost a regex up to some 30 ms), the client's socket every
 * SEARCH_CHECK_LINES lines.
 */
static int search_stopped(struct search_ctl *c)
{
	if (!c)
		return 0;
	if (c->stop)
		return 1;
	if (c->limit_hits >= SEARCH_LIMIT_HITS)
		c->stop = SEARCH_COSTLY;
	else if (__atomic_load_n(&c->ctx->stopping, __ATOMIC_RELAXED))
		c->stop = SEARCH_STOPPING;
	else if (time_mono_ms() > c->deadline_ms)
		c->stop = SEARCH_DEADLINE;
	else if (!(c->lines++ % SEARCH_CHECK_LINES) && client_gone(c->fd))
		c->stop = SEARCH_GONE;
	return c->stop != SEARCH_RUNS;
}

/*
 * Scans one stream for q, appending matches to *out (at most q->limit in
 * all). *budget is the bytes left to scan; 1 is returned when it ran out.
 */
static int scan_stream(const char *path, const struct api_log_stream_info *s,
		       const struct query *q, struct found **out, size_t *n,
		       size_t *cap, long long *budget)
{
	FILE *f = fopen(path, "re");
	char *buf;
	struct api_log_event ring[CONTEXT_MAX];
	size_t ring_n = 0, ring_at = 0;
	size_t open_from = *n; /* matches still collecting after-context */
	long long off = 0;
	size_t len;
	int cut = 0;
	size_t i;

	if (!f)
		return 0;
	memset(ring, 0, sizeof(ring));
	buf = xmalloc(LINE_MAX_BYTES);
	while ((len = line_next(f, buf))) {
		struct api_log_event e;
		long long line_off = off;

		off += (long long)len;
		*budget -= (long long)len;
		if (*budget < 0 || search_stopped(q->ctl)) {
			cut = 1;
			break;
		}
		if (line_parse(buf, &e))
			continue;
		/* After-context of the matches before this line. */
		for (i = open_from; i < *n; i++) {
			struct found *fd = &(*out)[i];

			if ((int)fd->m.n_after < q->context)
				event_copy(&fd->after[fd->m.n_after++], &e);
			else if (i == open_from)
				open_from++;
		}
		if ((int)*n < q->limit && query_match(q, &e)) {
			struct found *fd;

			ALLOC_GROW(*out, *n + 1, *cap);
			fd = &(*out)[(*n)++];
			memset(fd, 0, sizeof(*fd));
			fd->m.stream = s;
			fd->m.offset = line_off;
			event_copy(&fd->m.line, &e);
			fd->before = xcalloc((size_t)q->context + 1,
					     sizeof(*fd->before));
			fd->after = xcalloc((size_t)q->context + 1,
					    sizeof(*fd->after));
			for (i = 0; i < ring_n; i++)
				event_copy(&fd->before[fd->m.n_before++],
					   &ring[(ring_at + i) % ring_n]);
		} else if ((int)*n >= q->limit && open_from == *n) {
			break;
		}
		if (q->context) {
			/* The ring keeps the last q->context lines. */
			if ((int)ring_n < q->context) {
				event_copy(&ring[ring_n++], &e);
			} else {
				free(ring[ring_at].message);
				event_copy(&ring[ring_at], &e);
				ring_at = (ring_at + 1) % ring_n;
			}
		}
	}
	for (i = 0; i < ring_n; i++)
		free(ring[i].message);
	free(buf);
	fclose(f);
	return cut;
}

/* Scans the streams q selects (host, attempt) until q->limit matches. */
static int scan_all(struct ctrl_ctx *ctx, const char *job,
		    const struct streams *l, const struct query *q,
		    struct found **found, size_t *n, size_t *cap,
		    long long *budget)
{
	size_t i;
	int cut = 0;

	for (i = 0; i < l->n && !cut && (int)*n < q->limit; i++) {
		struct buf path = BUF_INIT;

		if ((q->host && *q->host && strcmp(q->host, l->s[i].host)) ||
		    (q->attempt && q->attempt != l->s[i].attempt))
			continue;
		(void)ctrl_logs_path(ctx, job, l->s[i].stream, &path);
		cut = scan_stream(path.data, &l->s[i], q, found, n, cap,
				  budget);
		buf_release(&path);
	}
	return cut;
}

static int int_arg(const char *s, int lo, int hi, int dflt, int *out)
{
	char *end;
	long v;

	if (!s || !*s) {
		*out = dflt;
		return 0;
	}
	v = strtol(s, &end, 10);
	if (*end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

/*
 * For a failed job: the stream and rank (on its host) that failed, from
 * its FailureReason ("... algo-N (host H) RANK G (local rank R) ...",
 * "RANK G" alone when the host runs one, "rank R" as older controllers
 * wrote it). Returns 0, or -1 when it names none.
 */
static int failing_rank(struct ctrl_ctx *ctx, const char *job, char *algo,
			size_t size, int *rank, int *attempt)
{
	struct buf err = BUF_INIT;
	struct db_job j;
	const char *p;
	int ret = -1;

	if (db_job_get(ctx->db, job, &j, &err)) {
		buf_release(&err);
		return -1;
	}
	p = j.failure_reason ? strstr(j.failure_reason, "algo-") : NULL;
	if (p) {
		const char *local = strstr(p, "(local rank ");
		const char *global = strstr(p, ") RANK ");
		const char *r = strstr(p, " rank ");

		snprintf(algo, size, "algo-%d", atoi(p + 5));
		*rank = local  ? atoi(local + 12) :
			global ? 0 :
			r      ? atoi(r + 6) :
				 -1;
		*attempt = j.attempt;
		ret = 0;
	}
	db_job_release(&j);
	buf_release(&err);
	return ret;
}

/*
 * A search handed to a worker: the checked query (strings owned), the
 * answer the worker leaves, and whether it is there.
 */
struct ctrl_logsearch {
	struct ctrl_ctx *ctx;
	char *job;
	char *owner; /* of the job, holding one of its SEARCH_SLOTS_OWNER */
	char *text;
	char *host;
	int first_error;
	struct query q;
	struct search_ctl ctl;
	struct ctrl_response resp;
	int slot; /* holds one of SEARCH_SLOTS */
	int done;
};

/* The searches running on each owner's jobs (at most SEARCH_SLOTS). */
static pthread_mutex_t owners_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char *owner;
	int n;
} owners[SEARCH_SLOTS];

/* Takes one of owner's places; 0, or -1 when it holds them all. */
static int owner_take(const char *owner)
{
	int i, free_at = -1, ret = -1;

	pthread_mutex_lock(&owners_lock);
	for (i = 0; i < SEARCH_SLOTS; i++) {
		if (owners[i].owner && !strcmp(owners[i].owner, owner))
			break;
		if (!owners[i].owner && free_at < 0)
			free_at = i;
	}
	if (i == SEARCH_SLOTS && free_at >= 0) {
		i = free_at;
		owners[i].owner = xstrdup(owner);
	}
	if (i < SEARCH_SLOTS && owners[i].n < SEARCH_SLOTS_OWNER) {
		owners[i].n++;
		ret = 0;
	}
	pthread_mutex_unlock(&owners_lock);
	return ret;
}

static void owner_put(const char *owner)
{
	int i;

	pthread_mutex_lock(&owners_lock);
	for (i = 0; i < SEARCH_SLOTS; i++)
		if (owners[i].owner && !strcmp(owners[i].owner, owner) &&
		    !--owners[i].n) {
			free(owners[i].owner);
			owners[i].owner = NULL;
		}
	pthread_mutex_unlock(&owners_lock);
}

/* Gives back the search's places, once. */
static void slot_put(struct ctrl_logsearch *s)
{
	if (!s->slot)
		return;
	__atomic_sub_fetch(&s->ctx->logsearch_running, 1, __ATOMIC_RELAXED);
	if (s->owner)
		owner_put(s->owner);
	s->slot = 0;
}

void ctrl_logsearch_free(struct ctrl_logsearch *s)
{
	if (!s)
		return;
	slot_put(s);
	free(s->owner);
	bregex_free(s->q.re);
	buf_release(&s->resp.body);
	free(s->job);
	free(s->text);
	free(s->host);
	free(s);
}

/* The scan itself, on a worker; leaves its answer in s->resp. */
static void search_run(void *arg)
{
	struct ctrl_logsearch *s = arg;
	struct ctrl_ctx *ctx = s->ctx;
	struct query *q = &s->q;
	struct ctrl_response *resp = &s->resp;
	struct streams l;
	struct found *found = NULL;
	struct api_log_match *m = NULL;
	size_t n = 0, cap = 0, i;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	long long budget = SCAN_MAX;
	char algo[32] = "";
	int cut = 0;
	int ret;

	memset(&l, 0, sizeof(l));
	if (s->first_error) {
		/* The failing rank's first line on stderr in its last
		 * attempt; without one, its last lines. */
		if (failing_rank(ctx, s->job, algo, sizeof(algo), &q->rank,
				 &q->attempt)) {
			(void)api_log_matches_build(NULL, 0, 0, &out);
			ctrl_reply_json(resp, &out);
			goto out;
		}
		q->host = algo;
		q->stderr_only = 1;
		q->limit = 1;
		q->text = NULL;
		bregex_free(q->re);
		q->re = NULL;
	}
	ret = streams_load(ctx, s->job, &l, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		goto out;
	}
	cut = scan_all(ctx, s->job, &l, q, &found, &n, &cap, &budget);
	if (s->first_error && !n && algo[0] && !s->ctl.stop) {
		/* No stderr line: the first of the rank's last 20 lines. */
		q->stderr_only = 0;
		q->limit = MATCH_MAX;
		cut = scan_all(ctx, s->job, &l, q, &found, &n, &cap, &budget);
		n = found_keep(found, n, n > 20 ? n - 20 : 0);
	}
	if (s->ctl.stop == SEARCH_COSTLY && !n) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION,
			       "q: the regular expression is too costly: it "
			       "hit the matcher's bounds on 20 lines; "
			       "simplify it");
		goto out;
	}
	if (s->ctl.stop && s->ctl.stop != SEARCH_COSTLY)
		log_info("log search of job '%s' stopped early (%s)", s->job,
			 s->ctl.stop == SEARCH_DEADLINE ? "time budget spent" :
			 s->ctl.stop == SEARCH_GONE	? "the client left" :
							  "shutting down");
	m = xcalloc(n + 1, sizeof(*m));
	for (i = 0; i < n; i++) {
		m[i] = found[i].m;
		m[i].before = found[i].before;
		m[i].after = found[i].after;
	}
	if (api_log_matches_build(m, n, cut, &out))
		ctrl_reply_err(resp, CTRL_E_INTERNAL, "cannot encode matches");
	else
		ctrl_reply_json(resp, &out);
out:
	free(m);
	found_release(found, n);
	streams_release(&l);
	buf_release(&err);
	buf_release(&out);
	/* The slot is free once the scan is: the answer is only sent. */
	slot_put(s);
	s->done = 1;
}

/* Moves the worker's answer into resp. */
static void search_answer(struct ctrl_logsearch *s, struct ctrl_response *resp)
{
	buf_release(&resp->body);
	*resp = s->resp;
	buf_init(&s->resp.body, 0);
}

/*
 * A new search of job from the request's arguments (q, regex, level,
 * first_error, host, attempt, context, limit), or NULL with resp filled
 * when they are not valid.
 */
static struct ctrl_logsearch *search_new(struct ctrl_ctx *ctx,
					 struct MHD_Connection *conn,
					 const char *job,
					 struct ctrl_response *resp)
{
	const char *text = arg(conn, "q");
	const char *regex = arg(conn, "regex");
	const char *level = arg(conn, "level");
	const char *first_error = arg(conn, "first_error");
	const char *host = arg(conn, "host");
	struct ctrl_logsearch *s = xcalloc(1, sizeof(*s));
	struct query *q = &s->q;
	struct buf err = BUF_INIT;

	s->ctx = ctx;
	s->job = xstrdup(job);
	s->text = text && *text ? xstrdup(text) : NULL;
	s->host = host ? xstrdup(host) : NULL;
	s->first_error = first_error && !strcmp(first_error, "1");
	buf_init(&s->resp.body, 0);
	q->text = s->text;
	q->host = s->host;
	q->rank = -1;
	q->ctl = &s->ctl;
	if ((q->text && strlen(q->text) > QUERY_MAX) ||
	    int_arg(arg(conn, "attempt"), 0, 1000000, 0, &q->attempt) ||
	    int_arg(arg(conn, "context"), 0, CONTEXT_MAX, 2, &q->context) ||
	    int_arg(arg(conn, "limit"), 1, MATCH_MAX, MATCH_DEFAULT,
		    &q->limit) ||
	    (level && *level && strcmp(level, "stderr") &&
	     strcmp(level, "error"))) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION,
			       "q at most 256 bytes, attempt a number, context "
			       "0..10, limit 1..500, level stderr or error");
		goto fail;
	}
	q->stderr_only = level && !strcmp(level, "stderr");
	q->errors_only = level && !strcmp(level, "error");
	if (!s->first_error && regex && !strcmp(regex, "1") && q->text) {
		struct bregex_limits lim = BREGEX_LIMITS_INIT;

		lim.subject_max = SEARCH_SUBJECT_MAX;
		if (bregex_compile(q->text, BREGEX_CASELESS, &lim, &q->re,
				   &err)) {
			struct buf msg = BUF_INIT;

			(void)buf_addf(&msg,
				       "q is not a valid regular "
				       "expression: %s",
				       err.data);
			ctrl_reply_err(resp, CTRL_E_VALIDATION, msg.data);
			buf_release(&msg);
			goto fail;
		}
	}
	buf_release(&err);
	return s;
fail:
	ctrl_logsearch_free(s);
	buf_release(&err);
	return NULL;
}

/*
 * Takes a search slot and one of the job owner's for s: 0, or -1 with
 * resp filled (429) when either is taken.
 */
static int search_admit(struct ctrl_ctx *ctx, struct ctrl_logsearch *s,
			struct ctrl_response *resp, struct buf *err)
{
	if (__atomic_add_fetch(&ctx->logsearch_running, 1, __ATOMIC_RELAXED) >
	    SEARCH_SLOTS) {
		__atomic_sub_fetch(&ctx->logsearch_running, 1,
				   __ATOMIC_RELAXED);
		ctrl_reply_error(resp, 429, "ThrottlingException",
				 "too many log searches are running; try "
				 "again in a few seconds");
		return -1;
	}
	s->slot = 1;
	(void)db_job_owner(ctx->db, s->job, &s->owner, err);
	if (!s->owner)
		s->owner = xstrdup("");
	if (owner_take(s->owner)) {
		free(s->owner);
		s->owner = NULL;
		ctrl_reply_error(resp, 429, "ThrottlingException",
				 "this user's jobs already have their share "
				 "of log searches running; try again in a "
				 "few seconds");
		return -1;
	}
	return 0;
}

enum ctrl_route_result ctrl_logview_search(struct ctrl_ctx *ctx,
					   struct MHD_Connection *conn,
					   const char *job,
					   struct ctrl_logsearch **state,
					   struct ctrl_response *resp)
{
	const union MHD_ConnectionInfo *ci;
	struct ctrl_logsearch *s = *state;
	struct buf err = BUF_INIT;

	if (s) {
		/* Resumed: the worker is done with it. */
		if (s->done)
			search_answer(s, resp);
		else
			ctrl_reply_err(resp, CTRL_E_INTERNAL,
				       "the log search did not finish");
		return CTRL_ROUTE_DONE;
	}
	s = search_new(ctx, conn, job, resp);
	if (!s)
		return CTRL_ROUTE_DONE;
	if (search_admit(ctx, s, resp, &err))
		goto done;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	s->ctl.ctx = ctx;
	s->ctl.fd = ci ? ci->connect_fd : -1;
	s->ctl.deadline_ms = time_mono_ms() + SEARCH_MS;
	*state = s;
	if (!ctrl_iopool_run(ctx->iopool, conn, search_run, s)) {
		buf_release(&err);
		return CTRL_ROUTE_SUSPENDED; /* resumed when it is done */
	}
	/* No pool (stopping): nothing to search with. */
	*state = NULL;
	ctrl_reply_err(resp, CTRL_E_INTERNAL, "the controller is stopping");
done:
	ctrl_logsearch_free(s);
	buf_release(&err);
	return CTRL_ROUTE_DONE;
}

/* An open stream being merged into the download. */
struct cursor {
	FILE *f;
	const struct api_log_stream_info *s;
	struct api_log_event e;
	int has; /* e holds the next line */
	char *buf;
};

static void cursor_step(struct cursor *c)
{
	c->has = 0;
	while (c->f && line_next(c->f, c->buf))
		if (!line_parse(c->buf, &c->e)) {
			c->has = 1;
			return;
		}
}

void ctrl_logview_download(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			   const char *job, struct ctrl_response *resp)
{
	const char *only = arg(conn, "stream");
	struct streams l;
	struct cursor *cur = NULL;
	struct buf err = BUF_INIT;
	size_t i, n = 0;
	int ret = streams_load(ctx, job, &l, &err);

	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		buf_release(&err);
		return;
	}
	cur = xcalloc(l.n + 1, sizeof(*cur));
	for (i = 0; i < l.n; i++) {
		struct buf path = BUF_INIT;

		if (only && strcmp(only, l.s[i].stream))
			continue;
		(void)ctrl_logs_path(ctx, job, l.s[i].stream, &path);
		cur[n].f = fopen(path.data, "re");
		cur[n].s = &l.s[i];
		cur[n].buf = xmalloc(LINE_MAX_BYTES);
		cursor_step(&cur[n]);
		n++;
		buf_release(&path);
	}
	if (only && !n) {
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND, "no such log stream");
		goto out;
	}
	resp->status = 200;
	buf_reset(&resp->body);
	/* Every stream's lines, merged by time, labelled. */
	for (;;) {
		struct cursor *next = NULL;
		char t[40];
		char label[64];

		for (i = 0; i < n; i++)
			if (cur[i].has &&
			    (!next || cur[i].e.timestamp_ms <
					      next->e.timestamp_ms))
				next = &cur[i];
		if (!next)
			break;
		if ((long long)resp->body.len > DOWNLOAD_MAX) {
			(void)buf_adds(&resp->body,
				       "[trainctl: the download stops here, "
				       "at its size limit; read the rest by "
				       "stream]\n");
			break;
		}
		time_format_iso(next->e.timestamp_ms, t, sizeof(t));
		if (next->s->attempt)
			snprintf(label, sizeof(label), "attempt %d %s",
				 next->s->attempt, next->s->host);
		else
			snprintf(label, sizeof(label), "%s", next->s->host);
		(void)buf_addf(&resp->body, "%s %s rank %d%s: %s\n", t, label,
			       next->e.rank, next->e.is_stderr ? " stderr" : "",
			       next->e.message);
		cursor_step(next);
	}
	resp->content_type = "text/plain; charset=utf-8";
	resp->disposition = only ? "attachment; filename=\"stream.log\"" :
				   "attachment; filename=\"job.log\"";
out:
	for (i = 0; i < n; i++) {
		if (cur[i].f)
			fclose(cur[i].f);
		free(cur[i].buf);
	}
	free(cur);
	streams_release(&l);
	buf_release(&err);
}
