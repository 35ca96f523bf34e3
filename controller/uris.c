#define LOG_TAG "ctrl"

#include <stdlib.h>
#include <string.h>

#include "api/agent_proto.h"
#include "api/job_spec.h"
#include "api/sigv4.h"
#include "controller/ctrl.h"
#include "controller/files.h"
#include "controller/caller.h"
#include "controller/uris.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

static const char *owner_of(const struct api_credential *c)
{
	return c->user ? c->user : c->profile;
}

int ctrl_uris_owner_allows(const struct ctrl_ctx *ctx, const char *owner,
			   const char *bucket_key)
{
	size_t i;

	if (!ctx->auth_enabled || !owner || !*owner)
		return 1;
	for (i = 0; i < ctx->creds.n; i++) {
		const struct api_credential *c = &ctx->creds.items[i];

		if (strcmp(owner_of(c), owner))
			continue;
		if (c->admin || api_credential_s3_allowed(c, bucket_key))
			return 1;
	}
	return 0;
}

void ctrl_uris_owner_locations(const struct ctrl_ctx *ctx, const char *owner,
			       struct api_assignment *a)
{
	const struct ctrl_config *cfg = &ctx->cfg;
	size_t i, j, n = 0;

	a->has_locations = 1;
	a->loc_s3_any = !ctx->auth_enabled || !owner || !*owner;
	for (i = 0; !a->loc_s3_any && i < ctx->creds.n; i++) {
		const struct api_credential *c = &ctx->creds.items[i];

		if (strcmp(owner_of(c), owner))
			continue;
		if (c->admin)
			a->loc_s3_any = 1;
		n += c->n_s3_prefixes;
	}
	if (!a->loc_s3_any) {
		a->loc_s3_prefixes = xcalloc(n + 1, sizeof(char *));
		for (i = 0; i < ctx->creds.n; i++) {
			const struct api_credential *c = &ctx->creds.items[i];

			if (strcmp(owner_of(c), owner))
				continue;
			for (j = 0; j < c->n_s3_prefixes; j++)
				a->loc_s3_prefixes[a->n_loc_s3_prefixes++] =
					xstrdup(c->s3_prefixes[j]);
		}
	}
	a->loc_file_any = !cfg->n_file_roots && !cfg->credentials_file;
	if (a->loc_file_any)
		return;
	a->loc_file_roots = xcalloc(cfg->n_file_roots + 1, sizeof(char *));
	for (i = 0; i < cfg->n_file_roots; i++)
		a->loc_file_roots[i] =
			xstrdup(*cfg->file_roots[i] ? cfg->file_roots[i] : "/");
	a->n_loc_file_roots = cfg->n_file_roots;
}

/* What a user key may name in S3, for its error message. */
static void say_prefixes(const struct api_credential *c, struct buf *why)
{
	size_t i;

	if (!c->n_s3_prefixes) {
		(void)buf_adds(why, "this key may name no S3 URI (its "
				    "credentials profile has no "
				    "trainctl_s3_prefixes)");
		return;
	}
	(void)buf_adds(why, "this key may name only");
	for (i = 0; i < c->n_s3_prefixes; i++)
		(void)buf_addf(why, "%s s3://%s", i ? "," : "",
			       c->s3_prefixes[i]);
	(void)buf_adds(why, " (trainctl_s3_prefixes)");
}

/* The same for the keys of a job's owner. */
static void say_owner_prefixes(const struct ctrl_ctx *ctx, const char *owner,
			       struct buf *why)
{
	size_t i, j, n = 0;

	(void)buf_addf(why, "the keys of its owner '%s' may name ", owner);
	for (i = 0; i < ctx->creds.n; i++) {
		const struct api_credential *c = &ctx->creds.items[i];

		if (strcmp(owner_of(c), owner))
			continue;
		for (j = 0; j < c->n_s3_prefixes; j++)
			(void)buf_addf(why, "%s s3://%s", n++ ? "," : "only",
				       c->s3_prefixes[j]);
	}
	if (!n)
		(void)buf_adds(why, "no S3 URI");
	(void)buf_adds(why, " (trainctl_s3_prefixes)");
}

struct check {
	struct ctrl_ctx *ctx;
	const struct ctrl_caller *who;
	struct buf *err;
};

/*
 * One URI of a request: it parses, a file:// one lies under the allowed
 * roots, an s3:// one within the caller's prefixes.
 */
static int check_uri(void *arg, const char *what, const char *uri)
{
	const struct check *c = arg;
	const struct ctrl_caller *who = c->who;
	struct stor_uri u;
	struct buf why = BUF_INIT;
	struct buf path = BUF_INIT;
	int ret = stor_uri_parse(uri, &u, &why);

	if (!ret && u.scheme == STOR_SCHEME_FILE) {
		(void)buf_addf(&path, "/%s", u.key);
		ret = ctrl_file_path_allowed(c->ctx, path.data, &why);
	} else if (!ret && who->cred) {
		(void)buf_addf(&path, "%s/%s", u.bucket, u.key);
		if (!api_credential_s3_allowed(who->cred, path.data)) {
			say_prefixes(who->cred, &why);
			ret = ERR_INVALID;
		}
	} else if (!ret && !who->admin) {
		(void)buf_addf(&path, "%s/%s", u.bucket, u.key);
		if (!ctrl_uris_owner_allows(c->ctx, who->owner, path.data)) {
			say_owner_prefixes(c->ctx, who->owner, &why);
			ret = ERR_INVALID;
		}
	}
	if (ret)
		(void)buf_addf(c->err,
			       "1 validation error detected: %s '%.300s' "
			       "cannot be used: %s",
			       what, uri, why.data);
	stor_uri_release(&u);
	buf_release(&why);
	buf_release(&path);
	return ret;
}

int ctrl_uris_check(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const struct api_job_spec *spec, struct buf *err)
{
	struct check c = { ctx, who, err };

	return api_job_spec_uris(spec, check_uri, &c);
}
