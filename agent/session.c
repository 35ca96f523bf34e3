/*
 * The conversation with the controller (docs/agent-protocol.md):
 *
 *   - register on start, and again after any failed request or a 401/404
 *     (the controller restarted or forgot us), with backoff 100 ms -> 2 s;
 *   - one long-poll GET .../work?version=V outstanding at all times;
 *   - POST .../status (every assignment's REPORT) every heartbeat_ms and
 *     at once on any change, at most one in flight (changes meanwhile
 *     coalesce into the next one);
 *   - POST .../logs every ~50 ms or 64 KiB of output, one in flight;
 *   - self-fencing: no answer from the controller's machine for
 *     deadline_ms (a refused connection is an answer: trainctld is
 *     restarting, the network is fine) kills
 *     every running process group, so a partitioned host never trains on
 *     alone; nothing starts again until the controller answers.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include "agent/agent.h"
#include "agent/assign.h"
#include "agent/config.h"
#include "agent/http.h"
#include "agent/lease.h"
#include "agent/logq.h"
#include "agent/session.h"
#include "agent/telemetry.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define REGISTER_TIMEOUT_MS 5000
#define STATUS_TIMEOUT_MS 5000
#define LOGS_TIMEOUT_MS 10000
#define WORK_TIMEOUT_MS 35000 /* the controller answers within ~25 s */

void agent_session_init(struct agent_ctx *ctx)
{
	struct agent_session *s = &ctx->sess;

	memset(s, 0, sizeof(*s));
	s->backoff_ms = BACKOFF_MIN_MS;
	s->heartbeat_ms = 1000;
	s->deadline_ms = 3000;
	s->last_contact = time_mono_ms();
	s->lease_base = s->last_contact;
	s->work_version = -1;
}

void agent_session_release(struct agent_ctx *ctx)
{
	struct agent_session *s = &ctx->sess;

	if (s->pending) {
		api_work_release(s->pending);
		free(s->pending);
	}
	s->pending = NULL;
}

/* How long a changed report may wait for the output before it. */
#define STATUS_HOLD_MS 250

static int ok2xx(const struct agent_req *r)
{
	return r->status >= 200 && r->status < 300;
}

static void renew(struct agent_session *s, const struct agent_req *req)
{
	if (req->sent_ms > s->lease_base)
		s->lease_base = req->sent_ms;
}

/*
 * Any 2xx: the controller is there and knows us. Only what the controller
 * counts as a sign of life (not a log POST) renews the lease.
 */
static void contact(struct agent_ctx *ctx, const struct agent_req *req,
		    int counted)
{
	struct agent_session *s = &ctx->sess;

	s->last_contact = time_mono_ms();
	if (counted)
		renew(s, req);
	if (s->fenced) {
		log_info("controller reachable again");
		s->fenced = 0;
	}
}

static void describe(const struct agent_req *r, struct buf *out)
{
	if (r->status)
		(void)buf_addf(out, "HTTP %ld %.*s", r->status,
			       (int)(r->resp.len < 200 ? r->resp.len : 200),
			       r->resp.data);
	else
		(void)buf_adds(out, r->errbuf[0] ? r->errbuf : "failed");
}

/*
 * A replicated controller: any member answers (a follower forwards to the
 * leader), so when one does not, the session moves to the next member and
 * registers there. What was in flight to the old one is dropped: a
 * long-poll to a machine that went away would hang for its whole timeout.
 */
static void next_member(struct agent_ctx *ctx)
{
	struct agent_session *s = &ctx->sess;

	if (!agent_http_next_controller(ctx))
		return;
	if (s->reg_req)
		agent_http_cancel(ctx, s->reg_req);
	s->reg_req = NULL;
	if (s->work_req)
		agent_http_cancel(ctx, s->work_req);
	s->work_req = NULL;
	if (s->status_req) {
		agent_http_cancel(ctx, s->status_req);
		agent_assign_status_done(ctx, 0);
		s->status_dirty = 1;
	}
	s->status_req = NULL;
	if (s->log_req) {
		agent_http_cancel(ctx, s->log_req);
		agent_logq_nack(&ctx->logq);
	}
	s->log_req = NULL;
	/* The next member is tried at once, not after the backoff. */
	s->backoff_ms = BACKOFF_MIN_MS;
}

