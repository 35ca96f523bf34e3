#ifndef AGENT_SESSION_H
#define AGENT_SESSION_H

/* The conversation with the controller (agent/session.c). */
#include <stdint.h>

struct agent_ctx;
struct agent_req;
struct api_work;

struct agent_session {
	int registered;
	int warned; /* a failure was logged since the last registration */
	struct agent_req *reg_req;
	struct agent_req *work_req;
	struct agent_req *status_req;
	struct agent_req *log_req;
	int64_t backoff_ms;
	int64_t register_at; /* monotonic: next register attempt */
	int64_t work_at;     /* monotonic: next work poll */
	int64_t log_at;	     /* monotonic: earliest next log POST */
	int64_t log_sent_ms; /* monotonic: when the last log POST began */
	int64_t heartbeat_ms;
	int64_t deadline_ms;
	int64_t last_contact; /* monotonic: last 2xx from the controller */
	/* monotonic: the send time of the last acknowledged request that the
	 * controller counts as a sign of life (register, work, status), or
	 * of one its machine refused; the lease runs from here (lease.c) */
	int64_t lease_base;
	/* monotonic: the controller's machine last answered (any HTTP
	 * status, or a refused connection: up, its trainctld down) */
	int64_t last_reachable;
	int64_t hold_since; /* monotonic: a report waits for logs (session.c) */
	int hold_flushed;   /* the logs queued at hold_since were sent */
	int64_t next_status; /* monotonic */
	int status_dirty;
	int64_t work_version;
	int have_work;		  /* a work answer arrived since start */
	struct api_work *pending; /* not yet applied */
	int64_t pending_at_ms;	  /* wall clock when it arrived */
	int fenced;
};

void agent_session_init(struct agent_ctx *ctx);
/* Sends what is due; called once per loop turn. */
void agent_session_tick(struct agent_ctx *ctx, int64_t now);
/*
 * Self-fencing, first thing every turn (before any exit is acted on):
 * once the lease has run out every running process is killed and the
 * assignments are marked fenced (no checkpoint of theirs is stored).
 */
void agent_session_check_lease(struct agent_ctx *ctx, int64_t now);
/* Monotonic ms at which the host's lease ends. */
int64_t agent_session_lease_end(const struct agent_ctx *ctx);
/* Earliest monotonic time something is due (INT64_MAX: nothing). */
int64_t agent_session_next(struct agent_ctx *ctx);
void agent_session_release(struct agent_ctx *ctx);
/*
 * A request failed in a way that means the controller lost us (or we it):
 * register again, after the backoff. what names the request for the log.
 */
void agent_session_lost(struct agent_ctx *ctx, const char *what,
			const struct agent_req *req);

#endif
