/*
 * Hosts' telemetry (controller/obs/telemetry.h). An agent's samples arrive
 * parsed and range-checked (api/telemetry.c); here they are checked
 * against the clock and the host's previous sample, so that an agent
 * cannot fill the store faster than one sample per CTRL_TM_MIN_SPACING_MS
 * or with times outside the retention.
 */
#define LOG_TAG "ctrl"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/telemetry.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/obs/prom.h"
#include "controller/obs/telemetry.h"
#include "controller/reply.h"
#include "controller/stragwatch.h"
#include "db/run.h"
#include "db/telemetry.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define PRUNE_EVERY_MS 60000
#define HOUR_MS (3600LL * 1000)

int ctrl_tm_open(struct ctrl_ctx *ctx, struct buf *err)
{
	struct buf path = BUF_INIT;
	int ret;

	(void)buf_addf(&path, "%s/telemetry.db", ctx->cfg.state_dir);
	ret = db_tm_open(path.data, &ctx->tm_db, err);
	buf_release(&path);
	return ret;
}

void ctrl_tm_close(struct ctrl_ctx *ctx)
{
	db_tm_close(ctx->tm_db);
	ctx->tm_db = NULL;
}

static void prune(struct ctrl_ctx *ctx, int64_t now)
{
	int64_t last = atomic_load(&ctx->tm_pruned_ms);
	struct buf err = BUF_INIT;
	int n;

	/* One thread prunes per minute; the others go on. */
	if (now - last < PRUNE_EVERY_MS ||
	    !atomic_compare_exchange_strong(&ctx->tm_pruned_ms, &last, now))
		return;
	n = db_tm_prune(ctx->tm_db, now - ctx->cfg.tm_retention_h * HOUR_MS,
			now - ctx->cfg.tm_job_retention_d * 24 * HOUR_MS, &err);
	if (n < 0)
		log_warn("%s", err.data);
	else if (n > 0)
		log_debug("telemetry: pruned %d old samples", n);
	buf_release(&err);
}

/* Whether host holds the assignment r names (as the store says). */
static int assigned(const struct tm_rank_sample *r,
		    const struct db_assignment *as, size_t n)
{
	char algo[32];
	size_t i;

	for (i = 0; i < n; i++) {
		(void)snprintf(algo, sizeof(algo), "algo-%d",
			       as[i].host_index + 1);
		if (!strcmp(r->job, as[i].job) && r->attempt == as[i].attempt &&
		    !strcmp(r->algo, algo) &&
		    (!r->job_uid || !as[i].job_uid ||
		     !strcmp(r->job_uid, as[i].job_uid)))
			return 1;
	}
	return 0;
}

/*
 * Copies the structs of the samples kept (pointers inside still belong
 * to the caller's samples) into rows, each with only the rank entries of
 * assignments the host holds: an agent cannot put figures into another
 * host's job.
 */
static void filter_ranks(struct ctrl_ctx *ctx, const char *host,
			 struct tm_host_sample *rows, size_t k)
{
	struct db_assignment *as = NULL;
	struct buf err = BUF_INIT;
	size_t n_as = 0, i, j, m;
	int any = 0;

	for (i = 0; i < k; i++)
		any |= rows[i].n_ranks > 0;
	if (any &&
	    db_assignments_list(ctx->db, NULL, host, 0, &as, &n_as, &err))
		log_warn("host '%s': %s", host, err.data);
	for (i = 0; i < k; i++) {
		struct tm_rank_sample *r =
			xcalloc(rows[i].n_ranks + 1, sizeof(*r));

		for (j = 0, m = 0; j < rows[i].n_ranks; j++)
			if (assigned(&rows[i].ranks[j], as, n_as))
				r[m++] = rows[i].ranks[j];
		rows[i].ranks = r;
		rows[i].n_ranks = m;
	}
	db_assignments_free(as, n_as);
	buf_release(&err);
}

