/*
 * The S3 backend: path-style requests to a configured endpoint, signed by
 * libcurl's SigV4 (CURLOPT_AWS_SIGV4 "aws:amz:<region>:s3"). libcurl
 * 7.88 signs the query string as given, so every query here is built
 * already in SigV4's canonical order (names sorted, values encoded), and
 * it does not add x-amz-content-sha256, which S3 requires: we send the
 * payload's SHA-256 where the body is small or pre-hashed, and
 * UNSIGNED-PAYLOAD for streamed parts (their MD5 is checked against the
 * ETag S3 answers instead).
 */
#define LOG_TAG "storage"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fs.h"
#include "storage/stor_internal.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define UNSIGNED "UNSIGNED-PAYLOAD"
/* S3 allows at most this many parts. */
#define MAX_PARTS 10000

static struct curl_slist *add_header(struct curl_slist *l, const char *h)
{
	struct curl_slist *n = curl_slist_append(l, h);

	if (!n) {
		log_error("out of memory building request headers");
		exit(1);
	}
	return n;
}

/*
 * The headers of every S3 request: the payload hash (libcurl signs it
 * and uses it as the canonical request's payload line), the session
 * token and a fixed date in tests. Not "Expect:" to switch off
 * 100-continue: libcurl would sign that empty header, which it then does
 * not send, and S3 would reject the signature (test_sigv4.c caught it);
 * http.c shortens the 100-continue wait instead.
 */
static struct curl_slist *s3_headers(const struct stor *s,
				     const char *payload_hash)
{
	struct curl_slist *h = NULL;
	struct buf line = BUF_INIT;

	(void)buf_addf(&line, "x-amz-content-sha256: %s", payload_hash);
	h = add_header(h, line.data);
	if (s->cfg.session_token) {
		buf_reset(&line);
		(void)buf_addf(&line, "x-amz-security-token: %s",
			       s->cfg.session_token);
		h = add_header(h, line.data);
	}
	if (s->cfg.amz_date) {
		buf_reset(&line);
		(void)buf_addf(&line, "X-Amz-Date: %s", s->cfg.amz_date);
		h = add_header(h, line.data);
	}
	buf_release(&line);
	return h;
}

/* endpoint/bucket/key?query, the key encoded as SigV4 wants it. */
static void s3_url(const struct stor *s, struct buf *url, const char *bucket,
		   const char *key, const char *query)
{
	(void)buf_addf(url, "%s/%s", s->cfg.s3_endpoint, bucket);
	if (key) {
		(void)buf_addch(url, '/');
		stor_uri_encode(url, key, 1);
	}
	if (query && *query)
		(void)buf_addf(url, "?%s", query);
}

/* Describes a non-2xx answer: "HTTP 403 AccessDenied: Access Denied". */
static int s3_error(const struct stor_http_resp *resp, const char *what,
		    struct buf *err)
{
	char *code = NULL, *msg = NULL;
	int ret;

	stor__s3_xml_error(resp->body.data, resp->body.len, &code, &msg);
	(void)buf_addf(err, "%s: HTTP %ld%s%s%s%s", what, resp->status,
		       *code ? " " : "", code, *msg ? ": " : "", msg);
	if (resp->status == 404 || !strcmp(code, "NoSuchKey") ||
	    !strcmp(code, "NoSuchBucket"))
		ret = ERR_NOTFOUND;
	else if (resp->status == 401 || resp->status == 403)
		ret = ERR_AUTH;
	else
		ret = ERR_IO;
	free(code);
	free(msg);
	return ret;
}

/* One request with a small or empty in-memory body. */
static int s3_simple(struct stor *s, CURL *c, const char *method,
		     const char *url, const char *body, size_t body_len,
		     const char *content_type, struct stor_http_resp *resp,
		     struct buf *err)
{
	struct stor_http_req req;
	struct curl_slist *h;
	char sha[65];
	struct stor_digest d;
	struct buf ct = BUF_INIT;
	int ret;

