#ifndef CTRL_REPLICATE_INT_H
#define CTRL_REPLICATE_INT_H

/*
 * What controller/replicate.c (objects, the members' routes, the keeper
 * thread) and controller/replog.c (logs) share. Internal to the two.
 */
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "common/buf.h"

struct db;
struct ha_local_reply;

/*
 * One PUT to one member: size bytes of data (when set) or of fd from base,
 * with the members' key and, when meta is set, the metadata header
 * (X-Trainctl-Meta). Its status (0: no answer) and answer (at most 64
 * bytes kept) once done.
 */
struct ctrl_repl_push {
	const char *url;
	const char *data;
	int fd;
	int64_t base, size;
	const char *meta;
	long status;
	struct buf answer;
	CURL *c;
	int64_t off;
	struct curl_slist *hdrs;
};

/*
 * Sends p[0..n) at once until one member answers 200 (0) or none does by
 * the deadline (-1); after the first 200 the others get grace_ms more to
 * finish. Release each p's answer afterwards.
 */
int ctrl_repl__push_all(struct ctrl_repl_push *p, size_t n, int64_t deadline,
			int64_t grace_ms);

/* The other members' API URLs: *n of them. */
char *const *ctrl_repl__members(size_t *n);

/* The members' key, or NULL while the store has none. */
const char *ctrl_repl__key(void);

/* The state dir and the store; NULL when not replicating. */
const char *ctrl_repl__state_dir(void);
struct db *ctrl_repl__db(void);

/* A GET to url with the members' key: 0 with *status and the body (at
 * most max bytes), or -1. */
int ctrl_repl__get(const char *url, long *status, struct buf *body, size_t max);

/* The logs' part of the members' routes (under /v1/replica/logs/). */
struct ctrl_replog_req;

/* tail: "<offset>/<job>/<stream>". Fills *status/msg when refused, or
 * answers at once (a PUT of bytes the member holds already). */
struct ctrl_replog_req *ctrl_replog__begin(const char *method, const char *tail,
					   int64_t length, int *status,
					   struct buf *msg);
void ctrl_replog__data(struct ctrl_replog_req *r, const char *p, size_t n);
void ctrl_replog__finish(struct ctrl_replog_req *r, struct ha_local_reply *out);
void ctrl_replog__release(struct ctrl_replog_req *r);

/* Brings this member's logs in step with another member's: one pass. */
void ctrl_replog__catch_up(void);

/* The telemetry's part of the members' routes (under
 * /v1/replica/telemetry/), and its catch-up (controller/reptm.c). */
struct ctrl_reptm_req;

struct ctrl_reptm_req *ctrl_reptm__begin(const char *method, const char *tail,
					 int64_t length, int *status,
					 struct buf *msg);
void ctrl_reptm__data(struct ctrl_reptm_req *r, const char *p, size_t n);
void ctrl_reptm__finish(struct ctrl_reptm_req *r, struct ha_local_reply *out);
void ctrl_reptm__release(struct ctrl_reptm_req *r);
void ctrl_reptm__catch_up(void);

/* The controller (its telemetry store); NULL when not replicating. */
struct ctrl_ctx *ctrl_repl__ctx(void);

#endif
