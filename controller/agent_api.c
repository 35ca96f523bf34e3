#define LOG_TAG "ctrl"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api/agent_proto.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/route.h"
#include "controller/agent_api.h"
#include "controller/request.h"
#include "controller/iopool.h"
#include "controller/replicate.h"
#include "controller/obs/logs.h"
#include "controller/obs/telemetry.h"
#include "controller/work.h"
#include "db/run.h"
#include "storage/fs.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Agents long-poll this long; they time out their requests later. */
#define WORK_POLL_MS 25000
#define ARTIFACT_MAX (64LL << 30)

static void unauthorized(struct ctrl_response *resp)
{
	ctrl_reply_err(resp, CTRL_E_UNAUTHORIZED,
		       "unknown host or wrong agent token");
}

static const char *authorization(struct MHD_Connection *conn)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_AUTHORIZATION);
}

static void reply_body(struct ctrl_response *resp, struct buf *b)
{
	resp->status = 200;
	buf_release(&resp->body);
	resp->body = *b;
	buf_init(b, 0);
}

static void reply_ok(struct ctrl_response *resp)
{
	resp->status = 200;
	buf_reset(&resp->body);
	(void)buf_adds(&resp->body, "{}");
}

static enum ctrl_route_result do_register(struct ctrl_ctx *ctx,
					  struct MHD_Connection *conn,
					  const char *host, const char *rest,
					  struct ctrl_http_req *req,
					  struct ctrl_response *resp)
{
	struct api_register r;
	struct ctrl_host *h;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	int restarted = 0;

	(void)host;
	(void)rest;
	if (api_register_parse(req->body.data, req->body.len, &r, &err)) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION, err.data);
		buf_release(&err);
		return CTRL_ROUTE_DONE;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_auth(ctx, r.host, authorization(conn));
	if (h) {
		restarted = h->boot_id && strcmp(h->boot_id, r.boot_id);
		free(h->boot_id);
		h->boot_id = xstrdup(r.boot_id);
		free(h->last_status);
		h->last_status = NULL;
		h->last_status_len = 0;
		free(h->address);
		h->address = xstrdup(r.address ? r.address : "127.0.0.1");
		h->cpus = r.cpus;
		h->gpus = r.gpus;
		h->registered = 1;
		h->lost = 0;
		h->last_seen_ms = time_mono_ms();
		ctrl_host_seen(ctx, h);
		h->version++;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (!h) {
		unauthorized(resp);
	} else {
		log_info("host '%s' registered (agent %s, %d cpus, %d gpus, "
			 "%s)%s",
			 r.host, r.version, r.cpus, r.gpus, r.address,
			 restarted ? ": agent restarted" : "");
		if (api_register_reply_build_tm(ctx->cfg.heartbeat_ms,
						ctx->cfg.host_deadline_ms,
						ctx->cfg.tm_interval_ms, &out))
			BUG("register reply too big");
		reply_body(resp, &out);
		ctrl_reconciler_wake(ctx);
	}
	api_register_release(&r);
	buf_release(&err);
	buf_release(&out);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result
do_work(struct ctrl_ctx *ctx, struct MHD_Connection *conn, const char *host,
	const char *rest, struct ctrl_http_req *req, struct ctrl_response *resp)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
						    "version");
	long long have = v ? strtoll(v, NULL, 10) : -1;
	struct ctrl_host *h;
	struct buf out = BUF_INIT;
	struct buf err = BUF_INIT;
	int64_t version;

	(void)rest;
	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_auth(ctx, host, authorization(conn));
	if (!h) {
		pthread_mutex_unlock(&ctx->hosts_lock);
		unauthorized(resp);
		return CTRL_ROUTE_DONE;
	}
	/* A parked poll that is resumed says nothing about the agent now:
	 * only a new request is a sign of life. */
	if (!req->resumed) {
		h->last_seen_ms = time_mono_ms();
		ctrl_host_seen(ctx, h);
	}
	version = h->version;
	if (version == have && !req->resumed && !ctx->stopping) {
		/* Nothing new: park the request until the version changes
		 * or the poll times out. */
		req->suspended = 1;
		MHD_suspend_connection(conn);
		ctrl_waiter_add(ctx, &h->waiters, conn, &req->resumed,
				time_mono_ms() + WORK_POLL_MS);
		pthread_mutex_unlock(&ctx->hosts_lock);
		return CTRL_ROUTE_SUSPENDED;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	req->resumed = 0;
	if (ctrl_work_build(ctx, host, version, &out, &err))
		ctrl_reply_err_code(resp, ERR_INTERNAL, err.data);
	else
		reply_body(resp, &out);
	buf_release(&out);
	buf_release(&err);
	return CTRL_ROUTE_DONE;
}