	stor_digest_init(&d, 0, 1);
	stor_digest_update(&d, body ? body : "", body_len);
	stor_digest_final(&d, NULL, sha);
	h = s3_headers(s, body_len ? sha : EMPTY_SHA256);
	if (content_type) {
		(void)buf_addf(&ct, "Content-Type: %s", content_type);
		h = add_header(h, ct.data);
	}
	stor_http_req_init(&req, method, url);
	req.headers = h;
	req.sign = 1;
	if (body) {
		req.in_mem = body;
		req.in_mem_len = body_len;
	}
	ret = stor_http_do(s, c, &req, resp, err);
	curl_slist_free_all(h);
	buf_release(&ct);
	return ret;
}

/* --- list, stat, delete ------------------------------------------------------
 */

static void s3_object_url(const struct stor *s, struct buf *url,
			  const char *bucket, const char *key)
{
	s3_url(s, url, bucket, key, NULL);
}

static void s3_list_url(const struct stor *s, struct buf *url,
			const char *bucket, const char *prefix,
			const char *token)
{
	struct buf q = BUF_INIT;

	/* Names in SigV4's sorted order. */
	if (token) {
		(void)buf_adds(&q, "continuation-token=");
		stor_uri_encode(&q, token, 0);
		(void)buf_addch(&q, '&');
	}
	(void)buf_adds(&q, "list-type=2&prefix=");
	stor_uri_encode(&q, prefix, 0);
	s3_url(s, url, bucket, NULL, q.data);
	buf_release(&q);
}

/* A bodyless request on the session's handle. */
static int s3_bodyless(struct stor *s, const char *method, const char *url,
		       struct stor_http_resp *resp, struct buf *err)
{
	return s3_simple(s, s->curl, method, url, NULL, 0, NULL, resp, err);
}

static const struct stor_http_service s3_service = {
	.list_op = "ListObjectsV2",
	.stat_op = "HeadObject",
	.delete_op = "DeleteObject",
	.stat_etag = 1,
	.object_url = s3_object_url,
	.list_url = s3_list_url,
	.simple = s3_bodyless,
	.error = s3_error,
	.list_page = stor__s3_xml_list,
};

static int s3_list(struct stor *s, const struct stor_target *t,
		   struct stor_list *out, struct buf *err)
{
	return stor__http_list(s, &s3_service, t->uri.bucket, t->uri.key, out,
			       err);
}

static int s3_stat(struct stor *s, const struct stor_target *t,
		   struct stor_object *out, struct buf *err)
{
	return stor__http_stat(s, &s3_service, t->uri.bucket, t->uri.key, out,
			       err);
}

static int s3_delete(struct stor *s, const struct stor_target *t,
		     struct buf *err)
{
	return stor__http_delete(s, &s3_service, t->uri.bucket, t->uri.key,
				 err);
}

/* An ETag that is the object's MD5 (single-part, not SSE-KMS). */
static int etag_is_md5(const char *etag)
{
	size_t i;

	if (strlen(etag) != 32)
		return 0;
	for (i = 0; i < 32; i++)
		if (!strchr("0123456789abcdef", etag[i]))
			return 0;
	return 1;
}

/* --- parallel ranges and parts ---------------------------------------------
 */

/*
 * A pool of threads, each with its own curl handle, working through
 * chunks [0, n) of a file: the ranges of a download or the parts of an
 * upload. The first failure stops everyone.
 */
struct pool {
	struct stor *s;
	pthread_mutex_t lock;
	size_t next;
	size_t n;
	int failed;
	int ret;
	struct buf err;
	int (*work)(struct pool *p, CURL *c, size_t i, struct buf *err);
	/* the job */
	const char *url; /* object URL without query */
	int fd;
	int64_t size;
	int64_t chunk;
	const char *etag;      /* download: If-Match */
	const char *upload_id; /* upload */
	char (*part_etags)[80];
};

