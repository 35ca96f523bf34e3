#define LOG_TAG "front"

/*
 * The front door: which row of the route table (controller/route.h)
 * serves a request, and the checks every row's rules ask for. The table
 * is blocks[] below, tried in its order; the first row that matches
 * serves. See docs/configuration.md ("Routes") and trainctld --routes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "api/cwmetrics.h"
#include "api/sigv4.h"
#include "storage/s3d/blob.h"
#include "controller/ctrl.h"
#include "controller/obs/cwlogs.h"
#include "controller/obs/cwmetrics.h"
#include "controller/agent_api.h"
#include "controller/batch.h"
#include "controller/front.h"
#include "controller/ops.h"
#include "controller/hosts.h"
#include "controller/http.h"
#include "controller/rendezvous.h"
#include "controller/replicate.h"
#include "controller/rest.h"
#include "controller/route.h"
#include "controller/serving.h"
#include "controller/uris.h"
#include "controller/obs/web.h"
#include "db/db.h"
#include "db/run.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MAX_HEADERS 64
#define JSON11 "application/x-amz-json-1.1"

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
			const char *method, struct ctrl_http_req *req,
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
			const struct ctrl_http_req *req)
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

void ctrl_front_blob_fence(struct ctrl_ctx *ctx, struct ctrl_http_req *req)
{
	struct buf why = BUF_INIT;

	if (req->fence && fence_stale(ctx, req->fence, &why)) {
		log_info("checkpoint upload refused: %s", why.data);
		s3d_blob_fence(req->blob, why.data);
	}
	buf_release(&why);
}

/* ------------------------------------------------------------ matching */

/* The headers a matcher looks at, read once. */
static void head_of(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
		    const char *method, const char *url, const char *raw_uri,
		    struct ctrl_route_head *h)
{
	h->ctx = ctx;
	h->raw_uri = raw_uri;
	h->conn = conn;
	h->method = method;
	h->url = url;
	h->target = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						"X-Amz-Target");
	h->content_type = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
}

static int target_matches(const char *pattern, const char *target)
{
	size_t n = strlen(pattern);

	if (!target)
		return 0;
	if (n && pattern[n - 1] == '*')
		return !strncmp(pattern, target, n - 1);
	return !strcmp(pattern, target);
}

/* Whether a row's method ("*", one, or a list "GET,HEAD") takes method. */
static int method_ok(const char *methods, const char *method)
{
	size_t n = strlen(method);
	const char *m;

	if (!strcmp(methods, "*"))
		return 1;
	for (m = methods; *m; m += strcspn(m, ",")) {
		m += *m == ',';
		if (!strncmp(m, method, n) && (m[n] == ',' || !m[n]))
			return 1;
	}
	return 0;
}

/* Whether row r takes the request; *val: what its sniffer said. */
static int row_matches(const struct ctrl_route *r,
		       const struct ctrl_route_head *h, int *val)
{
	if (!method_ok(r->method, h->method))
		return 0;
	if (r->match == CTRL_MATCH_PATH ?
		    !ctrl_route_match(r->pattern, h->url, NULL) :
		    !target_matches(r->pattern, h->target))
		return 0;
	*val = r->sniff ? r->sniff(h) : 0;
	return *val >= 0;
}

static int block_matches(const struct ctrl_route_block *b,
			 const struct ctrl_route_head *h)
{
	size_t i;
	int val;

	for (i = 0; i < b->n; i++)
		if (row_matches(&b->rows[i], h, &val))
			return 1;
	return 0;
}

/* ------------------------------------------------------------ sniffers */

static void s3_request(const struct ctrl_route_head *h, struct header_list *hl,
		       struct s3d_req *sr)
{
	hl->n = 0;
	hl->overflow = 0;
	MHD_get_connection_values(h->conn, MHD_HEADER_KIND, collect_header, hl);
	memset(sr, 0, sizeof(*sr));
	sr->method = h->method;
	sr->raw_uri = h->raw_uri;
	sr->headers = hl->items;
	sr->n_headers = hl->n;
	sr->now_ms = time_now_ms();
}

/*
 * The embedded S3 API (storage/s3d/s3d.h): path-style, or virtual-hosted
 * under --s3-domain. The API's and the agents' requests are never S3
 * unless a Host names a bucket, nor is CloudWatch's RPC v2 CBOR face, even
 * where a bucket is named "service"; on a page's path only a request
 * signed for s3 or sent to a bucket's host is.
 */
