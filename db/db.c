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

/* Statements prepared once per connection. */
enum stmt_id {
	ST_GET_JOB,
	ST_GET_TRANSITIONS,
	ST_GET_METRICS,
	ST_INSERT_JOB,
	ST_INSERT_TRANSITION,
	ST_LAST_TRANSITION,
	ST_CLOSE_TRANSITION,
	ST_UPDATE_MESSAGE,
	ST_BEGIN,
	ST_COMMIT,
	ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_GET_JOB] =
		"SELECT id, name, arn, status, secondary_status, "
		"failure_reason, model_artifacts, request_json, "
		"instance_type, instance_count, creation_ms, "
		"last_modified_ms, start_ms, end_ms, training_s, "
		"billable_s, spec_json, attempt, stop_reason, uid, owner, "
		"run_as FROM jobs WHERE name = ?1",
	[ST_GET_TRANSITIONS] =
		"SELECT status, start_ms, end_ms, message "
		"FROM transitions WHERE job_id = ?1 ORDER BY seq",
	[ST_GET_METRICS] =
		"SELECT name, value, timestamp_ms FROM final_metrics "
		"WHERE job_id = ?1 ORDER BY name",
	[ST_INSERT_JOB] =
		"INSERT INTO jobs (name, arn, status, "
		"secondary_status, request_json, instance_type, "
		"instance_count, creation_ms, last_modified_ms, "
		"spec_json, waiting, uid, owner, run_as) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, "
		"lower(hex(randomblob(8))), coalesce(?11, ''), ?12)",
	[ST_INSERT_TRANSITION] =
		"INSERT INTO transitions (job_id, seq, status, "
		"start_ms, message) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_LAST_TRANSITION] = "SELECT seq, status FROM transitions WHERE "
			       "job_id = ?1 ORDER BY seq DESC LIMIT 1",
	[ST_CLOSE_TRANSITION] = "UPDATE transitions SET end_ms = ?3 WHERE "
				"job_id = ?1 AND seq = ?2",
	[ST_UPDATE_MESSAGE] = "UPDATE transitions SET message = ?3 WHERE "
			      "job_id = ?1 AND seq = ?2",
	[ST_BEGIN] = "BEGIN",
	[ST_COMMIT] = "COMMIT",
};

struct conn {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	int busy;
};

/* One group commit of inserts (on its leader's stack). */
struct batch {
	int members; /* inserts in it, the leader included */
	int done;    /* committed and on disk, or failed */
	int failed;
};