static void *pool_thread(void *arg)
{
	struct pool *p = arg;
	struct buf err = BUF_INIT;
	CURL *c = curl_easy_init();
	size_t i;
	int ret = c ? 0 : ERR_IO;

	if (!c)
		(void)buf_adds(&err, "cannot initialise libcurl");
	while (!ret) {
		pthread_mutex_lock(&p->lock);
		i = p->next++;
		if (p->failed || i >= p->n) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		pthread_mutex_unlock(&p->lock);
		ret = p->work(p, c, i, &err);
	}
	if (ret) {
		pthread_mutex_lock(&p->lock);
		if (!p->failed) {
			p->failed = 1;
			p->ret = ret;
			(void)buf_add(&p->err, err.data, err.len);
		}
		pthread_mutex_unlock(&p->lock);
	}
	if (c)
		curl_easy_cleanup(c);
	buf_release(&err);
	return NULL;
}

static int pool_run(struct pool *p, struct buf *err)
{
	pthread_t th[64];
	size_t k, nth = (size_t)p->s->cfg.parallel;

	if (nth > p->n)
		nth = p->n;
	if (nth > 64)
		nth = 64;
	pthread_mutex_init(&p->lock, NULL);
	buf_init(&p->err, 0);
	for (k = 0; k < nth; k++)
		if (pthread_create(&th[k], NULL, pool_thread, p))
			break;
	if (k == 0) {
		/* No thread at all: work in this one. */
		pool_thread(p);
	}
	nth = k;
	for (k = 0; k < nth; k++)
		pthread_join(th[k], NULL);
	pthread_mutex_destroy(&p->lock);
	if (p->failed)
		(void)buf_add(err, p->err.data, p->err.len);
	buf_release(&p->err);
	return p->failed ? p->ret : 0;
}

static int get_range(struct pool *p, CURL *c, size_t i, struct buf *err)
{
	struct stor_http_req req;
	struct stor_http_resp resp;
	struct curl_slist *h = s3_headers(p->s, EMPTY_SHA256);
	struct buf line = BUF_INIT;
	int64_t off = (int64_t)i * p->chunk;
	int64_t len = p->size - off < p->chunk ? p->size - off : p->chunk;
	int ret;

	(void)buf_addf(&line, "Range: bytes=%lld-%lld", (long long)off,
		       (long long)(off + len - 1));
	h = add_header(h, line.data);
	if (p->etag[0]) {
		/* Every range must come from the same version. */
		buf_reset(&line);
		(void)buf_addf(&line, "If-Match: \"%s\"", p->etag);
		h = add_header(h, line.data);
	}
	stor_http_req_init(&req, "GET", p->url);
	req.headers = h;
	req.sign = 1;
	req.out_fd = p->fd;
	req.out_off = off;
	stor_http_resp_init(&resp);
	ret = stor_http_do(p->s, c, &req, &resp, err);
	if (!ret && resp.status != 206 && resp.status != 200)
		ret = s3_error(&resp, "GetObject (range)", err);
	if (!ret && resp.received != len) {
		(void)buf_addf(err, "range %lld+%lld: got %lld bytes",
			       (long long)off, (long long)len,
			       (long long)resp.received);
		ret = ERR_IO;
	}
	stor_http_resp_release(&resp);
	curl_slist_free_all(h);
	buf_release(&line);
	return ret;
}

static int s3_get(struct stor *s, const struct stor_target *t, const char *path,
		  struct stor_object *info, struct buf *err)
{
	const char *bucket = t->uri.bucket, *key = t->uri.key;
	struct stor_object st;
	struct stor_http_req req;
	struct stor_http_resp resp;
	struct buf url = BUF_INIT, tmp = BUF_INIT;
	struct curl_slist *h = NULL;
	int fd = -1, ret;

