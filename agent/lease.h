#ifndef AGENT_LEASE_H
#define AGENT_LEASE_H

/* The lease and its watchdog (agent/lease.c). */
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"

struct agent_ctx;

#define AGENT_LEASE_PROCS 240

struct agent_lease_page;

struct agent_lease {
	int fd;
	struct agent_lease_page *page; /* <work-dir>/lease, shared */
	uint64_t fired_seen;
	int64_t check_at; /* monotonic: next look at the watchdog */
};

/* The lease ends this long before the controller's host deadline. */
int64_t agent_lease_margin_ms(int64_t deadline_ms);
/* Maps the lease file and starts the watchdog unless one runs. */
int agent_lease_open(struct agent_ctx *ctx, struct buf *err);
/*
 * Publishes the lease's end (until: monotonic ms, the session's) and the
 * processes it guards (every turn).
 */
void agent_lease_sync(struct agent_ctx *ctx, int64_t now, int64_t until);
/* A clean exit: nothing to guard, and the watchdog leaves. */
void agent_lease_close(struct agent_ctx *ctx);
/* `trainagent watchdog WORK_DIR` */
int agent_watchdog_main(int argc, char **argv);
/* /proc/<pid>/stat's starttime; 0 when there is no such process. */
uint64_t agent_proc_start_ticks(pid_t pid);

#endif
