#define LOG_TAG "tune"

/*
 * Hyperparameter tuning jobs (controller/tuning.h, docs/tuning.md).
 *
 * A step of a tuning job, in the reconciler:
 *   1. training jobs recorded but not created (a restart between the two
 *      writes) are created;
 *   2. early stopping: the median rule (Auto) or asynchronous successive
 *      halving (Hyperband) over the objective's reports so far;
 *   3. the end conditions: the budget spent, the target reached, the best
 *      not improving, convergence, MaxRuntimeInSeconds, a Stop;
 *   4. new training jobs up to MaxParallelTrainingJobs, each recorded
 *      first (tuning_children) and then created, so that a kill -9 of the
 *      controller never creates one twice nor loses one.
 */
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/rand.h>

#include "api/reason.h"
#include "api/requests.h"
#include "api/tuning.h"
#include "controller/ctrl.h"
#include "controller/tuning.h"
#include "db/db.h"
#include "db/tuning.h"
#include "db/run.h"
#include "tuner/tuner.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* The step runs at least this often while a tuning job is active. */
#define TICK_MS 250

/* Non-retryable failures, none succeeding, that end a tuning job. */
#define FAIL_FAST 3

/* Convergence: at least this many results, and no gain of more than
 * CONVERGE_GAIN of the objective's range over the last quarter. */
#define CONVERGE_MIN 12
#define CONVERGE_GAIN 0.01

static atomic_int tuning_wake = 1;
static int64_t next_tick_ms;

void ctrl_tuning_wake(struct ctrl_ctx *ctx)
{
	atomic_store(&tuning_wake, 1);
	ctrl_reconciler_wake(ctx);
}

void ctrl_tuning_note_change(void)
{
	atomic_store(&tuning_wake, 1);
}

static char *tuning_arn(const struct ctrl_ctx *ctx, const char *name)
{
	struct buf b = BUF_INIT;
	size_t i;

	(void)buf_addf(&b,
		       "arn:aws:sagemaker:%s:%s:hyper-parameter-tuning-job/",
		       ctx->cfg.region, ctx->cfg.account_id);
	for (i = 0; name[i]; i++) {
		char c = name[i];

		(void)buf_addch(&b, c >= 'A' && c <= 'Z' ? (char)(c + 32) : c);
	}
	return buf_detach(&b, NULL);
}

/* A tuning job with its training jobs, as one step sees it. */
struct kid {
	struct db_tuning_child *c;
	double *x;   /* its point, in its definition's space */
	char **vals; /* its hyperparameter values */
	int exists;  /* the training job exists */
	int active;  /* InProgress, or recorded and about to be created */
	int terminal;
	int retryable; /* failed with an internal error */
	int succeeded; /* has an objective and did not fail */
	double y;      /* lower is better */
};

struct tjob {
	struct db_tuning t;
	struct api_tuning_spec spec;
	struct db_tuning_child *rows;
	size_t n;
	struct kid *kids;
	/* what describe and the step derive */
	struct api_tuning_job_counts jobs;
	struct api_tuning_objective_counts objectives;
	int best;	   /* index into kids, -1: none */
	int not_improving; /* succeeded jobs since the best improved */
	int n_active;
	int n_budget_used; /* jobs that count against the budget */
	int n_fresh;	   /* jobs that are not retries */
	int n_nonretryable;
	int n_succeeded;
};

static int is_terminal(const char *s)
{
	return s && (!strcmp(s, "Completed") || !strcmp(s, "Failed") ||
		     !strcmp(s, "Stopped"));
}

static double *parse_point(const char *s, size_t n)
{
	double *x = xcalloc(n ? n : 1, sizeof(*x));
	size_t i;

	for (i = 0; i < n && s && *s; i++) {
		char *end;

		x[i] = strtod(s, &end);
		s = *end == ',' ? end + 1 : end;
	}
	return x;
}

static char *format_point(const double *x, size_t n)
{
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 0; i < n; i++)
		(void)buf_addf(&b, "%s%.17g", i ? "," : "", x[i]);
	if (!n)
		(void)buf_adds(&b, "");
	return buf_detach(&b, NULL);
}

static void tjob_release(struct tjob *j)
{
	size_t i, k;

	for (i = 0; i < j->n; i++) {
		free(j->kids[i].x);
		for (k = 0; j->kids[i].vals && j->kids[i].vals[k]; k++)
			free(j->kids[i].vals[k]);
		free(j->kids[i].vals);
	}
	free(j->kids);
	db_tuning_children_free(j->rows, j->n);
	api_tuning_release(&j->spec);
	db_tuning_release(&j->t);
	memset(j, 0, sizeof(*j));
}

static const struct api_tuning_def *def_of(const struct tjob *j, int def)
{
	return &j->spec.defs[def >= 0 && (size_t)def < j->spec.n_defs ? def : 0];
}