/*
 * A request's timeout: with several members, a third of the deadline, so
 * that a member that stopped answering is left for the next one well
 * before the host's lease runs out.
 */
static int64_t member_timeout(const struct agent_ctx *ctx, int64_t ms)
{
	int64_t t = ctx->sess.deadline_ms / 3;

	if (ctx->cfg.n_controllers < 2)
		return ms;
	if (t < 300)
		t = 300;
	return t < ms ? t : ms;
}

void agent_session_lost(struct agent_ctx *ctx, const char *what,
			const struct agent_req *req)
{
	struct agent_session *s = &ctx->sess;
	struct buf why = BUF_INIT;
	int64_t now = time_mono_ms();

	describe(req, &why);
	/*
	 * An answer, even an error, or a refused connection means the
	 * controller's machine is there and only trainctld is not (a
	 * restart): that is no partition, so no reason to fence. A
	 * timeout or an unreachable network is, and so is a deposed
	 * leader's answer: the one that leads may not hear this host.
	 */
	if (req && !req->stale &&
	    (req->status || req->os_errno == ECONNREFUSED)) {
		s->last_reachable = now;
		renew(s, req);
	}
	/* Say it once per outage; the retries go to the debug log. */
	if (s->registered)
		log_warn("%s: %s: registering again", what, why.data);
	else if (!s->warned)
		log_warn("%s: %s: retrying", what, why.data);
	else
		log_debug("%s: %s", what, why.data);
	s->warned = 1;
	buf_release(&why);
	s->registered = 0;
	/* No answer, or one that is not the leader's (502/503/504). */
	if (!req || !req->status || req->status >= 500)
		next_member(ctx);
	if (s->register_at < now + s->backoff_ms)
		s->register_at = now + s->backoff_ms;
	s->backoff_ms *= 2;
	/* Several tries within the fencing deadline, so that a controller
	 * that is only restarting is seen to be there in time. */
	if (s->backoff_ms > BACKOFF_MAX_MS)
		s->backoff_ms = BACKOFF_MAX_MS;
	if (s->deadline_ms > 0 && s->backoff_ms > s->deadline_ms / 4)
		s->backoff_ms = s->deadline_ms / 4 > BACKOFF_MIN_MS ?
					s->deadline_ms / 4 :
					BACKOFF_MIN_MS;
}

/*
 * The address this host reaches the controller from: the local end of a
 * UDP "connection" to it (nothing is sent).
 */
static char *local_address(struct agent_ctx *ctx)
{
	struct addrinfo hints, *res = NULL, *ai;
	struct sockaddr_storage ss;
	socklen_t len;
	char host[256], addr[INET6_ADDRSTRLEN];
	char *h = NULL, *port = NULL, *out = NULL;
	CURLU *u = curl_url();
	int fd;

	if (!u || curl_url_set(u, CURLUPART_URL, ctx->http.base, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &h, 0) ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT))
		goto out;
	/* "[::1]" -> "::1" */
	(void)snprintf(host, sizeof(host), "%s", h);
	if (host[0] == '[') {
		memmove(host, host + 1, strlen(host));
		if (strchr(host, ']'))
			*strchr(host, ']') = '\0';
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_DGRAM;
	if (getaddrinfo(host, port, &hints, &res))
		goto out;
	for (ai = res; ai && !out; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		len = sizeof(ss);
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen) &&
		    !getsockname(fd, (struct sockaddr *)&ss, &len)) {
			const void *p =
				ss.ss_family == AF_INET6 ?
					(const void *)&(
						(struct sockaddr_in6 *)&ss)
						->sin6_addr :
					(const void *)&(
						(struct sockaddr_in *)&ss)
						->sin_addr;

			if (inet_ntop(ss.ss_family, p, addr, sizeof(addr)))
				out = xstrdup(addr);
		}
		close(fd);
	}
