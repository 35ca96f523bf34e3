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
 * 1 while this member leads and raft's loop ran within half an election
 * timeout: a member that was frozen (SIGSTOP, a stall) serves nothing
 * until its loop has looked again whether it still leads, so that it never
 * answers from a store another leader has moved past. Else 0.
 */
int ha_serving(struct ha *ha);

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
		   struct ha_proxy **out, struct buf *err);
void ha_proxy_stop(struct ha_proxy *p);

#endif