static int s3_sniff(const struct ctrl_route_head *h)
{
	const struct s3d_env *env = &h->ctx->s3;
	struct s3d_req sr;
	struct header_list hl;

	if (!env->domain &&
	    (!strncmp(h->url, "/v1/", 4) || !strcmp(h->url, "/healthz") ||
	     !strcmp(h->url, "/healthz/leader") || h->target))
		return -1;
	if (MHD_lookup_connection_value(h->conn, MHD_HEADER_KIND,
					"smithy-protocol") &&
	    !strncmp(h->url, API_CWM_CBOR_PREFIX, strlen(API_CWM_CBOR_PREFIX)))
		return -1;
	s3_request(h, &hl, &sr);
	if (block_matches(&ctrl_web_routes, h) ? !s3d_claims_signed(env, &sr) :
						 !s3d_claims(env, &sr))
		return -1;
	return 0;
}

/* CloudWatch metrics, in the protocol ctrl_cwm_proto() names. */
static int cwm_sniff(const struct ctrl_route_head *h)
{
	return ctrl_cwm_proto(h->method, h->url, h->target, h->content_type);
}

/* ------------------------------------------------------------ handlers */

#define UNUSED_ARGS                 \
	do {                        \
		(void)ctx;          \
		(void)conn;         \
		(void)method;       \
		(void)url;          \
		(void)req;          \
		(void)resp;         \
		(void)content_type; \
	} while (0)

static enum ctrl_route_result
healthz(struct ctrl_ctx *ctx, struct MHD_Connection *conn, const char *method,
	const char *url, struct ctrl_http_req *req, struct ctrl_response *resp,
	const char **content_type)
{
	UNUSED_ARGS;
	resp->status = 200;
	(void)buf_adds(&resp->body, "{\"status\":\"ok\"}");
	*content_type = "application/json";
	return CTRL_ROUTE_DONE;
}

/*
 * For a load balancer or keepalived: 200 where requests are served here.
 * A member that does not lead answers 503 from its proxy (ha/proxy.c), a
 * leader whose leadership is being checked 503 before any route
 * (controller/http.c); a single controller leads itself.
 */
static enum ctrl_route_result
healthz_leader(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	       const char *method, const char *url, struct ctrl_http_req *req,
	       struct ctrl_response *resp, const char **content_type)
{
	UNUSED_ARGS;
	resp->status = 200;
	(void)buf_adds(&resp->body, "{\"status\":\"leader\"}");
	*content_type = "application/json";
	return CTRL_ROUTE_DONE;
}

/* Starts an S3 request, whose body streams to the S3 server. */
static enum ctrl_route_result
s3_begin(struct ctrl_ctx *ctx, struct MHD_Connection *conn, const char *method,
	 const char *url, struct ctrl_http_req *req, struct ctrl_response *resp,
	 const char **content_type)
{
	struct ctrl_route_head h;
	struct s3d_req sr;
	struct header_list hl;

	UNUSED_ARGS;
	head_of(ctx, conn, method, url, req->raw_uri, &h);
	s3_request(&h, &hl, &sr);
	ctrl_http_request_id(req->s3_rid);
	sr.request_id = req->s3_rid;
	req->s3 = s3d_begin(&ctx->s3, &sr);
	return CTRL_ROUTE_CONTINUE;
}

/* Starts a blob request (its caller was checked: blob_allowed()). */
static enum ctrl_route_result
blob_begin(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	   const char *method, const char *url, struct ctrl_http_req *req,
	   struct ctrl_response *resp, const char **content_type)
{
	const char *cl = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *fence;

	UNUSED_ARGS;
	req->blob = s3d_blob_begin(ctx->blob_root, method, url,
				   query(conn, "prefix"),
				   query(conn, "continuation"),
				   query(conn, "max-keys"),
				   cl ? strtoll(cl, NULL, 10) : -1);
	fence = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					    "X-Trainctl-Fence");
	if (fence && (!strcmp(method, "PUT") || !strcmp(method, "DELETE"))) {
		req->fence = xstrndup(fence, 256);
		ctrl_front_blob_fence(ctx, req);
	}
	return CTRL_ROUTE_CONTINUE;
}

