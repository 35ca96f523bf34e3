#ifndef DB_REPLICA_H
#define DB_REPLICA_H

/*
 * Replication of the store's writes (docs/ha.md). With a hook set, every
 * write transaction of the writer records its changes (a changeset of
 * SQLite's session extension, over every table but the node-local
 * replica_state) and, before its COMMIT, hands them to hook->propose,
 * which returns once a majority holds them as the log entry `index`. Then
 * the transaction records index as the store's applied index and commits;
 * when propose fails it rolls back and the write fails with propose's
 * reason. One replicated write is in flight at a time (the writer lock is
 * held across propose). Without a hook nothing of this runs.
 *
 * The other members apply each entry with db_replica_apply(); a store
 * is copied whole with db_replica_snapshot() and db_replica_restore().
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct db;

struct db_replica_hook {
	/*
	 * Replicates changes (len bytes, len > 0): returns 0 with *index
	 * set once a majority holds them, or a negative code with err set
	 * ("not the leader", "lost leadership"). Called with the write
	 * lock held.
	 */
	int (*propose)(void *arg, const void *changes, size_t len,
		       uint64_t *index, struct buf *err);
	/*
	 * After a propose that returned 0: the local COMMIT of entry index
	 * succeeded (ok 1) or failed (ok 0; the store no longer holds what
	 * the log does). Called with the write lock still held.
	 */
	void (*applied)(void *arg, uint64_t index, int ok);
	void *arg;
};

/* Sets (hook) or clears (NULL) the hook; hook is copied. Call it while no
 * write is under way. */
void db_replica_set_hook(struct db *db, const struct db_replica_hook *hook);

/*
 * 0 when every table's changes can be recorded (each has a primary key),
 * else ERR_INVALID naming one that cannot, or ERR_DB.
 */
int db_replica_check_tables(struct db *db, struct buf *err);

/* *yes: whether any table but the node-local one holds a row. Returns 0
 * or ERR_DB. */
int db_replica_holds_rows(struct db *db, int *yes, struct buf *err);

/* The index of the last entry the store holds (0: none). */
uint64_t db_replica_applied(struct db *db);

/*
 * Applies the changes of entry index in one transaction that also records
 * index; an index at or below db_replica_applied() is skipped (a replay
 * after a restart). Returns 0, or ERR_CONFLICT when the changes do not
 * fit the store (it diverged from the log), or ERR_DB; err says why.
 */
int db_replica_apply(struct db *db, uint64_t index, const void *changes,
		     size_t len, struct buf *err);

/*
 * The whole store as one image, from one read snapshot: *data (malloc'd,
 * the caller's to free) of *len bytes. Returns 0 or ERR_DB.
 */
int db_replica_snapshot(struct db *db, void **data, size_t *len,
			struct buf *err);

/*
 * Replaces the store's contents with an image db_replica_snapshot() made,
 * and records index as its applied index. Returns 0, ERR_INVALID (not an
 * image) or ERR_DB.
 */
int db_replica_restore(struct db *db, uint64_t index, const void *data,
		       size_t len, struct buf *err);

#endif
