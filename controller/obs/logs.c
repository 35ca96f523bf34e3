#define LOG_TAG "ctrl"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api/logs_json.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/request.h"
#include "controller/jobrt.h"
#include "controller/job_state.h"
#include "controller/obs/logs.h"
#include "controller/obs/goodput.h"
#include "controller/obs/metrics.h"
#include "controller/replicate.h"
#include "db/run.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define READ_MAX (1 << 20)
#define FOLLOW_MS 20000

int ctrl_logs_path(struct ctrl_ctx *ctx, const char *job, const char *stream,
		   struct buf *out)
{
	return buf_addf(out, "%s/logs/%s/%s.log", ctx->cfg.state_dir, job,
			stream);
}

static void ensure_dir(struct ctrl_ctx *ctx, const char *job)
{
	struct buf p = BUF_INIT;

	(void)buf_addf(&p, "%s/logs", ctx->cfg.state_dir);
	mkdir(p.data, 0700);
	(void)buf_addf(&p, "/%s", job);
	mkdir(p.data, 0700);
	buf_release(&p);
}

/* One stream's pending text within a batch. */
struct pending {
	char *job;
	char *stream;
	struct buf text;
	int attempt;	  /* of its first line */
	const char *host; /* the agent that sent the batch */
};

/* A point read from line l, of the host (algo-N) that printed it. */
static void add_point(struct db_metric **pts, size_t *n, size_t *cap,
		      char *name, double v, const struct api_log_line *l)
{
	ALLOC_GROW(*pts, *n + 1, *cap);
	(*pts)[*n].name = name;
	(*pts)[*n].value = v;
	(*pts)[*n].timestamp_ms = l->ts_ms;
	(*pts)[*n].host = l->algo && !strncmp(l->algo, "algo-", 5) ?
				  atoi(l->algo + 5) :
				  0;
	(*n)++;
}

static int defined_metric(const struct ctrl_metric_set *ms, const char *name,
			  size_t len)
{
	size_t i;

	for (i = 0; i < ms->n; i++)
		if (strlen(ms->defs[i].name) == len &&
		    !strncmp(ms->defs[i].name, name, len))
			return 1;
	return 0;
}

/*
 * The metric line libtrainer writes, "#metric <name>=<value> ...", is a
 * metric of every job (trainer/trainer.h), unless a MetricDefinition of
 * the same name says how to read it. It may follow a prefix (mpirun's
 * "[1,0]<stdout>:"). The names are kept in *names for the caller to
 * free after the points are stored.
 */
static void default_metric(const struct ctrl_metric_set *ms,
			   const struct api_log_line *l, struct db_metric **pts,
			   size_t *n, size_t *cap, char ***names,
			   size_t *n_names, size_t *alloc_names)
{
	const char *p = strstr(l->text, "#metric "), *name, *end;
	char *stop;
	double v;
	size_t len;

	if (!p)
		return;
	name = p + 8;
	for (end = name;
	     *end && (isalnum((unsigned char)*end) || strchr(":._/-", *end));
	     end++)
		;
	len = (size_t)(end - name);
	if (!len || len > 255 || *end != '=' || defined_metric(ms, name, len))
		return;
	v = strtod(end + 1, &stop);
	if (stop == end + 1)
		return;
	ALLOC_GROW(*names, *n_names + 1, *alloc_names);
	(*names)[*n_names] = xstrndup(name, len);
	add_point(pts, n, cap, (*names)[*n_names], v, l);
	(*n_names)++;
}

/*
 * What a MetricDefinition may cost. Each match is bounded by
 * common/bregex.h: 20,000 matcher steps from each start position, the
 * first CTRL_METRIC_SUBJECT_MAX bytes of a line (PCRE2 counts its match limit
 * per start position, so a line costs at most about that many times the
 * limit: some 30 ms with JIT). A definition is disabled for the rest of
 * the job, instead of being tried on every line again, when its matches
 * hit those bounds or took over METRIC_SLOW_NS of CPU on METRIC_STRIKES
 * lines, or when it has used more than METRIC_CPU_GRACE_NS of CPU at over
 * METRIC_LINE_NS per line on average.
 */