/* Derives counters, the best job and the budget from the rows. */
static void summarize(struct tjob *j)
{
	int in_progress = !strcmp(j->t.status, "InProgress");
	size_t i, k;

	memset(&j->jobs, 0, sizeof(j->jobs));
	memset(&j->objectives, 0, sizeof(j->objectives));
	j->best = -1;
	j->not_improving = 0;
	j->n_active = j->n_budget_used = j->n_fresh = 0;
	j->n_nonretryable = j->n_succeeded = 0;
	for (i = 0; i < j->n; i++) {
		struct kid *kd = &j->kids[i];
		const struct db_tuning_child *c = kd->c;
		const struct api_tuning_def *d = def_of(j, c->def);
		int retried = 0;

		kd->exists = c->status != NULL;
		kd->terminal = is_terminal(c->status);
		/* Not there: about to be created, or deleted after it ran. */
		kd->active = kd->exists ? !kd->terminal :
					  in_progress && !c->created;
		kd->retryable = c->status && !strcmp(c->status, "Failed") &&
				api_reason_is_internal(c->failure_reason);
		kd->succeeded = kd->terminal && strcmp(c->status, "Failed") &&
				c->has_objective;
		kd->y = d->maximize ? -c->objective : c->objective;
		for (k = 0; k < j->n; k++)
			retried |= j->rows[k].retry_of == c->idx;
		if (c->retry_of < 0)
			j->n_fresh++;
		if (!(kd->retryable && retried) &&
		    (kd->exists || c->created || in_progress))
			j->n_budget_used++;
		if (!kd->exists && !kd->active)
			continue;
		if (kd->active) {
			j->jobs.in_progress++;
			j->n_active++;
		} else if (!strcmp(c->status, "Completed")) {
			j->jobs.completed++;
		} else if (!strcmp(c->status, "Stopped")) {
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
	/* Best and "not improving" in the order the jobs ended. */
	for (;;) {
		int next = -1;

		for (i = 0; i < j->n; i++) {
			struct kid *kd = &j->kids[i];

			if (!kd->succeeded || kd->c->end_ms < 0)
				continue;
			if (next < 0 ||
			    kd->c->end_ms < j->kids[next].c->end_ms ||
			    (kd->c->end_ms == j->kids[next].c->end_ms &&
			     kd->c->idx < j->kids[next].c->idx))
				next = (int)i;
		}
		if (next < 0)
			break;
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

/* The tuning job's tags, which its training jobs get too. */
static int load_tags(struct ctrl_ctx *ctx, struct tjob *j, struct buf *err)
{
	struct db_tag *tags = NULL;
	size_t n = 0, i;
	int ret = db_tuning_tags(ctx->db, j->t.name, &tags, &n, err);

	if (ret || !n)
		return ret;
	j->spec.tags = xcalloc(n, sizeof(*j->spec.tags));
	for (i = 0; i < n; i++) {
		j->spec.tags[i].key = tags[i].key;
		j->spec.tags[i].value = tags[i].value;
	}
	j->spec.n_tags = n;
	free(tags);
	return 0;
}

/* Loads a tuning job and its training jobs. */
static int tjob_load(struct ctrl_ctx *ctx, const char *name, struct tjob *j,
		     struct buf *err)
{
	size_t i;
	int ret;

	memset(j, 0, sizeof(*j));
	ret = db_tuning_get(ctx->db, name, &j->t, err);
	if (ret)
		return ret;
	ret = api_tuning_load(j->t.request_json, &j->spec, err);
	if (ret) {
		db_tuning_release(&j->t);
		return ERR_INTERNAL;
	}
	ret = db_tuning_children(ctx->db, j->t.name, &j->rows, &j->n, err);
	if (!ret)
		ret = load_tags(ctx, j, err);
	if (ret) {
		api_tuning_release(&j->spec);
		db_tuning_release(&j->t);
		return ret;
	}
	j->kids = xcalloc(j->n ? j->n : 1, sizeof(*j->kids));
	for (i = 0; i < j->n; i++) {
		const struct api_tuning_def *d = def_of(j, j->rows[i].def);

		j->kids[i].c = &j->rows[i];
		j->kids[i].x = parse_point(j->rows[i].point, d->n_ranges);
		j->kids[i].vals = api_tuning_values(d, j->kids[i].x);
	}
	summarize(j);
	return 0;
}

static void child_view(const struct tjob *j, const struct kid *kd,
		       struct api_tuning_child *out)
{
	const struct api_tuning_def *d = def_of(j, kd->c->def);

	memset(out, 0, sizeof(*out));
	out->def_name = d->name;
	out->name = kd->c->job;
	out->arn = kd->c->arn;
	out->tuning_name = j->t.name;
	out->status = kd->c->status ? kd->c->status : "InProgress";
	out->failure_reason = kd->c->failure_reason;
	out->creation_ms = kd->c->creation_ms;
	out->start_ms = kd->c->start_ms;
	out->end_ms = kd->terminal ? kd->c->end_ms : 0;
	out->n_hp = d->n_ranges;
	out->hp_values = kd->vals;
	out->metric = d->metric;
	out->maximize = d->maximize;
	out->has_objective = kd->c->has_objective && kd->succeeded;
	out->objective = kd->c->objective;
	out->objective_status = kd->succeeded ? "Succeeded" :
				kd->terminal  ? "Failed" :
						"Pending";
}

/* The names of d's ranges, as an array the child view points at. */
static char **range_names(const struct api_tuning_def *d)
{
	char **names = xcalloc(d->n_ranges + 1, sizeof(*names));
	size_t i;

	for (i = 0; i < d->n_ranges; i++)
		names[i] = d->ranges[i].name;
	return names;
}

/* The job's child summary JSON, with the range names filled in. */
static int child_json(const struct tjob *j, const struct kid *kd,
		      struct buf *out)
{
	struct api_tuning_child v;
	char **names = range_names(def_of(j, kd->c->def));
	int ret;

	child_view(j, kd, &v);
	v.hp_names = names;
	ret = api_tuning_child_json(&v, out);
	free(names);
	return ret;
}

/*
 * The best job of the parents of a warm start (by this job's objective
 * direction), as a loaded parent and an index, for
 * OverallBestTrainingJob. *parents holds the loaded parents.
 */
static void load_parents(struct ctrl_ctx *ctx, const struct tjob *j,
			 struct tjob **parents, size_t *n)
{
	struct buf err = BUF_INIT;
	size_t i;

	*parents = xcalloc(j->spec.n_parents + 1, sizeof(**parents));
	*n = 0;
	for (i = 0; i < j->spec.n_parents; i++) {
		buf_reset(&err);
		if (!tjob_load(ctx, j->spec.parents[i], &(*parents)[*n], &err))
			(*n)++;
	}
	buf_release(&err);
}

static void free_parents(struct tjob *parents, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		tjob_release(&parents[i]);
	free(parents);
}

static int describe_body(struct ctrl_ctx *ctx, struct tjob *j, int with_kids,
			 struct buf *out)
{
	struct api_tuning_record r;
	struct api_tuning_child best, overall;
	char **best_names = NULL, **overall_names = NULL;
	struct tjob *parents = NULL;
	size_t n_parents = 0, i, k;
	const struct tjob *ob_job = NULL;
	const struct kid *ob = NULL;
	int64_t now = time_now_ms();
	int ret;

	memset(&r, 0, sizeof(r));
	r.name = j->t.name;
	r.arn = j->t.arn;
	r.status = j->t.status;
	r.failure_reason = j->t.failure_reason;
	r.request_json = j->t.request_json;
	r.spec = &j->spec;
	r.creation_ms = j->t.creation_ms;
	r.last_modified_ms = j->t.last_modified_ms;
	r.end_ms = j->t.end_ms;
	r.jobs = j->jobs;
	r.objectives = j->objectives;
	r.not_improving = j->not_improving;
	r.convergence_ms = j->t.convergence_ms;
	r.consumed_s =
		((j->t.end_ms ? j->t.end_ms : now) - j->t.creation_ms) / 1000;
	if (j->best >= 0) {
		child_view(j, &j->kids[j->best], &best);
		best_names = range_names(def_of(j, j->kids[j->best].c->def));
		best.hp_names = best_names;
		r.best = &best;
		ob_job = j;
		ob = &j->kids[j->best];
	}
	if (j->spec.n_parents) {
		load_parents(ctx, j, &parents, &n_parents);
		for (i = 0; i < n_parents; i++)
			for (k = 0; k < parents[i].n; k++) {
				const struct kid *kd = &parents[i].kids[k];
				/* Compared in this job's direction. */
				double sign = def_of(j, 0)->maximize ? -1 : 1;

				if (!kd->succeeded)
					continue;
				if (!ob || sign * kd->c->objective <
						   sign * ob->c->objective) {
					ob = kd;
					ob_job = &parents[i];
				}
			}
		if (ob) {
			child_view(ob_job, ob, &overall);
			overall_names = range_names(def_of(ob_job, ob->c->def));
			overall.hp_names = overall_names;
			r.overall_best = &overall;
		}
	}
	ret = api_tuning_describe_response(&r, out);
	if (!ret && with_kids) {
		/* "TrainingJobSummaries" appended for the status page. */
		out->len--;
		ret = buf_adds(out, ",\"TrainingJobSummaries\":[");
		for (i = 0; i < j->n && !ret; i++) {
			if (!j->kids[i].exists)
				continue;
			if (out->data[out->len - 1] != '[')
				ret = buf_addch(out, ',');
			if (!ret)
				ret = child_json(j, &j->kids[i], out);
		}
		if (!ret)
			ret = buf_adds(out, "]}");
	}
	free(best_names);
	free(overall_names);
	free_parents(parents, n_parents);
	return ret;
}

/* ---- the operations ---- */

static void random_bytes(void *p, size_t n)
{
	if (RAND_bytes(p, (int)n) != 1) {
		/* Never expected; a time-based value still works. */
		uint64_t t = (uint64_t)time_now_ms() ^ (uint64_t)time_mono_us();

		memcpy(p, &t, n < sizeof(t) ? n : sizeof(t));
	}
}

/* Checks the parents of a warm start: they exist, who sees them, ended. */
static int check_parents(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const struct api_tuning_spec *s, struct buf *err)
{
	size_t i;

	for (i = 0; i < s->n_parents; i++) {
		struct db_tuning p;
		int ret = db_tuning_get(ctx->db, s->parents[i], &p, err);

		if (ret == ERR_NOTFOUND ||
		    (!ret && !ctrl_caller_sees(who, p.owner))) {
			if (!ret)
				db_tuning_release(&p);
			buf_reset(err);
			(void)buf_addf(err,
				       "WarmStartConfig: parent tuning job "
				       "'%s' does not exist",
				       s->parents[i]);
			return ERR_INVALID;
		}
		if (ret)
			return ret;
		if (!is_terminal(p.status)) {
			(void)buf_addf(err,
				       "WarmStartConfig: parent tuning job "
				       "'%s' is %s; a parent must be "
				       "Completed, Stopped or Failed",
				       s->parents[i], p.status);
			db_tuning_release(&p);
			return ERR_INVALID;
		}
		db_tuning_release(&p);
	}
	return 0;
}

/*
 * The training job of definition d at point x, checked as who would
 * create it; err names the definition.
 */
static int probe(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		 const struct api_tuning_spec *s,
		 const struct api_tuning_def *d, const double *x,
		 struct buf *err)
{
	char **vals = api_tuning_values(d, x);
	struct buf body = BUF_INIT;
	size_t k;
	int ret = api_tuning_child_body(s, d, "probe", vals, &body);

	if (!ret)
		ret = ctrl_job_check(ctx, who, body.data, body.len, err);
	if (ret) {
		struct buf e2 = BUF_INIT;

		(void)buf_addf(&e2, "%s: %s",
			       d->name ? d->name : "TrainingJobDefinition",
			       err->data);
		buf_reset(err);
		(void)buf_adds(err, e2.data);
		buf_release(&e2);
	}
	for (k = 0; vals[k]; k++)
		free(vals[k]);
	free(vals);
	buf_release(&body);
	return ret;
}

/*
 * Definition d makes training jobs create would accept: at the lower end
 * of each range and with every value of each categorical range, so that
 * no value (a code or data URI among them) goes unchecked.
 */
static int check_def(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		     const struct api_tuning_spec *s,
		     const struct api_tuning_def *d, struct buf *err)
{
	double *x = xcalloc(d->n_ranges + 1, sizeof(*x));
	size_t k, v;
	int ret;

	for (k = 0; k < d->n_ranges; k++)
		x[k] = d->ranges[k].p.kind == TUNE_CATEGORICAL ?
			       0 :
			       d->ranges[k].p.min;
	ret = probe(ctx, who, s, d, x, err);
	for (k = 0; k < d->n_ranges && !ret; k++) {
		if (d->ranges[k].p.kind != TUNE_CATEGORICAL)
			continue;
		for (v = 1; v < d->ranges[k].p.n_values && !ret; v++) {
			x[k] = (double)v;
			ret = probe(ctx, who, s, d, x, err);
		}
		x[k] = 0;
	}
	free(x);
	return ret;
}

void ctrl_op_tuning_create(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const char *body, size_t len,
			   struct ctrl_response *resp)
{
	struct api_tuning_spec s;
	struct db_tuning t;
	struct db_tag *tags = NULL;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	unsigned char rnd[16];
	char uid[17];
	size_t i;
	int ret;

	memset(&t, 0, sizeof(t));
	ret = api_tuning_parse(body, len, &s, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		buf_release(&err);
		return;
	}
	/* Each definition must make training jobs create would accept. */
	for (i = 0; i < s.n_defs && !ret; i++)
		ret = check_def(ctx, who, &s, &s.defs[i], &err);
	if (!ret)
		ret = check_parents(ctx, who, &s, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		goto out;
	}
	random_bytes(rnd, sizeof(rnd));
	for (i = 0; i < 8; i++)
		snprintf(uid + 2 * i, 3, "%02x", rnd[i]);
	t.name = s.name;
	t.arn = tuning_arn(ctx, s.name);
	t.uid = uid;
	t.owner = (char *)who->owner;
	t.run_as = (char *)who->run_as;
	t.status = (char *)"InProgress";
	t.request_json = s.request_json;
	if (s.has_seed) {
		t.seed = s.seed;
	} else {
		memcpy(&t.seed, rnd + 8, sizeof(t.seed));
		t.seed &= INT64_MAX;
	}
	t.creation_ms = time_now_ms();
	if (s.n_tags) {
		tags = xcalloc(s.n_tags, sizeof(*tags));
		for (i = 0; i < s.n_tags; i++) {
			tags[i].key = s.tags[i].key;
			tags[i].value = s.tags[i].value;
		}
		t.tags = tags;
		t.n_tags = s.n_tags;
	}
	ret = db_tuning_insert(ctx->db, &t, &err);
	if (ret == ERR_CONFLICT) {
		buf_reset(&err);
		(void)buf_addf(&err,
			       "Tuning job names must be unique within an AWS "
			       "account and region, and a tuning job with "
			       "this name already exists (%s)",
			       t.arn);
		ctrl_reply_err(resp, CTRL_E_IN_USE, err.data);
		goto out;
	}
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		goto out;
	}
	log_info("tuning job '%s' created (%s, %d jobs, %d in parallel)",
		 s.name, s.strategy_name, s.max_jobs, s.max_parallel);
	ctrl_tuning_wake(ctx);
	(void)buf_adds(&out, "{\"HyperParameterTuningJobArn\":\"");
	(void)buf_adds(&out, t.arn);
	(void)buf_adds(&out, "\"}");
	ctrl_reply_json(resp, &out);
out:
	free(t.arn);
	free(tags);
	api_tuning_release(&s);
	buf_release(&err);
	buf_release(&out);
}

#define NOT_FOUND_FMT "Amazon SageMaker can't find a tuning job with name %s"

/* Loads name as who may see it, or answers the error. */
static int load_for(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *name, struct tjob *j,
		    struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	int ret = tjob_load(ctx, name, j, &err);

	if (!ret && !ctrl_caller_sees(who, j->t.owner)) {
		tjob_release(j);
		ret = ERR_NOTFOUND;
	}
	if (ret == ERR_NOTFOUND) {
		buf_reset(&err);
		(void)buf_addf(&err, NOT_FOUND_FMT, name);
		ctrl_reply_err(resp, CTRL_E_JOB_NOT_FOUND, err.data);
	} else if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
	}
	buf_release(&err);
	return ret;
}

/*
 * The JSON 1.1 form of an operation on one tuning job: its name, the job
 * as who may see it, then fn, which answers.
 */
static void
by_name(struct ctrl_ctx *ctx, const struct ctrl_caller *who, const char *shape,
	const char *body, size_t len, struct ctrl_response *resp,
	void (*fn)(struct ctrl_ctx *, struct tjob *, struct ctrl_response *))
{
	struct buf err = BUF_INIT;
	struct tjob j;
	char *name = NULL;
	int ret = api_member_request_parse(shape, "HyperParameterTuningJobName",
					   body, len, &name, &err);

	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
	} else if (!load_for(ctx, who, name, &j, resp)) {
		fn(ctx, &j, resp);
		tjob_release(&j);
	}
	free(name);
	buf_release(&err);
}

static void reply_empty(struct ctrl_response *resp)
{
	resp->status = 200;
	buf_reset(&resp->body);
	(void)buf_adds(&resp->body, "{}");
}

static void describe(struct ctrl_ctx *ctx, struct tjob *j,
		     struct ctrl_response *resp)
{
	struct buf out = BUF_INIT;

	if (describe_body(ctx, j, 0, &out))
		ctrl_reply_err(resp, CTRL_E_INTERNAL, "answer too large");
	else
		ctrl_reply_json(resp, &out);
	buf_release(&out);
}

static void stop(struct ctrl_ctx *ctx, struct tjob *j,
		 struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	int ret = db_tuning_set_status(ctx->db, j->t.name, "InProgress",
				       "Stopping", NULL, 0, time_now_ms(),
				       &err);

	if (ret == ERR_CONFLICT) {
		buf_reset(&err);
		(void)buf_addf(&err,
			       "The request was rejected because the tuning "
			       "job is in status %s.",
			       j->t.status);
		ctrl_reply_err(resp, CTRL_E_VALIDATION, err.data);
	} else if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
	} else {
		log_info("tuning job '%s' stopping", j->t.name);
		ctrl_tuning_wake(ctx);
		reply_empty(resp);
	}
	buf_release(&err);
}

