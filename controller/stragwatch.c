/*
 * Stragglers of running jobs (controller/stragwatch.h). Telemetry's rank
 * entries (one per job and host) carry the cumulative run and run-queue
 * wait of the job's threads there; they are kept here per job and host
 * for a little more than the window, in memory only (a restarted
 * controller starts a new window), and judged on every sample that
 * arrives. What to do about a finding (the status message, a drain) is
 * done after the lock is given back.
 */
#define LOG_TAG "ctrl"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/job_state.h"
#include "controller/jobrt.h"
#include "controller/obs/prom.h"
#include "controller/placement.h"
#include "controller/straggler.h"
#include "controller/stragwatch.h"
#include "controller/wake.h"
#include "db/db.h"
#include "db/run.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Samples kept per host at most (a window of 30 s every 5 s keeps 7). */
#define MAX_POINTS 1024
/* A job not heard of for this long beyond its window is forgotten. */
#define STALE_MS 60000

struct sw_host {
	char *algo; /* algo-N */
	char *host;
	int top_rank;
	struct ctrl_strag_point *p; /* oldest first */
	size_t n, cap;
	double ratio; /* over the last window; 0: unknown */
};

struct sw_job {
	char *name;
	int attempt;
	struct sw_host *hosts;
	size_t n;
	int named;	 /* this attempt's straggler was named */
	int64_t seen_ms; /* monotonic: its last sample */
	struct sw_job *next;
};

struct ctrl_stragwatch {
	pthread_mutex_t lock;
	struct sw_job *jobs;
	unsigned long long named; /* stragglers named */
};

/* A straggler to name, out of the lock. */
struct finding {
	char *job;
	char *algo;
	char *host;
	char *what; /* ctrl_strag_describe() */
};

struct ctrl_stragwatch *ctrl_stragwatch_new(void)
{
	struct ctrl_stragwatch *w = xcalloc(1, sizeof(*w));

	pthread_mutex_init(&w->lock, NULL);
	return w;
}

static void hosts_clear(struct sw_job *j)
{
	size_t i;

	for (i = 0; i < j->n; i++) {
		free(j->hosts[i].algo);
		free(j->hosts[i].host);
		free(j->hosts[i].p);
	}
	free(j->hosts);
	j->hosts = NULL;
	j->n = 0;
	j->named = 0;
}

static void job_free(struct sw_job *j)
{
	hosts_clear(j);
	free(j->name);
	free(j);
}

void ctrl_stragwatch_free(struct ctrl_stragwatch *w)
{
	struct sw_job *j, *next;

	if (!w)
		return;
	for (j = w->jobs; j; j = next) {
		next = j->next;
		job_free(j);
	}
	pthread_mutex_destroy(&w->lock);
	free(w);
}

static struct sw_job *job_get(struct ctrl_stragwatch *w, const char *name)
{
	struct sw_job *j;

	for (j = w->jobs; j; j = j->next)
		if (!strcmp(j->name, name))
			return j;
	j = xcalloc(1, sizeof(*j));
	j->name = xstrdup(name);
	j->next = w->jobs;
	w->jobs = j;
	return j;
}

static struct sw_host *host_get(struct sw_job *j, const char *algo,
				const char *host)
{
	struct sw_host *h;
	size_t i;

	for (i = 0; i < j->n; i++) {
		h = &j->hosts[i];
		if (strcmp(h->algo, algo))
			continue;
		if (strcmp(h->host, host)) {
			/* Another host took the place: a new series. */
			free(h->host);
			h->host = xstrdup(host);
			h->n = 0;
			h->ratio = 0;
		}
		return h;
	}
	j->hosts = xrealloc(j->hosts, (j->n + 1) * sizeof(*j->hosts));
	h = &j->hosts[j->n++];
	memset(h, 0, sizeof(*h));
	h->algo = xstrdup(algo);
	h->host = xstrdup(host);
	h->top_rank = -1;
	return h;
}

/*
 * Appends a sample, then drops those older than needed: the newest at
 * or before the window's start stays, as the window's first figure.
 */
static void host_add(struct sw_host *h, const struct ctrl_strag_point *pt,
		     int64_t window_ms)
{
	size_t drop = 0;

	if (h->n && pt->ts_ms <= h->p[h->n - 1].ts_ms)
		return;
	if (h->n == MAX_POINTS)
		drop = 1;
	while (drop + 1 < h->n && h->p[drop + 1].ts_ms <= pt->ts_ms - window_ms)
		drop++;
	if (drop) {
		memmove(h->p, h->p + drop, (h->n - drop) * sizeof(*h->p));
		h->n -= drop;
	}
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 16;
		h->p = xrealloc(h->p, h->cap * sizeof(*h->p));
	}
	h->p[h->n++] = *pt;
}

