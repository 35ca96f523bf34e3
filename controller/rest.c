#define LOG_TAG "rest"

/*
 * The REST face (docs/rest-api.md): /v1/hosts and /v1/training-jobs. The
 * JSON bodies are the JSON 1.1 ones, so every route ends in the same
 * handlers as the X-Amz-Target operations.
 */
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "api/requests.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/jobrun.h"
#include "controller/members_api.h"
#include "controller/request.h"
#include "controller/obs/logs.h"
#include "controller/obs/logview.h"
#include "controller/ops.h"
#include "controller/rest.h"
#include "controller/route.h"
#include "controller/sched/view.h"
#include "controller/obs/telemetry.h"
#include "common/timeutil.h"
#include "common/banned.h"

#define MAX_QUERY_ARGS 32

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
static enum ctrl_route_result describe_wait(struct ctrl_ctx *ctx,
					    struct MHD_Connection *conn,
					    struct ctrl_http_req *req,
					    const char *name,
					    struct ctrl_response *resp)
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
			ctrl_waiter_add(
				ctx, &ctx->job_waiters, conn, &req->resumed,
				time_mono_ms() + (wait_us - waited_us) / 1000 +
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
				       struct ctrl_http_req *req,
				       const char *param,
				       struct ctrl_response *resp);

static enum ctrl_route_result rest_hosts(struct ctrl_ctx *ctx,
					 struct MHD_Connection *conn,
					 struct ctrl_http_req *req,
					 const char *param,
					 struct ctrl_response *resp)
{
	(void)conn;
	(void)param;
	ctrl_hosts_list(ctx, &req->caller, resp);
	return CTRL_ROUTE_DONE;
}

