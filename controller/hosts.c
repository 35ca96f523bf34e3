#define LOG_TAG "ctrl"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>
#include <openssl/crypto.h>

#include "controller/ctrl.h"
#include "api/hosts_json.h"
#include "controller/hosts.h"
#include "controller/quarantine.h"
#include "controller/rendezvous.h"
#include "controller/obs/telemetry.h"
#include "controller/caller.h"
#include "controller/reply.h"
#include "db/run.h"
#include "db/warmpool.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * Where name is or would go in ctx->hosts_by_name: every request of every
 * agent looks its host up, so with thousands of hosts this is a binary
 * search, not a walk.
 */
static size_t by_name_slot(const struct ctrl_ctx *ctx, const char *name,
			   int *found)
{
	size_t lo = 0, hi = ctx->n_hosts;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ctx->hosts_by_name[mid]->name, name);

		if (!c) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct ctrl_host *ctrl_hosts_add(struct ctrl_ctx *ctx, const char *name,
				 const char *token)
{
	struct ctrl_host *h;
	size_t at;
	int found;

	at = by_name_slot(ctx, name, &found);
	if (found)
		BUG("host '%s' added twice", name);
	ctx->hosts =
		xrealloc(ctx->hosts, (ctx->n_hosts + 1) * sizeof(*ctx->hosts));
	ctx->hosts_by_name =
		xrealloc(ctx->hosts_by_name,
			 (ctx->n_hosts + 1) * sizeof(*ctx->hosts_by_name));
	h = xcalloc(1, sizeof(*h));
	h->name = xstrdup(name);
	h->token = xstrdup(token);
	/* Start versions at the clock so that an agent holding a version
	 * from before a controller restart always sees a change. */
	h->version = time_now_ms();
	memmove(ctx->hosts_by_name + at + 1, ctx->hosts_by_name + at,
		(ctx->n_hosts - at) * sizeof(*ctx->hosts_by_name));
	ctx->hosts_by_name[at] = h;
	ctx->hosts[ctx->n_hosts++] = h;
	return h;
}

struct ctrl_host *ctrl_hosts_find(struct ctrl_ctx *ctx, const char *name)
{
	int found;
	size_t at = by_name_slot(ctx, name, &found);

	return found ? ctx->hosts_by_name[at] : NULL;
}

struct ctrl_host *ctrl_hosts_auth(struct ctrl_ctx *ctx, const char *name,
				  const char *authorization)
{
	struct ctrl_host *h = ctrl_hosts_find(ctx, name);
	const char *tok;
	size_t n;

	if (!h || !authorization || strncmp(authorization, "Bearer ", 7))
		return NULL;
	tok = authorization + 7;
	n = strlen(h->token);
	if (strlen(tok) != n || CRYPTO_memcmp(tok, h->token, n))
		return NULL;
	return h;
}

static void live_unlink(struct ctrl_ctx *ctx, struct ctrl_host *h)
{
	if (!h->on_live)
		return;
	if (h->live_prev)
		h->live_prev->live_next = h->live_next;
	else
		ctx->live_head = h->live_next;
	if (h->live_next)
		h->live_next->live_prev = h->live_prev;
	else
		ctx->live_tail = h->live_prev;
	h->live_prev = h->live_next = NULL;
	h->on_live = 0;
}

void ctrl_host_seen(struct ctrl_ctx *ctx, struct ctrl_host *h)
{
	live_unlink(ctx, h);
	if (!h->registered || h->lost)
		return;
	/* last_seen_ms is read from the monotonic clock under hosts_lock,
	 * so appending keeps the list in order. */
	h->live_prev = ctx->live_tail;
	if (ctx->live_tail)
		ctx->live_tail->live_next = h;
	else
		ctx->live_head = h;
	ctx->live_tail = h;
	h->on_live = 1;
}

