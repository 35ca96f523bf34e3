#define LOG_TAG "sched"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "controller/caller.h"
#include "controller/reply.h"
#include "controller/sched/decide.h"
#include "controller/sched/view.h"
#include "common/err.h"
#include "common/strvec.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * The queues view (view.h). A view holds queues in order of priority,
 * each with its shares in the order the pass met them; a share's arrays
 * grow as the pass's jobs are counted into them. Strings are copied into
 * the view's own vector, so a view outlives the pass that made it.
 */

struct view_share {
	struct api_queue_share s; /* its arrays are the view's */
	size_t a_caps, a_users, a_jobs;
	int best_effort;   /* the default queue's: named after its owner */
	int64_t active_ms; /* the last pass it had a job */
};

struct view_queue {
	const char *name;
	int priority;
	const char *policy;
	struct view_share *shares;
	size_t n, alloc;
};

struct ctrl_sched_view {
	int64_t now_ms, interval_ms;
	struct view_queue *q;
	size_t n, alloc;
	struct strvec strs;
};

/* A copy of s that lives as long as v (NULL stays NULL). */
static const char *keep(struct ctrl_sched_view *v, const char *s)
{
	if (!s)
		return NULL;
	strvec_push(&v->strs, s);
	return v->strs.v[v->strs.n - 1];
}

static int same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static const struct view_share *find_share(const struct ctrl_sched_view *v,
					   const char *queue, const char *name)
{
	size_t i, k;

	for (i = 0; v && i < v->n; i++) {
		if (!same(v->q[i].name, queue))
			continue;
		for (k = 0; k < v->q[i].n; k++)
			if (same(v->q[i].shares[k].s.name, name))
				return &v->q[i].shares[k];
	}
	return NULL;
}

static struct view_queue *queue_get(struct ctrl_sched_view *v, const char *name,
				    int priority, const char *policy)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		if (same(v->q[i].name, name))
			return &v->q[i];
	ALLOC_GROW(v->q, v->n + 1, v->alloc);
	memset(&v->q[v->n], 0, sizeof(v->q[v->n]));
	v->q[v->n].name = keep(v, name);
	v->q[v->n].priority = priority;
	v->q[v->n].policy = policy;
	return &v->q[v->n++];
}

static struct view_share *share_add(struct view_queue *q)
{
	ALLOC_GROW(q->shares, q->n + 1, q->alloc);
	memset(&q->shares[q->n], 0, sizeof(q->shares[q->n]));
	q->shares[q->n].s.total.guarantee = -1;
	return &q->shares[q->n++];
}

static struct api_queue_cap *cap_get(struct ctrl_sched_view *v,
				     struct view_share *vs, const char *type)
{
	struct api_queue_share *s = &vs->s;
	size_t i;

	for (i = 0; i < s->n_caps; i++)
		if (same(s->caps[i].type, type))
			return &s->caps[i];
	ALLOC_GROW(s->caps, s->n_caps + 1, vs->a_caps);
	memset(&s->caps[s->n_caps], 0, sizeof(s->caps[s->n_caps]));
	s->caps[s->n_caps].type = keep(v, type);
	s->caps[s->n_caps].guarantee = -1;
	return &s->caps[s->n_caps++];
}

static struct api_queue_user *user_get(struct ctrl_sched_view *v,
				       struct view_share *vs, const char *user)
{
	struct api_queue_share *s = &vs->s;
	size_t i;

	for (i = 0; i < s->n_users; i++)
		if (same(s->users[i].user, user))
			return &s->users[i];
	ALLOC_GROW(s->users, s->n_users + 1, vs->a_users);
	memset(&s->users[s->n_users], 0, sizeof(s->users[s->n_users]));
	s->users[s->n_users].user = keep(v, user);
	return &s->users[s->n_users++];
}

static struct api_queue_job *job_add(struct view_share *vs,
				     const struct ctrl_sched_view_job *j,
				     const char *type, int count, int prio)
{
	struct api_queue_share *s = &vs->s;
	struct api_queue_job *x;

	ALLOC_GROW(s->jobs, s->n_jobs + 1, vs->a_jobs);
	x = &s->jobs[s->n_jobs++];
	memset(x, 0, sizeof(*x));
	/* The input's strings until keep_jobs() copies those listed. */
	x->name = j && j->name ? j->name : "";
	x->user = j ? j->owner : NULL;
	x->type = type;
	x->count = count;
	x->priority = prio;
	return x;
}

static const char *policy_of(const struct ctrl_sched_share *sh)
{
	if (sh->quota)
		return "QUOTA_SHARE";
	return sh->fair_group >= 0 ? "FAIRSHARE" : NULL;
}