/* "algo-3" -> 2; -1 when malformed. */
static int algo_index(const char *algo)
{
	char *end;
	long n;

	if (!algo || strncmp(algo, "algo-", 5))
		return -1;
	n = strtol(algo + 5, &end, 10);
	if (*end || n < 1 || n > 100000)
		return -1;
	return (int)n - 1;
}

/* The longest status body kept to recognise the next heartbeat by. */
#define STATUS_KEEP_MAX (16 * 1024)

/*
 * Keeps what host reported, all of it stored (body), or forgets it (NULL):
 * the next heartbeat that says the same again is answered without parsing
 * or touching the store, so thousands of hosts cost little between changes.
 */
static void remember_status(struct ctrl_ctx *ctx, const char *host,
			    const struct buf *body)
{
	struct ctrl_host *h;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, host);
	if (h) {
		free(h->last_status);
		h->last_status = NULL;
		h->last_status_len = 0;
		if (body && body->len <= STATUS_KEEP_MAX) {
			h->last_status = xmalloc(body->len + 1);
			memcpy(h->last_status, body->data, body->len);
			h->last_status[body->len] = '\0';
			h->last_status_len = body->len;
		}
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

/*
 * A status from host, authorized: notes that it lives (*came_back: it was
 * lost) and whether body repeats the status last stored (*same). NULL
 * when the host or its token is unknown.
 */
static struct ctrl_host *status_seen(struct ctrl_ctx *ctx,
				     struct MHD_Connection *conn,
				     const char *host, const struct buf *body,
				     int *came_back, int *same)
{
	struct ctrl_host *h;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_auth(ctx, host, authorization(conn));
	if (h) {
		*came_back = h->lost;
		h->lost = 0;
		h->registered = 1;
		h->last_seen_ms = time_mono_ms();
		ctrl_host_seen(ctx, h);
		*same = h->last_status && h->last_status_len == body->len &&
			!memcmp(h->last_status, body->data, body->len);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	return h;
}

/*
 * A batch stored on an I/O worker: one whose lines belong to a job with
 * MetricDefinitions, whose regexes (bounded, controller/obs/logs.c) must not
 * hold up the HTTP thread that also answers other agents' heartbeats, or
 * any batch (and a status's samples) of a replicated controller, whose
 * copy to another member waits on the network.
 */
struct ctrl_log_step {
	struct ctrl_ctx *ctx;
	char *host;
	struct api_log_batch b;
	int fresh;  /* not a batch sent again */
	int failed; /* not on a second member (replicate.h): 503 */
	/* A status's telemetry samples, copied to another member on a
	 * worker before the status is answered (replicate.h). */
	struct tm_host_sample *samples;
	size_t n_samples;
};

/*
 * Samples make every status that carries them differ from the last: takes
 * them out of st, then compares the rest (rebuilt into bare without them,
 * as an agent that has none to send builds it) with what was stored, so
 * that the reports are not stored again for each sample. Returns whether
 * the rest is the same.
 */
static int take_samples(struct ctrl_ctx *ctx, const char *host,
			struct api_status *st, struct buf *bare,
			struct ctrl_log_step **copy)
{
	struct ctrl_host *h;
	size_t i;
	int same = 0;

	ctrl_tm_ingest(ctx, host, st->samples, st->n_samples);
	if (ctrl_repl_on()) {
		/* A replicated controller copies them before answering. */
		*copy = xcalloc(1, sizeof(**copy));
		(*copy)->ctx = ctx;
		(*copy)->host = xstrdup(host);
		(*copy)->samples = st->samples;
		(*copy)->n_samples = st->n_samples;
		st->samples = NULL;
		st->n_samples = 0;
	}
	for (i = 0; i < st->n_samples; i++)
		tm_host_sample_release(&st->samples[i]);
	FREE_AND_NULL(st->samples);
	st->n_samples = 0;
	if (api_status_build(st, bare)) {
		buf_reset(bare); /* remember nothing half built */
		return 0;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, host);
	same = h && h->last_status && h->last_status_len == bare->len &&
	       !memcmp(h->last_status, bare->data, bare->len);
	pthread_mutex_unlock(&ctx->hosts_lock);
	return same;
}

/*
 * Stores each report of st (one per assignment) and wakes the reconciler
 * for the jobs whose report changed. Returns 0 when one could not be
 * stored, else 1.
 */
static int store_reports(struct ctrl_ctx *ctx, const char *host,
			 const struct api_status *st)
{
	struct buf one = BUF_INIT;
	struct buf err = BUF_INIT;
	int stored = 1;
	size_t i;

	for (i = 0; i < st->n; i++) {
		struct api_report *r = &st->items[i];
		struct api_status single = { st->boot_id, r,	1, NULL,
					     0,		  NULL, 0, NULL };
		int idx = algo_index(r->algo);
		int ret;

		if (idx < 0)
			continue;
		buf_reset(&one);
		if (api_status_build(&single, &one))
			continue;
		buf_reset(&err);
		/* A report of an earlier job of the same name (its uid
		 * differs) finds nothing: it is acknowledged and dropped. */
		ret = db_assignment_report(ctx->db, r->job, r->job_uid,
					   r->attempt, idx, host,
					   api_phase_name(r->phase), one.data,
					   &err);
		if (ret > 0) {
			ctrl_reconciler_wake_job(ctx, r->job);
		} else if (ret < 0 && ret != ERR_NOTFOUND) {
			log_error("host '%s': cannot store report: %s", host,
				  err.data);
			stored = 0;
		}
	}
	buf_release(&one);
	buf_release(&err);
	return stored;
}

static void tm_copy_run(void *arg)
{
	struct ctrl_log_step *s = arg;

	/* Telemetry never fails a heartbeat: a failed copy is logged. */
	(void)ctrl_repl_tm_copy(s->host, s->samples, s->n_samples);
}

static enum ctrl_route_result do_status(struct ctrl_ctx *ctx,
					struct MHD_Connection *conn,
					const char *host, const char *rest,
					struct ctrl_http_req *req,
					struct ctrl_response *resp)
{
	struct api_status st;
	struct buf err = BUF_INIT;
	struct buf bare = BUF_INIT;
	struct ctrl_log_step *copy = NULL;
	int came_back = 0;
	int same = 0;
	int stored = 1;

	(void)rest;
	if (req->log_step) {
		/* Resumed: the samples are on another member. */
		reply_ok(resp);
		return CTRL_ROUTE_DONE;
	}
	if (!status_seen(ctx, conn, host, &req->body, &came_back, &same)) {
		unauthorized(resp);
		return CTRL_ROUTE_DONE;
	}
	if (came_back)
		log_info("host '%s' is back", host);
	if (same) {
		/* A heartbeat that repeats what was stored: nothing to do
		 * but note that the host lives (above). */
		if (came_back)
			ctrl_reconciler_wake(ctx);
		reply_ok(resp);
		return CTRL_ROUTE_DONE;
	}
	if (api_status_parse(req->body.data, req->body.len, &st, &err)) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION, err.data);
		buf_release(&err);
		return CTRL_ROUTE_DONE;
	}
	if (st.telemetry_error)
		log_warn("host '%s': telemetry refused: %s", host,
			 st.telemetry_error);
	if (st.n_samples)
		same = take_samples(ctx, host, &st, &bare, &copy);
	if (!same)
		stored = store_reports(ctx, host, &st);
	if (st.images_json && !same) {
		ctrl_hosts_set_images(ctx, host, st.images_json,
				      st.images_pruned);
		st.images_json = NULL;
	}
	api_status_release(&st);
	remember_status(ctx, host,
			!stored	 ? NULL :
			bare.len ? &bare :
				   &req->body);
	if (came_back)
		ctrl_reconciler_wake(ctx);
	reply_ok(resp);
	buf_release(&err);
	buf_release(&bare);
	req->log_step = copy;
	if (copy && !ctrl_iopool_run(ctx->iopool, conn, tm_copy_run, copy))
		return CTRL_ROUTE_SUSPENDED;
	return CTRL_ROUTE_DONE;
}

