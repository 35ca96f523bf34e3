#ifndef CTRL_SCHED_DECIDE_H
#define CTRL_SCHED_DECIDE_H

/*
 * The scheduler as one decision: given the hosts, the running jobs, the
 * queued jobs, the shares with their quota and fair-share usage, which
 * queued jobs start on which hosts and which running jobs are preempted.
 * Pure: no I/O, no locks, no clock. The rest of controller/sched/ gathers
 * the facts from the store and carries the decision out; state.c counts
 * the input for decide.c; tests/controller/test_sched.c walks a table of
 * cases.
 *
 * The model is AWS Batch's for SageMaker Training service jobs:
 * - a job queue has a priority (higher first) and a scheduling policy:
 *   quota shares, fair share, or none (FIFO);
 * - a quota share holds a guaranteed number of hosts per instance type
 *   (capacityLimits), may lend what it does not use (LEND,
 *   LEND_AND_BORROW) and borrow others' idle hosts up to borrowLimit
 *   percent of its own limit (LEND_AND_BORROW; -1: no limit); a share
 *   below its guarantee gets it back by preemption of borrowers;
 * - a fair-share identifier's decayed usage (instance-seconds) times its
 *   weightFactor orders the identifiers of one policy: the lowest goes
 *   first (a weight of 0.125 gets 8 times the hosts of a weight of 1);
 *   computeReservation keeps (r/100)^active of the hosts for
 *   identifiers that have no running job yet;
 * - within a share, schedulingPriority (higher first), then submission
 *   order.
 *
 * The decision considers every queued job once, in one global order that
 * is recomputed as it goes: the next share (higher queue_priority; then a
 * quota share owed its guarantee for its next job's type; then fair-shared
 * shares by usage * weight, lowest first; then the next jobs' seq), then
 * that share's next job. A job starts when its share's rules allow it and
 * `count` free hosts of its type can be taken at once (gang: nothing is
 * held for a job that cannot start). Else it waits and says why; and:
 * - a quota share owed its guarantee preempts borrowers of other quota
 *   shares (lowest priority, then latest started, then smallest first;
 *   never a job younger than min_run_ms; only as many as needed, and none
 *   when even all of them would not do); hosts of jobs that are releasing
 *   already count first. With in_share_preemption, a job also preempts its
 *   own share's jobs of lower priority. Nothing else preempts;
 * - the first job of a type that lacks hosts is the type's head: a later
 *   job of the type starts only when it ends before the head can start
 *   (by running jobs' ends_ms) or takes hosts the head will not need then
 *   (EASY backfill); a job within its share's guarantee is not held back;
 * - hosts are taken in the one topology domain with the fewest free hosts
 *   that holds the job, else from whole domains, fullest first.
 */
#include <stddef.h>
#include <stdint.h>

enum ctrl_sched_sharing {
	CTRL_SCHED_RESERVE, /* neither lends nor borrows */
	CTRL_SCHED_LEND,    /* lends its idle hosts, never borrows */
	CTRL_SCHED_LEND_AND_BORROW,
};

/* Why a host is not usable. */
enum {
	CTRL_SCHED_OFF_DRAINED = 1,
	CTRL_SCHED_OFF_QUARANTINED,
	CTRL_SCHED_OFF_DOWN, /* not registered, or lost */
};

/* One host of the pool. */
struct ctrl_sched_host {
	const char *name;
	const char *type;   /* the instance type it serves */
	const char *domain; /* topology domain (a rack label), NULL: none */
	int usable;	    /* live and not drained: it may take work */
	/* busy with work not in running[]: a warm pool's, a job that
	 * restarts or uploads */
	int held;
	int warm; /* held: by an Available warm pool */
	/* Not usable: why, for wait messages (CTRL_SCHED_OFF_*). */
	int off;
	/* The pool of a type (computeReservation, "the pool has n") is its
	 * usable hosts, held ones included: they are capacity, not free. */
};

/* n hosts of an instance type. */
struct ctrl_sched_cap {
	const char *type;
	int count;
};

/*
 * A share: a quota share, a fair-share identifier of a queue's policy,
 * or the whole of a queue without a policy (FIFO, no guarantee).
 */
struct ctrl_sched_share {
	const char *name;  /* for messages: "vision" */
	const char *queue; /* its job queue's name, for messages */
	int queue_priority;
	/* Quota shares: the guarantee and limit per type. A type with no
	 * entry in caps: the share cannot run it; two entries: the first. */
	int quota;
	const struct ctrl_sched_cap *caps;
	size_t n_caps;
	enum ctrl_sched_sharing sharing;
	int borrow_limit_pct;	 /* -1: no limit */
	int in_share_preemption; /* for any kind of share */
	/* Fair share: shares of one policy have the same group (>= 0). */
	int fair_group;		 /* -1: not fair-shared */
	double weight;		 /* weightFactor, > 0 (else 1) */
	double usage;		 /* decayed instance-seconds so far */
	int compute_reservation; /* percent, 0..99, the policy's */
	/*
	 * Best effort (Kueue's BestEffortFIFO, the default queue's rule): a
	 * job of the share that cannot start holds nothing back, it never
	 * becomes its type's head, so later jobs start as soon as they fit.
	 */
	int best_effort;
};