void ctrl_hosts_bump(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_host *h;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, name);
	if (h) {
		h->version++;
		ctrl_waiters_resume(ctx, &h->waiters);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

void ctrl_hosts_bump_all(struct ctrl_ctx *ctx)
{
	size_t i;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		ctx->hosts[i]->version++;
		ctrl_waiters_resume(ctx, &ctx->hosts[i]->waiters);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

int ctrl_hosts_tick(struct ctrl_ctx *ctx, int64_t now)
{
	int newly_lost = 0;
	struct ctrl_host *h;

	pthread_mutex_lock(&ctx->hosts_lock);
	ctrl_waiters_expire(ctx, now);
	while ((h = ctx->live_head) &&
	       now - h->last_seen_ms > ctx->cfg.host_deadline_ms) {
		h->lost = 1;
		live_unlink(ctx, h);
		newly_lost++;
		log_warn("host '%s' lost: no heartbeat for %lld ms", h->name,
			 (long long)(now - h->last_seen_ms));
	}
	ctrl_rdzv_tick(ctx, now);
	pthread_mutex_unlock(&ctx->hosts_lock);
	return newly_lost;
}

void ctrl_hosts_resume_all(struct ctrl_ctx *ctx)
{
	size_t i;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++)
		ctrl_waiters_resume(ctx, &ctx->hosts[i]->waiters);
	ctrl_waiters_resume(ctx, &ctx->log_waiters);
	ctrl_waiters_resume(ctx, &ctx->job_waiters);
	ctrl_rdzv_resume_all(ctx);
	pthread_mutex_unlock(&ctx->hosts_lock);
}

void ctrl_hosts_release(struct ctrl_ctx *ctx)
{
	size_t i;

	for (i = 0; i < ctx->n_hosts; i++) {
		struct ctrl_host *h = ctx->hosts[i];

		free(h->name);
		free(h->token);
		free(h->address);
		free(h->drain_reason);
		free(h->images_json);
		free(h->boot_id);
		free(h->log_boot_id);
		free(h->last_status);
		free(h->work_dir);
		free(h->instance_type);
		free(h->rack);
		free(h->inv_address);
		free(h->ssh_user);
		free(h->ssh_key);
		free(h->known_hosts);
		free(h->agent_path);
		free(h->prov_error);
		tm_host_sample_release(&h->tm_latest);
		free(h);
	}
	free(ctx->hosts);
	ctx->hosts = NULL;
	free(ctx->hosts_by_name);
	ctx->hosts_by_name = NULL;
	ctx->n_hosts = 0;
	ctx->live_head = ctx->live_tail = NULL;
	free(ctx->timers);
	ctx->timers = NULL;
	ctx->n_timers = ctx->timers_alloc = 0;
}

void ctrl_hosts_load_drains(struct ctrl_ctx *ctx)
{
	struct db_host_drain *d = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0, i, k;

	if (db_host_drains_list(ctx->db, &d, &n, &err)) {
		log_error("cannot read drained hosts: %s", err.data);
		buf_release(&err);
		return;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		struct ctrl_host *h = ctx->hosts[i];

		h->drained = 0;
		FREE_AND_NULL(h->drain_reason);
		for (k = 0; k < n; k++)
			if (!strcmp(d[k].host, h->name)) {
				h->drained = 1;
				h->drain_reason = d[k].reason ?
							  xstrdup(d[k].reason) :
							  NULL;
			}
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	db_host_drains_free(d, n);
	buf_release(&err);
}

/* The host of "<name>/<suffix>" (into name), or 0 with resp filled. */
static int host_of_path(struct ctrl_ctx *ctx, const char *path,
			const char *suffix, struct buf *name,
			struct ctrl_response *resp)
{
	const char *slash = strchr(path, '/');
	struct buf err = BUF_INIT;
	int known;

	if (!slash || slash == path || strcmp(slash, suffix) ||
	    buf_add(name, path, (size_t)(slash - path))) {
		(void)buf_addf(&err, "no such resource: use /v1/hosts/<name>%s",
			       suffix);
		ctrl_reply_err(resp, CTRL_E_NO_SUCH_PATH, err.data);
		buf_release(&err);
		return 0;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	known = ctrl_hosts_find(ctx, name->data) != NULL;
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (!known) {
		(void)buf_addf(&err, "no host named '%.200s'", name->data);
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND, err.data);
	}
	buf_release(&err);
	return known;
}

void ctrl_hosts_images_route(struct ctrl_ctx *ctx, const char *path,
			     struct ctrl_response *resp)
{
	struct buf name = BUF_INIT_MAX(256);
	struct ctrl_host *h;

	if (!host_of_path(ctx, path, "/images", &name, resp)) {
		buf_release(&name);
		return;
	}
	resp->status = 200;
	buf_reset(&resp->body);
	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, name.data);
	if (h)
		(void)buf_addf(&resp->body,
			       "{\"host\":\"%s\",\"images\":%s,"
			       "\"reported_ms\":%lld,\"prune\":{"
			       "\"requested\":%lld,\"done\":%lld}}",
			       name.data,
			       h->images_json ? h->images_json : "null",
			       (long long)h->images_ms,
			       (long long)h->prune_want,
			       (long long)h->prune_done);
	pthread_mutex_unlock(&ctx->hosts_lock);
	buf_release(&name);
}

void ctrl_hosts_set_images(struct ctrl_ctx *ctx, const char *name,
			   char *images_json, int64_t pruned)
{
	struct ctrl_host *h;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, name);
	if (h) {
		free(h->images_json);
		h->images_json = images_json;
		images_json = NULL;
		h->images_ms = time_now_ms();
		if (pruned > h->prune_done)
			h->prune_done = pruned;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	free(images_json);
}

int64_t ctrl_hosts_prune_want(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_host *h;
	int64_t want = 0;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, name);
	if (h && h->prune_want > h->prune_done)
		want = h->prune_want;
	pthread_mutex_unlock(&ctx->hosts_lock);
	return want;
}