static void delete (struct ctrl_ctx *ctx, struct tjob *j,
		    struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	struct buf msg = BUF_INIT;
	int ret = db_tuning_delete(ctx->db, j->t.name, &err);

	if (ret == ERR_CONFLICT) {
		(void)buf_addf(&msg,
			       "Tuning job '%s' cannot be deleted: %s; only "
			       "Completed, Failed or Stopped tuning jobs can "
			       "be deleted.",
			       j->t.name, err.data);
		ctrl_reply_err(resp, CTRL_E_IN_USE, msg.data);
	} else if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
	} else {
		log_info("tuning job '%s' deleted", j->t.name);
		reply_empty(resp);
	}
	buf_release(&err);
	buf_release(&msg);
}

void ctrl_op_tuning_describe(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who, const char *body,
			     size_t len, struct ctrl_response *resp)
{
	by_name(ctx, who, "DescribeHyperParameterTuningJobRequest", body, len,
		resp, describe);
}

void ctrl_op_tuning_stop(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const char *body, size_t len,
			 struct ctrl_response *resp)
{
	by_name(ctx, who, "StopHyperParameterTuningJobRequest", body, len, resp,
		stop);
}

void ctrl_op_tuning_delete(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const char *body, size_t len,
			   struct ctrl_response *resp)
{
	by_name(ctx, who, "DeleteHyperParameterTuningJobRequest", body, len,
		resp, delete);
}

