#ifndef AGENT_HTTP_H
#define AGENT_HTTP_H

/* libcurl's multi interface on the agent's poll loop (agent/http.c). */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct agent_ctx;
struct agent_req;

typedef void agent_req_fn(struct agent_ctx *ctx, struct agent_req *req);

struct agent_req {
	void *easy; /* CURL * */
	void *headers;
	struct buf body; /* request body */
	struct buf resp; /* response body, capped */
	int upload_fd;	 /* PUT from this file, or -1 */
	int64_t sent_ms; /* monotonic: when it was started */
	long status;	 /* HTTP status; 0 when the transfer failed */
	int curl_code;
	int os_errno; /* of a failed connect (CURLINFO_OS_ERRNO) */
	uint64_t term; /* the answer's X-Trainctl-Term; 0 none */
	int stale;     /* a deposed leader's answer (status made 503) */
	char errbuf[256];
	agent_req_fn *done;
	void *data;
	struct agent_req *next;
};

struct agent_http_sock {
	int fd;
	int what; /* CURL_POLL_* */
};

struct agent_http {
	void *multi; /* CURLM * */
	struct agent_http_sock *socks;
	size_t n_socks;
	size_t alloc_socks;
	int64_t timer_at; /* monotonic ms; -1 none */
	struct agent_req *reqs;
	char *auth;	/* "Authorization: Bearer ..." */
	char *base;	/* controller URL: cfg.controllers[member] */
	size_t member;	/* the member requests go to */
	long connect_ms; /* connect timeout of every request */
	char *local_ip; /* learnt from the first completed request */
	/* The highest X-Trainctl-Term a member answered with: answers of
	 * a lower one come from a deposed leader and are dropped. */
	uint64_t term;
};

int agent_http_init(struct agent_ctx *ctx, struct buf *err);
void agent_http_release(struct agent_ctx *ctx);

/*
 * Starts a request to base + path. body (may be NULL) is copied. Calls
 * done exactly once, from the loop, unless cancelled; the request is freed
 * after done returns. timeout_ms 0: none (only a low-speed limit).
 */
struct agent_req *agent_http_start(struct agent_ctx *ctx, const char *method,
				   const char *path, const char *body,
				   size_t len, int64_t timeout_ms,
				   agent_req_fn *done, void *data);

/* PUT of the file fd (size bytes) streamed with a read callback. Takes fd. */
struct agent_req *agent_http_put_file(struct agent_ctx *ctx, const char *path,
				      int fd, int64_t size, agent_req_fn *done,
				      void *data);

/*
 * With several controller members: requests started from now on go to
 * the next one. Returns 0 when there is only one.
 */
int agent_http_next_controller(struct agent_ctx *ctx);

/* Drops a request without calling done. */
void agent_http_cancel(struct agent_ctx *ctx, struct agent_req *req);

/*
 * The loop's side: the poll events a socket waits for, what happened on
 * one, the timer.
 */
short agent_http_sock_events(const struct agent_http_sock *sock);
void agent_http_event(struct agent_ctx *ctx, int fd, short revents);
void agent_http_timeout(struct agent_ctx *ctx);

#endif
