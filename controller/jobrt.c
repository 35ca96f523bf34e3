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
	size_t i;

	for (i = 0; i < rt->spec.n_metrics; i++)
		pcre2_code_free(rt->regexes[i]);
	free(rt->regexes);
	api_job_spec_release(&rt->spec);
	free(rt->name);
	free(rt->uid);
	free(rt->run_as);
	free(rt->image);
	free(rt->pin_error);
	free(rt);
}

static void compile_metrics(struct ctrl_jobrt *rt)
{
	size_t i;

	rt->regexes = xcalloc(rt->spec.n_metrics ? rt->spec.n_metrics : 1,
			      sizeof(*rt->regexes));
	for (i = 0; i < rt->spec.n_metrics; i++) {
		int code;
		PCRE2_SIZE off;

		rt->regexes[i] = pcre2_compile(
			(PCRE2_SPTR)rt->spec.metrics[i].regex,
			PCRE2_ZERO_TERMINATED, PCRE2_UTF, &code, &off, NULL);
		if (!rt->regexes[i])
			log_warn(
				"job '%s': metric '%s': regex does not compile "
				"at offset %zu",
				rt->name, rt->spec.metrics[i].name,
				(size_t)off);
		else
			pcre2_jit_compile(rt->regexes[i], PCRE2_JIT_COMPLETE);
	}
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
