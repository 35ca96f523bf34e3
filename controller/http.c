#define LOG_TAG "http"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <errno.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/rand.h>

#include "api/cwmetrics.h"
#include "api/sigv4.h"
#include "storage/s3d/blob.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/iopool.h"
#include "controller/obs/cwlogs.h"
#include "controller/obs/cwmetrics.h"
#include "controller/http.h"
#include "controller/obs/logview.h"
#include "controller/route.h"
#include "controller/obs/metrics.h"
#include "controller/obs/telemetry.h"
#include "controller/uris.h"
#include "controller/ops.h"
#include "controller/rendezvous.h"
#include "controller/obs/web.h"
#include "db/db.h"
#include "db/run.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MAX_HEADERS 64
#define MAX_QUERY_ARGS 32
#define URI_MAX 8192
#define JSON11 "application/x-amz-json-1.1"

#define request ctrl_http_req

static struct request *new_request(struct ctrl_ctx *ctx, const char *uri)
{
	struct request *req = xcalloc(1, sizeof(*req));

	req->raw_uri = xstrndup(uri, strnlen(uri, URI_MAX));
	buf_init(&req->body, (size_t)ctx->cfg.body_max);
	req->sink_fd = -1;
	req->t0_us = time_mono_us();
	req->caller = ctrl_caller_admin;
	return req;
}

static void *uri_logger(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)c;
	return new_request(cls, uri);
}

/* The same for --agent-listen. */
static void *agent_uri_logger(void *cls, const char *uri,
			      struct MHD_Connection *c)
{
	struct request *req = new_request(cls, uri);

	(void)c;
	req->agent_port = 1;
	return req;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct ctrl_ctx *ctx = cls;
	struct request *req = *con_cls;

	(void)toe;
	/* The next request on a kept-alive connection has the short
	 * header timeout again, or one slow client could hold it. */
	(void)MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
					(unsigned)ctx->cfg.header_timeout_s);
	if (!req)
		return;
	if (req->sink_fd >= 0) {
		/* An upload that did not finish leaves nothing behind. */
		close(req->sink_fd);
		unlink(req->sink_tmp);
	}
	s3d_blob_free(req->blob);
	if (req->s3_done)
		s3d_reply_release(&req->s3_reply);
	s3d_free(req->s3);
	ctrl_logsearch_free(req->logsearch);
	ctrl_agent_log_step_free(req->log_step);
	free(req->fence);
	free(req->sink_tmp);
	free(req->sink_final);
	free(req->sink_job);
	buf_release(&req->body);
	free(req->raw_uri);
	free(req);
	*con_cls = NULL;
}

/*
 * A request id in UUID v4 form. Ids need to be unique, not secret: each
 * thread draws 16 random bytes once and then counts, which costs nothing
 * per request (RAND_bytes was a few percent of a Describe).
 */
static void request_id(char out[37])
{
	static _Thread_local unsigned char seed[16];
	static _Thread_local uint64_t count;
	static const char hex[] = "0123456789abcdef";
	unsigned char b[16];
	uint64_t c;
	int i, j = 0;

	if (!count && RAND_bytes(seed, sizeof(seed)) != 1)
		memset(seed, 0, sizeof(seed));
	c = ++count;
	memcpy(b, seed, sizeof(b));
	for (i = 15; i >= 8; i--) {
		b[i] ^= (unsigned char)c;
		c >>= 8;
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[j++] = '-';
		out[j++] = hex[b[i] >> 4];
		out[j++] = hex[b[i] & 15];
	}
	out[j] = '\0';
}

static enum MHD_Result send_response(struct MHD_Connection *conn,
				     struct ctrl_response *r,
				     const char *content_type,
				     const char *method, const char *uri,
				     const struct request *req)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;
	char rid[37];
	size_t len;
	char *data;

	request_id(rid);
	data = buf_detach(&r->body, &len);
	mr = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	if (!mr) {
		free(data);
		return MHD_NO;
	}
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
				r->content_type ? r->content_type :
						  content_type);
	if (r->disposition)
		MHD_add_response_header(mr, "Content-Disposition",
					r->disposition);
	MHD_add_response_header(mr, "x-amzn-RequestId", rid);
	if (r->query_error)
		MHD_add_response_header(mr, "x-amzn-query-error",
					r->query_error);
	if (!strcmp(content_type, "application/cbor"))
		MHD_add_response_header(mr, "smithy-protocol", "rpc-v2-cbor");
	ret = MHD_queue_response(conn, (unsigned)r->status, mr);
	MHD_destroy_response(mr);
	if (r->status >= 400)
		log_info("%s %s -> %d %s (%lld us)", method, uri, r->status,
			 r->error_type ? r->error_type : "",
			 (long long)(time_mono_us() - req->t0_us));
	else
		log_debug("%s %s -> %d (%lld us)", method, uri, r->status,
			  (long long)(time_mono_us() - req->t0_us));
	return ret;
}

struct header_list {
	struct api_header items[MAX_HEADERS];
	size_t n;
	int overflow;
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind,
				      const char *key, const char *value)
{
	struct header_list *h = cls;

	(void)kind;
	if (h->n == MAX_HEADERS) {
		h->overflow = 1;
		return MHD_NO;
	}
	h->items[h->n].name = key;
	h->items[h->n].value = value ? value : "";
	h->n++;
	return MHD_YES;
}

/* service: the SigV4 service the request is signed for, NULL: the
 * API's (sagemaker, or logs for CloudWatch Logs targets). */
