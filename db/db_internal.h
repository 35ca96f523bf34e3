#ifndef DB_DB_INTERNAL_H
#define DB_DB_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "common/buf.h"
#include "db/replica.h"

struct db_tag;

/* Applies pending migrations on conn. Returns 0 or ERR_DB. */
int db__migrate(sqlite3 *conn, struct buf *err);

/* The number of migrations this build knows. */
int db__schema_latest(void);

struct db;

/*
 * Statements prepared once per connection: db.c prepares them on every
 * connection it opens, jobs.c holds their SQL (db__stmt_sql) and runs them.
 */
enum db__stmt_id {
	ST_GET_JOB,
	ST_GET_TRANSITIONS,
	ST_GET_METRICS,
	ST_INSERT_JOB,
	ST_INSERT_TRANSITION,
	ST_LAST_TRANSITION,
	ST_CLOSE_TRANSITION,
	ST_UPDATE_MESSAGE,
	ST_INSERT_JOB_TAG,
	ST_BEGIN,
	ST_COMMIT,
	ST_COUNT
};

extern const char *const db__stmt_sql[ST_COUNT];

/* A connection with its prepared statements. */
struct db_service_job;

struct db__conn {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	int busy;
};

/*
 * Borrows a pooled reader connection with its prepared statements (jobs.c).
 * Give it back with db__reader_put().
 */
struct db__conn *db__reader_get(struct db *db);
void db__reader_put(struct db *db, struct db__conn *c);

/*
 * Borrows a pooled reader connection for a query that db.c does not prepare
 * (list.c). Give it back with db__reader_release(db, *handle).
 */
sqlite3 *db__reader_acquire(struct db *db, void **handle);
void db__reader_release(struct db *db, void *handle);

/*
 * One read query (rows.c). bind, when set, binds the parameters
 * (db__bind_text1: bind_arg is the text of ?1). The two texts name what
 * failed in db__error()'s message.
 */
struct db__query {
	const char *sql;
	const char *prepare_what; /* "cannot prepare tuning list" */
	const char *step_what;	  /* "cannot list tuning jobs" */
	void (*bind)(sqlite3_stmt *st, const void *bind_arg);
	const void *bind_arg;
};

/*
 * Called on each row: returns 0 for the next one, a positive number to stop
 * (a lookup that found its row), or a negative code to fail with.
 */
typedef int db__row_fn(sqlite3_stmt *st, void *arg);

/*
 * Runs q on a pooled reader: prepare, bind, row() on each row, finalize,
 * release. Returns 0, row's negative code, or ERR_DB (err says why).
 */
int db__rows(struct db *db, const struct db__query *q, db__row_fn *row,
	     void *arg, struct buf *err);

/* A db__query bind: ?1 is the text bind_arg (NULL binds NULL). */
void db__bind_text1(sqlite3_stmt *st, const void *text);

/* The first column of each row of q, copied; on failure *names is NULL. */
int db__names(struct db *db, const struct db__query *q, char ***names,
	      size_t *n, struct buf *err);

/*
 * A growing array of rows for a db__row_fn: db__vec_push() appends a
 * zeroed element of size bytes and returns it. v is the caller's to free.
 */
struct db__vec {
	void *v;
	size_t n, alloc, size;
};
#define DB__VEC_INIT(size)         \
	{                          \
		NULL, 0, 0, (size) \
	}
void *db__vec_push(struct db__vec *a);

/* A copy of column i's text, or NULL. */
char *db__col_dup(sqlite3_stmt *st, int i);

/* Binds s as text (copied), or NULL. */
void db__bind_text(sqlite3_stmt *st, int i, const char *s);

/* Appends "what: <sqlite message>" to err and returns ERR_DB. */
int db__error(sqlite3 *conn, const char *what, struct buf *err);

/*
 * The writer connection, locked: db__writer_begin() takes the lock and
 * begins an IMMEDIATE transaction; db__writer_end() commits (ok) or rolls
 * back, then unlocks. Returns 0 or ERR_DB.
 */
