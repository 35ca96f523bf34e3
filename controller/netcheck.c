#define LOG_TAG "ctrl"

#include <stdlib.h>
#include <string.h>

#include "controller/netcheck.h"
#include "controller/ctrl.h"
#include "api/agent_proto.h"
#include "db/run.h"
#include "common/xalloc.h"
#include "common/banned.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The lower middle of the values of hosts that reached a peer. */
static int64_t median_of(const struct api_net_figures *f, size_t n, int bw)
{
	int64_t *v = xcalloc(n + 1, sizeof(*v)), m;
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (f[i].peers > 0 && f[i].reached > 0)
			v[k++] = bw ? f[i].mbps : f[i].rtt_us;
	qsort(v, k, sizeof(*v), cmp_i64);
	m = k ? v[(k - 1) / 2] : -1;
	free(v);
	return m;
}

/* How far host f is past the limits (0: within them), and why. */
static double badness(const struct api_net_figures *f,
		      const struct ctrl_net_limits *lim,
		      const struct ctrl_net_median *med, struct buf *why)
{
	double rtt = 0, bw = 0;

	if (f->rtt_us > med->rtt_us * lim->rtt_factor &&
	    f->rtt_us > med->rtt_us + lim->rtt_floor_us)
		rtt = (double)f->rtt_us /
		      (double)(med->rtt_us ? med->rtt_us : 1);
	if (f->mbps * lim->bw_factor < med->mbps)
		bw = (double)med->mbps / (double)(f->mbps ? f->mbps : 1);
	if (!rtt && !bw)
		return 0;
	buf_reset(why);
	if (rtt >= bw)
		(void)buf_addf(why,
			       "its best round trip to its peers is %.2f ms, "
			       "%.0fx the job's median of %.2f ms",
			       (double)f->rtt_us / 1000.0, rtt,
			       (double)med->rtt_us / 1000.0);
	else
		(void)buf_addf(why,
			       "its best bandwidth to its peers is %lld "
			       "Mbit/s, 1/%.0f of the job's median of %lld "
			       "Mbit/s",
			       (long long)f->mbps, bw, (long long)med->mbps);
	return rtt > bw ? rtt : bw;
}

void ctrl_netcheck_limits(const struct ctrl_config *cfg,
			  struct ctrl_net_limits *lim)
{
	lim->rtt_factor = cfg->infra_net_rtt_factor;
	lim->rtt_floor_us = cfg->infra_net_rtt_floor_us;
	lim->bw_factor = cfg->infra_net_bw_factor;
}

size_t ctrl_netcheck_judge(const struct api_net_figures *f, size_t n,
			   const struct ctrl_net_limits *lim,
			   struct ctrl_net_median *med, struct buf *why)
{
	struct buf b = BUF_INIT;
	size_t i, worst = 0, reached = 0;
	double most = 0;

	memset(med, 0, sizeof(*med));
	for (i = 0; i < n; i++) {
		med->hosts += f[i].peers > 0;
		reached += f[i].peers > 0 && f[i].reached > 0;
	}
	med->rtt_us = median_of(f, n, 0);
	med->mbps = median_of(f, n, 1);
	for (i = 0; i < n && med->hosts >= 2; i++) {
		if (f[i].peers <= 0 || f[i].reached > 0)
			continue;
		(void)buf_addf(why, "none of its %d peer%s answered",
			       f[i].peers, f[i].peers == 1 ? "" : "s");
		if (!reached)
			(void)buf_adds(why, ", and no host reached another");
		return i + 1;
	}
	for (i = 0; i < n && med->hosts >= 3; i++) {
		double d;

		if (f[i].peers <= 0)
			continue;
		d = badness(&f[i], lim, med, &b);
		if (d > most) {
			most = d;
			worst = i + 1;
			buf_reset(why);
			(void)buf_adds(why, b.data);
		}
	}
	buf_release(&b);
	return worst;
}

int ctrl_netcheck_verdict(const struct db_assignment *as, size_t n,
			  const struct ctrl_net_limits *lim,
			  struct ctrl_net_median *med, struct buf *why)
{
	struct api_net_figures *f = xcalloc(n + 1, sizeof(*f));
	struct buf err = BUF_INIT;
	size_t i, k;
	int ret = 0;

	for (i = 0; i < n; i++) {
		struct api_status st;

		if (!as[i].report_json)
			continue;
		if (!api_status_parse(as[i].report_json,
				      strlen(as[i].report_json), &st, &err) &&
		    st.n == 1 && st.items[0].check_ms > 0)
			f[i] = st.items[0].net;
		api_status_release(&st);
		buf_reset(&err);
	}
	k = ctrl_netcheck_judge(f, n, lim, med, why);
	if (k)
		ret = as[k - 1].host_index + 1;
	free(f);
	buf_release(&err);
	return ret;
}
