#define LOG_TAG "sched"

#include <pthread.h>
#include <stdlib.h>

#include "controller/obs/prom.h"
#include "controller/sched/decide.h"
#include "controller/sched/stats.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * The scheduler's /metrics families (stats.h). The shares' samples are
 * written by the pass into a buffer of their own and swapped in under
 * the lock, so /metrics copies text and never walks the pass's data.
 */

static struct ctrl_prom_hist pass_hist, decide_hist;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct buf shares_text = BUF_INIT;

void ctrl_sched_stats_pass(int64_t pass_us, int64_t decide_us)
{
	ctrl_prom_hist_observe(&pass_hist, pass_us);
	ctrl_prom_hist_observe(&decide_hist, decide_us);
}

struct share_count {
	long queued, running, hosts;
};

static void share_sample(struct buf *out, const char *name,
			 const struct ctrl_sched_share *sh, const char *state,
			 const char *fmt, double v)
{
	struct ctrl_prom_sample s;

	ctrl_prom_sample_start(&s, out, name);
	ctrl_prom_label(&s, "queue", sh->queue ? sh->queue : "default");
	ctrl_prom_label(&s, "share", sh->name ? sh->name : "");
	if (state)
		ctrl_prom_label(&s, "state", state);
	ctrl_prom_value(&s, fmt, v);
}

static void count_shares(const struct ctrl_sched_in *in,
			 const struct ctrl_sched_out *out,
			 struct share_count *c)
{
	size_t i;

	for (i = 0; i < in->n_running; i++) {
		const struct ctrl_sched_running *r = &in->running[i];

		if (r->share >= in->n_shares || r->releasing)
			continue;
		c[r->share].running++;
		c[r->share].hosts += r->count;
	}
	for (i = 0; i < in->n_queued; i++)
		if (in->queued[i].share < in->n_shares)
			c[in->queued[i].share].queued++;
	for (i = 0; i < out->n_starts; i++) {
		const struct ctrl_sched_queued *q =
			&in->queued[out->starts[i].job];

		if (q->share >= in->n_shares)
			continue;
		c[q->share].queued--;
		c[q->share].running++;
		c[q->share].hosts += q->count;
	}
}

void ctrl_sched_stats_shares(const struct ctrl_sched_in *in,
			     const struct ctrl_sched_out *out)
{
	struct share_count *c = xcalloc(in->n_shares + 1, sizeof(*c));
	struct buf text = BUF_INIT, old;
	size_t i;

	count_shares(in, out, c);
	ctrl_prom_family(&text, "trainctl_sched_jobs", "gauge",
			 "Jobs of each queue's share, queued or running, at "
			 "the last scheduling pass.");
	for (i = 0; i < in->n_shares; i++) {
		share_sample(&text, "trainctl_sched_jobs", &in->shares[i],
			     "queued", "%.0f", (double)c[i].queued);
		share_sample(&text, "trainctl_sched_jobs", &in->shares[i],
			     "running", "%.0f", (double)c[i].running);
	}
	ctrl_prom_family(&text, "trainctl_sched_hosts", "gauge",
			 "Hosts held by each share's running jobs.");
	for (i = 0; i < in->n_shares; i++)
		share_sample(&text, "trainctl_sched_hosts", &in->shares[i],
			     NULL, "%.0f", (double)c[i].hosts);
	ctrl_prom_family(&text, "trainctl_sched_share_usage", "gauge",
			 "A fair share's decayed usage in instance-seconds.");
	for (i = 0; i < in->n_shares; i++)
		if (in->shares[i].fair_group >= 0)
			share_sample(&text, "trainctl_sched_share_usage",
				     &in->shares[i], NULL, "%.1f",
				     in->shares[i].usage);
	free(c);
	pthread_mutex_lock(&lock);
	old = shares_text;
	shares_text = text;
	pthread_mutex_unlock(&lock);
	buf_release(&old);
}

void ctrl_sched_render_metrics(struct buf *out)
{
	ctrl_prom_family(out, "trainctl_sched_pass_duration_seconds",
			 "histogram",
			 "Scheduling passes: the store's read, the decision "
			 "and carrying it out.");
	ctrl_prom_hist_render(&pass_hist, out,
			      "trainctl_sched_pass_duration_seconds", NULL,
			      NULL);
	ctrl_prom_family(out, "trainctl_sched_decision_duration_seconds",
			 "histogram", "The scheduling decision alone.");
	ctrl_prom_hist_render(&decide_hist, out,
			      "trainctl_sched_decision_duration_seconds", NULL,
			      NULL);
	pthread_mutex_lock(&lock);
	if (shares_text.len)
		(void)buf_add(out, shares_text.data, shares_text.len);
	pthread_mutex_unlock(&lock);
}
