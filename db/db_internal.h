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

#endif
