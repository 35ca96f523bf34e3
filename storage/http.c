/*
 * One HTTP exchange over libcurl for the S3 and blob backends: streaming
 * bodies from and to file descriptors, digests of what passes, SigV4 via
 * CURLOPT_AWS_SIGV4, and retries with backoff for answers that say "try
 * again" (5xx, throttling) or connections that broke mid-way.
 */
#define LOG_TAG "storage"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storage/stor_internal.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Longest single backoff. */
#define BACKOFF_MAX_MS 20000

/* State of one attempt, shared by the callbacks. */
struct xfer {
	CURL *c;
	struct stor_http_req *req;
	struct stor_http_resp *resp;
	struct stor_digest in_d;
	struct stor_digest out_d;
	int64_t in_pos;
	char *stage; /* download staging buffer, STOR_IO_CHUNK bytes */
	size_t staged;
	int write_failed;
	int write_errno;
	int64_t skip_left; /* of a 200 answer, before out_fn */
};

void stor_http_req_init(struct stor_http_req *req, const char *method,
			const char *url)
{
	memset(req, 0, sizeof(*req));
	req->method = method;
	req->url = url;
	req->in_fd = -1;
	req->out_fd = -1;
}

void stor_http_resp_init(struct stor_http_resp *resp)
{
	memset(resp, 0, sizeof(*resp));
	resp->content_length = -1;
	buf_init(&resp->body, STOR_MAX_BODY);
}

void stor_http_resp_release(struct stor_http_resp *resp)
{
	buf_release(&resp->body);
}

void stor_http_setup(struct stor *s, CURL *c)
{
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024);
	curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 2L * 1024 * 1024);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	/* No byte for timeout_s seconds: the peer is gone. */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)s->cfg.timeout_s);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	/* Servers that ignore "Expect: 100-continue" cost 1 s a PUT. */
	curl_easy_setopt(c, CURLOPT_EXPECT_100_TIMEOUT_MS, 100L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "trainctl-storage/0.1");
	if (s->cfg.ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, s->cfg.ca_file);
}

static size_t on_read(char *dst, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	struct stor_http_req *req = x->req;
	size_t want = size * nitems;
	int64_t left;
	ssize_t n;

	if (req->in_fd >= 0) {
		left = req->in_len - x->in_pos;
		if (left <= 0)
			return 0;
		if ((int64_t)want > left)
			want = (size_t)left;
		do {
			n = pread(req->in_fd, dst, want,
				  (off_t)(req->in_off + x->in_pos));
		} while (n < 0 && errno == EINTR);
		if (n <= 0)
			return CURL_READFUNC_ABORT;
	} else {
		left = (int64_t)req->in_mem_len - x->in_pos;
		if (left <= 0)
			return 0;
		if ((int64_t)want > left)
			want = (size_t)left;
		memcpy(dst, req->in_mem + x->in_pos, want);
		n = (ssize_t)want;
	}
	stor_digest_update(&x->in_d, dst, (size_t)n);
	x->in_pos += n;
	return (size_t)n;
}

/* curl rewinds the body to resend it (e.g. after a 100-continue miss). */
static int on_seek(void *ud, curl_off_t off, int origin)
{
	struct xfer *x = ud;

	if (origin != SEEK_SET || off != 0)
		return CURL_SEEKFUNC_CANTSEEK;
	x->in_pos = 0;
	stor_digest_reset(&x->in_d);
	return CURL_SEEKFUNC_OK;
}