void ctrl_tm_ingest(struct ctrl_ctx *ctx, const char *host,
		    const struct tm_host_sample *s, size_t n)
{
	struct tm_host_sample *rows;
	struct ctrl_host *h;
	struct buf err = BUF_INIT;
	int64_t now = time_now_ms();
	int64_t oldest = now - ctx->cfg.tm_retention_h * HOUR_MS;
	size_t i, k = 0;

	if (!n || !ctx->tm_db)
		return;
	rows = xcalloc(n + 1, sizeof(*rows));
	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, host);
	for (i = 0; h && i < n; i++) {
		if (s[i].ts_ms < oldest || s[i].ts_ms > now + CTRL_TM_FUTURE_MS)
			continue;
		if (h->tm_last_ts &&
		    s[i].ts_ms < h->tm_last_ts + CTRL_TM_MIN_SPACING_MS)
			continue;
		h->tm_last_ts = s[i].ts_ms;
		rows[k++] = s[i];
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (k < n)
		log_debug("host '%s': %zu of %zu telemetry samples dropped "
			  "(too old, too new or too close together)",
			  host, n - k, n);
	if (!k)
		goto out;
	filter_ranks(ctx, host, rows, k);
	pthread_mutex_lock(&ctx->hosts_lock);
	h = ctrl_hosts_find(ctx, host);
	if (h && (!h->have_tm || h->tm_latest.ts_ms < rows[k - 1].ts_ms)) {
		tm_host_sample_release(&h->tm_latest);
		tm_host_sample_copy(&h->tm_latest, &rows[k - 1]);
		h->have_tm = 1;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (db_tm_add(ctx->tm_db, host, rows, k, &err))
		log_warn("host '%s': %s", host, err.data);
	ctrl_stragwatch_ingest(ctx, host, rows, k);
	for (i = 0; i < k; i++)
		free(rows[i].ranks);
out:
	free(rows);
	buf_release(&err);
	prune(ctx, now);
}

int ctrl_tm_latest(const struct ctrl_host *h, struct tm_host_sample *out)
{
	struct tm_host_sample s;

	memset(out, 0, sizeof(*out));
	if (!h->have_tm)
		return 0;
	s = h->tm_latest;
	s.ranks = NULL;
	s.n_ranks = 0;
	tm_host_sample_copy(out, &s);
	return 1;
}

static int parse_ms(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!s)
		return 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end || v < 0)
		return -1;
	*out = v;
	return 0;
}

void ctrl_tm_series_route(struct ctrl_ctx *ctx, const char *path,
			  const char *start, const char *end,
			  struct ctrl_response *resp)
{
	const char *slash = strchr(path, '/');
	struct tm_host_sample *s = NULL;
	struct buf name = BUF_INIT_MAX(256);
	struct buf err = BUF_INIT;
	int64_t now = time_now_ms(), from = now - HOUR_MS, to = now + 1;
	size_t n = 0, i;
	int truncated = 0, known;

	if (!slash || slash == path || strcmp(slash, "/telemetry") ||
	    buf_add(&name, path, (size_t)(slash - path))) {
		ctrl_reply_err(resp, CTRL_E_NO_SUCH_PATH,
			       "no such resource: use "
			       "/v1/hosts/<name>/telemetry");
		goto out;
	}
	if (parse_ms(start, &from) || parse_ms(end, &to) || from >= to) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION,
			       "start and end must be epoch milliseconds "
			       "with start < end");
		goto out;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	known = ctrl_hosts_find(ctx, name.data) != NULL;
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (!known) {
		(void)buf_addf(&err, "no host named '%.200s'", name.data);
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND, err.data);
		goto out;
	}
	if (db_tm_host_range(ctx->tm_db, name.data, from, to,
			     CTRL_TM_SERIES_MAX, &s, &n, &truncated, &err)) {
		log_error("%s", err.data);
		ctrl_reply_err(resp, CTRL_E_INTERNAL,
			       "cannot read the host's samples");
		goto out;
	}
	resp->status = 200;
	buf_reset(&resp->body);
	if (api_telemetry_series_build(name.data, from, to, truncated, s, n,
				       &resp->body))
		ctrl_reply_err(resp, CTRL_E_INTERNAL, "answer too large");
out:
	for (i = 0; i < n; i++)
		tm_host_sample_release(&s[i]);
	free(s);
	buf_release(&name);
	buf_release(&err);
}

