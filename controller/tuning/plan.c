/*
 * The tuning step's decisions (controller/tuning/plan.h). A step, in the
 * reconciler:
 *   1. training jobs recorded but not created (a restart between the two
 *      writes) are created;
 *   2. early stopping: the median rule (Auto) or asynchronous successive
 *      halving (Hyperband) over the objective's reports so far;
 *   3. the end conditions: the budget spent, the target reached, the best
 *      not improving, convergence, MaxRuntimeInSeconds, a Stop;
 *   4. new training jobs up to MaxParallelTrainingJobs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/reason.h"
#include "controller/tuning/plan.h"
#include "common/xalloc.h"
#include "common/banned.h"

int ctrl_tuning_status_terminal(const char *s)
{
	return s && (!strcmp(s, "Completed") || !strcmp(s, "Failed") ||
		     !strcmp(s, "Stopped"));
}

const struct api_tuning_def *ctrl_tuning_def_of(const struct ctrl_tuning_job *j,
						int def)
{
	return &j->spec.defs[def >= 0 && (size_t)def < j->spec.n_defs ? def : 0];
}

/* Whether a later row retries row idx. */
static int is_retried(const struct ctrl_tuning_job *j, int idx)
{
	size_t k;

	for (k = 0; k < j->n; k++)
		if (j->rows[k].retry_of == idx)
			return 1;
	return 0;
}

/* The flags of kid i, and what it spends of the budget. */
static void classify(struct ctrl_tuning_job *j, size_t i, int in_progress)
{
	struct ctrl_tuning_kid *kd = &j->kids[i];
	const struct db_tuning_child *c = kd->c;
	const struct api_tuning_def *d = ctrl_tuning_def_of(j, c->def);

	kd->exists = c->status != NULL;
	kd->terminal = ctrl_tuning_status_terminal(c->status);
	/* Not there: about to be created, or deleted after it ran. */
	kd->active = kd->exists ? !kd->terminal : in_progress && !c->created;
	kd->retryable = c->status && !strcmp(c->status, "Failed") &&
			api_reason_is_internal(c->failure_reason);
	kd->succeeded = kd->terminal && strcmp(c->status, "Failed") &&
			c->has_objective;
	kd->y = d->maximize ? -c->objective : c->objective;
	if (c->retry_of < 0)
		j->n_fresh++;
	if (!(kd->retryable && is_retried(j, c->idx)) &&
	    (kd->exists || c->created || in_progress))
		j->n_budget_used++;
}

/* Kid i in TrainingJobStatusCounters and ObjectiveStatusCounters. */
static void count(struct ctrl_tuning_job *j, size_t i)
{
	const struct ctrl_tuning_kid *kd = &j->kids[i];
	const char *status = kd->c->status;

	if (!kd->exists && !kd->active)
		return;
	if (kd->active) {
		j->jobs.in_progress++;
		j->n_active++;
	} else if (!strcmp(status, "Completed")) {
		j->jobs.completed++;
	} else if (!strcmp(status, "Stopped")) {
		j->jobs.stopped++;
	} else if (kd->retryable) {
		j->jobs.retryable_error++;
	} else {
		j->jobs.non_retryable_error++;
		j->n_nonretryable++;
	}
	if (kd->succeeded)
		j->objectives.succeeded++;
	else if (kd->terminal)
		j->objectives.failed++;
	else
		j->objectives.pending++;
}

/* The succeeded kid that ended first among those not taken, or -1. */
static int next_ended(const struct ctrl_tuning_job *j)
{
	int next = -1;
	size_t i;

	for (i = 0; i < j->n; i++) {
		const struct ctrl_tuning_kid *kd = &j->kids[i];
		const struct db_tuning_child *b;

		if (!kd->succeeded || kd->c->end_ms < 0)
			continue;
		if (next < 0) {
			next = (int)i;
			continue;
		}
		b = j->kids[next].c;
		if (kd->c->end_ms < b->end_ms ||
		    (kd->c->end_ms == b->end_ms && kd->c->idx < b->idx))
			next = (int)i;
	}
	return next;
}

/* Best and "not improving", in the order the jobs ended. */
static void rank(struct ctrl_tuning_job *j)
{
	size_t i;
	int next;

	while ((next = next_ended(j)) >= 0) {
		j->n_succeeded++;
		if (j->best < 0 || j->kids[next].y < j->kids[j->best].y) {
			j->best = next;
			j->not_improving = 0;
		} else {
			j->not_improving++;
		}
		/* Taken: mark with a negative end so it is not seen again. */
		j->kids[next].c->end_ms = -1 - j->kids[next].c->end_ms;
	}
	for (i = 0; i < j->n; i++)
		if (j->kids[i].c->end_ms < 0)
			j->kids[i].c->end_ms = -1 - j->kids[i].c->end_ms;
}

