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
#include "db/db.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
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

static void reconcile(struct ctrl_ctx *ctx)
{
	if (ctrl_hosts_tick(ctx, time_mono_ms()))
		log_debug("reconciler: hosts lost");
	ctrl_local_tick(ctx);
	ctrl_provision_tick(ctx);
	ctrl_jobs_reconcile(ctx);
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
		deadline.tv_nsec += (long)RECONCILE_PERIOD_MS * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec += deadline.tv_nsec / 1000000000L;
			deadline.tv_nsec %= 1000000000L;
		}
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
