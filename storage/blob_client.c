/*
 * The embedded store seen from a host that does not share the
 * controller's filesystem: the same objects through the controller's blob
 * endpoint (/v1/blobs/<bucket>/<key>, bearer token). The controller
 * streams a PUT to a temp file and renames it when the body is complete,
 * so an interrupted upload never becomes an object; both sides hash the
 * body with SHA-256 and the client compares.
 */
#define LOG_TAG "storage"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/blob_wire.h"
#include "storage/fs.h"
#include "storage/stor_internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

static void blob_url(const struct stor *s, struct buf *url, const char *bucket,
		     const char *key)
{
	(void)buf_addf(url, "%s/v1/blobs/%s", s->cfg.blob_url, bucket);
	if (key) {
		(void)buf_addch(url, '/');
		stor_uri_encode(url, key, 1);
	}
}

/*
 * Agents send their host token. Anyone else with the API's credentials
 * (trainctl) signs with SigV4 for service s3 and an unsigned payload, as
 * S3 clients sign a streamed body; then no empty "Expect:" header, which
 * libcurl would sign and not send (see s3.c).
 */
static int blob_signs(const struct stor *s)
{
	return !s->cfg.blob_token && s->cfg.access_key && s->cfg.secret_key;
}

/*
 * Appends "name: value" to *h. Returns 0, or -1 when out of memory: then
 * the whole list is freed and *h is NULL.
 */
static int add_header(struct curl_slist **h, const char *name,
		      const char *value)
{
	struct buf line = BUF_INIT;
	struct curl_slist *n;

	(void)buf_addf(&line, "%s%s%s", name, value ? " " : "",
		       value ? value : "");
	n = curl_slist_append(*h, line.data);
	buf_release(&line);
	if (!n) {
		curl_slist_free_all(*h);
		*h = NULL;
		return -1;
	}
	*h = n;
	return 0;
}

static struct curl_slist *blob_headers(const struct stor *s)
{
	struct curl_slist *h = NULL;

	if (s->cfg.blob_token) {
		struct buf bearer = BUF_INIT;
		int ret;

		(void)buf_addf(&bearer, "Bearer %s", s->cfg.blob_token);
		ret = add_header(&h, "Authorization:", bearer.data);
		buf_release(&bearer);
		if (ret ||
		    (s->cfg.job &&
		     add_header(&h, "X-Trainctl-Job:", s->cfg.job)) ||
		    (s->cfg.fence &&
		     add_header(&h, "X-Trainctl-Fence:", s->cfg.fence)))
			return NULL;
	}
	if (!blob_signs(s))
		return add_header(&h, "Expect:", NULL) ? NULL : h;
	if (add_header(&h, "x-amz-content-sha256:", "UNSIGNED-PAYLOAD") ||
	    (s->cfg.session_token &&
	     add_header(&h, "x-amz-security-token:", s->cfg.session_token)))
		return NULL;
	return h;
}

static int blob_error(const struct stor_http_resp *resp, const char *what,
		      struct buf *err)
{
	(void)buf_addf(err, "%s: HTTP %ld: ", what, resp->status);
	api_blob_error_describe(resp->body.data, resp->body.len, err);
	if (resp->status == 404)
		return ERR_NOTFOUND;
	if (resp->status == 401 || resp->status == 403)
		return ERR_AUTH;
	if (resp->status == 400)
		return ERR_INVALID;
	if (resp->status == 409)
		return ERR_CONFLICT;
	return ERR_IO;
}

/* A bodyless request, its answer into resp. */
static int blob_simple(struct stor *s, const char *method, const char *url,
		       struct stor_http_resp *resp, struct buf *err)
{
	struct stor_http_req req;
	int ret;

	stor_http_req_init(&req, method, url);
	req.headers = blob_headers(s);
	req.sign = blob_signs(s);
	ret = stor_http_do(s, s->curl, &req, resp, err);
	curl_slist_free_all(req.headers);
	return ret;
}

/*
 * Appends the objects of one listing page to out; *next gets the
 * continuation token (malloc'ed) or NULL. Returns 0 or ERR_INVALID.
 */
static int list_page(const char *json, size_t len, struct stor_list *out,
		     char **next, struct buf *err)
{
	struct api_blob_list page = API_BLOB_LIST_INIT;
	size_t i;
	int ret;

	ret = api_blob_list_decode(json, len, &page, err);
	for (i = 0; i < page.n; i++)
		stor_list_push(out, page.v[i].key, page.v[i].size,
			       page.v[i].mtime_ms);
	*next = page.next;
	page.next = NULL;
	api_blob_list_release(&page);
	return ret;
}

static void blob_list_url(const struct stor *s, struct buf *url,
			  const char *bucket, const char *prefix,
			  const char *token)
{
	blob_url(s, url, bucket, NULL);
	(void)buf_adds(url, "?prefix=");
	stor_uri_encode(url, prefix, 0);
	if (token) {
		(void)buf_adds(url, "&continuation=");
		stor_uri_encode(url, token, 0);
	}
}

static const struct stor_http_service blob_service = {
	.list_op = "list",
	.stat_op = "stat",
	.delete_op = "delete",
	.object_url = blob_url,
	.list_url = blob_list_url,
	.simple = blob_simple,
	.error = blob_error,
	.list_page = list_page,
};

static int blob_list(struct stor *s, const struct stor_target *t,
		     struct stor_list *out, struct buf *err)
{
	return stor__http_list(s, &blob_service, t->uri.bucket, t->uri.key, out,
			       err);
}