void ctrl_tuning_summarize(struct ctrl_tuning_job *j)
{
	int in_progress = !strcmp(j->t.status, "InProgress");
	size_t i;

	memset(&j->jobs, 0, sizeof(j->jobs));
	memset(&j->objectives, 0, sizeof(j->objectives));
	j->best = -1;
	j->not_improving = 0;
	j->n_active = j->n_budget_used = j->n_fresh = 0;
	j->n_nonretryable = j->n_succeeded = 0;
	for (i = 0; i < j->n; i++) {
		classify(j, i, in_progress);
		count(j, i);
	}
	rank(j);
}

int ctrl_tuning_budget(const struct ctrl_tuning_job *j)
{
	if (j->spec.strategy == TUNE_GRID) {
		size_t g = tune_grid_size(&j->spec.defs[0].space);

		if (!j->spec.max_jobs || (size_t)j->spec.max_jobs > g)
			return (int)g;
	}
	return j->spec.max_jobs;
}

/* Whether a step only creates the rows a restart left behind. */
static int must_create(const struct ctrl_tuning_job *j)
{
	size_t i;

	if (!strcmp(j->t.status, "Stopping"))
		return 0;
	for (i = 0; i < j->n; i++)
		if (!j->rows[i].created)
			return 1;
	return 0;
}

/* kd runs and was not told to stop: early stopping may judge it. */
static int can_stop(const struct ctrl_tuning_kid *kd)
{
	return kd->exists && !kd->terminal && !kd->c->early_stop &&
	       !strcmp(kd->c->status, "InProgress");
}

int ctrl_tuning_wants_curves(const struct ctrl_tuning_job *j)
{
	size_t i;

	if (must_create(j))
		return 0;
	if (j->spec.strategy != TUNE_HYPERBAND && !j->spec.early_stopping)
		return 0;
	for (i = 0; i < j->n; i++)
		if (can_stop(&j->kids[i]))
			return 1;
	return 0;
}

/* The last value of curve c in the objective's own direction. */
static double last_value(const struct api_tuning_def *d,
			 const struct tune_curve *c)
{
	return d->maximize ? -c->y[c->n - 1] : c->y[c->n - 1];
}

/* Whether Hyperband stops kid i, given the others' curves; why says so. */
static int judge_hyperband(const struct ctrl_tuning_job *j, size_t i,
			   const struct tune_curve *curves,
			   const struct tune_curve *others, size_t n_others,
			   struct buf *why)
{
	const struct api_tuning_def *d =
		ctrl_tuning_def_of(j, j->kids[i].c->def);
	const struct tune_curve *cur = &curves[i];

	if ((double)cur->n > d->hb_max) {
		(void)buf_addf(why,
			       "Stopped by hyperparameter tuning job %s: it "
			       "went past MaxResource (%g reports of %s)",
			       j->t.name, d->hb_max, d->metric);
		return 1;
	}
	if (!tune_asha_stop(others, n_others, cur, j->spec.hb_min, d->hb_max,
			    3.0))
		return 0;
	(void)buf_addf(why,
		       "Stopped early by hyperparameter tuning job %s "
		       "(Hyperband): at the last rung of successive halving "
		       "it reached, its %s was not among the best third (now "
		       "%g after %zu reports)",
		       j->t.name, d->metric, last_value(d, cur), cur->n);
	return 1;
}

/* Whether the median rule stops kid i; why says so. */
static int judge_median(const struct ctrl_tuning_job *j, size_t i,
			const struct tune_curve *curves,
			const struct tune_curve *others, size_t n_others,
			struct buf *why)
{
	const struct api_tuning_def *d =
		ctrl_tuning_def_of(j, j->kids[i].c->def);
	const struct tune_curve *cur = &curves[i];

	if (!tune_median_stop(others, n_others, cur))
		return 0;
	(void)buf_addf(why,
		       "Stopped early by hyperparameter tuning job %s: %s %g "
		       "after %zu reports is worse than the median of the "
		       "other training jobs' running averages",
		       j->t.name, d->metric, last_value(d, cur), cur->n);
	return 1;
}