static const char *strategy_of(const struct ctrl_sched_share *sh)
{
	if (!sh->quota)
		return NULL;
	return sh->sharing == CTRL_SCHED_RESERVE ? "RESERVE" :
	       sh->sharing == CTRL_SCHED_LEND	 ? "LEND" :
						   "LEND_AND_BORROW";
}

/* A share of the decision's input, with its guarantees. */
static struct view_share *share_of(struct ctrl_sched_view *v,
				   const struct ctrl_sched_share *sh)
{
	const char *qname = sh->queue ? sh->queue : "default";
	struct view_queue *q;
	struct view_share *vs;
	size_t k;

	vs = (struct view_share *)find_share(v, qname,
					     sh->name ? sh->name : "");
	if (vs)
		return vs;
	q = queue_get(v, qname, sh->queue_priority, policy_of(sh));
	vs = share_add(q);
	vs->s.name = keep(v, sh->name ? sh->name : "");
	vs->s.kind = sh->quota		 ? "quota" :
		     sh->fair_group >= 0 ? "fairshare" :
					   "fifo";
	vs->s.strategy = strategy_of(sh);
	vs->s.borrow_limit = sh->quota ? sh->borrow_limit_pct : -1;
	vs->s.weight = sh->weight > 0 ? sh->weight : 1.0;
	vs->s.usage = sh->fair_group >= 0 ? sh->usage : 0;
	vs->best_effort = sh->best_effort;
	vs->active_ms = v->now_ms;
	for (k = 0; sh->quota && sh->caps && k < sh->n_caps; k++) {
		struct api_queue_cap *c = cap_get(v, vs, sh->caps[k].type);

		if (c->guarantee < 0)
			c->guarantee =
				sh->caps[k].count > 0 ? sh->caps[k].count : 0;
	}
	return vs;
}

/* Counts a job that holds (or is given) hosts. */
static void count_holder(struct ctrl_sched_view *v, struct view_share *vs,
			 const struct ctrl_sched_view_job *j, const char *type,
			 int count, int prio, const char *state)
{
	struct api_queue_job *x = job_add(vs, j, type, count, prio);
	struct api_queue_user *u = user_get(v, vs, j ? j->owner : NULL);

	x->state = state;
	if (!strcmp(state, "releasing"))
		return;
	cap_get(v, vs, type)->in_use += count;
	vs->s.running++;
	u->running++;
	u->hosts += count;
}

static void count_running(struct ctrl_sched_view *v,
			  const struct ctrl_sched_in *in,
			  struct view_share **share,
			  const struct ctrl_sched_view_job *running)
{
	size_t i;

	for (i = 0; i < in->n_running; i++) {
		const struct ctrl_sched_running *r = &in->running[i];

		if (r->share >= in->n_shares || !r->type || r->count <= 0)
			continue;
		count_holder(v, share[r->share], running ? &running[i] : NULL,
			     r->type, r->count, r->priority,
			     r->releasing ? "releasing" : "running");
	}
}

#define ENV_FULL "waiting for its service environment's capacity"

static void count_queued(struct ctrl_sched_view *v,
			 const struct ctrl_sched_in *in,
			 const struct ctrl_sched_out *out,
			 struct view_share **share,
			 const struct ctrl_sched_view_job *queued)
{
	size_t i;

	for (i = 0; i < in->n_queued; i++) {
		const struct ctrl_sched_queued *q = &in->queued[i];
		const struct ctrl_sched_view_job *j = queued ? &queued[i] :
							       NULL;
		const char *why = out->why ? out->why[i] : NULL;
		struct view_share *vs;
		struct api_queue_job *x;

		if (q->share >= in->n_shares)
			continue;
		vs = share[q->share];
		if (!why && j && j->placed && q->type && q->count > 0) {
			count_holder(v, vs, j, q->type, q->count, q->priority,
				     "starting");
			continue;
		}
		vs->s.waiting++;
		user_get(v, vs, j ? j->owner : NULL)->waiting++;
		x = job_add(vs, j, q->type, q->count, q->priority);
		x->state = "waiting";
		x->position = out->position ? out->position[i] : 0;
		x->reason = why ? why : ENV_FULL;
	}
}

/* Borrowed hosts of one instance type, not yet counted as anyone's loan. */
struct type_loan {
	const char *type;
	int left;
};

static struct type_loan *loan_of(struct type_loan **v, size_t *n, size_t *alloc,
				 const char *type)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (same((*v)[i].type, type))
			return &(*v)[i];
	ALLOC_GROW(*v, *n + 1, *alloc);
	(*v)[*n].type = type;
	(*v)[*n].left = 0;
	return &(*v)[(*n)++];
}

