#define LOG_TAG "sched"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/job_spec.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/jobrt.h"
#include "controller/jobrun.h"
#include "controller/ops.h"
#include "controller/placement.h"
#include "controller/sched/decide.h"
#include "controller/sched/pass.h"
#include "controller/sched/state.h"
#include "controller/sched/stats.h"
#include "controller/sched/view.h"
#include "db/db.h"
#include "db/sched.h"
#include "common/log.h"
#include "common/strvec.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * One scheduling pass (pass.h): the store's facts in, the decision out.
 * Local hosts serve every instance type, so where the inventory has any,
 * every type counts as one pool ("hosts of any type"), quota limits
 * summed over units.
 */

#define ANY_TYPE "hosts of any type"
/* Usage a start charges per host, so that equal shares alternate. */
#define START_CHARGE_S 1.0
/* AWS Batch: a shareDecaySeconds of 0 is the minimum window, 600 s. */
#define MIN_DECAY_S 600

/* A share's decayed usage between passes. */
struct mem_entry {
	char *key;
	double usage;
	int64_t decay_s;
};

/* A job the scheduler preempted for: it goes first until it starts, or
 * until its victims should long have released their hosts. */
struct claim {
	char *job;
	int64_t until_ms;
};

/* After the grace period, how long a claim still holds. */
#define CLAIM_SLACK_MS 60000

struct ctrl_sched_mem {
	struct mem_entry *v;
	size_t n, alloc;
	struct claim *claims;
	size_t n_claims, a_claims;
	int64_t last_ms; /* usage accounted up to */
	int64_t pass_ms; /* the last pass */
	int64_t took_ms; /* how long it took */
	size_t last_jobs; /* unfinished jobs the last pass read */
	int quota;	  /* the last pass saw quota shares (preemption) */
	/* Waiting messages of jobs that arrived while no pass ran. */
	struct strvec note_names, note_msgs;
};

void ctrl_sched_mem_free(struct ctrl_sched_mem *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].key);
	free(m->v);
	for (i = 0; i < m->n_claims; i++)
		free(m->claims[i].job);
	free(m->claims);
	strvec_release(&m->note_names);
	strvec_release(&m->note_msgs);
	free(m);
}

static struct mem_entry *mem_get(struct ctrl_sched_mem *m, const char *key)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].key, key))
			return &m->v[i];
	ALLOC_GROW(m->v, m->n + 1, m->alloc);
	memset(&m->v[m->n], 0, sizeof(m->v[m->n]));
	m->v[m->n].key = xstrdup(key);
	return &m->v[m->n++];
}

/* Whether job is claimed: preempted for and not started yet. */
static int claimed(const struct ctrl_sched_mem *m, const char *job)
{
	size_t i;

	for (i = 0; i < m->n_claims; i++)
		if (!strcmp(m->claims[i].job, job))
			return 1;
	return 0;
}

/* Drops job's claim (it started), or every claim past its time. */
static void claims_drop(struct ctrl_sched_mem *m, const char *job,
			int64_t now)
{
	size_t i, k = 0;

	for (i = 0; i < m->n_claims; i++) {
		if ((job && !strcmp(m->claims[i].job, job)) ||
		    (!job && m->claims[i].until_ms < now)) {
			free(m->claims[i].job);
			continue;
		}
		m->claims[k++] = m->claims[i];
	}
	m->n_claims = k;
}

static void claim_add(struct ctrl_sched_mem *m, const char *job,
		      int64_t until_ms)
{
	size_t i;

	for (i = 0; i < m->n_claims; i++)
		if (!strcmp(m->claims[i].job, job)) {
			m->claims[i].until_ms = until_ms;
			return;
		}
	ALLOC_GROW(m->claims, m->n_claims + 1, m->a_claims);
	m->claims[m->n_claims].job = xstrdup(job);
	m->claims[m->n_claims++].until_ms = until_ms;
}

