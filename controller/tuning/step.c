#define LOG_TAG "tune"

/*
 * The reconciler's step of tuning jobs (controller/tuning.h): it loads
 * each active tuning job with its training jobs, reads the objective
 * curves early stopping needs, asks the plan (controller/tuning/plan.h)
 * and carries it out. New training jobs are recorded first
 * (tuning_children) and then created, so that a kill -9 of the controller
 * never creates one twice nor loses one.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tuning.h"
#include "controller/ctrl.h"
#include "controller/ops.h"
#include "controller/tuning.h"
#include "controller/tuning/job.h"
#include "db/db.h"
#include "db/run.h"
#include "db/tuning.h"
#include "tuner/tuner.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* The step runs at least this often while a tuning job is active. */
#define TICK_MS 250

void ctrl_tuning_wake(struct ctrl_ctx *ctx)
{
	atomic_store(&ctx->tuning.dirty, 1);
	ctrl_reconciler_wake(ctx);
}

/*
 * The caller a tuning job's training jobs are created as: its owner, with
 * no key of its own, so that their URIs are checked against those of the
 * owner's keys (controller/uris.c) as they are when it is created.
 */
static void owner_caller(const struct ctrl_tuning_job *j,
			 struct ctrl_caller *who)
{
	memset(who, 0, sizeof(*who));
	who->owner = j->t.owner;
	who->run_as = j->t.run_as;
	who->admin = 0;
}

/* Whether training job name is one of tuning job j's: 0 or ERR_CONFLICT. */
static int is_ours(struct ctrl_ctx *ctx, const struct ctrl_tuning_job *j,
		   const char *name, struct buf *err)
{
	struct db_job job;
	struct buf want = BUF_INIT;
	int ret = db_job_get(ctx->db, name, &job, err);

	if (ret)
		return ret == ERR_NOTFOUND ? ERR_CONFLICT : ret;
	(void)buf_addf(&want, "\"TuningJobArn\":\"%s\"", j->t.arn);
	if (!job.request_json || !strstr(job.request_json, want.data)) {
		buf_reset(err);
		(void)buf_addf(err,
			       "a training job named %s exists and is not "
			       "this tuning job's",
			       name);
		ret = ERR_CONFLICT;
	}
	db_job_release(&job);
	buf_release(&want);
	return ret;
}

static int create_kid(struct ctrl_ctx *ctx, struct ctrl_tuning_job *j,
		      const struct db_tuning_child *c, struct buf *err)
{
	const struct api_tuning_def *d = ctrl_tuning_def_of(j, c->def);
	struct ctrl_caller who;
	struct buf body = BUF_INIT;
	double *x = ctrl_tuning_parse_point(c->point, d->n_ranges);
	char **vals = api_tuning_values(d, x);
	char *arn = NULL;
	size_t k;
	int ret;

	owner_caller(j, &who);
	ret = api_tuning_child_body(&j->spec, d, c->job, vals, &body);
	if (!ret)
		ret = ctrl_job_create(ctx, &who, body.data, body.len, j->t.arn,
				      &arn, err);
	/* Created before a restart that came between the two writes: it is
	 * ours when it names this tuning job. */
	if (ret == ERR_CONFLICT)
		ret = is_ours(ctx, j, c->job, err);
	if (!ret)
		ret = db_tuning_child_created(ctx->db, j->t.name, c->idx, err);
	else
		log_error("tuning job '%s': cannot create training job '%s': "
			  "%s",
			  j->t.name, c->job, err->data);
	free(arn);
	for (k = 0; vals[k]; k++)
		free(vals[k]);
	free(vals);
	free(x);
	buf_release(&body);
	return ret;
}