out:
	if (res)
		freeaddrinfo(res);
	curl_free(h);
	curl_free(port);
	curl_url_cleanup(u);
	return out;
}

static void on_register(struct agent_ctx *ctx, struct agent_req *req)
{
	struct agent_session *s = &ctx->sess;
	struct buf err = BUF_INIT;
	int64_t hb = 0, dl = 0, tm = -1;

	s->reg_req = NULL;
	if (!ok2xx(req)) {
		agent_session_lost(ctx, "register", req);
		return;
	}
	if (api_register_reply_parse(req->resp.data, req->resp.len, &hb, &dl,
				     &err))
		log_warn("register reply: %s", err.data);
	if (hb > 0)
		s->heartbeat_ms = hb;
	if (dl > 0)
		s->deadline_ms = dl;
	ctx->http.connect_ms = member_timeout(ctx, 2000);
	buf_reset(&err);
	if (api_register_reply_telemetry(req->resp.data, req->resp.len, &tm,
					 &err))
		log_warn("register reply: %s", err.data);
	else if (tm >= 0 && tm != ctx->tm.interval_ms)
		agent_telemetry_set_interval(ctx, tm);
	s->registered = 1;
	s->warned = 0;
	s->backoff_ms = BACKOFF_MIN_MS;
	s->status_dirty = 1;
	s->work_at = 0;
	/* A restarted controller may reuse version numbers: ask afresh. */
	s->work_version = -1;
	s->log_at = 0;
	contact(ctx, req, 1);
	log_info("registered with %s as '%s' (heartbeat %lld ms, deadline "
		 "%lld ms)",
		 ctx->http.base, ctx->cfg.host, (long long)s->heartbeat_ms,
		 (long long)s->deadline_ms);
	buf_release(&err);
}

static void send_register(struct agent_ctx *ctx)
{
	struct agent_session *s = &ctx->sess;
	struct api_register r;
	struct buf body = BUF_INIT;

	if (!ctx->cfg.address) {
		ctx->cfg.address = local_address(ctx);
		if (!ctx->cfg.address && ctx->http.local_ip)
			ctx->cfg.address = xstrdup(ctx->http.local_ip);
		if (ctx->cfg.address)
			log_info("address: %s", ctx->cfg.address);
	}
	memset(&r, 0, sizeof(r));
	r.host = ctx->cfg.host;
	r.version = (char *)AGENT_VERSION;
	r.boot_id = ctx->boot_id;
	r.cpus = ctx->cfg.cpus;
	r.gpus = ctx->cfg.gpus;
	r.address = ctx->cfg.address ? ctx->cfg.address : (char *)"127.0.0.1";
	if (api_register_build(&r, &body) == 0)
		s->reg_req = agent_http_start(
			ctx, "POST", "/v1/agents/register", body.data, body.len,
			member_timeout(ctx, REGISTER_TIMEOUT_MS), on_register,
			NULL);
	if (!s->reg_req)
		s->register_at = time_mono_ms() + BACKOFF_MAX_MS;
	buf_release(&body);
}

static void on_work(struct agent_ctx *ctx, struct agent_req *req)
{
	struct agent_session *s = &ctx->sess;
	struct buf err = BUF_INIT;
	struct api_work *w;

	s->work_req = NULL;
	if (!ok2xx(req)) {
		agent_session_lost(ctx, "work", req);
		s->work_at = time_mono_ms() + s->backoff_ms;
		return;
	}
	contact(ctx, req, 1);
	w = xcalloc(1, sizeof(*w));
	if (api_work_parse(req->resp.data, req->resp.len, w, &err)) {
		/* Asking again with the old version would answer at once. */
		log_error("work answer: %s", err.data);
		free(w);
		s->work_at = time_mono_ms() + BACKOFF_MAX_MS;
		buf_release(&err);
		return;
	}
	if (w->version != s->work_version || !s->have_work)
		log_debug("work version %lld: %zu assignments",
			  (long long)w->version, w->n);
	s->work_version = w->version;
	if (s->pending) {
		api_work_release(s->pending);
		free(s->pending);
	}
	s->pending = w;
	s->pending_at_ms = time_now_ms();
	s->work_at = 0;
	buf_release(&err);
}