/* POST /v1/hosts/{name}/images/prune: the agent prunes with its next
 * work; GET .../images says when it has (prune.done). */
static void prune_route(struct ctrl_ctx *ctx, const char *path,
			struct ctrl_response *resp)
{
	struct buf name = BUF_INIT_MAX(256);
	struct ctrl_host *h;
	int64_t want = 0;

	if (!host_of_path(ctx, path, "/images/prune", &name, resp)) {
		buf_release(&name);
		return;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, name.data);
	if (h) {
		h->prune_want = (h->prune_want > h->prune_done ?
					 h->prune_want :
					 h->prune_done) +
				1;
		want = h->prune_want;
		h->version++;
		ctrl_waiters_resume(ctx, &h->waiters);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	log_info("host '%s': prune of unused container images asked (%lld)",
		 name.data, (long long)want);
	resp->status = 202;
	buf_reset(&resp->body);
	(void)buf_addf(&resp->body, "{\"host\":\"%s\",\"prune\":%lld}",
		       name.data, (long long)want);
	buf_release(&name);
}

void ctrl_hosts_drain_route(struct ctrl_ctx *ctx, const char *path,
			    const char *body, size_t len,
			    struct ctrl_response *resp)
{
	const char *slash = strchr(path, '/');
	struct buf name = BUF_INIT_MAX(256), err = BUF_INIT;
	char *reason = NULL;
	int drain, known, ret;

	if (slash && !strcmp(slash, "/images/prune")) {
		prune_route(ctx, path, resp);
		goto out;
	}
	if (!slash || (strcmp(slash, "/drain") && strcmp(slash, "/undrain")) ||
	    slash == path || buf_add(&name, path, (size_t)(slash - path))) {
		ctrl_reply_err(resp, CTRL_E_NO_SUCH_PATH,
			       "host paths are /v1/hosts/<name>/drain, "
			       "/v1/hosts/<name>/undrain and "
			       "/v1/hosts/<name>/images/prune (POST)");
		goto out;
	}
	drain = !strcmp(slash, "/drain");
	if (drain && api_host_drain_parse(body, len, &reason, &err)) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION, err.data);
		goto out;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	known = ctrl_hosts_find(ctx, name.data) != NULL;
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (!known) {
		buf_reset(&err);
		(void)buf_addf(&err, "no host named '%.200s'", name.data);
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND, err.data);
		goto out;
	}
	ret = drain ? db_host_drain_set(ctx->db, name.data, reason,
					time_now_ms(), &err) :
		      db_host_drain_clear(ctx->db, name.data, &err);
	if (ret && ret != ERR_NOTFOUND) {
		ctrl_reply_err_code(resp, ret, err.data);
		goto out;
	}
	/* Returned to service: the failures that quarantined it are
	 * forgiven, so that they cannot quarantine it again. */
	if (!drain)
		ctrl_quarantine_forget(ctx, name.data);
	ctrl_hosts_load_drains(ctx);
	log_info("host '%s' %s%s%s", name.data, drain ? "drained" : "undrained",
		 reason ? ": " : "", reason ? reason : "");
	ctrl_reconciler_wake(ctx);
	resp->status = 200;
	buf_reset(&resp->body);
	(void)buf_addf(&resp->body, "{\"host\":\"%s\",\"drained\":%s}",
		       name.data, drain ? "true" : "false");
