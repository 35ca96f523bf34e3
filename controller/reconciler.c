#define LOG_TAG "ctrl"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/ctrl.h"
#include "controller/job_state.h"
#include "db/db.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * The reconciler compares what should be with what is and acts. Handlers
 * only record facts and call ctrl_reconciler_wake(). It works from the
 * store alone, so after a restart it simply looks again.
 */

#define RECONCILE_PERIOD_MS 1000

struct name_list {
	char **names;
	size_t n, cap;
};

static void collect(const char *name, void *arg)
{
	struct name_list *l = arg;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->names = xrealloc(l->names, l->cap * sizeof(*l->names));
	}
	l->names[l->n++] = xstrdup(name);
}

static void name_list_release(struct name_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	memset(l, 0, sizeof(*l));
}

/*
 * A Stopping job whose processes have all ended becomes Stopped. No host
 * runs anything yet, so every Stopping job has ended.
 */
static void finish_stopping(struct ctrl_ctx *ctx)
{
	struct name_list l = { 0 };
	struct buf err = BUF_INIT;
	size_t i;

	if (db_jobs_with_status(ctx->db, "Stopping", collect, &l, &err)) {
		log_error("reconciler: %s", err.data);
		goto out;
	}
	for (i = 0; i < l.n; i++) {
		buf_reset(&err);
		if (ctrl_job_transition(ctx, l.names[i], CTRL_JOB_STOPPING,
					CTRL_JOB_STOPPED,
					"Training job stopped", NULL, &err) &&
		    err.len)
			log_warn("reconciler: job '%s': %s", l.names[i],
				 err.data);
	}
out:
	name_list_release(&l);
	buf_release(&err);
}

static void reconcile(struct ctrl_ctx *ctx)
{
	finish_stopping(ctx);
}

static void *reconciler_main(void *arg)
{
	struct ctrl_ctx *ctx = arg;
	struct timespec deadline;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->stopping) {
		ctx->dirty = 0;
		pthread_mutex_unlock(&ctx->lock);
		reconcile(ctx);
		pthread_mutex_lock(&ctx->lock);
		if (ctx->dirty || ctx->stopping)
			continue;
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += RECONCILE_PERIOD_MS / 1000;
		while (!ctx->dirty && !ctx->stopping)
			if (pthread_cond_timedwait(&ctx->wake, &ctx->lock,
						   &deadline) == ETIMEDOUT)
				break;
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

int ctrl_reconciler_start(struct ctrl_ctx *ctx)
{
	return pthread_create(&ctx->reconciler, NULL, reconciler_main, ctx) ?
		       ERR_INTERNAL :
		       0;
}

void ctrl_reconciler_stop(struct ctrl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->stopping = 1;
	pthread_cond_signal(&ctx->wake);
	pthread_mutex_unlock(&ctx->lock);
	pthread_join(ctx->reconciler, NULL);
}

void ctrl_reconciler_wake(struct ctrl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->dirty = 1;
	pthread_cond_signal(&ctx->wake);
	pthread_mutex_unlock(&ctx->lock);
}