static void send_work(struct agent_ctx *ctx)
{
	struct agent_session *s = &ctx->sess;
	struct buf path = BUF_INIT;

	(void)buf_addf(&path, "/v1/agents/%s/work?version=%lld", ctx->cfg.host,
		       (long long)s->work_version);
	s->work_req = agent_http_start(ctx, "GET", path.data, NULL, 0,
				       WORK_TIMEOUT_MS, on_work, NULL);
	if (!s->work_req)
		s->work_at = time_mono_ms() + BACKOFF_MAX_MS;
	buf_release(&path);
}

static void on_status(struct agent_ctx *ctx, struct agent_req *req)
{
	struct agent_session *s = &ctx->sess;

	s->status_req = NULL;
	if (!ok2xx(req)) {
		agent_assign_status_done(ctx, 0);
		s->status_dirty = 1;
		agent_session_lost(ctx, "status", req);
		return;
	}
	agent_assign_status_done(ctx, 1);
	contact(ctx, req, 1);
}

static void send_status(struct agent_ctx *ctx, int64_t now)
{
	struct agent_session *s = &ctx->sess;
	struct buf body = BUF_INIT;
	struct buf path = BUF_INIT;

	s->status_dirty = 0;
	s->next_status = now + s->heartbeat_ms;
	if (agent_assign_status_build(ctx, &body)) {
		log_error("cannot build the status report");
		agent_assign_status_done(ctx, 0);
		goto out;
	}
	(void)buf_addf(&path, "/v1/agents/%s/status", ctx->cfg.host);
	s->status_req = agent_http_start(ctx, "POST", path.data, body.data,
					 body.len,
					 member_timeout(ctx, STATUS_TIMEOUT_MS),
					 on_status, NULL);
	if (!s->status_req) {
		agent_assign_status_done(ctx, 0);
		s->status_dirty = 1;
	}
out:
	buf_release(&body);
	buf_release(&path);
}

static void on_logs(struct agent_ctx *ctx, struct agent_req *req)
{
	struct agent_session *s = &ctx->sess;

	s->log_req = NULL;
	if (!ok2xx(req)) {
		agent_logq_nack(&ctx->logq);
		s->log_at = time_mono_ms() + s->backoff_ms;
		agent_session_lost(ctx, "logs", req);
		return;
	}
	agent_logq_ack(&ctx->logq);
	contact(ctx, req, 0);
}

/* When the next log POST is due (INT64_MAX: nothing to send). */
static int64_t logs_due(struct agent_ctx *ctx)
{
	struct agent_logq *q = &ctx->logq;
	int64_t oldest, due;

	if ((q->drops && !q->inflight_n) || q->resend)
		return ctx->sess.log_at;
	oldest = agent_logq_oldest_unsent(q);
	if (oldest < 0)
		return INT64_MAX;
	/*
	 * A line goes at once when the last POST is at least the flush
	 * interval ago, so that sparse output is seen within milliseconds;
	 * lines of a burst wait out the interval and go together (at most
	 * one POST per interval, or per 64 KiB).
	 */
	if (agent_logq_unsent_bytes(q) >= AGENT_LOGQ_FLUSH_BYTES)
		due = 0;
	else
		due = ctx->sess.log_sent_ms + AGENT_LOGQ_FLUSH_MS > oldest ?
			      ctx->sess.log_sent_ms + AGENT_LOGQ_FLUSH_MS :
			      oldest;
	return due > ctx->sess.log_at ? due : ctx->sess.log_at;
}