/* Everything one pass builds; released by pass_release(). */
struct pass {
	struct ctrl_ctx *ctx;
	int64_t now;
	int any_type;
	struct db_sched_job *jobs;
	size_t n_jobs;
	struct db_sched_cap *caps;
	size_t n_caps;
	/* hosts[i] is ctx->hosts[i]; names interned in that order */
	struct ctrl_sched_host *hosts;
	size_t n_hosts;
	struct ctrl_sched_intern host_ids;
	struct ctrl_sched_share *shares;
	size_t n_shares, a_shares;
	char **share_keys;
	size_t *share_mem; /* index in ctx->sched->v (which may grow) */
	struct ctrl_sched_intern share_ids;
	struct ctrl_sched_intern queue_ids; /* fair-share groups */
	struct ctrl_sched_running *running;
	size_t *run_job;
	size_t n_running;
	struct ctrl_sched_queued *queued;
	size_t *q_job;
	size_t n_queued;
	/* the why of jobs that the decision does not see */
	const char **w_names;
	char **w_msgs;
	size_t n_wait;
};

static const char *queue_name(const char *arn)
{
	const char *s = arn ? strrchr(arn, '/') : NULL;

	return s ? s + 1 : arn ? arn : "default";
}

static const struct db_sched_cap *cap_of(const struct pass *p,
					 const char *arn, size_t *n)
{
	size_t i, k;

	*n = 0;
	for (i = 0; arn && i < p->n_caps; i++) {
		if (strcmp(p->caps[i].arn, arn))
			continue;
		for (k = i; k < p->n_caps && !strcmp(p->caps[k].arn, arn); k++)
			;
		*n = k - i;
		return &p->caps[i];
	}
	return NULL;
}

/* A quota share's limits as the decision's caps (one pool: summed). */
static void quota_caps(struct pass *p, struct ctrl_sched_share *sh,
		       const struct db_sched_cap *c, size_t n)
{
	struct ctrl_sched_cap *v = xcalloc(n + 1, sizeof(*v));
	size_t i;

	for (i = 0; i < n; i++) {
		if (p->any_type) {
			v[0].type = ANY_TYPE;
			v[0].count += (int)c[i].max;
			sh->n_caps = 1;
		} else {
			v[i].type = c[i].unit;
			v[i].count = (int)c[i].max;
			sh->n_caps = i + 1;
		}
	}
	sh->caps = v;
	sh->quota = 1;
	sh->sharing = !c->strategy || !strcmp(c->strategy, "RESERVE") ?
			      CTRL_SCHED_RESERVE :
		      !strcmp(c->strategy, "LEND") ? CTRL_SCHED_LEND :
						     CTRL_SCHED_LEND_AND_BORROW;
	sh->borrow_limit_pct = (int)c->borrow_limit;
	sh->in_share_preemption = c->in_share_preemption &&
				  !strcmp(c->in_share_preemption, "ENABLED");
	sh->fair_group = -1;
	sh->name = c->name;
}

/* The share key of job j and its decay; fills buf. */
static void share_key(const struct db_sched_job *j, struct buf *key,
		      int64_t *decay_s)
{
	*decay_s = 0;
	if (!j->queue) {
		(void)buf_addf(key, "d\n%s", j->owner ? j->owner : "");
		*decay_s = CTRL_SCHED_DEFAULT_DECAY_S;
	} else if (j->policy_kind && !strcmp(j->policy_kind, "QUOTA_SHARE")) {
		(void)buf_addf(key, "q\n%s", j->quota_share ? j->quota_share :
							      "");
	} else if (j->policy_kind && !strcmp(j->policy_kind, "FAIRSHARE")) {
		(void)buf_addf(key, "f\n%s\n%s", j->queue,
			       j->share_id ? j->share_id : "");
		*decay_s = j->decay_s > 0 ? j->decay_s : MIN_DECAY_S;
	} else {
		(void)buf_addf(key, "o\n%s", j->queue);
	}
}

