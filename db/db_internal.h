#ifndef DB_DB_INTERNAL_H
#define DB_DB_INTERNAL_H

#include <stdio.h>

#include <sqlite3.h>

#include "common/buf.h"

/* Applies pending migrations on conn. Returns 0 or ERR_DB. */
int db__migrate(sqlite3 *conn, struct buf *err);

/* The number of migrations this build knows. */
int db__schema_latest(void);

struct db;

/*
 * Borrows a pooled reader connection for a query that db.c does not prepare
 * (list.c). Give it back with db__reader_release(db, *handle).
 */
sqlite3 *db__reader_acquire(struct db *db, void **handle);
void db__reader_release(struct db *db, void *handle);

#endif