#define METRIC_STRIKES 3
#define METRIC_SLOW_NS 2000000LL
#define METRIC_CPU_GRACE_NS 250000000LL
#define METRIC_LINE_NS 100000LL

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Disables d once; the first caller gets 1 and says so in the log. */
static int metric_disable(struct ctrl_metric_def *d)
{
	return !__atomic_exchange_n(&d->disabled, 1, __ATOMIC_ACQ_REL);
}

/*
 * Matches line l against the job's MetricDefinitions (without jobs_lock).
 * A definition disabled by this line is named in *notes, a line for the
 * job's own log.
 */
static void metric_lines(struct ctrl_metric_set *ms, const char *job,
			 const struct api_log_line *l, struct db_metric **pts,
			 size_t *n, size_t *cap, struct buf *notes)
{
	size_t i;

	for (i = 0; i < ms->n; i++) {
		struct ctrl_metric_def *d = &ms->defs[i];
		char num[64];
		char *end;
		double v;
		size_t off = 0, len = 0;
		int64_t t0, used, cpu, lines;
		int rc, hits = 0;

		if (!d->re || __atomic_load_n(&d->disabled, __ATOMIC_ACQUIRE))
			continue;
		t0 = thread_cpu_ns();
		rc = bregex_match(d->re, l->text, SIZE_MAX, &off, &len);
		used = thread_cpu_ns() - t0;
		cpu = __atomic_add_fetch(&d->cpu_ns, used, __ATOMIC_RELAXED);
		lines = __atomic_add_fetch(&d->lines, 1, __ATOMIC_RELAXED);
		if (rc == BREGEX_LIMIT || used > METRIC_SLOW_NS)
			hits = __atomic_add_fetch(&d->limit_hits, 1,
						  __ATOMIC_RELAXED);
		if (hits >= METRIC_STRIKES && metric_disable(d)) {
			log_warn("job '%s': metric '%s' disabled: its regex "
				 "hit the matcher's bounds on %d lines",
				 job, d->name, hits);
			(void)buf_addf(notes,
				       "trainctl: MetricDefinition '%s' is "
				       "disabled for the rest of this job: "
				       "its Regex hit the matcher's bounds "
				       "(%d steps, %lld ms, the first %d "
				       "bytes of a line) on %d lines\n",
				       d->name, BREGEX_MATCH_LIMIT,
				       METRIC_SLOW_NS / 1000000,
				       CTRL_METRIC_SUBJECT_MAX, hits);
		} else if (cpu > METRIC_CPU_GRACE_NS &&
			   cpu / lines > METRIC_LINE_NS && metric_disable(d)) {
			log_warn("job '%s': metric '%s' disabled: its regex "
				 "took %lld ms of CPU over %lld lines",
				 job, d->name, (long long)(cpu / 1000000),
				 (long long)lines);
			(void)buf_addf(notes,
				       "trainctl: MetricDefinition '%s' is "
				       "disabled for the rest of this job: "
				       "its Regex took %lld ms of the "
				       "controller's CPU over %lld lines\n",
				       d->name, (long long)(cpu / 1000000),
				       (long long)lines);
		}
		if (rc != 1 || !len)
			continue;
		if (len >= sizeof(num))
			len = sizeof(num) - 1;
		memcpy(num, l->text + off, len);
		num[len] = '\0';
		v = strtod(num, &end);
		if (end == num)
			continue;
		add_point(pts, n, cap, d->name, v, l);
	}
}

/*
 * The stream of a line: algo-N-<epoch second of the attempt's start>, as
 * SageMaker names them; an attempt that starts within the same second as
 * the one before it (a restart takes well under one) takes the next
 * second, so that each attempt has streams of its own.
 */
int64_t ctrl_logs_stream_epoch(struct ctrl_ctx *ctx, const char *job,
			       int attempt, int64_t *started_ms)
{
	struct buf err = BUF_INIT;
	int64_t started = 0, s = 0;
	int port, a;

	if (db_attempt_info(ctx->db, job, attempt, &port, &started, &err)) {
		buf_release(&err);
		return -1;
	}
	/* Each attempt's streams are named by the second it started, one
	 * more than the previous attempt's when they share a second. */
	for (a = 1; a <= attempt; a++) {
		int64_t t = started;

		if (a < attempt &&
		    db_attempt_info(ctx->db, job, a, &port, &t, &err))
			continue;
		s = a == 1 || t / 1000 > s ? t / 1000 : s + 1;
	}
	buf_release(&err);
	if (started_ms)
		*started_ms = started;
	return s;
}

