#define LOG_TAG "web"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <microhttpd.h>
#include <openssl/crypto.h>

#include "api/job_spec.h"
#include "api/requests.h"
#include "api/web_json.h"
#include "controller/tuning.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/request.h"
#include "controller/obs/metrics.h"
#include "controller/obs/telemetry.h"
#include "controller/obs/web.h"
#include "controller/caller.h"
#include "controller/reply.h"
#include "db/db.h"
#include "db/run.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define REALM "trainctl"
#define NAME_MAX_LEN 63
#define LIST_DEFAULT 200
#define POLL_DEFAULT_S 25
#define POLL_MAX_S 60
/*
 * A parked long-poll wakes at once on new log lines (it waits on the log
 * followers' list) and looks at jobs and hosts again this often.
 */
#define RECHECK_MS 500

/*
 * "/" is the page for a GET without X-Amz-Target; anything else sent to
 * "/" is a JSON 1.1 call (or a wrong one) and stays the API's.
 */
static int is_page(struct MHD_Connection *conn, const char *method,
		   const char *url)
{
	if (!strcmp(url, "/"))
		return (!strcmp(method, "GET") || !strcmp(method, "HEAD")) &&
		       !MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    "X-Amz-Target");
	return !strcmp(url, "/ui") || !strncmp(url, "/ui/", 4);
}

/* --------------------------------------------------------------- auth */

static const struct api_credential *basic_ok(struct ctrl_ctx *ctx,
					     const char *user, const char *pass)
{
	const struct api_credential *who = NULL;
	size_t i;
	size_t n = strlen(pass);

	for (i = 0; i < ctx->creds.n; i++) {
		const struct api_credential *c = &ctx->creds.items[i];

		if (strcmp(c->access_key_id, user))
			continue;
		if (strlen(c->secret_access_key) == n &&
		    !CRYPTO_memcmp(c->secret_access_key, pass, n))
			who = c;
	}
	return who;
}

/* 401 asking for Basic credentials, or (status 403) a plain refusal. */
static void queue_denied(struct MHD_Connection *conn, int status,
			 const char *message)
{
	struct buf body = BUF_INIT;
	struct MHD_Response *mr;
	size_t len;
	char *data;

	(void)api_error_body(status == 401 ? "UnrecognizedClientException" :
					     "AccessDeniedException",
			     message, &body);
	data = buf_detach(&body, &len);
	mr = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	if (!mr) {
		free(data);
		return;
	}
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
				"application/json");
	if (status == 401)
		(void)MHD_queue_basic_auth_fail_response(conn, REALM, mr);
	else
		(void)MHD_queue_response(conn, (unsigned)status, mr);
	MHD_destroy_response(mr);
}

static void queue_401(struct MHD_Connection *conn, const char *message)
{
	queue_denied(conn, 401, message);
}

/* Whether the peer is this machine (127.0.0.0/8 or ::1). */
static int peer_is_loopback(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)
				      ->sin_addr.s_addr) >>
			24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

/* Whether the browser says another site made this request. */
static int cross_site(struct MHD_Connection *conn)
{
	const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						       "Sec-Fetch-Site");

	return site && strcmp(site, "same-origin") && strcmp(site, "none");
}

enum ctrl_web_auth ctrl_web_auth(struct ctrl_ctx *ctx,
				 struct MHD_Connection *conn,
				 const char *method, const char *url,
				 struct ctrl_caller *caller)
{
	const struct api_credential *who = NULL;
	char *pass = NULL;
	char *user;
	int ok;

	if (!ctx->auth_enabled)
		return CTRL_WEB_AUTH_OK;
	/*
	 * A browser sends cached Basic credentials with every request to us,
	 * also one a form on another site makes it send (cross-site request
	 * forgery). So Basic reads and never writes: the page only reads,
	 * anything else must carry a SigV4 signature, which no other site
	 * can make. Data another site asks for is refused too; the page's
	 * own files may be opened from a link.
	 */
	if ((strcmp(method, "GET") && strcmp(method, "HEAD")) ||
	    (!is_page(conn, method, url) && cross_site(conn)))
		return CTRL_WEB_AUTH_NONE;
	user = MHD_basic_auth_get_username_password(conn, &pass);
	if (!user) {
		if (pass)
			MHD_free(pass);
		if (!is_page(conn, method, url))
			return CTRL_WEB_AUTH_NONE;
		queue_401(conn, "Sign in with an access key id and its secret "
				"access key.");
		return CTRL_WEB_AUTH_DENIED;
	}
	/* Basic sends the secret itself: only over TLS or on this machine. */
	if (!ctx->tls_cert_pem && !peer_is_loopback(conn)) {
		log_warn("web: refused HTTP Basic in clear text from another "
			 "machine for '%.64s'",
			 user);
		MHD_free(user);
		if (pass)
			MHD_free(pass);
		queue_denied(conn, 403,
			     "Signing in with a secret key over plain HTTP is "
			     "refused: serve the page over TLS (trainctld "
			     "--tls-cert/--tls-key) or open it on the "
			     "controller's own machine.");
		return CTRL_WEB_AUTH_DENIED;
	}
	who = pass ? basic_ok(ctx, user, pass) : NULL;
	ok = who != NULL;
	if (ok)
		ctrl_caller_of(who, caller);
	if (!ok)
		log_info("web: wrong credentials for '%.64s'", user);
	MHD_free(user);
	if (pass)
		MHD_free(pass);
	if (ok)
		return CTRL_WEB_AUTH_OK;
	queue_401(conn, "The access key id or secret key is not right.");
	return CTRL_WEB_AUTH_DENIED;
}

