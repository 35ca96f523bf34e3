#ifndef CTRL_REPLICATE_H
#define CTRL_REPLICATE_H

/*
 * The embedded S3 store's objects on a replicated controller (docs/ha.md):
 * every object a member's S3 API writes is on at least one other member's
 * disk (fsynced) before the write is answered, and its name, size and
 * ETag go through raft (db/objects.h). Each member keeps its store in step
 * with that record: it fetches from another member what it lacks or holds
 * with another ETag, and removes what was removed. With --s3-endpoint the
 * objects live there and only logs and telemetry are copied; without
 * --peers none of this runs.
 *
 * Members talk over their API addresses, on the routes under
 * CTRL_REPL_PREFIX, with the members' key of the store's secrets
 * ("Authorization: Bearer KEY"):
 *
 *   PUT  /v1/replica/objects/BUCKET/KEY   a copy (X-Trainctl-Meta: the
 *                                         object's metadata, hex)
 *   GET  /v1/replica/objects/BUCKET/KEY   the object and its metadata
 *   PUT  /v1/replica/logs/OFF/JOB/STREAM  bytes of a log file from OFF:
 *                                         appended when the file is OFF
 *                                         bytes long (200, its new size),
 *                                         else 409 with its size
 *   GET  /v1/replica/logs/OFF/JOB/STREAM  the file's bytes from OFF
 *   GET  /v1/replica/logs/                "JOB STREAM SIZE" lines
 *   PUT  /v1/replica/telemetry/HOST       samples (status messages)
 *   GET  /v1/replica/telemetry/SINCE      "HOST NEWEST COUNT" lines
 *   GET  /v1/replica/telemetry/HOST/SINCE the samples after SINCE
 *
 * Logs the API serves go the same way (controller/obs/logs.c): each chunk
 * appended to a job's log is on another member before the agent's post is
 * answered (ctrl_repl_log_append()), and the keeper fetches what a member
 * lacks.
 *
 * A follower serves these routes itself (ha/ha.h's local routes); the
 * leader serves the GETs (its route row, ctrl_repl_routes).
 */
#include <stddef.h>
#include <stdint.h>

#include "controller/route.h"
#include "common/buf.h"

struct ctrl_ctx;
struct s3d;
struct s3d_reply;
struct s3d_blob;
struct s3d_blob_reply;

#define CTRL_REPL_PREFIX "/v1/replica/"

/*
 * With --peers: sets the follower's local routes and starts the thread
 * that keeps this member's objects (with the embedded store), logs and
 * telemetry in step. Call before the member follows. Returns 0 or a
 * negative code (err set).
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

/* The same for a request of the blob endpoint (agents' uploads of models
 * and checkpoints), after s3d_blob_finish(). */
void ctrl_repl_blob(const struct s3d_blob *b, struct s3d_blob_reply *reply);

/*
 * After the chunk of len bytes at off of the log file fd of job's stream
 * was written: copies it to another member (and what that member lacks
 * before it). 0, or -1 when none took it (the stream is kept to be sent
 * again by ctrl_repl_log_settle()). 0 at once when not replicating.
 */
int ctrl_repl_log_append(const char *job, const char *stream, int fd,
			 int64_t off, int64_t len);

/* Sends again what ctrl_repl_log_append() could not: 0 when every log is
 * on another member, else -1. */
int ctrl_repl_log_settle(void);

/*
 * Copies host's telemetry samples s[0..n) to another member (on an I/O
 * worker: it waits on the network). 0, or -1 when none took them. 0 at
 * once when not replicating.
 */
struct tm_host_sample;
int ctrl_repl_tm_copy(const char *host, const struct tm_host_sample *s,
		      size_t n);

/*
 * An object the controller wrote into the embedded store itself (a job's
 * model and output, controller/artifacts.c) copied to a second member and
 * recorded, as an S3 PUT is. 0 when done, or when the embedded store is
 * not replicated; ERR_IO with err when no member took a copy. Waits on
 * the network: never on the event loop.
 */
int ctrl_repl_object(const char *bucket, const char *key, struct buf *err);

/* Whether this controller replicates the store's files (agents' log posts
 * are then stored on an I/O worker: their copy waits on the network). */
int ctrl_repl_on(void);

/* The leader's rows: GETs of the members' routes. */
extern const struct ctrl_route_block ctrl_repl_routes;

#endif