static int flush_stage(struct xfer *x)
{
	struct stor_http_req *req = x->req;
	size_t off = 0;

	while (off < x->staged) {
		ssize_t n = pwrite(req->out_fd, x->stage + off, x->staged - off,
				   (off_t)(req->out_off + x->resp->received));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			x->write_failed = 1;
			x->write_errno = errno;
			return -1;
		}
		off += (size_t)n;
		x->resp->received += n;
	}
	x->staged = 0;
	return 0;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	long status = 0;

	curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &status);
	if (x->req->out_fn && status >= 200 && status < 300) {
		size_t k = 0;
		int r;

		if (status == 200 && x->skip_left > 0) {
			k = (int64_t)n < x->skip_left ? n :
							(size_t)x->skip_left;
			x->skip_left -= (int64_t)k;
		}
		r = n > k ? x->req->out_fn(x->req->out_arg, data + k, n - k) :
			    0;

		if (r) {
			x->req->out_ret = r;
			return 0;
		}
		x->resp->received += (int64_t)(n - k);
		return n;
	}
	if (x->req->out_fd >= 0 && status >= 200 && status < 300) {
		stor_digest_update(&x->out_d, data, n);
		if (x->staged + n > STOR_IO_CHUNK && flush_stage(x))
			return 0;
		if (n > STOR_IO_CHUNK) {
			/* Larger than the stage: write it straight through. */
			char *saved = x->stage;
			int r;

			x->stage = data;
			x->staged = n;
			r = flush_stage(x);
			x->stage = saved;
			return r ? 0 : n;
		}
		memcpy(x->stage + x->staged, data, n);
		x->staged += n;
		return n;
	}
	/* Past the cap the rest is dropped: an error's head says enough. */
	(void)buf_add(&x->resp->body, data, n);
	return n;
}

static int header_is(const char *line, size_t n, const char *name,
		     const char **value)
{
	size_t k = strlen(name);

	if (n <= k || strncasecmp(line, name, k) || line[k] != ':')
		return 0;
	*value = line + k + 1;
	while (**value == ' ' || **value == '\t')
		(*value)++;
	return 1;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nitems, vl;
	const char *v;
	char tmp[128];

	if (n >= 5 && !strncmp(line, "HTTP/", 5)) {
		/* A new response (after "100 Continue"): forget the last. */
		x->resp->etag[0] = '\0';
		x->resp->content_length = -1;
		return n;
	}
	if (header_is(line, n, "ETag", &v)) {
		vl = (size_t)(line + n - v);
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' ||
			      v[vl - 1] == ' '))
			vl--;
		if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
			v++;
			vl -= 2;
		}
		if (vl < sizeof(x->resp->etag)) {
			memcpy(x->resp->etag, v, vl);
			x->resp->etag[vl] = '\0';
		}
	} else if (header_is(line, n, "Content-Length", &v)) {
		x->resp->content_length = strtoll(v, NULL, 10);
	} else if (header_is(line, n, "Last-Modified", &v)) {
		vl = (size_t)(line + n - v);
		if (vl < sizeof(tmp)) {
			memcpy(tmp, v, vl);
			tmp[vl] = '\0';
			tmp[strcspn(tmp, "\r\n")] = '\0';
			x->resp->last_modified_ms = stor__parse_time(tmp);
		}
	}
	return n;
}

int stor_http_retryable(long status, const char *code)
{
	if (status == 500 || status == 502 || status == 503 || status == 504 ||
	    status == 429)
		return 1;
	if (!code)
		return 0;
	return !strcmp(code, "SlowDown") || !strcmp(code, "Throttling") ||
	       !strcmp(code, "ThrottlingException") ||
	       !strcmp(code, "RequestTimeout") ||
	       !strcmp(code, "RequestThrottled");
}

/* Transport failures that a new attempt may not hit again. */
static int transient(CURLcode rc)
{
	switch (rc) {
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return 1;
	default:
		return 0;
	}
}