/* ------------------------------------------------------------- assets */

static const struct ctrl_web_asset *find_asset(const char *url)
{
	size_t i;

	if (!strcmp(url, "/") || !strcmp(url, "/ui") || !strcmp(url, "/ui/"))
		url = "/ui/index.html";
	for (i = 0; i < ctrl_web_n_assets; i++)
		if (!strcmp(ctrl_web_assets[i].path, url))
			return &ctrl_web_assets[i];
	return NULL;
}

static enum ctrl_route_result serve_asset(struct MHD_Connection *conn,
					  const char *method, const char *url,
					  struct ctrl_http_req *req,
					  struct ctrl_response *resp,
					  const char **content_type)
{
	const struct ctrl_web_asset *a = find_asset(url);
	const char *inm;
	struct MHD_Response *mr;
	unsigned status = MHD_HTTP_OK;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		ctrl_reply_err(resp, CTRL_E_METHOD,
			       "use GET on the status page");
		return CTRL_ROUTE_DONE;
	}
	if (!a) {
		resp->status = 404;
		(void)buf_adds(&resp->body, "not found\n");
		*content_type = "text/plain; charset=utf-8";
		return CTRL_ROUTE_DONE;
	}
	inm = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					  MHD_HTTP_HEADER_IF_NONE_MATCH);
	/* The table is static and lives as long as the process, so MHD may
	 * send straight from it. */
	if (inm && !strcmp(inm, a->etag)) {
		status = MHD_HTTP_NOT_MODIFIED;
		mr = MHD_create_response_from_buffer(0, NULL,
						     MHD_RESPMEM_PERSISTENT);
	} else {
		mr = MHD_create_response_from_buffer(a->len, (void *)a->data,
						     MHD_RESPMEM_PERSISTENT);
	}
	if (!mr) {
		ctrl_reply_err_code(resp, ERR_NOMEM, "cannot answer");
		return CTRL_ROUTE_DONE;
	}
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
				a->content_type);
	MHD_add_response_header(mr, MHD_HTTP_HEADER_ETAG, a->etag);
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(mr, "X-Frame-Options", "DENY");
	MHD_add_response_header(mr, "Content-Security-Policy",
				"default-src 'self'; style-src 'self' "
				"'unsafe-inline'; img-src 'self' data:");
	if (MHD_queue_response(conn, status, mr) != MHD_YES) {
		MHD_destroy_response(mr);
		ctrl_reply_err_code(resp, ERR_INTERNAL, "cannot queue answer");
		return CTRL_ROUTE_DONE;
	}
	MHD_destroy_response(mr);
	ctrl_metrics_request(conn, method, url, (int)status,
			     time_mono_us() - req->t0_us);
	return CTRL_ROUTE_QUEUED;
}

/* ---------------------------------------------------------- jobs list */

static const char *query(struct MHD_Connection *conn, const char *key)
{
	return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
}

static int status_known(const char *s)
{
	static const char *const statuses[] = { "InProgress", "Completed",
						"Failed",     "Stopping",
						"Stopped",    "Deleting" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(statuses); i++)
		if (!strcmp(statuses[i], s))
			return 1;
	return 0;
}

/* An epoch-milliseconds query argument; 0 when absent, -1 when bad. */
static int64_t ms_arg(const char *s)
{
	char *end;
	long long v;

	if (!s || !*s)
		return 0;
	v = strtoll(s, &end, 10);
	return *end || v <= 0 ? -1 : v;
}

/* sort=name|created|status and order=asc|desc. Returns 0 or -1. */
static int list_sort(struct MHD_Connection *conn, struct db_list_query *q)
{
	const char *sort = query(conn, "sort");
	const char *order = query(conn, "order");

	if (sort && !strcmp(sort, "name"))
		q->sort = DB_SORT_NAME;
	else if (sort && !strcmp(sort, "status"))
		q->sort = DB_SORT_STATUS;
	else if (sort && *sort && strcmp(sort, "created"))
		return -1;
	if (order && *order && strcmp(order, "asc") && strcmp(order, "desc"))
		return -1;
	/* Newest first; names and statuses in alphabetical order. */
	q->descending = q->sort == DB_SORT_CREATION;
	if (order && *order)
		q->descending = !strcmp(order, "desc");
	return 0;
}