/* One node's rows after since_ms, thinned to at most max, into x. */
static int job_node(struct ctrl_ctx *ctx, const char *job, const char *uid,
		    const char *algo, int64_t since, size_t max,
		    struct api_tm_job_node *x, struct db_tm_point **rows,
		    size_t *n_rows, struct buf *err)
{
	struct api_tm_job_point *out;
	size_t i, n;

	x->algo = algo;
	if (db_tm_job_range(ctx->tm_db, job, uid, algo, since + 1, INT64_MAX,
			    rows, n_rows, err))
		return ERR_DB;
	n = *n_rows;
	x->total = n;
	x->n = n < max ? n : max;
	out = xcalloc(x->n + 1, sizeof(*out));
	for (i = 0; i < x->n; i++) {
		/* Evenly spread, the first and the newest always in. */
		const struct db_tm_point *p =
			&(*rows)[x->n > 1 ? i * (n - 1) / (x->n - 1) : n - 1];

		out[i].ts_ms = p->ts_ms;
		out[i].attempt = p->attempt;
		out[i].host = p->host;
		out[i].cpu_percent = p->cpus > 0 ? p->cores_percent / p->cpus :
						   -1.0;
		out[i].mem_percent = p->mem_percent;
		out[i].disk_percent = p->disk_percent;
		out[i].gpu_percent = p->gpu_percent;
		out[i].gpu_mem_percent = p->gpu_mem_percent;
		out[i].job_cpu_percent = p->cpu_percent;
		out[i].job_rss_bytes = p->rss_bytes;
	}
	x->points = out;
	return 0;
}

void ctrl_tm_job_route(struct ctrl_ctx *ctx, const char *job, const char *since,
		       const char *max, struct ctrl_response *resp)
{
	struct db_job j;
	struct api_tm_job_node *nodes = NULL;
	struct db_tm_point **rows = NULL;
	size_t *n_rows = NULL;
	struct buf err = BUF_INIT;
	char **algos = NULL;
	int64_t *last = NULL, after = 0, lim = CTRL_TM_JOB_POINTS, newest = 0;
	size_t n = 0, i;
	int ret;

	if (parse_ms(since, &after) || parse_ms(max, &lim) || lim < 1 ||
	    lim > CTRL_TM_SERIES_MAX) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION,
			       "since_ms must be epoch milliseconds and max "
			       "1..5000");
		return;
	}
	ret = db_job_get(ctx->db, job, &j, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		buf_release(&err);
		return;
	}
	if (ctx->tm_db && db_tm_job_algos(ctx->tm_db, j.name, j.uid, &algos,
					  &last, &n, &err)) {
		log_error("%s", err.data);
		ctrl_reply_err(resp, CTRL_E_INTERNAL,
			       "cannot read the job's samples");
		goto out;
	}
	nodes = xcalloc(n + 1, sizeof(*nodes));
	rows = xcalloc(n + 1, sizeof(*rows));
	n_rows = xcalloc(n + 1, sizeof(*n_rows));
	for (i = 0; i < n; i++) {
		if (last[i] > newest)
			newest = last[i];
		if (job_node(ctx, j.name, j.uid, algos[i], after, (size_t)lim,
			     &nodes[i], &rows[i], &n_rows[i], &err)) {
			log_error("%s", err.data);
			ctrl_reply_err(resp, CTRL_E_INTERNAL,
				       "cannot read the job's samples");
			goto out;
		}
	}
	resp->status = 200;
	buf_reset(&resp->body);
	if (api_tm_job_build(j.name, newest, nodes, n, &resp->body))
		ctrl_reply_err(resp, CTRL_E_INTERNAL, "answer too large");
out:
	for (i = 0; i < n; i++) {
		if (nodes)
			free((void *)nodes[i].points);
		if (rows)
			db_tm_points_free(rows[i], n_rows[i]);
		free(algos[i]);
	}
	free(nodes);
	free(rows);
	free(n_rows);
	free(algos);
	free(last);
	db_job_release(&j);
	buf_release(&err);
}

enum gauge {
	G_CPU,
	G_CPUS,
	G_MEM_USED,
	G_MEM_TOTAL,
	G_MEM_LIMIT,
	G_DISK_READ,
	G_DISK_WRITE,
	G_NET_RX,
	G_NET_TX,
	G_FS_USED,
	G_FS_TOTAL,
	G_GPU_UTIL,
	G_GPU_MEM_USED,
	G_GPU_MEM_TOTAL,
	G_AGE,
	G_COUNT
};