struct db {
	struct conn writer;
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
	struct conn *readers;
	int n_readers;
	pthread_mutex_t pool_lock;
	pthread_cond_t pool_cond;
	_Atomic uint64_t write_seq; /* commits so far (db_write_seq) */
	/*
	 * Checkpoints run on their own connection and thread, so that
	 * copying the WAL into the database (and its fsync) never holds up
	 * a commit.
	 */
	struct conn ckpt;
	pthread_t ckpt_thread;
	int ckpt_started;
	pthread_mutex_t ckpt_lock;
	pthread_cond_t ckpt_cond;
	int ckpt_wanted;
	int ckpt_stop;
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

static int conn_open(const char *path, struct conn *c, int writer,
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

static int conn_prepare(struct conn *c, struct buf *err)
{
	int i;

	for (i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v3(c->db, stmt_sql[i], -1,
				       SQLITE_PREPARE_PERSISTENT, &c->st[i],
				       NULL) != SQLITE_OK) {
			(void)buf_addf(err, "cannot prepare statement %d: %s",
				       i, sqlite3_errmsg(c->db));
			return ERR_DB;
		}
	}
	return 0;
}

static void conn_close(struct conn *c)
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
	if (ret)
		goto fail;
	sqlite3_wal_hook(db->writer.db, wal_hook, db);
	db->readers = xcalloc((size_t)readers, sizeof(*db->readers));
	for (i = 0; i < readers; i++) {
		ret = conn_open(path, &db->readers[i], 0, err);
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

static struct conn *reader_get(struct db *db)
{
	struct conn *c = NULL;
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

static void reader_put(struct db *db, struct conn *c)
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

void db_job_release(struct db_job *job)
{
	size_t i;

	free(job->name);
	free(job->uid);
	free(job->owner);
	free(job->run_as);
	free(job->arn);
	free(job->status);
	free(job->secondary_status);
	free(job->failure_reason);
	free(job->model_artifacts);
	free(job->request_json);
	free(job->spec_json);
	free(job->stop_reason);
	free(job->instance_type);
	for (i = 0; i < job->n_transitions; i++) {
		free(job->transitions[i].status);
		free(job->transitions[i].message);
	}
	free(job->transitions);
	for (i = 0; i < job->n_metrics; i++)
		free(job->metrics[i].name);
	free(job->metrics);
	memset(job, 0, sizeof(*job));
}

int db__error(sqlite3 *conn, const char *what, struct buf *err)
{
	(void)buf_addf(err, "%s: %s", what, sqlite3_errmsg(conn));
	return ERR_DB;
}

int db_job_insert(struct db *db, struct db_job *job, const char *first_message,
		  struct buf *err)
{
	struct conn *c = &db->writer;
	struct batch own = { 0 };
	struct batch *b;
	sqlite3_stmt *st;
	uint64_t seq;
	int leader = 0;
	int ret = 0;
	int rc;

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
		db->batch = &own;
		leader = 1;
	}
	b = db->batch;
	b->members++;
	/* Each insert is its own savepoint: a duplicate name undoes only
	 * itself, never the batch. */
	sqlite3_exec(c->db, "SAVEPOINT ins", NULL, NULL, NULL);
	st = c->st[ST_INSERT_JOB];
	db__bind_text(st, 1, job->name);
	db__bind_text(st, 2, job->arn);
	db__bind_text(st, 3, job->status);
	db__bind_text(st, 4, job->secondary_status);
	db__bind_text(st, 5, job->request_json);
	db__bind_text(st, 6, job->instance_type);
	sqlite3_bind_int(st, 7, job->instance_count);
	sqlite3_bind_int64(st, 8, job->creation_ms);
	db__bind_text(st, 9, job->spec_json);
	sqlite3_bind_int(st, 10, job->waiting != 0);
	db__bind_text(st, 11, job->owner);
	db__bind_text(st, 12, job->run_as);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_CONSTRAINT) {
		ret = ERR_CONFLICT;
		goto undo;
	}
	if (rc != SQLITE_DONE) {
		ret = db__error(c->db, "cannot insert job", err);
		goto undo;
	}
	job->id = sqlite3_last_insert_rowid(c->db);
	job->last_modified_ms = job->creation_ms;
	st = c->st[ST_INSERT_TRANSITION];
	sqlite3_bind_int64(st, 1, job->id);
	sqlite3_bind_int(st, 2, 1);
	db__bind_text(st, 3, job->secondary_status);
	sqlite3_bind_int64(st, 4, job->creation_ms);
	db__bind_text(st, 5, first_message);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		ret = db__error(c->db, "cannot insert transition", err);
		goto undo;
	}
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
		if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) !=
		    SQLITE_OK) {
			b->failed = 1;
			sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		}
		seq = atomic_load(&db->write_seq);
		/* The next batch is written while this one is flushed. */
		db->batch = NULL;
		pthread_cond_broadcast(&db->batch_cond);
		pthread_mutex_unlock(&db->write_lock);
		if (!b->failed && wal_sync(db, seq, err))
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
	if (!ret && b->failed == 1)
		ret = db__error(c->db, "cannot commit", err);
	else if (!ret && b->failed)
		ret = ERR_DB;
	if (b->failed == 2 && !leader && !err->len)
		(void)buf_addf(err, "cannot flush the database log");
	pthread_mutex_unlock(&db->write_lock);
	return ret;
}

static void row_to_job(sqlite3_stmt *st, struct db_job *j)
{
	j->id = sqlite3_column_int64(st, 0);
	j->name = db__col_dup(st, 1);
	j->arn = db__col_dup(st, 2);
	j->status = db__col_dup(st, 3);
	j->secondary_status = db__col_dup(st, 4);
	j->failure_reason = db__col_dup(st, 5);
	j->model_artifacts = db__col_dup(st, 6);
	j->request_json = db__col_dup(st, 7);
	j->instance_type = db__col_dup(st, 8);
	j->instance_count = sqlite3_column_int(st, 9);
	j->creation_ms = sqlite3_column_int64(st, 10);
	j->last_modified_ms = sqlite3_column_int64(st, 11);
	j->start_ms = sqlite3_column_int64(st, 12);
	j->end_ms = sqlite3_column_int64(st, 13);
	j->training_s = sqlite3_column_int64(st, 14);
	j->billable_s = sqlite3_column_int64(st, 15);
	j->spec_json = db__col_dup(st, 16);
	j->attempt = sqlite3_column_int(st, 17);
	j->stop_reason = db__col_dup(st, 18);
	j->uid = db__col_dup(st, 19);
	j->owner = db__col_dup(st, 20);
	j->run_as = db__col_dup(st, 21);
}

