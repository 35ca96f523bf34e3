#ifndef CTRL_STRAGGLER_H
#define CTRL_STRAGGLER_H

/*
 * The straggler rule (docs/distributed.md, "Stragglers"), without I/O:
 * which host of a multi-host job is persistently slower than the others,
 * and by how much, from each host's scheduler figures over a window.
 *
 * In synchronous data-parallel training every rank runs at the same step
 * rate: a slow rank holds its peers in the collective. So a straggler
 * does not show in its step rate but in how its time is spent. Per host
 * (the ranks of one job there, as telemetry sends them) and interval:
 *
 *   busy    = (run + wait) / elapsed: the share of the time its threads
 *             ran on a CPU or waited on a run queue for one, in cores;
 *             a peer that waits in a collective sleeps (gloo, a file
 *             barrier) and is not busy then
 *   stretch = (run + wait) / run: how much longer its work took than the
 *             CPU time it needed; above 1 when it wanted a CPU and got
 *             none (a CPU quota, a noisy neighbour), whether its peers
 *             sleep or spin while they wait for it
 *
 * A host's ratio is the larger of its busy and its stretch over the
 * median of the other hosts' (busy counts only from CTRL_STRAG_BUSY_FLOOR
 * of a core, stretch only from CTRL_STRAG_WAIT_FLOOR of a core waiting).
 * The window is split into CTRL_STRAG_PARTS parts; a host is a straggler
 * when its ratio over the whole window is at least the threshold and so
 * is its ratio in at least CTRL_STRAG_PARTS_SLOW of the parts, so that
 * one slow step (it falls into one part, or two) never names it, while
 * one noisy part on a shared CPU does not hide a straggler. Of several,
 * the one with the largest ratio over the whole window is named.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define CTRL_STRAG_RATIO 1.5
#define CTRL_STRAG_WINDOW_MS 30000
#define CTRL_STRAG_PARTS 4
#define CTRL_STRAG_PARTS_SLOW 3
#define CTRL_STRAG_BUSY_FLOOR 0.25 /* cores */
#define CTRL_STRAG_WAIT_FLOOR 0.05 /* cores */
/* The others' median busy is never taken below this (no division by
 * an idle host's near nothing). */
#define CTRL_STRAG_BUSY_MIN 0.05

/* One telemetry sample of a host: cumulative scheduler figures. */
struct ctrl_strag_point {
	int64_t ts_ms; /* the host's clock */
	int64_t run_ns;
	int64_t wait_ns;
};

/* A host's samples, oldest first. */
struct ctrl_strag_series {
	const struct ctrl_strag_point *p;
	size_t n;
};

/* A host's figures over an interval. */
struct ctrl_strag_fig {
	int valid;
	double busy;	/* cores */
	double wait;	/* cores waiting for a CPU */
	double stretch; /* >= 1 */
};

/*
 * s's figures from its newest sample at or before t0 to its newest at or
 * before t1 (its clock). Returns 1 and fills out, or 0 when s does not
 * cover the interval (no sample at or before t0, less than half of it
 * between the two, or counters that went down: threads ended).
 */
int ctrl_strag_figures(const struct ctrl_strag_series *s, int64_t t0,
		       int64_t t1, struct ctrl_strag_fig *out);

/*
 * The ratio of figures f against the medians of the others' (of, n_of
 * of them, valid ones only): 0 when none is valid.
 */
double ctrl_strag_ratio(const struct ctrl_strag_fig *f,
			const struct ctrl_strag_fig *of, size_t n_of,
			struct ctrl_strag_fig *median);

struct ctrl_strag_verdict {
	int culprit;		      /* index of the straggler, -1: none */
	double ratio;		      /* its ratio over the window */
	struct ctrl_strag_fig fig;    /* its figures over the window */
	struct ctrl_strag_fig others; /* the others' medians */
};

/*
 * The verdict on n hosts (each over the window_ms before its own newest
 * sample) at threshold (> 1). ratios[0..n), when not NULL, gets each
 * host's ratio over the whole window (0: unknown). Fewer than two hosts
 * with figures never give a culprit.
 */
void ctrl_strag_judge(const struct ctrl_strag_series *s, size_t n,
		      int64_t window_ms, double threshold, double *ratios,
		      struct ctrl_strag_verdict *v);

/*
 * The finding in words: "algo-2 (host local-2) rank 0 is 3.2x slower
 * than the job's other hosts: busy 0.97 of a core (0.68 of it waiting
 * for a CPU) against 0.30 (0.01), the others' median, over 30 s".
 */
void ctrl_strag_describe(struct buf *out, const char *algo, const char *host,
			 int rank, const struct ctrl_strag_verdict *v,
			 int64_t window_ms);

#endif