static int blob_stat(struct stor *s, const struct stor_target *t,
		     struct stor_object *out, struct buf *err)
{
	return stor__http_stat(s, &blob_service, t->uri.bucket, t->uri.key, out,
			       err);
}

static int blob_delete(struct stor *s, const struct stor_target *t,
		       struct buf *err)
{
	return stor__http_delete(s, &blob_service, t->uri.bucket, t->uri.key,
				 err);
}

static int blob_get(struct stor *s, const struct stor_target *t,
		    const char *path, struct stor_object *info, struct buf *err)
{
	const char *bucket = t->uri.bucket, *key = t->uri.key;
	struct buf url = BUF_INIT, tmp = BUF_INIT;
	struct stor_http_req req;
	struct stor_http_resp resp;
	int fd = -1, ret;

	stor_http_resp_init(&resp);
	blob_url(s, &url, bucket, key);
	ret = stor_fs_tmp_open(path, &fd, &tmp, err);
	if (ret)
		goto out;
	stor_http_req_init(&req, "GET", url.data);
	req.headers = blob_headers(s);
	req.sign = blob_signs(s);
	req.out_fd = fd;
	ret = stor_http_do(s, s->curl, &req, &resp, err);
	curl_slist_free_all(req.headers);
	if (!ret && resp.status != 200)
		ret = blob_error(&resp, "get", err);
	if (!ret && resp.content_length >= 0 &&
	    resp.received != resp.content_length) {
		(void)buf_addf(err, "short download: %lld of %lld bytes",
			       (long long)resp.received,
			       (long long)resp.content_length);
		ret = ERR_IO;
	}
	if (ret) {
		stor_fs_tmp_abort(fd, tmp.data);
		goto out;
	}
	ret = stor_fs_tmp_commit(fd, tmp.data, path, 0, err);
	if (!ret && info) {
		memset(info, 0, sizeof(*info));
		info->key = xstrdup(key);
		info->size = resp.received;
		info->mtime_ms = resp.last_modified_ms;
	}
out:
	stor_http_resp_release(&resp);
	buf_release(&url);
	buf_release(&tmp);
	return ret;
}

static int blob_get_stream(struct stor *s, const struct stor_target *t,
			   stor_stream_fn *fn, void *arg, int64_t *size,
			   struct buf *err)
{
	const char *bucket = t->uri.bucket, *key = t->uri.key;
	struct stor_http_stream g;
	struct stor_http_resp resp;
	struct buf url = BUF_INIT;
	struct curl_slist *h = blob_headers(s);
	int ret;

	memset(&g, 0, sizeof(g));
	stor_http_resp_init(&resp);
	blob_url(s, &url, bucket, key);
	g.url = url.data;
	g.headers = h;
	g.sign = blob_signs(s);
	g.fn = fn;
	g.arg = arg;
	g.total = -1;
	ret = stor_http_get_stream(s, &g, &resp, err);
	if (!ret && resp.status != 200 && resp.status != 206)
		ret = blob_error(&resp, "get", err);
	if (size)
		*size = g.delivered;
	stor_http_resp_release(&resp);
	curl_slist_free_all(h);
	buf_release(&url);
	return ret;
}

static int blob_put(struct stor *s, const struct stor_target *t,
		    const char *path, struct stor_object *info, struct buf *err)
{
	const char *bucket = t->uri.bucket, *key = t->uri.key;
	struct buf url = BUF_INIT;
	struct stor_http_req req;
	struct stor_http_resp resp;
	struct stat st;
	char sha[65];
	int64_t size = 0;
	int fd, ret;

	ret = stor__http_open_upload(path, &fd, &st, err);
	if (ret)
		return ret;
	stor_http_resp_init(&resp);
	blob_url(s, &url, bucket, key);
	stor_http_req_init(&req, "PUT", url.data);
	req.headers = blob_headers(s);
	req.sign = blob_signs(s);
	req.in_fd = fd;
	req.in_len = (int64_t)st.st_size;
	req.want_sha256 = 1;
	ret = stor_http_do(s, s->curl, &req, &resp, err);
	curl_slist_free_all(req.headers);
	if (!ret && resp.status != 200 && resp.status != 201)
		ret = blob_error(&resp, "put", err);
	if (!ret)
		ret = api_blob_put_decode(resp.body.data, resp.body.len, &size,
					  sha, err);
	if (!ret && (size != (int64_t)st.st_size || strcmp(sha, resp.sha256))) {
		/*
		 * The controller stored other bytes than we sent (the file
		 * changed, or the connection corrupted them): remove them.
		 */
		struct buf ignore = BUF_INIT;

		(void)buf_addf(err,
			       "upload corrupt: sent %lld bytes SHA-256 %s, "
			       "stored %lld bytes SHA-256 %s",
			       (long long)st.st_size, resp.sha256,
			       (long long)size, sha);
		blob_delete(s, t, &ignore);
		buf_release(&ignore);
		ret = ERR_IO;
	}
	if (!ret && info) {
		memset(info, 0, sizeof(*info));
		info->key = xstrdup(key);
		info->size = size;
		memcpy(info->sha256, sha, sizeof(info->sha256));
	}
	close(fd);
	stor_http_resp_release(&resp);
	buf_release(&url);
	return ret;
}

const struct stor_backend stor__blob_backend = {
	.name = "blob",
	.list = blob_list,
	.stat = blob_stat,
	.get = blob_get,
	.get_stream = blob_get_stream,
	.put = blob_put,
	.delete_object = blob_delete,
};