static void send_logs(struct agent_ctx *ctx)
{
	struct agent_session *s = &ctx->sess;
	struct buf body = BUF_INIT;
	struct buf path = BUF_INIT;

	if (!agent_logq_take(&ctx->logq, ctx->boot_id, time_now_ms(), &body))
		goto out;
	(void)buf_addf(&path, "/v1/agents/%s/logs", ctx->cfg.host);
	s->log_sent_ms = time_mono_ms();
	s->log_req = agent_http_start(ctx, "POST", path.data, body.data,
				      body.len, LOGS_TIMEOUT_MS, on_logs, NULL);
	if (!s->log_req) {
		agent_logq_nack(&ctx->logq);
		s->log_at = time_mono_ms() + BACKOFF_MAX_MS;
	}
out:
	buf_release(&body);
	buf_release(&path);
}

int64_t agent_session_lease_end(const struct agent_ctx *ctx)
{
	const struct agent_session *s = &ctx->sess;

	return s->lease_base + s->deadline_ms -
	       agent_lease_margin_ms(s->deadline_ms);
}

void agent_session_check_lease(struct agent_ctx *ctx, int64_t now)
{
	struct agent_session *s = &ctx->sess;
	struct buf why = BUF_INIT;

	if (s->fenced || now < agent_session_lease_end(ctx))
		return;
	s->fenced = 1;
	(void)buf_addf(&why,
		       "the host's lease ran out: no answer from the "
		       "controller for %lld ms",
		       (long long)(now - s->last_contact));
	log_warn("%s: self-fencing", why.data);
	agent_assign_fence_all(ctx, why.data);
	buf_release(&why);
}

void agent_session_tick(struct agent_ctx *ctx, int64_t now)
{
	struct agent_session *s = &ctx->sess;

	if (!s->registered) {
		if (!s->reg_req && now >= s->register_at)
			send_register(ctx);
		return;
	}
	if (!s->work_req && now >= s->work_at)
		send_work(ctx);
	if (!s->status_req && (s->status_dirty || now >= s->next_status)) {
		/*
		 * A change (a rank's exit above all) is reported after the
		 * output that came before it, so the controller never ends a
		 * job whose last lines are still on the way: pending lines
		 * go first, the report right after (at most STATUS_HOLD_MS
		 * later, so a flood of output never starves heartbeats).
		 */
		int pending = s->log_req ||
			      (!s->hold_flushed &&
			       agent_logq_oldest_unsent(&ctx->logq) >= 0);

		if (s->status_dirty && pending &&
		    (!s->hold_since || now - s->hold_since < STATUS_HOLD_MS)) {
			if (!s->hold_since)
				s->hold_since = now;
			/* One flush of what is queued now is enough: lines
			 * that come later may follow the report. */
			if (!s->log_req && !s->hold_flushed) {
				send_logs(ctx);
				s->hold_flushed = 1;
			}
		} else {
			s->hold_since = 0;
			s->hold_flushed = 0;
			send_status(ctx, now);
		}
	}
	if (!s->log_req && now >= logs_due(ctx))
		send_logs(ctx);
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

int64_t agent_session_next(struct agent_ctx *ctx)
{
	struct agent_session *s = &ctx->sess;
	int64_t next = INT64_MAX;

	/* When fencing is due: the later of the last answer and the last
	 * sign that the controller's machine is there (a refused
	 * connection). Waking at the first alone would spin while
	 * trainctld is down. */
	if (!s->fenced)
		next = agent_session_lease_end(ctx);
	if (!s->registered) {
		if (!s->reg_req)
			next = min64(next, s->register_at);
		return next;
	}
	if (!s->work_req)
		next = min64(next, s->work_at);
	if (!s->status_req && s->hold_since)
		/* The log POST's answer wakes the loop before that. */
		next = min64(next, s->hold_since + STATUS_HOLD_MS);
	else if (!s->status_req)
		next = min64(next, s->status_dirty ? 0 : s->next_status);
	if (!s->log_req)
		next = min64(next, logs_due(ctx));
	return next;
}