static void backoff(const struct stor *s, int attempt)
{
	int64_t ms = (int64_t)s->cfg.retry_base_ms << (attempt - 1);
	unsigned seed = (unsigned)time_mono_us();
	struct timespec ts;

	if (ms > BACKOFF_MAX_MS)
		ms = BACKOFF_MAX_MS;
	/* Half fixed, half random: apart but not synchronised. */
	ms = ms / 2 + (ms > 1 ? (int64_t)(rand_r(&seed) % (ms / 2 + 1)) : 0);
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void set_method(CURL *c, struct stor_http_req *req)
{
	int has_body = req->in_fd >= 0 || req->in_mem;
	curl_off_t len = req->in_fd >= 0 ? (curl_off_t)req->in_len :
					   (curl_off_t)req->in_mem_len;

	if (!strcmp(req->method, "HEAD")) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(req->method, "PUT")) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE,
				 has_body ? len : (curl_off_t)0);
	} else if (!strcmp(req->method, "POST")) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				 has_body ? len : (curl_off_t)0);
	} else if (strcmp(req->method, "GET")) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
	}
}

static CURLcode attempt(struct stor *s, CURL *c, struct stor_http_req *req,
			struct xfer *x, char *errbuf)
{
	struct buf sigv4 = BUF_INIT;
	CURLcode rc;

	curl_easy_reset(c);
	stor_http_setup(s, c);
	curl_easy_setopt(c, CURLOPT_URL, req->url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, req->headers);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(c, CURLOPT_READDATA, x);
	curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
	curl_easy_setopt(c, CURLOPT_SEEKDATA, x);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	/* A streamed body waits for its reader, however slow. */
	if (req->out_fn)
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 0L);
	set_method(c, req);
	if (req->sign && s->cfg.access_key && s->cfg.secret_key) {
		(void)buf_addf(&sigv4, "aws:amz:%s:s3", s->cfg.s3_region);
		curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4.data);
		curl_easy_setopt(c, CURLOPT_USERNAME, s->cfg.access_key);
		curl_easy_setopt(c, CURLOPT_PASSWORD, s->cfg.secret_key);
	}
	errbuf[0] = '\0';
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK && x->staged && flush_stage(x))
		rc = CURLE_WRITE_ERROR;
	buf_release(&sigv4);
	return rc;
}

/* Clears what one attempt fills in, before the attempt. */
static void attempt_reset(struct xfer *x, struct stor_http_req *req,
			  struct stor_http_resp *resp, int has_in, int n)
{
	x->in_pos = 0;
	x->skip_left = req->out_skip;
	x->staged = 0;
	x->write_failed = 0;
	stor_digest_init(&x->in_d, has_in && req->want_md5,
			 has_in && req->want_sha256);
	stor_digest_init(&x->out_d, req->out_fd >= 0 && req->want_md5,
			 req->out_fd >= 0 && req->want_sha256);
	buf_reset(&resp->body);
	resp->status = 0;
	resp->received = 0;
	resp->etag[0] = '\0';
	resp->content_length = -1;
	resp->attempts = n;
}

/* Whether the attempt that ended with rc is worth another. */
static int attempt_again(CURL *c, struct stor_http_req *req,
			 struct stor_http_resp *resp, CURLcode rc)
{
	char *code = NULL, *msg = NULL;
	int again;

	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
	if (rc == CURLE_OK && resp->status >= 400 && resp->body.len &&
	    resp->body.data[0] == '<')
		stor__s3_xml_error(resp->body.data, resp->body.len, &code,
				   &msg);
	again = rc == CURLE_OK ? stor_http_retryable(resp->status, code) :
				 transient(rc);
	/* What the stream's reader has seen cannot be taken back. */
	if (req->out_fn && (resp->received > 0 || req->out_ret))
		again = 0;
	free(code);
	free(msg);
	return again;
}

/* Explains why no answer came (rc is not CURLE_OK). */
static void describe_failure(const struct stor_http_req *req,
			     const struct stor_http_resp *resp,
			     const struct xfer *x, CURLcode rc,
			     const char *errbuf, struct buf *err)
{
	if (req->out_ret)
		(void)buf_addf(err, "stream stopped after %lld bytes",
			       (long long)resp->received);
	else if (x->write_failed)
		(void)buf_addf(err, "cannot write the download: %s",
			       strerror(x->write_errno));
	else
		(void)buf_addf(err, "%s %s failed: %s", req->method, req->url,
			       errbuf[0] ? errbuf : curl_easy_strerror(rc));
}

