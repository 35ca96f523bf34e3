/*
 * The hang rule: a rank's progress, its threshold and the culprit among
 * hung ranks (agent/hang.h). Pure: the agent feeds observations in
 * (agent/hangwatch.c) and acts on the verdict.
 */
#include <string.h>

#include "agent/hang.h"
#include "common/banned.h"

void agent_hang_start(struct agent_hang *h, int64_t now)
{
	memset(h, 0, sizeof(*h));
	h->started = 1;
	h->start_ms = now;
	h->last_ms = now;
}

void agent_hang_progress(struct agent_hang *h, enum agent_hang_kind kind,
			 int64_t now)
{
	int64_t gap;

	if (!h->started)
		agent_hang_start(h, now);
	gap = now - h->last_ms;
	if (gap < 0)
		return;
	/*
	 * Imports, loading data and the first steps are slower than what
	 * follows: gaps that begin during the warm-up teach nothing.
	 */
	if (h->last_ms - h->start_ms >= AGENT_HANG_WARMUP_MS) {
		if (gap > h->max_gap_ms)
			h->max_gap_ms = gap;
		h->gaps++;
	}
	h->last_ms = now;
	switch (kind) {
	case AGENT_HANG_OUTPUT:
		h->out_ms = now;
		break;
	case AGENT_HANG_CHECKPOINT:
		h->ckpt_ms = now;
		break;
	case AGENT_HANG_CPU:
		h->cpu_ms = now;
		break;
	}
}

int agent_hang_cpu(struct agent_hang *h, uint64_t ticks, long hz, int64_t now)
{
	uint64_t used_ms;

	/* A process of the tree that ended took its ticks along: a lower
	 * sum is a new base, not progress. */
	if (!h->have_ticks || ticks < h->ticks || hz <= 0) {
		h->ticks = h->base_ticks = ticks;
		h->base_ms = now;
		h->have_ticks = 1;
		return 0;
	}
	h->ticks = ticks;
	used_ms = (ticks - h->base_ticks) * 1000 / (uint64_t)hz;
	if (ticks == h->base_ticks || now < h->base_ms ||
	    used_ms * 100 <
		    (uint64_t)AGENT_HANG_CPU_PCT * (uint64_t)(now - h->base_ms))
		return 0;
	h->base_ticks = ticks;
	h->base_ms = now;
	agent_hang_progress(h, AGENT_HANG_CPU, now);
	return 1;
}

int64_t agent_hang_threshold(const struct agent_hang *h, int64_t timeout_ms)
{
	int64_t t;

	if (h->fixed || h->gaps < AGENT_HANG_LEARN_GAPS)
		return timeout_ms;
	t = AGENT_HANG_K * h->max_gap_ms;
	if (t < AGENT_HANG_FLOOR_MS)
		t = AGENT_HANG_FLOOR_MS;
	return t < timeout_ms ? t : timeout_ms;
}

int64_t agent_hang_deadline(const struct agent_hang *h, int64_t timeout_ms,
			    int frozen)
{
	int64_t t = agent_hang_threshold(h, timeout_ms), margin = t / 10;

	if (frozen)
		return h->last_ms + t;
	if (margin < AGENT_HANG_MARGIN_MS)
		margin = AGENT_HANG_MARGIN_MS;
	return h->last_ms + t + margin;
}

int agent_hang_culprit(const struct agent_hang_obs *obs, size_t n, int64_t now,
		       int64_t timeout_ms)
{
	int best = -1;
	size_t i;

	if (timeout_ms <= 0)
		return -1;
	for (i = 0; i < n; i++) {
		const struct agent_hang_obs *o = &obs[i];

		if (!o->watched ||
		    now < agent_hang_deadline(o->h, timeout_ms, o->frozen))
			continue;
		if (best < 0 || (o->frozen && !obs[best].frozen) ||
		    (o->frozen == obs[best].frozen &&
		     o->h->last_ms < obs[best].h->last_ms))
			best = (int)i;
	}
	return best;
}