/* NextToken: the offset of the next page, as decimal text. */
static int page_start(const char *token, size_t n, size_t *start,
		      struct buf *err)
{
	char *end;
	unsigned long long v;

	*start = 0;
	if (!token)
		return 0;
	v = strtoull(token, &end, 10);
	if (!*token || *end || v > n) {
		(void)buf_adds(err, "Invalid pagination token (NextToken).");
		return ERR_INVALID;
	}
	*start = (size_t)v;
	return 0;
}

/* qsort with a context: the sort key and direction of a list. */
struct sort_ctx {
	const char *by;
	int ascending;
};
static _Thread_local const struct sort_ctx *sort_by;

static int cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

/* Whether s contains part, ignoring ASCII case (NameContains). */
static int contains_nocase(const char *s, const char *part)
{
	size_t n = strlen(part);

	for (; *s; s++)
		if (!strncasecmp(s, part, n))
			return 1;
	return !n;
}

struct tuning_item {
	struct db_tuning *t;
	char *json;
};

static int cmp_tuning(const void *pa, const void *pb)
{
	const struct db_tuning *a = ((const struct tuning_item *)pa)->t;
	const struct db_tuning *b = ((const struct tuning_item *)pb)->t;
	int c;

	if (!strcmp(sort_by->by, "Status"))
		c = strcmp(a->status, b->status);
	else if (!strcmp(sort_by->by, "CreationTime"))
		c = cmp_i64(a->creation_ms, b->creation_ms);
	else
		c = strcasecmp(a->name, b->name);
	if (!c)
		c = strcasecmp(a->name, b->name);
	return sort_by->ascending ? c : -c;
}

static int tuning_list_items(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who,
			     const struct api_tuning_list_request *r,
			     struct db_tuning **rows, size_t *n_rows,
			     struct tuning_item **items, size_t *n,
			     struct buf *err)
{
	struct sort_ctx sc;
	size_t i;
	int ret;

