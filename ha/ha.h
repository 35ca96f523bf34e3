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

/* Members a cluster may have at most, --peers or added. */
#define HA_MAX_MEMBERS 9

struct ha_config {
	unsigned self; /* this member's id */
	struct ha_member *members;
	size_t n_members;
	char *dir;		   /* raft's log and snapshots */
	unsigned election_ms;	   /* election timeout */
	unsigned heartbeat_ms;	   /* leader's heartbeat */
	unsigned snapshot_entries; /* entries between snapshots */
	/* A new member joining a running cluster: raft starts without a
	 * configuration of its own and waits to be added (--join). */
	int join;
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

/*
 * Checks a member as an operator names one: id 1..1000000, raft address
 * HOST:PORT, API URL http://HOST:PORT. Returns 0 or ERR_INVALID with err
 * naming what is wrong.
 */
int ha_member_check(unsigned long id, const char *raft_addr,
		    const char *api_url, struct buf *err);

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

/* A member's role in raft's configuration, as the leader sees it. */
enum ha_role {
	HA_ROLE_LEADER,
	HA_ROLE_VOTER,
	HA_ROLE_STANDBY, /* replicates, does not vote */
	HA_ROLE_SPARE,	 /* added, not replicated to yet */
};

/* "leader", "voter", "standby" or "spare". */
const char *ha_role_name(enum ha_role role);

struct ha_member_status {
	unsigned id;
	char raft_addr[128];
	enum ha_role role;
	int reachable; /* the leader heard from it within an election */
	uint64_t lag;  /* entries the leader holds that it does not */
};

/* The cluster as its leader sees it (ha_status()). */
struct ha_status {
	uint64_t term;
	uint64_t last_index; /* the leader's last log entry */
	unsigned leader_id;
	size_t n;
	struct ha_member_status members[HA_MAX_MEMBERS];
};

/*
 * The members, their roles and replication lags, read on raft's thread.
 * Returns 0, or ERR_IO with err when this member does not lead.
 */
int ha_status(struct ha *ha, struct ha_status *out, struct buf *err);

/* The member id of st, or NULL. */
const struct ha_member_status *ha_status_member(const struct ha_status *st,
						unsigned id);

/*
 * Membership changes, made by the leader, one at a time. ha_member_add()
 * adds id at raft_addr and makes it a voter once it has caught up with
 * the log (a snapshot and entries); ha_member_remove() takes id out of
 * the configuration. Both return when raft's configuration holding the
 * change is committed: 0, or with err set ERR_CONFLICT (another change
 * is under way, the id or address is in use), ERR_NOTFOUND (no such
 * member), ERR_IO (not the leader, leadership lost, the new
 * member did not answer) or ERR_INVALID.
 */
int ha_member_add(struct ha *ha, unsigned id, const char *raft_addr,
		  struct buf *err);
int ha_member_remove(struct ha *ha, unsigned id, struct buf *err);

/*
 * The members' API URLs as the store holds them (db/members.h), where
 * ha_leader_url() looks first (then in --peers): a follower finds there
 * a leader that --peers does not name.
 */
void ha_members_set(struct ha *ha, const struct ha_member *m, size_t n);

/*
 * A number that changes whenever raft's configuration does (a member
 * added or removed): a follower reads the members' URLs again then.
 */
uint64_t ha_config_version(struct ha *ha);

/*
 * --ha-recover: forces raft's configuration in cfg->dir (raft's log of a
 * member that is not running) to this member alone, after a majority
 * was lost; started again, it leads by itself and the others are added
 * as new members. Returns 0 or ERR_IO/ERR_INVALID with err.
 */
int ha_recover(const struct ha_config *cfg, struct buf *err);

/*
 * Which rows the members' table needs for it to name raft's
 * configuration (st) and nothing else: every member of st that rows
 * lack, with its addresses from peers (a member peers does not name is
 * left out), into *put, and every row of no member of st into *del.
 * Both are allocated (NULL when empty); put's strings are peers'.
 */
void ha_members_plan(const struct ha_status *st, const struct ha_member *rows,
		     size_t n_rows, const struct ha_config *peers,
		     const struct ha_member ***put, size_t *n_put,
		     unsigned **del, size_t *n_del);

/* Stops raft and clears db's hook; NULL is fine. */
void ha_stop(struct ha *ha);

/*
 * The follower's API: every request forwarded to the leader's API URL and
 * its answer sent back ("503 no leader" with Retry-After while none is
 * known). Listens on listen ("HOST:PORT"); max is the largest body
 * held in memory in either direction, a larger one passes through an
 * unnamed file of spool_dir (NULL: refused 503).
 */
struct ha_proxy;

/*
 * Requests a follower serves itself rather than forwarding them: the
 * members' own traffic (controller/replicate.h), whose paths start with
 * prefix. The body is streamed: begin() at the headers (auth: the
 * Authorization header, hdr: the request's header named header, either
 * NULL; length: Content-Length, -1 when none), data() for each piece,
 * finish() to fill the answer, release() when the request is over
 * (also when it never finished). A request refused() at its headers is
 * answered at once, its body unread. Called on the proxy's threads.
 */
struct ha_local_reply {
	int status;
	struct buf body; /* text, unless fd >= 0 */
	int fd;		 /* >= 0: size bytes of it are sent (then closed) */
	int64_t size;
	char *hdr; /* the answer's header named header, or NULL (owned) */
};

struct ha_local_route {
	const char *prefix;
	const char *header;
	void *(*begin)(const char *method, const char *url, const char *auth,
		       const char *hdr, int64_t length);
	int (*refused)(void *st);
	void (*data)(void *st, const char *p, size_t n);
	void (*finish)(void *st, struct ha_local_reply *out);
	void (*release)(void *st);
};

/* Sets the routes every proxy started later serves itself (NULL: none). */
void ha_proxy_set_local(const struct ha_local_route *route);

int ha_proxy_start(struct ha *ha, const char *listen, size_t max,
		   const char *spool_dir, struct ha_proxy **out,
		   struct buf *err);
void ha_proxy_stop(struct ha_proxy *p);

#endif
