#define LOG_TAG "ctrl"

#include <stdlib.h>
#include <string.h>

#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/quarantine.h"
#include "controller/wake.h"
#include "controller/obs/metrics.h"
#include "db/run.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/banned.h"

int ctrl_quarantine_is(const char *drain_reason)
{
	return drain_reason && !strncmp(drain_reason, CTRL_QUARANTINE_PREFIX,
					strlen(CTRL_QUARANTINE_PREFIX));
}

int ctrl_quarantine_confirmed(const struct db_host_failure *f, int64_t now_ms)
{
	int64_t ran = f->ended_ms - f->started_ms;
	int64_t need = 2 * ran > CTRL_QUARANTINE_CONFIRM_MS ?
			       2 * ran :
			       CTRL_QUARANTINE_CONFIRM_MS;

	if (f->elsewhere || !f->left)
		return 0;
	return f->later_ended_well ||
	       (f->later_running_ms && now_ms - f->later_running_ms >= need);
}

/* Whether f[i] counts: recent enough, and confirmed. */
static int counts(const struct db_host_failure *f, size_t i, int64_t since,
		  int64_t now)
{
	return f[i].job && f[i].ended_ms >= since &&
	       ctrl_quarantine_confirmed(&f[i], now);
}

/* Whether f[i]'s job already counted in f[0..i). */
static int seen_before(const struct db_host_failure *f, size_t i, int64_t since,
		       int64_t now)
{
	size_t k;

	for (k = 0; k < i; k++)
		if (counts(f, k, since, now) && !strcmp(f[k].job, f[i].job))
			return 1;
	return 0;
}

/* Appends at most max bytes of s, cut at a character boundary. */
static void add_cut(struct buf *b, const char *s, size_t max)
{
	size_t len = strlen(s);

	if (len > max) {
		len = max;
		while (len && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
	}
	(void)buf_add(b, s, len);
	if (len < strlen(s))
		(void)buf_adds(b, "...");
}

int ctrl_quarantine_decide(const struct db_host_failure *f, size_t n,
			   int min_jobs, long window_ms, int64_t now_ms,
			   struct buf *reason)
{
	int64_t since = now_ms - window_ms;
	struct buf list = BUF_INIT;
	int jobs = 0;
	size_t i;

	buf_reset(reason);
	if (min_jobs <= 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (!counts(f, i, since, now_ms) ||
		    seen_before(f, i, since, now_ms))
			continue;
		jobs++;
		if (list.len >= CTRL_QUARANTINE_REASON_MAX)
			continue;
		(void)buf_addf(&list, "%s%s (", list.len ? ", " : "", f[i].job);
		add_cut(&list, f[i].reason ? f[i].reason : "failed",
			CTRL_QUARANTINE_JOB_REASON_MAX);
		(void)buf_addch(&list, ')');
	}
	if (jobs >= min_jobs) {
		(void)buf_addf(reason,
			       CTRL_QUARANTINE_PREFIX
			       " %d jobs failed on this host within %ld s: ",
			       jobs, window_ms / 1000);
		add_cut(reason, list.data, CTRL_QUARANTINE_REASON_MAX);
	}
	buf_release(&list);
	return jobs >= min_jobs ? jobs : 0;
}

/* Whether host is drained already (a quarantine has nothing to add). */
static int host_drained(struct ctrl_ctx *ctx, const char *host)
{
	struct ctrl_host *h;
	int drained;

	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, host);
	drained = !h || h->drained;
	pthread_mutex_unlock(&ctx->hosts_lock);
	return drained;
}

/* Drains host when its failures say so. */
static void look_at(struct ctrl_ctx *ctx, const char *host, int64_t now)
{
	struct db_host_failure *f = NULL;
	struct buf err = BUF_INIT, reason = BUF_INIT;
	size_t n = 0;

	if (host_drained(ctx, host))
		goto out;
	if (db_host_failures(ctx->db, host, now - ctx->cfg.quarantine_window_ms,
			     &f, &n, &err)) {
		log_error("host '%s': %s", host, err.data);
		goto out;
	}
	if (!ctrl_quarantine_decide(f, n, ctx->cfg.quarantine_failures,
				    ctx->cfg.quarantine_window_ms, now,
				    &reason))
		goto out;
	if (db_host_drain_set(ctx->db, host, reason.data, now, &err)) {
		log_error("host '%s': cannot drain: %s", host, err.data);
		goto out;
	}
	ctrl_hosts_load_drains(ctx);
	ctrl_metrics_host_quarantined();
	log_warn("host '%s' drained: %s", host, reason.data);
	ctrl_hosts_bump(ctx, host);
	ctrl_reconciler_wake(ctx);
out:
	db_host_failures_free(f, n);
	buf_release(&reason);
	buf_release(&err);
}

void ctrl_quarantine_note(struct ctrl_ctx *ctx, const char *job, int attempt,
			  const char *host)
{
	struct buf err = BUF_INIT;

	if (db_attempt_set_failed_host(ctx->db, job, attempt, host, &err))
		log_error("job '%s': %s", job, err.data);
	else if (ctx->cfg.quarantine_failures > 0)
		look_at(ctx, host, time_now_ms());
	buf_release(&err);
}

void ctrl_quarantine_tick(struct ctrl_ctx *ctx, int now)
{
	struct buf err = BUF_INIT;
	int64_t mono = time_mono_ms(), wall = time_now_ms();
	char **hosts = NULL;
	size_t n = 0, i;

	if (ctx->cfg.quarantine_failures <= 0 ||
	    (!now && mono < ctx->quarantine_next_ms))
		return;
	ctx->quarantine_next_ms = mono + CTRL_QUARANTINE_TICK_MS;
	if (db_failed_hosts(ctx->db, wall - ctx->cfg.quarantine_window_ms,
			    &hosts, &n, &err))
		log_error("quarantine: %s", err.data);
	for (i = 0; i < n; i++) {
		look_at(ctx, hosts[i], wall);
		free(hosts[i]);
	}
	free(hosts);
	buf_release(&err);
}

void ctrl_quarantine_forget(struct ctrl_ctx *ctx, const char *host)
{
	struct buf err = BUF_INIT;

	if (db_host_failures_forget(ctx->db, host, &err))
		log_error("host '%s': %s", host, err.data);
	buf_release(&err);
}
