/*
 * The facts of one scheduling decision (state.h): strings interned to
 * small ids, then every table counted once from the input, in
 * O((H + R + Q) log) time.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/sched/state.h"
#include "common/buf.h"
#include "common/xalloc.h"
#include "common/banned.h"

void ctrl_sched_intern_init(struct ctrl_sched_intern *in, size_t expect)
{
	size_t n = 16;

	while (n < expect * 2)
		n <<= 1;
	in->strs = xmalloc(xmul(expect + 1, sizeof(*in->strs)));
	in->n = 0;
	in->slots = xcalloc(n, sizeof(*in->slots));
	in->mask = n - 1;
	in->null_id = CTRL_SCHED_NONE;
}

void ctrl_sched_intern_release(struct ctrl_sched_intern *in)
{
	free(in->strs);
	free(in->slots);
}

/* The id of s, a new one when s is new (at most `expect` strings). */
size_t ctrl_sched_intern_id(struct ctrl_sched_intern *in, const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	const unsigned char *p;
	size_t i;

	if (!s) {
		if (in->null_id == CTRL_SCHED_NONE) {
			in->null_id = in->n;
			in->strs[in->n++] = NULL;
		}
		return in->null_id;
	}
	for (p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	for (i = h & in->mask; in->slots[i]; i = (i + 1) & in->mask) {
		const char *o = in->strs[in->slots[i] - 1];

		if (o && (o == s || !strcmp(o, s)))
			return in->slots[i] - 1;
	}
	in->slots[i] = in->n + 1;
	in->strs[in->n] = s;
	return in->n++;
}

/* Idle hosts that a RESERVE share keeps: its guarantee less its use. */
static int reserve_idle(const struct ctrl_sched_state *st, size_t s, size_t t)
{
	const struct ctrl_sched_share *sh = &st->in->shares[s];
	int c = ctrl_sched_cap(st, s, t), u = st->used[ctrl_sched_at(st, s, t)];

	if (!sh->quota || sh->sharing != CTRL_SCHED_RESERVE || c < 0)
		return 0;
	return c > u ? c - u : 0;
}

/* The one writer of a share's use: keeps the RESERVE and group sums. */
void ctrl_sched_use_add(struct ctrl_sched_state *st, size_t s, size_t t, int d)
{
	int before = reserve_idle(st, s, t);

	st->used[ctrl_sched_at(st, s, t)] += d;
	st->epoch[t]++;
	st->resv[t] += reserve_idle(st, s, t) - before;
	if (st->grp[s] != CTRL_SCHED_NONE)
		st->gused[ctrl_sched_at(st, st->grp[s], t)] += d;
}

static void setup_types(struct ctrl_sched_state *st)
{
	const struct ctrl_sched_in *in = st->in;
	size_t i, k, n = in->n_hosts + in->n_running + in->n_queued;

	for (i = 0; i < in->n_shares; i++)
		n += in->shares[i].caps ? in->shares[i].n_caps : 0;
	ctrl_sched_intern_init(&st->types, n);
	st->ht = xmalloc(xmul(in->n_hosts + 1, sizeof(size_t)));
	st->rt = xmalloc(xmul(in->n_running + 1, sizeof(size_t)));
	st->qt = xmalloc(xmul(in->n_queued + 1, sizeof(size_t)));
	for (i = 0; i < in->n_hosts; i++)
		st->ht[i] = in->hosts[i].type ?
				    ctrl_sched_intern_id(&st->types, in->hosts[i].type) :
				    CTRL_SCHED_NONE;
	for (i = 0; i < in->n_shares; i++)
		for (k = 0; in->shares[i].caps && k < in->shares[i].n_caps; k++)
			if (in->shares[i].caps[k].type)
				ctrl_sched_intern_id(&st->types,
					  in->shares[i].caps[k].type);
	for (i = 0; i < in->n_running; i++)
		st->rt[i] = in->running[i].type ?
				    ctrl_sched_intern_id(&st->types, in->running[i].type) :
				    CTRL_SCHED_NONE;
	for (i = 0; i < in->n_queued; i++)
		st->qt[i] = in->queued[i].type ?
				    ctrl_sched_intern_id(&st->types, in->queued[i].type) :
				    CTRL_SCHED_NONE;
	st->nt = st->types.n;
}

/* Fair groups and queues to small ids; guarantees into the table. */
static void setup_shares(struct ctrl_sched_state *st)
{
	const struct ctrl_sched_in *in = st->in;
	size_t i, k, ns = st->ns, nt = st->nt;
	struct ctrl_sched_intern queues;

	st->cap = xmalloc(xmul(xmul(ns, nt) + 1, sizeof(int)));
	st->used = xcalloc(xmul(ns, nt) + 1, sizeof(int));
	st->claim = xcalloc(xmul(ns, nt) + 1, sizeof(int));
	st->gused = xcalloc(xmul(ns, nt) + 1, sizeof(int));
	st->grp = xmalloc(xmul(ns + 1, sizeof(size_t)));
	st->gactive = xcalloc(ns + 1, sizeof(int));
	st->active = xcalloc(ns + 1, 1);
	st->usage = xmalloc(xmul(ns + 1, sizeof(double)));
	st->queue = xmalloc(xmul(ns + 1, sizeof(size_t)));
	st->qpos = xcalloc(ns + 1, sizeof(size_t));
	ctrl_sched_intern_init(&queues, ns);
	for (i = 0; i < xmul(ns, nt); i++)
		st->cap[i] = -1;
	for (i = 0; i < ns; i++) {
		const struct ctrl_sched_share *sh = &in->shares[i];

		st->grp[i] = CTRL_SCHED_NONE;
		for (k = 0; k < i && sh->fair_group >= 0; k++)
			if (in->shares[k].fair_group == sh->fair_group)
				break;
		if (sh->fair_group >= 0)
			st->grp[i] = k < i ? st->grp[k] : st->ng++;
		st->usage[i] = isfinite(sh->usage) ? sh->usage : 0;
		st->queue[i] = ctrl_sched_intern_id(&queues, sh->queue ? sh->queue : "");
		for (k = 0; sh->quota && sh->caps && k < sh->n_caps; k++) {
			size_t t;

			if (!sh->caps[k].type)
				continue;
			t = ctrl_sched_intern_id(&st->types, sh->caps[k].type);
			if (st->cap[ctrl_sched_at(st, i, t)] < 0)
				st->cap[ctrl_sched_at(st, i, t)] =
					sh->caps[k].count > 0 ?
						sh->caps[k].count :
						0;
		}
	}
	ctrl_sched_intern_release(&queues);
}

/* What the running jobs hold: busy hosts, use per share, releasing hosts. */
static void setup_running(struct ctrl_sched_state *st, unsigned char *busy)
{
	const struct ctrl_sched_in *in = st->in;
	size_t i, k;

	st->rc = xcalloc(in->n_running + 1, sizeof(int));
	for (i = 0; i < in->n_running; i++) {
		const struct ctrl_sched_running *r = &in->running[i];
		size_t t = st->rt[i];

		for (k = 0; r->hosts && r->count > 0 && k < (size_t)r->count;
		     k++)
			if (r->hosts[k] < in->n_hosts)
				busy[r->hosts[k]] = 1;
		/* No job holds more hosts than the pool has, so that sums of
		 * counts stay far from overflow whatever the input says. */
		st->rc[i] = r->count > 0 ? r->count : 0;
		if ((size_t)st->rc[i] > in->n_hosts)
			st->rc[i] = (int)in->n_hosts;
		if (t == CTRL_SCHED_NONE)
			continue;
		if (r->releasing) {
			st->rel[t] += st->rc[i];
			continue;
		}
		st->hold[t].jobs++;
		st->hold[t].busy += st->rc[i];
		if (r->share >= st->ns)
			continue;
		ctrl_sched_use_add(st, r->share, t, st->rc[i]);
		if (!st->active[r->share] &&
		    st->grp[r->share] != CTRL_SCHED_NONE)
			st->gactive[st->grp[r->share]]++;
		st->active[r->share] = 1;
	}
}

struct fh_key {
	size_t t, rank, idx;
};

static int fh_cmp(const void *a, const void *b)
{
	const struct fh_key *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void hold_off(struct ctrl_sched_hold *h, int off)
{
	if (off == CTRL_SCHED_OFF_QUARANTINED)
		h->quarantined++;
	else if (off == CTRL_SCHED_OFF_DOWN)
		h->down++;
	else
		h->drained++;
}

/*
 * The pool and the free hosts per type, the free ones grouped by domain:
 * domains in order of first appearance, hosts in input order.
 */
static void setup_hosts(struct ctrl_sched_state *st, const unsigned char *busy)
{
	const struct ctrl_sched_in *in = st->in;
	struct fh_key *key = xmalloc(xmul(in->n_hosts + 1, sizeof(*key)));
	struct ctrl_sched_intern domains;
	size_t i, n = 0, t;

	ctrl_sched_intern_init(&domains, in->n_hosts);
	for (i = 0; i < in->n_hosts; i++) {
		const struct ctrl_sched_host *h = &in->hosts[i];

		if (st->ht[i] == CTRL_SCHED_NONE)
			continue;
		if (!h->usable) {
			hold_off(&st->hold[st->ht[i]], h->off);
			continue;
		}
		if (!busy[i] && h->held && h->warm)
			st->hold[st->ht[i]].warm++;
		else if (!busy[i] && h->held)
			st->hold[st->ht[i]].held++;
		/* A held host is capacity that is not free now. */
		st->pool[st->ht[i]]++;
		if (busy[i] || h->held)
			continue;
		st->nfree[st->ht[i]]++;
		key[n].t = st->ht[i];
		key[n].rank = ctrl_sched_intern_id(&domains, h->domain);
		key[n++].idx = i;
	}
	ctrl_sched_intern_release(&domains);
	qsort(key, n, sizeof(*key), fh_cmp);
	st->fh = xmalloc(xmul(n + 1, sizeof(size_t)));
	st->doms = xmalloc(xmul(n + 1, sizeof(struct ctrl_sched_dom)));
	st->tdom = xcalloc(st->nt + 1, sizeof(size_t));
	for (i = 0, t = 0; i < n; i++) {
		size_t nd = st->tdom[st->nt];

		st->fh[i] = key[i].idx;
		if (!i || key[i].t != key[i - 1].t ||
		    key[i].rank != key[i - 1].rank) {
			for (; t <= key[i].t; t++)
				st->tdom[t] = nd;
			st->doms[nd].cur = i;
			st->tdom[st->nt] = nd + 1;
		}
		st->doms[st->tdom[st->nt] - 1].end = i + 1;
	}
	for (; t < st->nt; t++)
		st->tdom[t] = st->tdom[st->nt];
	free(key);
}

/* A job that cannot be considered at all says why and never starts. */
static int valid_job(struct ctrl_sched_state *st, size_t j)
{
	const struct ctrl_sched_queued *q = &st->in->queued[j];
	struct buf b = BUF_INIT;

	if (q->share >= st->ns)
		(void)buf_addf(&b, "skipped: share index %zu out of range",
			       q->share);
	else if (q->count <= 0)
		(void)buf_addf(&b, "skipped: host count %d is not positive",
			       q->count);
	else if (st->qt[j] == CTRL_SCHED_NONE)
		(void)buf_adds(&b, "skipped: no instance type");
	else
		return 1;
	st->out->why[j] = buf_detach(&b, NULL);
	return 0;
}

struct job_key {
	size_t share;
	int prio;
	int64_t seq;
	size_t idx;
};

static int job_cmp(const void *a, const void *b)
{
	const struct job_key *x = a, *y = b;

	if (x->share != y->share)
		return x->share < y->share ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The valid queued jobs of each share, best first. */
static void setup_jobs(struct ctrl_sched_state *st)
{
	const struct ctrl_sched_in *in = st->in;
	struct job_key *key = xmalloc(xmul(in->n_queued + 1, sizeof(*key)));
	size_t i, n = 0, s = 0;

	for (i = 0; i < in->n_queued; i++) {
		if (!valid_job(st, i))
			continue;
		key[n].share = in->queued[i].share;
		key[n].prio = in->queued[i].priority;
		key[n].seq = in->queued[i].seq;
		key[n++].idx = i;
	}
	qsort(key, n, sizeof(*key), job_cmp);
	st->jobs = xmalloc(xmul(n + 1, sizeof(size_t)));
	st->jbeg = xmalloc(xmul(st->ns + 1, sizeof(size_t)));
	st->jcur = xmalloc(xmul(st->ns + 1, sizeof(size_t)));
	for (i = 0; i < n; i++) {
		st->jobs[i] = key[i].idx;
		for (; s <= key[i].share; s++)
			st->jbeg[s] = i;
	}
	for (; s <= st->ns; s++)
		st->jbeg[s] = n;
	memcpy(st->jcur, st->jbeg, st->ns * sizeof(size_t));
	free(key);
}

static int cand_cmp(const void *a, const void *b)
{
	const struct ctrl_sched_cand *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	if (x->started != y->started)
		return x->started > y->started ? -1 : 1;
	if (x->count != y->count)
		return x->count < y->count ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * The running jobs that may be preempted at all (not releasing, ran at
 * least min_run_ms), per type in the order victims are taken: lower
 * priority, then the most recently started, then the smallest.
 */
static void setup_cands(struct ctrl_sched_state *st)
{
	const struct ctrl_sched_in *in = st->in;
	size_t i, n = 0, t = 0;

	st->cand = xmalloc(xmul(in->n_running + 1, sizeof(*st->cand)));
	st->victim = xcalloc(in->n_running + 1, 1);
	st->cbeg = xmalloc(xmul(st->nt + 1, sizeof(size_t)));
	for (i = 0; i < in->n_running; i++) {
		const struct ctrl_sched_running *r = &in->running[i];

		if (r->releasing || r->share >= st->ns ||
		    st->rt[i] == CTRL_SCHED_NONE || !st->rc[i] ||
		    r->started_ms > in->now_ms - in->min_run_ms)
			continue;
		st->cand[n].t = st->rt[i];
		st->cand[n].prio = r->priority;
		st->cand[n].started = r->started_ms;
		st->cand[n].count = st->rc[i];
		st->cand[n++].idx = i;
		st->ctot[st->rt[i]] += st->rc[i];
	}
	qsort(st->cand, n, sizeof(*st->cand), cand_cmp);
	for (i = 0; i < n; i++)
		for (; t <= st->cand[i].t; t++)
			st->cbeg[t] = i;
	for (; t <= st->nt; t++)
		st->cbeg[t] = n;
}

/* "; hosts held: " before the first of h's parts that are not 0, ", "
 * before the others. */
static void hold_part(struct buf *b, int *n, int h, const char *what)
{
	if (h <= 0)
		return;
	(void)buf_addf(b, "%s%d %s", *n ? ", " : "; hosts held: ", h, what);
	(*n)++;
}

/*
 * What holds the hosts of each type that are not free, once per decision
 * (its wait messages end with it): "; hosts held: 3 by 2 other jobs, 1
 * by a warm pool, ...".
 */
static void setup_hold_text(struct ctrl_sched_state *st)
{
	size_t t;

	st->hold_text = xcalloc(st->nt + 1, sizeof(*st->hold_text));
	for (t = 0; t < st->nt; t++) {
		const struct ctrl_sched_hold *h = &st->hold[t];
		struct buf *b = &st->hold_text[t];
		char jobs[64];
		int n = 0;

		buf_init(b, 0);
		(void)snprintf(jobs, sizeof(jobs), "by %d other job%s", h->jobs,
			       h->jobs == 1 ? "" : "s");
		hold_part(b, &n, h->busy, jobs);
		hold_part(b, &n, h->warm, "by a warm pool");
		hold_part(b, &n, h->held, "restarting or uploading");
		hold_part(b, &n, h->drained, "drained");
		hold_part(b, &n, h->quarantined, "quarantined");
		hold_part(b, &n, h->down, "not responding");
	}
}

void ctrl_sched_state_release(struct ctrl_sched_state *st)
{
	void *p[] = { st->ht,	  st->rt,    st->qt,	st->rc,	   st->cap,
		      st->used,	  st->claim, st->grp,	st->gused, st->gactive,
		      st->active, st->usage, st->queue, st->qpos,  st->pool,
		      st->nfree,  st->rel,   st->resv,	st->ctot,  st->fh,
		      st->doms,	  st->tdom,  st->jobs,	st->jbeg,  st->jcur,
		      st->heap,	  st->hpos,  st->owed,	st->fkey,  st->head,
		      st->shadow, st->spare, st->cand,	st->cbeg,  st->victim,
		      st->picks,  st->epoch, st->failed, st->hold };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(p); i++)
		free(p[i]);
	for (i = 0; st->clauses && i < st->ns; i++)
		buf_release(&st->clauses[i].text);
	for (i = 0; st->hold_text && i < st->nt; i++)
		buf_release(&st->hold_text[i]);
	free(st->hold_text);
	free(st->clauses);
	ctrl_sched_intern_release(&st->types);
}

void ctrl_sched_state_init(struct ctrl_sched_state *st,
			   const struct ctrl_sched_in *in,
			   struct ctrl_sched_out *out)
{
	size_t nt;
	unsigned char *busy = xcalloc(in->n_hosts + 1, 1);

	memset(st, 0, sizeof(*st));
	st->in = in;
	st->out = out;
	st->ns = in->n_shares;

	setup_types(st);
	setup_shares(st);
	nt = st->nt + 1;
	st->pool = xcalloc(nt, sizeof(int));
	st->nfree = xcalloc(nt, sizeof(int));
	st->rel = xcalloc(nt, sizeof(int));
	st->resv = xcalloc(nt, sizeof(int));
	st->ctot = xcalloc(nt, sizeof(int));
	st->hold = xcalloc(nt, sizeof(*st->hold));
	st->head = xcalloc(nt, 1);
	st->shadow = xcalloc(nt, sizeof(int64_t));
	st->spare = xcalloc(nt, sizeof(int));
	st->picks = xmalloc(xmul(st->in->n_running + 1, sizeof(size_t)));
	st->epoch = xcalloc(nt, sizeof(uint64_t));
	for (nt = 0; nt < st->nt; nt++)
		st->epoch[nt] = 1;
	for (nt = 0; nt < st->ns; nt++) {
		size_t t;

		for (t = 0; t < st->nt; t++)
			st->resv[t] += reserve_idle(st, nt, t);
	}
	st->failed = xcalloc(xmul(st->ns, st->nt) + 1, sizeof(*st->failed));
	st->clauses = xcalloc(st->ns + 1, sizeof(*st->clauses));
	for (nt = 0; nt < st->ns; nt++) {
		buf_init(&st->clauses[nt].text, 0);
		st->clauses[nt].t = CTRL_SCHED_NONE;
	}
	setup_running(st, busy);
	setup_hosts(st, busy);
	setup_hold_text(st);
	free(busy);
	setup_jobs(st);
	setup_cands(st);
}