/* The index of job j's share, made on first sight. */
static size_t share_of(struct pass *p, const struct db_sched_job *j)
{
	struct mem_entry *e;
	struct buf key = BUF_INIT;
	struct ctrl_sched_share *sh;
	const struct db_sched_cap *c;
	int64_t decay_s;
	size_t id, n;

	share_key(j, &key, &decay_s);
	id = ctrl_sched_intern_id(&p->share_ids, key.data);
	if (id < p->n_shares) {
		buf_release(&key);
		return id;
	}
	ALLOC_GROW(p->shares, p->n_shares + 1, p->a_shares);
	p->share_keys = xrealloc(p->share_keys,
				 xmul(p->a_shares, sizeof(*p->share_keys)));
	p->share_mem = xrealloc(p->share_mem,
				xmul(p->a_shares, sizeof(*p->share_mem)));
	/* The interned key (key's buffer) lives as long as the pass. */
	p->share_keys[id] = buf_detach(&key, NULL);
	sh = &p->shares[id];
	memset(sh, 0, sizeof(*sh));
	sh->queue = queue_name(j->queue);
	sh->queue_priority = j->queue_priority;
	sh->weight = 1.0;
	sh->fair_group = -1;
	if (!j->queue) {
		sh->name = j->owner && *j->owner ? j->owner : "default";
		sh->fair_group = 0;
		sh->best_effort = 1;
	} else if (j->policy_kind && !strcmp(j->policy_kind, "QUOTA_SHARE")) {
		c = cap_of(p, j->quota_share, &n);
		if (c)
			quota_caps(p, sh, c, n);
		else
			sh->quota = 1; /* no caps: nothing it may run */
	} else if (j->policy_kind && !strcmp(j->policy_kind, "FAIRSHARE")) {
		sh->name = j->share_id ? j->share_id : "";
		/* One group per queue, after the default queue's 0. */
		sh->fair_group =
			1 + (int)ctrl_sched_intern_id(&p->queue_ids, j->queue);
		sh->weight = j->weight > 0 ? j->weight : 1.0;
		sh->compute_reservation = j->reservation;
	} else {
		sh->name = sh->queue;
	}
	if (!sh->name)
		sh->name = "";
	e = mem_get(p->ctx->sched, p->share_keys[id]);
	e->decay_s = decay_s;
	p->share_mem[id] = (size_t)(e - p->ctx->sched->v);
	return p->n_shares++;
}

/* Why h may take no work (CTRL_SCHED_OFF_*), 0 when it may. */
static int host_off(const struct ctrl_host *h)
{
	if (!ctrl_place_host_live(h))
		return CTRL_SCHED_OFF_DOWN;
	if (h->drained && h->drain_reason &&
	    !strncmp(h->drain_reason, "quarantined", 11))
		return CTRL_SCHED_OFF_QUARANTINED;
	return h->drained ? CTRL_SCHED_OFF_DRAINED : 0;
}

/*
 * The hosts, as ctx->hosts orders them: usable (live, not drained), held
 * (a warm pool's, or busy with work the decision does not see: marked
 * from the running jobs below). Caller holds hosts_lock.
 */
static void read_hosts(struct pass *p)
{
	struct ctrl_ctx *ctx = p->ctx;
	size_t i;

	p->n_hosts = ctx->n_hosts;
	p->hosts = xcalloc(p->n_hosts + 1, sizeof(*p->hosts));
	for (i = 0; i < ctx->n_hosts; i++)
		p->any_type |= !ctx->hosts[i]->instance_type;
	for (i = 0; i < ctx->n_hosts; i++) {
		const struct ctrl_host *h = ctx->hosts[i];
		struct ctrl_sched_host *sh = &p->hosts[i];

		sh->name = h->name;
		sh->type = p->any_type ? ANY_TYPE : h->instance_type;
		sh->domain = h->rack; /* the inventory's "rack", or none */
		sh->usable = ctrl_place_host_usable(h);
		/* busy now, a running job's below clears it */
		sh->held = h->busy;
		sh->warm = h->warm;
		sh->off = host_off(h);
		(void)ctrl_sched_intern_id(&p->host_ids, h->name);
	}
}

static const char *job_type(const struct pass *p, const struct db_sched_job *j)
{
	return p->any_type ? ANY_TYPE : j->type;
}

/* MaxRuntimeInSeconds of a job whose runtime record is cached, else 0. */
static int64_t max_runtime_s(struct ctrl_ctx *ctx, const char *name)
{
	struct ctrl_jobrt *rt;
	int64_t s = 0;

	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_find(ctx, name);
	if (rt)
		s = rt->spec.max_runtime_s;
	pthread_mutex_unlock(&ctx->jobs_lock);
	return s;
}

/* Splits j's hosts ('\n'-separated, in place) into host indices. */
static size_t host_indices(struct pass *p, char *hosts, size_t *out,
			   size_t max)
{
	size_t n = 0, id;
	char *s = hosts, *e;

	while (s && *s && n < max) {
		e = strchr(s, '\n');
		if (e)
			*e = '\0';
		id = ctrl_sched_intern_id(&p->host_ids, s);
		if (id < p->n_hosts)
			out[n++] = id;
		s = e ? e + 1 : NULL;
	}
	return n;
}