/*
 * Whether batch b from host h is new, and if so records it as taken:
 * batches of one agent process (boot_id) come numbered one after the
 * other, one in flight at a time, so one whose seq is not above the last
 * taken is a copy sent again (its POST timed out while the first was
 * being stored) and is acknowledged without being stored twice. Caller
 * holds hosts_lock.
 */
static int log_batch_new(struct ctrl_host *h, const struct api_log_batch *b)
{
	if (!b->boot_id || !b->seq)
		return 1; /* an older agent: nothing to tell copies by */
	if (h->log_boot_id && !strcmp(h->log_boot_id, b->boot_id) &&
	    b->seq <= h->log_seq)
		return 0;
	if (!h->log_boot_id || strcmp(h->log_boot_id, b->boot_id)) {
		free(h->log_boot_id);
		h->log_boot_id = xstrdup(b->boot_id);
	}
	h->log_seq = b->seq;
	return 1;
}

void ctrl_agent_log_step_free(struct ctrl_log_step *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n_samples; i++)
		tm_host_sample_release(&s->samples[i]);
	free(s->samples);
	api_log_batch_release(&s->b);
	free(s->host);
	free(s);
}

static void log_step_run(void *arg)
{
	struct ctrl_log_step *s = arg;

	if (s->fresh && ctrl_logs_ingest(s->ctx, s->host, &s->b))
		s->failed = 1;
	if (ctrl_repl_log_settle())
		s->failed = 1;
}

