/*
 * The leader's read lease (ha/internal.h; docs/ha.md, "Reads"). A barrier
 * that a majority holds tells that, when it was proposed, those members
 * still followed this one; none of them votes for another until its own
 * election timeout (at least --ha-election-ms) has run out since, as
 * libraft's followers refuse votes while they know a leader. So no other
 * member can lead before the barrier's start plus an election timeout,
 * and reads are served until 7/8 of that. Runs on raft's thread but for
 * ha__lease_valid().
 */
#include <raft.h>

#include "ha/internal.h"
#include "common/banned.h"

/* Reads are served until from + 7/8 of an election timeout. */
static void lease_extend(struct ha_lease *l, int64_t from)
{
	int64_t t = (int64_t)l->election_ms;

	__atomic_store_n(&l->until, from + t - t / 8, __ATOMIC_RELEASE);
}

static void on_lease(struct raft_barrier *req, int status)
{
	struct ha_lease *l = req->data;

	l->busy = 0;
	if (!status)
		lease_extend(l, l->start);
}

void ha__lease_lead(struct ha_lease *l, unsigned election_ms, int64_t from)
{
	l->election_ms = election_ms;
	l->start = from;
	lease_extend(l, from);
}

void ha__lease_renew(struct ha_lease *l, struct raft *raft, int64_t now)
{
	if (l->busy || now - l->start < (int64_t)l->election_ms / 4)
		return;
	l->req.data = l;
	l->start = now;
	if (!raft_barrier(raft, &l->req, on_lease))
		l->busy = 1;
}

int ha__lease_valid(struct ha_lease *l, int64_t now)
{
	return now <= __atomic_load_n(&l->until, __ATOMIC_ACQUIRE);
}