int stor_http_do(struct stor *s, CURL *c, struct stor_http_req *req,
		 struct stor_http_resp *resp, struct buf *err)
{
	char errbuf[CURL_ERROR_SIZE];
	struct xfer x;
	CURLcode rc = CURLE_OK;
	int has_in = req->in_fd >= 0 || req->in_mem != NULL;
	int n, ret = 0;

	memset(&x, 0, sizeof(x));
	x.c = c;
	x.req = req;
	x.resp = resp;
	if (req->out_fd >= 0)
		x.stage = xmalloc(STOR_IO_CHUNK);
	for (n = 1;; n++) {
		attempt_reset(&x, req, resp, has_in, n);
		rc = attempt(s, c, req, &x, errbuf);
		if (!attempt_again(c, req, resp, rc) ||
		    n >= s->cfg.max_attempts)
			break;
		log_debug("%s %s: %s, attempt %d of %d", req->method, req->url,
			  rc == CURLE_OK ? "retryable answer" :
					   curl_easy_strerror(rc),
			  n, s->cfg.max_attempts);
		stor_digest_release(&x.in_d);
		stor_digest_release(&x.out_d);
		backoff(s, n);
	}
	if (rc != CURLE_OK) {
		describe_failure(req, resp, &x, rc, errbuf, err);
		ret = ERR_IO;
	}
	if (req->out_fd >= 0 && resp->status >= 200 && resp->status < 300)
		stor_digest_final(&x.out_d, resp->md5, resp->sha256);
	else if (has_in)
		stor_digest_final(&x.in_d, resp->md5, resp->sha256);
	stor_digest_release(&x.in_d);
	stor_digest_release(&x.out_d);
	free(x.stage);
	return ret;
}

static struct curl_slist *append_or_die(struct curl_slist *l, const char *h)
{
	struct curl_slist *n = curl_slist_append(l, h);

	if (!n) {
		log_error("out of memory building request headers");
		exit(1);
	}
	return n;
}

int stor_http_get_stream(struct stor *s, struct stor_http_stream *g,
			 struct stor_http_resp *resp, struct buf *err)
{
	size_t mark = err->len;
	int tries = 0, ret;

	for (;;) {
		struct stor_http_req req;
		struct curl_slist *h = NULL;
		const struct curl_slist *p;
		struct buf line = BUF_INIT;
		int resumed = g->delivered > 0;

		for (p = g->headers; p; p = p->next)
			h = append_or_die(h, p->data);
		if (resumed) {
			(void)buf_addf(&line, "Range: bytes=%lld-",
				       (long long)g->delivered);
			h = append_or_die(h, line.data);
			if (g->if_match && g->etag[0]) {
				buf_reset(&line);
				(void)buf_addf(&line, "If-Match: \"%s\"",
					       g->etag);
				h = append_or_die(h, line.data);
			}
		}
		stor_http_req_init(&req, "GET", g->url);
		req.headers = h;
		req.sign = g->sign;
		req.out_fn = g->fn;
		req.out_arg = g->arg;
		req.out_skip = g->delivered;
		stor_http_resp_release(resp);
		stor_http_resp_init(resp);
		ret = stor_http_do(s, s->curl, &req, resp, err);
		g->delivered += resp->received;
		curl_slist_free_all(h);
		buf_release(&line);
		if (req.out_ret)
			return req.out_ret;
		if (!ret && resp->status == 200 && resumed &&
		    resp->content_length != g->total) {
			(void)buf_addf(err,
				       "GET %s: the object changed while it "
				       "was read",
				       g->url);
			return ERR_IO;
		}
		/* The first answer's headers came with its first bytes. */
		if (!resumed &&
		    ((!ret && resp->status == 200) || resp->received > 0)) {
			g->total = resp->content_length;
			memcpy(g->etag, resp->etag, sizeof(g->etag));
		}
		if (!ret && resp->status != 200 && resp->status != 206)
			return 0;
		if (!ret && (g->total < 0 || g->delivered >= g->total))
			return 0;
		/* It broke mid-way: ask for the rest. */
		if (resp->received > 0)
			tries = 0;
		if (++tries >= s->cfg.max_attempts) {
			if (!ret)
				(void)buf_addf(err,
					       "short download: %lld of %lld "
					       "bytes",
					       (long long)g->delivered,
					       (long long)g->total);
			return ERR_IO;
		}
		log_debug("GET %s: broke after %lld bytes, resuming", g->url,
			  (long long)g->delivered);
		err->len = mark;
		if (err->data)
			err->data[mark] = '\0';
	}
}