	*items = NULL;
	*n = 0;
	ret = db_tuning_list(ctx->db, r->status, rows, n_rows, err);
	if (ret)
		return ret;
	*items = xcalloc(*n_rows + 1, sizeof(**items));
	for (i = 0; i < *n_rows; i++) {
		struct db_tuning *t = &(*rows)[i];

		if (!ctrl_caller_sees(who, t->owner))
			continue;
		if (r->name_contains &&
		    !contains_nocase(t->name, r->name_contains))
			continue;
		if ((r->created_after && t->creation_ms <= r->created_after) ||
		    (r->created_before &&
		     t->creation_ms >= r->created_before) ||
		    (r->modified_after &&
		     t->last_modified_ms <= r->modified_after) ||
		    (r->modified_before &&
		     t->last_modified_ms >= r->modified_before))
			continue;
		(*items)[(*n)++].t = t;
	}
	sc.by = r->sort_by ? r->sort_by : "Name";
	sc.ascending = r->ascending;
	sort_by = &sc;
	qsort(*items, *n, sizeof(**items), cmp_tuning);
	sort_by = NULL;
	return 0;
}

static int tuning_summary(struct ctrl_ctx *ctx, const char *name,
			  struct buf *out, struct buf *err)
{
	struct api_tuning_record r;
	struct tjob j;
	int ret = tjob_load(ctx, name, &j, err);

	if (ret)
		return ret;
	memset(&r, 0, sizeof(r));
	r.name = j.t.name;
	r.arn = j.t.arn;
	r.status = j.t.status;
	r.request_json = j.t.request_json;
	r.spec = &j.spec;
	r.creation_ms = j.t.creation_ms;
	r.last_modified_ms = j.t.last_modified_ms;
	r.end_ms = j.t.end_ms;
	r.jobs = j.jobs;
	r.objectives = j.objectives;
	ret = api_tuning_summary_json(&r, out);
	tjob_release(&j);
	return ret;
}

static void reply_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		       const struct api_tuning_list_request *r, int page,
		       struct ctrl_response *resp)
{
	struct db_tuning *rows = NULL;
	size_t n_rows = 0;
	struct tuning_item *items = NULL;
	size_t n = 0, start = 0, end, i;
	char **jsons = NULL;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	char next[32];
	int ret;

	ret = tuning_list_items(ctx, who, r, &rows, &n_rows, &items, &n, &err);
	if (!ret)
		ret = page_start(r->next_token, n, &start, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		goto out;
	}
	end = page ? start + (size_t)r->max_results : n;
	if (end > n)
		end = n;
	jsons = xcalloc(end - start + 1, sizeof(*jsons));
	for (i = start; i < end && !ret; i++) {
		struct buf one = BUF_INIT;

		ret = tuning_summary(ctx, items[i].t->name, &one, &err);
		jsons[i - start] = buf_detach(&one, NULL);
	}
	snprintf(next, sizeof(next), "%zu", end);
	if (!ret)
		ret = api_tuning_list_json("HyperParameterTuningJobSummaries",
					   jsons, end - start,
					   end < n ? next : NULL, &out);
	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		ctrl_reply_json(resp, &out);
	for (i = 0; jsons && i < end - start; i++)
		free(jsons[i]);
out:
	free(jsons);
	free(items);
	db_tunings_free(rows, n_rows);
	buf_release(&err);
	buf_release(&out);
}

void ctrl_op_tuning_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const char *body, size_t len,
			 struct ctrl_response *resp)
{
	struct api_tuning_list_request r;
	struct buf err = BUF_INIT;
	int ret = api_tuning_list_parse(body, len, 0, &r, &err);

	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		reply_list(ctx, who, &r, 1, resp);
	api_tuning_list_release(&r);
	buf_release(&err);
}

int ctrl_tuning_page_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			  struct buf *out, struct buf *err)
{
	struct api_tuning_list_request r;
	struct ctrl_response resp;
	int ret = 0;

	memset(&r, 0, sizeof(r));
	memset(&resp, 0, sizeof(resp));
	r.sort_by = (char *)"CreationTime";
	r.max_results = 1000;
	buf_init(&resp.body, 0);
	reply_list(ctx, who, &r, 1, &resp);
	if (resp.status != 200) {
		(void)buf_adds(err, resp.body.data ? resp.body.data : "");
		ret = ERR_INTERNAL;
	} else {
		ret = buf_add(out, resp.body.data, resp.body.len);
	}
	buf_release(&resp.body);
	return ret;
}

int ctrl_tuning_page_job(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const char *name, struct buf *out, struct buf *err)
{
	struct tjob j;
	int ret = tjob_load(ctx, name, &j, err);

	if (!ret && !ctrl_caller_sees(who, j.t.owner)) {
		tjob_release(&j);
		ret = ERR_NOTFOUND;
	}
	if (ret == ERR_NOTFOUND) {
		buf_reset(err);
		(void)buf_addf(err, NOT_FOUND_FMT, name);
	}
	if (ret)
		return ret;
	ret = describe_body(ctx, &j, 1, out);
	tjob_release(&j);
	return ret;
}

static int cmp_kid(const void *pa, const void *pb)
{
	const struct kid *a = *(const struct kid *const *)pa;
	const struct kid *b = *(const struct kid *const *)pb;
	int c;

	if (!strcmp(sort_by->by, "Status"))
		c = strcmp(a->c->status, b->c->status);
	else if (!strcmp(sort_by->by, "CreationTime"))
		c = cmp_i64(a->c->creation_ms, b->c->creation_ms);
	else if (!strcmp(sort_by->by, "FinalObjectiveMetricValue"))
		c = a->c->objective < b->c->objective ?
			    -1 :
			    a->c->objective > b->c->objective;
	else
		c = strcasecmp(a->c->job, b->c->job);
	if (!c)
		c = strcasecmp(a->c->job, b->c->job);
	return sort_by->ascending ? c : -c;
}

void ctrl_op_tuning_children(struct ctrl_ctx *ctx,
			     const struct ctrl_caller *who, const char *body,
			     size_t len, struct ctrl_response *resp)
{
	struct api_tuning_list_request r;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	struct tjob j;
	const struct kid **pick = NULL;
	char **jsons = NULL;
	size_t n = 0, start = 0, end = 0, i;
	struct sort_ctx sc;
	char next[32];
	int ret = api_tuning_list_parse(body, len, 1, &r, &err);

	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		goto out;
	}
	if (load_for(ctx, who, r.name, &j, resp))
		goto out;
	pick = xcalloc(j.n + 1, sizeof(*pick));
	for (i = 0; i < j.n; i++) {
		const struct kid *kd = &j.kids[i];

		if (!kd->exists)
			continue;
		if (r.status && strcmp(kd->c->status, r.status))
			continue;
		/* As the service: sorted by objective, only those with one. */
		if (r.sort_by &&
		    !strcmp(r.sort_by, "FinalObjectiveMetricValue") &&
		    !kd->succeeded)
			continue;
		pick[n++] = kd;
	}
	sc.by = r.sort_by ? r.sort_by : "Name";
	sc.ascending = r.ascending;
	sort_by = &sc;
	qsort(pick, n, sizeof(*pick), cmp_kid);
	sort_by = NULL;
	ret = page_start(r.next_token, n, &start, &err);
	if (!ret) {
		end = start + (size_t)r.max_results;
		if (end > n)
			end = n;
		jsons = xcalloc(end - start + 1, sizeof(*jsons));
		for (i = start; i < end && !ret; i++) {
			struct buf one = BUF_INIT;

			ret = child_json(&j, pick[i], &one);
			jsons[i - start] = buf_detach(&one, NULL);
		}
		snprintf(next, sizeof(next), "%zu", end);
		if (!ret)
			ret = api_tuning_list_json("TrainingJobSummaries",
						   jsons, end - start,
						   end < n ? next : NULL, &out);
	}
	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		ctrl_reply_json(resp, &out);
	for (i = 0; jsons && i < end - start; i++)
		free(jsons[i]);
	free(jsons);
	free(pick);
	tjob_release(&j);