static enum ctrl_route_result
cwm_serve(struct ctrl_ctx *ctx, struct MHD_Connection *conn, const char *method,
	  const char *url, struct ctrl_http_req *req,
	  struct ctrl_response *resp, const char **content_type)
{
	ctrl_cwm_serve(ctx, &req->caller, req->route_val, method, url,
		       MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						   "X-Amz-Target"),
		       req->body.data, req->body.len, resp, content_type);
	return CTRL_ROUTE_DONE;
}

/* A JSON 1.1 call: its Content-Type first. */
static int json11_ok(struct MHD_Connection *conn, struct ctrl_response *resp)
{
	if (media_type_ok(MHD_lookup_connection_value(
		    conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE)))
		return 1;
	ctrl_reply_err(resp, CTRL_E_MEDIA_TYPE,
		       "Content-Type must be application/x-amz-json-1.1");
	return 0;
}

/* POST with an X-Amz-Target no row names. */
static enum ctrl_route_result
unknown_target(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	       const char *method, const char *url, struct ctrl_http_req *req,
	       struct ctrl_response *resp, const char **content_type)
{
	struct buf msg = BUF_INIT_MAX(512);

	UNUSED_ARGS;
	if (!json11_ok(conn, resp))
		return CTRL_ROUTE_DONE;
	(void)buf_addf(&msg, "operation '%.200s' is not supported",
		       MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						   "X-Amz-Target"));
	ctrl_reply_err(resp, CTRL_E_UNKNOWN_OPERATION, msg.data);
	buf_release(&msg);
	return CTRL_ROUTE_DONE;
}

/* --------------------------------------------------------------- rows */

#define BOTH CTRL_LISTEN_BOTH
#define API CTRL_LISTEN_API
#define PATH CTRL_MATCH_PATH
#define BUFFERED CTRL_BODY_BUFFERED

/* Before anything else: the embedded S3 API, health, and blobs. */
static const struct ctrl_route first_rows[] = {
	{ CTRL_ROW(BOTH, "*", PATH, "*", CTRL_AUTH_S3, CTRL_BODY_S3, s3_begin),
	  .sniff = s3_sniff,
	  .sniff_doc =
		  "S3: path-style /bucket/key, or Host bucket.--s3-domain" },
	{ CTRL_ROW(BOTH, "*", PATH, "/healthz", CTRL_AUTH_NONE, BUFFERED,
		   healthz) },
	{ CTRL_ROW(BOTH, "*", PATH, "/healthz/leader", CTRL_AUTH_NONE, BUFFERED,
		   healthz_leader) },
	{ CTRL_ROW(BOTH, "*", PATH, S3D_BLOB_PREFIX "*", CTRL_AUTH_BLOB,
		   CTRL_BODY_BLOB, blob_begin) },
};

/* CloudWatch metrics (controller/obs/cwmetrics.h), in its three protocols. */
static const struct ctrl_route cwm_rows[] = {
	{ CTRL_ROW(API, "*", CTRL_MATCH_TARGET, API_CWM_TARGET_PREFIX "*",
		   CTRL_AUTH_API, BUFFERED, cwm_serve),
	  .sniff = cwm_sniff, .sniff_doc = "JSON 1.0" },
	{ CTRL_ROW(API, "*", PATH, API_CWM_CBOR_PREFIX "*", CTRL_AUTH_API,
		   BUFFERED, cwm_serve),
	  .sniff = cwm_sniff,
	  .sniff_doc = "RPC v2 CBOR, no other X-Amz-Target" },
	{ CTRL_ROW(API, "POST", PATH, "/", CTRL_AUTH_API, BUFFERED, cwm_serve),
	  .sniff = cwm_sniff,
	  .sniff_doc = "awsQuery: a form, no X-Amz-Target" },
};

/* Anything else. */
static const struct ctrl_refusal no_operation = {
	CTRL_E_UNKNOWN_OPERATION,
	"requests must be POST with an X-Amz-Target header (or use the /v1/ "
	"REST paths)",
	NULL
};

/* After every face: what no row served. */
static const struct ctrl_route last_rows[] = {
	{ CTRL_ROW(API, "POST", CTRL_MATCH_TARGET, "*", CTRL_AUTH_API, BUFFERED,
		   unknown_target),
	  .refusal = 1 },
	{ CTRL_ROW(API, "*", PATH, "*", CTRL_AUTH_API, BUFFERED,
		   ctrl_route_refuse),
	  .arg = &no_operation, .refusal = 1 },
};