static int authenticate(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			const char *method, struct request *req,
			const char *service, struct ctrl_response *resp)
{
	const struct api_credential *who = NULL;
	struct header_list h;
	struct api_sigv4_request sr;
	struct buf err = BUF_INIT;
	const char *target;
	const char *type = NULL;
	int status = 403;
	int ret;

	if (!ctx->auth_enabled)
		return 0;
	h.n = 0;
	h.overflow = 0;
	MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, &h);
	if (h.overflow) {
		ctrl_reply_err(resp, CTRL_E_SIGNATURE,
			       "too many request headers");
		return ERR_AUTH;
	}
	sr.method = method;
	sr.raw_uri = req->raw_uri;
	sr.headers = h.items;
	sr.n_headers = h.n;
	sr.body = req->body.data;
	sr.body_len = req->body.len;
	/* CloudWatch Logs clients sign for their own service. */
	target = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					     "X-Amz-Target");
	if (!service)
		service = target && !strncmp(target, "Logs_", 5) ? "logs" :
								   "sagemaker";
	ret = api_sigv4_verify_as(&sr, &ctx->creds, service, time_now_ms(),
				  &type, &status, &err, &who);
	if (!ret && who)
		ctrl_caller_of(who, &req->caller);
	if (ret)
		ctrl_reply_error(resp, status,
				 type ? type : "IncompleteSignature", err.data);
	buf_release(&err);
	return ret;
}

static int media_type_ok(const char *ct)
{
	if (!ct)
		return 1;
	return !strncasecmp(ct, JSON11, strlen(JSON11)) ||
	       !strncasecmp(ct, "application/json", 16);
}

struct query_list {
	struct api_query_arg items[MAX_QUERY_ARGS];
	size_t n;
	int overflow;
};

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind,
				     const char *key, const char *value)
{
	struct query_list *q = cls;

	(void)kind;
	if (q->n == MAX_QUERY_ARGS) {
		q->overflow = 1;
		return MHD_NO;
	}
	q->items[q->n].name = key;
	q->items[q->n].value = value ? value : "";
	q->n++;
	return MHD_YES;
}

#define WAIT_MAX_S 60

/*
 * GET /v1/training-jobs/NAME?wait=S&etag=E, a trainctl extension: the
 * Describe answer once it differs from the one whose api_body_etag() is E,
 * or after S seconds (at most 60), whichever comes first. The request is
 * parked on ctx->job_waiters (no thread held) and looks again whenever a
 * job changes. Without wait and etag: a plain Describe.
 */
static enum ctrl_route_result
describe_wait(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	      struct request *req, const char *name, struct ctrl_response *resp)
{
	const char *wait = MHD_lookup_connection_value(
		conn, MHD_GET_ARGUMENT_KIND, "wait");
	const char *etag = MHD_lookup_connection_value(
		conn, MHD_GET_ARGUMENT_KIND, "etag");
	int64_t wait_us = wait ? (int64_t)atoi(wait) * 1000000 : 0;
	int64_t waited_us, version;
	char now[17];
	int tries;

	if (wait_us > (int64_t)WAIT_MAX_S * 1000000)
		wait_us = (int64_t)WAIT_MAX_S * 1000000;
	req->resumed = 0;
	for (tries = 0; tries < 3; tries++) {
		pthread_mutex_lock(&ctx->hosts_lock);
		version = ctx->job_version;
		pthread_mutex_unlock(&ctx->hosts_lock);
		buf_reset(&resp->body);
		ctrl_job_describe(ctx, &req->caller, name, resp);
		if (!etag || wait_us <= 0 || resp->status != 200)
			return CTRL_ROUTE_DONE;
		api_body_etag(resp->body.data, resp->body.len, now);
		waited_us = time_mono_us() - req->t0_us;
		if (strcmp(now, etag) || waited_us >= wait_us ||
		    __atomic_load_n(&ctx->stopping, __ATOMIC_RELAXED))
			return CTRL_ROUTE_DONE;
		/* Park, unless a job changed since the answer was read. */
		pthread_mutex_lock(&ctx->hosts_lock);
		if (ctx->job_version == version) {
			req->suspended = 1;
			MHD_suspend_connection(conn);
			ctrl_waiter_add(ctx, &ctx->job_waiters, conn, &req->resumed,
					time_mono_ms() +
						(wait_us - waited_us) / 1000 +
						1);
			pthread_mutex_unlock(&ctx->hosts_lock);
			return CTRL_ROUTE_SUSPENDED;
		}
		pthread_mutex_unlock(&ctx->hosts_lock);
	}
	return CTRL_ROUTE_DONE;
}

/* A REST handler: p holds what the pattern's "{}" and "*" stood for. */
typedef enum ctrl_route_result rest_fn(struct ctrl_ctx *ctx,
				       struct MHD_Connection *conn,
				       struct request *req, const char *param,
				       struct ctrl_response *resp);

