/*
 * A follower's API (ha/ha.h): each request goes to the leader's API as it
 * came (method, path and query, headers with SigV4's Authorization and
 * the Host it signed, body), and the leader's answer comes back. Nothing
 * is answered here but "no leader". A body too large to hold in memory
 * passes through an unnamed file of the spool folder.
 */
#define _GNU_SOURCE /* O_TMPFILE, mkostemp() */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <microhttpd.h>

#include "ha/ha.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#define LOG_TAG "ha"
#include "common/log.h"
#include "common/banned.h"

/* Marks a forwarded request: a member that is not the leader after all
 * answers it "no leader" rather than forwarding it again. */
#define FORWARDED "X-Trainctl-Forwarded"

struct ha_proxy {
	struct ha *ha;
	struct MHD_Daemon *d;
	size_t max; /* a body held in memory; a larger one is spooled */
	char *spool_dir;
	const struct ha_local_route *local;
};

/*
 * A body larger than the proxy's max goes to an unnamed file of the spool
 * folder (an object of gigabytes passes through as it would reach the
 * leader directly), read back from there.
 */
struct spool {
	int fd; /* -1: the body is in memory */
	int64_t size;
	int64_t pos; /* read back up to here */
	int failed;
};

/* One request being read. */
struct preq {
	char *uri; /* path and query, as sent */
	struct buf body;
	struct spool sp;
	int seen;
	int too_big;
	void *local; /* a request served here (ha_local_route) */
};

static const struct ha_local_route *local_route;

void ha_proxy_set_local(const struct ha_local_route *route)
{
	local_route = route;
}

static int spool_open(const char *dir)
{
	char path[4096];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0 || errno != EOPNOTSUPP)
		return fd;
	/* No O_TMPFILE there: a named file, unlinked at once. */
	(void)snprintf(path, sizeof(path), "%s/.relay-XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		(void)unlink(path);
	return fd;
}

/*
 * Adds n bytes to b, or, past b's limit, to the spool (b's bytes first).
 * 0, or -1 when the spool cannot be written.
 */
static int spool_add(struct spool *sp, struct buf *b, const char *dir,
		     const char *data, size_t n)
{
	if (sp->fd < 0 && !sp->failed && !buf_add(b, data, n))
		return 0;
	if (sp->fd < 0 && !sp->failed) {
		sp->fd = dir ? spool_open(dir) : -1;
		if (sp->fd < 0 || fs_write_all(sp->fd, b->data, b->len)) {
			sp->failed = 1;
			return -1;
		}
		sp->size = (int64_t)b->len;
		buf_reset(b);
	}
	if (sp->failed || fs_write_all(sp->fd, data, n)) {
		sp->failed = 1;
		return -1;
	}
	sp->size += (int64_t)n;
	return 0;
}

static void spool_close(struct spool *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	sp->fd = -1;
}

/* curl reads a spooled request body from here. */
static size_t spool_read(char *out, size_t size, size_t n, void *arg)
{
	struct spool *sp = arg;
	ssize_t got;

	do {
		got = pread(sp->fd, out, size * n, (off_t)sp->pos);
	} while (got < 0 && errno == EINTR);
	if (got < 0)
		return CURL_READFUNC_ABORT;
	sp->pos += got;
	return (size_t)got;
}

/* The leader's answer. */
struct answer {
	long status;
	struct buf body;
	struct spool sp;
	const char *spool_dir;
	struct curl_slist *headers; /* "Name: value" */
	long long length;	    /* its Content-Length, -1: none */
};

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct ha_proxy *p = cls;
	struct preq *r = xcalloc(1, sizeof(*r));

	(void)conn;
	r->uri = xstrdup(uri);
	buf_init(&r->body, p->max);
	r->sp.fd = -1;
	return r;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **req_cls,
		    enum MHD_RequestTerminationCode code)
{
	struct ha_proxy *p = cls;
	struct preq *r = *req_cls;

