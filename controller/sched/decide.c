/*
 * The scheduler's decision (decide.h). One pass over the queued jobs in
 * the order the shares earn, with per-type counters so that a decision
 * costs O((Q + H) log) rather than O(Q * H):
 *
 * - the state is counted per share and instance type (used hosts,
 *   guarantees, claims of jobs waiting for preempted hosts), per type
 *   (free, pool, releasing, idle hosts guaranteed to RESERVE shares) and
 *   per fair-share group (used hosts, active identifiers);
 * - a binary heap orders the shares; a share's key changes only when it
 *   starts a job, when its head job changes or when one of its jobs is
 *   preempted, and each of these re-sorts that share alone;
 * - free hosts are kept per type and topology domain, in input order, so
 *   a start takes its hosts without looking at the others;
 * - the first job of a type that may start but lacks hosts is that type's
 *   head; later jobs of the type start only by backfill (EASY).
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller/sched/decide.h"
#include "controller/sched/state.h"
#include "common/buf.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Why a job waits. */
enum wait {
	W_NONE,
	W_HOSTS,    /* not enough free hosts */
	W_PREEMPT,  /* hosts of preempted jobs will free */
	W_LIMIT,    /* its share is at its quota limit */
	W_NOCAP,    /* its share has no capacity for the type */
	W_BACKFILL, /* the free hosts are kept for the type's head job */
	W_RESV,	    /* computeReservation keeps the hosts */
	W_TOOBIG,   /* more hosts than the pool has */
};

struct verdict {
	enum wait w;
	int need;	/* hosts it waits for */
	int free;	/* free hosts of its type */
	int kept;	/* of them, kept for RESERVE shares' guarantees */
	size_t victims; /* jobs preempted for it now */
};

static const char *ordinal(size_t n)
{
	if (n % 100 >= 11 && n % 100 <= 13)
		return "th";
	switch (n % 10) {
	case 1:
		return "st";
	case 2:
		return "nd";
	case 3:
		return "rd";
	default:
		return "th";
	}
}

static const char *plural(int64_t n)
{
	return n == 1 ? "" : "s";
}

static int64_t head_seq(const struct ctrl_sched_state *st, size_t s)
{
	return st->in->queued[st->jobs[st->jcur[s]]].seq;
}

/*
 * Whether share a goes before share b: higher queue priority; then owed
 * (its head job fits in its guarantee); then fair-shared shares by
 * usage * weight, lowest first; then the head jobs' submission order.
 */
static int share_before(const struct ctrl_sched_state *st, size_t a, size_t b)
{
	const struct ctrl_sched_share *x = &st->in->shares[a];
	const struct ctrl_sched_share *y = &st->in->shares[b];
	int fa = st->grp[a] != CTRL_SCHED_NONE,
	    fb = st->grp[b] != CTRL_SCHED_NONE;
	int64_t sa, sb;

	if (x->queue_priority != y->queue_priority)
		return x->queue_priority > y->queue_priority;
	if (st->owed[a] != st->owed[b])
		return st->owed[a];
	if (fa != fb)
		return fa;
	if (fa && st->fkey[a] != st->fkey[b])
		return st->fkey[a] < st->fkey[b];
	sa = head_seq(st, a);
	sb = head_seq(st, b);
	if (sa != sb)
		return sa < sb;
	return a < b;
}

/* Recomputes share s's key from its head job and its use. */
static void refresh(struct ctrl_sched_state *st, size_t s)
{
	const struct ctrl_sched_share *sh = &st->in->shares[s];
	const struct ctrl_sched_queued *q =
		&st->in->queued[st->jobs[st->jcur[s]]];
	size_t t = st->qt[st->jobs[st->jcur[s]]];
	double w = sh->weight > 0 && isfinite(sh->weight) ? sh->weight : 1;
	int c = ctrl_sched_cap(st, s, t);

	st->owed[s] = sh->quota && c >= 0 &&
		      (int64_t)st->used[ctrl_sched_at(st, s, t)] +
				      st->claim[ctrl_sched_at(st, s, t)] +
				      q->count <=
			      c;
	st->fkey[s] = st->usage[s] * w;
}