/* tag=KEY or KEY=VALUE, split into tag. Returns 0 or -1. */
static int tag_filter(const char *t, struct db_list_query *q, struct buf *tag)
{
	char *eq;

	if (!t || !*t)
		return 0;
	if (strlen(t) > 256 || buf_adds(tag, t))
		return -1;
	eq = strchr(tag->data, '=');
	if (eq)
		*eq = '\0';
	if (!*tag->data)
		return -1;
	q->tag_key = tag->data;
	q->tag_value = eq ? eq + 1 : NULL;
	return 0;
}

/*
 * The list's sort and filters beyond name and status: sort=name|created|
 * status, order=asc|desc, created_after, created_before (epoch ms),
 * instance_type, tag=KEY or KEY=VALUE (split into tag). Returns 0 or -1.
 */
static int list_filters(struct MHD_Connection *conn, struct db_list_query *q,
			struct buf *tag)
{
	const char *itype = query(conn, "instance_type");

	if (list_sort(conn, q))
		return -1;
	q->created_after_ms = ms_arg(query(conn, "created_after"));
	q->created_before_ms = ms_arg(query(conn, "created_before"));
	if (q->created_after_ms < 0 || q->created_before_ms < 0)
		return -1;
	if (itype && *itype) {
		if (strlen(itype) > 256)
			return -1;
		q->instance_type = itype;
	}
	return tag_filter(query(conn, "tag"), q, tag);
}

static void jobs_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      struct MHD_Connection *conn, struct ctrl_response *resp)
{
	struct buf tag = BUF_INIT;
	const char *status = query(conn, "status");
	const char *name = query(conn, "name");
	const char *limit = query(conn, "limit");
	struct db_list_query q = { 0 };
	struct db_job *jobs = NULL;
	struct db_job *full = NULL;
	struct api_web_job *rows = NULL;
	struct buf err = BUF_INIT;
	char *next = NULL;
	size_t n = 0, i;
	int ret;

	q.limit = limit ? atoi(limit) : LIST_DEFAULT;
	q.token = query(conn, "next_token");
	q.name_contains = name && *name ? name : NULL;
	q.status = status && *status ? status : NULL;
	q.sort = DB_SORT_CREATION;
	q.descending = 1;
	q.owner = who->admin ? NULL : who->owner;
	if (q.limit < 1 || q.limit > 1000 ||
	    (q.status && !status_known(q.status)) ||
	    (q.name_contains && strlen(q.name_contains) > NAME_MAX_LEN) ||
	    list_filters(conn, &q, &tag)) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION,
			       "limit must be 1..1000, status a "
			       "TrainingJobStatus, name at most 63 "
			       "characters, sort name, created or status, "
			       "order asc or desc, created_after and "
			       "created_before epoch milliseconds, "
			       "instance_type and tag (KEY or KEY=VALUE) at "
			       "most 256 characters");
		buf_release(&tag);
		return;
	}
	ret = db_job_list(ctx->db, &q, &jobs, &n, &next, &err);
	if (ret) {
		/* ERR_INVALID: a next_token of another query. */
		ctrl_reply_err_code(resp, ret, err.data);
		goto out;
	}
	rows = xcalloc(n + 1, sizeof(*rows));
	full = xcalloc(n + 1, sizeof(*full));
	for (i = 0; i < n; i++) {
		/* The list leaves instances and attempt out; a job's row
		 * has them. A job deleted meanwhile keeps its list row. */
		const struct db_job *j = &jobs[i];

		buf_reset(&err);
		if (!db_job_get(ctx->db, jobs[i].name, &full[i], &err))
			j = &full[i];
		rows[i].name = j->name;
		rows[i].status = j->status;
		rows[i].secondary_status = j->secondary_status;
		rows[i].instance_type = j->instance_type;
		rows[i].instance_count = j->instance_count;
		rows[i].attempt = j->attempt;
		rows[i].failure_reason = j->failure_reason;
		rows[i].creation_ms = j->creation_ms;
		rows[i].start_ms = j->start_ms;
		rows[i].end_ms = j->end_ms;
		rows[i].last_modified_ms = j->last_modified_ms;
	}
	resp->status = 200;
	buf_reset(&resp->body);
	if (api_web_jobs_build(rows, n, next, &resp->body))
		ctrl_reply_err_code(resp, ERR_INTERNAL, "cannot encode jobs");
out:
	for (i = 0; i < n; i++) {
		db_job_release(&jobs[i]);
		if (full)
			db_job_release(&full[i]);
	}
	free(jobs);
	free(full);
	free(rows);
	free(next);
	buf_release(&err);
	buf_release(&tag);
}

/* ----------------------------------------------------------- one job */

/*
 * GET /v1/ui/jobs/NAME/request: the CreateTrainingJob body the job was
 * created with, for the page's "clone" (a new job from the same request).
 */
static void job_request(struct ctrl_ctx *ctx, const char *name,
			struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	struct db_job job;
	int ret = db_job_get(ctx->db, name, &job, &err);

	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
	} else {
		resp->status = 200;
		buf_reset(&resp->body);
		if (buf_adds(&resp->body,
			     job.spec_json ? job.spec_json : job.request_json))
			ctrl_reply_err(resp, CTRL_E_INTERNAL,
				       "request too large");
		db_job_release(&job);
	}
	buf_release(&err);
}