static enum ctrl_route_result rest_hosts(struct ctrl_ctx *ctx,
					 struct MHD_Connection *conn,
					 struct request *req, const char *param,
					 struct ctrl_response *resp)
{
	(void)conn;
	(void)param;
	ctrl_hosts_list(ctx, &req->caller, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_drain(struct ctrl_ctx *ctx,
					 struct MHD_Connection *conn,
					 struct request *req, const char *param,
					 struct ctrl_response *resp)
{
	(void)conn;
	ctrl_hosts_drain_route(ctx, param, req->body.data, req->body.len, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_host_images(struct ctrl_ctx *ctx,
					       struct MHD_Connection *conn,
					       struct request *req,
					       const char *param,
					       struct ctrl_response *resp)
{
	const char *slash = strchr(param, '/');

	(void)req;
	if (slash && !strcmp(slash, "/telemetry")) {
		ctrl_tm_series_route(
			ctx, param,
			MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
						    "start"),
			MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
						    "end"),
			resp);
		return CTRL_ROUTE_DONE;
	}
	ctrl_hosts_images_route(ctx, param, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_list(struct ctrl_ctx *ctx,
					struct MHD_Connection *conn,
					struct request *req, const char *param,
					struct ctrl_response *resp)
{
	struct query_list q;

	(void)param;
	q.n = 0;
	q.overflow = 0;
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_query,
				  &q);
	if (q.overflow)
		ctrl_reply_err(resp, CTRL_E_VALIDATION,
			       "too many query parameters");
	else
		ctrl_op_list_query(ctx, &req->caller, q.items, q.n, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result
rest_create(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	    struct request *req, const char *param, struct ctrl_response *resp)
{
	(void)conn;
	(void)param;
	ctrl_op_create(ctx, &req->caller, req->body.data, req->body.len, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_describe(struct ctrl_ctx *ctx,
					    struct MHD_Connection *conn,
					    struct request *req,
					    const char *param,
					    struct ctrl_response *resp)
{
	return describe_wait(ctx, conn, req, param, resp);
}

static enum ctrl_route_result
rest_delete(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	    struct request *req, const char *param, struct ctrl_response *resp)
{
	(void)conn;
	ctrl_job_delete(ctx, &req->caller, param, resp);
	return CTRL_ROUTE_DONE;
}

/* Stop and logs say whether the caller may see the job first. */
static int job_visible(struct ctrl_ctx *ctx, struct request *req,
		       const char *name, struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	int ret = ctrl_caller_check_job(ctx, &req->caller, name, &err);

	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	buf_release(&err);
	return !ret;
}

static enum ctrl_route_result rest_stop(struct ctrl_ctx *ctx,
					struct MHD_Connection *conn,
					struct request *req, const char *param,
					struct ctrl_response *resp)
{
	(void)conn;
	if (job_visible(ctx, req, param, resp))
		ctrl_job_stop(ctx, &req->caller, param, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_logs(struct ctrl_ctx *ctx,
					struct MHD_Connection *conn,
					struct request *req, const char *param,
					struct ctrl_response *resp)
{
	if (!job_visible(ctx, req, param, resp))
		return CTRL_ROUTE_DONE;
	return ctrl_logs_route(ctx, conn, param, req, resp);
}

static enum ctrl_route_result rest_log_streams(struct ctrl_ctx *ctx,
					       struct MHD_Connection *conn,
					       struct request *req,
					       const char *param,
					       struct ctrl_response *resp)
{
	(void)conn;
	if (job_visible(ctx, req, param, resp))
		ctrl_logview_streams(ctx, param, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_log_search(struct ctrl_ctx *ctx,
					      struct MHD_Connection *conn,
					      struct request *req,
					      const char *param,
					      struct ctrl_response *resp)
{
	if (!job_visible(ctx, req, param, resp))
		return CTRL_ROUTE_DONE;
	return ctrl_logview_search(ctx, conn, param, &req->logsearch, resp);
}

static enum ctrl_route_result rest_log_download(struct ctrl_ctx *ctx,
						struct MHD_Connection *conn,
						struct request *req,
						const char *param,
						struct ctrl_response *resp)
{
	if (job_visible(ctx, req, param, resp))
		ctrl_logview_download(ctx, conn, param, resp);
	return CTRL_ROUTE_DONE;
}

#define JOB_METHODS "method not allowed on this resource"

/*
 * The REST face. The path decides first: an unknown one is 404; then an
 * admin key where one is needed, a job name checked against the service
 * model (job_name), and last the method (405 with `allow`, or 404 where
 * allow is NULL). The JSON bodies are the JSON 1.1 ones, so every route
 * ends in the same handlers.
 */
static const struct rest_route {
	const char *method;
	const char *pattern;
	int admin;    /* needs an admin key */
	int job_name; /* the "{}" is a TrainingJobName */
	rest_fn *fn;
	const char *allow;
} rest_routes[] = {
	{ "GET", "/v1/hosts", 0, 0, rest_hosts, NULL },
	{ "POST", "/v1/hosts/*", 1, 0, rest_drain,
	  "use POST on /v1/hosts/<name>/drain, /undrain and /images/prune, "
	  "GET on /v1/hosts/<name>/images and /telemetry" },
	{ "GET", "/v1/hosts/*", 0, 0, rest_host_images, NULL },
	{ "GET", "/v1/training-jobs", 0, 0, rest_list,
	  "use GET or POST on /v1/training-jobs" },
	{ "POST", "/v1/training-jobs", 0, 0, rest_create,
	  "use GET or POST on /v1/training-jobs" },
	{ "GET", "/v1/training-jobs/", 0, 0, rest_list,
	  "use GET or POST on /v1/training-jobs" },
	{ "POST", "/v1/training-jobs/", 0, 0, rest_create,
	  "use GET or POST on /v1/training-jobs" },
	{ "GET", "/v1/training-jobs/{}", 0, 1, rest_describe, JOB_METHODS },
	{ "DELETE", "/v1/training-jobs/{}", 0, 1, rest_delete, JOB_METHODS },
	{ "POST", "/v1/training-jobs/{}/stop", 0, 1, rest_stop, JOB_METHODS },
	{ "GET", "/v1/training-jobs/{}/logs", 0, 1, rest_logs,
	  "use GET on logs" },
	{ "GET", "/v1/training-jobs/{}/logs/streams", 0, 1, rest_log_streams,
	  "use GET on logs" },
	{ "GET", "/v1/training-jobs/{}/logs/search", 0, 1, rest_log_search,
	  "use GET on logs" },
	{ "GET", "/v1/training-jobs/{}/logs/download", 0, 1, rest_log_download,
	  "use GET on logs" },
};

/* Checks the "{}" of a job route; fills resp when it is no job name. */
static int job_name_ok(const char *name, size_t len, struct ctrl_response *resp,
		       struct buf *out)
{
	struct buf err = BUF_INIT;
	int ok = 1;

	if (buf_add(out, name, len)) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION, "job name too long");
		return 0;
	}
	if (api_job_name_check(out->data, &err)) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION,
			       err.len ? err.data : "invalid job name");
		ok = 0;
	}
	buf_release(&err);
	return ok;
}

static enum ctrl_route_result route_rest(struct ctrl_ctx *ctx,
					 struct MHD_Connection *conn,
					 const char *method, const char *url,
					 struct request *req,
					 struct ctrl_response *resp)
{
	const struct rest_route *path_match = NULL, *r = NULL;
	struct ctrl_route_params p, q;
	struct buf param = BUF_INIT_MAX(256);
	enum ctrl_route_result res = CTRL_ROUTE_DONE;
	size_t i;

	/* The routes of one path share its pattern: the first one's
	 * parameters (p) serve whichever method matches. */
	for (i = 0; i < sizeof(rest_routes) / sizeof(rest_routes[0]); i++) {
		if (!ctrl_route_match(rest_routes[i].pattern, url, &q))
			continue;
		if (!path_match) {
			path_match = &rest_routes[i];
			p = q;
		}
		if (!strcmp(rest_routes[i].method, method)) {
			r = &rest_routes[i];
			break;
		}
	}
	if (!path_match || (!r && !path_match->allow)) {
		ctrl_reply_err(resp, CTRL_E_NO_SUCH_PATH, "no such resource");
		goto out;
	}
	if ((r ? r : path_match)->admin && !req->caller.admin) {
		ctrl_reply_err(resp, CTRL_E_ACCESS_DENIED,
			       "changing hosts (drain, undrain, prune) needs "
			       "an admin key");
		goto out;
	}
	if (path_match->job_name &&
	    !job_name_ok(p.s[0], p.len[0], resp, &param))
		goto out;
	if (!r) {
		ctrl_reply_err(resp, CTRL_E_METHOD, path_match->allow);
		goto out;
	}
	/* A "*" stands for the rest of the path: url's own tail. */
	res = r->fn(ctx, conn, req,
		    path_match->job_name ? param.data :
		    p.n			 ? p.s[0] :
					   "",
		    resp);
out:
	buf_release(&param);
	return res;
}

/*
 * A browser may hold credentials for the status page; a page of another
 * origin must not use them to change anything. Requests that change state
 * must come from our own origin (or from a program, which sends neither
 * Origin nor Sec-Fetch-Site).
 */
static int cross_site(struct MHD_Connection *conn, const char *method)
{
	const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						       "Sec-Fetch-Site");
	const char *origin =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						       MHD_HTTP_HEADER_HOST);
	const char *o;

	if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
		return 0;
	if (site && strcmp(site, "same-origin") && strcmp(site, "none"))
		return 1;
	if (!origin)
		return 0;
	o = strstr(origin, "://");
	o = o ? o + 3 : origin;
	return !host || strcmp(o, host);
}

static enum ctrl_route_result
route(struct ctrl_ctx *ctx, struct MHD_Connection *conn, const char *method,
      const char *url, struct request *req, struct ctrl_response *resp,
      const char **content_type)
{
	const char *target;
	const char *ct;
	ctrl_op_fn fn;
	int cw;

	*content_type = JSON11;
	if (!strcmp(url, "/healthz")) {
		resp->status = 200;
		(void)buf_adds(&resp->body, "{\"status\":\"ok\"}");
		*content_type = "application/json";
		return CTRL_ROUTE_DONE;
	}
	if (!strncmp(url, "/v1/agents/", 11)) {
		/* Agents authenticate with their host token. */
		*content_type = "application/json";
		return ctrl_agent_route(ctx, conn, method, url, req, resp);
	}
	if (!strncmp(url, "/v1/rendezvous/", 15))
		/* Ranks authenticate with their attempt's token. */
		return ctrl_rdzv_route(ctx, conn, method, url, req, resp,
				       content_type);
	if (cross_site(conn, method)) {
		ctrl_reply_err(resp, CTRL_E_FORBIDDEN,
			       "cross-site requests may not change state");
		return CTRL_ROUTE_DONE;
	}
	/* CloudWatch metrics requests, in any of its protocols. */
	cw = ctrl_cwm_proto(
		method, url,
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					    "X-Amz-Target"),
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					    MHD_HTTP_HEADER_CONTENT_TYPE));
	/* Browsers sign in with HTTP Basic, programs with SigV4 (web.h). */
	switch (ctrl_web_auth(ctx, conn, method, url, &req->caller)) {
	case CTRL_WEB_AUTH_DENIED:
		return CTRL_ROUTE_QUEUED;
	case CTRL_WEB_AUTH_NONE:
		if (authenticate(ctx, conn, method, req,
				 cw >= 0 ? CTRL_CWM_SERVICE : NULL, resp)) {
			if (cw >= 0)
				ctrl_cwm_wrap_error(cw, resp, content_type);
			return CTRL_ROUTE_DONE;
		}
		break;
	case CTRL_WEB_AUTH_OK:
		break;
	}
	if (ctrl_web_owns(conn, method, url))
		return ctrl_web_route(ctx, conn, method, url, req, resp,
				      content_type);
	if (cw >= 0) {
		ctrl_cwm_serve(ctx, &req->caller, cw, method, url,
			       MHD_lookup_connection_value(
				       conn, MHD_HEADER_KIND, "X-Amz-Target"),
			       req->body.data, req->body.len, resp,
			       content_type);
		return CTRL_ROUTE_DONE;
	}
	if (!strncmp(url, "/v1/", 4)) {
		*content_type = "application/json";
		return route_rest(ctx, conn, method, url, req, resp);
	}
	target = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					     "X-Amz-Target");
	if (strcmp(method, "POST") || !target) {
		ctrl_reply_err(resp, CTRL_E_UNKNOWN_OPERATION,
			       "requests must be POST with an X-Amz-Target "
			       "header (or use the /v1/ REST paths)");
		return CTRL_ROUTE_DONE;
	}
	ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!media_type_ok(ct)) {
		ctrl_reply_err(resp, CTRL_E_MEDIA_TYPE,
			       "Content-Type must be "
			       "application/x-amz-json-1.1");
		return CTRL_ROUTE_DONE;
	}
	fn = ctrl_op_lookup(target);
	if (!fn)
		fn = ctrl_cwlogs_lookup(target);
	if (!fn) {
		struct buf msg = BUF_INIT_MAX(512);

		(void)buf_addf(&msg, "operation '%.200s' is not supported",
			       target);
		ctrl_reply_err(resp, CTRL_E_UNKNOWN_OPERATION, msg.data);
		buf_release(&msg);
		return CTRL_ROUTE_DONE;
	}
	fn(ctx, &req->caller, req->body.data, req->body.len, resp);
	return CTRL_ROUTE_DONE;
}

static const char *query(struct MHD_Connection *conn, const char *key)
{
	return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
}

/*
 * Blobs are the embedded store's bytes: with credentials configured they
 * need a host's agent token (agents) or a SigV4 signature by the API's
 * credentials for service s3 with an unsigned payload, as S3 clients
 * sign a streamed body (trainctl cp / upload-source); without, the API
 * itself is open on loopback and so are they.
 */
/* "bucket/key" of the blob url names; a listing of bucket B under prefix P
 * is a request for "B/P". */
static void blob_key(struct MHD_Connection *conn, const char *url,
		     struct buf *bk)
{
	const char *path = url + strlen(S3D_BLOB_PREFIX);
	const char *prefix = MHD_lookup_connection_value(
		conn, MHD_GET_ARGUMENT_KIND, "prefix");