/* Whether early stopping ends kid i now; why says so. */
static int judge(const struct ctrl_tuning_job *j, size_t i,
		 const struct tune_curve *curves, struct buf *why)
{
	const struct ctrl_tuning_kid *kd = &j->kids[i];
	struct tune_curve *others;
	size_t k, n_others = 0;
	int stop;

	if (!can_stop(kd) || !curves[i].n)
		return 0;
	others = xcalloc(j->n + 1, sizeof(*others));
	for (k = 0; k < j->n; k++)
		if (k != i && j->kids[k].c->def == kd->c->def && curves[k].n)
			others[n_others++] = curves[k];
	if (j->spec.strategy == TUNE_HYPERBAND)
		stop = judge_hyperband(j, i, curves, others, n_others, why);
	else
		stop = judge_median(j, i, curves, others, n_others, why);
	free(others);
	return stop;
}

static void plan_stops(const struct ctrl_tuning_plan_in *in,
		       struct ctrl_tuning_plan_out *out)
{
	const struct ctrl_tuning_job *j = in->j;
	struct buf why = BUF_INIT;
	size_t i;

	if (!in->curves || !ctrl_tuning_wants_curves(j))
		return;
	out->stops = xcalloc(j->n + 1, sizeof(*out->stops));
	for (i = 0; i < j->n; i++) {
		buf_reset(&why);
		if (!judge(j, i, in->curves, &why))
			continue;
		out->stops[out->n_stops].kid = i;
		out->stops[out->n_stops].why = why;
		out->n_stops++;
		buf_init(&why, 0);
	}
	buf_release(&why);
}

/* The end of the last quarter's start among the succeeded jobs' ends. */
static int64_t last_quarter_cut(const struct ctrl_tuning_job *j)
{
	int64_t *ends = xcalloc(j->n + 1, sizeof(*ends));
	size_t i, k, n_ends = 0;
	int64_t cut;

	for (i = 0; i < j->n; i++)
		if (j->kids[i].succeeded)
			ends[n_ends++] = j->kids[i].c->end_ms;
	for (i = 0; i < n_ends; i++) {
		size_t later = 0;

		for (k = 0; k < n_ends; k++)
			later += ends[k] > ends[i];
		if (later == n_ends / 4)
			break;
	}
	cut = i < n_ends ? ends[i] : INT64_MAX;
	free(ends);
	return cut;
}

/* No gain of CTRL_TUNING_CONVERGE_GAIN of the range in the last quarter. */
static int converged(const struct ctrl_tuning_job *j)
{
	double lo = INFINITY, hi = -INFINITY, best_old = INFINITY;
	double best_all = INFINITY;
	int64_t cut = last_quarter_cut(j);
	size_t i, n_recent = 0;

	for (i = 0; i < j->n; i++) {
		const struct ctrl_tuning_kid *kd = &j->kids[i];

		if (!kd->succeeded)
			continue;
		lo = kd->y < lo ? kd->y : lo;
		hi = kd->y > hi ? kd->y : hi;
		best_all = kd->y < best_all ? kd->y : best_all;
		if (kd->c->end_ms <= cut)
			best_old = kd->y < best_old ? kd->y : best_old;
		else
			n_recent++;
	}
	return n_recent &&
	       best_old - best_all <= CTRL_TUNING_CONVERGE_GAIN * (hi - lo);
}

static int target_reached(const struct ctrl_tuning_job *j)
{
	const struct ctrl_tuning_kid *best = j->best >= 0 ? &j->kids[j->best] :
							    NULL;

	if (!best || !j->spec.has_target)
		return 0;
	return ctrl_tuning_def_of(j, best->c->def)->maximize ?
		       best->c->objective >= j->spec.target :
		       best->c->objective <= j->spec.target;
}

/*
 * Why the tuning job should launch no more jobs, or NULL; *converge is set
 * when it is because convergence was found just now (to be recorded).
 */
static const char *done_reason(const struct ctrl_tuning_plan_in *in,
			       int *converge)
{
	const struct ctrl_tuning_job *j = in->j;

	*converge = 0;
	if (target_reached(j))
		return "the objective reached TargetObjectiveMetricValue";
	if (j->spec.not_improving && j->not_improving >= j->spec.not_improving)
		return "the best objective did not improve in "
		       "MaxNumberOfTrainingJobsNotImproving training jobs";
	if (j->spec.max_runtime_s &&
	    in->now - j->t.creation_ms >= j->spec.max_runtime_s * 1000)
		return "MaxRuntimeInSeconds was reached";
	if (j->t.convergence_ms)
		return "the objective converged";
	if (j->spec.convergence && !in->convergence_unrecorded &&
	    j->n_succeeded >= CTRL_TUNING_CONVERGE_MIN && converged(j)) {
		*converge = 1;
		return "the objective converged";
	}
	if (j->n_nonretryable >= CTRL_TUNING_FAIL_FAST && !j->n_succeeded)
		return "failed";
	if (j->n_budget_used >= ctrl_tuning_budget(j))
		return "";
	return NULL;
}

