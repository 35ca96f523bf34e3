#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/job_spec.h"
#include "api/rule_status.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/obs/metrics.h"
#include "controller/obs/rulerun.h"
#include "controller/obs/rules.h"
#include "db/db.h"
#include "db/run.h"
#include "db/telemetry.h"
#include "common/banned.h"

/* Status changes are read-modify-writes of one text per job. */
static pthread_mutex_t rules_lock = PTHREAD_MUTEX_INITIALIZER;

char *ctrl_rules_initial(const struct api_job_spec *spec, int64_t now_ms)
{
	struct api_rule_status *s;
	struct buf out = BUF_INIT;
	size_t i;

	if (!spec->n_rules)
		return NULL;
	s = xcalloc(spec->n_rules, sizeof(*s));
	for (i = 0; i < spec->n_rules; i++) {
		s[i].profiler = spec->rules[i].profiler;
		s[i].name = spec->rules[i].name;
		s[i].status =
			(char *)ctrl_rule_status_name(CTRL_RULE_IN_PROGRESS);
		s[i].modified_ms = now_ms;
	}
	if (api_rule_statuses_build(s, spec->n_rules, &out))
		buf_release(&out);
	free(s);
	return out.data ? buf_detach(&out, NULL) : NULL;
}

int64_t ctrl_rules_hang_ms(const struct api_job_spec *spec, int64_t dflt,
			   int *stop, int *fixed)
{
	struct buf err = BUF_INIT;
	struct ctrl_rule *r;
	int64_t ms = 0;
	size_t i, n;

	*stop = 0;
	*fixed = 0;
	for (i = 0; i < spec->n_rules; i++)
		if (spec->rules[i].invoke &&
		    !strcmp(spec->rules[i].invoke, "StalledTrainingRule"))
			break;
	if (i == spec->n_rules)
		return dflt;
	/* Checked at create; a rule refused since reads as absent. */
	if (!ctrl_rules_parse(spec, &r, &n, &err)) {
		ms = ctrl_rules_stall_ms(r, n, spec->name, stop);
		ctrl_rules_free(r, n);
	}
	buf_release(&err);
	*fixed = ms > 0;
	return ms > 0 ? ms : dflt;
}

/* The job's statuses, rules and uid, when it has rules. */
struct job_rules {
	struct db_job job;
	struct api_job_spec spec;
	struct api_rule_status *st;
	size_t n_st;
	struct ctrl_rule *rules;
	size_t n_rules;
};

static void job_rules_release(struct job_rules *j)
{
	api_rule_statuses_free(j->st, j->n_st);
	ctrl_rules_free(j->rules, j->n_rules);
	api_job_spec_release(&j->spec);
	db_job_release(&j->job);
}

/* Loads job's rules; 1 when it has some, 0 (nothing to release) else. */
static int job_rules_load(struct ctrl_ctx *ctx, const char *name,
			  struct job_rules *j)
{
	struct buf err = BUF_INIT;
	int ok = 0;

	memset(j, 0, sizeof(*j));
	if (db_job_get(ctx->db, name, &j->job, &err))
		goto out;
	if (!j->job.rule_statuses || !j->job.spec_json) {
		db_job_release(&j->job);
		goto out;
	}
	if (api_rule_statuses_parse(j->job.rule_statuses, &j->st, &j->n_st,
				    &err) ||
	    api_job_spec_load(j->job.spec_json, strlen(j->job.spec_json),
			      &j->spec, &err) ||
	    ctrl_rules_parse(&j->spec, &j->rules, &j->n_rules, &err)) {
		log_error("job '%s': cannot read its rules: %s", name,
			  err.data);
		job_rules_release(j);
		goto out;
	}
	ok = 1;
out:
	buf_release(&err);
	return ok;
}

static void job_rules_store(struct ctrl_ctx *ctx, struct job_rules *j)
{
	struct buf out = BUF_INIT;
	struct buf err = BUF_INIT;

	if (api_rule_statuses_build(j->st, j->n_st, &out) ||
	    db_job_set_rule_statuses(ctx->db, j->job.name, out.data, &err))
		log_error("job '%s': cannot store its rules' statuses: %s",
			  j->job.name, err.data);
	else
		ctrl_jobs_changed(ctx);
	buf_release(&out);
	buf_release(&err);
}

/* The status of rule r, by name; NULL when the job lacks it. */
static struct api_rule_status *status_of(struct job_rules *j,
					 const struct ctrl_rule *r)
{
	size_t i;

	for (i = 0; i < j->n_st; i++)
		if (!strcmp(j->st[i].name, r->name))
			return &j->st[i];
	return NULL;
}

static void set_status(struct api_rule_status *s, const struct ctrl_rule *r,
		       enum ctrl_rule_status st, const char *details,
		       int64_t now_ms)
{
	ctrl_metrics_rule_verdict(r->kind, st);
	free(s->status);
	free(s->details);
	s->status = xstrdup(ctrl_rule_status_name(st));
	s->details = details && *details ? xstrdup(details) : NULL;
	s->modified_ms = now_ms;
}