/*
 * Borrowed: a quota share's hosts in use beyond its guarantee. Lent: the
 * idle guaranteed hosts of the shares that lend, as far as borrowers use
 * them, counted to the lenders in the order of the view.
 */
static void count_loans(struct ctrl_sched_view *v)
{
	struct type_loan *loans = NULL;
	size_t n = 0, alloc = 0, i, k, c;
	int pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < v->n; i++)
			for (k = 0; k < v->q[i].n; k++) {
				struct api_queue_share *s =
					&v->q[i].shares[k].s;

				if (strcmp(s->kind, "quota") ||
				    (pass && !strcmp(s->strategy, "RESERVE")))
					continue;
				for (c = 0; c < s->n_caps; c++) {
					struct api_queue_cap *x = &s->caps[c];
					struct type_loan *l = loan_of(
						&loans, &n, &alloc, x->type);
					int idle = x->guarantee - x->in_use;

					if (x->guarantee < 0)
						continue;
					if (!pass && idle < 0) {
						x->borrowed = -idle;
						l->left += -idle;
					} else if (pass && idle > 0) {
						x->lent = idle < l->left ?
								  idle :
								  l->left;
						l->left -= x->lent;
					}
				}
			}
	free(loans);
}

/* A share's figures summed over its instance types. */
static void count_total(struct api_queue_share *s)
{
	size_t c;

	s->total.guarantee = -1;
	s->total.in_use = s->total.borrowed = s->total.lent = 0;
	for (c = 0; c < s->n_caps; c++) {
		const struct api_queue_cap *x = &s->caps[c];

		if (x->guarantee >= 0)
			s->total.guarantee = (s->total.guarantee < 0 ?
						      0 :
						      s->total.guarantee) +
					     x->guarantee;
		s->total.in_use += x->in_use;
		s->total.borrowed += x->borrowed;
		s->total.lent += x->lent;
	}
}

static int state_rank(const char *state)
{
	return !strcmp(state, "running")   ? 0 :
	       !strcmp(state, "starting")  ? 1 :
	       !strcmp(state, "releasing") ? 2 :
					     3;
}

/* Jobs holding hosts first, then the waiting ones by their place. */
static int job_cmp(const void *a, const void *b)
{
	const struct api_queue_job *x = a, *y = b;
	int rx = state_rank(x->state), ry = state_rank(y->state);

	if (rx != ry)
		return rx < ry ? -1 : 1;
	if (x->position != y->position)
		return x->position - 1 < y->position - 1 ? -1 : 1; /* 0 last */
	return strcmp(x->name, y->name);
}

/*
 * Once sorted: the jobs holding hosts and the first
 * CTRL_SCHED_VIEW_JOBS_MAX waiting ones stay, their strings copied into
 * the view (until then they are the input's).
 */
static void keep_jobs(struct ctrl_sched_view *v, struct api_queue_share *s)
{
	size_t i, waiting = 0, n = 0;

	for (i = 0; i < s->n_jobs; i++) {
		struct api_queue_job *x = &s->jobs[i];

		if (!strcmp(x->state, "waiting") &&
		    ++waiting > CTRL_SCHED_VIEW_JOBS_MAX)
			break;
		x->name = keep(v, x->name);
		x->user = keep(v, x->user);
		x->type = keep(v, x->type);
		x->reason = keep(v, x->reason);
		n++;
	}
	s->n_jobs = n;
}