	(void)conn;
	(void)code;
	if (!r)
		return;
	if (r->local)
		p->local->release(r->local);
	free(r->uri);
	buf_release(&r->body);
	spool_close(&r->sp);
	free(r);
	*req_cls = NULL;
}

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned status,
				 const char *type, const char *msg)
{
	struct buf b = BUF_INIT;
	struct MHD_Response *res;
	enum MHD_Result ret;

	(void)buf_addf(&b, "{\"__type\":\"%s\",\"message\":\"%s\"}", type, msg);
	res = MHD_create_response_from_buffer(b.len, b.data,
					      MHD_RESPMEM_MUST_COPY);
	buf_release(&b);
	MHD_add_response_header(res, "Content-Type",
				"application/x-amz-json-1.1");
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(res, "Retry-After", "1");
	ret = MHD_queue_response(conn, status, res);
	MHD_destroy_response(res);
	return ret;
}

/* Request headers that curl sets itself, or that are per connection. */
static int hop_header(const char *name)
{
	static const char *const names[] = { "Content-Length", "Connection",
					     "Transfer-Encoding", "Expect",
					     "Keep-Alive" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(name, names[i]))
			return 1;
	return 0;
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind,
				  const char *key, const char *value)
{
	struct curl_slist **list = cls;
	struct buf b = BUF_INIT;

	(void)kind;
	if (hop_header(key))
		return MHD_YES;
	(void)buf_addf(&b, "%s: %s", key, value ? value : "");
	*list = curl_slist_append(*list, b.data);
	buf_release(&b);
	return MHD_YES;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;

	if (spool_add(&a->sp, &a->body, a->spool_dir, data, size * n))
		return 0; /* the spool failed: curl fails the transfer */
	return size * n;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n;
	char *line = xstrndup(data, len);
	char *colon = strchr(line, ':');

	line[strcspn(line, "\r\n")] = '\0';
	/* A new status line (after a 100 Continue): start over. */
	if (!strncmp(line, "HTTP/", 5)) {
		curl_slist_free_all(a->headers);
		a->headers = NULL;
		a->length = -1;
	} else if (colon) {
		*colon = '\0';
		if (!strcasecmp(line, "Content-Length"))
			a->length = strtoll(colon + 1, NULL, 10);
		if (!hop_header(line)) {
			*colon = ':';
			a->headers = curl_slist_append(a->headers, line);
		}
	}
	free(line);
	return len;
}

/*
 * Each connection's thread (libmicrohttpd's thread per connection) keeps
 * its libcurl handles, and so its connection to the leader, for the
 * requests that follow on the same client connection.
 */
struct relay_handles {
	CURLM *m;
	CURL *c;
};

static pthread_key_t handles_key;
static pthread_once_t handles_once = PTHREAD_ONCE_INIT;

static void handles_free(void *arg)
{
	struct relay_handles *h = arg;

	curl_multi_cleanup(h->m);
	curl_easy_cleanup(h->c);
	free(h);
}

static void handles_key_init(void)
{
	(void)pthread_key_create(&handles_key, handles_free);
}

/* This thread's handles, the easy one reset; NULL when out of memory. */
static struct relay_handles *handles_get(void)
{
	struct relay_handles *h;

	(void)pthread_once(&handles_once, handles_key_init);
	h = pthread_getspecific(handles_key);
	if (h) {
		curl_easy_reset(h->c);
		return h;
	}
	h = xcalloc(1, sizeof(*h));
	h->m = curl_multi_init();
	h->c = curl_easy_init();
	if (!h->m || !h->c || pthread_setspecific(handles_key, h)) {
		handles_free(h);
		return NULL;
	}
	return h;
}

/* How often a forward in flight looks whether its leader still leads. */
#define LEADER_POLL_MS 50

/*
 * Runs c to its end, or gives up (CURLE_ABORTED_BY_CALLBACK) as soon as
 * another member leads than the one at url: a leader stopped or cut off
 * may have accepted the connection and never answer.
 */
static CURLcode perform(struct ha *ha, const char *url, CURLM *m, CURL *c)
{
	CURLcode rc = CURLE_ABORTED_BY_CALLBACK;
	CURLMsg *msg;
	char now[512];
	int running = 1;
	int left;

	curl_multi_add_handle(m, c);
	for (;;) {
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			rc = CURLE_FAILED_INIT;
			break;
		}
		if (!running || ha_leader_url(ha, now, sizeof(now)) ||
		    strcmp(now, url))
			break;
		(void)curl_multi_poll(m, NULL, 0, LEADER_POLL_MS, NULL);
	}
	while ((msg = curl_multi_info_read(m, &left)))
		if (msg->msg == CURLMSG_DONE)
			rc = msg->data.result;
	curl_multi_remove_handle(m, c);
	return rc;
}