out:
	api_tuning_list_release(&r);
	buf_release(&err);
	buf_release(&out);
}

int ctrl_tuning_check(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      const char *name, struct buf *err)
{
	struct db_tuning t;
	int ret = db_tuning_get(ctx->db, name, &t, err);

	if (ret)
		return ret;
	/* Another user's tuning job is not there for who. */
	if (!ctrl_caller_sees(who, t.owner)) {
		(void)buf_addf(err, NOT_FOUND_FMT, name);
		ret = ERR_NOTFOUND;
	}
	db_tuning_release(&t);
	return ret;
}

/* ---- the reconciler's step ---- */

/*
 * The caller a tuning job's training jobs are created as: its owner, with
 * no key of its own, so that their URIs are checked against those of the
 * owner's keys (controller/uris.c) as they are when it is created.
 */
static void owner_caller(const struct tjob *j, struct ctrl_caller *who)
{
	memset(who, 0, sizeof(*who));
	who->owner = j->t.owner;
	who->run_as = j->t.run_as;
	who->admin = 0;
}

/* Whether training job name is one of tuning job j's: 0 or ERR_CONFLICT. */
static int is_ours(struct ctrl_ctx *ctx, const struct tjob *j, const char *name,
		   struct buf *err)
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

static int create_kid(struct ctrl_ctx *ctx, struct tjob *j,
		      const struct db_tuning_child *c, struct buf *err)
{
	const struct api_tuning_def *d = def_of(j, c->def);
	struct ctrl_caller who;
	struct buf body = BUF_INIT;
	double *x = parse_point(c->point, d->n_ranges);
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

static void kid_name(const struct tjob *j, int idx, struct buf *out)
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

static void add_parent_points(struct ctrl_ctx *ctx, const struct tjob *j,
			      const struct api_tuning_def *d, struct evals *e)
{
	struct tjob *parents;
	size_t n_parents, i, k;

	load_parents(ctx, j, &parents, &n_parents);
	for (i = 0; i < n_parents; i++) {
		for (k = 0; k < parents[i].n; k++) {
			const struct kid *kd = &parents[i].kids[k];
			const struct api_tuning_def *pd =
				def_of(&parents[i], kd->c->def);
			char **names;
			double *x;

			if (!kd->succeeded)
				continue;
			names = range_names(pd);
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
	free_parents(parents, n_parents);
}

static void gather(struct ctrl_ctx *ctx, const struct tjob *j, int def,
		   struct evals *e)
{
	const struct api_tuning_def *d = def_of(j, def);
	size_t i;

	memset(e, 0, sizeof(*e));
	if (j->spec.n_parents)
		add_parent_points(ctx, j, d, e);
	e->obs = xrealloc(e->obs, (e->n + j->n + 1) * sizeof(*e->obs));
	e->pending = xcalloc(j->n + 1, sizeof(*e->pending));
	for (i = 0; i < j->n; i++) {
		const struct kid *kd = &j->kids[i];

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

/* How many training jobs the tuning job may launch in all. */
static int budget(const struct tjob *j)
{
	if (j->spec.strategy == TUNE_GRID) {
		size_t g = tune_grid_size(&j->spec.defs[0].space);

		if (!j->spec.max_jobs || (size_t)j->spec.max_jobs > g)
			return (int)g;
	}
	return j->spec.max_jobs;
}

/*
 * A test hook for a crash between two writes: with
 * TRAINCTLD_CRASH_POINT=tuning-row:N in the environment, the controller
 * kills itself (SIGKILL) right after recording its Nth training job of a
 * tuning job, before creating it (tests/integration/test_tuning.py).
 */
static void crash_point(void)
{
	static int passes;
	const char *v = getenv("TRAINCTLD_CRASH_POINT");

	if (v && !strncmp(v, "tuning-row:", 11) && ++passes == atoi(v + 11))
		(void)raise(SIGKILL);
}

static int launch(struct ctrl_ctx *ctx, struct tjob *j, struct buf *err)
{
	struct db_tuning_child c;
	struct buf name = BUF_INIT;
	int idx = j->n ? j->rows[j->n - 1].idx + 1 : 0;
	int retry = -1;
	int def;
	double *x = NULL;
	const struct api_tuning_def *d;
	size_t i, k;
	int ret = 0;

	/* A job that failed with an internal error runs again, once. */
	for (i = 0; i < j->n && retry < 0; i++) {
		const struct kid *kd = &j->kids[i];
		int retried = 0;

		if (!kd->retryable || kd->c->retry_of >= 0)
			continue;
		for (k = 0; k < j->n; k++)
			retried |= j->rows[k].retry_of == kd->c->idx;
		if (!retried)
			retry = (int)i;
	}
	memset(&c, 0, sizeof(c));
	if (retry >= 0) {
		def = j->kids[retry].c->def;
		d = def_of(j, def);
		c.point = xstrdup(j->kids[retry].c->point);
		c.retry_of = j->kids[retry].c->idx;
	} else {
		struct tune_request rq;
		struct evals e;

		def = j->n_fresh % (int)j->spec.n_defs;
		d = def_of(j, def);
		gather(ctx, j, def, &e);
		memset(&rq, 0, sizeof(rq));
		rq.space = &d->space;
		rq.strategy = j->spec.strategy;
		rq.seed = j->t.seed;
		rq.index = (size_t)j->n_fresh;
		rq.budget = (size_t)budget(j);
		rq.obs = e.obs;
		rq.n_obs = e.n;
		rq.pending = e.pending;
		rq.n_pending = e.n_pending;
		x = xcalloc(d->n_ranges + 1, sizeof(*x));
		ret = tune_suggest(&rq, x, err);
		evals_release(&e);
		if (ret) {
			free(x);
			return ret;
		}
		c.point = format_point(x, d->n_ranges);
		c.retry_of = -1;
		free(x);
	}
	kid_name(j, idx, &name);
	c.idx = idx;
	c.job = name.data;
	c.def = def;
	c.metric = d->metric;
	ret = db_tuning_child_add(ctx->db, j->t.name, &c, err);
	if (!ret) {
		crash_point();
		ret = create_kid(ctx, j, &c, err);
	}
	if (!ret)
		log_info("tuning job '%s': training job '%s' launched%s",
			 j->t.name, c.job, retry >= 0 ? " (a retry)" : "");
	free(c.point);
	buf_release(&name);
	return ret;
}

/* kd runs and was not told to stop: early stopping may judge it. */
static int can_stop(const struct kid *kd)
{
	return kd->exists && !kd->terminal && !kd->c->early_stop &&
	       !strcmp(kd->c->status, "InProgress");
}

/*
 * The objective's reports of a training job, lower is better: those of
 * its first host that reported it (a job on several hosts reports once
 * per host; interleaved they would not be one curve).
 */
static double *read_curve(struct ctrl_ctx *ctx, const struct tjob *j,
			  const struct kid *kd, size_t *n)
{
	const struct api_tuning_def *d = def_of(j, kd->c->def);
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
 * reconciler thread only; a tuning job's curves go when it is no longer
 * active (curve_memo_prune).
 */
struct curve_memo {
	char *tuning;
	char *uid; /* a tuning job of the same name made again is another */
	struct tune_curve *by_idx; /* y NULL: not kept */
	size_t n;
	struct curve_memo *next;
};

static struct curve_memo *curve_memos;

/* Reports still on their way when a job ends: a curve is kept this long
 * after its job's end, and read afresh until then. */
#define CURVE_SETTLE_MS 5000

static void curve_memo_clear(struct curve_memo *m)
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

static void curve_memo_free(struct curve_memo *m)
{
	curve_memo_clear(m);
	free(m->tuning);
	free(m);
}

static struct curve_memo *curve_memo_of(const struct db_tuning *t)
{
	const char *uid = t->uid ? t->uid : "";
	struct curve_memo *m;

	for (m = curve_memos; m; m = m->next)
		if (!strcmp(m->tuning, t->name))
			break;
	if (!m) {
		m = xcalloc(1, sizeof(*m));
		m->tuning = xstrdup(t->name);
		m->next = curve_memos;
		curve_memos = m;
	}
	if (!m->uid || strcmp(m->uid, uid)) {
		curve_memo_clear(m);
		m->uid = xstrdup(uid);
	}
	return m;
}

/* Drops the curves of tuning jobs not among the n active ones. */
static void curve_memo_prune(char *const *active, size_t n)
{
	struct curve_memo **p = &curve_memos;

	while (*p) {
		struct curve_memo *m = *p;
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
static const double *curve_of(struct ctrl_ctx *ctx, const struct tjob *j,
			      const struct kid *kd, int64_t now, size_t *n,
			      int *owned)
{
	struct curve_memo *m = curve_memo_of(&j->t);
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

static void early_stop(struct ctrl_ctx *ctx, struct tjob *j, int64_t now)
{
	struct tune_curve *curves;
	double **ys;
	size_t i, k, n_others;
	struct buf err = BUF_INIT;
	struct buf why = BUF_INIT;
	int hyperband = j->spec.strategy == TUNE_HYPERBAND;

	if (!hyperband && !j->spec.early_stopping)
		return;
	/* Nothing to judge: no curve is read. */
	for (i = 0; i < j->n; i++)
		if (can_stop(&j->kids[i]))
			break;
	if (i == j->n)
		return;
	curves = xcalloc(j->n + 1, sizeof(*curves));
	ys = xcalloc(j->n + 1, sizeof(*ys));
	for (i = 0; i < j->n; i++) {
		int owned;

		curves[i].y = curve_of(ctx, j, &j->kids[i], now, &curves[i].n,
				       &owned);
		ys[i] = owned ? (double *)curves[i].y : NULL;
	}
	for (i = 0; i < j->n; i++) {
		struct kid *kd = &j->kids[i];
		const struct api_tuning_def *d = def_of(j, kd->c->def);
		struct tune_curve *others;
		int stop = 0;

		if (!can_stop(kd) || !curves[i].n)
			continue;
		others = xcalloc(j->n + 1, sizeof(*others));
		n_others = 0;
		for (k = 0; k < j->n; k++)
			if (k != i && j->kids[k].c->def == kd->c->def &&
			    curves[k].n)
				others[n_others++] = curves[k];
		buf_reset(&why);
		if (hyperband && (double)curves[i].n > d->hb_max) {
			stop = 1;
			(void)buf_addf(&why,
				       "Stopped by hyperparameter tuning job "
				       "%s: it went past MaxResource (%g "
				       "reports of %s)",
				       j->t.name, d->hb_max, d->metric);
		} else if (hyperband) {
			stop = tune_asha_stop(others, n_others, &curves[i],
					      j->spec.hb_min, d->hb_max, 3.0);
			if (stop)
				(void)buf_addf(
					&why,
					"Stopped early by "
					"hyperparameter tuning job %s "
					"(Hyperband): at the last rung of "
					"successive halving it reached, "
					"its %s was not among the best "
					"third (now %g after %zu reports)",
					j->t.name, d->metric,
					d->maximize ?
						-curves[i].y[curves[i].n - 1] :
						curves[i].y[curves[i].n - 1],
					curves[i].n);
		} else {
			stop = tune_median_stop(others, n_others, &curves[i]);
			if (stop)
				(void)buf_addf(
					&why,
					"Stopped early by "
					"hyperparameter tuning job %s: "
					"%s %g after %zu reports is "
					"worse than the median of the "
					"other training jobs' running "
					"averages",
					j->t.name, d->metric,
					d->maximize ?
						-curves[i].y[curves[i].n - 1] :
						curves[i].y[curves[i].n - 1],
					curves[i].n);
		}
		free(others);
		if (!stop)
			continue;
		buf_reset(&err);
		if (!db_tuning_child_early_stop(ctx->db, j->t.name, kd->c->idx,
						why.data, &err) &&
		    !ctrl_job_stop_with(ctx, kd->c->job, why.data, &err))
			log_info("%s: %s", kd->c->job, why.data);
	}
	for (i = 0; i < j->n; i++)
		free(ys[i]);
	free(ys);
	free(curves);
	buf_release(&err);
	buf_release(&why);
}

/* Why the tuning job should launch no more jobs, or NULL. */
static const char *done_reason(struct ctrl_ctx *ctx, struct tjob *j,
			       int64_t now)
{
	const struct kid *best = j->best >= 0 ? &j->kids[j->best] : NULL;
	struct buf err = BUF_INIT;

	if (best && j->spec.has_target &&
	    (def_of(j, best->c->def)->maximize ?
		     best->c->objective >= j->spec.target :
		     best->c->objective <= j->spec.target))
		return "the objective reached TargetObjectiveMetricValue";
	if (j->spec.not_improving && j->not_improving >= j->spec.not_improving)
		return "the best objective did not improve in "
		       "MaxNumberOfTrainingJobsNotImproving training jobs";
	if (j->spec.max_runtime_s &&
	    now - j->t.creation_ms >= j->spec.max_runtime_s * 1000)
		return "MaxRuntimeInSeconds was reached";
	if (j->t.convergence_ms)
		return "the objective converged";
	if (j->spec.convergence && j->n_succeeded >= CONVERGE_MIN) {
		/* No gain of CONVERGE_GAIN of the range in the last quarter. */
		double lo = INFINITY, hi = -INFINITY, best_old = INFINITY;
		double best_all = INFINITY;
		int64_t cut;
		size_t i, n_recent = 0;
		int64_t *ends = xcalloc(j->n + 1, sizeof(*ends));
		size_t n_ends = 0;

		for (i = 0; i < j->n; i++)
			if (j->kids[i].succeeded)
				ends[n_ends++] = j->kids[i].c->end_ms;
		/* The end time that starts the last quarter. */
		for (i = 0; i < n_ends; i++) {
			size_t later = 0, k;

			for (k = 0; k < n_ends; k++)
				later += ends[k] > ends[i];
			if (later == n_ends / 4)
				break;
		}
		cut = i < n_ends ? ends[i] : INT64_MAX;
		free(ends);
		for (i = 0; i < j->n; i++) {
			const struct kid *kd = &j->kids[i];

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
		if (n_recent &&
		    best_old - best_all <= CONVERGE_GAIN * (hi - lo) &&
		    !db_tuning_set_convergence(ctx->db, j->t.name, now, &err)) {
			j->t.convergence_ms = now;
			buf_release(&err);
			return "the objective converged";
		}
		buf_release(&err);
	}
	if (j->n_nonretryable >= FAIL_FAST && !j->n_succeeded)
		return "failed";
	if (j->n_budget_used >= budget(j))
		return "";
	return NULL;
}

static void end_tuning(struct ctrl_ctx *ctx, struct tjob *j, int64_t now,
		       const char *why)
{
	struct buf err = BUF_INIT;
	struct buf reason = BUF_INIT;
	const char *to;
	int ret;

	if (!strcmp(j->t.status, "Stopping")) {
		to = "Stopped";
	} else if (!j->n_succeeded) {
		size_t i;
		const char *first = NULL;

		to = "Failed";
		for (i = 0; i < j->n && !first; i++)
			if (j->kids[i].c->failure_reason)
				first = j->kids[i].c->failure_reason;
		(void)buf_addf(&reason,
			       "No training job succeeded with an objective "
			       "metric value%s%s",
			       first ? ": " : "", first ? first : "");
	} else {
		to = "Completed";
	}
	ret = db_tuning_set_status(ctx->db, j->t.name, j->t.status, to,
				   reason.len ? reason.data : NULL, now, now,
				   &err);
	if (!ret)
		log_info("tuning job '%s' %s%s%s", j->t.name, to,
			 why && *why && strcmp(why, "failed") ? ": " : "",
			 why && strcmp(why, "failed") ? why : "");
	buf_release(&err);
	buf_release(&reason);
}

static void step(struct ctrl_ctx *ctx, const char *name, int64_t now)
{
	struct buf err = BUF_INIT;
	struct tjob j;
	const char *why;
	size_t i;
	int stopping;
	int launched = 0;
	int failed = 0;

	if (tjob_load(ctx, name, &j, &err)) {
		log_error("tuning job '%s': %s", name, err.data);
		buf_release(&err);
		return;
	}
	stopping = !strcmp(j.t.status, "Stopping");
	/* 1. Rows written before a restart, training jobs never created. */
	for (i = 0; !stopping && i < j.n && !failed; i++)
		if (!j.rows[i].created) {
			int r;

			buf_reset(&err);
			r = create_kid(ctx, &j, &j.rows[i], &err);
			launched = 1;
			/* Refused for good (the cluster changed since the
			 * create was checked): the tuning job fails. */
			failed = r == ERR_INVALID || r == ERR_LIMIT ||
				 r == ERR_AUTH || r == ERR_CONFLICT;
			if (failed) {
				struct buf why_failed = BUF_INIT;
				struct buf e2 = BUF_INIT;

				(void)buf_addf(&why_failed,
					       "Cannot create training job %s: "
					       "%s",
					       j.rows[i].job, err.data);
				if (!db_tuning_set_status(
					    ctx->db, j.t.name, "InProgress",
					    "Failed", why_failed.data, now, now,
					    &e2))
					log_error("tuning job '%s' Failed: %s",
						  j.t.name, why_failed.data);
				buf_release(&why_failed);
				buf_release(&e2);
			}
		}
	if (launched) {
		tjob_release(&j);
		buf_release(&err);
		atomic_store(&tuning_wake, 1);
		return;
	}
	early_stop(ctx, &j, now);
	why = stopping ? "stopped" : done_reason(ctx, &j, now);
	if (why) {
		for (i = 0; i < j.n; i++) {
			const struct kid *kd = &j.kids[i];
			struct buf msg = BUF_INIT;

			/* A spent budget lets the running jobs finish. */
			if (!kd->exists || kd->terminal || !*why ||
			    strcmp(kd->c->status, "InProgress"))
				continue;
			(void)buf_addf(&msg,
				       "Stopping: hyperparameter tuning job %s "
				       "%s",
				       j.t.name,
				       stopping ? "is stopping" : why);
			buf_reset(&err);
			(void)ctrl_job_stop_with(ctx, kd->c->job, msg.data,
						 &err);
			buf_release(&msg);
		}
		/* Ended when nothing of it runs any more. */
		for (i = 0; i < j.n; i++)
			if (j.kids[i].exists && !j.kids[i].terminal)
				break;
		if (i == j.n)
			end_tuning(ctx, &j, now, why);
	} else {
		int room = j.spec.max_parallel - j.n_active;
		int left = budget(&j) - j.n_budget_used;

		while (room-- > 0 && left-- > 0) {
			buf_reset(&err);
			if (launch(ctx, &j, &err)) {
				log_error("tuning job '%s': %s", j.t.name,
					  err.data);
				break;
			}
			/* The next suggestion sees this one as pending. */
			tjob_release(&j);
			buf_reset(&err);
			if (tjob_load(ctx, name, &j, &err))
				break;
		}
	}
	tjob_release(&j);
	buf_release(&err);
}

void ctrl_tuning_tick(struct ctrl_ctx *ctx)
{
	int64_t now = time_now_ms();
	struct buf err = BUF_INIT;
	char **names = NULL;
	size_t n = 0, i;

	if (!atomic_exchange(&tuning_wake, 0) && now < next_tick_ms)
		return;
	if (db_tuning_active(ctx->db, &names, &n, &err)) {
		log_error("cannot read tuning jobs: %s", err.data);
		n = 0;
	}
	for (i = 0; i < n; i++)
		step(ctx, names[i], now);
	curve_memo_prune(names, n);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	next_tick_ms = now + (n ? TICK_MS : 1000);
	buf_release(&err);
}
