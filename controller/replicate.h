#ifndef CTRL_REPLICATE_H
#define CTRL_REPLICATE_H

/*
 * The embedded S3 store's objects on a replicated controller (docs/ha.md):
 * every object a member's S3 API writes is on at least one other member's
 * disk (fsynced) before the write is answered, and its name, size and
 * ETag go through raft (db/objects.h). Each member keeps its store in step
 * with that record: it fetches from another member what it lacks or holds
 * with another ETag, and removes what was removed. With --s3-endpoint, or
 * without --peers, none of this runs.
 *
 * Members talk over their API addresses, on the routes under
 * CTRL_REPL_PREFIX, with the members' key of the store's secrets
 * ("Authorization: Bearer KEY"):
 *
 *   PUT    /v1/members/objects/BUCKET/KEY   a copy (X-Trainctl-Meta: the
 *                                           object's metadata, hex)
 *   GET    /v1/members/objects/BUCKET/KEY   the object and its metadata
 *
 * A follower serves them itself (ha/ha.h's local routes); the leader
 * serves GET (its route row, ctrl_repl_routes).
 */
#include "controller/route.h"
#include "common/buf.h"

struct ctrl_ctx;
struct s3d;
struct s3d_reply;

#define CTRL_REPL_PREFIX "/v1/members/objects/"

/*
 * With --peers and the embedded store: sets the follower's local routes
 * and starts the thread that keeps this member's store in step. Call
 * before the member follows. Returns 0 or a negative code (err set).
 */
int ctrl_repl_start(struct ctrl_ctx *ctx, struct buf *err);
void ctrl_repl_stop(void);

/* Once this member leads, before its API opens: makes the members' key
 * (the store's secret) when there is none yet. */
void ctrl_repl_lead(void);

/*
 * After s3d_finish() (on an I/O worker): copies what the request wrote to
 * another member and records its changes; when either fails, reply
 * becomes 503 SlowDown (the client retries). Nothing when not replicating.
 */
void ctrl_repl_s3(struct s3d *s, struct s3d_reply *reply);

/* The leader's rows: GET of an object for another member. */
extern const struct ctrl_route_block ctrl_repl_routes;

#endif
