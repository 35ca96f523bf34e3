#define LOG_TAG "ctrl"

#include <stdlib.h>
#include <string.h>

#include "controller/ctrl.h"
#include "controller/jobrt.h"
#include "db/db.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

static void jobrt_free(struct ctrl_jobrt *rt)
{
	ctrl_metric_set_unref(rt->metrics);
	api_job_spec_release(&rt->spec);
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

struct ctrl_jobrt *ctrl_jobrt_get(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_jobrt *rt;
	struct db_job job;
	struct buf err = BUF_INIT;

	for (rt = ctx->jobs; rt; rt = rt->next)
		if (!strcmp(rt->name, name))
			return rt;
	if (db_job_get(ctx->db, name, &job, &err)) {
		buf_release(&err);
		return NULL;
	}
	rt = xcalloc(1, sizeof(*rt));
	rt->name = xstrdup(job.name);
	if (!job.spec_json ||
	    api_job_spec_load(job.spec_json, strlen(job.spec_json), &rt->spec,
			      &err)) {
		log_error("job '%s': stored request does not parse: %s", name,
			  err.data);
		free(rt->name);
		free(rt);
		db_job_release(&job);
		buf_release(&err);
		return NULL;
	}
	rt->uid = job.uid ? xstrdup(job.uid) : NULL;
	rt->run_as = job.run_as ? xstrdup(job.run_as) : NULL;
	rt->owner = job.owner ? xstrdup(job.owner) : NULL;
	rt->image = job.image ? xstrdup(job.image) : NULL;
	compile_metrics(rt);
	rt->next = ctx->jobs;
	ctx->jobs = rt;
	db_job_release(&job);
	buf_release(&err);
	return rt;
}

void ctrl_jobrt_drop(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_jobrt **pp;

	pthread_mutex_lock(&ctx->jobs_lock);
	for (pp = &ctx->jobs; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->name, name)) {
			struct ctrl_jobrt *rt = *pp;

			*pp = rt->next;
			jobrt_free(rt);
			break;
		}
	}
	pthread_mutex_unlock(&ctx->jobs_lock);
}

void ctrl_jobrt_release_all(struct ctrl_ctx *ctx)
{
	while (ctx->jobs) {
		struct ctrl_jobrt *rt = ctx->jobs;

		ctx->jobs = rt->next;
		jobrt_free(rt);
	}
}