static void kid_name(const struct ctrl_tuning_job *j, int idx, struct buf *out)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a of uid and idx */
	const char *p;
	char num[16];

	snprintf(num, sizeof(num), "/%d", idx);
	for (p = j->t.uid; p && *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	for (p = num; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	(void)buf_addf(out, "%s-%03d-%08x", j->t.name, idx + 1,
		       (unsigned)(h ^ (h >> 32)));
}

/* The evaluated points of definition def, plus those of warm-start
 * parents that fit its space. */
struct evals {
	struct tune_obs *obs;
	size_t n;
	double **owned; /* points made for parents' results */
	size_t n_owned;
	const double **pending;
	size_t n_pending;
};

static void evals_release(struct evals *e)
{
	size_t i;

	for (i = 0; i < e->n_owned; i++)
		free(e->owned[i]);
	free(e->owned);
	free(e->obs);
	free(e->pending);
	memset(e, 0, sizeof(*e));
}

static void add_parent_points(struct ctrl_ctx *ctx,
			      const struct ctrl_tuning_job *j,
			      const struct api_tuning_def *d, struct evals *e)
{
	struct ctrl_tuning_job *parents;
	size_t n_parents, i, k;

	ctrl_tuning_parents_load(ctx, j, &parents, &n_parents);
	for (i = 0; i < n_parents; i++) {
		for (k = 0; k < parents[i].n; k++) {
			const struct ctrl_tuning_kid *kd = &parents[i].kids[k];
			const struct api_tuning_def *pd =
				ctrl_tuning_def_of(&parents[i], kd->c->def);
			char **names;
			double *x;

			if (!kd->succeeded)
				continue;
			names = ctrl_tuning_range_names(pd);
			x = xcalloc(d->n_ranges + 1, sizeof(*x));
			if (!api_tuning_point(d, names, kd->vals, pd->n_ranges,
					      x)) {
				e->obs = xrealloc(e->obs,
						  (e->n + 1) * sizeof(*e->obs));
				e->owned = xrealloc(e->owned,
						    (e->n_owned + 1) *
							    sizeof(*e->owned));
				e->owned[e->n_owned++] = x;
				e->obs[e->n].x = x;
				e->obs[e->n].y = d->maximize ?
							 -kd->c->objective :
							 kd->c->objective;
				e->n++;
			} else {
				free(x);
			}
			free(names);
		}
	}
	ctrl_tuning_parents_free(parents, n_parents);
}

static void gather(struct ctrl_ctx *ctx, const struct ctrl_tuning_job *j,
		   int def, struct evals *e)
{
	const struct api_tuning_def *d = ctrl_tuning_def_of(j, def);
	size_t i;

	memset(e, 0, sizeof(*e));
	if (j->spec.n_parents)
		add_parent_points(ctx, j, d, e);
	e->obs = xrealloc(e->obs, (e->n + j->n + 1) * sizeof(*e->obs));
	e->pending = xcalloc(j->n + 1, sizeof(*e->pending));
	for (i = 0; i < j->n; i++) {
		const struct ctrl_tuning_kid *kd = &j->kids[i];

		if (kd->c->def != def)
			continue;
		if (kd->succeeded) {
			e->obs[e->n].x = kd->x;
			e->obs[e->n].y = kd->y;
			e->n++;
		} else if (kd->active) {
			e->pending[e->n_pending++] = kd->x;
		}
	}
}

/*
 * A test hook for a crash between two writes: with
 * TRAINCTLD_CRASH_POINT=tuning-row:N in the environment, the controller
 * kills itself (SIGKILL) right after recording its Nth training job of a
 * tuning job, before creating it (tests/integration/test_tuning.py).
 */
static void crash_point(struct ctrl_ctx *ctx)
{
	const char *v = getenv("TRAINCTLD_CRASH_POINT");

	if (v && !strncmp(v, "tuning-row:", 11) &&
	    ++ctx->tuning.crash_rows == atoi(v + 11))
		(void)raise(SIGKILL);
}

/* The next point of definition def, from the optimizer. */
static int suggest(struct ctrl_ctx *ctx, const struct ctrl_tuning_job *j,
		   int def, struct db_tuning_child *c, struct buf *err)
{
	const struct api_tuning_def *d = ctrl_tuning_def_of(j, def);
	struct tune_request rq;
	struct evals e;
	double *x;
	int ret;

	gather(ctx, j, def, &e);
	memset(&rq, 0, sizeof(rq));
	rq.space = &d->space;
	rq.strategy = j->spec.strategy;
	rq.seed = j->t.seed;
	rq.index = (size_t)j->n_fresh;
	rq.budget = (size_t)ctrl_tuning_budget(j);
	rq.obs = e.obs;
	rq.n_obs = e.n;
	rq.pending = e.pending;
	rq.n_pending = e.n_pending;
	x = xcalloc(d->n_ranges + 1, sizeof(*x));
	ret = tune_suggest(&rq, x, err);
	evals_release(&e);
	if (!ret)
		c->point = ctrl_tuning_format_point(x, d->n_ranges);
	free(x);
	return ret;
}

/* Records the next training job (a retry, or a new point), then creates
 * it. */
static int launch(struct ctrl_ctx *ctx, struct ctrl_tuning_job *j,
		  struct buf *err)
{
	struct db_tuning_child c;
	struct ctrl_tuning_next next;
	struct buf name = BUF_INIT;
	int ret = 0;

	ctrl_tuning_next(j, &next);
	memset(&c, 0, sizeof(c));
	if (next.retry >= 0) {
		c.point = xstrdup(j->kids[next.retry].c->point);
		c.retry_of = j->kids[next.retry].c->idx;
	} else {
		ret = suggest(ctx, j, next.def, &c, err);
		if (ret)
			return ret;
		c.retry_of = -1;
	}
	kid_name(j, next.idx, &name);
	c.idx = next.idx;
	c.job = name.data;
	c.def = next.def;
	c.metric = ctrl_tuning_def_of(j, next.def)->metric;
	ret = db_tuning_child_add(ctx->db, j->t.name, &c, err);
	if (!ret) {
		crash_point(ctx);
		ret = create_kid(ctx, j, &c, err);
	}
	if (!ret)
		log_info("tuning job '%s': training job '%s' launched%s",
			 j->t.name, c.job, next.retry >= 0 ? " (a retry)" : "");
	free(c.point);
	buf_release(&name);
	return ret;
}

/*
 * The objective's reports of a training job, lower is better: those of
 * its first host that reported it (a job on several hosts reports once
 * per host; interleaved they would not be one curve).
 */
static double *read_curve(struct ctrl_ctx *ctx, const struct ctrl_tuning_job *j,
			  const struct ctrl_tuning_kid *kd, size_t *n)
{
	const struct api_tuning_def *d = ctrl_tuning_def_of(j, kd->c->def);
	struct db_metric *pts = NULL;
	struct buf err = BUF_INIT;
	double *y = NULL;
	size_t i, np = 0, k = 0;
	int first = 0;

	*n = 0;
	if (!kd->exists ||
	    db_metric_series(ctx->db, kd->c->job, d->metric, &pts, &np, &err)) {
		buf_release(&err);
		return NULL;
	}
	for (i = 0; i < np; i++)
		if (pts[i].host > 0 && (!first || pts[i].host < first))
			first = pts[i].host;
	y = xcalloc(np + 1, sizeof(*y));
	for (i = 0; i < np; i++) {
		if (!pts[i].host || pts[i].host == first)
			y[k++] = d->maximize ? -pts[i].value : pts[i].value;
		free(pts[i].name);
	}
	free(pts);
	*n = k;
	buf_release(&err);
	return y;
}

/*
 * The curves of training jobs that ended, by tuning job and child index:
 * they no longer change, so each step reads only the running jobs' ones
 * (at 500 children, 3 queries a step instead of 500). Used by the
 * reconciler thread only, a list from ctx->tuning.curves; a tuning job's
 * curves go when it is no longer active (curve_memo_prune).
 */
struct ctrl_tuning_curves {
	char *tuning;
	char *uid; /* a tuning job of the same name made again is another */
	struct tune_curve *by_idx; /* y NULL: not kept */
	size_t n;
	struct ctrl_tuning_curves *next;
};

/* Reports still on their way when a job ends: a curve is kept this long
 * after its job's end, and read afresh until then. */
#define CURVE_SETTLE_MS 5000

static void curve_memo_clear(struct ctrl_tuning_curves *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free((double *)m->by_idx[i].y);
	free(m->by_idx);
	free(m->uid);
	m->by_idx = NULL;
	m->n = 0;
	m->uid = NULL;
}

static void curve_memo_free(struct ctrl_tuning_curves *m)
{
	curve_memo_clear(m);
	free(m->tuning);
	free(m);
}

static struct ctrl_tuning_curves *curve_memo_of(struct ctrl_ctx *ctx,
						const struct db_tuning *t)
{
	const char *uid = t->uid ? t->uid : "";
	struct ctrl_tuning_curves *m;

	for (m = ctx->tuning.curves; m; m = m->next)
		if (!strcmp(m->tuning, t->name))
			break;
	if (!m) {
		m = xcalloc(1, sizeof(*m));
		m->tuning = xstrdup(t->name);
		m->next = ctx->tuning.curves;
		ctx->tuning.curves = m;
	}
	if (!m->uid || strcmp(m->uid, uid)) {
		curve_memo_clear(m);
		m->uid = xstrdup(uid);
	}
	return m;
}

/* Drops the curves of tuning jobs not among the n active ones. */
static void curve_memo_prune(struct ctrl_ctx *ctx, char *const *active,
			     size_t n)
{
	struct ctrl_tuning_curves **p = &ctx->tuning.curves;

	while (*p) {
		struct ctrl_tuning_curves *m = *p;
		size_t i;

		for (i = 0; i < n && strcmp(active[i], m->tuning); i++)
			;
		if (i < n) {
			p = &m->next;
			continue;
		}
		*p = m->next;
		curve_memo_free(m);
	}
}

/*
 * The curve of kd, read from the database unless kept; a curve whose job
 * ended over CURVE_SETTLE_MS ago is kept. The caller frees the result
 * when *owned is set.
 */
static const double *curve_of(struct ctrl_ctx *ctx,
			      const struct ctrl_tuning_job *j,
			      const struct ctrl_tuning_kid *kd, int64_t now,
			      size_t *n, int *owned)
{
	struct ctrl_tuning_curves *m = curve_memo_of(ctx, &j->t);
	size_t at = kd->c->idx >= 0 ? (size_t)kd->c->idx : 0;
	double *y;

	if (at < m->n && m->by_idx[at].y) {
		*owned = 0;
		*n = m->by_idx[at].n;
		return m->by_idx[at].y;
	}
	y = read_curve(ctx, j, kd, n);
	*owned = 1;
	if (!y || !kd->terminal || !kd->c->end_ms ||
	    now - kd->c->end_ms < CURVE_SETTLE_MS)
		return y;
	if (at >= m->n) {
		size_t grow = at + 16;

		m->by_idx = xrealloc(m->by_idx, grow * sizeof(*m->by_idx));
		memset(m->by_idx + m->n, 0, (grow - m->n) * sizeof(*m->by_idx));
		m->n = grow;
	}
	m->by_idx[at].y = y;
	m->by_idx[at].n = *n;
	*owned = 0;
	return y;
}

/*
 * The curves of j's training jobs, for early stopping: curves[i] of kid i
 * (n 0: none). *owned collects those the caller frees.
 */
static struct tune_curve *read_curves(struct ctrl_ctx *ctx,
				      const struct ctrl_tuning_job *j,
				      int64_t now, double ***owned)
{
	struct tune_curve *curves = xcalloc(j->n + 1, sizeof(*curves));
	size_t i;

	*owned = xcalloc(j->n + 1, sizeof(**owned));
	for (i = 0; i < j->n; i++) {
		int mine;

		curves[i].y =
			curve_of(ctx, j, &j->kids[i], now, &curves[i].n, &mine);
		(*owned)[i] = mine ? (double *)curves[i].y : NULL;
	}
	return curves;
}

/* Early stopping's decisions: each job is marked, then told to stop. */
static void early_stop(struct ctrl_ctx *ctx, const struct ctrl_tuning_job *j,
		       const struct ctrl_tuning_plan_out *out)
{
	struct buf err = BUF_INIT;
	size_t i;

	for (i = 0; i < out->n_stops; i++) {
		const struct ctrl_tuning_kid *kd = &j->kids[out->stops[i].kid];
		const char *why = out->stops[i].why.data;

		buf_reset(&err);
		if (!db_tuning_child_early_stop(ctx->db, j->t.name, kd->c->idx,
						why, &err) &&
		    !ctrl_job_stop_with(ctx, kd->c->job, why, &err))
			log_info("%s: %s", kd->c->job, why);
	}
	buf_release(&err);
}

/*
 * Creates the training jobs recorded before a restart but never created.
 * One refused for good (the cluster changed since the create was
 * checked) fails the tuning job.
 */
static void create_recorded(struct ctrl_ctx *ctx, struct ctrl_tuning_job *j,
			    int64_t now)
{
	struct buf err = BUF_INIT;
	size_t i;
	int failed = 0;

	for (i = 0; i < j->n && !failed; i++) {
		struct buf why = BUF_INIT;
		struct buf e2 = BUF_INIT;
		int r;

		if (j->rows[i].created)
			continue;
		buf_reset(&err);
		r = create_kid(ctx, j, &j->rows[i], &err);
		failed = r == ERR_INVALID || r == ERR_LIMIT || r == ERR_AUTH ||
			 r == ERR_CONFLICT;
		if (!failed)
			continue;
		(void)buf_addf(&why, "Cannot create training job %s: %s",
			       j->rows[i].job, err.data);
		if (!db_tuning_set_status(ctx->db, j->t.name, "InProgress",
					  "Failed", why.data, now, now, &e2))
			log_error("tuning job '%s' Failed: %s", j->t.name,
				  why.data);
		buf_release(&why);
		buf_release(&e2);
	}
	buf_release(&err);
}

/* Launching no more: the running jobs are told to stop. */
static void halt_running(struct ctrl_ctx *ctx, const struct ctrl_tuning_job *j,
			 const struct ctrl_tuning_plan_out *out)
{
	struct buf err = BUF_INIT;
	size_t i;

	for (i = 0; i < out->n_halt; i++) {
		buf_reset(&err);
		(void)ctrl_job_stop_with(ctx, j->kids[out->halt[i]].c->job,
					 out->halt_msg.data, &err);
	}
	buf_release(&err);
}

static void end_tuning(struct ctrl_ctx *ctx, const struct ctrl_tuning_job *j,
		       int64_t now, const struct ctrl_tuning_plan_out *out)
{
	struct buf err = BUF_INIT;
	const char *why = out->why;

	if (!db_tuning_set_status(ctx->db, j->t.name, j->t.status, out->to,
				  out->reason.len ? out->reason.data : NULL,
				  now, now, &err))
		log_info("tuning job '%s' %s%s%s", j->t.name, out->to,
			 why && *why && strcmp(why, "failed") ? ": " : "",
			 why && strcmp(why, "failed") ? why : "");
	buf_release(&err);
}

/* New training jobs, each seeing the ones before it as pending. */
static void launch_some(struct ctrl_ctx *ctx, const char *name,
			struct ctrl_tuning_job *j, int n)
{
	struct buf err = BUF_INIT;

	while (n-- > 0) {
		buf_reset(&err);
		if (launch(ctx, j, &err)) {
			log_error("tuning job '%s': %s", j->t.name, err.data);
			break;
		}
		ctrl_tuning_job_release(j);
		buf_reset(&err);
		if (ctrl_tuning_job_load(ctx, name, j, &err))
			break;
	}
	buf_release(&err);
}

/*
 * Asks the plan; when it found convergence, records it and asks again
 * (without early stops, already carried out), as the end it gives depends
 * on whether the record was made.
 */
static void plan(struct ctrl_ctx *ctx, struct ctrl_tuning_job *j,
		 struct ctrl_tuning_plan_in *in,
		 struct ctrl_tuning_plan_out *out)
{
	struct buf err = BUF_INIT;

	ctrl_tuning_plan(in, out);
	if (out->act == CTRL_TUNING_CREATE)
		return;
	early_stop(ctx, j, out);
	if (out->act != CTRL_TUNING_CONVERGE)
		return;
	if (!db_tuning_set_convergence(ctx->db, j->t.name, in->now, &err))
		j->t.convergence_ms = in->now;
	else
		in->convergence_unrecorded = 1;
	buf_release(&err);
	in->curves = NULL;
	ctrl_tuning_plan_release(out);
	ctrl_tuning_plan(in, out);
}

static void step(struct ctrl_ctx *ctx, const char *name, int64_t now)
{
	struct buf err = BUF_INIT;
	struct ctrl_tuning_job j;
	struct ctrl_tuning_plan_in in;
	struct ctrl_tuning_plan_out out;
	struct tune_curve *curves = NULL;
	double **owned = NULL;
	size_t i, n_curves = 0;

	if (ctrl_tuning_job_load(ctx, name, &j, &err)) {
		log_error("tuning job '%s': %s", name, err.data);
		buf_release(&err);
		return;
	}
	memset(&in, 0, sizeof(in));
	in.j = &j;
	in.now = now;
	if (ctrl_tuning_wants_curves(&j)) {
		in.curves = curves = read_curves(ctx, &j, now, &owned);
		n_curves = j.n;
	}
	plan(ctx, &j, &in, &out);
	switch (out.act) {
	case CTRL_TUNING_CREATE:
		create_recorded(ctx, &j, now);
		atomic_store(&ctx->tuning.dirty, 1);
		break;
	case CTRL_TUNING_WIND_DOWN:
		halt_running(ctx, &j, &out);
		break;
	case CTRL_TUNING_END:
		end_tuning(ctx, &j, now, &out);
		break;
	case CTRL_TUNING_LAUNCH:
		launch_some(ctx, name, &j, out.n_launch);
		break;
	case CTRL_TUNING_NOTHING:
	case CTRL_TUNING_CONVERGE:
		break;
	}
	/* By the count read: a launch reloads j, and j.n grows. */
	for (i = 0; i < n_curves; i++)
		free(owned[i]);
	free(owned);
	free(curves);
	ctrl_tuning_plan_release(&out);
	ctrl_tuning_job_release(&j);
	buf_release(&err);
}

void ctrl_tuning_tick(struct ctrl_ctx *ctx)
{
	int64_t now = time_now_ms();
	struct buf err = BUF_INIT;
	char **names = NULL;
	size_t n = 0, i;

	if (!atomic_exchange(&ctx->tuning.dirty, 0) &&
	    now < ctx->tuning.next_tick_ms)
		return;
	if (db_tuning_active(ctx->db, &names, &n, &err)) {
		log_error("cannot read tuning jobs: %s", err.data);
		n = 0;
	}
	for (i = 0; i < n; i++)
		step(ctx, names[i], now);
	curve_memo_prune(ctx, names, n);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	ctx->tuning.next_tick_ms = now + (n ? TICK_MS : 1000);
	buf_release(&err);
}

void ctrl_tuning_release(struct ctrl_ctx *ctx)
{
	curve_memo_prune(ctx, NULL, 0);
}