/* Sends r to the leader at url; 0 with a filled, or -1 (err set). */
static int forward(struct ha_proxy *p, struct MHD_Connection *conn,
		   const char *method, struct preq *r, const char *url,
		   struct answer *a, char *err)
{
	struct curl_slist *hdrs = NULL;
	struct buf target = BUF_INIT;
	struct relay_handles *h = handles_get();
	CURL *c = h ? h->c : NULL;
	CURLcode rc;

	if (!c) {
		snprintf(err, CURL_ERROR_SIZE, "out of memory");
		return -1;
	}
	MHD_get_connection_values(conn, MHD_HEADER_KIND, add_header, &hdrs);
	hdrs = curl_slist_append(hdrs, FORWARDED ": 1");
	hdrs = curl_slist_append(hdrs, "Expect:");
	(void)buf_addf(&target, "%s%s", url, r->uri);
	buf_init(&a->body, p->max);
	a->spool_dir = p->spool_dir;
	curl_easy_setopt(c, CURLOPT_URL, target.data);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	if (r->sp.fd >= 0) {
		r->sp.pos = 0;
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, spool_read);
		curl_easy_setopt(c, CURLOPT_READDATA, &r->sp);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)r->sp.size);
	} else if (r->body.len || !strcmp(method, "POST") ||
		   !strcmp(method, "PUT")) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body.data);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)r->body.len);
	}
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
	err[0] = '\0';
	rc = perform(p->ha, url, h->m, c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
	else if (!err[0])
		snprintf(err, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
	curl_slist_free_all(hdrs);
	buf_release(&target);
	return rc == CURLE_OK ? 0 : -1;
}

/* A HEAD answer's body, never read: only its size is sent. */
static ssize_t no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls;
	(void)pos;
	(void)buf;
	(void)max;
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static enum MHD_Result send_answer(struct MHD_Connection *conn,
				   const char *method, struct answer *a)
{
	struct MHD_Response *res;
	struct curl_slist *h;
	enum MHD_Result ret;

	/* A HEAD answer keeps the leader's Content-Length (an S3
	 * HeadObject's size). */
	if (!strcmp(method, "HEAD") && a->length >= 0)
		res = MHD_create_response_from_callback(
			(uint64_t)a->length, 4096, no_body, NULL, NULL);
	else if (a->sp.fd >= 0)
		res = MHD_create_response_from_fd_at_offset64(
			(uint64_t)a->sp.size, a->sp.fd, 0);
	else
		res = MHD_create_response_from_buffer(a->body.len, a->body.data,
						      MHD_RESPMEM_MUST_COPY);
	for (h = a->headers; h; h = h->next) {
		char *name = xstrdup(h->data);
		char *colon = strchr(name, ':');
		const char *value = colon + 1;

		*colon = '\0';
		while (*value == ' ')
			value++;
		MHD_add_response_header(res, name, value);
		free(name);
	}
	if (a->sp.fd >= 0)
		a->sp.fd = -1; /* the response owns it now */
	ret = MHD_queue_response(conn, (unsigned)a->status, res);
	MHD_destroy_response(res);
	return ret;
}

static enum MHD_Result relay(struct ha_proxy *p, struct MHD_Connection *conn,
			     const char *method, struct preq *r)
{
	char url[512];
	char err[CURL_ERROR_SIZE];
	struct answer a = { 0, BUF_INIT, { -1, 0, 0, 0 }, NULL, NULL, -1 };
	enum MHD_Result ret;

	if (r->too_big)
		return send_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				 "ServiceUnavailable",
				 "this member cannot hold the request's body "
				 "to pass it on; send it to another member");
	if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, FORWARDED) ||
	    ha_leader_url(p->ha, url, sizeof(url)))
		return send_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				 "ServiceUnavailable", "no leader");
	if (forward(p, conn, method, r, url, &a, err)) {
		log_debug("forward to %s: %s", url, err);
		ret = send_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				"ServiceUnavailable", "no leader");
	} else {
		ret = send_answer(conn, method, &a);
	}
	buf_release(&a.body);
	spool_close(&a.sp);
	curl_slist_free_all(a.headers);
	return ret;
}