static void heap_swap(struct ctrl_sched_state *st, size_t i, size_t k)
{
	size_t a = st->heap[i];

	st->heap[i] = st->heap[k];
	st->heap[k] = a;
	st->hpos[st->heap[i]] = i;
	st->hpos[st->heap[k]] = k;
}

/* Moves heap[i] up or down to its place. */
static void heap_fix(struct ctrl_sched_state *st, size_t i)
{
	while (i && share_before(st, st->heap[i], st->heap[(i - 1) / 2])) {
		heap_swap(st, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		size_t l = 2 * i + 1, best = i;

		if (l < st->nheap &&
		    share_before(st, st->heap[l], st->heap[best]))
			best = l;
		if (l + 1 < st->nheap &&
		    share_before(st, st->heap[l + 1], st->heap[best]))
			best = l + 1;
		if (best == i)
			return;
		heap_swap(st, i, best);
		i = best;
	}
}

static void heap_pop(struct ctrl_sched_state *st)
{
	st->hpos[st->heap[0]] = CTRL_SCHED_NONE;
	st->nheap--;
	if (!st->nheap)
		return;
	st->heap[0] = st->heap[st->nheap];
	st->hpos[st->heap[0]] = 0;
	heap_fix(st, 0);
}

static void setup_heap(struct ctrl_sched_state *st)
{
	size_t s;

	st->heap = xmalloc(xmul(st->ns + 1, sizeof(size_t)));
	st->hpos = xmalloc(xmul(st->ns + 1, sizeof(size_t)));
	st->owed = xcalloc(st->ns + 1, 1);
	st->fkey = xcalloc(st->ns + 1, sizeof(double));
	for (s = 0; s < st->ns; s++) {
		st->hpos[s] = CTRL_SCHED_NONE;
		if (st->jbeg[s] == st->jbeg[s + 1])
			continue;
		refresh(st, s);
		st->heap[st->nheap] = s;
		st->hpos[s] = st->nheap++;
		heap_fix(st, st->nheap - 1);
	}
}

/* Share s's use changed outside its own turn: re-sort it. */
static void requeue(struct ctrl_sched_state *st, size_t s)
{
	if (st->hpos[s] == CTRL_SCHED_NONE)
		return;
	refresh(st, s);
	heap_fix(st, st->hpos[s]);
}

static size_t dom_free(const struct ctrl_sched_dom *d)
{
	return d->end - d->cur;
}

static size_t take_hosts(struct ctrl_sched_state *st, struct ctrl_sched_dom *d,
			 size_t n, size_t *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = st->fh[d->cur++];
	return n;
}

struct dom_key {
	size_t free, pos;
};

static int dom_cmp(const void *a, const void *b)
{
	const struct dom_key *x = a, *y = b;

	if (x->free != y->free)
		return x->free > y->free ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/*
 * Chooses c free hosts of type t (there are that many): the domain with
 * the fewest free hosts that still holds the job (best fit), else whole
 * domains, the fullest first, so that the job spans the fewest.
 */
static void pick_hosts(struct ctrl_sched_state *st, size_t t, size_t c,
		       size_t *out)
{
	struct ctrl_sched_dom *d = st->doms + st->tdom[t];
	size_t nd = st->tdom[t + 1] - st->tdom[t], best = CTRL_SCHED_NONE, i,
	       n = 0;
	struct dom_key *key;

	for (i = 0; i < nd; i++)
		if (dom_free(&d[i]) >= c &&
		    (best == CTRL_SCHED_NONE ||
		     dom_free(&d[i]) < dom_free(&d[best])))
			best = i;
	if (best != CTRL_SCHED_NONE) {
		take_hosts(st, &d[best], c, out);
		return;
	}
	key = xmalloc(xmul(nd + 1, sizeof(*key)));
	for (i = 0; i < nd; i++) {
		key[i].free = dom_free(&d[i]);
		key[i].pos = i;
	}
	qsort(key, nd, sizeof(*key), dom_cmp);
	for (i = 0; i < nd && n < c; i++) {
		size_t k = key[i].free < c - n ? key[i].free : c - n;

		n += take_hosts(st, &d[key[i].pos], k, out + n);
	}
	free(key);
}

/* When a job started now ends, by its MaxRuntimeInSeconds; 0: unknown. */
static int64_t ends_at(int64_t now, int64_t max_runtime_s)
{
	if (max_runtime_s <= 0 || max_runtime_s > (INT64_MAX - now) / 1000)
		return 0;
	return now + max_runtime_s * 1000;
}

/* Starts queued[j] now. */
static void start(struct ctrl_sched_state *st, size_t j)
{
	const struct ctrl_sched_queued *q = &st->in->queued[j];
	struct ctrl_sched_out *out = st->out;
	size_t t = st->qt[j], s = q->share;
	size_t *hosts = xmalloc(xmul((size_t)q->count, sizeof(size_t)));

	pick_hosts(st, t, (size_t)q->count, hosts);
	st->nfree[t] -= q->count;
	ctrl_sched_use_add(st, s, t, q->count);
	if (!st->active[s] && st->grp[s] != CTRL_SCHED_NONE)
		st->gactive[st->grp[s]]++;
	st->active[s] = 1;
	if (isfinite(st->in->start_charge_s))
		st->usage[s] += st->in->start_charge_s * q->count;
	ALLOC_GROW(out->starts, out->n_starts + 1, st->nstarts_alloc);
	out->starts[out->n_starts].job = j;
	out->starts[out->n_starts++].hosts = hosts;
}

struct end {
	int64_t at;
	int n;
};

static int end_cmp(const void *a, const void *b)
{
	const struct end *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* The ends known on type t: running jobs (releasing ones free now) and
 * the jobs started so far in this decision. Returns how many. */
static size_t ends_of(const struct ctrl_sched_state *st, size_t t,
		      struct end *e)
{
	const struct ctrl_sched_in *in = st->in;
	size_t i, n = 0;

	for (i = 0; i < in->n_running; i++) {
		int64_t x = in->running[i].ends_ms;

		if (st->rt[i] != t || !st->rc[i])
			continue;
		if (in->running[i].releasing || st->victim[i] ||
		    (x && x < in->now_ms))
			x = in->now_ms;
		if (!x)
			continue;
		e[n].at = x;
		e[n++].n = st->rc[i];
	}
	for (i = 0; i < st->out->n_starts; i++) {
		const struct ctrl_sched_queued *q =
			&in->queued[st->out->starts[i].job];
		int64_t x = ends_at(in->now_ms, q->max_runtime_s);

		if (st->qt[st->out->starts[i].job] != t || !x)
			continue;
		e[n].at = x;
		e[n++].n = q->count;
	}
	return n;
}

/*
 * Makes queued[j] the head of its type: the earliest time enough hosts
 * free for it (its shadow time) and how many more than it needs are free
 * then (the spare hosts backfilled jobs may take for longer).
 */
static void set_head(struct ctrl_sched_state *st, size_t j)
{
	size_t t = st->qt[j], i, n;
	struct end *e = xmalloc(
		xmul(st->in->n_running + st->out->n_starts + 1, sizeof(*e)));
	int64_t avail = st->nfree[t];
	int c = st->in->queued[j].count;

	st->head[t] = 1;
	st->shadow[t] = -1;
	n = ends_of(st, t, e);
	qsort(e, n, sizeof(*e), end_cmp);
	for (i = 0; i < n; i++) {
		avail += e[i].n;
		if (avail < c || (i + 1 < n && e[i + 1].at == e[i].at))
			continue;
		st->shadow[t] = e[i].at;
		st->spare[t] = avail - c > INT_MAX ? INT_MAX : (int)(avail - c);
		break;
	}
	free(e);
}

/*
 * Whether queued[j], which fits the free hosts, may start with a head job
 * of its type waiting: when it ends before the head's shadow time, or on
 * the hosts the head will not need. A job within its share's guarantee
 * is not held back: it could reclaim those hosts by preemption anyway.
 */
static int backfill_ok(struct ctrl_sched_state *st, size_t j, int within)
{
	const struct ctrl_sched_queued *q = &st->in->queued[j];
	size_t t = st->qt[j];
	int64_t end = ends_at(st->in->now_ms, q->max_runtime_s);

	if (!st->head[t] || within)
		return 1;
	if (st->shadow[t] < 0)
		return 0;
	if (end && end <= st->shadow[t])
		return 1;
	if (st->spare[t] < q->count)
		return 0;
	st->spare[t] -= q->count;
	return 1;
}

/* Whether running job c may be preempted for a job of share s with
 * priority prio: in s's own pass a lower-priority job of s, else a job of
 * another quota share that borrows on the type. */
static int eligible(const struct ctrl_sched_state *st,
		    const struct ctrl_sched_cand *c, size_t s, int prio,
		    int own)
{
	const struct ctrl_sched_running *r = &st->in->running[c->idx];
	size_t v = r->share;

	if (st->victim[c->idx])
		return 0;
	if (own)
		return v == s && r->priority < prio;
	if (v == s || !st->in->shares[v].quota)
		return 0;
	return st->used[ctrl_sched_at(st, v, c->t)] >
	       ctrl_sched_cap(st, v, c->t);
}

/* Takes victims for queued[j], in candidate order, until *hosts <= 0 (and
 * in the own pass *quota <= 0); they are marked, and their shares' use
 * lowered, until commit or undo. */
static void take(struct ctrl_sched_state *st, size_t j, int own, int *hosts,
		 int *quota, size_t *picks, size_t *n)
{
	const struct ctrl_sched_queued *q = &st->in->queued[j];
	size_t t = st->qt[j], i;

	for (i = st->cbeg[t]; i < st->cbeg[t + 1]; i++) {
		const struct ctrl_sched_cand *c = &st->cand[i];

		if (*hosts <= 0 && (!own || *quota <= 0))
			return;
		if (!eligible(st, c, q->share, q->priority, own))
			continue;
		st->victim[c->idx] = 1;
		ctrl_sched_use_add(st, st->in->running[c->idx].share, t,
				   -c->count);
		picks[(*n)++] = c->idx;
		*hosts -= c->count;
		if (own)
			*quota -= c->count;
	}
}

/* Records the victims picked for queued[j], which claims `hosts` of the
 * type's releasing hosts and its place in its share's quota. */
static void commit(struct ctrl_sched_state *st, size_t j, int hosts,
		   const size_t *picks, size_t n, struct verdict *v)
{
	const struct ctrl_sched_queued *q = &st->in->queued[j];
	struct ctrl_sched_out *out = st->out;
	size_t t = st->qt[j], i;
	int freed = 0;

	for (i = 0; i < n; i++) {
		size_t r = picks[i], vs = st->in->running[r].share;

		ALLOC_GROW(out->preempts, out->n_preempts + 1,
			   st->npreempts_alloc);
		out->preempts[out->n_preempts].job = r;
		out->preempts[out->n_preempts++].for_job = j;
		st->ctot[t] -= st->rc[r];
		st->rel[t] += st->rc[r];
		freed += st->rc[r];
		if (vs != q->share)
			requeue(st, vs);
	}
	st->rel[t] -= hosts;
	st->claim[ctrl_sched_at(st, q->share, t)] += q->count;
	v->w = W_PREEMPT;
	v->victims = n;
	v->need = hosts > 0 ? hosts : freed;
}

/*
 * Preemption for queued[j], short of `hosts` free hosts and over its
 * share's limit by `quota` hosts: hosts already releasing count first;
 * then, when it is owed, borrowers of other quota shares; then, with
 * in-share preemption, its share's jobs of lower priority. All or
 * nothing: when the victims cannot cover the need, nobody is preempted.
 */
static void preempt(struct ctrl_sched_state *st, size_t j, int hosts, int quota,
		    int owed, struct verdict *v)
{
	int quota_need = quota;
	const struct ctrl_sched_queued *q = &st->in->queued[j];
	size_t t = st->qt[j], i, n = 0;
	int in_share = st->in->shares[q->share].in_share_preemption;
	int short_of = hosts - st->rel[t];
	struct ctrl_sched_failed *f =
		&st->failed[ctrl_sched_at(st, q->share, t)];

	if ((!owed && !in_share) || short_of > st->ctot[t])
		return;
	if (f->epoch == st->epoch[t] && short_of >= f->hosts &&
	    quota >= f->quota && q->priority <= f->prio && owed <= f->owed)
		return;
	if (owed)
		take(st, j, 0, &short_of, &quota, st->picks, &n);
	if (in_share)
		take(st, j, 1, &short_of, &quota, st->picks, &n);
	if (short_of <= 0 && quota <= 0) {
		commit(st, j, hosts, st->picks, n, v);
		return;
	}
	for (i = 0; i < n; i++) {
		st->victim[st->picks[i]] = 0;
		ctrl_sched_use_add(st, st->in->running[st->picks[i]].share, t,
				   st->rc[st->picks[i]]);
	}
	f->epoch = st->epoch[t];
	f->hosts = hosts - st->rel[t];
	f->quota = quota_need;
	f->prio = q->priority;
	f->owed = owed;
}

/* Hosts of type t a job may take now: any free host when it fits in its
 * share's guarantee, else only hosts that no RESERVE share keeps. */
static int usable_free(const struct ctrl_sched_state *st, size_t t, int within)
{
	int lendable = st->nfree[t] - st->resv[t];

	if (within)
		return st->nfree[t];
	return lendable > 0 ? lendable : 0;
}

static int64_t allowance(const struct ctrl_sched_share *sh, int cap)
{
	if (sh->sharing != CTRL_SCHED_LEND_AND_BORROW)
		return 0;
	if (sh->borrow_limit_pct < 0)
		return INT_MAX;
	return (int64_t)cap * sh->borrow_limit_pct / 100;
}

/* Whether computeReservation keeps the hosts a job of an active fair
 * share would take: reserved = floor(pool * (r/100)^active). */
static int kept_by_reservation(const struct ctrl_sched_state *st, size_t s,
			       size_t t, int count)
{
	const struct ctrl_sched_share *sh = &st->in->shares[s];
	size_t g = st->grp[s];
	int r = sh->compute_reservation;
	double reserved;

	if (g == CTRL_SCHED_NONE || !st->active[s] || r <= 0)
		return 0;
	reserved = floor(
		st->pool[t] * pow((r > 99 ? 99 : r) / 100.0, st->gactive[g]) +
		1e-9);
	return st->gused[ctrl_sched_at(st, g, t)] + count >
	       st->pool[t] - reserved;
}

/* The quota and fair-share rules for queued[j]; 0 when it must wait
 * (v says why; at its limit it may preempt in its own share). *within
 * says whether it fits in its share's guarantee. */
static int admit(struct ctrl_sched_state *st, size_t j, int *within,
		 struct verdict *v)
{
	const struct ctrl_sched_queued *q = &st->in->queued[j];
	const struct ctrl_sched_share *sh = &st->in->shares[q->share];
	size_t t = st->qt[j], s = q->share;
	int cap = ctrl_sched_cap(st, s, t);
	int64_t u = (int64_t)st->used[ctrl_sched_at(st, s, t)] +
		    st->claim[ctrl_sched_at(st, s, t)];
	int64_t over;
	int avail;

	*within = 0;
	if (sh->quota && cap < 0) {
		v->w = W_NOCAP;
		return 0;
	}
	over = u + q->count - cap - allowance(sh, cap);
	if (sh->quota && over > 0) {
		avail = usable_free(st, t, 0);
		v->w = W_LIMIT;
		preempt(st, j, avail < q->count ? q->count - avail : 0,
			over > INT_MAX ? INT_MAX : (int)over, 0, v);
		return 0;
	}
	*within = sh->quota && u + q->count <= cap;
	if (kept_by_reservation(st, s, t, q->count)) {
		v->w = W_RESV;
		return 0;
	}
	return 1;
}

/* A share's clause of a reason; formatted once per state of the share,
 * as many of its jobs in a row wait with the same. */
static void share_clause(struct ctrl_sched_state *st, struct buf *b, size_t s,
			 size_t t)
{
	const struct ctrl_sched_share *sh = &st->in->shares[s];
	const char *name = sh->name ? sh->name : "";
	struct ctrl_sched_clause *c = &st->clauses[s];
	int cap = ctrl_sched_cap(st, s, t),
	    u = st->used[ctrl_sched_at(st, s, t)];

	if (c->t == t && c->used == u && c->usage == st->usage[s]) {
		(void)buf_add(b, c->text.data, c->text.len);
		return;
	}
	buf_reset(&c->text);
	cap = cap < 0 ? 0 : cap;
	if (sh->quota)
		(void)buf_addf(&c->text,
			       "; share %s at %d of %d %s, borrowing %d", name,
			       u, cap, st->types.strs[t],
			       u > cap ? u - cap : 0);
	else if (st->grp[s] != CTRL_SCHED_NONE)
		(void)buf_addf(&c->text, "; fair share %s, weight %g", name,
			       sh->weight > 0 ? sh->weight : 1.0);
	c->t = t;
	c->used = u;
	c->usage = st->usage[s];
	(void)buf_add(b, c->text.data, c->text.len);
}

static void reason(const struct ctrl_sched_state *st, struct buf *b, size_t j,
		   const struct verdict *v)
{
	const char *type = st->types.strs[st->qt[j]];

	switch (v->w) {
	case W_HOSTS:
		(void)buf_addf(b, "waiting for %d host%s (%d free", v->need,
			       plural(v->need), v->free);
		if (v->kept)
			(void)buf_addf(b, ", %d kept for guarantees", v->kept);
		(void)buf_adds(b, ")");
		(void)buf_add(b, st->hold_text[st->qt[j]].data,
			      st->hold_text[st->qt[j]].len);
		break;
	case W_PREEMPT:
		if (v->victims)
			(void)buf_addf(b, "waiting for %zu preempted job%s",
				       v->victims, plural((int64_t)v->victims));
		else
			(void)buf_adds(b, "waiting for preempted jobs");
		(void)buf_addf(b, " to release %d host%s", v->need,
			       plural(v->need));
		break;
	case W_LIMIT:
		(void)buf_adds(b, "at its quota limit");
		break;
	case W_NOCAP:
		(void)buf_addf(b, "no capacity for type %s in its share", type);
		break;
	case W_BACKFILL:
		(void)buf_adds(b, "kept for the head job of the queue "
				  "(backfill)");
		break;
	case W_RESV:
		(void)buf_adds(b, "kept by computeReservation");
		break;
	default:
		(void)buf_addf(b, "needs %d host%s, the pool has %d %s",
			       v->need, plural(v->need), st->pool[st->qt[j]],
			       type);
		break;
	}
}

/* Fills position[j] and why[j] for a job that waits. */
static void explain(struct ctrl_sched_state *st, size_t j,
		    const struct verdict *v)
{
	const struct ctrl_sched_queued *q = &st->in->queued[j];
	const struct ctrl_sched_share *sh = &st->in->shares[q->share];
	size_t pos = ++st->qpos[st->queue[q->share]];
	struct buf b = BUF_INIT;

	(void)buf_grow(&b, 200); /* one vsnprintf per part */
	st->out->position[j] = pos;
	if (pos > CTRL_SCHED_POSITIONS_MAX)
		(void)buf_addf(&b, "past %d%s in queue %s",
			       CTRL_SCHED_POSITIONS_MAX,
			       ordinal(CTRL_SCHED_POSITIONS_MAX),
			       sh->queue ? sh->queue : "");
	else
		(void)buf_addf(&b, "%zu%s in queue %s", pos, ordinal(pos),
		       sh->queue ? sh->queue : "");
	share_clause(st, &b, q->share, st->qt[j]);
	(void)buf_adds(&b, "; ");
	reason(st, &b, j, v);
	st->out->why[j] = buf_detach(&b, NULL);
}

/* queued[j]'s turn: it starts, or waits and says why. */
static void consider(struct ctrl_sched_state *st, size_t j)
{
	const struct ctrl_sched_queued *q = &st->in->queued[j];
	size_t t = st->qt[j];
	struct verdict v = { W_NONE, q->count, st->nfree[t], 0, 0 };
	int within, avail;

	if (q->count > st->pool[t]) {
		v.w = W_TOOBIG;
	} else if (admit(st, j, &within, &v)) {
		avail = usable_free(st, t, within);
		if (avail >= q->count && backfill_ok(st, j, within)) {
			start(st, j);
			return;
		}
		v.w = avail >= q->count ? W_BACKFILL : W_HOSTS;
		v.kept = st->nfree[t] - avail;
		if (v.w == W_HOSTS)
			preempt(st, j, q->count - avail, 0, within, &v);
		if (v.w != W_BACKFILL && !st->head[t] &&
		    st->nfree[t] < q->count &&
		    !st->in->shares[q->share].best_effort)
			set_head(st, j);
	}
	explain(st, j, &v);
}

/*
 * The jobs that earlier decisions preempted for go first, in submission
 * order: the hosts their victims release are theirs, not the next job's
 * of a share that sorts earlier now (a borrower placed again on the hosts
 * it was preempted from, then preempted again, was the thrash this
 * prevents). Returns which jobs it looked at, NULL when none.
 */
static char *consider_claimed(struct ctrl_sched_state *st)
{
	char *done = NULL;
	size_t j;

	for (j = 0; j < st->in->n_queued; j++) {
		if (!st->in->queued[j].claimed)
			continue;
		if (!done)
			done = xcalloc(st->in->n_queued, 1);
		done[j] = 1;
		consider(st, j);
		requeue(st, st->in->queued[j].share);
	}
	return done;
}

void ctrl_sched_decide(const struct ctrl_sched_in *in,
		       struct ctrl_sched_out *out)
{
	struct ctrl_sched_in safe;
	struct ctrl_sched_state st;
	char *done;

	memset(out, 0, sizeof(*out));
	out->position = xcalloc(in->n_queued + 1, sizeof(size_t));
	out->why = xcalloc(in->n_queued + 1, sizeof(char *));
	/* Arrays that are missing hold nothing, whatever their counts say. */
	safe = *in;
	safe.n_hosts = in->hosts ? in->n_hosts : 0;
	safe.n_shares = in->shares ? in->n_shares : 0;
	safe.n_running = in->running ? in->n_running : 0;
	safe.n_queued = in->queued ? in->n_queued : 0;
	ctrl_sched_state_init(&st, &safe, out);
	setup_heap(&st);
	done = consider_claimed(&st);
	while (st.nheap) {
		size_t s = st.heap[0];
		size_t j = st.jobs[st.jcur[s]++];

		if (!done || !done[j])
			consider(&st, j);
		if (st.jcur[s] == st.jbeg[s + 1]) {
			heap_pop(&st);
			continue;
		}
		refresh(&st, s);
		heap_fix(&st, 0);
	}
	free(done);
	ctrl_sched_state_release(&st);
}

void ctrl_sched_out_release(struct ctrl_sched_out *out, size_t n_queued)
{
	size_t i;

	for (i = 0; i < out->n_starts; i++)
		free(out->starts[i].hosts);
	for (i = 0; out->why && i < n_queued; i++)
		free(out->why[i]);
	free(out->starts);
	free(out->preempts);
	free(out->position);
	free(out->why);
	memset(out, 0, sizeof(*out));
}