/* Keeps one rank entry; returns its job, or NULL when it was stale. */
static struct sw_job *keep(struct ctrl_ctx *ctx, const char *host,
			   int64_t ts_ms, const struct tm_rank_sample *r,
			   int64_t now)
{
	struct ctrl_stragwatch *w = ctx->strag;
	struct ctrl_strag_point pt = { ts_ms, r->run_ns, r->wait_ns };
	struct sw_job *j = job_get(w, r->job);
	struct sw_host *h;

	if (r->attempt < j->attempt)
		return NULL;
	if (r->attempt > j->attempt) {
		hosts_clear(j);
		j->attempt = r->attempt;
	}
	j->seen_ms = now;
	h = host_get(j, r->algo, host);
	h->top_rank = r->top_rank;
	host_add(h, &pt, ctx->cfg.strag_window_ms);
	return j;
}

/* The job's verdict; a new straggler goes into *f. Returns 1 then. */
static int judge(struct ctrl_ctx *ctx, struct sw_job *j, struct finding *f)
{
	struct ctrl_strag_series *s;
	struct ctrl_strag_verdict v;
	struct buf what = BUF_INIT;
	const struct sw_host *c;
	double *ratios;
	size_t i;

	if (j->n < 2)
		return 0;
	s = xcalloc(j->n, sizeof(*s));
	ratios = xcalloc(j->n, sizeof(*ratios));
	for (i = 0; i < j->n; i++) {
		s[i].p = j->hosts[i].p;
		s[i].n = j->hosts[i].n;
	}
	ctrl_strag_judge(s, j->n, ctx->cfg.strag_window_ms,
			 ctx->cfg.strag_ratio, ratios, &v);
	for (i = 0; i < j->n; i++)
		j->hosts[i].ratio = ratios[i];
	free(s);
	free(ratios);
	if (v.culprit < 0 || j->named)
		return 0;
	j->named = 1;
	ctx->strag->named++;
	c = &j->hosts[v.culprit];
	ctrl_strag_describe(&what, c->algo, c->host, c->top_rank, &v,
			    ctx->cfg.strag_window_ms);
	f->job = xstrdup(j->name);
	f->algo = xstrdup(c->algo);
	f->host = xstrdup(c->host);
	f->what = buf_detach(&what, NULL);
	return 1;
}

/* Forgets jobs not heard of for a while (ended, or moved elsewhere). */
static void prune(struct ctrl_ctx *ctx, int64_t now)
{
	struct sw_job **pp = &ctx->strag->jobs, *j;

	while ((j = *pp)) {
		if (now - j->seen_ms > ctx->cfg.strag_window_ms + STALE_MS) {
			*pp = j->next;
			job_free(j);
		} else {
			pp = &j->next;
		}
	}
}

/* A free host for the job's place algo-N, copied; NULL when none. */
static char *spare_for(struct ctrl_ctx *ctx, const char *job, const char *algo)
{
	struct ctrl_jobrt *rt;
	const char *spare = NULL;
	char *out = NULL;
	int index = atoi(algo + strlen("algo-")) - 1;

	if (strncmp(algo, "algo-", 5) || index < 0)
		return NULL;
	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job);
	pthread_mutex_lock(&ctx->hosts_lock);
	if (rt)
		spare = ctrl_place_spare(ctx, rt, index, NULL, 0);
	if (spare)
		out = xstrdup(spare);
	pthread_mutex_unlock(&ctx->hosts_lock);
	pthread_mutex_unlock(&ctx->jobs_lock);
	return out;
}

/* The finding as the StatusMessage of the job's Training transition. */
static void set_message(struct ctrl_ctx *ctx, const char *job, const char *msg)
{
	struct db_state_change ch = { 0 };
	struct buf err = BUF_INIT;

	ch.expect_status = ctrl_job_state_primary(CTRL_JOB_TRAINING);
	ch.expect_secondary = ctrl_job_state_secondary(CTRL_JOB_TRAINING);
	ch.status = ch.expect_status;
	ch.secondary = ch.expect_secondary;
	ch.message = msg;
	ch.now_ms = time_now_ms();
	if (!db_job_change_state(ctx->db, job, &ch, &err))
		ctrl_jobs_changed(ctx);
	else
		log_info("job '%s': straggler not shown: %s", job, err.data);
	buf_release(&err);
}

