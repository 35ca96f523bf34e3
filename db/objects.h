#ifndef DB_OBJECTS_H
#define DB_OBJECTS_H

/*
 * The embedded S3 store's objects as a replicated controller records them
 * (docs/ha.md): one row per bucket (key "") and per object, with its size
 * and ETag, or a tombstone once removed, and a sequence number that grows
 * with every change. The table is replicated like every other, so each
 * member knows which objects it must hold (controller/replicate.h).
 */
#include <stddef.h>
#include <stdint.h>

#include "db/db.h"
#include "common/buf.h"

struct db_object {
	char *bucket;
	char *key; /* "" for the bucket itself */
	int64_t size;
	char *etag;  /* "" for a bucket or a tombstone */
	int deleted; /* removed (a tombstone) */
	int64_t seq;
};

/*
 * Records n changes in one write, each with the next sequence number
 * (their seq members are ignored). Returns 0 or ERR_DB.
 */
int db_objects_record(struct db *db, const struct db_object *c, size_t n,
		      struct buf *err);

/*
 * The rows changed after seq, in the order of their changes, at most max
 * of them into *out (malloc'd; db_objects_free()). Returns 0 or ERR_DB.
 */
int db_objects_since(struct db *db, int64_t seq, size_t max,
		     struct db_object **out, size_t *n, struct buf *err);

/* The last sequence number recorded (0: none), -1 on an error. */
int64_t db_objects_last_seq(struct db *db);

void db_objects_free(struct db_object *o, size_t n);

/* A job's log stream, as the log files are named (controller/obs/logs.h). */
struct db_log_ref {
	char *job;
	char *stream;
};

/* Every log stream of every job: 0 or ERR_DB. */
int db_log_refs(struct db *db, struct db_log_ref **out, size_t *n,
		struct buf *err);
void db_log_refs_free(struct db_log_ref *r, size_t n);

#endif
