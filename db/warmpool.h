#ifndef DB_WARMPOOL_H
#define DB_WARMPOOL_H

/*
 * Managed warm pools in the store: a job created with a keep-alive period
 * has one (InUse while it runs); when it ends its hosts are either kept
 * for a matching job (Available, holding them) or let go (Terminated). A
 * job that takes an Available pool leaves it Reused, naming that job. The
 * state lives in the job's row (the wp_* columns), so a restart keeps it.
 */
#include <stddef.h>
#include <stdint.h>

#include "db/db.h"
#include "common/buf.h"

/* An Available pool; strings owned, see db_warm_pools_free(). */
struct db_warm_pool {
	char *job;    /* the job whose pool it is */
	char *key;    /* what a job must match to reuse it */
	char **hosts; /* the hosts it holds, algo-1 first */
	size_t n_hosts;
	int keep_alive_s;
	int64_t since_ms; /* when it became Available */
};

/*
 * Every Available pool, oldest first, into *out (free with
 * db_warm_pools_free()). Returns 0 or ERR_DB.
 */
int db_warm_pools_available(struct db *db, struct db_warm_pool **out, size_t *n,
			    struct buf *err);
void db_warm_pools_free(struct db_warm_pool *p, size_t n);

/*
 * The end of job's own use of its pool: InUse becomes Available holding
 * hosts[0..n) from now_ms on when n > 0, else Terminated. Returns 0,
 * ERR_CONFLICT (the job has no InUse pool) or ERR_DB.
 */
int db_warm_pool_end_job(struct db *db, const char *job,
			 const char *const *hosts, size_t n, int64_t now_ms,
			 struct buf *err);

/*
 * An Available pool becomes Terminated at now_ms (its period ran out, a
 * host was lost, drained or removed). Returns 0, ERR_CONFLICT (it is not
 * Available) or ERR_DB.
 */
int db_warm_pool_terminate(struct db *db, const char *job, int64_t now_ms,
			   struct buf *err);

/*
 * db_attempt_start() for a job that reuses the Available pool of job
 * `pool` on its hosts: in one transaction the attempt starts and the pool
 * becomes Reused by job. Returns 0, ERR_CONFLICT (the pool is no longer
 * Available, or the attempt exists; nothing changed), ERR_NOTFOUND or
 * ERR_DB.
 */
int db_attempt_start_warm(struct db *db, const char *job, int attempt,
			  int master_port, const char *const *hosts, size_t n,
			  int64_t now_ms, const char *pool, struct buf *err);

/*
 * Sets the keep-alive period of job's pool to seconds and its echoed
 * request to request_json, when the pool's status is still expect (InUse
 * or Available). seconds 0 on an Available pool terminates it at now_ms.
 * Returns 0, ERR_NOTFOUND, ERR_CONFLICT (the status changed meanwhile) or
 * ERR_DB.
 */
int db_warm_pool_set_keep_alive(struct db *db, const char *job,
				const char *expect, int seconds,
				const char *request_json, int64_t now_ms,
				struct buf *err);

#endif
