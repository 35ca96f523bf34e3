/*
 * The agent's requests to the controller on libcurl's multi interface,
 * driven by our poll loop through curl_multi_socket_action(): curl tells us
 * (socket callback) which sockets to watch for what and (timer callback)
 * when to call it back; we add those sockets to every turn's poll set.
 */
#define LOG_TAG "agent"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "agent/agent.h"
#include "agent/http.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define RESP_MAX (64u << 20)

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp,
		     void *socketp)
{
	struct agent_http *h = userp;
	size_t i;

	(void)easy;
	(void)socketp;
	for (i = 0; i < h->n_socks; i++)
		if (h->socks[i].fd == (int)s)
			break;
	if (what == CURL_POLL_REMOVE) {
		if (i < h->n_socks)
			h->socks[i] = h->socks[--h->n_socks];
		return 0;
	}
	if (i == h->n_socks) {
		ALLOC_GROW(h->socks, h->n_socks + 1, h->alloc_socks);
		h->socks[h->n_socks].fd = (int)s;
		h->n_socks++;
	}
	h->socks[i].what = what;
	return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct agent_http *h = userp;

	(void)multi;
	h->timer_at = timeout_ms < 0 ? -1 : time_mono_ms() + timeout_ms;
	return 0;
}

int agent_http_init(struct agent_ctx *ctx, struct buf *err)
{
	struct agent_http *h = &ctx->http;
	struct buf b = BUF_INIT;

	memset(h, 0, sizeof(*h));
	h->timer_at = -1;
	h->multi = curl_multi_init();
	if (!h->multi) {
		(void)buf_adds(err, "curl_multi_init failed");
		return ERR_IO;
	}
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	(void)buf_addf(&b, "Authorization: Bearer %s",
		       ctx->token ? ctx->token : "");
	h->auth = buf_detach(&b, NULL);
	h->base = xstrdup(ctx->cfg.controllers[0]);
	h->connect_ms = 2000;
	return 0;
}

int agent_http_next_controller(struct agent_ctx *ctx)
{
	struct agent_http *h = &ctx->http;

	if (ctx->cfg.n_controllers < 2)
		return 0;
	h->member = (h->member + 1) % ctx->cfg.n_controllers;
	free(h->base);
	h->base = xstrdup(ctx->cfg.controllers[h->member]);
	log_info("trying the controller at %s", h->base);
	return 1;
}

static void req_free(struct agent_req *r)
{
	if (r->easy)
		curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->headers);
	buf_release(&r->body);
	buf_release(&r->resp);
	if (r->upload_fd >= 0)
		close(r->upload_fd);
	free(r);
}

static void unlink_req(struct agent_http *h, struct agent_req *r)
{
	struct agent_req **pp;

	for (pp = &h->reqs; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			return;
		}
}

void agent_http_release(struct agent_ctx *ctx)
{
	struct agent_http *h = &ctx->http;
	struct agent_req *r;

	while ((r = h->reqs)) {
		h->reqs = r->next;
		curl_multi_remove_handle(h->multi, r->easy);
		req_free(r);
	}
	if (h->multi)
		curl_multi_cleanup(h->multi);
	/* The token is a secret: do not leave it in freed memory. */
	if (h->auth)
		memset(h->auth, 0, strlen(h->auth));
	free(h->auth);
	free(h->base);
	free(h->socks);
	free(h->local_ip);
	memset(h, 0, sizeof(*h));
}

static size_t on_write(char *data, size_t size, size_t n, void *userp)
{
	struct agent_req *r = userp;

	if (buf_add(&r->resp, data, size * n))
		return 0; /* too big: fail the transfer */
	return size * n;
}

