#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "controller/ctrl.h"
#include "controller/wake.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * Who gets woken when a fact changes: the reconciler (a full pass, or the
 * jobs named) and the long-polls parked on waiter lists, with the heap of
 * their deadlines. Nothing here reads the store or knows a job's state.
 */

/* Jobs named between two passes; more make the next pass a full one. */
#define DIRTY_MAX 4096

/* The reconciler's wake-ups (under ctx->lock). */

void ctrl_reconciler_wake(struct ctrl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->dirty = 1;
	ctx->full_pass = 1;
	pthread_cond_signal(&ctx->wake);
	pthread_mutex_unlock(&ctx->lock);
}

char **ctrl_reconciler_take_named(struct ctrl_ctx *ctx, size_t *n)
{
	char **names;

	pthread_mutex_lock(&ctx->lock);
	names = ctx->dirty_jobs;
	*n = ctx->n_dirty;
	ctx->dirty_jobs = NULL;
	ctx->n_dirty = 0;
	ctx->dirty_alloc = 0;
	/* Names alone made it dirty; a full pass asked for stays asked. */
	if (!ctx->full_pass)
		ctx->dirty = 0;
	pthread_mutex_unlock(&ctx->lock);
	return names;
}

void ctrl_reconciler_free_named(char **names, size_t n)
{
	(void)n;
	strv_free(names);
}

void ctrl_reconciler_wake_job(struct ctrl_ctx *ctx, const char *name)
{
	size_t i;
	int seen = 0;

	pthread_mutex_lock(&ctx->lock);
	ctx->dirty = 1;
	for (i = 0; i < ctx->n_dirty && !seen; i++)
		seen = !strcmp(ctx->dirty_jobs[i], name);
	if (!seen && !ctx->full_pass) {
		if (ctx->n_dirty >= DIRTY_MAX) {
			ctx->full_pass = 1;
		} else {
			/* NULL-terminated: a strv (common/strvec.h). */
			ALLOC_GROW(ctx->dirty_jobs, ctx->n_dirty + 2,
				   ctx->dirty_alloc);
			ctx->dirty_jobs[ctx->n_dirty++] = xstrdup(name);
			ctx->dirty_jobs[ctx->n_dirty] = NULL;
		}
	}
	pthread_cond_signal(&ctx->wake);
	pthread_mutex_unlock(&ctx->lock);
}

/* The waiters and their timer heap (under ctx->hosts_lock). */

static int timer_before(const struct ctrl_ctx *ctx, size_t a, size_t b)
{
	return ctx->timers[a]->deadline_ms < ctx->timers[b]->deadline_ms;
}

static void timer_swap(struct ctrl_ctx *ctx, size_t a, size_t b)
{
	struct ctrl_waiter *t = ctx->timers[a];

	ctx->timers[a] = ctx->timers[b];
	ctx->timers[b] = t;
	ctx->timers[a]->heap_at = a;
	ctx->timers[b]->heap_at = b;
}

static void timer_up(struct ctrl_ctx *ctx, size_t i)
{
	while (i && timer_before(ctx, i, (i - 1) / 2)) {
		timer_swap(ctx, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void timer_down(struct ctrl_ctx *ctx, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < ctx->n_timers && timer_before(ctx, l, m))
			m = l;
		if (r < ctx->n_timers && timer_before(ctx, r, m))
			m = r;
		if (m == i)
			return;
		timer_swap(ctx, i, m);
		i = m;
	}
}

static void timer_remove(struct ctrl_ctx *ctx, struct ctrl_waiter *w)
{
	size_t i = w->heap_at;

	if (i != --ctx->n_timers) {
		timer_swap(ctx, i, ctx->n_timers);
		timer_down(ctx, i);
		timer_up(ctx, i);
	}
}

void ctrl_waiter_add(struct ctrl_ctx *ctx, struct ctrl_waiter **list,
		     struct MHD_Connection *conn, int *resumed,
		     int64_t deadline_ms)
{
	struct ctrl_waiter *w = xcalloc(1, sizeof(*w));

	w->conn = conn;
	w->resumed = resumed;
	w->deadline_ms = deadline_ms;
	w->next = *list;
	if (w->next)
		w->next->pprev = &w->next;
	w->pprev = list;
	*list = w;
	ALLOC_GROW(ctx->timers, ctx->n_timers + 1, ctx->timers_alloc);
	w->heap_at = ctx->n_timers;
	ctx->timers[ctx->n_timers++] = w;
	timer_up(ctx, w->heap_at);
}

/* Takes w off its list and the heap, resumes its request, frees it. */
static void waiter_resume(struct ctrl_ctx *ctx, struct ctrl_waiter *w)
{
	*w->pprev = w->next;
	if (w->next)
		w->next->pprev = w->pprev;
	timer_remove(ctx, w);
	*w->resumed = 1;
	MHD_resume_connection(w->conn);
	free(w);
}

void ctrl_waiters_resume(struct ctrl_ctx *ctx, struct ctrl_waiter **list)
{
	while (*list)
		waiter_resume(ctx, *list);
}

void ctrl_waiters_expire(struct ctrl_ctx *ctx, int64_t now_mono_ms)
{
	while (ctx->n_timers && ctx->timers[0]->deadline_ms <= now_mono_ms)
		waiter_resume(ctx, ctx->timers[0]);
}

void ctrl_jobs_changed(struct ctrl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->hosts_lock);
	ctx->job_version++;
	ctx->tuning.dirty = 1;
	ctrl_waiters_resume(ctx, &ctx->job_waiters);
	/* A follower of a job's log learns of its end at once too. */
	ctrl_waiters_resume(ctx, &ctx->log_waiters);
	pthread_mutex_unlock(&ctx->hosts_lock);
}
