/*
 * Goodput accounting (controller/obs/goodput.h, docs/goodput.md).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "controller/obs/goodput.h"
#include "controller/obs/prom.h"
#include "controller/ctrl.h"
#include "api/goodput.h"
#include "db/run.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

const char *const ctrl_goodput_names[CTRL_GOODPUT_N] = {
	"Queued", "Startup", "Productive", "Checkpoint",
	"Redone", "Restart", "Preempted",  "Other",
};

const char *const ctrl_goodput_labels[CTRL_GOODPUT_N] = {
	"queued", "startup", "productive", "checkpoint",
	"redone", "restart", "preempted",  "other",
};

/* The ended jobs settled into the totals per /metrics page. */
#define SETTLE_PER_PAGE 64

/* ------------------------------------------------------------ the split */

/* A walk over the job's time: every ms from created to end once. */
struct walk {
	struct ctrl_goodput *g;
	int64_t t;   /* charged up to here */
	int64_t end; /* the job's end, or now */
};

/* Charges [w->t, until) to cat; returns the ms charged. */
static int64_t span(struct walk *w, enum ctrl_goodput_cat cat, int64_t until)
{
	int64_t d;

	if (until > w->end)
		until = w->end;
	if (until <= w->t)
		return 0;
	d = until - w->t;
	w->g->ms[cat] += d;
	w->t = until;
	return d;
}

/* Moves up to *left ms of an attempt's reported checkpoint stalls out of
 * cat, where the attempt charged had ms. */
static void stalls(struct ctrl_goodput *g, enum ctrl_goodput_cat cat,
		   int64_t had, int64_t *left)
{
	int64_t m = *left < had ? *left : had;

	if (m <= 0)
		return;
	g->ms[cat] -= m;
	g->ms[CTRL_GOODPUT_CHECKPOINT] += m;
	*left -= m;
}

/* One attempt that reported steps; prev_max: the furthest step earlier
 * attempts reported (-1: none); last: no attempt follows. */
static void reported(struct walk *w, const struct db_goodput_attempt *a,
		     int first, int64_t prev_max, int last, int64_t aend)
{
	int64_t prod = 0, redone = 0, left = a->ckpt_ms;
	int64_t upto;

	span(w, first ? CTRL_GOODPUT_STARTUP : CTRL_GOODPUT_RESTART,
	     a->first_ms);
	if (prev_max >= 0) {
		/* From the first report to the first past prev_max: the
		 * steps prev_max - first_step + 1 made again. */
		upto = a->passed_ms ? a->passed_ms : a->last_ms;
		if (!a->passed_ms && last && !a->ended_ms)
			upto = aend; /* still redoing */
		redone = span(w, CTRL_GOODPUT_REDONE, upto);
		if (prev_max >= a->first_step)
			w->g->steps_redone += prev_max - a->first_step + 1;
	}
	if (last)
		prod = span(w, CTRL_GOODPUT_PRODUCTIVE, aend);
	else
		prod = span(w, CTRL_GOODPUT_PRODUCTIVE, a->last_ms);
	stalls(w->g, CTRL_GOODPUT_PRODUCTIVE, prod, &left);
	stalls(w->g, CTRL_GOODPUT_REDONE, redone, &left);
	span(w,
	     a->planned == DB_ATTEMPT_PREEMPTED ? CTRL_GOODPUT_PREEMPTED :
						  CTRL_GOODPUT_RESTART,
	     aend);
}

/* One attempt that reported no step (see ctrl_goodput_split()). */
static void silent(struct walk *w, const struct db_goodput_attempt *a,
		   int first, int any_reported, int last, int64_t aend)
{
	enum ctrl_goodput_cat cat;

	if (last && !any_reported)
		cat = CTRL_GOODPUT_PRODUCTIVE;
	else if (!any_reported)
		cat = CTRL_GOODPUT_REDONE; /* its work is assumed lost */
	else if (a->planned == DB_ATTEMPT_PREEMPTED)
		cat = CTRL_GOODPUT_PREEMPTED;
	else
		cat = first ? CTRL_GOODPUT_STARTUP : CTRL_GOODPUT_RESTART;
	span(w, cat, aend);
}

/* After the last attempt: the job's tail once it ended, else the wait
 * for its next attempt. */