	(void)buf_addf(bk, "%s%s%s", path, strchr(path, '/') ? "" : "/",
		       strchr(path, '/') ? "" : (prefix ? prefix : ""));
}

/* Whether a user key may reach the blob url names (its S3 prefixes). */
static int blob_in_prefixes(const struct api_credential *who,
			    struct MHD_Connection *conn, const char *url)
{
	struct buf bk = BUF_INIT;
	int ok;

	if (who->admin)
		return 1;
	blob_key(conn, url, &bk);
	ok = api_credential_s3_allowed(who, bk.data);
	buf_release(&bk);
	return ok;
}

/* Whether the credentials hold a key that is not admin. */
static int has_user_keys(const struct ctrl_ctx *ctx)
{
	size_t i;

	for (i = 0; i < ctx->creds.n; i++)
		if (!ctx->creds.items[i].admin)
			return 1;
	return 0;
}

/* Whether host holds an assignment of job (any attempt still stored). */
static int host_runs_job(struct ctrl_ctx *ctx, const char *host,
			 const char *job)
{
	struct db_assignment *as = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0;

	if (db_assignments_list(ctx->db, job, host, 0, &as, &n, &err))
		log_warn("job '%.128s': %s", job, err.data);
	db_assignments_free(as, n);
	buf_release(&err);
	return n > 0;
}

/*
 * A host token reaches what the job its agent names (X-Trainctl-Job, or
 * the job of X-Trainctl-Fence) may: the S3 prefixes of the job owner's
 * keys, every object for an admin's job. With user keys configured, a
 * request that names no job reaches nothing, and neither does one naming
 * a job the token's host holds no work of: the token alone is no licence
 * to another user's objects, nor to an admin's job run elsewhere.
 */
static int blob_for_job(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			const char *host, const char *url)
{
	const char *job = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						      "X-Trainctl-Job");
	const char *fence = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							"X-Trainctl-Fence");
	struct buf name = BUF_INIT_MAX(256);
	struct buf bk = BUF_INIT;
	struct buf err = BUF_INIT;
	char *owner = NULL;
	int ok = 0;

	if (!has_user_keys(ctx))
		return 1;
	if (job)
		(void)buf_adds(&name, job);
	else if (fence)
		(void)buf_add(&name, fence, strcspn(fence, "/"));
	if (!name.len) {
		log_info("blob request refused: a host token names no job "
			 "for '%.200s'",
			 url);
		goto out;
	}
	if (db_job_owner(ctx->db, name.data, &owner, &err)) {
		log_info("blob request refused: job '%.128s': %s", name.data,
			 err.data);
		goto out;
	}
	if (!host_runs_job(ctx, host, name.data)) {
		log_info("blob request refused: host '%s' holds no work of job "
			 "'%.128s'",
			 host, name.data);
		goto out;
	}
	blob_key(conn, url, &bk);
	ok = ctrl_uris_owner_allows(ctx, owner, bk.data);
	if (!ok)
		log_info("blob request refused: '%.200s' is outside the S3 "
			 "prefixes of the owner of job '%.128s'",
			 url, name.data);