/* Launching no more: stop what runs (unless the budget is spent), or end
 * when nothing runs any more. */
static void plan_wind_down(const struct ctrl_tuning_job *j, int stopping,
			   struct ctrl_tuning_plan_out *out)
{
	size_t i;

	for (i = 0; i < j->n; i++)
		if (j->kids[i].exists && !j->kids[i].terminal)
			break;
	if (i == j->n) {
		out->act = CTRL_TUNING_END;
		if (stopping) {
			out->to = "Stopped";
		} else if (!j->n_succeeded) {
			const char *first = NULL;

			out->to = "Failed";
			for (i = 0; i < j->n && !first; i++)
				first = j->kids[i].c->failure_reason;
			(void)buf_addf(&out->reason,
				       "No training job succeeded with an "
				       "objective metric value%s%s",
				       first ? ": " : "", first ? first : "");
		} else {
			out->to = "Completed";
		}
		return;
	}
	out->act = CTRL_TUNING_WIND_DOWN;
	/* A spent budget lets the running jobs finish. */
	if (!*out->why)
		return;
	(void)buf_addf(&out->halt_msg,
		       "Stopping: hyperparameter tuning job %s %s", j->t.name,
		       stopping ? "is stopping" : out->why);
	out->halt = xcalloc(j->n + 1, sizeof(*out->halt));
	for (i = 0; i < j->n; i++) {
		const struct ctrl_tuning_kid *kd = &j->kids[i];

		if (kd->exists && !kd->terminal &&
		    !strcmp(kd->c->status, "InProgress"))
			out->halt[out->n_halt++] = i;
	}
}

void ctrl_tuning_plan(const struct ctrl_tuning_plan_in *in,
		      struct ctrl_tuning_plan_out *out)
{
	const struct ctrl_tuning_job *j = in->j;
	int stopping = !strcmp(j->t.status, "Stopping");
	int converge = 0, room, left;

	memset(out, 0, sizeof(*out));
	buf_init(&out->halt_msg, 0);
	buf_init(&out->reason, 0);
	if (must_create(j)) {
		out->act = CTRL_TUNING_CREATE;
		return;
	}
	plan_stops(in, out);
	out->why = stopping ? "stopped" : done_reason(in, &converge);
	if (!stopping && converge) {
		out->act = CTRL_TUNING_CONVERGE;
		return;
	}
	if (out->why) {
		plan_wind_down(j, stopping, out);
		return;
	}
	room = j->spec.max_parallel - j->n_active;
	left = ctrl_tuning_budget(j) - j->n_budget_used;
	out->n_launch = room < left ? room : left;
	if (out->n_launch < 0)
		out->n_launch = 0;
	out->act = out->n_launch ? CTRL_TUNING_LAUNCH : CTRL_TUNING_NOTHING;
}

void ctrl_tuning_plan_release(struct ctrl_tuning_plan_out *out)
{
	size_t i;

	for (i = 0; i < out->n_stops; i++)
		buf_release(&out->stops[i].why);
	free(out->stops);
	free(out->halt);
	buf_release(&out->halt_msg);
	buf_release(&out->reason);
	memset(out, 0, sizeof(*out));
}

void ctrl_tuning_next(const struct ctrl_tuning_job *j,
		      struct ctrl_tuning_next *next)
{
	size_t i;

	next->idx = j->n ? j->rows[j->n - 1].idx + 1 : 0;
	next->retry = -1;
	/* A job that failed with an internal error runs again, once. */
	for (i = 0; i < j->n && next->retry < 0; i++) {
		const struct ctrl_tuning_kid *kd = &j->kids[i];

		if (kd->retryable && kd->c->retry_of < 0 &&
		    !is_retried(j, kd->c->idx))
			next->retry = (int)i;
	}
	next->def = next->retry >= 0 ? j->kids[next->retry].c->def :
				       j->n_fresh % (int)j->spec.n_defs;
}