/* The state of a host as GET /v1/hosts names it. Caller holds hosts_lock. */
static const char *host_state(struct ctrl_host *h, int busy)
{
	if (!h || !h->registered)
		return "provisioning";
	if (h->lost)
		return "lost";
	return busy ? "busy" : "ready";
}

/* The MetricDefinitions names of a stored job (copies in *names). */
static size_t metric_names(const struct db_job *job, char ***names)
{
	const char *spec = job->spec_json ? job->spec_json : job->request_json;
	struct api_job_spec s;
	struct buf err = BUF_INIT;
	size_t i, n = 0;

	*names = NULL;
	if (spec && !api_job_spec_load(spec, strlen(spec), &s, &err)) {
		*names = xcalloc(s.n_metrics + 1, sizeof(**names));
		for (i = 0; i < s.n_metrics; i++)
			(*names)[n++] = xstrdup(s.metrics[i].name);
		api_job_spec_release(&s);
	}
	buf_release(&err);
	return n;
}

static void free_strings(char **s, size_t n)
{
	size_t i;

	for (i = 0; s && i < n; i++)
		free(s[i]);
	free(s);
}

/* The earliest non-zero exit among the reports. */
static int first_failure(const struct api_web_host *h, size_t n,
			 struct api_web_failure *f)
{
	size_t i, k;
	int found = 0;

	for (i = 0; i < n; i++) {
		for (k = 0; k < h[i].n_procs; k++) {
			const struct api_proc_report *p = &h[i].procs[k];

			if (!p->exited || (p->exit_code == 0 && !p->signal))
				continue;
			if (found && p->exited_ms >= f->exited_ms)
				continue;
			found = 1;
			f->algo = h[i].algo;
			f->host = h[i].host;
			f->rank = p->rank;
			f->exit_code = p->exit_code;
			f->signal = p->signal;
			f->exited_ms = p->exited_ms;
		}
	}
	return found;
}

/* The hosts of a job's current attempt, as the runtime view shows them. */
struct runtime_hosts {
	struct db_assignment *as;
	size_t n; /* assignments; every array below has n entries */
	struct api_web_host *hosts;
	struct api_status *reports; /* parsed from as[i].report_json */
	char (*algos)[32];
	struct tm_host_sample *tm;    /* latest telemetry */
	struct tm_rank_sample *procs; /* the job's processes there */
};

static void runtime_hosts_init(struct runtime_hosts *rh, size_t n)
{
	rh->n = n;
	rh->hosts = xcalloc(n + 1, sizeof(*rh->hosts));
	rh->reports = xcalloc(n + 1, sizeof(*rh->reports));
	rh->algos = xcalloc(n + 1, sizeof(*rh->algos));
	rh->tm = xcalloc(n + 1, sizeof(*rh->tm));
	rh->procs = xcalloc(n + 1, sizeof(*rh->procs));
}

static void runtime_hosts_release(struct runtime_hosts *rh)
{
	size_t i;

	for (i = 0; i < rh->n; i++) {
		api_status_release(&rh->reports[i]);
		tm_host_sample_release(&rh->tm[i]);
	}
	free(rh->tm);
	free(rh->procs);
	free(rh->reports);
	free(rh->hosts);
	free(rh->algos);
	db_assignments_free(rh->as, rh->n);
}

/* Sets *out to the latest sample's figures of job's processes on algo. */
static int job_procs(const struct ctrl_host *h, const struct db_job *job,
		     const char *algo, struct tm_rank_sample *out)
{
	int found = 0;
	size_t k;

	/* This job's processes there: its name, uid and algo. */
	for (k = 0; k < h->tm_latest.n_ranks; k++) {
		const struct tm_rank_sample *r = &h->tm_latest.ranks[k];

		if (strcmp(r->job, job->name) || strcmp(r->algo, algo) ||
		    (r->job_uid && job->uid && strcmp(r->job_uid, job->uid)))
			continue;
		out->cpu_percent = r->cpu_percent;
		out->rss_bytes = r->rss_bytes;
		out->procs = r->procs;
		found = 1;
	}
	return found;
}