out:
	free(owner);
	buf_release(&name);
	buf_release(&bk);
	buf_release(&err);
	return ok;
}

static int blob_allowed(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			const char *method, const char *url,
			const struct request *req)
{
	const struct api_credential *who = NULL;
	const char *auth = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	struct api_sigv4_request sr;
	struct buf err = BUF_INIT;
	struct header_list h;
	const char *type = NULL;
	char *host = NULL;
	int status = 403;
	size_t i;
	int ok = 0;

	if (!ctx->auth_enabled)
		return 1;
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts && !host; i++)
		if (s3d_blob_auth_ok(auth, ctx->hosts[i]->token))
			host = xstrdup(ctx->hosts[i]->name);
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (host) {
		ok = blob_for_job(ctx, conn, host, url);
		free(host);
		return ok;
	}
	if (!auth || strncmp(auth, "AWS4-HMAC-SHA256 ", 17))
		return ok;
	h.n = 0;
	h.overflow = 0;
	MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, &h);
	if (h.overflow)
		return 0;
	memset(&sr, 0, sizeof(sr));
	sr.method = method;
	sr.raw_uri = req->raw_uri;
	sr.headers = h.items;
	sr.n_headers = h.n;
	/* No body here: only an UNSIGNED-PAYLOAD signature can verify. */
	sr.body = "";
	sr.body_len = 0;
	ok = !api_sigv4_verify_as(&sr, &ctx->creds, "s3", time_now_ms(), &type,
				  &status, &err, &who);
	if (!ok)
		log_info("blob request refused: %s", err.data);
	if (ok && who && !blob_in_prefixes(who, conn, url)) {
		log_info("blob request refused: '%.200s' is outside the S3 "
			 "prefixes of key %s",
			 url, who->access_key_id);
		ok = 0;
	}
	buf_release(&err);
	return ok;
}

/*
 * Checkpoint uploads of an agent name their attempt (X-Trainctl-Fence:
 * job/uid/attempt). An object of an attempt that is no longer the job's
 * current one must never become visible: a host that was paused may
 * resume and upload before its lease timer fires, after the next attempt
 * began. So the PUT is refused when it starts and again right before the
 * object is committed, if the job is gone, ended, or has moved on.
 */