/* --- list, stat and delete on an object service ---------------------- */

int stor__http_list(struct stor *s, const struct stor_http_service *svc,
		    const char *bucket, const char *prefix,
		    struct stor_list *out, struct buf *err)
{
	struct buf url = BUF_INIT;
	struct stor_http_resp resp;
	char *token = NULL;
	int ret = 0;

	stor_http_resp_init(&resp);
	do {
		buf_reset(&url);
		svc->list_url(s, &url, bucket, prefix, token);
		ret = svc->simple(s, "GET", url.data, &resp, err);
		if (ret)
			break;
		if (resp.status != 200) {
			ret = svc->error(&resp, svc->list_op, err);
			break;
		}
		FREE_AND_NULL(token);
		ret = svc->list_page(resp.body.data, resp.body.len, out, &token,
				     err);
	} while (!ret && token);
	free(token);
	stor_list_sort(out);
	stor_http_resp_release(&resp);
	buf_release(&url);
	return ret;
}

int stor__http_stat(struct stor *s, const struct stor_http_service *svc,
		    const char *bucket, const char *key,
		    struct stor_object *out, struct buf *err)
{
	struct buf url = BUF_INIT;
	struct stor_http_resp resp;
	int ret;

	memset(out, 0, sizeof(*out));
	stor_http_resp_init(&resp);
	svc->object_url(s, &url, bucket, key);
	ret = svc->simple(s, "HEAD", url.data, &resp, err);
	if (!ret && resp.status != 200)
		ret = svc->error(&resp, svc->stat_op, err);
	if (!ret) {
		out->key = xstrdup(key);
		out->size = resp.content_length;
		out->mtime_ms = resp.last_modified_ms;
		if (svc->stat_etag)
			memcpy(out->etag, resp.etag, sizeof(out->etag));
	}
	stor_http_resp_release(&resp);
	buf_release(&url);
	return ret;
}

int stor__http_delete(struct stor *s, const struct stor_http_service *svc,
		      const char *bucket, const char *key, struct buf *err)
{
	struct buf url = BUF_INIT;
	struct stor_http_resp resp;
	int ret;

	stor_http_resp_init(&resp);
	svc->object_url(s, &url, bucket, key);
	ret = svc->simple(s, "DELETE", url.data, &resp, err);
	if (!ret && resp.status != 204 && resp.status != 200 &&
	    resp.status != 404)
		ret = svc->error(&resp, svc->delete_op, err);
	stor_http_resp_release(&resp);
	buf_release(&url);
	return ret;
}

int stor__http_open_upload(const char *path, int *fd, struct stat *st,
			   struct buf *err)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		(void)buf_addf(err, "cannot open '%s': %s", path,
			       strerror(errno));
		return errno == ENOENT ? ERR_NOTFOUND : ERR_IO;
	}
	if (fstat(*fd, st) || !S_ISREG(st->st_mode)) {
		(void)buf_addf(err, "'%s' is not a regular file", path);
		close(*fd);
		*fd = -1;
		return ERR_INVALID;
	}
	return 0;
}
