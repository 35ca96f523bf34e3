#ifndef DB_SECRETS_H
#define DB_SECRETS_H

/*
 * The controller's secrets (an agent's token, the rendezvous key) kept in
 * the store rather than in files beside it, so that every member of a
 * replicated controller holds the same ones (docs/ha.md): agents and
 * ranks keep working with the tokens they have when another member
 * takes over. The store's file is the controller's own (mode 0600), as
 * the files were.
 */
#include "db/db.h"
#include "common/buf.h"

/*
 * The secret stored under name into *out (owned), storing value first
 * when there is none: the first value ever stored stays, however many
 * callers race. Returns 0 or ERR_DB.
 */
int db_secret_get_or_put(struct db *db, const char *name, const char *value,
			 char **out, struct buf *err);

/* The secret stored under name into *out: 0, ERR_NOTFOUND or ERR_DB. */
int db_secret_get(struct db *db, const char *name, char **out, struct buf *err);

#endif
