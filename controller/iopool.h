#ifndef CTRL_IOPOOL_H
#define CTRL_IOPOOL_H

/*
 * Worker threads for request steps that wait on the disk (an S3 object's
 * fsync and rename, a multipart Complete copying gigabytes, an MD5 worked
 * out for a large file). libmicrohttpd's threads each serve many
 * connections, agents' heartbeats among them: a handler that blocks for
 * seconds stalls them all. Such a step is handed here with its connection
 * suspended; the connection is resumed when the step is done, and its
 * handler then sends what the step left.
 */
#include "common/buf.h"

struct MHD_Connection;
struct ctrl_iopool;

typedef void ctrl_iopool_fn(void *arg);

/* Starts workers threads. Returns 0 or ERR_INTERNAL (err says why). */
int ctrl_iopool_start(struct ctrl_iopool **pool, int workers, struct buf *err);

/*
 * Suspends conn, runs fn(arg) on a worker, then resumes conn (conn NULL:
 * a step of the controller's own, no connection waits). Returns 0;
 * -1 when the pool is stopping or NULL (nothing done: the caller runs fn
 * itself).
 */
int ctrl_iopool_run(struct ctrl_iopool *pool, struct MHD_Connection *conn,
		    ctrl_iopool_fn *fn, void *arg);

/* Runs what is queued, joins the workers and frees the pool. NULL is
 * fine. Every connection handed over is resumed before it returns. */
void ctrl_iopool_stop(struct ctrl_iopool *pool);

#endif