static size_t count_char(const char *s, char c)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

static int is_state(const struct db_sched_job *j, const char *s)
{
	return j->secondary && !strcmp(j->secondary, s);
}

/*
 * A job holding hosts: a running job of the decision (releasing when
 * stopping or preempted), or, when it cannot be preempted or moved
 * (restarting, uploading, InstanceGroups), hosts it holds.
 */
static void add_holder(struct pass *p, size_t k)
{
	struct db_sched_job *j = &p->jobs[k];
	size_t max = 1 + count_char(j->hosts, '\n');
	size_t *idx = xcalloc(max, sizeof(*idx));
	size_t n = host_indices(p, j->hosts, idx, max), i;
	int releasing = !strcmp(j->status, "Stopping") ||
			is_state(j, "Interrupted");
	int movable = j->type && (releasing || is_state(j, "Starting") ||
				  is_state(j, "Downloading") ||
				  is_state(j, "Training"));
	struct ctrl_sched_running *r;
	int64_t rt;

	for (i = 0; i < n; i++)
		p->hosts[idx[i]].held = !movable;
	if (!movable || !n) {
		free(idx);
		return;
	}
	r = &p->running[p->n_running];
	p->run_job[p->n_running++] = k;
	r->id = j->id;
	r->share = share_of(p, j);
	r->type = job_type(p, j);
	r->count = (int)n;
	r->hosts = idx;
	r->priority = j->priority;
	r->started_ms = j->started_ms;
	rt = max_runtime_s(p->ctx, j->name);
	r->ends_ms = rt > 0 && j->started_ms ? j->started_ms + rt * 1000 : 0;
	r->releasing = releasing;
}

static void wait_because(struct pass *p, const struct db_sched_job *j,
			 const char *fmt, const char *what)
{
	struct buf m = BUF_INIT;

	(void)buf_addf(&m, fmt, what);
	if ((j->message && !strcmp(j->message, m.data)) &&
	    (j->waiting || j->attempt)) {
		buf_release(&m);
		return;
	}
	p->w_names[p->n_wait] = j->name;
	p->w_msgs[p->n_wait++] = buf_detach(&m, NULL);
}

/*
 * A queued job the decision may start. A DISABLED queue or quota share
 * takes no new jobs (SubmitServiceJob refuses them); those it holds still
 * run, as on AWS Batch.
 */
static void add_queued(struct pass *p, size_t k)
{
	struct db_sched_job *j = &p->jobs[k];
	struct ctrl_sched_queued *q;

	q = &p->queued[p->n_queued];
	p->q_job[p->n_queued++] = k;
	q->id = j->id;
	q->share = share_of(p, j);
	q->type = job_type(p, j);
	q->count = j->count;
	q->priority = j->priority;
	q->seq = j->id;
	q->max_runtime_s = max_runtime_s(p->ctx, j->name);
	q->claimed = p->ctx->sched->n_claims &&
		     claimed(p->ctx->sched, j->name);
}

/* Whether job j waits for hosts: queued, or queued again (preempted). */
static int is_queued(const struct db_sched_job *j)
{
	return !strcmp(j->status, "InProgress") && !j->hosts && j->type &&
	       (j->attempt == 0 || is_state(j, "Starting"));
}

/* Instance-seconds of count hosts from max(from, since) to to. */
static double used_s(int count, int64_t from, int64_t since, int64_t to)
{
	int64_t a = from > since ? from : since;

	return to > a ? (double)(to - a) / 1000.0 * count : 0;
}

/* Charges the attempts that ended since the last pass to their shares. */
static void account_ended(struct pass *p, int64_t since)
{
	struct db_sched_job *v = NULL;
	struct buf err = BUF_INIT, key = BUF_INIT;
	size_t n = 0, i;
	int64_t decay_s;

	if (db_sched_ended(p->ctx->db, since, &v, &n, &err))
		log_error("scheduler: %s", err.data);
	for (i = 0; i < n; i++) {
		struct mem_entry *e;

		buf_reset(&key);
		share_key(&v[i], &key, &decay_s);
		e = mem_get(p->ctx->sched, key.data);
		e->decay_s = decay_s;
		e->usage += used_s(v[i].count, v[i].started_ms, since,
				   v[i].ended_ms);
	}
	db_sched_jobs_free(v, n);
	buf_release(&key);
	buf_release(&err);
}