	ret = s3_stat(s, t, &st, err);
	if (ret)
		return ret;
	stor_http_resp_init(&resp);
	s3_url(s, &url, bucket, key, NULL);
	ret = stor_fs_tmp_open(path, &fd, &tmp, err);
	if (ret)
		goto out;
	if (st.size > s->cfg.multipart_threshold && s->cfg.parallel > 1 &&
	    st.size > s->cfg.part_size) {
		struct pool p;

		memset(&p, 0, sizeof(p));
		p.s = s;
		p.work = get_range;
		p.url = url.data;
		p.fd = fd;
		p.size = st.size;
		p.chunk = s->cfg.part_size;
		p.n = (size_t)((st.size + p.chunk - 1) / p.chunk);
		p.etag = st.etag;
		if (ftruncate(fd, (off_t)st.size)) {
			(void)buf_addf(err, "cannot size '%s': %s", tmp.data,
				       strerror(errno));
			ret = ERR_IO;
		}
		if (!ret)
			ret = pool_run(&p, err);
	} else {
		h = s3_headers(s, EMPTY_SHA256);
		stor_http_req_init(&req, "GET", url.data);
		req.headers = h;
		req.sign = 1;
		req.out_fd = fd;
		req.want_md5 = etag_is_md5(st.etag);
		ret = stor_http_do(s, s->curl, &req, &resp, err);
		if (!ret && resp.status != 200)
			ret = s3_error(&resp, "GetObject", err);
		if (!ret && resp.received != (resp.content_length >= 0 ?
						      resp.content_length :
						      st.size)) {
			(void)buf_addf(err,
				       "short download: %lld of %lld bytes",
				       (long long)resp.received,
				       (long long)st.size);
			ret = ERR_IO;
		}
		if (!ret && req.want_md5 && etag_is_md5(resp.etag) &&
		    strcmp(resp.md5, resp.etag)) {
			(void)buf_addf(err, "download corrupt: MD5 %s, ETag %s",
				       resp.md5, resp.etag);
			ret = ERR_IO;
		}
	}
	if (ret) {
		stor_fs_tmp_abort(fd, tmp.data);
		goto out;
	}
	ret = stor_fs_tmp_commit(fd, tmp.data, path, 0, err);
	if (!ret && info) {
		*info = st;
		st.key = NULL;
		memcpy(info->md5, resp.md5, sizeof(info->md5));
	}
out:
	stor_object_release(&st);
	stor_http_resp_release(&resp);
	curl_slist_free_all(h);
	buf_release(&url);
	buf_release(&tmp);
	return ret;
}

static int s3_get_stream(struct stor *s, const struct stor_target *t,
			 stor_stream_fn *fn, void *arg, int64_t *size,
			 struct buf *err)
{
	const char *bucket = t->uri.bucket, *key = t->uri.key;
	struct stor_http_stream g;
	struct stor_http_resp resp;
	struct buf url = BUF_INIT;
	struct curl_slist *h = s3_headers(s, EMPTY_SHA256);
	int ret;

	memset(&g, 0, sizeof(g));
	stor_http_resp_init(&resp);
	s3_url(s, &url, bucket, key, NULL);
	g.url = url.data;
	g.headers = h;
	g.sign = 1;
	g.if_match = 1;
	g.fn = fn;
	g.arg = arg;
	g.total = -1;
	ret = stor_http_get_stream(s, &g, &resp, err);
	if (!ret && resp.status != 200 && resp.status != 206)
		ret = s3_error(&resp, "GetObject", err);
	if (size)
		*size = g.delivered;
	stor_http_resp_release(&resp);
	curl_slist_free_all(h);
	buf_release(&url);
	return ret;
}

/* --- put
 * ---------------------------------------------------------------------- */

static int put_single(struct stor *s, const char *url, int fd, int64_t size,
		      struct stor_object *info, struct buf *err)
{
	unsigned char raw[16];
	char md5[33], sha[65];
	struct buf line = BUF_INIT;
	struct stor_http_req req;
	struct stor_http_resp resp;
	struct curl_slist *h;
	int ret;