static enum ctrl_goodput_cat tail_of(const struct db_goodput_attempt *a,
				     size_t n, int ended)
{
	if (!n)
		return CTRL_GOODPUT_QUEUED;
	if (ended)
		return CTRL_GOODPUT_OTHER;
	return a[n - 1].planned == DB_ATTEMPT_PREEMPTED ?
		       CTRL_GOODPUT_PREEMPTED :
		       CTRL_GOODPUT_RESTART;
}

void ctrl_goodput_split(int64_t created_ms, int64_t end_ms, int ended,
			const struct db_goodput_attempt *a, size_t n,
			struct ctrl_goodput *out)
{
	struct walk w = { out, created_ms, end_ms };
	int64_t prev_max = -1;
	int any = 0;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->step = -1;
	out->attempts = (int)n;
	if (end_ms < created_ms)
		w.end = created_ms;
	out->wall_ms = w.end - created_ms;
	for (i = 0; i < n; i++)
		any |= a[i].first_ms != 0;
	for (i = 0; i < n; i++) {
		int64_t aend = a[i].ended_ms ? a[i].ended_ms : w.end;
		/* The attempt that ended the job, or runs: none follows.
		 * One that ended in a job that did not awaits the next. */
		int last = i + 1 == n && (ended || !a[i].ended_ms);

		if (!i)
			span(&w, CTRL_GOODPUT_QUEUED, a[i].started_ms);
		else
			span(&w,
			     a[i - 1].planned == DB_ATTEMPT_PREEMPTED ?
				     CTRL_GOODPUT_PREEMPTED :
				     CTRL_GOODPUT_RESTART,
			     a[i].started_ms);
		if (a[i].first_ms) {
			reported(&w, &a[i], !i, prev_max, last, aend);
			out->reporting++;
			if (a[i].max_step > prev_max)
				prev_max = a[i].max_step;
		} else {
			silent(&w, &a[i], !i, any, last, aend);
		}
	}
	out->step = prev_max;
	span(&w, tail_of(a, n, ended), w.end);
}

/* ---------------------------------------------------------- log lines */