static int fence_stale(struct ctrl_ctx *ctx, const char *fence, struct buf *why)
{
	char job[128], uid[32];
	struct db_job j;
	struct buf err = BUF_INIT;
	int attempt, n = 0, stale;

	if (sscanf(fence, "%127[^/]/%31[^/]/%d%n", job, uid, &attempt, &n) !=
		    3 ||
	    fence[n]) {
		(void)buf_adds(why, "malformed X-Trainctl-Fence");
		return 1;
	}
	if (db_job_get(ctx->db, job, &j, &err)) {
		(void)buf_addf(why, "job '%s' is gone", job);
		buf_release(&err);
		return 1;
	}
	stale = (j.uid && strcmp(j.uid, uid)) || j.attempt != attempt ||
		strcmp(j.status, "InProgress");
	if (stale)
		(void)buf_addf(why,
			       "attempt %d of job '%s' is fenced: the job is "
			       "%s at attempt %d",
			       attempt, job, j.status, j.attempt);
	db_job_release(&j);
	buf_release(&err);
	return stale;
}

static void fence_check(struct ctrl_ctx *ctx, struct request *req)
{
	struct buf why = BUF_INIT;

	if (req->fence && fence_stale(ctx, req->fence, &why)) {
		log_info("checkpoint upload refused: %s", why.data);
		s3d_blob_fence(req->blob, why.data);
	}
	buf_release(&why);
}

/*
 * A response sending size bytes of *fd from offset (MHD then owns the
 * descriptor: *fd becomes -1), or, when *fd < 0, a copy of body.
 */
static struct MHD_Response *
file_or_buffer(int *fd, uint64_t offset, uint64_t size, const struct buf *body)
{
	struct MHD_Response *mr;

	if (*fd < 0)
		return MHD_create_response_from_buffer(body->len, body->data,
						       MHD_RESPMEM_MUST_COPY);
	mr = MHD_create_response_from_fd_at_offset64(size, *fd, offset);
	if (mr)
		*fd = -1;
	return mr;
}

static enum MHD_Result send_blob(struct ctrl_ctx *ctx,
				 struct MHD_Connection *conn,
				 struct request *req, const char *method,
				 const char *url)
{
	struct s3d_blob_reply reply;
	struct MHD_Response *mr;
	enum MHD_Result ret;
	char rid[37];

	fence_check(ctx, req);
	s3d_blob_finish(req->blob, &reply);
	mr = file_or_buffer(&reply.fd, 0, reply.size, &reply.body);
	if (!mr) {
		s3d_blob_reply_release(&reply);
		return MHD_NO;
	}
	request_id(rid);
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
				reply.content_type ? reply.content_type :
						     "application/json");
	MHD_add_response_header(mr, "x-amzn-RequestId", rid);
	if (reply.last_modified[0])
		MHD_add_response_header(mr, MHD_HTTP_HEADER_LAST_MODIFIED,
					reply.last_modified);
	ret = MHD_queue_response(conn, (unsigned)reply.status, mr);
	MHD_destroy_response(mr);
	log_debug("%s %s -> %d (%lld us)", method, url, reply.status,
		  (long long)(time_mono_us() - req->t0_us));
	s3d_blob_reply_release(&reply);
	return ret;
}

/* Queues the reply of an S3 request (storage/s3d/s3d.h). */
/* The S3 step that may wait on the disk: on an I/O worker when it can. */
static void s3_finish_job(void *arg)
{
	struct request *req = arg;

	s3d_finish(req->s3, &req->s3_reply);
	req->s3_done = 1;
}

/* Queues what s3_finish_job() left (and releases it). */
static enum MHD_Result send_s3(struct MHD_Connection *conn, struct request *req,
			       const char *method)
{
	struct s3d_reply reply = req->s3_reply;
	struct MHD_Response *mr;
	enum MHD_Result ret;
	size_t i;

	req->s3_done = 0; /* the reply is ours now */
	mr = file_or_buffer(&reply.fd, reply.offset, reply.size, &reply.body);
	if (!mr) {
		s3d_reply_release(&reply);
		return MHD_NO;
	}
	for (i = 0; i < reply.n_headers; i++)
		MHD_add_response_header(mr, reply.name[i], reply.value[i]);
	ret = MHD_queue_response(conn, (unsigned)reply.status, mr);
	MHD_destroy_response(mr);
	ctrl_metrics_request(conn, method, "/s3", reply.status,
			     time_mono_us() - req->t0_us);
	if (reply.status >= 400)
		log_info("S3 %s %s -> %d (%lld us)", s3d_op_name(req->s3),
			 req->raw_uri, reply.status,
			 (long long)(time_mono_us() - req->t0_us));
	else
		log_debug("S3 %s %s -> %d (%lld us)", s3d_op_name(req->s3),
			  req->raw_uri, reply.status,
			  (long long)(time_mono_us() - req->t0_us));
	s3d_reply_release(&reply);
	return ret;
}

/* Whether the request announces a body. */
static int has_body(struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (cl && strtoll(cl, NULL, 10) > 0) ||
	       MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/* Starts an S3 request when it is one; 1 when it was. */
static int start_s3(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
		    const char *method, const char *url, struct request *req)
{
	struct s3d_req sr;
	struct header_list h;

	/* The API's and the agents' requests, without collecting headers:
	 * never S3 unless a Host names a bucket (s3d_claims()). */
	if (!ctx->s3.domain &&
	    (!strncmp(url, "/v1/", 4) || !strcmp(url, "/healthz") ||
	     MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					 "X-Amz-Target")))
		return 0;
	/* CloudWatch's RPC v2 CBOR face, even where a bucket is named
	 * "service" (controller/cwmetrics.h). */
	if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					"smithy-protocol") &&
	    !strncmp(url, API_CWM_CBOR_PREFIX, strlen(API_CWM_CBOR_PREFIX)))
		return 0;
	h.n = 0;
	h.overflow = 0;
	MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, &h);
	memset(&sr, 0, sizeof(sr));
	sr.method = method;
	sr.raw_uri = req->raw_uri;
	sr.headers = h.items;
	sr.n_headers = h.n;
	sr.now_ms = time_now_ms();
	if (ctrl_web_owns(conn, method, url) ?
		    !s3d_claims_signed(&ctx->s3, &sr) :
		    !s3d_claims(&ctx->s3, &sr))
		return 0;
	request_id(req->s3_rid);
	sr.request_id = req->s3_rid;
	req->s3 = s3d_begin(&ctx->s3, &sr);
	return 1;
}

