#ifndef CTRL_WARMPOOL_H
#define CTRL_WARMPOOL_H

/*
 * Managed warm pools (ResourceConfig.KeepAlivePeriodInSeconds), as
 * SageMaker keeps them: a job created with a keep-alive period holds a
 * pool (InUse) while it runs. When it ends Completed, Stopped after its
 * hosts were given, or Failed with a ClientError/algorithm error, its
 * hosts stay reserved for the period (Available): no other job is placed
 * on them but one of the same owner whose ResourceConfig (instance type
 * and count or groups, volume size and key), RoleArn and VpcConfig are
 * the same and that asks for a keep-alive period itself. Such a job
 * starts on them at once and the pool becomes Reused (ReusedByJob); the
 * new job's own pool is then InUse. A pool whose period ran out, or one
 * of whose hosts was lost, drained or removed, is Terminated and its
 * hosts free. The reconciler drives all of it (full passes); the state is
 * in the store (db/warmpool.h).
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct ctrl_ctx;
struct db_job;
struct db_assignment;
struct db_warm_pool;

/*
 * ResourceRetainedBillableTimeInSeconds of j's pool at now_ms: the time it
 * was (or has been) Available. -1 when it has no pool or is InUse with
 * nothing retained yet.
 */
int64_t ctrl_warm_pool_billable_s(const struct db_job *j, int64_t now_ms);

/*
 * At the end of job (to: the final state, reason: its FailureReason or
 * NULL; as[0..n): the hosts of its last attempt): its InUse pool becomes
 * Available holding those hosts, or Terminated. Before the job's
 * assignments are deleted, so the hosts are never free in between.
 */
void ctrl_warm_pool_job_end(struct ctrl_ctx *ctx, const struct db_job *job,
			    int to, const char *reason,
			    const struct db_assignment *as, size_t n);

/*
 * Terminates the Available pools whose period ran out or that lost a
 * host (lost, drained, removed or no longer known). Returns how many;
 * their hosts are free for the next look at the queue.
 */
int ctrl_warm_pool_tick(struct ctrl_ctx *ctx);

/*
 * Changes job's keep-alive period to seconds (0..21600), for the
 * UpdateTrainingJob operation, with SageMaker's rules: the job must have
 * been created with a keep-alive period, and be InProgress (its pool
 * InUse) or its pool Available; 0 terminates an Available pool at once and
 * frees its hosts. Describe then echoes the new period in ResourceConfig.
 * Returns 0 or, with err saying why in the service's words:
 *   ERR_INVALID   seconds out of range, the job has no warm pool, or it
 *                 is neither InProgress nor Available (ValidationException)
 *   ERR_NOTFOUND  no such job
 *   ERR_CONFLICT  the pool changed state meanwhile (retry)
 *   ERR_DB        the store failed
 */
int ctrl_warm_pool_set_keep_alive(struct ctrl_ctx *ctx, const char *job,
				  int seconds, struct buf *err);

#endif
