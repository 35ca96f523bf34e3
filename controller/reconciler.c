#define LOG_TAG "ctrl"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/jobrun.h"
#include "controller/local_cluster.h"
#include "controller/provision.h"
#include "storage/s3d/s3d.h"
#include "controller/tuning.h"
#include "db/db.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * The reconciler compares what should be with what is and acts. Handlers
 * only record facts and call ctrl_reconciler_wake(). It works from the
 * store alone, so after a restart it simply looks again.
 */

/*
 * The longest the reconciler sleeps: heartbeat deadlines and long-poll
 * timeouts are checked at least this often.
 */
#define RECONCILE_PERIOD_MS 200

/* The shortest time between the starts of two passes. */
#define RECONCILE_GAP_US 4000

static void reconcile(struct ctrl_ctx *ctx, char **names, size_t n, int full)
{
	if (ctrl_hosts_tick(ctx, time_mono_ms())) {
		log_debug("reconciler: hosts lost");
		full = 1;
	}
	ctrl_local_tick(ctx);
	ctrl_provision_tick(ctx);
	ctrl_jobs_reconcile(ctx, names, n, full);
	ctrl_tuning_tick(ctx);
	(void)s3d_reap_uploads(&ctx->s3, time_now_ms());
}

static void *reconciler_main(void *arg)
{
	struct ctrl_ctx *ctx = arg;
	struct timespec deadline;
	int64_t last = 0;
	int64_t last_full = 0;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->stopping) {
		/*
		 * A wake right after a pass waits for the rest of the
		 * minimum gap, so that a burst of changes (thousands of
		 * creates a second) is handled in a few passes instead of
		 * one pass per change. A single change is acted on at once.
		 */
		int64_t since = time_mono_us() - last;

		if (last && since < RECONCILE_GAP_US) {
			time_mono_deadline(&deadline,
				    (long)((RECONCILE_GAP_US - since) / 1000) +
					    1);
			while (!ctx->stopping &&
			       pthread_cond_timedwait(&ctx->wake, &ctx->lock,
						      &deadline) != ETIMEDOUT)
				;
			if (ctx->stopping)
				break;
		}
		char **names = ctx->dirty_jobs;
		size_t n = ctx->n_dirty;
		int full = ctx->full_pass;

		ctx->dirty = 0;
		ctx->full_pass = 0;
		ctx->dirty_jobs = NULL;
		ctx->n_dirty = 0;
		ctx->dirty_alloc = 0;
		pthread_mutex_unlock(&ctx->lock);
		last = time_mono_us();
		if (last - last_full >= CTRL_FULL_PASS_MS * 1000LL)
			full = 1;
		if (full)
			last_full = last;
		reconcile(ctx, names, n, full);
		ctrl_reconciler_free_named(names, n);
		pthread_mutex_lock(&ctx->lock);
		if (ctx->dirty || ctx->stopping)
			continue;
		time_mono_deadline(&deadline, RECONCILE_PERIOD_MS);
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
	ctrl_reconciler_free_named(ctx->dirty_jobs, ctx->n_dirty);
	ctx->dirty_jobs = NULL;
	ctx->n_dirty = 0;
	ctx->dirty_alloc = 0;
}