/* GET /v1/queues[/NAME]: the queues view (controller/sched/view.h). */
static enum ctrl_route_result rest_queues(struct ctrl_ctx *ctx,
					  struct MHD_Connection *conn,
					  struct ctrl_http_req *req,
					  const char *param,
					  struct ctrl_response *resp)
{
	(void)conn;
	ctrl_sched_view_route(ctx, &req->caller, *param ? param : NULL, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_drain(struct ctrl_ctx *ctx,
					 struct MHD_Connection *conn,
					 struct ctrl_http_req *req,
					 const char *param,
					 struct ctrl_response *resp)
{
	(void)conn;
	ctrl_hosts_drain_route(ctx, param, req->body.data, req->body.len, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_host_images(struct ctrl_ctx *ctx,
					       struct MHD_Connection *conn,
					       struct ctrl_http_req *req,
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
					struct ctrl_http_req *req,
					const char *param,
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

static enum ctrl_route_result rest_create(struct ctrl_ctx *ctx,
					  struct MHD_Connection *conn,
					  struct ctrl_http_req *req,
					  const char *param,
					  struct ctrl_response *resp)
{
	(void)conn;
	(void)param;
	ctrl_op_create(ctx, &req->caller, req->body.data, req->body.len, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_describe(struct ctrl_ctx *ctx,
					    struct MHD_Connection *conn,
					    struct ctrl_http_req *req,
					    const char *param,
					    struct ctrl_response *resp)
{
	return describe_wait(ctx, conn, req, param, resp);
}

static enum ctrl_route_result rest_delete(struct ctrl_ctx *ctx,
					  struct MHD_Connection *conn,
					  struct ctrl_http_req *req,
					  const char *param,
					  struct ctrl_response *resp)
{
	(void)conn;
	ctrl_job_delete(ctx, &req->caller, param, resp);
	return CTRL_ROUTE_DONE;
}

/* Stop and logs say whether the caller may see the job first. */
static int job_visible(struct ctrl_ctx *ctx, struct ctrl_http_req *req,
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
					struct ctrl_http_req *req,
					const char *param,
					struct ctrl_response *resp)
{
	(void)conn;
	if (job_visible(ctx, req, param, resp))
		ctrl_job_stop(ctx, &req->caller, param, resp);
	return CTRL_ROUTE_DONE;
}

/* An admin's requeue: the job is preempted and waits in the queue. */
static enum ctrl_route_result rest_requeue(struct ctrl_ctx *ctx,
					   struct MHD_Connection *conn,
					   struct ctrl_http_req *req,
					   const char *param,
					   struct ctrl_response *resp)
{
	struct buf err = BUF_INIT, why = BUF_INIT, ok = BUF_INIT;
	int ret;

	(void)conn;
	if (!job_visible(ctx, req, param, resp))
		return CTRL_ROUTE_DONE;
	(void)buf_addf(&why, "requeued by %s",
		       req->caller.owner ? req->caller.owner : "an admin");
	ret = ctrl_job_preempt(ctx, param, why.data, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
	} else {
		(void)buf_adds(&ok, "{}");
		ctrl_reply_json(resp, &ok);
	}
	buf_release(&err);
	buf_release(&why);
	buf_release(&ok);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_logs(struct ctrl_ctx *ctx,
					struct MHD_Connection *conn,
					struct ctrl_http_req *req,
					const char *param,
					struct ctrl_response *resp)
{
	if (!job_visible(ctx, req, param, resp))
		return CTRL_ROUTE_DONE;
	return ctrl_logs_route(ctx, conn, param, req, resp);
}

static enum ctrl_route_result rest_log_streams(struct ctrl_ctx *ctx,
					       struct MHD_Connection *conn,
					       struct ctrl_http_req *req,
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
					      struct ctrl_http_req *req,
					      const char *param,
					      struct ctrl_response *resp)
{
	if (!job_visible(ctx, req, param, resp))
		return CTRL_ROUTE_DONE;
	return ctrl_logview_search(ctx, conn, param, &req->logsearch, resp);
}

static enum ctrl_route_result rest_log_download(struct ctrl_ctx *ctx,
						struct MHD_Connection *conn,
						struct ctrl_http_req *req,
						const char *param,
						struct ctrl_response *resp)
{
	if (job_visible(ctx, req, param, resp))
		ctrl_logview_download(ctx, conn, param, resp);
	return CTRL_ROUTE_DONE;
}

/* GET /v1/members, POST /v1/members, DELETE /v1/members/{id}: docs/ha.md */
static enum ctrl_route_result rest_members(struct ctrl_ctx *ctx,
					   struct MHD_Connection *conn,
					   struct ctrl_http_req *req,
					   const char *param,
					   struct ctrl_response *resp)
{
	(void)conn;
	(void)req;
	(void)param;
	ctrl_members_list_route(ctx, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_member_add(struct ctrl_ctx *ctx,
					      struct MHD_Connection *conn,
					      struct ctrl_http_req *req,
					      const char *param,
					      struct ctrl_response *resp)
{
	(void)conn;
	(void)param;
	ctrl_members_add_route(ctx, req->body.data, req->body.len, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result rest_member_remove(struct ctrl_ctx *ctx,
						 struct MHD_Connection *conn,
						 struct ctrl_http_req *req,
						 const char *param,
						 struct ctrl_response *resp)
{
	(void)conn;
	(void)req;
	ctrl_members_remove_route(ctx, param, resp);
	return CTRL_ROUTE_DONE;
}

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

/* A REST endpoint: its handler (NULL: the method is refused with allow),
 * and whether its "{}" is a TrainingJobName. */
struct rest_ep {
	rest_fn *fn;
	int job_name;
	const char *allow;
};

/*
 * Calls the row's rest_ep: a job name is checked against the service
 * model first, then a method the path does not take is refused (405).
 */
static enum ctrl_route_result
rest_call(struct ctrl_ctx *ctx, struct MHD_Connection *conn, const char *method,
	  const char *url, struct ctrl_http_req *req,
	  struct ctrl_response *resp, const char **content_type)
{
	const struct rest_ep *ep = req->route->arg;
	struct buf param = BUF_INIT_MAX(256);
	enum ctrl_route_result res = CTRL_ROUTE_DONE;
	struct ctrl_route_params p;

	(void)method;
	*content_type = "application/json";
	if (!ctrl_route_match(req->route->pattern, url, &p))
		p.n = 0;
	if (ep->job_name && !job_name_ok(p.s[0], p.len[0], resp, &param))
		goto out;
	if (!ep->fn) {
		ctrl_reply_err(resp, CTRL_E_METHOD, ep->allow);
		goto out;
	}
	/* The handler gets the path from the first parameter on: a "*"
	 * stands for the rest of the path, url's own tail. */
	res = ep->fn(ctx, conn, req,
		     ep->job_name ? param.data :
		     p.n	  ? p.s[0] :
				    "",
		     resp);
out:
	buf_release(&param);
	return res;
}

#define HOSTS_ALLOW                                                        \
	"use POST on /v1/hosts/<name>/drain, /undrain and /images/prune, " \
	"GET on /v1/hosts/<name>/images and /telemetry"
#define HOSTS_ADMIN "changing hosts (drain, undrain, prune) needs an admin key"
#define REQUEUE_ADMIN "requeueing a training job needs an admin key"
#define JOBS_ALLOW "use GET or POST on /v1/training-jobs"
#define JOB_METHODS "method not allowed on this resource"
#define LOGS_ALLOW "use GET on logs"
#define QUEUES_ALLOW "use GET on /v1/queues"
#define MEMBERS_ALLOW "use GET or POST on /v1/members"
#define MEMBER_ALLOW "use DELETE on /v1/members/<id>"
#define MEMBERS_ADMIN "changing the members needs an admin key"

static const struct rest_ep ep_hosts = { rest_hosts, 0, NULL },
			    ep_drain = { rest_drain, 0, NULL },
			    ep_host_images = { rest_host_images, 0, NULL },
			    ep_hosts_405 = { NULL, 0, HOSTS_ALLOW },
			    ep_list = { rest_list, 0, NULL },
			    ep_create = { rest_create, 0, NULL },
			    ep_jobs_405 = { NULL, 0, JOBS_ALLOW },
			    ep_describe = { rest_describe, 1, NULL },
			    ep_delete = { rest_delete, 1, NULL },
			    ep_stop = { rest_stop, 1, NULL },
			    ep_requeue = { rest_requeue, 1, NULL },
			    ep_job_405 = { NULL, 1, JOB_METHODS },
			    ep_logs = { rest_logs, 1, NULL },
			    ep_log_streams = { rest_log_streams, 1, NULL },
			    ep_log_search = { rest_log_search, 1, NULL },
			    ep_log_download = { rest_log_download, 1, NULL },
			    ep_logs_405 = { NULL, 1, LOGS_ALLOW },
			    ep_queues = { rest_queues, 0, NULL },
			    ep_queues_405 = { NULL, 0, QUEUES_ALLOW },
			    ep_members = { rest_members, 0, NULL },
			    ep_member_add = { rest_member_add, 0, NULL },
			    ep_member_remove = { rest_member_remove, 0, NULL },
			    ep_members_405 = { NULL, 0, MEMBERS_ALLOW },
			    ep_member_405 = { NULL, 0, MEMBER_ALLOW };

#define REST_ROW_(method_, pattern_, auth_)                                  \
	CTRL_ROW(CTRL_LISTEN_API, method_, CTRL_MATCH_PATH, pattern_, auth_, \
		 CTRL_BODY_BUFFERED, rest_call)
#define REST_ROW(method_, pattern_, ep_)                                \
	{                                                               \
		REST_ROW_(method_, pattern_, CTRL_AUTH_API), .arg = ep_ \
	}
#define REST_ADMIN_ROW(method_, pattern_, ep_)                 \
	{                                                      \
		REST_ROW_(method_, pattern_, CTRL_AUTH_ADMIN), \
			.arg = ep_, .deny = HOSTS_ADMIN        \
	}

static const struct ctrl_refusal no_such_resource = { CTRL_E_NO_SUCH_PATH,
						      "no such resource",
						      "application/json" };

/*
 * The path decides first: a path of no row is 404 (the last row); then an
 * admin key where one is needed, a job name checked against the service
 * model, and last the method (the "*" row of a path: 405 with its allow).
 */
static const struct ctrl_route rows[] = {
	REST_ROW("GET", "/v1/hosts", &ep_hosts),
	REST_ADMIN_ROW("POST", "/v1/hosts/{}/drain", &ep_drain),
	REST_ADMIN_ROW("POST", "/v1/hosts/{}/undrain", &ep_drain),
	REST_ADMIN_ROW("POST", "/v1/hosts/{}/images/prune", &ep_drain),
	/* The host handlers refuse the paths of no row above themselves. */
	{ REST_ROW_("POST", "/v1/hosts/*", CTRL_AUTH_ADMIN), .arg = &ep_drain,
	  .deny = HOSTS_ADMIN, .refusal = 1 },
	REST_ROW("GET", "/v1/hosts/{}/images", &ep_host_images),
	REST_ROW("GET", "/v1/hosts/{}/telemetry", &ep_host_images),
	{ REST_ROW_("GET", "/v1/hosts/*", CTRL_AUTH_API),
	  .arg = &ep_host_images, .refusal = 1 },
	REST_ADMIN_ROW("*", "/v1/hosts/*", &ep_hosts_405),
	REST_ROW("GET", "/v1/training-jobs", &ep_list),
	REST_ROW("POST", "/v1/training-jobs", &ep_create),
	REST_ROW("*", "/v1/training-jobs", &ep_jobs_405),
	REST_ROW("GET", "/v1/training-jobs/", &ep_list),
	REST_ROW("POST", "/v1/training-jobs/", &ep_create),
	REST_ROW("*", "/v1/training-jobs/", &ep_jobs_405),
	REST_ROW("GET", "/v1/training-jobs/{}", &ep_describe),
	REST_ROW("DELETE", "/v1/training-jobs/{}", &ep_delete),
	REST_ROW("*", "/v1/training-jobs/{}", &ep_job_405),
	REST_ROW("POST", "/v1/training-jobs/{}/stop", &ep_stop),
	REST_ROW("*", "/v1/training-jobs/{}/stop", &ep_job_405),
	{ REST_ROW_("POST", "/v1/training-jobs/{}/requeue", CTRL_AUTH_ADMIN),
	  .arg = &ep_requeue, .deny = REQUEUE_ADMIN },
	REST_ROW("*", "/v1/training-jobs/{}/requeue", &ep_job_405),
	REST_ROW("GET", "/v1/training-jobs/{}/logs", &ep_logs),
	REST_ROW("*", "/v1/training-jobs/{}/logs", &ep_logs_405),
	REST_ROW("GET", "/v1/training-jobs/{}/logs/streams", &ep_log_streams),
	REST_ROW("*", "/v1/training-jobs/{}/logs/streams", &ep_logs_405),
	REST_ROW("GET", "/v1/training-jobs/{}/logs/search", &ep_log_search),
	REST_ROW("*", "/v1/training-jobs/{}/logs/search", &ep_logs_405),
	REST_ROW("GET", "/v1/training-jobs/{}/logs/download", &ep_log_download),
	REST_ROW("*", "/v1/training-jobs/{}/logs/download", &ep_logs_405),
	REST_ROW("GET", "/v1/queues", &ep_queues),
	REST_ROW("*", "/v1/queues", &ep_queues_405),
	REST_ROW("GET", "/v1/queues/{}", &ep_queues),
	REST_ROW("*", "/v1/queues/{}", &ep_queues_405),
	REST_ROW("GET", "/v1/members", &ep_members),
	{ REST_ROW_("POST", "/v1/members", CTRL_AUTH_ADMIN),
	  .arg = &ep_member_add, .deny = MEMBERS_ADMIN },
	REST_ROW("*", "/v1/members", &ep_members_405),
	{ REST_ROW_("DELETE", "/v1/members/{}", CTRL_AUTH_ADMIN),
	  .arg = &ep_member_remove, .deny = MEMBERS_ADMIN },
	REST_ROW("*", "/v1/members/{}", &ep_member_405),
	{ CTRL_ROW(CTRL_LISTEN_API, "*", CTRL_MATCH_PATH, "/v1/*",
		   CTRL_AUTH_API, CTRL_BODY_BUFFERED, ctrl_route_refuse),
	  .arg = &no_such_resource, .refusal = 1 },
};

const struct ctrl_route_block ctrl_rest_routes = CTRL_ROUTE_BLOCK(rows);