out:
	free(reason);
	buf_release(&name);
	buf_release(&err);
}

void ctrl_hosts_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		     struct ctrl_response *resp)
{
	struct db_assignment *as = NULL;
	struct db_warm_pool *pools = NULL;
	struct api_host_info *info;
	struct buf err = BUF_INIT;
	char(*algo)[32];
	int64_t now = time_mono_ms();
	size_t n_as = 0, n_pools = 0;
	size_t i, k, p;
	int *seen, *pool_seen;
	struct tm_host_sample *tm;
	size_t n_tm;

	(void)db_assignments_list(ctx->db, NULL, NULL, 0, &as, &n_as, &err);
	(void)db_warm_pools_available(ctx->db, &pools, &n_pools, &err);
	pool_seen = xcalloc(n_pools + 1, sizeof(*pool_seen));
	for (p = 0; p < n_pools; p++) {
		buf_reset(&err);
		pool_seen[p] =
			!ctrl_caller_check_job(ctx, who, pools[p].job, &err);
	}
	/* A host busy with another user's job says so, not which job. */
	seen = xcalloc(n_as + 1, sizeof(*seen));
	for (k = 0; k < n_as; k++) {
		buf_reset(&err);
		seen[k] = !ctrl_caller_check_job(ctx, who, as[k].job, &err);
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	info = xcalloc(ctx->n_hosts + 1, sizeof(*info));
	algo = xcalloc(ctx->n_hosts + 1, sizeof(*algo));
	tm = xcalloc(ctx->n_hosts + 1, sizeof(*tm));
	for (i = 0; i < ctx->n_hosts; i++) {
		struct ctrl_host *h = ctx->hosts[i];

		info[i].name = h->name;
		info[i].address = h->address;
		info[i].cpus = h->cpus;
		info[i].gpus = h->gpus;
		info[i].heartbeat_age_ms =
			h->last_seen_ms ? now - h->last_seen_ms : -1;
		info[i].state = !h->registered ? "provisioning" :
				h->lost	       ? "lost" :
						 "ready";
		info[i].error = h->prov_error;
		info[i].instance_type = h->instance_type ? h->instance_type :
							   "any";
		info[i].rack = h->rack;
		if (h->removed)
			info[i].state = "removed";
		info[i].drained = h->drained;
		info[i].drain_reason = h->drain_reason;
		/* The host's figures, not which jobs run there. */
		if (ctrl_tm_latest(h, &tm[i]))
			info[i].sample = &tm[i];
		if (h->drained && !h->lost)
			info[i].state = "drained";
		/* Held by an Available warm pool: "warm", and whose. */
		for (p = 0; p < n_pools; p++)
			for (k = 0; k < pools[p].n_hosts; k++) {
				if (strcmp(pools[p].hosts[k], h->name))
					continue;
				if (pool_seen[p])
					info[i].job = pools[p].job;
				if (!h->lost && !h->removed && !h->drained)
					info[i].state = "warm";
			}
		for (k = 0; k < n_as; k++) {
			if (strcmp(as[k].host, h->name))
				continue;
			if (seen[k]) {
				info[i].job = as[k].job;
				snprintf(algo[i], sizeof(algo[i]), "algo-%d",
					 as[k].host_index + 1);
				info[i].algo = algo[i];
			}
			if (!h->lost)
				info[i].state = h->drained ? "draining" :
							     "busy";
		}
	}
	resp->status = 200;
	buf_reset(&resp->body);
	(void)api_hosts_build(info, ctx->n_hosts, &resp->body);
	n_tm = ctx->n_hosts;
	pthread_mutex_unlock(&ctx->hosts_lock);
	for (i = 0; i < n_tm; i++)
		tm_host_sample_release(&tm[i]);
	free(tm);
	free(info);
	free(algo);
	free(seen);
	free(pool_seen);
	db_warm_pools_free(pools, n_pools);
	db_assignments_free(as, n_as);
	buf_release(&err);
}