/* Picks X-Trainctl-Term out of the answer's headers. */
static size_t on_header(char *data, size_t size, size_t n, void *userp)
{
	static const char name[] = "X-Trainctl-Term:";
	struct agent_req *r = userp;
	size_t len = size * n, i = sizeof(name) - 1;
	uint64_t t = 0;

	if (len <= i || strncasecmp(data, name, i))
		return len;
	while (i < len && data[i] == ' ')
		i++;
	for (; i < len && data[i] >= '0' && data[i] <= '9'; i++) {
		if (t > (UINT64_MAX - 9) / 10)
			return len; /* not a term: ignored, as none */
		t = t * 10 + (uint64_t)(data[i] - '0');
	}
	r->term = t;
	return len;
}

static size_t on_read(char *out, size_t size, size_t n, void *userp)
{
	struct agent_req *r = userp;
	ssize_t got;

	do {
		got = read(r->upload_fd, out, size * n);
	} while (got < 0 && errno == EINTR);
	return got < 0 ? CURL_READFUNC_ABORT : (size_t)got;
}

static struct agent_req *req_new(struct agent_ctx *ctx, const char *method,
				 const char *path, int64_t timeout_ms,
				 agent_req_fn *done, void *data)
{
	struct agent_req *r = xcalloc(1, sizeof(*r));
	struct buf url = BUF_INIT;
	char term[48];
	CURL *e;

	r->upload_fd = -1;
	r->sent_ms = time_mono_ms();
	buf_init(&r->body, 0);
	buf_init(&r->resp, RESP_MAX);
	r->done = done;
	r->data = data;
	e = curl_easy_init();
	if (!e) {
		free(r);
		return NULL;
	}
	r->easy = e;
	(void)buf_addf(&url, "%s%s", ctx->http.base, path);
	curl_easy_setopt(e, CURLOPT_URL, url.data);
	buf_release(&url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ctx->http.connect_ms);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (ctx->cfg.ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, ctx->cfg.ca_file);
	if (timeout_ms > 0)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	/* A transfer that stalls for a minute is dead. */
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 60L);
	r->headers = curl_slist_append(NULL, ctx->http.auth);
	if (strcmp(method, "GET") && strcmp(method, "PUT"))
		r->headers = curl_slist_append(
			r->headers, "Content-Type: application/json");
	/* No "Expect: 100-continue" round trip for our uploads. */
	r->headers = curl_slist_append(r->headers, "Expect:");
	if (ctx->http.term) {
		/* A deposed leader that still runs refuses it (503). */
		(void)snprintf(term, sizeof(term), "X-Trainctl-Term: %llu",
			       (unsigned long long)ctx->http.term);
		r->headers = curl_slist_append(r->headers, term);
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
	if (!strcmp(method, "POST"))
		curl_easy_setopt(e, CURLOPT_POST, 1L);
	else if (strcmp(method, "GET") && strcmp(method, "PUT"))
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	return r;
}

static struct agent_req *req_add(struct agent_ctx *ctx, struct agent_req *r)
{
	if (curl_multi_add_handle(ctx->http.multi, r->easy) != CURLM_OK) {
		req_free(r);
		return NULL;
	}
	r->next = ctx->http.reqs;
	ctx->http.reqs = r;
	return r;
}

struct agent_req *agent_http_start(struct agent_ctx *ctx, const char *method,
				   const char *path, const char *body,
				   size_t len, int64_t timeout_ms,
				   agent_req_fn *done, void *data)
{
	struct agent_req *r =
		req_new(ctx, method, path, timeout_ms, done, data);

	if (!r)
		return NULL;
	if (body) {
		(void)buf_add(&r->body, body, len);
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body.data);
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)r->body.len);
	}
	return req_add(ctx, r);
}

