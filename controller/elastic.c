/*
 * Elastic jobs: the sizes of their attempts.
 *
 * A lost host makes the job Restarting, as for any job. Once the attempt
 * has settled, the restart fills the job's places (its instance count:
 * an attempt that ran on fewer is filled back up) with the surviving
 * hosts and free spares. When some place stays empty and no spare turns
 * up within --elastic-wait, an elastic job starts its next attempt on the
 * hosts it has, when they are at least its minimum: their algo-N names,
 * SM_HOSTS, the world size and ShardedByS3Key's shares are those of the
 * smaller attempt, which resumes from the last checkpoint. A job below
 * its minimum waits for hosts as any job does (--restart-wait).
 *
 * While such a job trains on fewer hosts than it asked for, each look at
 * it checks for free hosts of its type; when there are enough for the
 * missing places it ends its attempt as a planned move: the agents ask
 * the program for a checkpoint now (agent/ckptnow.c), stop it, and the
 * restart fills every place. No retry is spent on either.
 */
#include <pthread.h>

#include "controller/ctrl.h"
#include "controller/elastic.h"
#include "controller/jobrt.h"
#include "controller/placement.h"
#include "db/db.h"
#include "common/banned.h"

int ctrl_elastic_min(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_jobrt *rt;
	int min;

	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, name);
	min = rt ? rt->spec.min_instances : 0;
	pthread_mutex_unlock(&ctx->jobs_lock);
	return min;
}

size_t ctrl_elastic_slots(struct ctrl_ctx *ctx, const struct db_job *job,
			  size_t n)
{
	if (job->instance_count > 0 && (size_t)job->instance_count > n &&
	    ctrl_elastic_min(ctx, job->name) > 0)
		return (size_t)job->instance_count;
	return n;
}

size_t ctrl_elastic_compact(const char **chosen, size_t slots)
{
	size_t i, m = 0;

	for (i = 0; i < slots; i++)
		if (chosen[i])
			chosen[m++] = chosen[i];
	for (i = m; i < slots; i++)
		chosen[i] = NULL;
	return m;
}

int ctrl_elastic_can_grow(struct ctrl_ctx *ctx, const struct db_job *job,
			  size_t n, int *want)
{
	*want = job->instance_count;
	if (!job->instance_type || job->instance_count <= 0 ||
	    (size_t)job->instance_count <= n ||
	    ctrl_elastic_min(ctx, job->name) <= 0)
		return 0;
	return ctrl_place_free_count(ctx, job->instance_type) >=
	       job->instance_count - (int)n;
}