static int load_children(struct conn *c, struct db_job *j, struct buf *err)
{
	sqlite3_stmt *st = c->st[ST_GET_TRANSITIONS];
	size_t cap = 0;
	int rc;

	sqlite3_bind_int64(st, 1, j->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_transition *t;

		ALLOC_GROW(j->transitions, j->n_transitions + 1, cap);
		t = &j->transitions[j->n_transitions++];
		t->status = db__col_dup(st, 0);
		t->start_ms = sqlite3_column_int64(st, 1);
		t->end_ms = sqlite3_column_int64(st, 2);
		t->message = db__col_dup(st, 3);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return db__error(c->db, "cannot read transitions", err);
	st = c->st[ST_GET_METRICS];
	cap = 0;
	sqlite3_bind_int64(st, 1, j->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_metric *m;

		ALLOC_GROW(j->metrics, j->n_metrics + 1, cap);
		m = &j->metrics[j->n_metrics++];
		m->name = db__col_dup(st, 0);
		m->value = sqlite3_column_double(st, 1);
		m->timestamp_ms = sqlite3_column_int64(st, 2);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return db__error(c->db, "cannot read metrics", err);
	return 0;
}

int db_job_get(struct db *db, const char *name, struct db_job *out,
	       struct buf *err)
{
	struct conn *c = reader_get(db);
	sqlite3_stmt *st = c->st[ST_GET_JOB];
	int ret = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	/*
	 * The job and its children in one read transaction: one consistent
	 * snapshot, and one round of WAL read locks instead of three.
	 */
	(void)sqlite3_step(c->st[ST_BEGIN]);
	sqlite3_reset(c->st[ST_BEGIN]);
	db__bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		row_to_job(st, out);
	else if (rc == SQLITE_DONE)
		ret = ERR_NOTFOUND;
	else
		ret = db__error(c->db, "cannot read job", err);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (!ret)
		ret = load_children(c, out, err);
	if (sqlite3_get_autocommit(c->db) == 0) {
		(void)sqlite3_step(c->st[ST_COMMIT]);
		sqlite3_reset(c->st[ST_COMMIT]);
	}
	reader_put(db, c);
	if (ret)
		db_job_release(out);
	return ret;
}

/* Loads id and current status inside the writer's transaction. */
static int writer_find(struct conn *c, const char *name, int64_t *id,
		       char **status, char **secondary, struct buf *err)
{
	sqlite3_stmt *st = c->st[ST_GET_JOB];
	int rc;
	int ret = 0;

	db__bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		*status = db__col_dup(st, 3);
		if (secondary)
			*secondary = db__col_dup(st, 4);
	} else if (rc == SQLITE_DONE) {
		ret = ERR_NOTFOUND;
	} else {
		ret = db__error(c->db, "cannot read job", err);
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return ret;
}

static int exec_update(struct conn *c, int64_t id,
		       const struct db_state_change *ch, struct buf *err)
{
	static const char *const sql =
		"UPDATE jobs SET status = ?2, secondary_status = ?3, "
		"last_modified_ms = ?4, "
		"failure_reason = coalesce(?5, failure_reason), "
		"model_artifacts = coalesce(?6, model_artifacts), "
		"start_ms = CASE WHEN ?7 AND start_ms = 0 THEN ?4 ELSE start_ms END, "
		"end_ms = CASE WHEN ?8 THEN ?4 ELSE end_ms END, "
		"training_s = CASE WHEN ?8 AND start_ms > 0 THEN "
		" max(1, (?4 - start_ms + 999) / 1000) ELSE training_s END, "
		"billable_s = CASE WHEN ?8 AND start_ms > 0 THEN "
		" max(1, (?4 - start_ms + 999) / 1000) ELSE billable_s END "
		"WHERE id = ?1";
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
			       NULL) != SQLITE_OK)
		return db__error(c->db, "cannot prepare update", err);
	sqlite3_bind_int64(st, 1, id);
	db__bind_text(st, 2, ch->status);
	db__bind_text(st, 3, ch->secondary);
	sqlite3_bind_int64(st, 4, ch->now_ms);
	db__bind_text(st, 5, ch->failure_reason);
	db__bind_text(st, 6, ch->model_artifacts);
	sqlite3_bind_int(st, 7, ch->set_start);
	sqlite3_bind_int(st, 8, ch->set_end);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return db__error(c->db, "cannot update job", err);
	return 0;
}