static const struct ctrl_route_block first = CTRL_ROUTE_BLOCK(first_rows),
				     cwm = CTRL_ROUTE_BLOCK(cwm_rows),
				     last = CTRL_ROUTE_BLOCK(last_rows);

/*
 * The route table, in the order it is tried. A new API is a block of
 * rows placed here: its paths or X-Amz-Targets before the last block.
 */
static const struct ctrl_route_block *const blocks[] = {
	&first,		      /* S3, /healthz[/leader], /v1/blobs/ */
	&ctrl_repl_routes,    /* /v1/replica/ (replicate.c) */
	&ctrl_agent_routes,   /* /v1/agents/ (agent_api.c) */
	&ctrl_rdzv_routes,    /* /v1/rendezvous/ (rendezvous.c) */
	&ctrl_web_routes,     /* the page, its JSON, /metrics (web.c) */
	&cwm,		      /* CloudWatch metrics */
	&ctrl_batch_routes,   /* AWS Batch, POST /v1/<op> (batch/) */
	&ctrl_rest_routes,    /* the REST face, /v1/ (rest.c) */
	&ctrl_op_routes,      /* SageMaker.* (ops.c) */
	&ctrl_serving_routes, /* SageMaker's inference ops, refused */
	&ctrl_cwlogs_routes,  /* Logs_20140328.* (cwlogs.c) */
	&last,		      /* what no row above served */
};

#define N_BLOCKS (ARRAY_SIZE(blocks))

/* ------------------------------------------------------------- router */

/* Whether --agent-listen serves url: a path of one of its rows. */
static int agent_path(const char *url)
{
	const struct ctrl_route *r;
	size_t b, i;

	for (b = 0; b < N_BLOCKS; b++)
		for (i = 0; i < blocks[b]->n; i++) {
			r = &blocks[b]->rows[i];
			if ((r->listen & CTRL_LISTEN_AGENT) && !r->sniff &&
			    r->match == CTRL_MATCH_PATH &&
			    ctrl_route_match(r->pattern, url, NULL))
				return 1;
		}
	return 0;
}

/* The first row of the table that takes the request, or NULL. */
static const struct ctrl_route *pick(const struct ctrl_route_head *h,
				     unsigned listen, int *val)
{
	const struct ctrl_route *r;
	size_t b, i;

	for (b = 0; b < N_BLOCKS; b++)
		for (i = 0; i < blocks[b]->n; i++) {
			r = &blocks[b]->rows[i];
			if ((r->listen & listen) && row_matches(r, h, val))
				return r;
		}
	return NULL;
}

enum ctrl_front_start
ctrl_front_start(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
		 const char *method, const char *url, struct ctrl_http_req *req,
		 struct ctrl_response *resp, const char **content_type)
{
	const char *cl = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	struct ctrl_route_head h;

	head_of(ctx, conn, method, url, req->raw_uri, &h);
	if (!req->agent_port || agent_path(url))
		req->route = pick(&h,
				  req->agent_port ? CTRL_LISTEN_AGENT :
						    CTRL_LISTEN_API,
				  &req->route_val);
	if (!req->route) {
		ctrl_reply_err(resp, CTRL_E_NO_SUCH_PATH,
			       "the agent listener serves agents and ranks "
			       "only (/v1/agents/, /v1/rendezvous/, "
			       "/v1/blobs)");
		return CTRL_FRONT_SEND;
	}
	if (req->route->auth == CTRL_AUTH_BLOB &&
	    !blob_allowed(ctx, conn, method, url, req)) {
		ctrl_reply_err(resp, CTRL_E_UNAUTHORIZED,
			       "blob requests need a host's agent token or a "
			       "SigV4 signature (service s3, "
			       "UNSIGNED-PAYLOAD) by the controller's "
			       "credentials, within the key's S3 prefixes");
		return CTRL_FRONT_SEND;
	}
	if (req->route->body != CTRL_BODY_BUFFERED)
		return req->route->fn(ctx, conn, method, url, req, resp,
				      content_type) == CTRL_ROUTE_CONTINUE ?
			       CTRL_FRONT_READ :
			       CTRL_FRONT_SEND;
	if (cl && strtoll(cl, NULL, 10) > ctx->cfg.body_max)
		req->too_big = 1;
	return req->too_big ? CTRL_FRONT_SEND : CTRL_FRONT_READ;
}

/*
 * CTRL_AUTH_API and CTRL_AUTH_ADMIN: no state changed from another site,
 * then HTTP Basic (web.h) or SigV4, then an admin key where the row needs
 * one. 0 when refused (*res says how it was answered).
 */