/* Under hosts_lock: each host's state, heartbeat and telemetry. */
static void runtime_hosts_live(struct ctrl_ctx *ctx, const struct db_job *job,
			       struct runtime_hosts *rh)
{
	int64_t now = time_mono_ms();
	size_t i;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < rh->n; i++) {
		const struct db_assignment *as = &rh->as[i];
		struct api_web_host *wh = &rh->hosts[i];
		struct ctrl_host *h = ctrl_hosts_find(ctx, as->host);

		snprintf(rh->algos[i], sizeof(rh->algos[i]), "algo-%d",
			 as->host_index + 1);
		wh->algo = rh->algos[i];
		wh->host = as->host;
		wh->host_state = host_state(h, 1);
		wh->heartbeat_age_ms =
			h && h->last_seen_ms ? now - h->last_seen_ms : -1;
		wh->attempt = as->attempt;
		wh->action = as->action;
		wh->phase = as->phase;
		if (!h || !ctrl_tm_latest(h, &rh->tm[i]))
			continue;
		wh->telemetry = &rh->tm[i];
		if (job_procs(h, job, rh->algos[i], &rh->procs[i]))
			wh->job_procs = &rh->procs[i];
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

/* Each host's processes and failure from its agent's last report. */
static void runtime_hosts_reports(struct runtime_hosts *rh, struct buf *err)
{
	size_t i;

	for (i = 0; i < rh->n; i++) {
		const char *json = rh->as[i].report_json;
		struct api_status *r = &rh->reports[i];

		buf_reset(err);
		if (!json || api_status_parse(json, strlen(json), r, err))
			continue;
		if (r->n == 1) {
			rh->hosts[i].procs = r->items[0].procs;
			rh->hosts[i].n_procs = r->items[0].n_procs;
			rh->hosts[i].failure = r->items[0].failure;
			rh->hosts[i].error = r->items[0].error;
		}
	}
}

/* The job's log streams, named job/stream (the names in *full). */
static struct api_web_stream *runtime_streams(const struct db_job *job,
					      const struct db_log_stream *ls,
					      size_t n, char ***full)
{
	struct api_web_stream *streams = xcalloc(n + 1, sizeof(*streams));
	size_t i;

	*full = xcalloc(n + 1, sizeof(**full));
	for (i = 0; i < n; i++) {
		struct buf b = BUF_INIT;

		(void)buf_addf(&b, "%s/%s", job->name, ls[i].name);
		(*full)[i] = buf_detach(&b, NULL);
		streams[i].name = (*full)[i];
		streams[i].host_index = ls[i].host_index;
		streams[i].created_ms = ls[i].created_ms;
	}
	return streams;
}

static void job_runtime(struct ctrl_ctx *ctx, const char *name,
			struct ctrl_response *resp)
{
	struct db_job job;
	struct db_log_stream *ls = NULL;
	struct api_web_stream *streams = NULL;
	struct runtime_hosts rh = { 0 };
	struct api_web_failure fail;
	struct api_web_runtime rt;
	struct buf err = BUF_INIT;
	char **full = NULL;
	char **names = NULL;
	size_t n_as = 0, n_ls = 0, n_names = 0;
	int ret;

	memset(&rt, 0, sizeof(rt));
	ret = db_job_get(ctx->db, name, &job, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		buf_release(&err);
		return;
	}
	if (job.attempt > 0)
		(void)db_assignments_list(ctx->db, job.name, NULL, job.attempt,
					  &rh.as, &n_as, &err);
	(void)db_log_streams(ctx->db, job.name, &ls, &n_ls, &err);
	n_names = metric_names(&job, &names);
	runtime_hosts_init(&rh, n_as);
	runtime_hosts_live(ctx, &job, &rh);
	runtime_hosts_reports(&rh, &err);
	streams = runtime_streams(&job, ls, n_ls, &full);
	rt.name = job.name;
	rt.attempt = job.attempt;
	rt.stop_reason = job.stop_reason;
	rt.hosts = rh.hosts;
	rt.n_hosts = n_as;
	rt.first_failure = first_failure(rh.hosts, n_as, &fail) ? &fail : NULL;
	rt.streams = streams;
	rt.n_streams = n_ls;
	rt.metric_names = (const char *const *)names;
	rt.n_metric_names = n_names;
	resp->status = 200;
	buf_reset(&resp->body);
	if (api_web_runtime_build(&rt, &resp->body))
		ctrl_reply_err_code(resp, ERR_INTERNAL, "cannot encode job");
	runtime_hosts_release(&rh);
	free(streams);
	free_strings(full, n_ls);
	free_strings(names, n_names);
	db_log_streams_free(ls, n_ls);
	db_job_release(&job);
	buf_release(&err);
}

static void job_metrics(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			const char *name, struct ctrl_response *resp)
{
	const char *since = query(conn, "since_ms");
	int64_t after = since ? strtoll(since, NULL, 10) : 0;
	struct db_job job;
	struct db_metric *pts = NULL;
	struct api_web_series *series = NULL;
	struct api_web_point *points = NULL;
	struct buf err = BUF_INIT;
	char **names = NULL;
	int64_t last = 0;
	size_t n_pts = 0, n_names = 0, n_series = 0, n_points = 0, i, k;
	int ret;

	ret = db_job_get(ctx->db, name, &job, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		buf_release(&err);
		return;
	}
	n_names = metric_names(&job, &names);
	ret = db_metric_series(ctx->db, job.name, NULL, &pts, &n_pts, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		goto out;
	}
	/* Series in MetricDefinitions order, then any others (ordered by
	 * name, as the store returns them). */
	series = xcalloc(n_names + n_pts + 1, sizeof(*series));
	points = xcalloc(n_pts + 1, sizeof(*points));
	for (i = 0; i < n_names; i++)
		series[n_series++].name = names[i];
	for (i = 0; i < n_pts; i++) {
		for (k = 0; k < n_series; k++)
			if (!strcmp(series[k].name, pts[i].name))
				break;
		if (k == n_series)
			series[n_series++].name = pts[i].name;
	}
	/* Points come grouped by name and in time order within a name. */
	for (k = 0; k < n_series; k++) {
		series[k].points = points + n_points;
		for (i = 0; i < n_pts; i++) {
			if (strcmp(pts[i].name, series[k].name) ||
			    pts[i].timestamp_ms <= after)
				continue;
			points[n_points].ts_ms = pts[i].timestamp_ms;
			points[n_points].value = pts[i].value;
			points[n_points].host = pts[i].host;
			n_points++;
			series[k].n++;
			if (pts[i].timestamp_ms > last)
				last = pts[i].timestamp_ms;
		}
	}
	resp->status = 200;
	buf_reset(&resp->body);
	if (api_web_metrics_build(series, n_series, last, &resp->body))
		ctrl_reply_err_code(resp, ERR_INTERNAL,
				    "cannot encode metrics");
out:
	for (i = 0; i < n_pts; i++)
		free(pts[i].name);
	free(pts);
	free(series);
	free(points);
	free_strings(names, n_names);
	db_job_release(&job);
	buf_release(&err);
}

/* ------------------------------------------------------------ changes */

/*
 * What a client has seen, as the cursor "M.C.L.H": the newest job change
 * time, the number of jobs, the log version and a hash of hosts and
 * assignments.
 */
struct cursor {
	long long modified_ms;
	long long jobs;
	long long logs;
	unsigned long long hosts;
};

static int cursor_parse(const char *s, struct cursor *c)
{
	char tail;

	return s && sscanf(s, "%lld.%lld.%lld.%llu%c", &c->modified_ms,
			   &c->jobs, &c->logs, &c->hosts, &tail) == 4 ?
		       0 :
		       ERR_INVALID;
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return (h ^ 0xff) * 1099511628211ULL;
}

static uint64_t fnv_int(uint64_t h, long long v)
{
	char num[32];

	snprintf(num, sizeof(num), "%lld", v);
	return fnv(h, num);
}

static unsigned long long hosts_hash(struct ctrl_ctx *ctx)
{
	struct db_assignment *as = NULL;
	struct buf err = BUF_INIT;
	uint64_t h = 14695981039346656037ULL;
	size_t n = 0, i;

	(void)db_assignments_list(ctx->db, NULL, NULL, 0, &as, &n, &err);
	for (i = 0; i < n; i++) {
		h = fnv(h, as[i].job);
		h = fnv_int(h, as[i].attempt);
		h = fnv_int(h, as[i].host_index);
		h = fnv(h, as[i].host);
		h = fnv(h, as[i].action);
		h = fnv(h, as[i].phase);
		h = fnv(h, as[i].report_json);
	}
	db_assignments_free(as, n);
	buf_release(&err);
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		h = fnv(h, ctx->hosts[i]->name);
		h = fnv(h, ctx->hosts[i]->address);
		h = fnv_int(h, ctx->hosts[i]->registered * 2 +
				       ctx->hosts[i]->lost);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	return h;
}

/* The newest last_modified_ms after `after` (after itself if none). */
static long long newest_change(struct ctrl_ctx *ctx, long long after)
{
	struct db_list_query q = { 0 };
	struct db_job *jobs = NULL;
	struct buf err = BUF_INIT;
	char *next = NULL;
	long long newest = after;
	size_t n = 0, i;

	q.limit = 1000;
	q.modified_after_ms = after;
	if (!db_job_list(ctx->db, &q, &jobs, &n, &next, &err)) {
		for (i = 0; i < n; i++) {
			if (jobs[i].last_modified_ms > newest)
				newest = jobs[i].last_modified_ms;
			db_job_release(&jobs[i]);
		}
	}
	free(jobs);
	free(next);
	buf_release(&err);
	return newest;
}

static int is_stopping(struct ctrl_ctx *ctx)
{
	int s;

	pthread_mutex_lock(&ctx->lock);
	s = ctx->stopping;
	pthread_mutex_unlock(&ctx->lock);
	return s;
}

static enum ctrl_route_result changes(struct ctrl_ctx *ctx,
				      struct MHD_Connection *conn,
				      struct ctrl_http_req *req,
				      struct ctrl_response *resp)
{
	const char *t = query(conn, "timeout");
	struct cursor old, now;
	struct buf cur = BUF_INIT;
	int64_t timeout_us = (int64_t)(t ? atoi(t) : POLL_DEFAULT_S) * 1000000;
	int64_t waited_us = time_mono_us() - req->t0_us;
	int have = !cursor_parse(query(conn, "since"), &old);
	int jobs, logs, hosts;

	if (timeout_us < 0)
		timeout_us = 0;
	if (timeout_us > (int64_t)POLL_MAX_S * 1000000)
		timeout_us = (int64_t)POLL_MAX_S * 1000000;
	/* A first look starts from now: what the page loads next is newer
	 * than anything before. */
	now.modified_ms = have ? newest_change(ctx, old.modified_ms) :
				 time_now_ms();
	now.jobs = db_job_count(ctx->db, NULL);
	now.hosts = hosts_hash(ctx);
	/* Under hosts_lock from reading the log version to parking, so that
	 * no new line slips in between (logs.c bumps it under that lock). */
	pthread_mutex_lock(&ctx->hosts_lock);
	now.logs = ctx->log_version;
	jobs = !have || now.modified_ms != old.modified_ms ||
	       now.jobs != old.jobs;
	logs = !have || now.logs != old.logs;
	hosts = !have || now.hosts != old.hosts;
	if (!jobs && !logs && !hosts && waited_us < timeout_us &&
	    !is_stopping(ctx)) {
		int64_t left_ms = (timeout_us - waited_us) / 1000 + 1;

		req->suspended = 1;
		MHD_suspend_connection(conn);
		ctrl_waiter_add(ctx, &ctx->log_waiters, conn, &req->resumed,
				time_mono_ms() + (left_ms < RECHECK_MS ?
							  left_ms :
							  RECHECK_MS));
		pthread_mutex_unlock(&ctx->hosts_lock);
		return CTRL_ROUTE_SUSPENDED;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	req->resumed = 0;
	(void)buf_addf(&cur, "%lld.%lld.%lld.%llu", now.modified_ms, now.jobs,
		       now.logs, now.hosts);
	resp->status = 200;
	buf_reset(&resp->body);
	if (api_web_changes_build(cur.data, jobs, logs, hosts, &resp->body))
		ctrl_reply_err_code(resp, ERR_INTERNAL, "cannot encode cursor");
	buf_release(&cur);
	return CTRL_ROUTE_DONE;
}

/* GET /v1/ui/tuning-jobs[/NAME]: the tuning-job views of the page. */
static void tuning_view(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			const char *rest, struct ctrl_response *resp)
{
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	int ret;

	if (!*rest) {
		ret = ctrl_tuning_page_list(ctx, who, &out, &err);
	} else if (rest[0] != '/' || !rest[1] || strchr(rest + 1, '/') ||
		   strlen(rest + 1) > 32) {
		ctrl_reply_err(resp, CTRL_E_NO_SUCH_PATH, "no such resource");
		return;
	} else {
		ret = ctrl_tuning_page_job(ctx, who, rest + 1, &out, &err);
	}
	if (ret == ERR_NOTFOUND)
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND, err.data);
	else if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		ctrl_reply_json(resp, &out);
	buf_release(&err);
	buf_release(&out);
}

/* ------------------------------------------------------------- routes */

/* The page and its files: "/", /ui, /ui/... */
static enum ctrl_route_result
web_page(struct ctrl_ctx *ctx, struct MHD_Connection *conn, const char *method,
	 const char *url, struct ctrl_http_req *req, struct ctrl_response *resp,
	 const char **content_type)
{
	(void)ctx;
	return serve_asset(conn, method, url, req, resp, content_type);
}

static enum ctrl_route_result
web_metrics(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	    const char *method, const char *url, struct ctrl_http_req *req,
	    struct ctrl_response *resp, const char **content_type)
{
	(void)conn;
	(void)method;
	(void)url;
	(void)req;
	*content_type = CTRL_METRICS_CONTENT_TYPE;
	ctrl_metrics_serve(ctx, resp);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result
web_changes(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	    const char *method, const char *url, struct ctrl_http_req *req,
	    struct ctrl_response *resp, const char **content_type)
{
	(void)method;
	(void)url;
	*content_type = "application/json";
	return changes(ctx, conn, req, resp);
}

static enum ctrl_route_result
web_jobs(struct ctrl_ctx *ctx, struct MHD_Connection *conn, const char *method,
	 const char *url, struct ctrl_http_req *req, struct ctrl_response *resp,
	 const char **content_type)
{
	(void)method;
	(void)url;
	*content_type = "application/json";
	jobs_list(ctx, &req->caller, conn, resp);
	return CTRL_ROUTE_DONE;
}

/* The views of one job, the arg of its row. */
struct job_view {
	void (*fn)(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
		   const char *name, struct ctrl_response *resp);
};

static void view_runtime(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			 const char *name, struct ctrl_response *resp)
{
	(void)conn;
	job_runtime(ctx, name, resp);
}

static void view_request(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			 const char *name, struct ctrl_response *resp)
{
	(void)conn;
	job_request(ctx, name, resp);
}

static void view_telemetry(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			   const char *name, struct ctrl_response *resp)
{
	ctrl_tm_job_route(ctx, name, query(conn, "since_ms"),
			  query(conn, "max"), resp);
}

static const struct job_view runtime_view = { view_runtime },
			     metrics_view = { job_metrics },
			     request_view = { view_request },
			     telemetry_view = { view_telemetry };

/* GET /v1/ui/jobs/NAME[/metrics|/request|/telemetry]. */
static enum ctrl_route_result
web_job(struct ctrl_ctx *ctx, struct MHD_Connection *conn, const char *method,
	const char *url, struct ctrl_http_req *req, struct ctrl_response *resp,
	const char **content_type)
{
	const struct job_view *view = req->route->arg;
	const char *rest = url + strlen("/v1/ui/jobs/");
	size_t n = strcspn(rest, "/");
	char name[NAME_MAX_LEN + 1];
	struct buf err = BUF_INIT;
	int ret;

	(void)method;
	*content_type = "application/json";
	if (n > NAME_MAX_LEN) {
		ctrl_reply_err(resp, CTRL_E_NO_SUCH_PATH, "no such resource");
		return CTRL_ROUTE_DONE;
	}
	memcpy(name, rest, n);
	name[n] = '\0';
	ret = ctrl_caller_check_job(ctx, &req->caller, name, &err);
	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		view->fn(ctx, conn, name, resp);
	buf_release(&err);
	return CTRL_ROUTE_DONE;
}

static enum ctrl_route_result
web_tuning(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	   const char *method, const char *url, struct ctrl_http_req *req,
	   struct ctrl_response *resp, const char **content_type)
{
	(void)conn;
	(void)method;
	*content_type = "application/json";
	tuning_view(ctx, &req->caller, url + strlen("/v1/ui/tuning-jobs"),
		    resp);
	return CTRL_ROUTE_DONE;
}

/* The page itself: "/" for a GET or HEAD without X-Amz-Target. */
static int no_target(const struct ctrl_route_head *h)
{
	return h->target ? -1 : 0;
}

#define READ "GET,HEAD"
#define WEB_ROW(method_, pattern_, fn_)                               \
	CTRL_ROW(CTRL_LISTEN_API, method_, CTRL_MATCH_PATH, pattern_, \
		 CTRL_AUTH_API, CTRL_BODY_BUFFERED, fn_)
#define METRICS_ADMIN "/metrics covers every job: it needs an admin key"

static const struct ctrl_refusal no_such_resource = { CTRL_E_NO_SUCH_PATH,
						      "no such resource",
						      "application/json" };

/* The page's JSON and /metrics are read with GET (or HEAD) only. */
static const struct ctrl_refusal use_get = { CTRL_E_METHOD,
					     "use GET on this resource",
					     "application/json" };

/*
 * The page, its files and the JSON it reads (docs/web.md), and /metrics.
 * A path of no row under /v1/ui/ is "no such resource"; a method other
 * than GET or HEAD on the JSON 405.
 */
static const struct ctrl_route rows[] = {
	{ WEB_ROW(READ, "/", web_page), .sniff = no_target,
	  .sniff_doc = "no X-Amz-Target" },
	{ WEB_ROW("*", "/ui", web_page) },
	{ WEB_ROW("*", "/ui/*", web_page) },
	{ CTRL_ROW(CTRL_LISTEN_API, READ, CTRL_MATCH_PATH, "/metrics",
		   CTRL_AUTH_ADMIN, CTRL_BODY_BUFFERED, web_metrics),
	  .deny = METRICS_ADMIN },
	{ WEB_ROW(READ, "/v1/changes", web_changes) },
	{ WEB_ROW(READ, "/v1/ui/jobs", web_jobs) },
	{ WEB_ROW(READ, "/v1/ui/jobs/{}", web_job), .arg = &runtime_view },
	{ WEB_ROW(READ, "/v1/ui/jobs/{}/metrics", web_job),
	  .arg = &metrics_view },
	{ WEB_ROW(READ, "/v1/ui/jobs/{}/request", web_job),
	  .arg = &request_view },
	{ WEB_ROW(READ, "/v1/ui/jobs/{}/telemetry", web_job),
	  .arg = &telemetry_view },
	{ WEB_ROW(READ, "/v1/ui/tuning-jobs", web_tuning) },
	{ WEB_ROW(READ, "/v1/ui/tuning-jobs/{}", web_tuning) },
	{ WEB_ROW(READ, "/v1/ui/jobs/*", ctrl_route_refuse),
	  .arg = &no_such_resource, .refusal = 1 },
	{ WEB_ROW(READ, "/v1/ui/tuning-jobs/*", ctrl_route_refuse),
	  .arg = &no_such_resource, .refusal = 1 },
	{ WEB_ROW("*", "/metrics", ctrl_route_refuse), .arg = &use_get },
	{ WEB_ROW("*", "/v1/changes", ctrl_route_refuse), .arg = &use_get },
	{ WEB_ROW("*", "/v1/ui/jobs", ctrl_route_refuse), .arg = &use_get },
	{ WEB_ROW("*", "/v1/ui/jobs/*", ctrl_route_refuse), .arg = &use_get },
	{ WEB_ROW("*", "/v1/ui/tuning-jobs", ctrl_route_refuse),
	  .arg = &use_get },
	{ WEB_ROW("*", "/v1/ui/tuning-jobs/*", ctrl_route_refuse),
	  .arg = &use_get },
};

const struct ctrl_route_block ctrl_web_routes = CTRL_ROUTE_BLOCK(rows);