static int queue_cmp(const void *a, const void *b)
{
	const struct view_queue *x = a, *y = b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The series of old (NULL: none), with a sample of vs's figures now
 * when its last one is an interval old; at most CTRL_SCHED_VIEW_SAMPLES. */
static void series_next(struct view_share *vs, const struct view_share *old,
			int64_t now, int64_t interval)
{
	size_t n = old ? old->s.n_series : 0, drop = 0;
	int add = !n || now - old->s.series[n - 1].t_ms >= interval;
	struct api_queue_sample *p;

	if (add && n >= CTRL_SCHED_VIEW_SAMPLES)
		drop = n - CTRL_SCHED_VIEW_SAMPLES + 1;
	vs->s.series = xcalloc(n - drop + 2, sizeof(*vs->s.series));
	if (n > drop)
		memcpy(vs->s.series, old->s.series + drop,
		       (n - drop) * sizeof(*vs->s.series));
	vs->s.n_series = n - drop;
	if (!add)
		return;
	p = &vs->s.series[vs->s.n_series++];
	p->t_ms = now;
	p->guarantee = vs->s.total.guarantee;
	p->in_use = vs->s.total.in_use;
	p->borrowed = vs->s.total.borrowed;
	p->lent = vs->s.total.lent;
}

/* Whether a share ever held hosts in its series. */
static int ever_used(const struct api_queue_share *s)
{
	size_t i;

	for (i = 0; i < s->n_series; i++)
		if (s->series[i].in_use > 0)
			return 1;
	return 0;
}

/*
 * A share of prev with no job now, kept idle while it had one within the
 * series' window: a quota share, or one that held hosts (a share whose
 * jobs only ever waited, then left, is gone with them).
 */
static void carry_idle(struct ctrl_sched_view *v, const struct view_queue *pq,
		       const struct view_share *old)
{
	struct view_queue *q;
	struct view_share *vs;
	size_t c;

	if ((strcmp(old->s.kind, "quota") && !ever_used(&old->s)) ||
	    find_share(v, pq->name, old->s.name) ||
	    v->now_ms - old->active_ms >
		    (int64_t)CTRL_SCHED_VIEW_SAMPLES * v->interval_ms)
		return;
	q = queue_get(v, pq->name, pq->priority, pq->policy);
	vs = share_add(q);
	vs->s.name = keep(v, old->s.name);
	vs->s.kind = old->s.kind;
	vs->s.strategy = old->s.strategy;
	vs->s.borrow_limit = old->s.borrow_limit;
	vs->s.weight = old->s.weight;
	vs->s.usage = old->s.usage;
	vs->best_effort = old->best_effort;
	vs->active_ms = old->active_ms;
	for (c = 0; c < old->s.n_caps; c++)
		cap_get(v, vs, old->s.caps[c].type)->guarantee =
			old->s.caps[c].guarantee;
}

/* Totals, series and order, once every job is counted. */
static void finish(struct ctrl_sched_view *v,
		   const struct ctrl_sched_view *prev)
{
	size_t i, k;

	for (i = 0; prev && i < prev->n; i++)
		for (k = 0; k < prev->q[i].n; k++)
			carry_idle(v, &prev->q[i], &prev->q[i].shares[k]);
	count_loans(v);
	for (i = 0; i < v->n; i++)
		for (k = 0; k < v->q[i].n; k++) {
			struct view_share *vs = &v->q[i].shares[k];

			count_total(&vs->s);
			series_next(vs,
				    find_share(prev, v->q[i].name, vs->s.name),
				    v->now_ms, v->interval_ms);
			if (vs->s.n_jobs)
				qsort(vs->s.jobs, vs->s.n_jobs,
				      sizeof(*vs->s.jobs), job_cmp);
			keep_jobs(v, &vs->s);
		}
	if (v->n)
		qsort(v->q, v->n, sizeof(*v->q), queue_cmp);
}

struct ctrl_sched_view *
ctrl_sched_view_build(const struct ctrl_sched_in *in,
		      const struct ctrl_sched_out *out,
		      const struct ctrl_sched_view_job *queued,
		      const struct ctrl_sched_view_job *running,
		      const struct ctrl_sched_view *prev, int64_t interval_ms)
{
	struct ctrl_sched_view *v = xcalloc(1, sizeof(*v));
	struct view_share **share = xcalloc(in->n_shares + 1, sizeof(*share));
	size_t i;

	v->now_ms = in->now_ms;
	v->interval_ms = interval_ms > 0 ? interval_ms : 1;
	/* Pointers into queues' share arrays move as they grow: count
	 * shares first, then jobs. */
	for (i = 0; i < in->n_shares; i++)
		(void)share_of(v, &in->shares[i]);
	for (i = 0; i < in->n_shares; i++) {
		const struct ctrl_sched_share *sh = &in->shares[i];

		share[i] = (struct view_share *)find_share(
			v, sh->queue ? sh->queue : "default",
			sh->name ? sh->name : "");
	}
	count_running(v, in, share, running);
	count_queued(v, in, out, share, queued);
	free(share);
	finish(v, prev);
	return v;
}

void ctrl_sched_view_free(struct ctrl_sched_view *v)
{
	size_t i, k;

	if (!v)
		return;
	for (i = 0; i < v->n; i++) {
		for (k = 0; k < v->q[i].n; k++) {
			struct api_queue_share *s = &v->q[i].shares[k].s;

			free(s->caps);
			free(s->users);
			free(s->jobs);
			free(s->series);
		}
		free(v->q[i].shares);
	}
	free(v->q);
	strvec_release(&v->strs);
	free(v);
}

/* --- answers --------------------------------------------------------- */

static void answer_share(struct api_queue_share *a, const struct view_share *vs,
			 const struct ctrl_caller *who)
{
	const struct api_queue_share *s = &vs->s;
	struct api_queue_user *others = NULL;
	size_t i;

	*a = *s;
	if (vs->best_effort && !ctrl_caller_sees(who, s->name))
		a->name = NULL;
	a->users = xcalloc(s->n_users + 1, sizeof(*a->users));
	a->n_users = 0;
	for (i = 0; i < s->n_users; i++) {
		const struct api_queue_user *u = &s->users[i];

		if (ctrl_caller_sees(who, u->user)) {
			a->users[a->n_users++] = *u;
			continue;
		}
		if (!others) {
			others = &a->users[a->n_users++];
			memset(others, 0, sizeof(*others));
		}
		others->running += u->running;
		others->waiting += u->waiting;
		others->hosts += u->hosts;
	}
	a->jobs = xcalloc(s->n_jobs + 1, sizeof(*a->jobs));
	for (i = 0; i < s->n_jobs; i++) {
		a->jobs[i] = s->jobs[i];
		if (ctrl_caller_sees(who, s->jobs[i].user))
			continue;
		a->jobs[i].name = NULL;
		a->jobs[i].user = NULL;
	}
}

int ctrl_sched_view_answer(const struct ctrl_sched_view *v,
			   const struct ctrl_caller *who, const char *queue,
			   struct api_queues *ans)
{
	size_t i, k;

	memset(ans, 0, sizeof(*ans));
	ans->sampled_ms = v->now_ms;
	ans->interval_ms = v->interval_ms;
	ans->queues = xcalloc(v->n + 1, sizeof(*ans->queues));
	for (i = 0; i < v->n; i++) {
		const struct view_queue *q = &v->q[i];
		struct api_queue *a;

		if (queue && !same(queue, q->name))
			continue;
		a = &ans->queues[ans->n++];
		a->name = q->name;
		a->priority = q->priority;
		a->policy = q->policy;
		a->shares = xcalloc(q->n + 1, sizeof(*a->shares));
		for (k = 0; k < q->n; k++)
			answer_share(&a->shares[a->n_shares++], &q->shares[k],
				     who);
	}
	if (queue && !ans->n) {
		ctrl_sched_view_answer_release(ans);
		return ERR_NOTFOUND;
	}
	return 0;
}

void ctrl_sched_view_answer_release(struct api_queues *ans)
{
	size_t i, k;

	for (i = 0; i < ans->n; i++) {
		for (k = 0; k < ans->queues[i].n_shares; k++) {
			free(ans->queues[i].shares[k].users);
			free(ans->queues[i].shares[k].jobs);
		}
		free(ans->queues[i].shares);
	}
	free(ans->queues);
	memset(ans, 0, sizeof(*ans));
}

/* --- the latest view ------------------------------------------------- */

/* Written by the reconciler's thread only; read under the lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctrl_sched_view *latest;

void ctrl_sched_view_record(const struct ctrl_sched_in *in,
			    const struct ctrl_sched_out *out,
			    const struct ctrl_sched_view_job *queued,
			    const struct ctrl_sched_view_job *running)
{
	struct ctrl_sched_view *v, *old;

	/* latest is only replaced here, so reading it unlocked is safe. */
	v = ctrl_sched_view_build(in, out, queued, running, latest,
				  CTRL_SCHED_VIEW_INTERVAL_MS);
	pthread_mutex_lock(&lock);
	old = latest;
	latest = v;
	pthread_mutex_unlock(&lock);
	ctrl_sched_view_free(old);
}

void ctrl_sched_view_route(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			   const char *queue, struct ctrl_response *resp)
{
	static const struct ctrl_sched_view none = {
		.interval_ms = CTRL_SCHED_VIEW_INTERVAL_MS
	};
	struct api_queues ans;
	struct buf json = BUF_INIT, msg = BUF_INIT;
	int ret;

	(void)ctx;
	pthread_mutex_lock(&lock);
	ret = ctrl_sched_view_answer(latest ? latest : &none, who, queue, &ans);
	if (!ret) {
		ret = api_queues_build(&ans, &json);
		ctrl_sched_view_answer_release(&ans);
	}
	pthread_mutex_unlock(&lock);
	if (ret == ERR_NOTFOUND) {
		(void)buf_addf(&msg,
			       "Job queue '%.64s' has no queued or running "
			       "jobs, or does not exist",
			       queue);
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND, msg.data);
	} else if (ret) {
		ctrl_reply_err_code(resp, ret, "cannot render the queues");
	} else {
		ctrl_reply_json(resp, &json);
	}
	buf_release(&json);
	buf_release(&msg);
}