/*
 * Instance-seconds of count hosts from `from` to `to`, each second
 * decayed to now with a half-life of decay_s (0: none), as the passes
 * between would have charged them.
 */
static double decayed_s(int count, int64_t from, int64_t to, int64_t now,
			int64_t decay_s)
{
	double t = (double)decay_s;

	if (to <= from)
		return 0;
	if (decay_s <= 0)
		return (double)(to - from) / 1000.0 * count;
	return count * t / M_LN2 *
	       (pow(0.5, (double)(now - to) / 1000.0 / t) -
		pow(0.5, (double)(now - from) / 1000.0 / t));
}

/*
 * The first pass of a controller (a restart): usage is rebuilt from the
 * store, the attempts that ended in the last HISTORY_MS and the running
 * ones, decayed to now, so that a restart does not make every share
 * even again.
 */
#define HISTORY_MS (7LL * CTRL_SCHED_DEFAULT_DECAY_S * 1000)

static void account_history(struct pass *p)
{
	struct ctrl_sched_mem *m = p->ctx->sched;
	struct db_sched_job *v = NULL;
	struct buf err = BUF_INIT, key = BUF_INIT;
	size_t n = 0, i;
	int64_t decay_s;

	if (db_sched_ended(p->ctx->db, p->now - HISTORY_MS, &v, &n, &err))
		log_error("scheduler: %s", err.data);
	for (i = 0; i < n; i++) {
		struct mem_entry *e;

		buf_reset(&key);
		share_key(&v[i], &key, &decay_s);
		e = mem_get(m, key.data);
		e->decay_s = decay_s;
		e->usage += decayed_s(v[i].count, v[i].started_ms,
				      v[i].ended_ms, p->now, decay_s);
	}
	for (i = 0; i < p->n_running; i++) {
		struct mem_entry *e = &m->v[p->share_mem[p->running[i].share]];

		if (!p->running[i].releasing)
			e->usage += decayed_s(p->running[i].count,
					      p->running[i].started_ms, p->now,
					      p->now, e->decay_s);
	}
	db_sched_jobs_free(v, n);
	buf_release(&key);
	buf_release(&err);
}

/*
 * Decays every share's usage to now and adds what was used since the
 * last pass: the running jobs' hosts since they started, and the
 * attempts that ended meanwhile.
 */
static void account(struct pass *p)
{
	struct ctrl_sched_mem *m = p->ctx->sched;
	double dt = m->last_ms ? (double)(p->now - m->last_ms) / 1000.0 : 0;
	size_t i;

	if (dt < 0)
		dt = 0;
	for (i = 0; i < m->n; i++)
		if (m->v[i].decay_s > 0)
			m->v[i].usage *=
				pow(0.5, dt / (double)m->v[i].decay_s);
	if (!m->last_ms)
		account_history(p);
	if (m->last_ms) {
		account_ended(p, m->last_ms);
		for (i = 0; i < p->n_running; i++)
			if (!p->running[i].releasing)
				m->v[p->share_mem[p->running[i].share]].usage +=
					used_s(p->running[i].count,
					       p->running[i].started_ms,
					       m->last_ms, p->now);
	}
	for (i = 0; i < p->n_shares; i++)
		p->shares[i].usage = m->v[p->share_mem[i]].usage;
	m->last_ms = p->now;
}

static void pass_release(struct pass *p)
{
	size_t i;

	for (i = 0; i < p->n_running; i++)
		free((void *)p->running[i].hosts);
	for (i = 0; i < p->n_shares; i++) {
		free((void *)p->shares[i].caps);
		free(p->share_keys[i]);
	}
	for (i = 0; i < p->n_wait; i++)
		free(p->w_msgs[i]);
	free(p->w_names);
	free(p->w_msgs);
	free(p->shares);
	free(p->share_keys);
	free(p->share_mem);
	free(p->running);
	free(p->run_job);
	free(p->queued);
	free(p->q_job);
	free(p->hosts);
	ctrl_sched_intern_release(&p->host_ids);
	ctrl_sched_intern_release(&p->share_ids);
	ctrl_sched_intern_release(&p->queue_ids);
	db_sched_jobs_free(p->jobs, p->n_jobs);
	db_sched_caps_free(p->caps, p->n_caps);
}

