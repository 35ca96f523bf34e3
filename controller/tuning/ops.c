#define LOG_TAG "tune"

/*
 * The operations on tuning jobs (controller/tuning.h): Create, Describe,
 * Stop, Delete, the two Lists and the status page's views. Each reads
 * what it answers from the store; the reconciler's step
 * (controller/tuning/step.c) does the rest.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/rand.h>

#include "api/requests.h"
#include "api/tuning.h"
#include "controller/ctrl.h"
#include "controller/ops.h"
#include "controller/tuning.h"
#include "controller/tuning/job.h"
#include "db/tuning.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

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

static void child_view(const struct ctrl_tuning_job *j,
		       const struct ctrl_tuning_kid *kd,
		       struct api_tuning_child *out)
{
	const struct api_tuning_def *d = ctrl_tuning_def_of(j, kd->c->def);

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

/* The job's child summary JSON, with the range names filled in. */
static int child_json(const struct ctrl_tuning_job *j,
		      const struct ctrl_tuning_kid *kd, struct buf *out)
{
	struct api_tuning_child v;
	char **names =
		ctrl_tuning_range_names(ctrl_tuning_def_of(j, kd->c->def));
	int ret;

	child_view(j, kd, &v);
	v.hp_names = names;
	ret = api_tuning_child_json(&v, out);
	free(names);
	return ret;
}

static int describe_body(struct ctrl_ctx *ctx, struct ctrl_tuning_job *j,
			 int with_kids, struct buf *out)
{
	struct api_tuning_record r;
	struct api_tuning_child best, overall;
	char **best_names = NULL, **overall_names = NULL;
	struct ctrl_tuning_job *parents = NULL;
	size_t n_parents = 0, i, k;
	const struct ctrl_tuning_job *ob_job = NULL;
	const struct ctrl_tuning_kid *ob = NULL;
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
		best_names = ctrl_tuning_range_names(
			ctrl_tuning_def_of(j, j->kids[j->best].c->def));
		best.hp_names = best_names;
		r.best = &best;
		ob_job = j;
		ob = &j->kids[j->best];
	}
	if (j->spec.n_parents) {
		ctrl_tuning_parents_load(ctx, j, &parents, &n_parents);
		for (i = 0; i < n_parents; i++)
			for (k = 0; k < parents[i].n; k++) {
				const struct ctrl_tuning_kid *kd =
					&parents[i].kids[k];
				/* Compared in this job's direction. */
				double sign =
					ctrl_tuning_def_of(j, 0)->maximize ?
						-1 :
						1;

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
			overall_names = ctrl_tuning_range_names(
				ctrl_tuning_def_of(ob_job, ob->c->def));
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
	ctrl_tuning_parents_free(parents, n_parents);
	return ret;
}

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
		if (!ctrl_tuning_status_terminal(p.status)) {
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
		    const char *name, struct ctrl_tuning_job *j,
		    struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	int ret = ctrl_tuning_job_load(ctx, name, j, &err);

	if (!ret && !ctrl_caller_sees(who, j->t.owner)) {
		ctrl_tuning_job_release(j);
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
static void by_name(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *shape, const char *body, size_t len,
		    struct ctrl_response *resp,
		    void (*fn)(struct ctrl_ctx *, struct ctrl_tuning_job *,
			       struct ctrl_response *))
{
	struct buf err = BUF_INIT;
	struct ctrl_tuning_job j;
	char *name = NULL;
	int ret = api_member_request_parse(shape, "HyperParameterTuningJobName",
					   body, len, &name, &err);

	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
	} else if (!load_for(ctx, who, name, &j, resp)) {
		fn(ctx, &j, resp);
		ctrl_tuning_job_release(&j);
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

static void describe(struct ctrl_ctx *ctx, struct ctrl_tuning_job *j,
		     struct ctrl_response *resp)
{
	struct buf out = BUF_INIT;

	if (describe_body(ctx, j, 0, &out))
		ctrl_reply_err(resp, CTRL_E_INTERNAL, "answer too large");
	else
		ctrl_reply_json(resp, &out);
	buf_release(&out);
}

static void stop(struct ctrl_ctx *ctx, struct ctrl_tuning_job *j,
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

static void delete (struct ctrl_ctx *ctx, struct ctrl_tuning_job *j,
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

/*
 * The sort key and direction of a list. qsort has no context argument, so
 * each item points at it.
 */
struct sort_ctx {
	const char *by;
	int ascending;
};

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
	const struct sort_ctx *sc;
};

static int cmp_tuning(const void *pa, const void *pb)
{
	const struct db_tuning *a = ((const struct tuning_item *)pa)->t;
	const struct db_tuning *b = ((const struct tuning_item *)pb)->t;
	const struct sort_ctx *sort_by = ((const struct tuning_item *)pa)->sc;
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
		(*items)[*n].t = t;
		(*items)[(*n)++].sc = &sc;
	}
	sc.by = r->sort_by ? r->sort_by : "Name";
	sc.ascending = r->ascending;
	qsort(*items, *n, sizeof(**items), cmp_tuning);
	return 0;
}

static int tuning_summary(struct ctrl_ctx *ctx, const char *name,
			  struct buf *out, struct buf *err)
{
	struct api_tuning_record r;
	struct ctrl_tuning_job j;
	int ret = ctrl_tuning_job_load(ctx, name, &j, err);

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
	ctrl_tuning_job_release(&j);
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
	struct ctrl_tuning_job j;
	int ret = ctrl_tuning_job_load(ctx, name, &j, err);

	if (!ret && !ctrl_caller_sees(who, j.t.owner)) {
		ctrl_tuning_job_release(&j);
		ret = ERR_NOTFOUND;
	}
	if (ret == ERR_NOTFOUND) {
		buf_reset(err);
		(void)buf_addf(err, NOT_FOUND_FMT, name);
	}
	if (ret)
		return ret;
	ret = describe_body(ctx, &j, 1, out);
	ctrl_tuning_job_release(&j);
	return ret;
}

struct kid_item {
	const struct ctrl_tuning_kid *kd;
	const struct sort_ctx *sc;
};

static int cmp_kid(const void *pa, const void *pb)
{
	const struct ctrl_tuning_kid *a = ((const struct kid_item *)pa)->kd;
	const struct ctrl_tuning_kid *b = ((const struct kid_item *)pb)->kd;
	const struct sort_ctx *sort_by = ((const struct kid_item *)pa)->sc;
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
	struct ctrl_tuning_job j;
	struct kid_item *pick = NULL;
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
		const struct ctrl_tuning_kid *kd = &j.kids[i];

		if (!kd->exists)
			continue;
		if (r.status && strcmp(kd->c->status, r.status))
			continue;
		/* As the service: sorted by objective, only those with one. */
		if (r.sort_by &&
		    !strcmp(r.sort_by, "FinalObjectiveMetricValue") &&
		    !kd->succeeded)
			continue;
		pick[n].kd = kd;
		pick[n++].sc = &sc;
	}
	sc.by = r.sort_by ? r.sort_by : "Name";
	sc.ascending = r.ascending;
	qsort(pick, n, sizeof(*pick), cmp_kid);
	ret = page_start(r.next_token, n, &start, &err);
	if (!ret) {
		end = start + (size_t)r.max_results;
		if (end > n)
			end = n;
		jsons = xcalloc(end - start + 1, sizeof(*jsons));
		for (i = start; i < end && !ret; i++) {
			struct buf one = BUF_INIT;

			ret = child_json(&j, pick[i].kd, &one);
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
	ctrl_tuning_job_release(&j);
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
