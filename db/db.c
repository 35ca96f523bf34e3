/*
 * The store's machinery: connections and their pool, the writer lock,
 * group commit, WAL sync, the checkpoint thread, open and close. What is
 * read and written is in jobs.c, list.c and run.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db/db.h"
#include "db/db_internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* One group commit of inserts (on its leader's stack). */
struct batch {
	int members; /* inserts in it, the leader included */
	int done;    /* committed and on disk, or failed */
	int failed;  /* 1 COMMIT, 2 flush, 3 replication failed */
	char why[256]; /* why replication failed */
};

struct db {
	struct db__conn writer;
	pthread_mutex_t write_lock;
	/*
	 * Group commit of inserts: the first insert of a batch begins the
	 * transaction and, after letting the inserts queued behind it join,
	 * commits them all; the others wait until the batch is on disk.
	 * Other writers wait until no batch is open.
	 */
	pthread_cond_t batch_cond;
	struct batch *batch; /* the open batch, NULL when none */
	int inserts_queued;  /* inserts waiting for write_lock (atomic) */
	int lazy_commit;     /* the open write need not wait for the disk */
	/*
	 * Durability: the writer commits with synchronous=NORMAL (no fsync
	 * inside COMMIT) and wal_sync() makes the WAL durable after the write
	 * lock is released, so the next transaction is written while the
	 * last one is flushed; one fdatasync covers every commit written
	 * before it started.
	 */
	char *wal_path;
	int wal_fd;
	pthread_mutex_t sync_lock;
	pthread_cond_t sync_cond;
	int syncing;
	uint64_t synced_seq; /* commits up to this write_seq are on disk */
	struct db__conn *readers;
	int n_readers;
	pthread_mutex_t pool_lock;
	pthread_cond_t pool_cond;
	_Atomic uint64_t write_seq; /* commits so far (db_write_seq) */
	/*
	 * Checkpoints run on their own connection and thread, so that
	 * copying the WAL into the database (and its fsync) never holds up
	 * a commit.
	 */
	struct db__conn ckpt;
	pthread_t ckpt_thread;
	int ckpt_started;
	pthread_mutex_t ckpt_lock;
	pthread_cond_t ckpt_cond;
	int ckpt_wanted;
	int ckpt_stop;
	struct db__replica rep; /* db/replica.c */
};

/*
 * WAL frames (pages) that start a checkpoint. Each one holds the writer
 * while it copies and syncs (see checkpoint()): fewer, larger ones cost
 * commits less; the WAL stays under ~16 MB.
 */
#define CKPT_PAGES 4000

/*
 * Called by SQLite after each commit of the writer, once the transaction
 * is in the WAL and readers can see it: counts it, then checkpoints as
 * SQLite's default hook (which this one replaces) does.
 */
static int wal_hook(void *arg, sqlite3 *conn, const char *name, int pages)
{
	struct db *db = arg;

	(void)conn;
	(void)name;
	atomic_fetch_add(&db->write_seq, 1);
	if (pages >= CKPT_PAGES && db->ckpt_started) {
		pthread_mutex_lock(&db->ckpt_lock);
		db->ckpt_wanted = 1;
		pthread_cond_signal(&db->ckpt_cond);
		pthread_mutex_unlock(&db->ckpt_lock);
	}
	return SQLITE_OK;
}

static void writer_lock(struct db *db);
static int writer_unlock(struct db *db, int committed, struct buf *err);

/*
 * SQLite before 3.51.3 (Debian 12 ships 3.40.1) has the WAL-reset bug
 * (https://sqlite.org/wal.html#walresetbug): a checkpoint that starts while
 * another connection commits a write that starts the WAL over can record a
 * wrong WAL-index header, and a later checkpoint then skips frames: pages
 * of committed transactions never reach the database, which is corrupt
 * (bench/api.sh growing the store to 100k jobs hit it: "database disk image
 * is malformed"). With such a library a checkpoint only runs while the
 * writer is held, so that no commit races it.
 */