/* Reads the store and the hosts into p. Returns 0 or ERR_DB. */
static int gather(struct pass *p)
{
	struct ctrl_ctx *ctx = p->ctx;
	struct buf err = BUF_INIT;
	size_t i, hosts_seen = 0;

	if (db_sched_jobs(ctx->db, &p->jobs, &p->n_jobs, &err) ||
	    db_sched_caps(ctx->db, &p->caps, &p->n_caps, &err)) {
		log_error("scheduler: %s", err.data);
		buf_release(&err);
		return -1;
	}
	for (i = 0; i < p->n_jobs; i++)
		hosts_seen += (size_t)p->jobs[i].count;
	ctrl_sched_intern_init(&p->host_ids, ctx->n_hosts + hosts_seen + 1);
	ctrl_sched_intern_init(&p->share_ids, p->n_jobs + 1);
	ctrl_sched_intern_init(&p->queue_ids, p->n_jobs + 1);
	p->running = xcalloc(p->n_jobs + 1, sizeof(*p->running));
	p->run_job = xcalloc(p->n_jobs + 1, sizeof(*p->run_job));
	p->queued = xcalloc(p->n_jobs + 1, sizeof(*p->queued));
	p->q_job = xcalloc(p->n_jobs + 1, sizeof(*p->q_job));
	p->w_names = xcalloc(p->n_jobs + 1, sizeof(*p->w_names));
	p->w_msgs = xcalloc(p->n_jobs + 1, sizeof(*p->w_msgs));
	pthread_mutex_lock(&ctx->hosts_lock);
	read_hosts(p);
	pthread_mutex_unlock(&ctx->hosts_lock);
	for (i = 0; i < p->n_jobs; i++) {
		if (p->jobs[i].hosts)
			add_holder(p, i);
		else if (is_queued(&p->jobs[i]))
			add_queued(p, i);
	}
	account(p);
	buf_release(&err);
	return 0;
}

/* Hosts of type (or any, NUM_INSTANCES) in use by environment env. */
static int env_used(const struct pass *p, const char *env, const char *unit)
{
	size_t i;
	int n = 0;

	for (i = 0; i < p->n_running; i++) {
		const struct db_sched_job *j = &p->jobs[p->run_job[i]];

		if (j->env && !strcmp(j->env, env) && !p->running[i].releasing &&
		    (!strcmp(unit, "NUM_INSTANCES") ||
		     (j->type && !strcmp(j->type, unit))))
			n += p->running[i].count;
	}
	return n;
}

/*
 * Whether starting job j (count hosts) keeps its queue's service
 * environment within its capacity limits; started[]: hosts this pass
 * already started in that environment, by unit. Else *why says which.
 */
static int env_fits(struct pass *p, const struct db_sched_job *j,
		    struct buf *why)
{
	const struct db_sched_cap *c;
	size_t n, i, k;
	int extra;

	c = j->env ? cap_of(p, j->env, &n) : NULL;
	for (i = 0; c && i < n; i++) {
		if (strcmp(c[i].unit, "NUM_INSTANCES") &&
		    (!j->type || strcmp(c[i].unit, j->type)))
			continue;
		extra = 0;
		for (k = 0; k < p->n_queued; k++)
			if (p->queued[k].id < 0 &&
			    p->jobs[p->q_job[k]].env &&
			    !strcmp(p->jobs[p->q_job[k]].env, j->env) &&
			    (!strcmp(c[i].unit, "NUM_INSTANCES") ||
			     !strcmp(p->jobs[p->q_job[k]].type, c[i].unit)))
				extra += p->jobs[p->q_job[k]].count;
		if (env_used(p, j->env, c[i].unit) + extra + j->count >
		    c[i].max) {
			(void)buf_addf(why,
				       "Waiting: service environment %s is at "
				       "its capacity of %lld %s",
				       c[i].name, (long long)c[i].max,
				       c[i].unit);
			return 0;
		}
	}
	return 1;
}

