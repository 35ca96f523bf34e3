/*
 * The locations an assignment's job may name (docs/security.md, "Which
 * locations a request may name"): the controller checks the URIs of a
 * request, the agent those it derives, such as a manifest's objects, where
 * the bytes move.
 */
#define LOG_TAG "agent"

#include <string.h>

#include "agent/locations.h"
#include "api/agent_proto.h"
#include "api/sigv4.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/banned.h"

int agent_uri_allowed(const struct api_assignment *s, const char *uri,
		      struct buf *why)
{
	struct stor_uri u;
	struct buf path = BUF_INIT;
	int ret = stor_uri_parse(uri, &u, why);

	if (ret)
		return ret;
	if (!s->has_locations) {
		/* An older controller: it checked what it could. */
	} else if (u.scheme == STOR_SCHEME_FILE) {
		(void)buf_addf(&path, "/%s", u.key);
		if (!s->loc_file_any &&
		    !fs_path_under(path.data, s->loc_file_roots,
				   s->n_loc_file_roots)) {
			(void)buf_adds(why, "it is outside the folders the "
					    "controller allows for file:// "
					    "URIs");
			ret = ERR_INVALID;
		}
	} else {
		(void)buf_addf(&path, "%s/%s", u.bucket, u.key);
		if (!s->loc_s3_any &&
		    !api_s3_prefixes_allow(s->loc_s3_prefixes,
					   s->n_loc_s3_prefixes, path.data)) {
			(void)buf_adds(why, "it is outside the S3 prefixes the "
					    "job's owner may name "
					    "(trainctl_s3_prefixes)");
			ret = ERR_INVALID;
		}
	}
	stor_uri_release(&u);
	buf_release(&path);
	return ret;
}

int agent_channel_uri_check(const struct api_assignment *s,
			    const struct api_channel *c, const char *uri,
			    struct buf *err)
{
	struct buf why = BUF_INIT;
	int ret = agent_uri_allowed(s, uri, &why);

	if (ret)
		(void)buf_addf(err, "channel '%s': refusing %.300s: %s",
			       c->name, uri, why.data);
	buf_release(&why);
	return ret ? ERR_INVALID : 0;
}

/* "s3" of "s3://...", as the length of the scheme; 0: none. */
static size_t scheme_len(const char *uri)
{
	const char *p = strstr(uri, "://");

	return p ? (size_t)(p - uri) : 0;
}

int agent_manifest_uri_check(const struct api_assignment *s,
			     const struct api_channel *c, const char *uri,
			     struct buf *err)
{
	struct buf why = BUF_INIT;
	size_t n = scheme_len(c->s3_uri);
	int ret = 0;

	if (!n || scheme_len(uri) != n || strncmp(uri, c->s3_uri, n)) {
		(void)buf_addf(&why,
			       "its scheme is not the manifest's own (%.*s)",
			       (int)n, c->s3_uri);
		ret = ERR_INVALID;
	}
	if (!ret)
		ret = agent_uri_allowed(s, uri, &why);
	if (ret)
		(void)buf_addf(err,
			       "channel '%s': manifest %.300s: refusing "
			       "%.300s: %s",
			       c->name, c->s3_uri, uri, why.data);
	buf_release(&why);
	return ret ? ERR_INVALID : 0;
}