static int in_progress(const struct api_rule_status *s)
{
	return s &&
	       !strcmp(s->status, ctrl_rule_status_name(CTRL_RULE_IN_PROGRESS));
}

void ctrl_rules_stalled(struct ctrl_ctx *ctx, const char *job,
			const char *reason)
{
	struct job_rules j;
	size_t i;
	int changed = 0;

	pthread_mutex_lock(&rules_lock);
	if (!job_rules_load(ctx, job, &j)) {
		pthread_mutex_unlock(&rules_lock);
		return;
	}
	for (i = 0; i < j.n_rules; i++) {
		struct api_rule_status *s = status_of(&j, &j.rules[i]);

		if (j.rules[i].kind != CTRL_RULE_STALLED || !in_progress(s))
			continue;
		set_status(s, &j.rules[i], CTRL_RULE_ISSUES, reason,
			   time_now_ms());
		changed = 1;
		log_info("job '%s': rule %s found an issue: %s", job, s->name,
			 reason);
	}
	if (changed)
		job_rules_store(ctx, &j);
	job_rules_release(&j);
	pthread_mutex_unlock(&rules_lock);
}

/* ------------------------------------------------------------- facts */

struct facts {
	struct ctrl_rule_facts f;
	struct db_metric *pts;
	size_t n_pts;
	struct ctrl_rule_series *series;
	struct ctrl_rule_point *points;
	struct ctrl_rule_host *hosts;
	struct ctrl_rule_sample **samples;
	char **algos;
	size_t n_algos;
};

/* The job's metric series (the store gives them by name, in time order). */
static void gather_metrics(struct ctrl_ctx *ctx, const char *job,
			   struct facts *fa)
{
	struct buf err = BUF_INIT;
	size_t i, n = 0;

	if (db_metric_series(ctx->db, job, NULL, &fa->pts, &fa->n_pts, &err)) {
		log_error("job '%s': rules: %s", job, err.data);
		buf_release(&err);
		return;
	}
	buf_release(&err);
	fa->series = xcalloc(fa->n_pts + 1, sizeof(*fa->series));
	fa->points = xcalloc(fa->n_pts + 1, sizeof(*fa->points));
	for (i = 0; i < fa->n_pts; i++) {
		if (!n || strcmp(fa->series[n - 1].name, fa->pts[i].name)) {
			fa->series[n].name = fa->pts[i].name;
			fa->series[n].p = &fa->points[i];
			n++;
		}
		fa->points[i].ts_ms = fa->pts[i].timestamp_ms;
		fa->points[i].v = fa->pts[i].value;
		fa->series[n - 1].n++;
	}
	fa->f.metrics = fa->series;
	fa->f.n_metrics = n;
}

/* The GPUs host says it has (0: unknown or none). */
static int host_gpus(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_host *h;
	int gpus = 0;

	if (!name)
		return 0;
	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, name);
	if (h)
		gpus = h->gpus;
	pthread_mutex_unlock(&ctx->hosts_lock);
	return gpus;
}

/* One host's samples while it ran the job (its latest attempt's). */
static void gather_host(struct ctrl_ctx *ctx, const struct db_job *job,
			size_t k, struct facts *fa)
{
	struct ctrl_rule_host *h = &fa->hosts[k];
	struct buf err = BUF_INIT;
	struct db_tm_point *p = NULL;
	size_t n = 0, i;
	int gpus = 0;

	h->algo = fa->algos[k];
	if (db_tm_job_range(ctx->tm_db, job->name, job->uid, fa->algos[k], 0,
			    INT64_MAX, &p, &n, &err)) {
		log_error("job '%s': rules: %s", job->name, err.data);
		n = 0;
	}
	fa->samples[k] = xcalloc(n + 1, sizeof(**fa->samples));
	for (i = 0; i < n; i++) {
		struct ctrl_rule_sample *s = &fa->samples[k][i];

		/* The host changes only between attempts. */
		if (!i || !p[i].host || !p[i - 1].host ||
		    strcmp(p[i].host, p[i - 1].host))
			gpus = host_gpus(ctx, p[i].host);
		if (gpus > h->gpus)
			h->gpus = gpus;
		s->cpu = p[i].cpus > 0 ? p[i].cores_percent / p[i].cpus :
					 p[i].cores_percent;
		s->gpu = gpus > 0 ? p[i].gpu_percent / gpus : 0;
		s->mem = p[i].mem_percent;
	}
	h->s = fa->samples[k];
	h->n = n;
	db_tm_points_free(p, n);
	buf_release(&err);
}

static void gather_telemetry(struct ctrl_ctx *ctx, const struct db_job *job,
			     struct facts *fa)
{
	struct buf err = BUF_INIT;
	int64_t *last = NULL;
	size_t k;