static int api_auth(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
		    const char *method, const char *url,
		    struct ctrl_http_req *req, struct ctrl_response *resp,
		    const char **content_type, enum ctrl_route_result *res)
{
	struct ctrl_route_head h;
	int cw;

	*res = CTRL_ROUTE_DONE;
	if (cross_site(conn, method)) {
		ctrl_reply_err(resp, CTRL_E_FORBIDDEN,
			       "cross-site requests may not change state");
		return 0;
	}
	/* CloudWatch metrics requests are signed for its service and
	 * refused in their own protocol's form. */
	head_of(ctx, conn, method, url, req->raw_uri, &h);
	cw = cwm_sniff(&h);
	switch (ctrl_web_auth(ctx, conn, method, url, &req->caller)) {
	case CTRL_WEB_AUTH_DENIED:
		*res = CTRL_ROUTE_QUEUED;
		return 0;
	case CTRL_WEB_AUTH_NONE:
		if (authenticate(ctx, conn, method, req,
				 cw >= 0 ? CTRL_CWM_SERVICE :
					   req->route->service,
				 resp)) {
			if (cw >= 0)
				ctrl_cwm_wrap_error(cw, resp, content_type);
			return 0;
		}
		break;
	case CTRL_WEB_AUTH_OK:
		break;
	}
	if (req->route->auth == CTRL_AUTH_ADMIN && !req->caller.admin) {
		*content_type = "application/json";
		ctrl_reply_err(resp, CTRL_E_ACCESS_DENIED, req->route->deny);
		return 0;
	}
	return 1;
}

enum ctrl_route_result
ctrl_front_serve(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
		 const char *method, const char *url, struct ctrl_http_req *req,
		 struct ctrl_response *resp, const char **content_type)
{
	const struct ctrl_route *r = req->route;
	enum ctrl_route_result res;

	*content_type = JSON11;
	if ((r->auth == CTRL_AUTH_API || r->auth == CTRL_AUTH_ADMIN) &&
	    !api_auth(ctx, conn, method, url, req, resp, content_type, &res))
		return res;
	if (r->fn)
		return r->fn(ctx, conn, method, url, req, resp, content_type);
	if (json11_ok(conn, resp))
		r->op(ctx, &req->caller, req->body.data, req->body.len, resp);
	return CTRL_ROUTE_DONE;
}

void ctrl_front_upload_done(struct ctrl_ctx *ctx, struct ctrl_http_req *req,
			    struct ctrl_response *resp)
{
	req->route->done(ctx, req, resp);
}

/* ------------------------------------------------------------ listing */

static const char *const auth_names[] = {
	[CTRL_AUTH_NONE] = "none",
	[CTRL_AUTH_AGENT] = "agent-token",
	[CTRL_AUTH_RDZV] = "rdzv-token",
	[CTRL_AUTH_BLOB] = "agent-token|sigv4-s3",
	[CTRL_AUTH_S3] = "sigv4-s3",
	[CTRL_AUTH_API] = "sigv4|basic",
	[CTRL_AUTH_ADMIN] = "admin",
};

static const char *const body_names[] = {
	[CTRL_BODY_BUFFERED] = "buffered", [CTRL_BODY_NONE] = "none",
	[CTRL_BODY_FILE] = "file",	   [CTRL_BODY_S3] = "s3",
	[CTRL_BODY_BLOB] = "blob",
};

void ctrl_front_print(FILE *out)
{
	const struct ctrl_route *r;
	size_t b, i;

	for (b = 0; b < N_BLOCKS; b++)
		for (i = 0; i < blocks[b]->n; i++) {
			r = &blocks[b]->rows[i];
			fprintf(out, "%s\t%s\t%s%s%s%s%s\t%s\t%s\t%s\n",
				r->listen == CTRL_LISTEN_BOTH  ? "api,agent" :
				r->listen == CTRL_LISTEN_AGENT ? "agent" :
								 "api",
				r->method,
				r->match == CTRL_MATCH_TARGET ?
					"X-Amz-Target:" :
					"",
				r->pattern, r->sniff_doc ? " (" : "",
				r->sniff_doc ? r->sniff_doc : "",
				r->sniff_doc ? ")" : "", auth_names[r->auth],
				body_names[r->body],
				r->refusal ? "refuses" : "serves");
		}
}
