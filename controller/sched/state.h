#ifndef CTRL_SCHED_STATE_H
#define CTRL_SCHED_STATE_H

/*
 * The facts one scheduling decision works on (controller/sched/decide.c),
 * gathered from its input and counted per share and instance type, per
 * type and per fair-share group, so that each step of the decision looks
 * at counters rather than at every host. Internal to controller/sched/.
 */
#include <stddef.h>
#include <stdint.h>

#include "controller/sched/decide.h"
#include "common/buf.h"

#define CTRL_SCHED_NONE SIZE_MAX

/* Strings to small ids, in order of first appearance (FNV-1a, open
 * addressing at most half full). NULL is a string of its own. */
struct ctrl_sched_intern {
	const char **strs; /* by id */
	size_t n;
	size_t *slots; /* id + 1; 0: empty */
	size_t mask;
	size_t null_id;
};

/* Room for expect strings; release with ctrl_sched_intern_release(). */
void ctrl_sched_intern_init(struct ctrl_sched_intern *in, size_t expect);
void ctrl_sched_intern_release(struct ctrl_sched_intern *in);
/* The id of s (not copied), a new one when s is new (at most expect). */
size_t ctrl_sched_intern_id(struct ctrl_sched_intern *in, const char *s);

/* The free hosts of one type in one domain: st->fh[cur..end). */
struct ctrl_sched_dom {
	size_t cur, end;
};

/* A running job that could be preempted, in the order victims are taken. */
struct ctrl_sched_cand {
	size_t t;
	int prio;
	int64_t started;
	int count;
	size_t idx;
};

/* A share's clause of the reasons, and the state it was made for. */
struct ctrl_sched_clause {
	struct buf text;
	size_t t;
	int used;
	double usage;
};

struct ctrl_sched_failed {
	uint64_t epoch; /* 0: none */
	int hosts, quota, prio, owed;
};

/* What holds the hosts of a type that are not free, for wait messages. */
struct ctrl_sched_hold {
	int jobs, busy; /* running jobs (not releasing), the hosts they hold */
	int warm, held; /* held by a warm pool; by other work */
	int drained, quarantined, down;
};

struct ctrl_sched_state {
	const struct ctrl_sched_in *in;
	struct ctrl_sched_out *out;
	size_t ns, nt, ng, nstarts_alloc, npreempts_alloc;
	struct ctrl_sched_intern types;
	size_t *ht, *rt, *qt; /* type of each host, running and queued job */
	int *rc;	      /* hosts each running job holds, for counts */
	/* [share * nt + type]; cap -1: no capacity for the type */
	int *cap, *used, *claim;
	size_t *grp;  /* fair group of each share, CTRL_SCHED_NONE: not
			 fair-shared */
	int *gused;   /* [group * nt + type] */
	int *gactive; /* active shares of each group */
	unsigned char *active;
	double *usage;
	size_t *queue, *qpos; /* queue id of each share; waiting jobs seen */
	int *pool, *nfree, *rel, *resv, *ctot; /* per type */
	struct ctrl_sched_hold *hold;	       /* per type */
	struct buf *hold_text; /* per type: its wait messages' clause */
	size_t *fh;			       /* free hosts by type, domain */
	struct ctrl_sched_dom *doms;
	size_t *tdom; /* the domains of type t: doms[tdom[t]..tdom[t+1]) */
	size_t *jobs, *jbeg, *jcur; /* queued jobs by share, in order */
	size_t *heap, *hpos, nheap;
	unsigned char *owed;
	double *fkey;
	unsigned char *head; /* per type: its head job is set */
	int64_t *shadow;     /* when the head can start, -1: never known */
	int *spare;	     /* hosts beyond the head's need at shadow */
	struct ctrl_sched_cand *cand;
	size_t *cbeg; /* candidates of type t: cand[cbeg[t]..cbeg[t+1]) */
	unsigned char *victim;
	size_t *picks; /* scratch: the victims being picked */
	/*
	 * The last preemption that failed for each [share * nt + type]: it
	 * fails again, without a walk, while the type's use is unchanged
	 * (epoch) for a need as large, a priority as low and no more rights.
	 */
	uint64_t *epoch; /* per type: changes of use */
	struct ctrl_sched_failed *failed;
	struct ctrl_sched_clause *clauses;
};

/* The index of [share s, type t] in the per-share-and-type tables. */
static inline size_t ctrl_sched_at(const struct ctrl_sched_state *st, size_t s,
				   size_t t)
{
	return s * st->nt + t;
}

/* Share s's guarantee for type t; -1: it has no capacity for the type. */
static inline int ctrl_sched_cap(const struct ctrl_sched_state *st, size_t s,
				 size_t t)
{
	return st->cap[ctrl_sched_at(st, s, t)];
}

/*
 * Gathers the facts of in into *st for a decision that writes out:
 * types, shares, hosts and running jobs counted, queued jobs sorted per
 * share (a job that cannot be considered gets its reason in out->why at
 * once), preemption candidates sorted. Release with
 * ctrl_sched_state_release().
 */
void ctrl_sched_state_init(struct ctrl_sched_state *st,
			   const struct ctrl_sched_in *in,
			   struct ctrl_sched_out *out);
void ctrl_sched_state_release(struct ctrl_sched_state *st);

/*
 * Adds d hosts of type t to share s's use (negative: a job of it is
 * preempted), keeping the sums that depend on it: the idle hosts that
 * RESERVE shares keep, its fair-share group's use, the type's epoch.
 */
void ctrl_sched_use_add(struct ctrl_sched_state *st, size_t s, size_t t, int d);

#endif
