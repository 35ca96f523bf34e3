/*
 * The storage session and the dispatch of each call to the backend that
 * serves its URI (the backend tables: stor_internal.h). Objects and lists
 * are in list.c, the tree transfers built on these calls in sync.c.
 */
#define LOG_TAG "storage"

#include <stdlib.h>
#include <string.h>

#include "storage/fs.h"
#include "storage/stor_internal.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

int stor_open(const struct stor_config *cfg, struct stor **out, struct buf *err)
{
	struct stor *s = xcalloc(1, sizeof(*s));

	s->cfg = *cfg;
	s->cfg.state_dir = dup_or_null(cfg->state_dir);
	s->cfg.blob_url = dup_or_null(cfg->blob_url);
	s->cfg.blob_token = dup_or_null(cfg->blob_token);
	s->cfg.s3_endpoint = dup_or_null(cfg->s3_endpoint);
	s->cfg.s3_region = dup_or_null(cfg->s3_region);
	s->cfg.access_key = dup_or_null(cfg->access_key);
	s->cfg.secret_key = dup_or_null(cfg->secret_key);
	s->cfg.session_token = dup_or_null(cfg->session_token);
	s->cfg.ca_file = dup_or_null(cfg->ca_file);
	s->cfg.fence = dup_or_null(cfg->fence);
	s->cfg.job = dup_or_null(cfg->job);
	s->cfg.amz_date = dup_or_null(cfg->amz_date);
	stor_config_fill_defaults(&s->cfg);
	/* Trailing slashes would double in every URL. */
	if (s->cfg.s3_endpoint)
		s->cfg.s3_endpoint[strcspn(s->cfg.s3_endpoint, "?#")] = '\0';
	while (s->cfg.s3_endpoint && *s->cfg.s3_endpoint &&
	       s->cfg.s3_endpoint[strlen(s->cfg.s3_endpoint) - 1] == '/')
		s->cfg.s3_endpoint[strlen(s->cfg.s3_endpoint) - 1] = '\0';
	while (s->cfg.blob_url && *s->cfg.blob_url &&
	       s->cfg.blob_url[strlen(s->cfg.blob_url) - 1] == '/')
		s->cfg.blob_url[strlen(s->cfg.blob_url) - 1] = '\0';
	s->curl = curl_easy_init();
	if (!s->curl) {
		(void)buf_adds(err, "cannot initialise libcurl");
		stor_close(s);
		return ERR_IO;
	}
	stor_http_setup(s, s->curl);
	*out = s;
	return 0;
}

void stor_close(struct stor *s)
{
	if (!s)
		return;
	if (s->curl)
		curl_easy_cleanup(s->curl);
	stor_config_release(&s->cfg);
	free(s);
}

const struct stor_config *stor_config_of(const struct stor *s)
{
	return &s->cfg;
}

int stor__resolve(struct stor *s, const char *uri, struct stor_target *t,
		  struct buf *err)
{
	struct buf root = BUF_INIT;
	int ret;

	memset(t, 0, sizeof(*t));
	ret = stor_uri_parse(uri, &t->uri, err);
	if (ret)
		return ret;
	if (t->uri.scheme == STOR_SCHEME_FILE) {
		t->be = &stor__fs_backend;
		t->root = xstrdup("/");
		return 0;
	}
	if (s->cfg.s3_endpoint) {
		t->be = &stor__s3_backend;
		return 0;
	}
	if (s->cfg.state_dir) {
		stor_fs_path(&root, s->cfg.state_dir, "s3/");
		(void)buf_adds(&root, t->uri.bucket);
		t->be = &stor__fs_backend;
		t->root = buf_detach(&root, NULL);
		return 0;
	}
	if (s->cfg.blob_url) {
		t->be = &stor__blob_backend;
		return 0;
	}
	(void)buf_addf(
		err,
		"cannot reach '%s': no S3 endpoint (TRAINCTL_S3_ENDPOINT), "
		"state folder or controller configured",
		uri);
	stor_uri_release(&t->uri);
	return ERR_INVALID;
}

void stor__target_release(struct stor_target *t)
{
	stor_uri_release(&t->uri);
	FREE_AND_NULL(t->root);
}

/*
 * Resolves an object call's URI, which must name a key, not a prefix.
 * The caller releases t on success.
 */
static int resolve_key(struct stor *s, const char *uri, struct stor_target *t,
		       struct buf *err)
{
	struct buf why = BUF_INIT;
	int ret = stor__resolve(s, uri, t, err);

	if (ret)
		return ret;
	ret = stor_key_check(t->uri.key, 0, &why);
	if (ret) {
		(void)buf_addf(err, "'%s' does not name an object: %s", uri,
			       why.data);
		stor__target_release(t);
	}
	buf_release(&why);
	return ret;
}

/*
 * Ends a call: prefixes the message the backend wrote with the URI it
 * was about, and releases the target.
 */
static int done(int ret, const char *uri, struct stor_target *t,
		struct buf *msg, struct buf *err)
{
	if (ret)
		(void)buf_addf(err, "%s: %s", uri, msg->data);
	buf_release(msg);
	stor__target_release(t);
	return ret;
}

int stor_list(struct stor *s, const char *uri, struct stor_list *out,
	      struct buf *err)
{
	struct stor_target t;
	struct buf msg = BUF_INIT;
	int ret = stor__resolve(s, uri, &t, err);

	if (ret)
		return ret;
	return done(t.be->list(s, &t, out, &msg), uri, &t, &msg, err);
}

int stor_stat(struct stor *s, const char *uri, struct stor_object *out,
	      struct buf *err)
{
	struct stor_target t;
	struct buf msg = BUF_INIT;
	int ret = resolve_key(s, uri, &t, err);

	if (ret)
		return ret;
	return done(t.be->stat(s, &t, out, &msg), uri, &t, &msg, err);
}

int stor_get(struct stor *s, const char *uri, const char *path,
	     struct stor_object *info, struct buf *err)
{
	struct stor_target t;
	struct buf msg = BUF_INIT;
	int ret = resolve_key(s, uri, &t, err);

	if (ret)
		return ret;
	return done(t.be->get(s, &t, path, info, &msg), uri, &t, &msg, err);
}

int stor_get_stream(struct stor *s, const char *uri, stor_stream_fn *fn,
		    void *arg, int64_t *size, struct buf *err)
{
	struct stor_target t;
	struct buf msg = BUF_INIT;
	int ret = resolve_key(s, uri, &t, err);

	if (size)
		*size = 0;
	if (ret)
		return ret;
	return done(t.be->get_stream(s, &t, fn, arg, size, &msg), uri, &t, &msg,
		    err);
}

int stor_put(struct stor *s, const char *path, const char *uri,
	     struct stor_object *info, struct buf *err)
{
	struct stor_target t;
	struct buf msg = BUF_INIT;
	int ret = resolve_key(s, uri, &t, err);

	if (ret)
		return ret;
	return done(t.be->put(s, &t, path, info, &msg), uri, &t, &msg, err);
}

int stor_delete(struct stor *s, const char *uri, struct buf *err)
{
	struct stor_target t;
	struct buf msg = BUF_INIT;
	int ret = resolve_key(s, uri, &t, err);

	if (ret)
		return ret;
	return done(t.be->delete_object(s, &t, &msg), uri, &t, &msg, err);
}