/* Starts a request of the local routes, or leaves r alone. */
static void local_begin(struct ha_proxy *p, struct MHD_Connection *conn,
			const char *url, const char *method, struct preq *r)
{
	const char *cl;

	if (!p->local ||
	    strncmp(url, p->local->prefix, strlen(p->local->prefix)))
		return;
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					 "Content-Length");
	r->local = p->local->begin(
		method, url,
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					    "Authorization"),
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					    p->local->header),
		cl ? strtoll(cl, NULL, 10) : -1);
}

/* Answers a request of the local routes. */
static enum MHD_Result local_answer(struct ha_proxy *p,
				    struct MHD_Connection *conn, struct preq *r)
{
	struct ha_local_reply a = { 0, BUF_INIT, -1, 0, NULL };
	struct MHD_Response *res = NULL;
	enum MHD_Result ret;

	p->local->finish(r->local, &a);
	if (a.fd >= 0)
		res = MHD_create_response_from_fd64((uint64_t)a.size, a.fd);
	if (res)
		a.fd = -1;
	else
		res = MHD_create_response_from_buffer(a.body.len, a.body.data,
						      MHD_RESPMEM_MUST_COPY);
	if (a.fd >= 0)
		close(a.fd);
	if (a.hdr)
		MHD_add_response_header(res, p->local->header, a.hdr);
	ret = MHD_queue_response(conn, (unsigned)a.status, res);
	MHD_destroy_response(res);
	buf_release(&a.body);
	free(a.hdr);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **req_cls)
{
	struct ha_proxy *p = cls;
	struct preq *r = *req_cls;

	(void)version;
	if (!r->seen) {
		r->seen = 1;
		local_begin(p, conn, url, method, r);
		if (r->local && p->local->refused(r->local))
			return local_answer(p, conn, r);
		return MHD_YES;
	}
	if (r->local && *upload_data_size) {
		p->local->data(r->local, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r->local)
		return local_answer(p, conn, r);
	if (*upload_data_size) {
		if (!r->too_big && spool_add(&r->sp, &r->body, p->spool_dir,
					     upload_data, *upload_data_size))
			r->too_big = 1;
		*upload_data_size = 0;
		return MHD_YES;
	}
	/* Not the leader: a load balancer's health check fails here. */
	if (!strcmp(url, "/healthz/leader"))
		return send_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				 "ServiceUnavailable", "this member follows");
	return relay(p, conn, method, r);
}

static int parse_addr(const char *listen, struct sockaddr_storage *ss,
		      struct buf *err)
{
	const char *colon = strrchr(listen, ':');
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	char host[64];
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	hl = colon ? (size_t)(colon - listen) : 0;
	if (!colon || hl >= sizeof(host)) {
		(void)buf_addf(err, "--listen '%s' is not HOST:PORT", listen);
		return ERR_INVALID;
	}
	memcpy(host, listen, hl);
	host[hl] = '\0';
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &in4->sin_addr) != 1) {
		(void)buf_addf(err, "--listen host '%s' is not an IPv4 address",
			       host);
		return ERR_INVALID;
	}
	in4->sin_family = AF_INET;
	in4->sin_port = htons((uint16_t)atoi(colon + 1));
	return 0;
}

int ha_proxy_start(struct ha *ha, const char *listen, size_t max,
		   const char *spool_dir, struct ha_proxy **out,
		   struct buf *err)
{
	struct ha_proxy *p;
	struct sockaddr_storage ss;
	int ret = parse_addr(listen, &ss, err);

	*out = NULL;
	if (ret)
		return ret;
	p = xcalloc(1, sizeof(*p));
	p->ha = ha;
	p->max = max;
	p->spool_dir = spool_dir ? xstrdup(spool_dir) : NULL;
	p->local = local_route;
	p->d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
		0, NULL, NULL, handler, p, MHD_OPTION_SOCK_ADDR, &ss,
		MHD_OPTION_URI_LOG_CALLBACK, on_uri, p,
		MHD_OPTION_NOTIFY_COMPLETED, on_done, p,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
	if (!p->d) {
		(void)buf_addf(err, "cannot listen on %s", listen);
		free(p->spool_dir);
		free(p);
		return ERR_IO;
	}
	*out = p;
	return 0;
}

void ha_proxy_stop(struct ha_proxy *p)
{
	if (!p)
		return;
	MHD_stop_daemon(p->d);
	free(p->spool_dir);
	free(p);
}