static int stream_of(struct ctrl_ctx *ctx, struct ctrl_jobrt *rt,
		     const struct api_log_line *l, struct buf *out)
{
	if (rt->attempt != l->attempt) {
		int64_t started = 0;
		int64_t s = ctrl_logs_stream_epoch(ctx, rt->name, l->attempt,
						   &started);

		if (s < 0)
			return ERR_NOTFOUND;
		rt->attempt = l->attempt;
		rt->attempt_start_ms = started;
		rt->attempt_stream_s = s;
	}
	return buf_addf(out, "%s-%" PRId64, l->algo, rt->attempt_stream_s);
}

/*
 * The line that opens a later attempt's file of a host, so that every
 * reader of the log (trainctl logs, the web page, CloudWatch's face,
 * where a host's attempts are one stream) sees where an attempt starts.
 * It takes the time of the attempt's first line.
 */
static void attempt_line(struct buf *out, int64_t ts_ms, int attempt,
			 const char *algo, const char *host)
{
	(void)buf_addf(out,
		       "%" PRId64 "\tO\t-1\t==== trainctl: attempt %d of "
		       "this job starts here (%s on host %s) ====\n",
		       ts_ms, attempt, algo, host ? host : "?");
}

/*
 * Appends p's text to its stream's file, and with a replicated controller
 * copies it to another member (controller/replicate.h). 0, or -1 when the
 * copy failed (the text is in this member's file).
 */
static int flush(struct ctrl_ctx *ctx, struct pending *p)
{
	struct buf path = BUF_INIT;
	struct buf sep = BUF_INIT;
	const struct buf *out = &p->text;
	struct stat st;
	int fd, ret = 0;

	ensure_dir(ctx, p->job);
	(void)ctrl_logs_path(ctx, p->job, p->stream, &path);
	fd = open(path.data, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC,
		  0600);
	if (fd >= 0 && p->attempt > 1) {
		char algo[32];

		(void)snprintf(algo, sizeof(algo), "%.*s",
			       (int)(strrchr(p->stream, '-') - p->stream),
			       p->stream);
		attempt_line(&sep, strtoll(p->text.data, NULL, 10), p->attempt,
			     algo, p->host);
		(void)buf_add(&sep, p->text.data, p->text.len);
		out = &sep;
	}
	if (fd < 0 && errno == EEXIST)
		fd = open(path.data, O_WRONLY | O_APPEND | O_CLOEXEC);
	/* One writer at a time: the copy names the chunk's offset. */
	if (fd >= 0 && (!ctrl_repl_on() || !flock(fd, LOCK_EX)) &&
	    !fstat(fd, &st) &&
	    write(fd, out->data, out->len) == (ssize_t)out->len)
		ret = ctrl_repl_log_append(p->job, p->stream, fd,
					   (int64_t)st.st_size,
					   (int64_t)out->len);
	else
		log_error("cannot write log '%s': %s", path.data,
			  strerror(errno));
	if (fd >= 0)
		close(fd);
	buf_release(&sep);
	buf_release(&path);
	return ret;
}

/* A line whose metrics are read once jobs_lock is released. */
struct metric_work {
	const struct api_log_line *l;
	struct ctrl_metric_set *ms; /* a reference */
	size_t pend;		    /* its stream's index in the batch */
};

/* A batch on its way to the store. */
struct ingest {
	struct pending *pend; /* text by job and stream */
	size_t n_pend, alloc_pend;
	struct metric_work *work; /* lines whose metrics are to be read */
	size_t n_work, alloc_work;
	struct db_metric *pts; /* points read, of one job at a time */
	size_t n_pts, cap_pts;
	char **names; /* the default metrics' names the points use */
	size_t n_names, alloc_names;
	size_t stored;	  /* lines stored */
	const char *host; /* the agent that sent the batch */
	struct buf err;
};