static void apply_preempt(struct pass *p, const struct ctrl_sched_preempt *pr)
{
	const struct db_sched_job *v = &p->jobs[p->run_job[pr->job]];
	const struct db_sched_job *for_job = &p->jobs[p->q_job[pr->for_job]];
	const struct ctrl_sched_share *sh =
		&p->shares[p->queued[pr->for_job].share];
	struct buf why = BUF_INIT, err = BUF_INIT;
	int ret;

	if (p->running[pr->job].releasing)
		return;
	(void)buf_addf(&why, "queue %s, share %s is owed its hosts for job %s",
		       sh->queue, sh->name, for_job->name);
	if (v->preempt_limit >= 0 && v->preempted >= v->preempt_limit) {
		buf_reset(&why);
		(void)buf_addf(&why,
			       "Stopping: preempted for job %s more than "
			       "preemptionRetriesBeforeTermination (%d) "
			       "times",
			       for_job->name, v->preempt_limit);
		ret = ctrl_job_stop_with(p->ctx, v->name, why.data, &err);
	} else {
		ret = ctrl_job_preempt(p->ctx, v->name, why.data, &err);
	}
	if (ret)
		log_warn("scheduler: cannot preempt job '%s': %s", v->name,
			 err.data);
	else
		claim_add(p->ctx->sched, for_job->name,
			  p->now + p->ctx->cfg.grace_ms + CLAIM_SLACK_MS);
	buf_release(&why);
	buf_release(&err);
}

/* Carries the decision out: preemptions, starts, waiting messages. */
static void apply(struct pass *p, const struct ctrl_sched_out *o,
		  int *busy_valid)
{
	const char **names = NULL;
	struct buf why = BUF_INIT;
	size_t i, k;

	for (i = 0; i < o->n_preempts; i++)
		apply_preempt(p, &o->preempts[i]);
	for (i = 0; i < o->n_starts; i++) {
		const struct ctrl_sched_start *s = &o->starts[i];
		struct db_sched_job *j = &p->jobs[p->q_job[s->job]];

		buf_reset(&why);
		if (!env_fits(p, j, &why)) {
			wait_because(p, j, "%s", why.data);
			continue;
		}
		names = xrealloc(names, xmul((size_t)j->count, sizeof(*names)));
		for (k = 0; k < (size_t)j->count; k++)
			names[k] = p->hosts[s->hosts[k]].name;
		ctrl_job_place(p->ctx, j->name, names, (size_t)j->count,
			       busy_valid);
		claims_drop(p->ctx->sched, j->name, p->now);
		/* counted against its environment for the starts after it */
		p->queued[s->job].id = -1;
	}
	for (i = 0; i < p->n_queued; i++) {
		const struct db_sched_job *j = &p->jobs[p->q_job[i]];

		if (o->why[i])
			wait_because(p, j, "%s", o->why[i]);
	}
	free(names);
	buf_release(&why);
}

/* The queues view of this pass (view.h), once the starts are made. */
static void record_view(const struct pass *p, const struct ctrl_sched_in *in,
			const struct ctrl_sched_out *out)
{
	struct ctrl_sched_view_job *q = xcalloc(p->n_queued + 1, sizeof(*q));
	struct ctrl_sched_view_job *r = xcalloc(p->n_running + 1, sizeof(*r));
	size_t i;

	for (i = 0; i < p->n_queued; i++) {
		q[i].name = p->jobs[p->q_job[i]].name;
		q[i].owner = p->jobs[p->q_job[i]].owner;
		q[i].placed = p->queued[i].id == -1; /* apply() started it */
	}
	for (i = 0; i < p->n_running; i++) {
		r[i].name = p->jobs[p->run_job[i]].name;
		r[i].owner = p->jobs[p->run_job[i]].owner;
	}
	ctrl_sched_view_record(in, out, q, r);
	free(q);
	free(r);
}

/* Whether a host could take work now. */
static int any_free(struct ctrl_ctx *ctx)
{
	size_t i;
	int yes = 0;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts && !yes; i++)
		yes = ctrl_place_host_usable(ctx->hosts[i]) &&
		      !ctx->hosts[i]->busy;
	pthread_mutex_unlock(&ctx->hosts_lock);
	return yes;
}

static struct ctrl_sched_mem *mem_of(struct ctrl_ctx *ctx)
{
	if (!ctx->sched) {
		ctx->sched = xcalloc(1, sizeof(*ctx->sched));
		ctx->sched->quota = 1; /* not known yet */
	}
	return ctx->sched;
}

