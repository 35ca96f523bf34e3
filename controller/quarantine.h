#ifndef CTRL_QUARANTINE_H
#define CTRL_QUARANTINE_H

/*
 * Bad hosts quarantined: each failed attempt is laid at one host (the
 * first failing rank's, controller/plan.c), kept in the store with the
 * attempt (db_attempt_set_failed_host()). A host laid the failures of
 * --quarantine-failures different jobs within --quarantine-window is
 * drained with a reason that starts "quarantined:" and names them; an
 * admin's undrain returns it and forgets them. A job's next attempt
 * avoids the host its last one failed on (controller/placement.c).
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

/*
 * Whether a host whose failures are f[0..n) (oldest first) is to be
 * quarantined at now_ms: the failures that ended within window_ms of
 * now_ms, of jobs that did not fail on another host too (such a job fails
 * wherever it runs: its own fault), belong to min_jobs different jobs or
 * more (min_jobs > 0). When so, writes the drain reason into reason (reset
 * first) and returns the number of those jobs; else returns 0. Pure.
 */
int ctrl_quarantine_decide(const struct db_host_failure *f, size_t n,
			   int min_jobs, long window_ms, int64_t now_ms,
			   struct buf *reason);

/* Whether a drain reason is a quarantine's. */
int ctrl_quarantine_is(const char *drain_reason);

/*
 * Attempt `attempt` of job failed, and its failure is laid at host:
 * records that, then drains host when ctrl_quarantine_decide() says so
 * (unless --quarantine-failures is 0 or host is drained already).
 */
void ctrl_quarantine_note(struct ctrl_ctx *ctx, const char *job, int attempt,
			  const char *host);

/* An admin returned host to service: its failures are forgotten. */
void ctrl_quarantine_forget(struct ctrl_ctx *ctx, const char *host);

#endif
