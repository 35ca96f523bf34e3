#ifndef HA_HA_H
#define HA_HA_H

/*
 * The replicated controller (docs/ha.md): three or five trainctld members
 * keep one store through Raft (libraft, Canonical's C library, with its
 * libuv I/O). Only ha/ includes raft.h and uv.h, as only db/ includes
 * sqlite3.h.
 *
 * A member opens its store, then ha_start() runs raft in a thread of its
 * own and sets the store's replication hook (db/replica.h): the entries
 * others commit are applied to the store, and once this member leads
 * (ha_ready()), its own writes commit only when a majority holds them.
 * A member that stops leading fail-stops: it re-executes itself and comes
 * back as a follower.
 */
#include <stdint.h>

#include "common/buf.h"

struct db;
struct ha;

/* One member of the cluster, as --peers names it. */
struct ha_member {
	unsigned id;	 /* 1.. */
	char *raft_addr; /* "HOST:PORT" of its raft traffic */
	char *api_url;	 /* "http://HOST:PORT" of its API */
};

struct ha_config {
	unsigned self; /* this member's id */
	struct ha_member *members;
	size_t n_members;
	char *dir;		   /* raft's log and snapshots */
	unsigned election_ms;	   /* election timeout */
	unsigned heartbeat_ms;	   /* leader's heartbeat */
	unsigned snapshot_entries; /* entries between snapshots */
	/* Re-executed when leadership is lost; NULL (tests): the member
	 * refuses every write from then on instead. */
	char **argv;
};

/*
 * Parses --peers "ID=RAFTADDR=APIURL,..." into cfg->members (3 to 9 of
 * them, distinct ids and addresses, self among them). Returns 0 or
 * ERR_INVALID with err saying what is wrong.
 */
int ha_config_parse_peers(struct ha_config *cfg, const char *spec,
			  unsigned self, struct buf *err);

/* Frees what ha_config_parse_peers() set. */
void ha_config_release(struct ha_config *cfg);

/* The member with id, or NULL. */
const struct ha_member *ha_config_member(const struct ha_config *cfg,
					 unsigned id);

/*
 * Starts raft on db (open, migrated) in its own thread: a first start
 * bootstraps the configuration of cfg's members, a later one loads the
 * log and snapshot in cfg->dir and applies what db lacks. cfg is kept
 * (not copied) until ha_stop(). Returns 0 or a negative code with err
 * set.
 */
int ha_start(const struct ha_config *cfg, struct db *db, struct ha **out,
	     struct buf *err);

/*
 * 1 once this member leads and has applied every committed entry (its
 * controller may start), else 0.
 */
int ha_ready(struct ha *ha);

/*
 * 1 while this member leads, holds the read lease and raft's loop ran
 * within half an election timeout, else 0. The lease: every quarter of an
 * election timeout a barrier goes through raft; once a majority holds
 * one, no other member can be elected until an election timeout after it
 * was proposed (a follower that heard a leader refuses to vote until its
 * own timeout runs out), so reads are served until 7/8 of that. A member
 * cut off from the others, or frozen (SIGSTOP, a stall), stops serving
 * before another can lead: it never answers from a store another leader
 * has moved past.
 */
int ha_serving(struct ha *ha);

/*
 * raft's term in which this member led last (it stays after the member
 * lost leadership, until it fail-stops), 0 before it led. Terms only
 * grow: whoever has seen a higher one knows this leader was deposed
 * (docs/agent-protocol.md, "Members' terms").
 */
uint64_t ha_term(struct ha *ha);

/*
 * The API URL of the member that leads now, copied into out (size
 * bytes); 0, or -1 when no leader is known or this member leads.
 */
int ha_leader_url(struct ha *ha, char *out, size_t size);

/* Stops raft and clears db's hook; NULL is fine. */
void ha_stop(struct ha *ha);

/*
 * The follower's API: every request forwarded to the leader's API URL and
 * its answer sent back ("503 no leader" with Retry-After while none is
 * known). Listens on listen ("HOST:PORT"); max is the largest body in
 * either direction.
 */
struct ha_proxy;

int ha_proxy_start(struct ha *ha, const char *listen, size_t max,
		   struct ha_proxy **out, struct buf *err);
void ha_proxy_stop(struct ha_proxy *p);

#endif
