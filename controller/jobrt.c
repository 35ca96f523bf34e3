#define LOG_TAG "ctrl"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctrl.h"
#include "controller/jobrt.h"
#include "db/db.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Buckets of a new table; it doubles when it holds more jobs than that. */
#define JOBRT_BUCKETS_MIN 64

/* Loads of a job that drops kept racing before one is kept anyway. */
#define JOBRT_LOAD_TRIES 3

static void jobrt_free(struct ctrl_jobrt *rt)
{
	if (!rt)
		return;
	ctrl_metric_set_unref(rt->metrics);
	api_job_spec_release(&rt->spec);
	api_distribution_release(&rt->dist);
	free(rt->dist_err);
	free(rt->name);
	free(rt->uid);
	free(rt->run_as);
	free(rt->owner);
	free(rt->image);
	free(rt->pin_error);
	free(rt);
}

struct ctrl_metric_set *ctrl_metric_set_ref(struct ctrl_metric_set *ms)
{
	__atomic_add_fetch(&ms->refs, 1, __ATOMIC_RELAXED);
	return ms;
}

void ctrl_metric_set_unref(struct ctrl_metric_set *ms)
{
	size_t i;

	if (!ms || __atomic_sub_fetch(&ms->refs, 1, __ATOMIC_ACQ_REL))
		return;
	for (i = 0; i < ms->n; i++) {
		free(ms->defs[i].name);
		bregex_free(ms->defs[i].re);
	}
	free(ms->defs);
	free(ms);
}

static void compile_metrics(struct ctrl_jobrt *rt)
{
	struct ctrl_metric_set *ms = xcalloc(1, sizeof(*ms));
	struct bregex_limits lim = BREGEX_LIMITS_INIT;
	struct buf err = BUF_INIT;
	size_t i;

	lim.subject_max = CTRL_METRIC_SUBJECT_MAX;
	ms->refs = 1;
	ms->n = rt->spec.n_metrics;
	ms->defs = xcalloc(ms->n + 1, sizeof(*ms->defs));
	for (i = 0; i < ms->n; i++) {
		ms->defs[i].name = xstrdup(rt->spec.metrics[i].name);
		buf_reset(&err);
		if (bregex_compile(rt->spec.metrics[i].regex, 0, &lim,
				   &ms->defs[i].re, &err))
			log_warn("job '%s': metric '%s': %s", rt->name,
				 rt->spec.metrics[i].name, err.data);
	}
	buf_release(&err);
	rt->metrics = ms;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/*
 * A runtime of job with spec (taken), its distribution parsed unless dist
 * is given (taken) and its MetricDefinitions compiled. No lock held.
 */
static struct ctrl_jobrt *jobrt_new(const struct db_job *job,
				    struct api_job_spec *spec,
				    struct api_distribution *dist)
{
	struct ctrl_jobrt *rt = xcalloc(1, sizeof(*rt));
	struct buf err = BUF_INIT;

	rt->name = xstrdup(job->name);
	rt->uid = dup_or_null(job->uid);
	rt->run_as = dup_or_null(job->run_as);
	rt->owner = dup_or_null(job->owner);
	rt->image = dup_or_null(job->image);
	rt->spec = *spec;
	memset(spec, 0, sizeof(*spec));
	if (dist) {
		rt->dist = *dist;
		memset(dist, 0, sizeof(*dist));
	} else if (api_distribution_parse(&rt->spec, &rt->dist, &err)) {
		rt->dist_err = buf_detach(&err, NULL);
	}
	compile_metrics(rt);
	buf_release(&err);
	return rt;
}

/* Reads job name from the store and parses it. No lock held. */
static struct ctrl_jobrt *jobrt_load(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_jobrt *rt = NULL;
	struct api_job_spec spec;
	struct db_job job;
	struct buf err = BUF_INIT;

	if (db_job_get(ctx->db, name, &job, &err)) {
		buf_release(&err);
		return NULL;
	}
	if (!job.spec_json ||
	    api_job_spec_load(job.spec_json, strlen(job.spec_json), &spec,
			      &err))
		log_error("job '%s': stored request does not parse: %s", name,
			  err.data);
	else
		rt = jobrt_new(&job, &spec, NULL);
	db_job_release(&job);
	buf_release(&err);
	return rt;
}

/* FNV-1a of name. */
static size_t name_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h;
}

static struct ctrl_jobrt **bucket_of(const struct ctrl_ctx *ctx,
				     const char *name)
{
	return &ctx->jobs[name_hash(name) & (ctx->jobs_cap - 1)];
}

/* Where the link to job name is, or the empty end of its bucket. */
static struct ctrl_jobrt **link_of(const struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_jobrt **pp = bucket_of(ctx, name);

	while (*pp && strcmp((*pp)->name, name))
		pp = &(*pp)->next;
	return pp;
}