/* Writes an upload chunk to the request's sink file. */
static void sink_write(struct request *req, const char *data, size_t n)
{
	while (n && !req->sink_error) {
		ssize_t w = write(req->sink_fd, data, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			req->sink_error = 1;
			break;
		}
		data += w;
		n -= (size_t)w;
		req->sink_bytes += w;
	}
	if (req->sink_bytes > req->sink_max)
		req->sink_error = 1;
}

/* What the first call of a request decided. */
enum start { START_READ, START_SEND };

/* Seconds a connection that sent a request's headers may stay idle. */
#define IDLE_TIMEOUT_S 120

/* What --agent-listen serves: the agent protocol, rendezvous and blobs. */
static int agent_route(const char *url)
{
	return !strcmp(url, "/healthz") || !strncmp(url, "/v1/agents/", 11) ||
	       !strncmp(url, "/v1/rendezvous/", 15) || s3d_blob_is_route(url);
}

/*
 * The first call of a request, with its headers: a blob request and an
 * artifact upload are set up to stream; any other body over the limit is
 * noted, to be refused once the body is read. START_SEND: resp is filled.
 */
static enum start start_request(struct ctrl_ctx *ctx,
				struct MHD_Connection *conn, const char *url,
				const char *method, struct request *req,
				struct ctrl_response *resp)
{
	const char *cl = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *fence;

	req->started = 1;
	/*
	 * Its headers are in: until it is answered the connection may idle
	 * as long as any (a long-poll, a slow upload); the short
	 * --header-timeout holds until here and again after the answer.
	 */
	(void)MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
					(unsigned)IDLE_TIMEOUT_S);
	if (req->agent_port && !agent_route(url)) {
		ctrl_reply_err(resp, CTRL_E_NO_SUCH_PATH,
			       "the agent listener serves agents and ranks "
			       "only (/v1/agents/, /v1/rendezvous/, "
			       "/v1/blobs)");
		return START_SEND;
	}
	if (start_s3(ctx, conn, method, url, req))
		return START_READ;
	if (s3d_blob_is_route(url)) {
		if (!blob_allowed(ctx, conn, method, url, req)) {
			ctrl_reply_err(resp, CTRL_E_UNAUTHORIZED,
				       "blob requests need a host's agent "
				       "token or a SigV4 signature (service "
				       "s3, UNSIGNED-PAYLOAD) by the "
				       "controller's credentials, within the "
				       "key's S3 prefixes");
			return START_SEND;
		}
		req->blob = s3d_blob_begin(ctx->blob_root, method, url,
					   query(conn, "prefix"),
					   query(conn, "continuation"),
					   query(conn, "max-keys"),
					   cl ? strtoll(cl, NULL, 10) : -1);
		fence = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    "X-Trainctl-Fence");
		if (fence &&
		    (!strcmp(method, "PUT") || !strcmp(method, "DELETE"))) {
			req->fence = xstrndup(fence, 256);
			fence_check(ctx, req);
		}
		return START_READ;
	}
	if (!strcmp(method, "PUT") && !strncmp(url, "/v1/agents/", 11)) {
		/* Artifact uploads stream to a file. */
		if (ctrl_agent_route(ctx, conn, method, url, req, resp) ==
		    CTRL_ROUTE_CONTINUE)
			return START_READ;
		return START_SEND;
	}
	if (cl && strtoll(cl, NULL, 10) > ctx->cfg.body_max)
		req->too_big = 1;
	return req->too_big ? START_SEND : START_READ;
}

/* Takes a piece of the body; returns whether more may come. */
static int take_body(struct request *req, const char *data, size_t *size)
{
	if (!*size)
		return 0;
	if (req->sink_fd >= 0)
		sink_write(req, data, *size);
	else if (!req->too_big && buf_add(&req->body, data, *size))
		req->too_big = 1;
	*size = 0;
	return !req->too_big;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	struct ctrl_ctx *ctx = cls;
	struct request *req = *con_cls;
	struct ctrl_response resp;
	const char *content_type = "application/json";
	enum ctrl_route_result rr;
	enum MHD_Result ret;

	(void)version;
	if (!req)
		return MHD_NO;
	memset(&resp, 0, sizeof(resp));
	buf_init(&resp.body, 0);
	if (!req->started) {
		if (start_request(ctx, conn, url, method, req, &resp) ==
		    START_READ) {
			/* A refused S3 upload is answered before its body
			 * is read (and not read at all after 100-continue). */
			if (req->s3 && s3d_refused(req->s3) &&
			    *upload_data_size == 0 && has_body(conn)) {
				s3_finish_job(req);
				return send_s3(conn, req, method);
			}
			return MHD_YES;
		}
		if (!req->too_big)
			goto send;
	}
	if (req->s3) {
		if (*upload_data_size) {
			s3d_data(req->s3, upload_data, *upload_data_size);
			*upload_data_size = 0;
			return MHD_YES;
		}
		if (req->s3_done)
			return send_s3(conn, req, method);
		if (!ctrl_iopool_run(ctx->iopool, conn, s3_finish_job, req))
			return MHD_YES; /* resumed when the step is done */
		s3_finish_job(req);
		return send_s3(conn, req, method);
	}
	if (req->blob) {
		if (*upload_data_size) {
			(void)s3d_blob_data(req->blob, upload_data,
					    *upload_data_size);
			*upload_data_size = 0;
			return MHD_YES;
		}
		return send_blob(ctx, conn, req, method, url);
	}
	if (take_body(req, upload_data, upload_data_size))
		return MHD_YES;
	if (req->too_big) {
		struct buf msg = BUF_INIT;

		(void)buf_addf(&msg, "request body is larger than %ld bytes",
			       ctx->cfg.body_max);
		ctrl_reply_err(&resp, CTRL_E_TOO_LARGE, msg.data);
		buf_release(&msg);
		/* Answer at once; MHD closes the connection afterwards. */
		*upload_data_size = 0;
	} else if (req->sink_fd >= 0) {
		ctrl_agent_upload_done(ctx, req, &resp);
	} else {
		content_type = JSON11;
		rr = route(ctx, conn, method, url, req, &resp, &content_type);
		if (rr == CTRL_ROUTE_SUSPENDED || rr == CTRL_ROUTE_QUEUED) {
			buf_release(&resp.body);
			return MHD_YES;
		}
	}
send:
	ctrl_metrics_request(conn, method, url, resp.status,
			     time_mono_us() - req->t0_us);
	ret = send_response(conn, &resp, content_type, method, url, req);
	buf_release(&resp.body);
	return ret;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("microhttpd: %s", line);
}