/* The pending text of line l's job and stream, added on first use. */
static struct pending *pending_of(struct ctrl_ctx *ctx, struct ingest *in,
				  const struct ctrl_jobrt *rt,
				  const struct api_log_line *l,
				  const char *stream)
{
	struct pending *p;
	size_t k;

	for (k = 0; k < in->n_pend; k++)
		if (!strcmp(in->pend[k].job, l->job) &&
		    !strcmp(in->pend[k].stream, stream))
			return &in->pend[k];
	ALLOC_GROW(in->pend, in->n_pend + 1, in->alloc_pend);
	p = &in->pend[in->n_pend++];
	p->job = xstrdup(l->job);
	p->stream = xstrdup(stream);
	p->attempt = l->attempt;
	p->host = in->host;
	buf_init(&p->text, 0);
	(void)db_log_stream_add(ctx->db, l->job, p->stream,
				atoi(l->algo + 5) - 1, rt->attempt_start_ms,
				&in->err);
	return p;
}

/*
 * Under jobs_lock: the text of b's lines by stream, and the lines whose
 * metrics are read once the lock is released.
 */
static void queue_lines(struct ctrl_ctx *ctx, struct ingest *in,
			const struct api_log_batch *b)
{
	struct buf stream = BUF_INIT;
	size_t i;

	pthread_mutex_lock(&ctx->jobs_lock);
	for (i = 0; i < b->n; i++) {
		const struct api_log_line *l = &b->lines[i];
		struct ctrl_jobrt *rt = ctrl_jobrt_get(ctx, l->job);
		struct pending *p;

		/* Lines of an earlier job of the same name are dropped. */
		if (!rt ||
		    (l->job_uid && rt->uid && strcmp(l->job_uid, rt->uid)))
			continue;
		buf_reset(&stream);
		if (stream_of(ctx, rt, l, &stream))
			continue;
		p = pending_of(ctx, in, rt, l, stream.data);
		(void)buf_addf(&p->text, "%" PRId64 "\t%c\t%d\t%s\n", l->ts_ms,
			       l->is_stderr ? 'E' : 'O', l->rank, l->text);
		in->stored++;
		if (rt->metrics->n || strstr(l->text, "#metric ")) {
			struct metric_work *w;

			ALLOC_GROW(in->work, in->n_work + 1, in->alloc_work);
			w = &in->work[in->n_work++];
			w->l = l;
			w->ms = ctrl_metric_set_ref(rt->metrics);
			w->pend = (size_t)(p - in->pend);
		}
	}
	pthread_mutex_unlock(&ctx->jobs_lock);
	buf_release(&stream);
}

/*
 * The notes metric_lines() wrote on line l: the job's owner reads why in
 * the job's own log, after the line that did it.
 */
static void add_notes(struct pending *p, const struct api_log_line *l,
		      const char *notes)
{
	const char *line = notes, *nl;

	while ((nl = strchr(line, '\n'))) {
		(void)buf_addf(&p->text, "%" PRId64 "\tE\t%d\t%.*s\n", l->ts_ms,
			       l->rank, (int)(nl - line), line);
		line = nl + 1;
	}
}

static void store_points(struct ctrl_ctx *ctx, struct ingest *in,
			 const char *job)
{
	if (db_metrics_add(ctx->db, job, in->pts, in->n_pts, &in->err))
		log_error("cannot store metrics: %s", in->err.data);
	in->n_pts = 0;
}

/* Without the lock: the metrics of the queued lines, stored by job. */
static void read_metrics(struct ctrl_ctx *ctx, struct ingest *in)
{
	struct buf notes = BUF_INIT;
	size_t i;

	for (i = 0; i < in->n_work; i++) {
		const struct metric_work *w = &in->work[i];

		/* Metrics of one job per batch, the usual case; lines of
		 * other jobs in the same batch go to their own. */
		if (in->n_pts && i && strcmp(w[-1].l->job, w->l->job))
			store_points(ctx, in, w[-1].l->job);
		buf_reset(&notes);
		metric_lines(w->ms, w->l->job, w->l, &in->pts, &in->n_pts,
			     &in->cap_pts, &notes);
		default_metric(w->ms, w->l, &in->pts, &in->n_pts, &in->cap_pts,
			       &in->names, &in->n_names, &in->alloc_names);
		add_notes(&in->pend[w->pend], w->l, notes.data);
	}
	if (in->n_pts)
		store_points(ctx, in, in->work[in->n_work - 1].l->job);
	buf_release(&notes);
}

