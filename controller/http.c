#define LOG_TAG "http"

/*
 * The HTTP server's plumbing (libmicrohttpd): the daemons of --listen and
 * --agent-listen, each request's state, reading its body (buffered, into
 * a file, or streamed to the S3 server or the blob store) and sending
 * the answer. Where a request goes is controller/front.c's to say.
 */

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

#include "storage/s3d/blob.h"
#include "controller/ctrl.h"
#include "controller/iopool.h"
#include "controller/replicate.h"
#include "controller/agent_api.h"
#include "controller/front.h"
#include "controller/http.h"
#include "controller/member.h"
#include "controller/obs/logview.h"
#include "controller/obs/metrics.h"
#include "common/hex.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define URI_MAX 8192

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
	if (req->blob_done)
		s3d_blob_reply_release(&req->blob_reply);
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
void ctrl_http_request_id(char out[37])
{
	static _Thread_local unsigned char seed[16];
	static _Thread_local uint64_t count;
	unsigned char b[16];
	uint64_t c;
	int i;

	if (!count && RAND_bytes(seed, sizeof(seed)) != 1)
		memset(seed, 0, sizeof(seed));
	c = ++count;
	memcpy(b, seed, sizeof(b));
	for (i = 15; i >= 8; i--) {
		b[i] ^= (unsigned char)c;
		c >>= 8;
	}
	hex_uuid(b, out);
}

/*
 * A member's answers say the term it leads in, so that an agent that has
 * seen a newer leader refuses what a deposed one still sends
 * (docs/agent-protocol.md, "Members' terms").
 */
static void add_term(struct MHD_Response *mr)
{
	uint64_t term = ctrl_member_term();
	char v[24];

	if (!term)
		return;
	(void)snprintf(v, sizeof(v), "%llu", (unsigned long long)term);
	MHD_add_response_header(mr, "X-Trainctl-Term", v);
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

	ctrl_http_request_id(rid);
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
	add_term(mr);
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

	if (req->blob_done) {
		reply = req->blob_reply; /* ours now */
		req->blob_done = 0;
	} else {
		ctrl_front_blob_fence(ctx, req);
		s3d_blob_finish(req->blob, &reply);
	}
	mr = file_or_buffer(&reply.fd, 0, reply.size, &reply.body);
	if (!mr) {
		s3d_blob_reply_release(&reply);
		return MHD_NO;
	}
	ctrl_http_request_id(rid);
	MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
				reply.content_type ? reply.content_type :
						     "application/json");
	MHD_add_response_header(mr, "x-amzn-RequestId", rid);
	if (reply.last_modified[0])
		MHD_add_response_header(mr, MHD_HTTP_HEADER_LAST_MODIFIED,
					reply.last_modified);
	add_term(mr);
	ret = MHD_queue_response(conn, (unsigned)reply.status, mr);
	MHD_destroy_response(mr);
	log_debug("%s %s -> %d (%lld us)", method, url, reply.status,
		  (long long)(time_mono_us() - req->t0_us));
	s3d_blob_reply_release(&reply);
	return ret;
}

/* A blob write of a replicated controller: its copy waits on the network. */
static void blob_finish_job(void *arg)
{
	struct request *req = arg;

	s3d_blob_finish(req->blob, &req->blob_reply);
	ctrl_repl_blob(req->blob, &req->blob_reply);
	req->blob_done = 1;
}