/*
 * Whether a pass is worth its read of every unfinished job now: hosts
 * were freed, or the read is short. With more than CTRL_SCHED_LONG_QUEUE
 * unfinished jobs, passes are at least CTRL_SCHED_PASS_GAP_MS apart, and
 * twice as long apart as the last one took (hosts freed or not), so that
 * they take at most a third of a core from the API; then a pass runs when
 * hosts were freed, a host is free, quota shares may preempt, or the
 * messages are due a refresh.
 */
static int worth_it(struct ctrl_ctx *ctx, int64_t now, int freed)
{
	struct ctrl_sched_mem *m = mem_of(ctx);
	int64_t since = now - m->pass_ms, gap = CTRL_SCHED_PASS_GAP_MS;

	if (now < m->pass_ms || m->last_jobs <= CTRL_SCHED_LONG_QUEUE)
		return 1;
	if (gap < 2 * m->took_ms)
		gap = 2 * m->took_ms;
	if (since < gap)
		return 0;
	return freed || any_free(ctx) || m->quota ||
	       since >= CTRL_SCHED_REFRESH_MS;
}

void ctrl_sched_note_wait(struct ctrl_ctx *ctx, const char *name,
			  const char *message)
{
	struct ctrl_sched_mem *m = mem_of(ctx);

	strvec_push(&m->note_names, name);
	strvec_push(&m->note_msgs, message);
}

/* Writes the notes of jobs that arrived while no pass ran. */
static void flush_notes(struct ctrl_ctx *ctx)
{
	struct ctrl_sched_mem *m = mem_of(ctx);
	struct buf err = BUF_INIT;

	if (m->note_names.n &&
	    db_jobs_set_waiting(ctx->db, (const char *const *)m->note_names.v,
				(const char *const *)m->note_msgs.v,
				m->note_names.n, &err))
		log_error("scheduler: %s", err.data);
	strvec_release(&m->note_names);
	strvec_release(&m->note_msgs);
	buf_release(&err);
}

int ctrl_sched_pass(struct ctrl_ctx *ctx, int *busy_valid, int freed)
{
	struct ctrl_sched_out out;
	struct ctrl_sched_in in;
	struct buf err = BUF_INIT;
	struct pass p;
	int64_t t0, t1;
	size_t i;

	memset(&p, 0, sizeof(p));
	p.ctx = ctx;
	p.now = time_now_ms();
	ctrl_place_busy_refresh(ctx, busy_valid);
	if (!worth_it(ctx, p.now, freed)) {
		flush_notes(ctx);
		return 0;
	}
	flush_notes(ctx);
	ctx->sched->pass_ms = p.now;
	claims_drop(ctx->sched, NULL, p.now);
	t0 = time_mono_us();
	if (gather(&p)) {
		pass_release(&p);
		return 1;
	}
	memset(&in, 0, sizeof(in));
	in.hosts = p.hosts;
	in.n_hosts = p.n_hosts;
	in.shares = p.shares;
	in.n_shares = p.n_shares;
	in.running = p.running;
	in.n_running = p.n_running;
	in.queued = p.queued;
	in.n_queued = p.n_queued;
	in.now_ms = p.now;
	in.min_run_ms = CTRL_SCHED_MIN_RUN_MS;
	in.start_charge_s = START_CHARGE_S;
	ctx->sched->last_jobs = p.n_jobs;
	ctx->sched->quota = 0;
	for (i = 0; i < p.n_caps; i++)
		ctx->sched->quota |= !strcmp(p.caps[i].kind, "quota-share");
	t1 = time_mono_us();
	ctrl_sched_decide(&in, &out);
	t1 = time_mono_us() - t1;
	ctrl_sched_stats_shares(&in, &out);
	apply(&p, &out, busy_valid);
	record_view(&p, &in, &out);
	if (p.n_wait &&
	    db_jobs_set_waiting(ctx->db, p.w_names,
				(const char *const *)p.w_msgs, p.n_wait, &err))
		log_error("scheduler: %s", err.data);
	ctrl_sched_out_release(&out, in.n_queued);
	pass_release(&p);
	buf_release(&err);
	t0 = time_mono_us() - t0;
	ctx->sched->took_ms = t0 / 1000;
	ctrl_sched_stats_pass(t0, t1);
	return 1;
}

int ctrl_sched_owns(const struct api_job_spec *spec)
{
	return spec && !spec->n_groups && spec->instance_type;
}
