#ifndef HA_INTERNAL_H
#define HA_INTERNAL_H

/*
 * What ha/engine.c takes from ha/members.c (raft's words made ours) and
 * ha/lease.c (the read lease). Internal to ha/.
 */
#include <stdint.h>

#include <raft.h>

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

/*
 * The leader's read lease (ha/lease.c): barriers through raft every
 * quarter of an election timeout; reads are served while one that a
 * majority holds was proposed within 7/8 of an election timeout.
 */
struct ha_lease {
	struct raft_barrier req;
	unsigned election_ms;
	int busy;      /* a barrier in flight */
	int64_t start; /* monotonic ms: when the newest barrier was proposed */
	int64_t until; /* monotonic ms: reads served until then; atomic */
};

/* This member leads from a barrier proposed at from (monotonic ms). */
void ha__lease_lead(struct ha_lease *l, unsigned election_ms, int64_t from);

/* On raft's tick while leading: a new barrier when one is due. */
void ha__lease_renew(struct ha_lease *l, struct raft *raft, int64_t now);

/* Whether reads may be served at now; any thread. */
int ha__lease_valid(struct ha_lease *l, int64_t now);

#endif