static const struct {
	const char *name, *type, *help;
} gauges[G_COUNT] = {
	{ "trainctl_host_cpu_percent", "gauge",
	  "CPU use of all the host's cores over the last sampling interval "
	  "(0-100)." },
	{ "trainctl_host_cpus", "gauge", "Online CPUs of the host." },
	{ "trainctl_host_memory_used_bytes", "gauge",
	  "Memory in use on the host (total less available)." },
	{ "trainctl_host_memory_total_bytes", "gauge", "Memory of the host." },
	{ "trainctl_host_memory_limit_bytes", "gauge",
	  "The memory limit of the agent's cgroup, when it has one." },
	{ "trainctl_host_disk_read_bytes_total", "counter",
	  "Bytes read from the host's disks since it booted." },
	{ "trainctl_host_disk_written_bytes_total", "counter",
	  "Bytes written to the host's disks since it booted." },
	{ "trainctl_host_network_receive_bytes_total", "counter",
	  "Bytes received by the host (loopback excluded) since it booted." },
	{ "trainctl_host_network_transmit_bytes_total", "counter",
	  "Bytes sent by the host (loopback excluded) since it booted." },
	{ "trainctl_host_filesystem_used_bytes", "gauge",
	  "Bytes used on the disk of the agent's work directory." },
	{ "trainctl_host_filesystem_size_bytes", "gauge",
	  "Size of the disk of the agent's work directory." },
	{ "trainctl_host_gpu_utilization_percent", "gauge",
	  "Time a kernel ran on the GPU over the driver's last period "
	  "(0-100)." },
	{ "trainctl_host_gpu_memory_used_bytes", "gauge",
	  "GPU memory in use." },
	{ "trainctl_host_gpu_memory_total_bytes", "gauge",
	  "GPU memory of the GPU." },
	{ "trainctl_host_telemetry_age_seconds", "gauge",
	  "Seconds since the host's latest telemetry sample was taken." },
};

static void line(struct buf *out, enum gauge g, const char *host, int gpu,
		 double v)
{
	struct ctrl_prom_sample s;

	ctrl_prom_sample_start(&s, out, gauges[g].name);
	ctrl_prom_label(&s, "host", host);
	if (gpu >= 0)
		ctrl_prom_label_int(&s, "gpu", gpu);
	ctrl_prom_value(&s, "%.17g", v);
}

void ctrl_tm_render_metrics(struct ctrl_ctx *ctx, struct buf *out)
{
	struct buf lines[G_COUNT];
	int64_t now = time_now_ms();
	size_t i, k;
	int g;

	for (g = 0; g < G_COUNT; g++)
		buf_init(&lines[g], 0);
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		const struct ctrl_host *h = ctx->hosts[i];
		const struct tm_host_sample *s = &h->tm_latest;

		if (!h->have_tm)
			continue;
		line(&lines[G_CPU], G_CPU, h->name, -1, s->cpu_percent);
		line(&lines[G_CPUS], G_CPUS, h->name, -1, s->cpus);
		line(&lines[G_MEM_USED], G_MEM_USED, h->name, -1,
		     (double)s->mem_used);
		line(&lines[G_MEM_TOTAL], G_MEM_TOTAL, h->name, -1,
		     (double)s->mem_total);
		if (s->mem_limit >= 0)
			line(&lines[G_MEM_LIMIT], G_MEM_LIMIT, h->name, -1,
			     (double)s->mem_limit);
		line(&lines[G_DISK_READ], G_DISK_READ, h->name, -1,
		     (double)s->disk_read);
		line(&lines[G_DISK_WRITE], G_DISK_WRITE, h->name, -1,
		     (double)s->disk_write);
		line(&lines[G_NET_RX], G_NET_RX, h->name, -1,
		     (double)s->net_rx);
		line(&lines[G_NET_TX], G_NET_TX, h->name, -1,
		     (double)s->net_tx);
		line(&lines[G_FS_USED], G_FS_USED, h->name, -1,
		     (double)s->fs_used);
		line(&lines[G_FS_TOTAL], G_FS_TOTAL, h->name, -1,
		     (double)s->fs_total);
		for (k = 0; k < s->n_gpus; k++) {
			const struct tm_gpu_sample *gs = &s->gpus[k];

			line(&lines[G_GPU_UTIL], G_GPU_UTIL, h->name, gs->index,
			     gs->util_percent);
			line(&lines[G_GPU_MEM_USED], G_GPU_MEM_USED, h->name,
			     gs->index, (double)gs->mem_used);
			line(&lines[G_GPU_MEM_TOTAL], G_GPU_MEM_TOTAL, h->name,
			     gs->index, (double)gs->mem_total);
		}
		line(&lines[G_AGE], G_AGE, h->name, -1,
		     now > s->ts_ms ? (double)(now - s->ts_ms) / 1000.0 : 0.0);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	for (g = 0; g < G_COUNT; g++) {
		ctrl_prom_family(out, gauges[g].name, gauges[g].type,
				 gauges[g].help);
		(void)buf_add(out, lines[g].data, lines[g].len);
		buf_release(&lines[g]);
	}
}
