#define LOG_TAG "repl"
/*
 * Hosts' telemetry on every member of a replicated controller
 * (controller/replicate.h): the samples of an agent's status are copied
 * to another member before the status is answered, and the keeper fetches
 * what a member lacks within the retention from the others. Samples
 * travel as the agents send them (a status message carrying only
 * samples, api/agent_proto.h), at most API_TELEMETRY_MAX_SAMPLES a line.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "api/agent_proto.h"
#include "api/telemetry.h"
#include "controller/ctrl.h"
#include "controller/obs/telemetry.h"
#include "controller/replicate.h"
#include "controller/replicate_int.h"
#include "db/telemetry.h"
#include "ha/ha.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define HOUR_MS (3600LL * 1000)
#define TM_COPY_MS 2000
#define TM_GRACE_MS 300
#define TM_BODY_MAX (4 << 20)
/* A pass after one that every member answered compares the samples
 * since this long before that one (the first: the whole retention). */
#define SYNC_OVERLAP_MS (60 * 1000)
/* Samples one catch-up answer holds (the newest when more). */
#define TM_FETCH_MAX 5000

/* A host's name as the inventory allows it (no '/', printable). */
static int host_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len > 255)
		return 0;
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == '/' || s[i] == 0x7f)
			return 0;
	return 1;
}

/* Lines of status messages, API_TELEMETRY_MAX_SAMPLES samples each. */
static int samples_lines(const struct tm_host_sample *s, size_t n,
			 struct buf *out)
{
	struct api_status st;
	size_t i;
	int ret = 0;

	for (i = 0; i < n && !ret; i += API_TELEMETRY_MAX_SAMPLES) {
		memset(&st, 0, sizeof(st));
		st.boot_id = (char *)"members"; /* required; not read */
		st.samples = (struct tm_host_sample *)&s[i];
		st.n_samples = n - i < API_TELEMETRY_MAX_SAMPLES ?
				       n - i :
				       API_TELEMETRY_MAX_SAMPLES;
		ret = api_status_build(&st, out);
		(void)buf_addch(out, '\n');
	}
	return ret;
}

/* Stores the samples of text's lines for host: how many, or -1. */
static long store_lines(const char *host, const char *text, size_t len)
{
	struct ctrl_ctx *ctx = ctrl_repl__ctx();
	struct buf err = BUF_INIT;
	const char *p = text, *end = text + len;
	long stored = 0;

	while (p < end && stored >= 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct api_status st;

		buf_reset(&err);
		if (l && !api_status_parse(p, l, &st, &err)) {
			if (st.n_samples && ctx && ctx->tm_db &&
			    db_tm_add(ctx->tm_db, host, st.samples,
				      st.n_samples, &err))
				stored = -1;
			else
				stored += (long)st.n_samples;
			api_status_release(&st);
		} else if (l) {
			stored = -1;
		}
		p += l + 1;
	}
	if (stored < 0)
		log_info("telemetry of '%s' from another member: %s", host,
			 err.data);
	buf_release(&err);
	return stored;
}

/* ------------------------------------------------- the members' route */

struct ctrl_reptm_req {
	char *host; /* PUT */
	struct buf body;
	int status;
};

/* This member's hosts with samples since since_ms. */
struct tm_hosts {
	char **hosts;
	int64_t *newest, *count;
	size_t n;
};

static int tm_hosts_get(struct ctrl_ctx *ctx, int64_t since, struct tm_hosts *h)
{
	struct buf err = BUF_INIT;
	int ret;

	memset(h, 0, sizeof(*h));
	ret = !ctx->tm_db ? 0 :
			    db_tm_hosts(ctx->tm_db, since, &h->hosts,
					&h->newest, &h->count, &h->n, &err);
	buf_release(&err);
	return ret;
}

static void tm_hosts_release(struct tm_hosts *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		free(h->hosts[i]);
	free(h->hosts);
	free(h->newest);
	free(h->count);
}