static int name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* The digits at p as a step (at most 10 digits, as libtrainer's). */
static int read_step(const char *p, int64_t *step)
{
	int64_t v = 0;
	int k;

	for (k = 0; k < 11 && isdigit((unsigned char)p[k]); k++)
		v = v * 10 + (p[k] - '0');
	if (!k || k > 10)
		return 0;
	*step = v;
	return 1;
}

/* "trainctl_step=N" as a word of text. */
static int plain_step(const char *text, int64_t *step)
{
	static const char key[] = "trainctl_step=";
	const char *p = text;

	while ((p = strstr(p, key))) {
		if ((p == text || !name_char(p[-1])) &&
		    read_step(p + sizeof(key) - 1, step))
			return 1;
		p += sizeof(key) - 1;
	}
	return 0;
}

/* "#metric <name>=<value> step=N": *step, and the stall of a
 * trainctl_checkpoint_seconds line. */
static int metric_step(const char *text, int64_t *step, int64_t *ckpt_ms)
{
	static const char ckpt[] = "trainctl_checkpoint_seconds=";
	const char *p = strstr(text, "#metric "), *s;
	char *end;
	double v;

	if (!p)
		return 0;
	p += 8;
	s = strstr(p, " step=");
	if (!s || !read_step(s + 6, step))
		return 0;
	if (strncmp(p, ckpt, sizeof(ckpt) - 1))
		return CTRL_GOODPUT_STEP;
	/* A stall's step is the checkpoint's, which libtrainer's caller
	 * may number apart from its metric lines: no progress of its own. */
	v = strtod(p + sizeof(ckpt) - 1, &end);
	if (end == p + sizeof(ckpt) - 1 || !(v >= 0 && v < 1e9))
		return 0;
	*ckpt_ms = (int64_t)(v * 1000.0 + 0.5);
	return CTRL_GOODPUT_CKPT;
}

int ctrl_goodput_line(const char *text, int64_t *step, int64_t *ckpt_ms)
{
	int found = metric_step(text, step, ckpt_ms);

	if (!found && plain_step(text, step))
		found = CTRL_GOODPUT_STEP;
	return found;
}

/* The progress of a run of lines of one job's attempt, being folded. */
struct run {
	struct db_progress p;
	int64_t *steps, *steps_ms;
	size_t alloc;
};

static void run_add(struct run *r, const struct api_log_line *l, int found,
		    int64_t step, int64_t ckpt_ms)
{
	struct db_progress *p = &r->p;

	/* Only the stalls of algo-1's first process (the job's rank 0, or
	 * mpirun's, which carries every MPI rank's lines): a checkpoint
	 * every rank saves at once stalls the job once. */
	if ((found & CTRL_GOODPUT_CKPT) && l->rank == 0 &&
	    (!l->algo || !strcmp(l->algo, "algo-1")))
		p->ckpt_ms += ckpt_ms;
	if (!(found & CTRL_GOODPUT_STEP))
		return;
	if (!p->first_ms || l->ts_ms < p->first_ms) {
		p->first_ms = l->ts_ms ? l->ts_ms : 1;
		p->first_step = step;
	}
	if (l->ts_ms > p->last_ms)
		p->last_ms = l->ts_ms;
	if (!p->n_steps || step > p->max_step) {
		p->max_step = step;
		p->max_ms = l->ts_ms;
	}
	if (p->n_steps == r->alloc) {
		r->alloc = r->alloc ? 2 * r->alloc : 16;
		r->steps = xrealloc(r->steps, r->alloc * sizeof(*r->steps));
		r->steps_ms =
			xrealloc(r->steps_ms, r->alloc * sizeof(*r->steps_ms));
	}
	r->steps[p->n_steps] = step;
	r->steps_ms[p->n_steps++] = l->ts_ms;
}

static void run_store(struct ctrl_ctx *ctx, struct run *r,
		      const struct api_log_line *l)
{
	struct buf err = BUF_INIT;

	r->p.steps = r->steps;
	r->p.steps_ms = r->steps_ms;
	r->p.job_uid = l->job_uid;
	if ((r->p.n_steps || r->p.ckpt_ms) &&
	    db_progress_add(ctx->db, l->job, l->attempt, &r->p, &err))
		log_error("job '%s': cannot store progress: %s", l->job,
			  err.data);
	buf_release(&err);
	memset(&r->p, 0, sizeof(r->p));
}

void ctrl_goodput_ingest(struct ctrl_ctx *ctx, const struct api_log_batch *b)
{
	struct run r = { 0 };
	const struct api_log_line *cur = NULL;
	size_t i;

	for (i = 0; i < b->n; i++) {
		const struct api_log_line *l = &b->lines[i];
		int64_t step = 0, ckpt_ms = 0;
		int found = ctrl_goodput_line(l->text, &step, &ckpt_ms);

		if (!found)
			continue;
		if (cur &&
		    (cur->attempt != l->attempt || strcmp(cur->job, l->job)))
			run_store(ctx, &r, cur);
		cur = l;
		run_add(&r, l, found, step, ckpt_ms);
	}
	if (cur)
		run_store(ctx, &r, cur);
	free(r.steps);
	free(r.steps_ms);
}

/* ------------------------------------------------------- reading a job */

/* The last thing the store knows of a job that runs: its row's last
 * change, an attempt's start or end, a step report. */
static int64_t last_event(int64_t modified, const struct db_goodput_attempt *a,
			  size_t n)
{
	int64_t t = modified;
	size_t i;

	for (i = 0; i < n; i++) {
		if (a[i].started_ms > t)
			t = a[i].started_ms;
		if (a[i].ended_ms > t)
			t = a[i].ended_ms;
		if (a[i].last_ms > t)
			t = a[i].last_ms;
	}
	return t;
}

int ctrl_goodput_job(struct ctrl_ctx *ctx, const char *job, int64_t now_ms,
		     struct ctrl_goodput *out, struct buf *err)
{
	struct db_goodput_attempt *a = NULL;
	int64_t created, end, modified;
	size_t n = 0;
	int ret =
		db_goodput_times(ctx->db, job, &created, &end, &modified, err);

	if (!ret)
		ret = db_goodput_attempts(ctx->db, job, &a, &n, err);
	if (!ret)
		ctrl_goodput_split(created,
				   end	  ? end :
				   now_ms ? now_ms :
					    last_event(modified, a, n),
				   end != 0, a, n, out);
	free(a);
	return ret;
}

int ctrl_goodput_json(const struct ctrl_goodput *g, struct buf *out)
{
	double s[CTRL_GOODPUT_N];
	struct api_goodput a = { 0 };
	size_t i;

	for (i = 0; i < CTRL_GOODPUT_N; i++)
		s[i] = (double)g->ms[i] / 1000.0;
	a.n = CTRL_GOODPUT_N;
	a.names = (char **)ctrl_goodput_names;
	a.seconds = s;
	a.wall_s = (double)g->wall_ms / 1000.0;
	a.ratio = g->wall_ms > 0 ? (double)g->ms[CTRL_GOODPUT_PRODUCTIVE] /
					   (double)g->wall_ms :
				   0.0;
	a.step = g->step;
	a.steps_redone = g->steps_redone;
	a.attempts = g->attempts;
	a.reporting = g->reporting;
	return api_goodput_json(&a, out);
}

/* ------------------------------------------------------------ /metrics */

/* Adds the splits of up to SETTLE_PER_PAGE ended jobs to the totals. */
static void settle(struct ctrl_ctx *ctx)
{
	struct buf err = BUF_INIT;
	char **names = NULL;
	size_t n = 0, i;

	if (db_goodput_unsettled(ctx->db, SETTLE_PER_PAGE, &names, &n, &err))
		log_error("cannot list ended jobs for goodput: %s", err.data);
	for (i = 0; i < n; i++) {
		struct ctrl_goodput g;

		buf_reset(&err);
		if (!ctrl_goodput_job(ctx, names[i], time_now_ms(), &g, &err) &&
		    db_goodput_settle(ctx->db, names[i], ctrl_goodput_labels,
				      g.ms, CTRL_GOODPUT_N, &err))
			log_error("job '%s': cannot settle goodput: %s",
				  names[i], err.data);
		free(names[i]);
	}
	free(names);
	buf_release(&err);
}

/* The running jobs' splits as they stand, added to ms[]. */
static void live(struct ctrl_ctx *ctx, int64_t now, int64_t *ms)
{
	struct buf err = BUF_INIT;
	char **names = NULL;
	int64_t queued = 0;
	size_t n = 0, i, c;

	if (db_goodput_live(ctx->db, now, &names, &n, &queued, &err))
		log_error("cannot list running jobs for goodput: %s", err.data);
	ms[CTRL_GOODPUT_QUEUED] += queued;
	for (i = 0; i < n; i++) {
		struct ctrl_goodput g;

		buf_reset(&err);
		if (!ctrl_goodput_job(ctx, names[i], now, &g, &err))
			for (c = 0; c < CTRL_GOODPUT_N; c++)
				ms[c] += g.ms[c];
		free(names[i]);
	}
	free(names);
	buf_release(&err);
}

void ctrl_goodput_render(struct ctrl_ctx *ctx, struct buf *out)
{
	struct ctrl_prom_sample s;
	struct buf err = BUF_INIT;
	int64_t ms[CTRL_GOODPUT_N], all = 0;
	size_t c;

	settle(ctx);
	if (db_goodput_totals(ctx->db, ctrl_goodput_labels, ms, CTRL_GOODPUT_N,
			      &err))
		log_error("cannot read goodput totals: %s", err.data);
	buf_release(&err);
	live(ctx, time_now_ms(), ms);
	ctrl_prom_family(out, "trainctl_goodput_seconds_total", "counter",
			 "Jobs' wall time by where it went (docs/goodput.md)");
	for (c = 0; c < CTRL_GOODPUT_N; c++) {
		ctrl_prom_sample_start(&s, out,
				       "trainctl_goodput_seconds_total");
		ctrl_prom_label(&s, "category", ctrl_goodput_labels[c]);
		ctrl_prom_value(&s, "%.3f", (double)ms[c] / 1000.0);
		all += ms[c];
	}
	ctrl_prom_family(out, "trainctl_goodput_ratio", "gauge",
			 "Productive time over all jobs' wall time");
	ctrl_prom_sample_start(&s, out, "trainctl_goodput_ratio");
	ctrl_prom_value(
		&s, "%.6f",
		all ? (double)ms[CTRL_GOODPUT_PRODUCTIVE] / (double)all : 0.0);
}