struct agent_req *agent_http_put_file(struct agent_ctx *ctx, const char *path,
				      int fd, int64_t size, agent_req_fn *done,
				      void *data)
{
	struct agent_req *r = req_new(ctx, "PUT", path, 0, done, data);

	if (!r) {
		close(fd);
		return NULL;
	}
	r->upload_fd = fd;
	curl_easy_setopt(r->easy, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(r->easy, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(r->easy, CURLOPT_READDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
	return req_add(ctx, r);
}

void agent_http_cancel(struct agent_ctx *ctx, struct agent_req *req)
{
	if (!req)
		return;
	unlink_req(&ctx->http, req);
	curl_multi_remove_handle(ctx->http.multi, req->easy);
	req_free(req);
}

short agent_http_sock_events(const struct agent_http_sock *sock)
{
	short ev = 0;

	if (sock->what & CURL_POLL_IN)
		ev |= POLLIN;
	if (sock->what & CURL_POLL_OUT)
		ev |= POLLOUT;
	return ev;
}

/*
 * Members' terms (docs/agent-protocol.md): an answer in a lower term than
 * one seen before comes from a leader that was deposed and may not know it
 * yet; what it says (start, stop, a checkpoint's fate) is dropped, and the
 * callback sees a 503, as from a member that does not lead. An answer
 * without a term once one was seen is no leader's either.
 */
static void check_term(struct agent_http *h, struct agent_req *r)
{
	if (r->status >= 500)
		return; /* no leader's answer, and taken as such */
	if (r->term >= h->term) {
		if (r->term > h->term)
			log_info("%s leads in term %llu", h->base,
				 (unsigned long long)r->term);
		h->term = r->term;
		return;
	}
	log_warn("%s answered in term %llu, but a leader of term %llu was "
		 "seen: a deposed leader's answer, dropped",
		 h->base, (unsigned long long)r->term,
		 (unsigned long long)h->term);
	r->status = 503;
	r->stale = 1;
	buf_reset(&r->resp);
	(void)buf_adds(&r->resp, "{\"__type\":\"ServiceUnavailable\","
				 "\"message\":\"a deposed leader's answer\"}");
}

/* Hands every finished transfer to its callback. */
static void finish(struct agent_ctx *ctx)
{
	struct agent_http *h = &ctx->http;
	struct agent_req *r;
	CURLMsg *m;
	char *ip;
	int left;

	while ((m = curl_multi_info_read(h->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		r = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &r);
		if (!r)
			continue;
		r->curl_code = (int)m->data.result;
		r->status = 0;
		r->os_errno = 0;
		{
			long e = 0;

			if (m->data.result != CURLE_OK &&
			    curl_easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &e) ==
				    CURLE_OK)
				r->os_errno = (int)e;
		}
		if (m->data.result == CURLE_OK) {
			curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE,
					  &r->status);
			check_term(h, r);
		} else if (!r->errbuf[0])
			(void)snprintf(r->errbuf, sizeof(r->errbuf), "%s",
				       curl_easy_strerror(m->data.result));
		ip = NULL;
		if (!h->local_ip &&
		    curl_easy_getinfo(r->easy, CURLINFO_LOCAL_IP, &ip) ==
			    CURLE_OK &&
		    ip && *ip)
			h->local_ip = xstrdup(ip);
		unlink_req(h, r);
		curl_multi_remove_handle(h->multi, r->easy);
		if (r->done)
			r->done(ctx, r);
		req_free(r);
	}
}

void agent_http_event(struct agent_ctx *ctx, int fd, short revents)
{
	int mask = 0, running;

	if (revents & POLLIN)
		mask |= CURL_CSELECT_IN;
	if (revents & POLLOUT)
		mask |= CURL_CSELECT_OUT;
	if (revents & (POLLERR | POLLHUP | POLLNVAL))
		mask |= CURL_CSELECT_ERR;
	curl_multi_socket_action(ctx->http.multi, fd, mask, &running);
	finish(ctx);
}

void agent_http_timeout(struct agent_ctx *ctx)
{
	int running;

	if (ctx->http.timer_at < 0 || time_mono_ms() < ctx->http.timer_at)
		return;
	ctx->http.timer_at = -1;
	curl_multi_socket_action(ctx->http.multi, CURL_SOCKET_TIMEOUT, 0,
				 &running);
	finish(ctx);
}