/* GET "SINCE": "HOST NEWEST COUNT" lines of the samples since SINCE. */
static void get_list(struct ctrl_reptm_req *r, const char *tail)
{
	struct tm_hosts h;
	size_t i;

	if (tm_hosts_get(ctrl_repl__ctx(), strtoll(tail, NULL, 10), &h))
		r->status = 500;
	for (i = 0; i < h.n; i++)
		(void)buf_addf(&r->body, "%s %" PRId64 " %" PRId64 "\n",
			       h.hosts[i], h.newest[i], h.count[i]);
	tm_hosts_release(&h);
}

/* GET "HOST/SINCE": the samples after SINCE (the newest TM_FETCH_MAX). */
static void get_samples(struct ctrl_reptm_req *r, const char *tail,
			const char *slash)
{
	struct ctrl_ctx *ctx = ctrl_repl__ctx();
	struct buf err = BUF_INIT;
	char *host = xstrndup(tail, (size_t)(slash - tail));
	int64_t since = strtoll(slash + 1, NULL, 10);
	struct tm_host_sample *s = NULL;
	size_t n = 0, i;
	int truncated;

	if (ctx->tm_db &&
	    !db_tm_host_range(ctx->tm_db, host, since + 1,
			      time_now_ms() + CTRL_TM_FUTURE_MS, TM_FETCH_MAX,
			      &s, &n, &truncated, &err))
		(void)samples_lines(s, n, &r->body);
	for (i = 0; i < n; i++)
		tm_host_sample_release(&s[i]);
	free(s);
	free(host);
	buf_release(&err);
}

static void get_answer(struct ctrl_reptm_req *r, const char *tail)
{
	const char *slash = strrchr(tail, '/');

	r->status = 200;
	if (!slash)
		get_list(r, tail);
	else if (host_ok(tail, (size_t)(slash - tail)))
		get_samples(r, tail, slash);
	else
		r->status = 400;
}

struct ctrl_reptm_req *ctrl_reptm__begin(const char *method, const char *tail,
					 int64_t length, int *status,
					 struct buf *msg)
{
	struct ctrl_reptm_req *r;

	if (!ctrl_repl__ctx() ||
	    (strcmp(method, "GET") &&
	     (strcmp(method, "PUT") || !host_ok(tail, strlen(tail)) ||
	      length > TM_BODY_MAX))) {
		*status = 400;
		(void)buf_adds(msg, "not a host's telemetry");
		return NULL;
	}
	r = xcalloc(1, sizeof(*r));
	buf_init(&r->body, TM_BODY_MAX);
	if (!strcmp(method, "GET")) {
		get_answer(r, tail);
		*status = r->status; /* answered at once */
	} else {
		r->host = xstrdup(tail);
	}
	return r;
}

void ctrl_reptm__data(struct ctrl_reptm_req *r, const char *p, size_t n)
{
	if (!r->status && buf_add(&r->body, p, n))
		r->status = 413;
}

void ctrl_reptm__finish(struct ctrl_reptm_req *r, struct ha_local_reply *out)
{
	if (!r->status)
		r->status = store_lines(r->host, r->body.data, r->body.len) <
					    0 ?
				    400 :
				    200;
	out->status = r->status;
	if (r->host)
		buf_reset(&r->body);
	(void)buf_add(&out->body, r->body.data, r->body.len);
}

void ctrl_reptm__release(struct ctrl_reptm_req *r)
{
	if (!r)
		return;
	free(r->host);
	buf_release(&r->body);
	free(r);
}

/* ------------------------------------------------------ the leader's copy */