static int step_done(struct conn *c, sqlite3_stmt *st, const char *what,
		     struct buf *err)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : db__error(c->db, what, err);
}

static int write_transition(struct conn *c, int64_t id,
			    const struct db_state_change *ch, struct buf *err)
{
	sqlite3_stmt *st = c->st[ST_LAST_TRANSITION];
	int64_t seq = 0;
	char *last = NULL;
	int ret;

	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		seq = sqlite3_column_int64(st, 0);
		last = db__col_dup(st, 1);
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (last && !strcmp(last, ch->secondary)) {
		free(last);
		if (!ch->message)
			return 0;
		st = c->st[ST_UPDATE_MESSAGE];
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, seq);
		db__bind_text(st, 3, ch->message);
		return step_done(c, st, "cannot update transition", err);
	}
	free(last);
	if (seq) {
		st = c->st[ST_CLOSE_TRANSITION];
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, seq);
		sqlite3_bind_int64(st, 3, ch->now_ms);
		ret = step_done(c, st, "cannot close transition", err);
		if (ret)
			return ret;
	}
	st = c->st[ST_INSERT_TRANSITION];
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, seq + 1);
	db__bind_text(st, 3, ch->secondary);
	sqlite3_bind_int64(st, 4, ch->now_ms);
	db__bind_text(st, 5, ch->message);
	return step_done(c, st, "cannot insert transition", err);
}