/* Writes the streams' text to their files and frees the batch: 0, or -1
 * when a copy to another member failed. */
static int flush_release(struct ctrl_ctx *ctx, struct ingest *in)
{
	size_t k;
	int ret = 0;

	for (k = 0; k < in->n_pend; k++) {
		if (flush(ctx, &in->pend[k]))
			ret = -1;
		free(in->pend[k].job);
		free(in->pend[k].stream);
		buf_release(&in->pend[k].text);
	}
	ctrl_metrics_log_lines(in->stored);
	/* The points name their metric by the definitions' strings. */
	for (k = 0; k < in->n_work; k++)
		ctrl_metric_set_unref(in->work[k].ms);
	free(in->work);
	free(in->pend);
	free(in->pts);
	for (k = 0; k < in->n_names; k++)
		free(in->names[k]);
	free(in->names);
	buf_release(&in->err);
	return ret;
}

/*
 * Stores the lines of batch b: their text under jobs_lock (cheap), then,
 * without the lock, their metrics: MetricDefinitions are matched with
 * the bounds of common/bregex.h, so a costly regex slows only its own
 * job's batches and never the controller's other work.
 */
int ctrl_logs_ingest(struct ctrl_ctx *ctx, const char *host,
		     const struct api_log_batch *b)
{
	struct ingest in = { 0 };
	int ret;

	in.host = host;
	buf_init(&in.err, 0);
	queue_lines(ctx, &in, b);
	read_metrics(ctx, &in);
	ctrl_goodput_ingest(ctx, b);
	ret = flush_release(ctx, &in);
	pthread_mutex_lock(&ctx->hosts_lock);
	ctx->log_version++;
	ctrl_waiters_resume(ctx, &ctx->log_waiters);
	pthread_mutex_unlock(&ctx->hosts_lock);
	return ret;
}

void ctrl_logs_note(struct ctrl_ctx *ctx, const char *job, int attempt,
		    const char *text)
{
	struct api_log_line line;
	struct api_log_batch b;

	memset(&line, 0, sizeof(line));
	memset(&b, 0, sizeof(b));
	line.job = (char *)job;
	line.attempt = attempt;
	line.algo = (char *)"algo-1";
	line.rank = -1;
	line.is_stderr = 1;
	line.ts_ms = time_now_ms();
	line.text = (char *)text;
	b.lines = &line;
	b.n = 1;
	/* A copy that failed is sent again with the next post's settle. */
	(void)ctrl_logs_ingest(ctx, "controller", &b);
}