#define SQLITE_WAL_RESET_FIXED 3051003

/*
 * Copies the WAL into the database while writers go on, then the frames
 * they added meanwhile with writes held back (a short copy). A WAL that
 * is all copied is started over by the next write and ignored by readers;
 * one that never is keeps growing, and every page read searches it.
 */
static void checkpoint(struct db *db)
{
	int log = 0;
	int done = 0;

	if (sqlite3_libversion_number() >= SQLITE_WAL_RESET_FIXED &&
	    (sqlite3_wal_checkpoint_v2(db->ckpt.db, NULL,
				       SQLITE_CHECKPOINT_PASSIVE, &log,
				       &done) != SQLITE_OK ||
	     done >= log))
		return;
	writer_lock(db);
	(void)sqlite3_wal_checkpoint_v2(db->ckpt.db, NULL,
					SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	(void)writer_unlock(db, 0, NULL);
}

static void *ckpt_main(void *arg)
{
	struct db *db = arg;

	pthread_mutex_lock(&db->ckpt_lock);
	for (;;) {
		while (!db->ckpt_wanted && !db->ckpt_stop)
			pthread_cond_wait(&db->ckpt_cond, &db->ckpt_lock);
		if (db->ckpt_stop)
			break;
		db->ckpt_wanted = 0;
		pthread_mutex_unlock(&db->ckpt_lock);
		checkpoint(db);
		pthread_mutex_lock(&db->ckpt_lock);
	}
	pthread_mutex_unlock(&db->ckpt_lock);
	return NULL;
}

uint64_t db_write_seq(struct db *db)
{
	return atomic_load(&db->write_seq);
}

static int conn_open(const char *path, struct db__conn *c, int writer,
		     struct buf *err)
{
	int flags = writer ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE :
			     SQLITE_OPEN_READWRITE;
	char *msg = NULL;
	/*
	 * No connection maps the file: a map of every reader counts the
	 * whole store into the daemon's RSS once a List walk has touched it
	 * (546 MB at 100k jobs), and pread into SQLite's page cache (2 MB
	 * per connection, the default) measured faster for Describe (29k/s
	 * against 24k/s). Memory then does not grow with the store: see
	 * docs/benchmarks.md. Durability: see wal_sync().
	 */
#define CONN_PRAGMAS                                                      \
	"PRAGMA foreign_keys=ON; PRAGMA busy_timeout=10000; "            \
	"PRAGMA mmap_size=0;"
	const char *pragmas =
		writer ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
			 CONN_PRAGMAS :
			 CONN_PRAGMAS;
#undef CONN_PRAGMAS

	memset(c, 0, sizeof(*c));
	flags |= SQLITE_OPEN_NOMUTEX;
	if (sqlite3_open_v2(path, &c->db, flags, NULL) != SQLITE_OK) {
		(void)buf_addf(err, "cannot open database '%s': %s", path,
			       c->db ? sqlite3_errmsg(c->db) : "out of memory");
		sqlite3_close(c->db);
		c->db = NULL;
		return ERR_DB;
	}
	if (sqlite3_exec(c->db, pragmas, NULL, NULL, &msg) != SQLITE_OK) {
		(void)buf_addf(err, "cannot configure database '%s': %s", path,
			       msg);
		sqlite3_free(msg);
		sqlite3_close(c->db);
		c->db = NULL;
		return ERR_DB;
	}
	return 0;
}

static int conn_prepare(struct db__conn *c, struct buf *err)
{
	int i;

	for (i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v3(c->db, db__stmt_sql[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &c->st[i],
				       NULL) != SQLITE_OK) {
			(void)buf_addf(err, "cannot prepare statement %d: %s",
				       i, sqlite3_errmsg(c->db));
			return ERR_DB;
		}
	}
	return 0;
}

static void conn_close(struct db__conn *c)
{
	int i;

	for (i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(c->st[i]);
	sqlite3_close(c->db);
	memset(c, 0, sizeof(*c));
}

int db_open(const char *path, int readers, struct db **out, struct buf *err)
{
	struct db *db = xcalloc(1, sizeof(*db));
	int i;
	int ret;

	*out = NULL;
	if (readers < 1)
		readers = 1;
	pthread_mutex_init(&db->write_lock, NULL);
	pthread_cond_init(&db->batch_cond, NULL);
	pthread_mutex_init(&db->pool_lock, NULL);
	pthread_cond_init(&db->pool_cond, NULL);
	pthread_mutex_init(&db->ckpt_lock, NULL);
	pthread_cond_init(&db->ckpt_cond, NULL);
	pthread_mutex_init(&db->sync_lock, NULL);
	pthread_cond_init(&db->sync_cond, NULL);
	db->wal_fd = -1;
	db->wal_path = xcalloc(strlen(path) + 5, 1);
	memcpy(db->wal_path, path, strlen(path));
	memcpy(db->wal_path + strlen(path), "-wal", 4);
	ret = conn_open(path, &db->writer, 1, err);
	if (ret)
		goto fail;
	ret = db__migrate(db->writer.db, err);
	if (ret)
		goto fail;
	ret = conn_prepare(&db->writer, err);
	if (!ret)
		ret = db__replica_load(db, err);
	if (ret)
		goto fail;
	sqlite3_wal_hook(db->writer.db, wal_hook, db);
	db->readers = xcalloc((size_t)readers, sizeof(*db->readers));
	for (i = 0; i < readers; i++) {
		ret = conn_open(path, &db->readers[i], 0, err);
		/* Only the writer writes: its transactions are the ones
		 * replication records (db/replica.h). */
		if (!ret && sqlite3_exec(db->readers[i].db,
					 "PRAGMA query_only=1", NULL, NULL,
					 NULL) != SQLITE_OK)
			ret = db__error(db->readers[i].db,
					"cannot configure a reader", err);
		if (!ret)
			ret = conn_prepare(&db->readers[i], err);
		if (ret)
			goto fail;
		db->n_readers++;
	}
	ret = conn_open(path, &db->ckpt, 0, err);
	if (ret)
		goto fail;
	/* A connection opens the WAL with its first read; until then it
	 * cannot checkpoint. */
	if (sqlite3_exec(db->ckpt.db, "SELECT count(*) FROM sqlite_master",
			 NULL, NULL, NULL) != SQLITE_OK) {
		ret = db__error(db->ckpt.db, "cannot read the database", err);
		goto fail;
	}
	if (pthread_create(&db->ckpt_thread, NULL, ckpt_main, db)) {
		(void)buf_addf(err, "cannot start the checkpoint thread");
		ret = ERR_INTERNAL;
		goto fail;
	}
	db->ckpt_started = 1;
	*out = db;
	return 0;
fail:
	db_close(db);
	return ret;
}

void db_close(struct db *db)
{
	int i;

	if (!db)
		return;
	if (db->ckpt_started) {
		pthread_mutex_lock(&db->ckpt_lock);
		db->ckpt_stop = 1;
		pthread_cond_signal(&db->ckpt_cond);
		pthread_mutex_unlock(&db->ckpt_lock);
		pthread_join(db->ckpt_thread, NULL);
	}
	if (db->ckpt.db)
		conn_close(&db->ckpt);
	for (i = 0; i < db->n_readers; i++)
		conn_close(&db->readers[i]);
	free(db->readers);
	if (db->writer.db)
		conn_close(&db->writer);
	pthread_mutex_destroy(&db->write_lock);
	pthread_cond_destroy(&db->batch_cond);
	pthread_mutex_destroy(&db->pool_lock);
	pthread_cond_destroy(&db->pool_cond);
	pthread_mutex_destroy(&db->ckpt_lock);
	pthread_cond_destroy(&db->ckpt_cond);
	pthread_mutex_destroy(&db->sync_lock);
	pthread_cond_destroy(&db->sync_cond);
	if (db->wal_fd >= 0)
		close(db->wal_fd);
	free(db->wal_path);
	free(db);
}

struct db__conn *db__reader_get(struct db *db)
{
	struct db__conn *c = NULL;
	int i;

	pthread_mutex_lock(&db->pool_lock);
	for (;;) {
		for (i = 0; i < db->n_readers; i++) {
			if (!db->readers[i].busy) {
				c = &db->readers[i];
				c->busy = 1;
				break;
			}
		}
		if (c)
			break;
		pthread_cond_wait(&db->pool_cond, &db->pool_lock);
	}
	pthread_mutex_unlock(&db->pool_lock);
	return c;
}

void db__reader_put(struct db *db, struct db__conn *c)
{
	pthread_mutex_lock(&db->pool_lock);
	c->busy = 0;
	pthread_cond_signal(&db->pool_cond);
	pthread_mutex_unlock(&db->pool_lock);
}

/* Takes the writer, waiting for an open insert batch to commit first. */
static void writer_lock(struct db *db)
{
	pthread_mutex_lock(&db->write_lock);
	while (db->batch)
		pthread_cond_wait(&db->batch_cond, &db->write_lock);
}

/*
 * Waits until every commit up to write_seq `seq` is on disk, flushing the
 * WAL when no flush that began after that commit is under way.
 */
static int wal_sync(struct db *db, uint64_t seq, struct buf *err)
{
	int ret = 0;

	pthread_mutex_lock(&db->sync_lock);
	while (db->synced_seq < seq && !ret) {
		struct stat fs, ps;
		uint64_t upto;
		int rc;

		if (db->syncing) {
			pthread_cond_wait(&db->sync_cond, &db->sync_lock);
			continue;
		}
		db->syncing = 1;
		upto = atomic_load(&db->write_seq);
		pthread_mutex_unlock(&db->sync_lock);
		/* The WAL is the same file for the connections' lifetime;
		 * the inode check is for safety only. */
		if (db->wal_fd >= 0 &&
		    (fstat(db->wal_fd, &fs) || stat(db->wal_path, &ps) ||
		     fs.st_ino != ps.st_ino || fs.st_dev != ps.st_dev)) {
			close(db->wal_fd);
			db->wal_fd = -1;
		}
		if (db->wal_fd < 0)
			db->wal_fd = open(db->wal_path, O_RDONLY | O_CLOEXEC);
		rc = db->wal_fd < 0 ? -1 : fdatasync(db->wal_fd);
		if (rc)
			(void)buf_addf(err, "cannot flush '%s': %s",
				       db->wal_path, strerror(errno));
		pthread_mutex_lock(&db->sync_lock);
		db->syncing = 0;
		if (rc)
			ret = ERR_DB;
		else if (upto > db->synced_seq)
			db->synced_seq = upto;
		pthread_cond_broadcast(&db->sync_cond);
	}
	pthread_mutex_unlock(&db->sync_lock);
	return ret;
}

/*
 * Releases the write lock; after a commit, returns once it is on disk
 * (0 or ERR_DB with err set).
 */
static int writer_unlock(struct db *db, int committed, struct buf *err)
{
	int durable = committed && !db->lazy_commit;
	uint64_t seq = atomic_load(&db->write_seq);

	db->lazy_commit = 0;
	pthread_mutex_unlock(&db->write_lock);
	return durable ? wal_sync(db, seq, err) : 0;
}

int db_schema_version(struct db *db)
{
	sqlite3_stmt *st = NULL;
	int v = -1;

	writer_lock(db);
	if (sqlite3_prepare_v2(db->writer.db, "PRAGMA user_version", -1, &st,
			       NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	(void)writer_unlock(db, 0, NULL);
	return v;
}

char *db__col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);

	return s ? xstrdup((const char *)s) : NULL;
}

void db__bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

int db__error(sqlite3 *conn, const char *what, struct buf *err)
{
	(void)buf_addf(err, "%s: %s", what, sqlite3_errmsg(conn));
	return ERR_DB;
}

/*
 * Commits the open batch, once replicated when a hook is set; on failure
 * rolls it back and sets b->failed. Returns 1 when a majority of the
 * replicas holds the batch (its commit need not wait for the disk).
 */
static int batch_commit(struct db *db, struct batch *b)
{
	int replicated;
	struct buf why = BUF_INIT;
	sqlite3 *conn = db->writer.db;

	if (db__replica_propose(db, &why)) {
		b->failed = 3;
		snprintf(b->why, sizeof(b->why), "%s", why.data);
	} else if (sqlite3_exec(conn, "COMMIT", NULL, NULL, NULL) !=
		   SQLITE_OK) {
		b->failed = 1;
	}
	if (b->failed)
		sqlite3_exec(conn, "ROLLBACK", NULL, NULL, NULL);
	replicated = db__replica_end(db, !b->failed);
	buf_release(&why);
	return replicated;
}

int db__batch_write(struct db *db,
		    int (*fn)(struct db__conn *c, void *arg, struct buf *err),
		    void *arg, struct buf *err)
{
	struct db__conn *c = &db->writer;
	struct batch own = { 0 };
	struct batch *b;
	uint64_t seq;
	int replicated = 0;
	int leader = 0;
	int ret = 0;

	__atomic_add_fetch(&db->inserts_queued, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&db->write_lock);
	__atomic_sub_fetch(&db->inserts_queued, 1, __ATOMIC_RELAXED);
	/*
	 * Not db__writer_begin()/db__writer_end(): they wait until no batch
	 * is open and commit one write alone, where an insert joins the
	 * open batch and only its leader commits, once the inserts queued
	 * behind it have joined.
	 */
	if (!db->batch) {
		if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
		    SQLITE_OK) {
			ret = db__error(c->db, "cannot begin", err);
			pthread_mutex_unlock(&db->write_lock);
			return ret;
		}
		ret = db__replica_begin(db, err);
		if (ret) {
			sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
			pthread_mutex_unlock(&db->write_lock);
			return ret;
		}
		db->batch = &own;
		leader = 1;
	}
	b = db->batch;
	b->members++;
	/* Each insert is its own savepoint: a duplicate name undoes only
	 * itself, never the batch. */
	sqlite3_exec(c->db, "SAVEPOINT ins", NULL, NULL, NULL);
	ret = fn(c, arg, err);
	if (ret)
		goto undo;
	sqlite3_exec(c->db, "RELEASE ins", NULL, NULL, NULL);
	goto commit;
undo:
	sqlite3_exec(c->db, "ROLLBACK TO ins", NULL, NULL, NULL);
	sqlite3_exec(c->db, "RELEASE ins", NULL, NULL, NULL);
commit:
	if (leader) {
		/* Let the inserts queued behind us join the batch. */
		while (__atomic_load_n(&db->inserts_queued, __ATOMIC_RELAXED)) {
			pthread_mutex_unlock(&db->write_lock);
			sched_yield();
			pthread_mutex_lock(&db->write_lock);
		}
		replicated = batch_commit(db, b);
		seq = atomic_load(&db->write_seq);
		/* The next batch is written while this one is flushed. */
		db->batch = NULL;
		pthread_cond_broadcast(&db->batch_cond);
		pthread_mutex_unlock(&db->write_lock);
		if (!b->failed && !replicated && wal_sync(db, seq, err))
			b->failed = 2;
		pthread_mutex_lock(&db->write_lock);
		b->done = 1;
		pthread_cond_broadcast(&db->batch_cond);
		/* `own` lives on this stack: wait until every member has
		 * read the result. */
		while (b->members > 1)
			pthread_cond_wait(&db->batch_cond, &db->write_lock);
	} else {
		while (!b->done)
			pthread_cond_wait(&db->batch_cond, &db->write_lock);
		if (--b->members == 1)
			pthread_cond_broadcast(&db->batch_cond);
	}
	if (!ret && b->failed == 3)
		(void)buf_addf(err, "%s", b->why);
	if (!ret && b->failed == 1)
		ret = db__error(c->db, "cannot commit", err);
	else if (!ret && b->failed)
		ret = ERR_DB;
	if (b->failed == 2 && !leader && !err->len)
		(void)buf_addf(err, "cannot flush the database log");
	pthread_mutex_unlock(&db->write_lock);
	return ret;
}

sqlite3 *db__reader_acquire(struct db *db, void **handle)
{
	struct db__conn *c = db__reader_get(db);

	*handle = c;
	return c->db;
}

void db__reader_release(struct db *db, void *handle)
{
	db__reader_put(db, handle);
}

/* Begins the writer's transaction; the write lock is held. */
static sqlite3 *begin_locked(struct db *db, struct buf *err)
{
	if (sqlite3_exec(db->writer.db, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
	    SQLITE_OK) {
		db__error(db->writer.db, "cannot begin", err);
		db__replica_end(db, 0);
		(void)writer_unlock(db, 0, NULL);
		return NULL;
	}
	if (db__replica_begin(db, err)) {
		sqlite3_exec(db->writer.db, "ROLLBACK", NULL, NULL, NULL);
		db__replica_end(db, 0);
		(void)writer_unlock(db, 0, NULL);
		return NULL;
	}
	return db->writer.db;
}

sqlite3 *db__writer_begin(struct db *db, struct buf *err)
{
	writer_lock(db);
	return begin_locked(db, err);
}

sqlite3 *db__writer_begin_derived(struct db *db, struct buf *err)
{
	writer_lock(db);
	db->lazy_commit = 1;
	return begin_locked(db, err);
}

sqlite3 *db__writer_begin_apply(struct db *db, struct buf *err)
{
	writer_lock(db);
	/* Not flushed before the next write: raft's log holds the entry,
	 * and one lost in a crash is applied again (db_replica_apply()). */
	db->lazy_commit = 1;
	db->rep.applying = 1;
	sqlite3_exec(db->writer.db, "PRAGMA foreign_keys=OFF", NULL, NULL,
		     NULL);
	return begin_locked(db, err);
}

sqlite3 *db__writer_hold(struct db *db)
{
	writer_lock(db);
	return db->writer.db;
}

void db__writer_unhold(struct db *db)
{
	(void)writer_unlock(db, 1, NULL);
}

void db__writer_unhold_clean(struct db *db)
{
	(void)writer_unlock(db, 0, NULL);
}

struct db__replica *db__replica(struct db *db)
{
	return &db->rep;
}

int db__writer_end(struct db *db, int ok, struct buf *err)
{
	int ret = 0;

	if (ok && db__replica_propose(db, err)) {
		ret = ERR_DB;
		ok = 0;
	}
	if (ok && sqlite3_exec(db->writer.db, "COMMIT", NULL, NULL, NULL) !=
			  SQLITE_OK) {
		ret = db__error(db->writer.db, "cannot commit", err);
		ok = 0;
	}
	if (!ok)
		sqlite3_exec(db->writer.db, "ROLLBACK", NULL, NULL, NULL);
	/* Replicated: a majority holds it on disk already. */
	if (db__replica_end(db, ok))
		db->lazy_commit = 1;
	if (writer_unlock(db, ok, err) && !ret)
		ret = ERR_DB;
	return ret;
}

struct db__conn *db__writer_conn(struct db *db)
{
	return &db->writer;
}