/* The answer of a stored batch: 503 when it is on this member only. */
static void reply_step(struct ctrl_response *resp, struct ctrl_log_step *s)
{
	if (s->failed)
		ctrl_reply_error(resp, 503, "ServiceUnavailable",
				 "the lines are not on a second member of "
				 "the controller yet; send them again");
	else
		reply_ok(resp);
}

static enum ctrl_route_result
do_logs(struct ctrl_ctx *ctx, struct MHD_Connection *conn, const char *host,
	const char *rest, struct ctrl_http_req *req, struct ctrl_response *resp)
{
	struct api_log_batch b;
	struct ctrl_log_step *step;
	struct ctrl_host *h;
	struct buf err = BUF_INIT;
	int ok, fresh = 0;

	(void)rest;
	if (req->log_step) {
		/* Resumed: the worker has stored it. */
		reply_step(resp, req->log_step);
		return CTRL_ROUTE_DONE;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	ok = ctrl_hosts_auth(ctx, host, authorization(conn)) != NULL;
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (!ok) {
		unauthorized(resp);
		return CTRL_ROUTE_DONE;
	}
	if (api_log_batch_parse(req->body.data, req->body.len, &b, &err)) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION, err.data);
		buf_release(&err);
		return CTRL_ROUTE_DONE;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_auth(ctx, host, authorization(conn));
	if (h)
		fresh = log_batch_new(h, &b);
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (!h) {
		api_log_batch_release(&b);
		unauthorized(resp);
		return CTRL_ROUTE_DONE;
	}
	/* A replicated controller's copy waits on the network. */
	if ((fresh && ctrl_logs_has_metric_defs(ctx, &b)) || ctrl_repl_on()) {
		step = xcalloc(1, sizeof(*step));
		step->ctx = ctx;
		step->host = xstrdup(host);
		step->b = b;
		step->fresh = fresh;
		req->log_step = step;
		if (!ctrl_iopool_run(ctx->iopool, conn, log_step_run, step))
			return CTRL_ROUTE_SUSPENDED;
		/* No pool (stopping): stored here. */
		log_step_run(step);
		reply_step(resp, step);
		return CTRL_ROUTE_DONE;
	}
	if (fresh)
		ctrl_logs_ingest(ctx, host, &b);
	else
		log_debug("host '%s': log batch %lld sent again; already "
			  "taken",
			  host, (long long)b.seq);
	api_log_batch_release(&b);
	reply_ok(resp);
	buf_release(&err);
	return CTRL_ROUTE_DONE;
}