	/*
	 * Hashing first lets S3 check both the MD5 and the SHA-256 before
	 * it stores anything, as the aws CLI's put-object does.
	 */
	ret = stor_digest_fd(fd, 0, size, md5, raw, sha, err);
	if (ret)
		return ret;
	h = s3_headers(s, sha);
	(void)buf_adds(&line, "Content-MD5: ");
	stor__base64(raw, sizeof(raw), &line);
	h = add_header(h, line.data);
	stor_http_req_init(&req, "PUT", url);
	req.headers = h;
	req.sign = 1;
	req.in_fd = fd;
	req.in_len = size;
	req.want_md5 = 1;
	stor_http_resp_init(&resp);
	ret = stor_http_do(s, s->curl, &req, &resp, err);
	if (!ret && resp.status != 200)
		ret = s3_error(&resp, "PutObject", err);
	if (!ret && strcmp(resp.md5, md5)) {
		(void)buf_adds(err, "the file changed while it was uploaded");
		ret = ERR_IO;
	}
	if (!ret && etag_is_md5(resp.etag) && strcmp(resp.etag, md5)) {
		(void)buf_addf(err, "upload corrupt: MD5 %s, ETag %s", md5,
			       resp.etag);
		ret = ERR_IO;
	}
	if (!ret && info) {
		memcpy(info->etag, resp.etag, sizeof(info->etag));
		memcpy(info->md5, md5, sizeof(info->md5));
		memcpy(info->sha256, sha, sizeof(info->sha256));
	}
	stor_http_resp_release(&resp);
	curl_slist_free_all(h);
	buf_release(&line);
	return ret;
}

static int put_part(struct pool *p, CURL *c, size_t i, struct buf *err)
{
	struct stor_http_req req;
	struct stor_http_resp resp;
	struct curl_slist *h = s3_headers(p->s, UNSIGNED);
	struct buf url = BUF_INIT;
	int64_t off = (int64_t)i * p->chunk;
	int64_t len = p->size - off < p->chunk ? p->size - off : p->chunk;
	int ret;

	(void)buf_addf(&url, "%s?partNumber=%zu&uploadId=", p->url, i + 1);
	stor_uri_encode(&url, p->upload_id, 0);
	stor_http_req_init(&req, "PUT", url.data);
	req.headers = h;
	req.sign = 1;
	req.in_fd = p->fd;
	req.in_off = off;
	req.in_len = len;
	req.want_md5 = 1;
	stor_http_resp_init(&resp);
	ret = stor_http_do(p->s, c, &req, &resp, err);
	if (!ret && resp.status != 200)
		ret = s3_error(&resp, "UploadPart", err);
	if (!ret && !resp.etag[0]) {
		(void)buf_addf(err, "UploadPart %zu: no ETag", i + 1);
		ret = ERR_IO;
	}
	if (!ret && etag_is_md5(resp.etag) && strcmp(resp.etag, resp.md5)) {
		(void)buf_addf(err, "part %zu corrupt: MD5 %s, ETag %s", i + 1,
			       resp.md5, resp.etag);
		ret = ERR_IO;
	}
	if (!ret)
		memcpy(p->part_etags[i], resp.etag, sizeof(p->part_etags[i]));
	stor_http_resp_release(&resp);
	curl_slist_free_all(h);
	buf_release(&url);
	return ret;
}

static void abort_upload(struct stor *s, const char *url, const char *id)
{
	struct buf u = BUF_INIT, err = BUF_INIT;
	struct stor_http_resp resp;

	stor_http_resp_init(&resp);
	(void)buf_addf(&u, "%s?uploadId=", url);
	stor_uri_encode(&u, id, 0);
	if (s3_simple(s, s->curl, "DELETE", u.data, NULL, 0, NULL, &resp,
		      &err) ||
	    (resp.status != 204 && resp.status != 200 && resp.status != 404))
		log_warn("cannot abort multipart upload '%s' (HTTP %ld %s): "
			 "the store keeps its parts until it expires them",
			 id, resp.status, err.data);
	stor_http_resp_release(&resp);
	buf_release(&u);
	buf_release(&err);
}