static void grow(struct ctrl_ctx *ctx)
{
	struct ctrl_jobrt **old = ctx->jobs;
	size_t old_cap = ctx->jobs_cap, i;

	ctx->jobs_cap = old_cap ? 2 * old_cap : JOBRT_BUCKETS_MIN;
	ctx->jobs = xcalloc(ctx->jobs_cap, sizeof(*ctx->jobs));
	for (i = 0; i < old_cap; i++) {
		while (old[i]) {
			struct ctrl_jobrt *rt = old[i];
			struct ctrl_jobrt **b = bucket_of(ctx, rt->name);

			old[i] = rt->next;
			rt->next = *b;
			*b = rt;
		}
	}
	free(old);
}

/* Adds rt, whose name is not in the table. Caller holds jobs_lock. */
static void insert(struct ctrl_ctx *ctx, struct ctrl_jobrt *rt)
{
	struct ctrl_jobrt **b;

	if (ctx->n_jobs >= ctx->jobs_cap)
		grow(ctx);
	b = bucket_of(ctx, rt->name);
	rt->next = *b;
	*b = rt;
	ctx->n_jobs++;
}

/* Takes the runtime at *pp out of the table. Caller holds jobs_lock. */
static struct ctrl_jobrt *unlink_at(struct ctrl_ctx *ctx,
				    struct ctrl_jobrt **pp)
{
	struct ctrl_jobrt *rt = *pp;

	*pp = rt->next;
	ctx->n_jobs--;
	ctx->jobs_gen++;
	return rt;
}

struct ctrl_jobrt *ctrl_jobrt_find(struct ctrl_ctx *ctx, const char *name)
{
	return ctx->jobs_cap ? *link_of(ctx, name) : NULL;
}

size_t ctrl_jobrt_count(const struct ctrl_ctx *ctx)
{
	return ctx->n_jobs;
}

struct ctrl_jobrt *ctrl_jobrt_get(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_jobrt *rt = ctrl_jobrt_find(ctx, name);
	int tries;

	for (tries = 0; !rt && tries < JOBRT_LOAD_TRIES; tries++) {
		uint64_t gen = ctx->jobs_gen;
		struct ctrl_jobrt *mine;

		pthread_mutex_unlock(&ctx->jobs_lock);
		mine = jobrt_load(ctx, name);
		pthread_mutex_lock(&ctx->jobs_lock);
		/* Another thread loaded it meanwhile: theirs is kept. */
		rt = ctrl_jobrt_find(ctx, name);
		if (!mine)
			break;
		if (rt) {
			jobrt_free(mine);
			break;
		}
		/* A drop meanwhile may have been this job's end: what was
		 * read may be older than it, so it is read again. */
		if (gen != ctx->jobs_gen && tries + 1 < JOBRT_LOAD_TRIES) {
			jobrt_free(mine);
			continue;
		}
		insert(ctx, mine);
		rt = mine;
	}
	return rt;
}

void ctrl_jobrt_put(struct ctrl_ctx *ctx, const struct db_job *job,
		    struct api_job_spec *spec, struct api_distribution *dist)
{
	struct ctrl_jobrt *rt = jobrt_new(job, spec, dist);
	struct ctrl_jobrt *old = NULL;
	struct ctrl_jobrt **pp;

	pthread_mutex_lock(&ctx->jobs_lock);
	pp = ctx->jobs_cap ? link_of(ctx, rt->name) : NULL;
	if (pp && *pp && (*pp)->uid && rt->uid &&
	    !strcmp((*pp)->uid, rt->uid)) {
		/* Loaded from the store meanwhile: the same job. */
		old = rt;
	} else {
		if (pp && *pp)
			old = unlink_at(ctx, pp);
		insert(ctx, rt);
	}
	pthread_mutex_unlock(&ctx->jobs_lock);
	jobrt_free(old);
}

int ctrl_jobrt_dist(const struct ctrl_jobrt *rt,
		    const struct api_distribution **d, struct buf *err)
{
	*d = &rt->dist;
	if (!rt->dist_err)
		return 0;
	(void)buf_adds(err, rt->dist_err);
	return ERR_INVALID;
}

void ctrl_jobrt_drop(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_jobrt *rt = NULL;
	struct ctrl_jobrt **pp;

	pthread_mutex_lock(&ctx->jobs_lock);
	pp = ctx->jobs_cap ? link_of(ctx, name) : NULL;
	if (pp && *pp)
		rt = unlink_at(ctx, pp);
	pthread_mutex_unlock(&ctx->jobs_lock);
	jobrt_free(rt);
}

void ctrl_jobrt_release_all(struct ctrl_ctx *ctx)
{
	size_t i;

	for (i = 0; i < ctx->jobs_cap; i++) {
		while (ctx->jobs[i]) {
			struct ctrl_jobrt *rt = ctx->jobs[i];

			ctx->jobs[i] = rt->next;
			jobrt_free(rt);
		}
	}
	free(ctx->jobs);
	ctx->jobs = NULL;
	ctx->jobs_cap = 0;
	ctx->n_jobs = 0;
}