int ctrl_logs_has_metric_defs(struct ctrl_ctx *ctx,
			      const struct api_log_batch *b)
{
	const char *last = NULL;
	size_t i, k;
	int found = 0;

	pthread_mutex_lock(&ctx->jobs_lock);
	for (i = 0; i < b->n && !found; i++) {
		struct ctrl_jobrt *rt;

		if (last && !strcmp(last, b->lines[i].job))
			continue;
		last = b->lines[i].job;
		rt = ctrl_jobrt_get(ctx, last);
		for (k = 0; rt && k < rt->metrics->n && !found; k++)
			found = rt->metrics->defs[k].re &&
				!__atomic_load_n(&rt->metrics->defs[k].disabled,
						 __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&ctx->jobs_lock);
	return found;
}

/* Parses the lines of a stream file from offset into events. */
static int read_events(const char *path, long long offset, int limit,
		       struct api_log_events *ev)
{
	char *data;
	ssize_t got;
	char *p, *nl;
	size_t alloc = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ev->next_offset = offset;
	if (fd < 0)
		return errno == ENOENT ? 0 : ERR_IO;
	data = xmalloc(READ_MAX + 1);
	got = pread(fd, data, READ_MAX, offset);
	close(fd);
	if (got < 0) {
		free(data);
		return ERR_IO;
	}
	data[got] = '\0';
	for (p = data; (nl = strchr(p, '\n')) && (int)ev->n < limit;
	     p = nl + 1) {
		struct api_log_event *e;
		char *f1, *f2, *f3;

		*nl = '\0';
		f1 = strchr(p, '\t');
		f2 = f1 ? strchr(f1 + 1, '\t') : NULL;
		f3 = f2 ? strchr(f2 + 1, '\t') : NULL;
		ev->next_offset += nl + 1 - p;
		if (!f3)
			continue;
		ALLOC_GROW(ev->items, ev->n + 1, alloc);
		e = &ev->items[ev->n++];
		e->timestamp_ms = strtoll(p, NULL, 10);
		e->is_stderr = f1[1] == 'E';
		e->rank = atoi(f2 + 1);
		e->message = xstrdup(f3 + 1);
	}
	free(data);
	return 0;
}

static int job_finished(struct ctrl_ctx *ctx, const char *name)
{
	struct db_job job;
	struct buf err = BUF_INIT;
	enum ctrl_job_state st;
	int done = 1;

	if (!db_job_get(ctx->db, name, &job, &err)) {
		done = !ctrl_job_state_parse(job.secondary_status, &st) &&
		       ctrl_job_state_terminal(st);
		db_job_release(&job);
	}
	buf_release(&err);
	return done;
}

enum ctrl_route_result ctrl_logs_route(struct ctrl_ctx *ctx,
				       struct MHD_Connection *conn,
				       const char *name,
				       struct ctrl_http_req *req,
				       struct ctrl_response *resp)
{
	const char *stream = MHD_lookup_connection_value(
		conn, MHD_GET_ARGUMENT_KIND, "stream");
	const char *off = MHD_lookup_connection_value(
		conn, MHD_GET_ARGUMENT_KIND, "offset");
	const char *lim = MHD_lookup_connection_value(
		conn, MHD_GET_ARGUMENT_KIND, "limit");
	const char *follow = MHD_lookup_connection_value(
		conn, MHD_GET_ARGUMENT_KIND, "follow");
	struct api_log_events ev;
	struct db_log_stream *streams = NULL;
	struct buf path = BUF_INIT;
	struct buf err = BUF_INIT;
	size_t n = 0, i;
	int limit = lim ? atoi(lim) : 10000;
	int ret;

	memset(&ev, 0, sizeof(ev));
	if (limit < 1 || limit > 10000)
		limit = 10000;
	ret = db_log_streams(ctx->db, name, &streams, &n, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		goto out;
	}
	ev.streams = xcalloc(n + 1, sizeof(*ev.streams));
	for (i = 0; i < n; i++) {
		struct buf full = BUF_INIT;

		(void)buf_addf(&full, "%s/%s", name, streams[i].name);
		ev.streams[i] = buf_detach(&full, NULL);
	}
	ev.n_streams = n;
	if (stream) {
		const char *suffix = strchr(stream, '/');

		suffix = suffix ? suffix + 1 : stream;
		if (strchr(suffix, '/') || strstr(suffix, "..")) {
			ctrl_reply_err(resp, CTRL_E_VALIDATION,
				       "invalid stream name");
			goto out;
		}
		/* Only a stream the job has is read; another has no events
		 * yet (a follower may wait for it). */
		for (i = 0; i < n && strcmp(streams[i].name, suffix); i++)
			;
		(void)ctrl_logs_path(ctx, name, suffix, &path);
		if (i < n &&
		    read_events(path.data, off ? atoll(off) : 0, limit, &ev)) {
			ctrl_reply_err_code(resp, ERR_IO, "cannot read log");
			goto out;
		}
		if (ev.n == 0 && follow && !strcmp(follow, "1") &&
		    !req->resumed && !job_finished(ctx, name)) {
			pthread_mutex_lock(&ctx->hosts_lock);
			req->suspended = 1;
			MHD_suspend_connection(conn);
			ctrl_waiter_add(ctx, &ctx->log_waiters, conn,
					&req->resumed,
					time_mono_ms() + FOLLOW_MS);
			pthread_mutex_unlock(&ctx->hosts_lock);
			api_log_events_release(&ev);
			db_log_streams_free(streams, n);
			buf_release(&path);
			buf_release(&err);
			return CTRL_ROUTE_SUSPENDED;
		}
	}
	req->resumed = 0;
	resp->status = 200;
	buf_reset(&resp->body);
	if (api_log_events_build(&ev, &resp->body))
		ctrl_reply_err_code(resp, ERR_TOOBIG, "log page too big");
out:
	api_log_events_release(&ev);
	db_log_streams_free(streams, n);
	buf_release(&path);
	buf_release(&err);
	return CTRL_ROUTE_DONE;
}