	if (!ctx->tm_db ||
	    db_tm_job_algos(ctx->tm_db, job->name, job->uid, &fa->algos, &last,
			    &fa->n_algos, &err)) {
		buf_release(&err);
		return;
	}
	free(last);
	buf_release(&err);
	fa->hosts = xcalloc(fa->n_algos + 1, sizeof(*fa->hosts));
	fa->samples = xcalloc(fa->n_algos + 1, sizeof(*fa->samples));
	for (k = 0; k < fa->n_algos; k++)
		gather_host(ctx, job, k, fa);
	fa->f.hosts = fa->hosts;
	fa->f.n_hosts = fa->n_algos;
}

static void facts_release(struct facts *fa)
{
	size_t i;

	for (i = 0; i < fa->n_pts; i++)
		free(fa->pts[i].name);
	free(fa->pts);
	free(fa->series);
	free(fa->points);
	for (i = 0; i < fa->n_algos; i++) {
		free(fa->algos[i]);
		free(fa->samples[i]);
	}
	free(fa->algos);
	free(fa->samples);
	free(fa->hosts);
}

/*
 * When each running job's rules are evaluated next (monotonic ms), by a
 * hash of its name; a job that takes another's slot costs that one an
 * early evaluation, nothing more. Under rules_lock.
 */
#define TICK_SLOTS 128

static struct {
	char *job;
	int64_t next_ms;
} ticks[TICK_SLOTS];

static size_t tick_slot(const char *job)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *job; job++)
		h = (h ^ (unsigned char)*job) * 16777619u;
	return h % TICK_SLOTS;
}

/* Whether job's rules are due at now (monotonic ms). */
static int tick_due(const char *job, int64_t now)
{
	size_t i = tick_slot(job);

	return !ticks[i].job || strcmp(ticks[i].job, job) ||
	       now >= ticks[i].next_ms;
}

static void tick_set(const char *job, int64_t next_ms)
{
	size_t i = tick_slot(job);

	if (!ticks[i].job || strcmp(ticks[i].job, job)) {
		free(ticks[i].job);
		ticks[i].job = xstrdup(job);
	}
	ticks[i].next_ms = next_ms;
}

void ctrl_rules_tick(struct ctrl_ctx *ctx, const char *job)
{
	struct facts fa;
	struct job_rules j;
	struct buf details = BUF_INIT;
	int64_t now = time_mono_ms();
	size_t i;
	int changed = 0;

	pthread_mutex_lock(&rules_lock);
	if (!tick_due(job, now) || !job_rules_load(ctx, job, &j)) {
		pthread_mutex_unlock(&rules_lock);
		return;
	}
	tick_set(job, now + ctrl_rules_scan_ms(j.rules, j.n_rules));
	memset(&fa, 0, sizeof(fa));
	gather_metrics(ctx, job, &fa);
	gather_telemetry(ctx, &j.job, &fa);
	for (i = 0; i < j.n_rules; i++) {
		struct api_rule_status *s = status_of(&j, &j.rules[i]);

		if (j.rules[i].kind == CTRL_RULE_STALLED || !in_progress(s))
			continue;
		buf_reset(&details);
		if (ctrl_rule_eval(&j.rules[i], &fa.f, &details) !=
		    CTRL_RULE_ISSUES)
			continue;
		set_status(s, &j.rules[i], CTRL_RULE_ISSUES, details.data,
			   time_now_ms());
		log_info("job '%s': rule %s found an issue: %s", job, s->name,
			 details.data);
		changed = 1;
	}
	if (changed)
		job_rules_store(ctx, &j);
	facts_release(&fa);
	buf_release(&details);
	job_rules_release(&j);
	pthread_mutex_unlock(&rules_lock);
}

void ctrl_rules_job_end(struct ctrl_ctx *ctx, const char *job, int stopped)
{
	struct facts fa;
	struct job_rules j;
	struct buf details = BUF_INIT;
	int64_t now = time_now_ms();
	size_t i;

	pthread_mutex_lock(&rules_lock);
	if (!job_rules_load(ctx, job, &j)) {
		pthread_mutex_unlock(&rules_lock);
		return;
	}
	memset(&fa, 0, sizeof(fa));
	if (!stopped) {
		gather_metrics(ctx, job, &fa);
		gather_telemetry(ctx, &j.job, &fa);
	}
	for (i = 0; i < j.n_rules; i++) {
		struct api_rule_status *s = status_of(&j, &j.rules[i]);
		enum ctrl_rule_status st = CTRL_RULE_STOPPED;

		if (!in_progress(s))
			continue;
		buf_reset(&details);
		if (stopped)
			(void)buf_adds(&details, "the training job was "
						 "stopped before the rule "
						 "reached a verdict");
		else
			st = ctrl_rule_eval(&j.rules[i], &fa.f, &details);
		set_status(s, &j.rules[i], st, details.data, now);
	}
	job_rules_store(ctx, &j);
	facts_release(&fa);
	buf_release(&details);
	job_rules_release(&j);
	pthread_mutex_unlock(&rules_lock);
}