sqlite3 *db__writer_begin(struct db *db, struct buf *err);
int db__writer_end(struct db *db, int ok, struct buf *err);

/*
 * db__writer_begin() for a write of facts the controller derives again
 * after a restart (which queued jobs wait, and for what): committed
 * without waiting for the disk; the next ordinary commit makes it durable
 * too.
 */
sqlite3 *db__writer_begin_derived(struct db *db, struct buf *err);

/*
 * The writer with its prepared statements. Use it only between
 * db__writer_begin() and db__writer_end(), or in db__batch_write()'s
 * fn, where the write lock is held.
 */
struct db__conn *db__writer_conn(struct db *db);

/*
 * Group commit: runs fn(c, arg, err) on the writer in a savepoint of the
 * open batch of inserts (beginning one when none is open), and returns
 * once the batch is committed and on disk. An fn that fails undoes only its
 * own writes. Returns fn's error, or 0, or ERR_DB when the batch did not
 * commit.
 */
/*
 * The service job's row, on the writer inside a write the caller holds
 * (db/batch.c). Returns 0, ERR_CONFLICT with err saying so (its
 * clientToken was taken meanwhile) or ERR_DB.
 */
int db__service_job_insert(struct db__conn *c, const struct db_service_job *j,
			   struct buf *err);

int db__batch_write(struct db *db,
		    int (*fn)(struct db__conn *c, void *arg, struct buf *err),
		    void *arg, struct buf *err);

/*
 * db_attempt_start()'s writes on conn, inside a write the caller holds.
 * Returns 0, ERR_NOTFOUND, ERR_CONFLICT or ERR_DB.
 */
int db__attempt_insert(sqlite3 *conn, const char *job, int attempt,
		       int master_port, const char *const *hosts, size_t n,
		       int64_t now_ms, struct buf *err);

/*
 * Replication's state on the writer (db/replica.c): the hook, the session
 * recording the open write, and the entry index that write records.
 */
struct sqlite3_session;

struct db__replica {
	int on;
	struct db_replica_hook hook;
	struct sqlite3_session *session; /* the open write's, or NULL */
	int applying;	/* the open write is db_replica_apply()'s */
	int proposed;	/* index was proposed by the open write */
	uint64_t index; /* the entry the open write records, 0: none */
	uint64_t applied; /* the store's applied index (atomic) */
};

struct db__replica *db__replica(struct db *db);

/* Reads the applied index at open. Returns 0 or ERR_DB. */
int db__replica_load(struct db *db, struct buf *err);

/*
 * The writer's transaction just began: starts recording its changes when
 * a hook is set. Returns 0 or ERR_DB.
 */
int db__replica_begin(struct db *db, struct buf *err);

/*
 * Before COMMIT: proposes what the transaction changed and records the
 * entry's index in it. Returns 0 (also when there is nothing to propose)
 * or a negative code with err set: the caller rolls back.
 */
int db__replica_propose(struct db *db, struct buf *err);

/*
 * After COMMIT (committed 1) or ROLLBACK: ends the recording and tells
 * the hook. Returns 1 when the write committed was replicated: a majority
 * holds it on disk, so the local commit need not wait for the disk (one
 * lost in a crash is applied again from raft's log).
 */
int db__replica_end(struct db *db, int committed);

/*
 * The writer for db_replica_apply(): takes the write lock, turns foreign
 * keys off (a changeset holds the cascades' deletes already) and begins;
 * db__writer_end() turns them back on. NULL with err set on failure.
 */
sqlite3 *db__writer_begin_apply(struct db *db, struct buf *err);

/* The write lock alone, without a transaction (db_replica_restore()). */
sqlite3 *db__writer_hold(struct db *db);
void db__writer_unhold(struct db *db);	     /* after a change: flushed */
void db__writer_unhold_clean(struct db *db); /* after reads only */

#endif
