#ifndef HA_INTERNAL_H
#define HA_INTERNAL_H

/*
 * What ha/engine.c takes from ha/members.c: raft's words made ours.
 * Internal to ha/ (the callers include raft.h).
 */
#include "ha/ha.h"
#include "common/buf.h"

/* A member's role from raft's (RAFT_VOTER, ...) and whether it leads. */
enum ha_role ha__role(int raft_role, int is_leader);

/*
 * raft's code rv of a refused or failed change of member id as one of
 * common/err.h, err saying what happened: ERR_CONFLICT, ERR_NOTFOUND or
 * ERR_IO (ha/ha.h, ha_member_add()).
 */
int ha__change_error(int rv, unsigned id, struct buf *err);

#endif
