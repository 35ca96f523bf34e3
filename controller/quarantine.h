#ifndef CTRL_QUARANTINE_H
#define CTRL_QUARANTINE_H

/*
 * Bad hosts quarantined. Each failed attempt is laid at one host (the
 * first failing rank's, controller/plan.c), kept in the store with the
 * attempt (db_attempt_set_failed_host()), and the job's next attempt
 * leaves that host when a spare is free (controller/placement.c). The
 * failure is held against the host once the job got further elsewhere:
 * its later attempt on other hosts ended without a failure of its own,
 * or has run for CTRL_QUARANTINE_CONFIRM_MS and twice as long as the
 * failed one did; a job that fails wherever it runs is its own fault. A
 * host held the failures of --quarantine-failures different jobs within
 * --quarantine-window is drained with a reason that starts
 * "quarantined:" and names them; an admin's undrain returns it and
 * forgets them.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct ctrl_ctx;
struct db_host_failure;

/* The start of a quarantine's drain reason. */
#define CTRL_QUARANTINE_PREFIX "quarantined:"

/* Longest drain reason a quarantine writes, and one job's part of it. */
#define CTRL_QUARANTINE_REASON_MAX 1024
#define CTRL_QUARANTINE_JOB_REASON_MAX 160

/* How long a job's later attempt must run before it confirms a failure. */
#define CTRL_QUARANTINE_CONFIRM_MS 10000

/* How often the reconciler looks for failures confirmed meanwhile. */
#define CTRL_QUARANTINE_TICK_MS 2000

/*
 * Whether failure f is held against its host at now_ms (see above): its
 * job did not fail on another host too, its next attempt left the host,
 * and a later one got further. Pure.
 */
int ctrl_quarantine_confirmed(const struct db_host_failure *f, int64_t now_ms);

/*
 * Whether a host whose failures are f[0..n) (oldest first) is to be
 * quarantined at now_ms: the confirmed failures that ended within
 * window_ms of now_ms belong to min_jobs different jobs or more (min_jobs
 * > 0). When so, writes the drain reason into reason (reset first) and
 * returns the number of those jobs; else returns 0. Pure.
 */
int ctrl_quarantine_decide(const struct db_host_failure *f, size_t n,
			   int min_jobs, long window_ms, int64_t now_ms,
			   struct buf *reason);

/* Whether a drain reason is a quarantine's. */
int ctrl_quarantine_is(const char *drain_reason);

/*
 * Attempt `attempt` of job failed, and its failure is laid at host:
 * records that, then looks at host (ctrl_quarantine_tick()'s look).
 */
void ctrl_quarantine_note(struct ctrl_ctx *ctx, const char *job, int attempt,
			  const char *host);

/*
 * Drains each host that failures within the window were laid at and that
 * ctrl_quarantine_decide() says is bad (unless --quarantine-failures is 0
 * or the host is drained already). Looks at most every
 * CTRL_QUARANTINE_TICK_MS unless now is set (a job just ended well).
 * Reconciler's thread.
 */
void ctrl_quarantine_tick(struct ctrl_ctx *ctx, int now);

/* An admin returned host to service: its failures are forgotten. */
void ctrl_quarantine_forget(struct ctrl_ctx *ctx, const char *host);

#endif