int db_job_change_state(struct db *db, const char *name,
			const struct db_state_change *ch, struct buf *err)
{
	struct conn *c = &db->writer;
	char *status = NULL;
	char *secondary = NULL;
	int64_t id = 0;
	int ret;

	if (!db__writer_begin(db, err))
		return ERR_DB;
	ret = writer_find(c, name, &id, &status, &secondary, err);
	if (ret)
		goto out;
	if ((ch->expect_status && strcmp(status, ch->expect_status)) ||
	    (ch->expect_secondary && strcmp(secondary, ch->expect_secondary))) {
		(void)buf_addf(err, "job is in status %s/%s", status,
			       secondary);
		ret = ERR_CONFLICT;
		goto out;
	}
	ret = exec_update(c, id, ch, err);
	if (!ret)
		ret = write_transition(c, id, ch, err);
out:
	free(status);
	free(secondary);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

int db_job_delete(struct db *db, const char *name,
		  int (*deletable)(const char *status), struct buf *err)
{
	struct conn *c = &db->writer;
	sqlite3_stmt *st = NULL;
	char *status = NULL;
	int64_t id = 0;
	int ret;

	if (!db__writer_begin(db, err))
		return ERR_DB;
	ret = writer_find(c, name, &id, &status, NULL, err);
	if (ret)
		goto out;
	if (!deletable(status)) {
		(void)buf_addf(err, "job is in status %s", status);
		ret = ERR_CONFLICT;
		goto out;
	}
	if (sqlite3_prepare_v2(c->db, "DELETE FROM jobs WHERE id = ?1", -1, &st,
			       NULL) != SQLITE_OK) {
		ret = db__error(c->db, "cannot prepare delete", err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		ret = db__error(c->db, "cannot delete job", err);
out:
	/* Before db__writer_end(): the statement is the writer's, and
	 * the write lock ends there. */
	sqlite3_finalize(st);
	free(status);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}

int db_jobs_with_status(struct db *db, const char *status,
			void (*fn)(const char *name, void *arg), void *arg,
			struct buf *err)
{
	struct conn *c = reader_get(db);
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	if (sqlite3_prepare_v2(c->db,
			       "SELECT name FROM jobs WHERE status = ?1 "
			       "ORDER BY creation_ms, id",
			       -1, &st, NULL) != SQLITE_OK) {
		ret = db__error(c->db, "cannot prepare scan", err);
		goto out;
	}
	db__bind_text(st, 1, status);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		fn((const char *)sqlite3_column_text(st, 0), arg);
	if (rc != SQLITE_DONE)
		ret = db__error(c->db, "cannot scan jobs", err);
out:
	sqlite3_finalize(st);
	reader_put(db, c);
	return ret;
}

int64_t db_job_count(struct db *db, const char *status)
{
	struct conn *c = reader_get(db);
	sqlite3_stmt *st = NULL;
	int64_t n = -1;

	if (sqlite3_prepare_v2(c->db,
			       status ? "SELECT count(*) FROM jobs WHERE "
					"status = ?1" :
					"SELECT count(*) FROM jobs",
			       -1, &st, NULL) == SQLITE_OK) {
		if (status)
			db__bind_text(st, 1, status);
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	reader_put(db, c);
	return n;
}

sqlite3 *db__reader_acquire(struct db *db, void **handle)
{
	struct conn *c = reader_get(db);

	*handle = c;
	return c->db;
}

void db__reader_release(struct db *db, void *handle)
{
	reader_put(db, handle);
}

/* Begins the writer's transaction; the write lock is held. */
static sqlite3 *begin_locked(struct db *db, struct buf *err)
{
	if (sqlite3_exec(db->writer.db, "BEGIN IMMEDIATE", NULL, NULL, NULL) !=
	    SQLITE_OK) {
		db__error(db->writer.db, "cannot begin", err);
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

/*
 * A write of facts the controller derives again after a restart (which
 * queued jobs wait, and for what): committed without waiting for the disk;
 * the next ordinary commit makes it durable too.
 */
static sqlite3 *writer_begin_derived(struct db *db, struct buf *err)
{
	writer_lock(db);
	db->lazy_commit = 1;
	return begin_locked(db, err);
}

int db__writer_end(struct db *db, int ok, struct buf *err)
{
	int ret = 0;

	if (ok && sqlite3_exec(db->writer.db, "COMMIT", NULL, NULL, NULL) !=
			  SQLITE_OK) {
		ret = db__error(db->writer.db, "cannot commit", err);
		ok = 0;
	}
	if (!ok)
		sqlite3_exec(db->writer.db, "ROLLBACK", NULL, NULL, NULL);
	if (writer_unlock(db, ok, err) && !ret)
		ret = ERR_DB;
	return ret;
}

static void active_job_release(struct db_active_job *a)
{
	free(a->name);
	free(a->status);
	free(a->secondary_status);
	free(a->stop_reason);
	free(a->instance_type);
	free(a->message);
}

void db_active_jobs_free(struct db_active_job *a, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		active_job_release(&a[i]);
	free(a);
}

/* Binds ?1 (limit) and, when given, ?2 (an instance type). */
static int read_active(struct conn *c, const char *sql, sqlite3_int64 limit,
		       const char *type, struct db_active_job **out, size_t *n,
		       size_t *cap, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int ret = 0;
	int rc;

	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db__error(c->db, "cannot prepare active jobs", err);
	sqlite3_bind_int64(st, 1, limit);
	if (type)
		db__bind_text(st, 2, type);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_active_job *a;

		ALLOC_GROW(*out, *n + 1, *cap);
		a = &(*out)[(*n)++];
		a->name = db__col_dup(st, 0);
		a->status = db__col_dup(st, 1);
		a->secondary_status = db__col_dup(st, 2);
		a->stop_reason = db__col_dup(st, 3);
		a->instance_type = db__col_dup(st, 4);
		a->message = db__col_dup(st, 5);
		a->attempt = sqlite3_column_int(st, 6);
		a->instance_count = sqlite3_column_int(st, 7);
		a->start_ms = sqlite3_column_int64(st, 8);
		a->creation_ms = sqlite3_column_int64(st, 9);
		a->id = sqlite3_column_int64(st, 10);
	}
	if (rc != SQLITE_DONE)
		ret = db__error(c->db, "cannot read active jobs", err);
	sqlite3_finalize(st);
	return ret;
}

#define ACTIVE_COLUMNS                                                        \
	"SELECT name, status, secondary_status, stop_reason, instance_type, " \
	"(SELECT message FROM transitions t WHERE t.job_id = jobs.id ORDER "  \
	"BY seq DESC LIMIT 1), attempt, instance_count, start_ms, "           \
	"creation_ms, id FROM jobs "
#define QUEUED "status = 'InProgress' AND attempt = 0 AND waiting = 1 "

static int by_creation(const void *pa, const void *pb)
{
	const struct db_active_job *a = pa;
	const struct db_active_job *b = pb;

	if (a->creation_ms != b->creation_ms)
		return a->creation_ms < b->creation_ms ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* Sorts v[0..*n) by creation and drops repeated jobs. */
static void sort_unique(struct db_active_job *v, size_t *n)
{
	size_t i, k = 0;

	if (*n < 2)
		return;
	qsort(v, *n, sizeof(*v), by_creation);
	for (i = 0; i < *n; i++) {
		if (k && v[k - 1].id == v[i].id) {
			active_job_release(&v[i]);
			continue;
		}
		v[k++] = v[i];
	}
	*n = k;
}

static int read_queued(struct conn *c, const struct db_queue_look *look,
		       struct db_active_job **out, size_t *n, size_t *cap,
		       struct buf *err)
{
	sqlite3_int64 per = (sqlite3_int64)look->per;
	size_t first = *n;
	size_t i;
	int ret = 0;

	if (!per || (!look->any_type && !look->n_types))
		return 0;
	if (look->any_type)
		ret = read_active(c,
				  ACTIVE_COLUMNS "WHERE " QUEUED
						 "ORDER BY creation_ms, id "
						 "LIMIT ?1",
				  per, NULL, out, n, cap, err);
	for (i = 0; i < look->n_types && !ret; i++)
		ret = read_active(c,
				  ACTIVE_COLUMNS
				  "INDEXED BY jobs_queue WHERE instance_type "
				  "= ?2 AND " QUEUED "ORDER BY creation_ms, id "
				  "LIMIT ?1",
				  per, look->types[i], out, n, cap, err);
	if (!ret)
		ret = read_active(c,
				  ACTIVE_COLUMNS
				  "INDEXED BY jobs_queue WHERE instance_type "
				  "IS NULL AND " QUEUED
				  "ORDER BY creation_ms, id LIMIT ?1",
				  per, NULL, out, n, cap, err);
	if (!ret) {
		size_t m = *n - first;

		sort_unique(*out + first, &m);
		*n = first + m;
	}
	return ret;
}

int db_jobs_active(struct db *db, const struct db_queue_look *look,
		   struct db_active_job **out, size_t *n, struct buf *err)
{
	struct conn *c = reader_get(db);
	size_t cap = 0;
	int ret;

	*out = NULL;
	*n = 0;
	/* The first query reads the partial index jobs_attention only:
	 * without INDEXED BY the planner takes jobs_by_status and reads
	 * every queued job on every pass. */
	ret = read_active(c,
			  ACTIVE_COLUMNS
			  "INDEXED BY jobs_attention WHERE status IN "
			  "('InProgress', 'Stopping') AND NOT (status = "
			  "'InProgress' AND attempt = 0 AND waiting = 1) "
			  "ORDER BY creation_ms, id",
			  0, NULL, out, n, &cap, err);
	if (!ret && look)
		ret = read_queued(c, look, out, n, &cap, err);
	if (ret) {
		db_active_jobs_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	reader_put(db, c);
	return ret;
}

int db_jobs_set_waiting(struct db *db, const char *const *names,
			const char *const *messages, size_t n, struct buf *err)
{
	sqlite3 *conn;
	sqlite3_stmt *job = NULL;
	sqlite3_stmt *msg = NULL;
	size_t i;
	int ret = 0;

	if (!n)
		return 0;
	conn = writer_begin_derived(db, err);
	if (!conn)
		return ERR_DB;
	if (sqlite3_prepare_v2(conn,
			       "UPDATE jobs SET waiting = 1 WHERE name = ?1 "
			       "AND attempt = 0",
			       -1, &job, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(conn,
			       "UPDATE transitions SET message = ?2 WHERE "
			       "job_id = (SELECT id FROM jobs WHERE name = ?1) "
			       "AND seq = (SELECT max(seq) FROM transitions t "
			       "WHERE t.job_id = transitions.job_id)",
			       -1, &msg, NULL) != SQLITE_OK) {
		ret = db__error(conn, "cannot prepare waiting", err);
		goto out;
	}
	for (i = 0; i < n && !ret; i++) {
		db__bind_text(job, 1, names[i]);
		db__bind_text(msg, 1, names[i]);
		db__bind_text(msg, 2, messages[i]);
		if (sqlite3_step(job) != SQLITE_DONE ||
		    sqlite3_step(msg) != SQLITE_DONE)
			ret = db__error(conn, "cannot mark waiting", err);
		sqlite3_reset(job);
		sqlite3_reset(msg);
	}
out:
	sqlite3_finalize(job);
	sqlite3_finalize(msg);
	if (db__writer_end(db, ret == 0, err))
		ret = ERR_DB;
	return ret;
}
