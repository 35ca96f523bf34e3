#ifndef CTRL_WEB_H
#define CTRL_WEB_H

/*
 * The status page, served by trainctld itself (docs/web.md):
 *
 *   /, /ui/...                 the page's files, embedded at build time
 *                              (scripts/embed.sh -> build/gen/web_assets.c)
 *   GET /v1/ui/jobs            the jobs list with what ListTrainingJobs
 *                              leaves out (instances, attempt, reason)
 *   GET /v1/ui/jobs/{name}     where a job runs: hosts, their reports, the
 *                              first failing rank, log streams, metrics
 *   GET /v1/ui/jobs/{name}/metrics   every MetricDefinition's series
 *   GET /v1/changes?since=C    long-poll: answers as soon as jobs, hosts
 *                              or logs changed after cursor C (or after
 *                              timeout=S seconds, default 25)
 *   GET /metrics               Prometheus text (controller/obs/metrics.h)
 *
 * With credentials configured, a browser signs in with HTTP Basic: the
 * user is an access key id of the credentials file, the password its
 * secret key. Basic credentials only read (GET and HEAD, not asked for by
 * another site), so a forged cross-site form cannot create or stop jobs;
 * programs sign with SigV4, like the API, for everything.
 */
#include <stddef.h>

#include "controller/request.h"

struct ctrl_ctx;
struct MHD_Connection;
struct ctrl_caller;

/* One embedded file; the table is generated at build time. */
struct ctrl_web_asset {
	const char *path; /* "/ui/app.js" */
	const char *content_type;
	const unsigned char *data;
	size_t len;
	const char *etag; /* quoted, from the content */
};

extern const struct ctrl_web_asset ctrl_web_assets[];
extern const size_t ctrl_web_n_assets;

enum ctrl_web_auth {
	CTRL_WEB_AUTH_NONE = 0, /* no Basic credentials: SigV4 decides */
	CTRL_WEB_AUTH_OK,	/* valid Basic credentials, or auth is off */
	CTRL_WEB_AUTH_DENIED	/* a 401 asking for credentials is queued */
};

/*
 * Checks HTTP Basic credentials against the credentials file. A page
 * (GET / without X-Amz-Target, /ui/...) without them, or a read with
 * wrong ones, gets a 401 with WWW-Authenticate queued here (so a browser
 * asks for them). Writes and cross-site reads of data get
 * CTRL_WEB_AUTH_NONE whatever they carry: SigV4 decides. On
 * CTRL_WEB_AUTH_OK with credentials, *caller is who signed in.
 */
enum ctrl_web_auth ctrl_web_auth(struct ctrl_ctx *ctx,
				 struct MHD_Connection *conn,
				 const char *method, const char *url,
				 struct ctrl_caller *caller);

/* The rows of the paths above (controller/route.h). */
extern const struct ctrl_route_block ctrl_web_routes;

#endif
