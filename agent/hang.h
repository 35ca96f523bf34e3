#ifndef AGENT_HANG_H
#define AGENT_HANG_H

/*
 * The hang rule (docs/distributed.md, "Hangs"), without I/O: what one
 * rank's progress looks like, when its silence becomes a hang, and which
 * of a host's hung ranks is the culprit. Times are monotonic milliseconds.
 *
 * Progress is anything the agent sees a rank do: output, a file
 * completed in the checkpoint folder, more CPU time in its process tree.
 * Every progress closes a gap (the time since the previous one). Gaps that
 * begin after a warm-up (the first AGENT_HANG_WARMUP_MS of the rank's
 * life) are learned; once AGENT_HANG_LEARN_GAPS of them were seen the
 * threshold is AGENT_HANG_K times the longest, never below
 * AGENT_HANG_FLOOR_MS and never above the configured timeout. Until then
 * it is the timeout itself, and always for a record marked fixed.
 *
 * A rank frozen by a signal (state T) is hung once it was silent for the
 * threshold; any other rank only a margin later (a tenth of the
 * threshold, at least AGENT_HANG_MARGIN_MS), so that the peers waiting
 * for a frozen rank are not judged before it.
 */
#include <stddef.h>
#include <stdint.h>

#define AGENT_HANG_K 3
#define AGENT_HANG_FLOOR_MS 30000
#define AGENT_HANG_WARMUP_MS 60000
#define AGENT_HANG_LEARN_GAPS 10
#define AGENT_HANG_MARGIN_MS 2000
/*
 * CPU time counts as progress only at this share of one core (percent)
 * since the last time it did: a rank stuck in a step of a torch program
 * still gains a tick every few seconds from its library's threads (50 ms
 * in 20 s measured), which is no progress.
 */
#define AGENT_HANG_CPU_PCT 5

/* What is known of one rank's progress. */
struct agent_hang {
	int started;	    /* agent_hang_start() ran */
	int64_t start_ms;   /* the rank started (or was adopted) */
	int64_t last_ms;    /* the last progress; start_ms before any */
	int64_t max_gap_ms; /* the longest gap learned */
	int gaps;	    /* gaps learned */
	uint64_t ticks;	    /* CPU time last seen, in clock ticks */
	int have_ticks;
	/* CPU time and time when CPU last counted as progress (or the
	 * base was set). */
	uint64_t base_ticks;
	int64_t base_ms;
	/* The last progress of each kind (0: none), for the reason. */
	int64_t out_ms;
	int64_t cpu_ms;
	int64_t ckpt_ms;
	/* The threshold is the timeout itself, never learned (a job's
	 * StalledTrainingRule threshold). */
	int fixed;
};

enum agent_hang_kind {
	AGENT_HANG_OUTPUT,
	AGENT_HANG_CHECKPOINT,
	AGENT_HANG_CPU
};

/* A rank that starts now: silent since now, nothing learned. */
void agent_hang_start(struct agent_hang *h, int64_t now);

/* Progress of the given kind at now: closes a gap (on a record not
 * started yet, starts it at now). */
void agent_hang_progress(struct agent_hang *h, enum agent_hang_kind kind,
			 int64_t now);

/*
 * The CPU time of the rank's processes at now, in ticks of hz a second.
 * Progress when, since the base, it grew by at least AGENT_HANG_CPU_PCT
 * of the time passed (then the base moves to now); the first reading, or
 * a lower one (a process of the tree ended), only sets the base. Returns 1
 * when it was progress.
 */
int agent_hang_cpu(struct agent_hang *h, uint64_t ticks, long hz,
		   int64_t now);

/*
 * The threshold in ms for h under timeout_ms (> 0): timeout_ms until
 * enough gaps were learned, then K times the longest gap within
 * [AGENT_HANG_FLOOR_MS, timeout_ms].
 */
int64_t agent_hang_threshold(const struct agent_hang *h, int64_t timeout_ms);

/* When h is hung if nothing happens before: last progress + threshold
 * (+ the margin unless frozen). */
int64_t agent_hang_deadline(const struct agent_hang *h, int64_t timeout_ms,
			    int frozen);

/* One rank as the verdict sees it. */
struct agent_hang_obs {
	const struct agent_hang *h;
	int frozen;  /* stopped by a signal (state T) */
	int watched; /* 0: exited, or not to be judged */
};

/*
 * The culprit among n ranks at now: of those whose deadline has passed,
 * a frozen one first, then the one silent the longest (oldest last
 * progress), then the lowest index. Returns its index, or -1 when no
 * rank is hung (always -1 when timeout_ms <= 0).
 */
int agent_hang_culprit(const struct agent_hang_obs *obs, size_t n, int64_t now,
		       int64_t timeout_ms);

#endif