/* A job that holds hosts. */
struct ctrl_sched_running {
	int64_t id;
	size_t share; /* index into shares[] */
	const char *type;
	int count;
	const size_t *hosts; /* count indices into hosts[] */
	int priority;	     /* schedulingPriority */
	int64_t started_ms;  /* when its current attempt started */
	int64_t ends_ms;     /* by MaxRuntimeInSeconds; 0: unknown */
	/* Stopping or preempted already: its hosts are not free, but it no
	 * longer counts in its share's use and its hosts count as freeing
	 * (at now_ms) for owed jobs and for backfill. */
	int releasing;
};

/* A job that waits for hosts. */
struct ctrl_sched_queued {
	int64_t id;
	size_t share;
	const char *type;
	int count;
	int priority;	       /* schedulingPriority, higher first */
	int64_t seq;	       /* submission order, lower first */
	int64_t max_runtime_s; /* 0: unknown (no backfill before a head) */
	/* Jobs were preempted for it (an earlier decision): it is looked
	 * at before every other, so that the hosts they release go to it. */
	int claimed;
};

struct ctrl_sched_in {
	const struct ctrl_sched_host *hosts;
	size_t n_hosts;
	const struct ctrl_sched_share *shares;
	size_t n_shares;
	const struct ctrl_sched_running *running;
	size_t n_running;
	const struct ctrl_sched_queued *queued;
	size_t n_queued;
	int64_t now_ms;
	/* No job is preempted before its attempt ran this long. */
	int64_t min_run_ms;
	/* Usage charged to a share per host it starts in this decision,
	 * so that one decision alternates between equal shares. */
	double start_charge_s;
};

/* queued[job] starts on hosts[hosts[0..count)], in the order chosen. */
struct ctrl_sched_start {
	size_t job;
	size_t *hosts;
};

/* running[job] is preempted to make room for queued[for_job]; each
 * victim is named once. The job does not get the hosts in this decision:
 * it waits until they are released. */
struct ctrl_sched_preempt {
	size_t job;
	size_t for_job;
};

/*
 * Places are named up to this one ("100th in queue q"); a job further
 * back says "past 100th in queue q", so that a start does not rewrite the
 * message of every job in a long queue.
 */
#define CTRL_SCHED_POSITIONS_MAX 100

struct ctrl_sched_out {
	struct ctrl_sched_start *starts;
	size_t n_starts;
	struct ctrl_sched_preempt *preempts;
	size_t n_preempts;
	/*
	 * For each queued job (n_queued entries): its place in its queue
	 * (1-based, in the order of this decision) and why it waits, e.g.
	 * "3rd in queue ml-team; share vision at 8 of 8 ml.c5.xlarge,
	 * borrowing 0; waiting for 4 hosts (0 free)"; NULL for a job that
	 * starts. The share clause is "fair share x, weight w" for a fair
	 * share (no usage figure: it changes on every pass, the message only
	 * when the job's standing does) and absent for FIFO; the tail is one of
	 * "waiting for n hosts (m free[, k kept for guarantees])", "waiting
	 * for [k ]preempted jobs to release n hosts", "at its quota limit",
	 * "no capacity for type t in its share", "kept for the head job of
	 * the queue (backfill)", "kept by computeReservation", "needs n
	 * hosts, the pool has m t". The first goes on with what holds the
	 * type's other hosts: "; hosts held: h by k other jobs, h by a warm
	 * pool, h restarting or uploading, h drained, h quarantined, h not
	 * responding" (the parts that are not 0). A job that cannot be considered (share
	 * out of range, count <= 0, no type) gets "skipped: ..." and
	 * position 0.
	 */
	size_t *position;
	char **why;
};

/*
 * Decides. Fills *out (its previous content is not freed), which the
 * caller owns and releases with ctrl_sched_out_release(out, n_queued);
 * in is only read, and nothing of it is kept. Bad input (indices out of
 * range, counts <= 0, missing arrays) never crashes; only running[i].hosts
 * must hold count entries.
 */
void ctrl_sched_decide(const struct ctrl_sched_in *in,
		       struct ctrl_sched_out *out);
void ctrl_sched_out_release(struct ctrl_sched_out *out, size_t n_queued);

#endif