/* The S3 step that may wait on the disk: on an I/O worker when it can. */
static void s3_finish_job(void *arg)
{
	struct request *req = arg;

	s3d_finish(req->s3, &req->s3_reply);
	ctrl_repl_s3(req->s3, &req->s3_reply);
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
	add_term(mr);
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

/* Seconds a connection that sent a request's headers may stay idle. */
#define IDLE_TIMEOUT_S 120

/*
 * The first call of a request, with its headers: the front door picks its
 * route (controller/front.h). CTRL_FRONT_SEND: resp is filled, or the
 * body is too big.
 */
static enum ctrl_front_start
start_request(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	      const char *url, const char *method, struct request *req,
	      struct ctrl_response *resp, const char **content_type)
{
	struct buf why = BUF_INIT;
	int status;

	req->started = 1;
	/*
	 * Its headers are in: until it is answered the connection may idle
	 * as long as any (a long-poll, a slow upload); the short
	 * --header-timeout holds until here and again after the answer.
	 */
	(void)MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
					(unsigned)IDLE_TIMEOUT_S);
	/* A replicated controller's leader that was frozen answers nothing
	 * until it knows it still leads: no stale read (docs/ha.md). */
	if (!ctrl_member_serving()) {
		ctrl_reply_error(resp, 503, "ServiceUnavailable",
				 "this member's leadership is being checked; "
				 "retry");
		return CTRL_FRONT_SEND;
	}
	status = ctrl_member_check_term(
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					    "X-Trainctl-Term"),
		&why);
	if (status) {
		ctrl_reply_error(resp, status,
				 status == 503 ? "ServiceUnavailable" :
						 "ValidationException",
				 why.data);
		buf_release(&why);
		return CTRL_FRONT_SEND;
	}
	return ctrl_front_start(ctx, conn, method, url, req, resp,
				content_type);
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

/* A request whose body streams to the S3 server or the blob store. */
static enum MHD_Result stream(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			      struct request *req, const char *method,
			      const char *url, const char *data, size_t *size)
{
	if (req->s3) {
		if (*size) {
			s3d_data(req->s3, data, *size);
			*size = 0;
			return MHD_YES;
		}
		if (req->s3_done)
			return send_s3(conn, req, method);
		if (!ctrl_iopool_run(ctx->iopool, conn, s3_finish_job, req))
			return MHD_YES; /* resumed when the step is done */
		s3_finish_job(req);
		return send_s3(conn, req, method);
	}
	if (*size) {
		(void)s3d_blob_data(req->blob, data, *size);
		*size = 0;
		return MHD_YES;
	}
	if (!req->blob_done && ctrl_repl_on() &&
	    (!strcmp(method, "PUT") || !strcmp(method, "DELETE"))) {
		ctrl_front_blob_fence(ctx, req);
		if (!ctrl_iopool_run(ctx->iopool, conn, blob_finish_job, req))
			return MHD_YES; /* resumed when the step is done */
		blob_finish_job(req);
	}
	return send_blob(ctx, conn, req, method, url);
}

/*
 * The answer once the body is read, into resp; 0 when the route parked
 * the request or queued its own answer.
 */
static int answer(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
		  const char *method, const char *url, struct request *req,
		  struct ctrl_response *resp, const char **content_type,
		  size_t *upload_data_size)
{
	enum ctrl_route_result rr;

	if (req->too_big) {
		struct buf msg = BUF_INIT;

		(void)buf_addf(&msg, "request body is larger than %ld bytes",
			       ctx->cfg.body_max);
		ctrl_reply_err(resp, CTRL_E_TOO_LARGE, msg.data);
		buf_release(&msg);
		/* Answer at once; MHD closes the connection afterwards. */
		*upload_data_size = 0;
		return 1;
	}
	if (req->sink_fd >= 0) {
		ctrl_front_upload_done(ctx, req, resp);
		return 1;
	}
	rr = ctrl_front_serve(ctx, conn, method, url, req, resp, content_type);
	return rr != CTRL_ROUTE_SUSPENDED && rr != CTRL_ROUTE_QUEUED;
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
	enum MHD_Result ret = MHD_YES;

	(void)version;
	if (!req)
		return MHD_NO;
	memset(&resp, 0, sizeof(resp));
	buf_init(&resp.body, 0);
	if (!req->started) {
		if (start_request(ctx, conn, url, method, req, &resp,
				  &content_type) == CTRL_FRONT_READ) {
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
	if (req->s3 || req->blob)
		return stream(ctx, conn, req, method, url, upload_data,
			      upload_data_size);
	if (take_body(req, upload_data, upload_data_size))
		return MHD_YES;
	if (!answer(ctx, conn, method, url, req, &resp, &content_type,
		    upload_data_size))
		goto out;
send:
	ctrl_metrics_request(conn, method, url, resp.status,
			     time_mono_us() - req->t0_us);
	ret = send_response(conn, &resp, content_type, method, url, req);
out:
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