int ctrl_artifact_path(struct ctrl_ctx *ctx, const char *job, int attempt,
		       int host_index, const char *file, struct buf *out)
{
	return buf_addf(out, "%s/artifacts/%s/%d/algo-%d-%s",
			ctx->cfg.state_dir, job, attempt, host_index + 1, file);
}

/* PUT /v1/agents/{host}/artifacts/{job}/{attempt}/{algo}/{file}[?job_uid=U] */
static enum ctrl_route_result upload_begin(struct ctrl_ctx *ctx,
					   struct MHD_Connection *conn,
					   const char *host, const char *rest,
					   struct ctrl_http_req *req,
					   struct ctrl_response *resp)
{
	const char *uid = MHD_lookup_connection_value(
		conn, MHD_GET_ARGUMENT_KIND, "job_uid");
	char job[128], algo[32], file[32];
	int attempt = 0, idx, bit, ok, n = 0;
	struct db_assignment *as = NULL;
	size_t nas = 0;
	struct buf path = BUF_INIT;
	struct buf err = BUF_INIT;
	char *slash;

	pthread_mutex_lock(&ctx->hosts_lock);
	ok = ctrl_hosts_auth(ctx, host, authorization(conn)) != NULL;
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (!ok) {
		unauthorized(resp);
		return CTRL_ROUTE_DONE;
	}
	if (sscanf(rest, "%127[A-Za-z0-9-]/%d/%31[a-z0-9-]/%31[a-z.]%n", job,
		   &attempt, algo, file, &n) != 4 ||
	    rest[n] != '\0') {
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND, "no such artifact path");
		return CTRL_ROUTE_DONE;
	}
	idx = algo_index(algo);
	bit = !strcmp(file, "model.tar.gz")  ? 1 :
	      !strcmp(file, "output.tar.gz") ? 2 :
					       0;
	if (idx < 0 || !bit) {
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND,
			       "artifact must be model.tar.gz or "
			       "output.tar.gz of an algo-N");
		return CTRL_ROUTE_DONE;
	}
	/* Fencing: only the host that holds the assignment may upload. */
	ok = !db_assignments_list(ctx->db, job, host, attempt, &as, &nas, &err);
	if (ok) {
		size_t i;

		ok = 0;
		for (i = 0; i < nas; i++)
			ok |= as[i].host_index == idx &&
			      (!uid || !as[i].job_uid ||
			       !strcmp(uid, as[i].job_uid));
	}
	db_assignments_free(as, nas);
	if (!ok) {
		ctrl_reply_err(resp, CTRL_E_CONFLICT,
			       "this host holds no such assignment");
		buf_release(&err);
		return CTRL_ROUTE_DONE;
	}
	(void)ctrl_artifact_path(ctx, job, attempt, idx, file, &path);
	req->sink_final = buf_detach(&path, NULL);
	slash = strrchr(req->sink_final, '/');
	*slash = '\0';
	(void)stor_fs_mkdirs(req->sink_final, &err);
	*slash = '/';
	(void)buf_addf(&path, "%s.tmp.XXXXXX", req->sink_final);
	req->sink_tmp = buf_detach(&path, NULL);
	req->sink_fd = mkstemp(req->sink_tmp);
	if (req->sink_fd < 0) {
		ctrl_reply_err_code(resp, ERR_IO, strerror(errno));
		return CTRL_ROUTE_DONE;
	}
	req->sink_max = ARTIFACT_MAX;
	req->sink_job = xstrdup(job);
	req->sink_attempt = attempt;
	req->sink_host_index = idx;
	req->sink_bit = bit;
	buf_release(&err);
	return CTRL_ROUTE_CONTINUE;
}