static int put_multipart(struct stor *s, const char *url, int fd, int64_t size,
			 struct stor_object *info, struct buf *err)
{
	struct stor_http_resp resp;
	struct buf u = BUF_INIT, body = BUF_INIT;
	struct pool p;
	char *id = NULL;
	size_t i;
	int ret;

	memset(&p, 0, sizeof(p));
	p.chunk = s->cfg.part_size;
	if ((size + p.chunk - 1) / p.chunk > MAX_PARTS)
		p.chunk = (size + MAX_PARTS - 1) / MAX_PARTS;
	p.n = (size_t)((size + p.chunk - 1) / p.chunk);
	stor_http_resp_init(&resp);
	(void)buf_addf(&u, "%s?uploads=", url);
	ret = s3_simple(s, s->curl, "POST", u.data, NULL, 0, NULL, &resp, err);
	if (!ret && resp.status != 200)
		ret = s3_error(&resp, "CreateMultipartUpload", err);
	if (!ret)
		ret = stor__s3_xml_upload_id(resp.body.data, resp.body.len, &id,
					     err);
	if (ret)
		goto out;

	p.s = s;
	p.work = put_part;
	p.url = url;
	p.fd = fd;
	p.size = size;
	p.upload_id = id;
	p.part_etags = xcalloc(p.n, sizeof(*p.part_etags));
	ret = pool_run(&p, err);
	if (ret)
		goto abort;

	(void)buf_adds(&body,
		       "<CompleteMultipartUpload "
		       "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (i = 0; i < p.n; i++)
		(void)buf_addf(&body,
			       "<Part><PartNumber>%zu</PartNumber>"
			       "<ETag>\"%s\"</ETag></Part>",
			       i + 1, p.part_etags[i]);
	(void)buf_adds(&body, "</CompleteMultipartUpload>");
	buf_reset(&u);
	(void)buf_addf(&u, "%s?uploadId=", url);
	stor_uri_encode(&u, id, 0);
	ret = s3_simple(s, s->curl, "POST", u.data, body.data, body.len,
			"application/xml", &resp, err);
	if (!ret && resp.status != 200)
		ret = s3_error(&resp, "CompleteMultipartUpload", err);
	if (!ret)
		ret = stor__s3_xml_complete(resp.body.data, resp.body.len,
					    info ? info->etag : resp.etag,
					    sizeof(resp.etag), err);
	if (!ret)
		goto out;
abort:
	abort_upload(s, url, id);
out:
	free(id);
	free(p.part_etags);
	stor_http_resp_release(&resp);
	buf_release(&u);
	buf_release(&body);
	return ret;
}

static int s3_put(struct stor *s, const struct stor_target *t, const char *path,
		  struct stor_object *info, struct buf *err)
{
	const char *bucket = t->uri.bucket, *key = t->uri.key;
	struct buf url = BUF_INIT;
	struct stat st;
	int fd, ret;

	ret = stor__http_open_upload(path, &fd, &st, err);
	if (ret)
		return ret;
	if (info)
		memset(info, 0, sizeof(*info));
	s3_url(s, &url, bucket, key, NULL);
	if ((int64_t)st.st_size > s->cfg.multipart_threshold)
		ret = put_multipart(s, url.data, fd, (int64_t)st.st_size, info,
				    err);
	else
		ret = put_single(s, url.data, fd, (int64_t)st.st_size, info,
				 err);
	if (!ret && info) {
		info->key = xstrdup(key);
		info->size = (int64_t)st.st_size;
	}
	close(fd);
	buf_release(&url);
	return ret;
}

const struct stor_backend stor__s3_backend = {
	.name = "s3",
	.list = s3_list,
	.stat = s3_stat,
	.get = s3_get,
	.get_stream = s3_get_stream,
	.put = s3_put,
	.delete_object = s3_delete,
};
