#ifndef CTRL_WAKE_H
#define CTRL_WAKE_H

/*
 * Wake-ups: what tells the reconciler and the parked long-polls that a
 * fact changed. A leaf of the controller: handlers, the reconciler's
 * callees and the agents' endpoints call it; it calls nothing of theirs.
 *
 * The reconciler's wake-up is guarded by ctx->lock (dirty, full_pass,
 * dirty_jobs); the waiter lists and their timer heap by ctx->hosts_lock.
 */
#include <stddef.h>
#include <stdint.h>

struct ctrl_ctx;
struct MHD_Connection;

/*
 * Records that something changed; the reconciler looks again soon, at
 * every job.
 */
void ctrl_reconciler_wake(struct ctrl_ctx *ctx);

/*
 * Records that job name changed (a report, a create, a stop): the next
 * pass looks at it without reading every other job.
 */
void ctrl_reconciler_wake_job(struct ctrl_ctx *ctx, const char *name);

/*
 * Takes the names recorded since the pass began (NULL, *n = 0 when none),
 * so that a long pass steps a new job at once instead of after the pass;
 * free them with ctrl_reconciler_free_named(). The vector is
 * NULL-terminated (a strv of common/strvec.h).
 */
char **ctrl_reconciler_take_named(struct ctrl_ctx *ctx, size_t *n);
void ctrl_reconciler_free_named(char **names, size_t n);

/*
 * A suspended request waiting for news: on the list of what it waits for
 * (a host's version, the jobs, the logs) and in ctx->timers, a min-heap by
 * deadline, so that a tick looks only at the waiters whose time is up.
 */
struct ctrl_waiter {
	struct MHD_Connection *conn;
	int *resumed;	     /* set to 1 when resumed, owned by the request */
	int64_t deadline_ms; /* monotonic */
	struct ctrl_waiter *next;
	struct ctrl_waiter **pprev; /* what points at this one */
	size_t heap_at;		    /* its index in ctx->timers */
};

/* Adds a waiter to a list; caller holds hosts_lock. */
void ctrl_waiter_add(struct ctrl_ctx *ctx, struct ctrl_waiter **list,
		     struct MHD_Connection *conn, int *resumed,
		     int64_t deadline_ms);

/* Resumes and frees every waiter of a list; caller holds hosts_lock. */
void ctrl_waiters_resume(struct ctrl_ctx *ctx, struct ctrl_waiter **list);

/*
 * Resumes the waiters whose deadline (monotonic) passed, looking only at
 * those (the top of the heap). Caller holds hosts_lock.
 */
void ctrl_waiters_expire(struct ctrl_ctx *ctx, int64_t now_mono_ms);

/*
 * A job was created, changed state or was deleted: wakes the Describe
 * long-polls and the log followers (they look again) and the tuning step.
 * Takes hosts_lock.
 */
void ctrl_jobs_changed(struct ctrl_ctx *ctx);

#endif