/*
 * Names the straggler; with the move action and a spare free, drains its
 * host with the finding as the reason (the reconciler moves the job).
 */
static void act(struct ctrl_ctx *ctx, const struct finding *f)
{
	struct buf msg = BUF_INIT, reason = BUF_INIT, err = BUF_INIT;
	char *spare = NULL;

	(void)buf_addf(&msg, "Straggler: %s", f->what);
	if (ctx->cfg.strag_action == CTRL_STRAG_MOVE) {
		spare = spare_for(ctx, f->job, f->algo);
		if (spare)
			(void)buf_addf(&msg,
				       ". Draining host %s to move the job "
				       "to a spare from its checkpoint",
				       f->host);
		else
			(void)buf_adds(&msg, ". No spare host is free to move "
					     "the job to");
	}
	log_warn("job '%s': %s", f->job, msg.data);
	set_message(ctx, f->job, msg.data);
	if (spare) {
		(void)buf_addf(&reason, "straggler in job '%s': %s", f->job,
			       f->what);
		if (db_host_drain_set(ctx->db, f->host, reason.data,
				      time_now_ms(), &err)) {
			log_error("cannot drain host '%s': %s", f->host,
				  err.data);
		} else {
			ctrl_hosts_load_drains(ctx);
			log_info("host '%s' drained: %s", f->host, reason.data);
			ctrl_reconciler_wake(ctx);
		}
	}
	free(spare);
	buf_release(&msg);
	buf_release(&reason);
	buf_release(&err);
}

void ctrl_stragwatch_ingest(struct ctrl_ctx *ctx, const char *host,
			    const struct tm_host_sample *s, size_t n)
{
	struct ctrl_stragwatch *w = ctx->strag;
	struct sw_job **touched;
	struct finding *f;
	int64_t now = time_mono_ms();
	size_t i, k, n_t = 0, n_f = 0, cap = 0;

	if (!w || ctx->cfg.strag_action == CTRL_STRAG_NONE)
		return;
	for (i = 0; i < n; i++)
		cap += s[i].n_ranks;
	if (!cap)
		return;
	touched = xcalloc(cap, sizeof(*touched));
	f = xcalloc(cap, sizeof(*f));
	pthread_mutex_lock(&w->lock);
	for (i = 0; i < n; i++) {
		for (k = 0; k < s[i].n_ranks; k++) {
			const struct tm_rank_sample *r = &s[i].ranks[k];
			struct sw_job *j;
			size_t t;

			if (r->run_ns < 0 || r->wait_ns < 0)
				continue;
			j = keep(ctx, host, s[i].ts_ms, r, now);
			for (t = 0; j && t < n_t && touched[t] != j; t++)
				;
			if (j && t == n_t)
				touched[n_t++] = j;
		}
	}
	for (i = 0; i < n_t; i++)
		n_f += (size_t)judge(ctx, touched[i], &f[n_f]);
	prune(ctx, now);
	pthread_mutex_unlock(&w->lock);
	for (i = 0; i < n_f; i++) {
		act(ctx, &f[i]);
		free(f[i].job);
		free(f[i].algo);
		free(f[i].host);
		free(f[i].what);
	}
	free(touched);
	free(f);
}

void ctrl_stragwatch_render_metrics(struct ctrl_ctx *ctx, struct buf *out)
{
	struct ctrl_stragwatch *w = ctx->strag;
	struct ctrl_prom_sample s;
	const struct sw_job *j;
	size_t i;

	if (!w)
		return;
	ctrl_prom_family(out, "trainctl_job_straggler_ratio", "gauge",
			 "How much slower each host of a running multi-host "
			 "job is than the job's other hosts over the "
			 "straggler window (1: not slower).");
	pthread_mutex_lock(&w->lock);
	for (j = w->jobs; j; j = j->next) {
		for (i = 0; i < j->n; i++) {
			if (j->hosts[i].ratio <= 0)
				continue;
			ctrl_prom_sample_start(&s, out,
					       "trainctl_job_straggler_ratio");
			ctrl_prom_label(&s, "job", j->name);
			ctrl_prom_label(&s, "algo", j->hosts[i].algo);
			ctrl_prom_label(&s, "host", j->hosts[i].host);
			ctrl_prom_value(&s, "%.3f", j->hosts[i].ratio);
		}
	}
	ctrl_prom_family(out, "trainctl_stragglers_named_total", "counter",
			 "Hosts named as a job's straggler.");
	ctrl_prom_sample_start(&s, out, "trainctl_stragglers_named_total");
	ctrl_prom_value(&s, "%llu", w->named);
	pthread_mutex_unlock(&w->lock);
}