void ctrl_agent_upload_done(struct ctrl_ctx *ctx, struct ctrl_http_req *req,
			    struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	int failed = req->sink_error;

	if (!failed && fsync(req->sink_fd))
		failed = 1;
	close(req->sink_fd);
	req->sink_fd = -1;
	if (!failed && rename(req->sink_tmp, req->sink_final))
		failed = 1;
	if (failed) {
		unlink(req->sink_tmp);
		ctrl_reply_err_code(resp, ERR_IO, "cannot store the artifact");
		return;
	}
	if (db_assignment_add_artifact(ctx->db, req->sink_job,
				       req->sink_attempt, req->sink_host_index,
				       req->sink_bit, &err))
		log_warn("artifact of a vanished assignment: %s", err.data);
	log_debug("artifact %s (%lld bytes)", req->sink_final, req->sink_bytes);
	ctrl_reconciler_wake_job(ctx, req->sink_job);
	reply_ok(resp);
	buf_release(&err);
}

/* An agent endpoint: host is the path's host, rest what "*" stood for. */
typedef enum ctrl_route_result agent_fn(struct ctrl_ctx *ctx,
					struct MHD_Connection *conn,
					const char *host, const char *rest,
					struct ctrl_http_req *req,
					struct ctrl_response *resp);

/* An agent endpoint's handler, the arg of its row. */
struct agent_ep {
	agent_fn *fn;
};

static const struct agent_ep ep_register = { do_register },
			     ep_work = { do_work }, ep_status = { do_status },
			     ep_logs = { do_logs },
			     ep_upload = { upload_begin };

/* Calls the row's agent_fn with the path's host and "*". */
static enum ctrl_route_result
agent_call(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	   const char *method, const char *url, struct ctrl_http_req *req,
	   struct ctrl_response *resp, const char **content_type)
{
	const struct agent_ep *ep = req->route->arg;
	struct ctrl_route_params p;
	char host[128] = "";

	(void)method;
	*content_type = "application/json";
	if (!ctrl_route_match(req->route->pattern, url, &p) ||
	    (p.n && p.len[0] >= sizeof(host))) {
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND, "no such path");
		return CTRL_ROUTE_DONE;
	}
	if (p.n) {
		memcpy(host, p.s[0], p.len[0]);
		host[p.len[0]] = '\0';
	}
	return ep->fn(ctx, conn, host, p.n > 1 ? p.s[1] : "", req, resp);
}

#define AGENT_ROW(method_, pattern_, body_, fn_)                       \
	CTRL_ROW(CTRL_LISTEN_BOTH, method_, CTRL_MATCH_PATH, pattern_, \
		 CTRL_AUTH_AGENT, body_, fn_)

/* A row whose handler is ep's, with the path's host (agent_call). */
#define AGENT_EP(method_, pattern_, ep_)                                      \
	{                                                                     \
		AGENT_ROW(method_, pattern_, CTRL_BODY_BUFFERED, agent_call), \
			.arg = &(ep_)                                         \
	}

static const struct ctrl_refusal no_such_path = { CTRL_E_NOT_FOUND,
						  "no such path",
						  "application/json" };

/*
 * The agents' endpoints (docs/agent-protocol.md). Every handler checks the
 * host's agent token itself (ctrl_hosts_auth()): register names its host
 * in the body, the others in the path. An artifact upload is set up at
 * the headers and streams to a file; any other PUT under /v1/agents/ is
 * refused before its body is read.
 */
static const struct ctrl_route rows[] = {
	AGENT_EP("POST", "/v1/agents/register", ep_register),
	AGENT_EP("GET", "/v1/agents/{}/work", ep_work),
	AGENT_EP("POST", "/v1/agents/{}/status", ep_status),
	AGENT_EP("POST", "/v1/agents/{}/logs", ep_logs),
	{ AGENT_ROW("PUT", "/v1/agents/{}/artifacts/*", CTRL_BODY_FILE,
		    agent_call),
	  .arg = &ep_upload, .done = ctrl_agent_upload_done },
	{ AGENT_ROW("PUT", "/v1/agents/*", CTRL_BODY_NONE, ctrl_route_refuse),
	  .arg = &no_such_path, .refusal = 1 },
	{ AGENT_ROW("*", "/v1/agents/*", CTRL_BODY_BUFFERED, ctrl_route_refuse),
	  .arg = &no_such_path, .refusal = 1 },
};

const struct ctrl_route_block ctrl_agent_routes = CTRL_ROUTE_BLOCK(rows);
