#ifndef CTRL_RENDEZVOUS_H
#define CTRL_RENDEZVOUS_H

/*
 * The rendezvous store: a small key-value store per job and attempt, for
 * trainers that exchange a blob (an NCCL unique id, an address) without
 * MPI. Ranks reach it at <advertise-url>/v1/rendezvous/<job>/<attempt>
 * with the attempt's token (TRAINCTL_RDZV_URL, TRAINCTL_RDZV_TOKEN):
 *   PUT  .../<key>             body = value (at most 64 KiB)    -> 200
 *   GET  .../<key>?wait_ms=N   the value once it exists (N <= 60000)
 *                              -> 200, or 404 when N passed first
 * The token is an HMAC of "<job>/<attempt>" under a key kept in the state
 * directory, so it needs no storage and survives a controller restart;
 * a token of one attempt opens nothing of another. Values live in
 * memory: an attempt's values go when a later attempt of the job
 * writes or when the job ends. Each attempt has a budget of keys and of
 * bytes (keys and values), and all attempts one of bytes, larger than an
 * attempt's: a PUT past one is refused (413, naming the budget) and an
 * overwritten value gives its bytes back.
 */
#include <stddef.h>

#include "controller/request.h"

struct ctrl_ctx;
struct MHD_Connection;

#define CTRL_RDZV_MAX_VALUE 65536
/* Default budgets: per attempt, and of all attempts together. */
#define CTRL_RDZV_ATTEMPT_BYTES (8L << 20)
#define CTRL_RDZV_ATTEMPT_KEYS 4096L
#define CTRL_RDZV_TOTAL_BYTES (64L << 20)
#define CTRL_RDZV_MAX_WAIT_MS 60000

/* Loads or makes the token key. */
int ctrl_rdzv_init(struct ctrl_ctx *ctx, struct buf *err);
void ctrl_rdzv_release(struct ctrl_ctx *ctx);

/*
 * The attempt's token: 64 hex digits and a NUL in out. uid (the job's,
 * may be NULL) is signed too, so a token of a deleted job opens nothing
 * of a new job of the same name.
 */
void ctrl_rdzv_token(const struct ctrl_ctx *ctx, const char *job,
		     const char *uid, int attempt, char out[65]);

/*
 * Attempts up to attempt of job (uid, may be NULL) have ended: their
 * values go, and their tokens neither read nor write any more.
 */
void ctrl_rdzv_forget(struct ctrl_ctx *ctx, const char *job, const char *uid,
		      int attempt);

/* Resumes the GETs whose wait passed (called under hosts_lock). */
void ctrl_rdzv_tick(struct ctrl_ctx *ctx, int64_t now_ms);

/* Shutdown: every waiting GET answers now (under hosts_lock). */
void ctrl_rdzv_resume_all(struct ctrl_ctx *ctx);

/* The rows of /v1/rendezvous/... (controller/route.h). */
extern const struct ctrl_route_block ctrl_rdzv_routes;

#endif