static int parse_listen(const char *opt, const char *listen,
			struct sockaddr_storage *ss, socklen_t *len,
			struct buf *err)
{
	const char *colon = strrchr(listen, ':');
	char host[256];
	size_t hl = (size_t)(colon - listen);
	int port = atoi(colon + 1);
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (hl >= sizeof(host)) {
		(void)buf_addf(err, "--%s host too long", opt);
		return ERR_INVALID;
	}
	memcpy(host, listen, hl);
	host[hl] = '\0';
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		return 0;
	}
	(void)buf_addf(err, "--%s host '%s' is not an IP address", opt, host);
	return ERR_INVALID;
}

/*
 * Percent-decoding of paths and query arguments. A "%00" would cut the
 * decoded string short ("/v1/training-jobs/%00" would read as the list),
 * so a string holding one is left as written and fails as a name.
 */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	(void)conn;
	if (strstr(s, "%00"))
		return strlen(s);
	return MHD_http_unescape(s);
}

/*
 * Threads for S3 steps that wait on the disk (controller/iopool.h). Many,
 * because they mostly wait: concurrent fsyncs share journal commits.
 */
#define IO_WORKERS 16

/* Descriptors kept for the store, the agents' SSH sessions, files and pipes. */
#define FD_RESERVE 512

/*
 * How many connections to accept at once. Every agent holds two or three
 * (its work long-poll, its status reports, its log lines), so thousands of
 * hosts need more descriptors than the usual soft limit of 1,024: raise it
 * to the hard limit and keep FD_RESERVE of them for everything else.
 */
static unsigned connection_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024 - FD_RESERVE / 2;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t want = rl.rlim_max;

		if (want == RLIM_INFINITY || want > (1 << 20))
			want = 1 << 20;
		rl.rlim_cur = want;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < 2 * FD_RESERVE)
		return (unsigned)(rl.rlim_cur / 2);
	return (unsigned)(rl.rlim_cur - FD_RESERVE);
}

/*
 * One listener: --listen (the API and everything) or --agent-listen
 * (agents and ranks). A connection has --header-timeout seconds to send
 * its request's headers, then IDLE_TIMEOUT_S (start_request()), and one
 * client address holds at most per_ip connections at once: a client
 * that opens connections and sends nothing neither keeps them long nor
 * takes them all.
 */
static struct MHD_Daemon *start_daemon(struct ctrl_ctx *ctx, const char *opt,
				       const char *listen, int agents,
				       unsigned conns, struct buf *err)
{
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	long per_ip = agents ? ctx->cfg.agent_per_client_conns :
			       ctx->cfg.per_client_conns;
	unsigned threads = (unsigned)ctx->cfg.threads;
	struct MHD_OptionItem tls[] = {
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, ctx->tls_cert_pem },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, ctx->tls_key_pem },
		{ MHD_OPTION_END, 0, NULL },
	};
	struct MHD_Daemon *d;

	if (parse_listen(opt, listen, &ss, &sl, err))
		return NULL;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (ctx->tls_cert_pem)
		flags |= MHD_USE_TLS;
	else
		tls[0].option = MHD_OPTION_END;
	d = MHD_start_daemon(
		flags, 0, NULL, NULL, handler, ctx, MHD_OPTION_ARRAY, tls,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
		&ss, MHD_OPTION_THREAD_POOL_SIZE, threads,
		MHD_OPTION_URI_LOG_CALLBACK,
		agents ? agent_uri_logger : uri_logger, ctx,
		MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
		MHD_OPTION_NOTIFY_COMPLETED, completed, ctx,
		MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)ctx->cfg.header_timeout_s,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)per_ip,
		MHD_OPTION_CONNECTION_LIMIT, conns,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
		MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_END);
	if (!d)
		(void)buf_addf(err,
			       "cannot listen on %s (address in use or not "
			       "available%s)",
			       listen,
			       ctx->tls_cert_pem ? ", or the TLS certificate "
						   "and key do not match" :
						   "");
	return d;
}

int ctrl_http_start(struct ctrl_ctx *ctx, struct buf *err)
{
	unsigned conns = connection_limit(), agent_conns = 0;
	int ret;

	ret = ctrl_iopool_start(&ctx->iopool, IO_WORKERS, err);
	if (ret)
		return ret;
	/* Agents keep a quarter of the descriptors a flood of the API
	 * cannot take. */
	if (ctx->cfg.agent_listen) {
		agent_conns = conns / 4;
		conns -= agent_conns;
	}
	ctx->httpd =
		start_daemon(ctx, "listen", ctx->cfg.listen, 0, conns, err);
	if (ctx->httpd && ctx->cfg.agent_listen) {
		ctx->agent_httpd = start_daemon(ctx, "agent-listen",
						ctx->cfg.agent_listen, 1,
						agent_conns, err);
		if (!ctx->agent_httpd) {
			MHD_stop_daemon(ctx->httpd);
			ctx->httpd = NULL;
		}
	}
	if (!ctx->httpd) {
		ctrl_iopool_stop(ctx->iopool);
		ctx->iopool = NULL;
		return ERR_IO;
	}
	return 0;
}

void ctrl_http_stop(struct ctrl_ctx *ctx)
{
	/* Every connection an I/O worker holds is resumed first. */
	ctrl_iopool_stop(ctx->iopool);
	ctx->iopool = NULL;
	if (ctx->agent_httpd)
		MHD_stop_daemon(ctx->agent_httpd);
	ctx->agent_httpd = NULL;
	if (ctx->httpd)
		MHD_stop_daemon(ctx->httpd);
	ctx->httpd = NULL;
}
