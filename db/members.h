#ifndef DB_MEMBERS_H
#define DB_MEMBERS_H

/*
 * The members of a replicated controller (docs/ha.md) as the store keeps
 * them: each member's id, raft address and API URL. The table is
 * replicated like every other, so that a follower finds the API of a
 * member that --peers did not name (one added later). The leader changes
 * it together with raft's configuration (controller/members_api.c).
 */
#include <stddef.h>

#include "db/db.h"
#include "common/buf.h"

struct db_member {
	unsigned id;
	char *raft_address;
	char *api_url;
};

/* Every member, by id, into *out (NULL and 0 when none). 0 or ERR_DB. */
int db_members_list(struct db *db, struct db_member **out, size_t *n,
		    struct buf *err);

/* Stores (or replaces) the member m->id. 0 or ERR_DB. */
int db_member_put(struct db *db, const struct db_member *m, struct buf *err);

/* Forgets member id (nothing when there is none). 0 or ERR_DB. */
int db_member_delete(struct db *db, unsigned id, struct buf *err);

void db_members_free(struct db_member *m, size_t n);

#endif