int ctrl_repl_tm_copy(const char *host, const struct tm_host_sample *s,
		      size_t n)
{
	size_t nm, i;
	char *const *urls = ctrl_repl__members(&nm);
	struct ctrl_repl_push *p;
	struct buf body = BUF_INIT, *u;
	int ret;

	if (!ctrl_repl_on() || !n)
		return 0;
	if (samples_lines(s, n, &body)) {
		buf_release(&body);
		return -1;
	}
	p = xcalloc(nm, sizeof(*p));
	u = xcalloc(nm, sizeof(*u));
	for (i = 0; i < nm; i++) {
		(void)buf_addf(&u[i], "%s%stelemetry/%s", urls[i],
			       CTRL_REPL_PREFIX, host);
		p[i].url = u[i].data;
		p[i].data = body.data;
		p[i].size = (int64_t)body.len;
	}
	ret = ctrl_repl__push_all(p, nm, time_mono_ms() + TM_COPY_MS,
				  TM_GRACE_MS);
	for (i = 0; i < nm; i++) {
		buf_release(&p[i].answer);
		buf_release(&u[i]);
	}
	free(p);
	free(u);
	buf_release(&body);
	if (ret)
		log_warn("telemetry of '%s': no other member took %zu samples",
			 host, n);
	return ret;
}

/* ------------------------------------------------------------ catch-up */

/* Where host is in h, or h->n. */
static size_t find_host(const struct tm_hosts *h, const char *host)
{
	size_t i;

	for (i = 0; i < h->n && strcmp(h->hosts[i], host); i++)
		;
	return i;
}

/* Fetches host's samples after since from the member at url. */
static void fetch_samples(const char *url, const char *host, int64_t since)
{
	struct buf u = BUF_INIT, got;
	long status;

	(void)buf_addf(&u, "%s%stelemetry/%s/%" PRId64, url, CTRL_REPL_PREFIX,
		       host, since);
	if (!ctrl_repl__get(u.data, &status, &got, TM_BODY_MAX) &&
	    status == 200 && got.len &&
	    store_lines(host, got.data, got.len) > 0)
		log_info("telemetry of '%s': samples from another member",
			 host);
	buf_release(&got);
	buf_release(&u);
}

/*
 * Compares this member's samples since oldest with the member's at url:
 * a host of which it has more is fetched (since oldest: samples this
 * member holds already are kept as they are), one with newer samples
 * from this member's newest.
 */
static int fetch_from(const char *url, const struct tm_hosts *mine,
		      int64_t oldest)
{
	struct buf list, u = BUF_INIT;
	long status;
	char *line, *save = NULL;
	int ret = -1;

	(void)buf_addf(&u, "%s%stelemetry/%" PRId64, url, CTRL_REPL_PREFIX,
		       oldest);
	if (ctrl_repl__get(u.data, &status, &list, 1 << 20) || status != 200)
		goto out;
	ret = 0;
	for (line = strtok_r(list.data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');
		int64_t newest, count;
		size_t i;

		if (!sp)
			continue;
		*sp = '\0';
		newest = strtoll(sp + 1, &sp, 10);
		count = strtoll(sp, NULL, 10);
		i = find_host(mine, line);
		if (!host_ok(line, strlen(line)))
			continue;
		if (i == mine->n || count > mine->count[i])
			fetch_samples(url, line, oldest - 1);
		else if (newest > mine->newest[i])
			fetch_samples(url, line, mine->newest[i]);
	}
out:
	buf_release(&list);
	buf_release(&u);
	return ret;
}

/* When every member last answered a pass (0: never): later passes
 * compare only the samples since a little before it. */
static int64_t synced_ms;

void ctrl_reptm__catch_up(void)
{
	struct ctrl_ctx *ctx = ctrl_repl__ctx();
	struct tm_hosts mine;
	size_t nm, i;
	char *const *urls = ctrl_repl__members(&nm);
	int64_t now = time_now_ms(), oldest;
	int failed = 0;

	if (!ctx || !ctx->tm_db)
		return;
	oldest = now - ctx->cfg.tm_retention_h * HOUR_MS;
	if (synced_ms && synced_ms - SYNC_OVERLAP_MS > oldest)
		oldest = synced_ms - SYNC_OVERLAP_MS;
	for (i = 0; i < nm; i++) {
		if (tm_hosts_get(ctx, oldest, &mine))
			return;
		if (fetch_from(urls[i], &mine, oldest))
			failed = 1;
		tm_hosts_release(&mine);
	}
	if (!failed)
		synced_ms = now;
}
