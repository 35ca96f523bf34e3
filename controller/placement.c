#define LOG_TAG "ctrl"

#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "api/job_spec.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/images.h"
#include "controller/iopool.h"
#include "controller/jobrt.h"
#include "controller/placement.h"
#include "controller/quarantine.h"
#include "db/db.h"
#include "db/run.h"
#include "db/warmpool.h"
#include "common/err.h"
#include "common/log.h"
#include "common/netutil.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * Placement: which hosts are free (busy marks from the store, once per
 * pass), which a job gets, on which ports, and the replacements for the
 * lost or drained hosts of a restarting job. controller/jobrun.c decides
 * when; this file decides where.
 */

/*
 * Hosts that hold any assignment are busy: marks each host from the list
 * of busy hosts just read, once per read instead of a walk of every
 * assignment for every host looked at.
 */
static void mark_busy(struct ctrl_ctx *ctx, char *const *busy, size_t n,
		      const struct db_warm_pool *pools, size_t n_pools)
{
	size_t i, k;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		ctx->hosts[i]->busy = 0;
		ctx->hosts[i]->warm = 0;
	}
	for (i = 0; i < n; i++) {
		struct ctrl_host *h = ctrl_hosts_find(ctx, busy[i]);

		if (h)
			h->busy = 1;
	}
	/* Hosts an Available warm pool holds are busy for everyone but a
	 * job that matches it (ctrl_place_job()). */
	for (i = 0; i < n_pools; i++)
		for (k = 0; k < pools[i].n_hosts; k++) {
			struct ctrl_host *h =
				ctrl_hosts_find(ctx, pools[i].hosts[k]);

			if (h && !h->busy) {
				h->busy = 1;
				h->warm = 1;
			}
		}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

/*
 * Makes the hosts' busy marks current, unless *valid says they are (a
 * pass reads the assignments only when it is about to pick hosts).
 */
void ctrl_place_busy_refresh(struct ctrl_ctx *ctx, int *valid)
{
	struct buf err = BUF_INIT;
	struct db_warm_pool *pools = NULL;
	char **busy = NULL;
	size_t i, n = 0, n_pools = 0;

	if (*valid)
		return;
	if (db_assignment_hosts(ctx->db, &busy, &n, &err) ||
	    db_warm_pools_available(ctx->db, &pools, &n_pools, &err))
		log_error("reconciler: %s", err.data);
	else
		*valid = 1;
	mark_busy(ctx, busy, n, pools, n_pools);
	for (i = 0; i < n; i++)
		free(busy[i]);
	free(busy);
	db_warm_pools_free(pools, n_pools);
	buf_release(&err);
}

/* The hosts of a new attempt are busy from now on. */
static void set_busy(struct ctrl_ctx *ctx, const char **hosts, size_t n)
{
	size_t i;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < n; i++) {
		struct ctrl_host *h =
			hosts[i] ? ctrl_hosts_find(ctx, hosts[i]) : NULL;

		if (h)
			h->busy = 1;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

/* Whether a host of the attempt is drained (it may have to move). */
int ctrl_place_any_drained(struct ctrl_ctx *ctx, const struct db_assignment *as,
			   size_t n)
{
	size_t i;
	int d = 0;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < n && !d; i++) {
		const struct ctrl_host *h = ctrl_hosts_find(ctx, as[i].host);

		d = h && h->drained;
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	return d;
}

/*
 * The attempt's ports: `count` consecutive ports from a fresh random base
 * each attempt (MASTER_PORT is the first; parameter servers use two per
 * host). They come from below the kernel's ephemeral range (32768 and up
 * on Linux), so outgoing connections never happen to take them, and are
 * checked free here; hosts with their own network check again as they
 * start (the agent of algo-1 refuses a port it cannot bind).
 */
int ctrl_place_ports(int count)
{
	unsigned char r[2];
	int tries, base = 0, k;

	if (count < 1)
		count = 1;
	for (tries = 0; tries < 16; tries++) {
		if (RAND_bytes(r, sizeof(r)) != 1)
			break;
		base = 20000 + (int)((r[0] << 8 | r[1]) % (12000 - count));
		for (k = 0; k < count && net_port_bindable(base + k) == 1; k++)
			;
		if (k == count)
			return base;
	}
	return base ? base : 29500;
}

static int job_instance_count(const struct api_job_spec *spec)
{
	size_t i;
	int n = spec->instance_count;

	for (i = 0; i < spec->n_groups; i++)
		n += spec->groups[i].count;
	return n;
}

/* Local hosts serve any instance type; inventory hosts their own. */
static int host_fits(const struct ctrl_host *h, const char *type)
{
	return !h->instance_type || !strcmp(h->instance_type, type);
}

int ctrl_place_host_live(const struct ctrl_host *h)
{
	return h->registered && !h->lost && !h->removed;
}

/* Live and not drained: it may take work. */
int ctrl_place_host_usable(const struct ctrl_host *h)
{
	return ctrl_place_host_live(h) && !h->drained;
}

/* Usable, of type (NULL: any) and holding no assignment (mark_busy()). */
static int host_free(const struct ctrl_host *h, const char *type)
{
	return ctrl_place_host_usable(h) && (!type || host_fits(h, type)) &&
	       !h->busy;
}

/*
 * The first free host of type from ctx->hosts[*from] on that is not among
 * chosen[0..n) (entries may be NULL), or NULL; *from moves past it.
 * Caller holds hosts_lock.
 */
const char *ctrl_place_pick_free(struct ctrl_ctx *ctx, const char *type,
				 size_t *from, const char **chosen, size_t n)
{
	size_t i, c;

	for (i = *from; i < ctx->n_hosts; i++) {
		const struct ctrl_host *h = ctx->hosts[i];
		int taken = 0;

		if (!host_free(h, type))
			continue;
		for (c = 0; c < n && !taken; c++)
			taken = chosen[c] && !strcmp(chosen[c], h->name);
		if (!taken) {
			*from = i + 1;
			return h->name;
		}
	}
	*from = ctx->n_hosts;
	return NULL;
}

/*
 * Picks free, live hosts for every instance of spec (group after group),
 * in inventory order. Returns how many were found; when not all, msg says
 * what the job waits for. Caller holds hosts_lock.
 */
static size_t choose_hosts(struct ctrl_ctx *ctx,
			   const struct api_job_spec *spec, const char **chosen,
			   struct buf *msg)
{
	size_t groups = spec->n_groups ? spec->n_groups : 1;
	size_t g, k = 0;

	for (g = 0; g < groups; g++) {
		const char *type = spec->n_groups ?
					   spec->groups[g].instance_type :
					   spec->instance_type;
		int want = spec->n_groups ? spec->groups[g].count :
					    spec->instance_count;
		int got = 0;
		size_t from = 0;

		while (got < want) {
			const char *h = ctrl_place_pick_free(ctx, type, &from,
							     chosen, k);

			if (!h)
				break;
			chosen[k++] = h;
			got++;
		}
		if (got < want) {
			struct ctrl_wait_holders why;

			ctrl_wait_holders_count(ctx, type, &why);
			ctrl_wait_message_why(msg, want, type, got, &why);
			return k;
		}
	}
	return k;
}

void ctrl_wait_message(struct buf *b, int want, const char *type, int free)
{
	ctrl_wait_message_why(b, want, type, free, NULL);
}

void ctrl_wait_holders_count(struct ctrl_ctx *ctx, const char *type,
			     struct ctrl_wait_holders *w)
{
	size_t i;

	memset(w, 0, sizeof(*w));
	for (i = 0; i < ctx->n_hosts; i++) {
		const struct ctrl_host *h = ctx->hosts[i];

		if (h->removed || (type && !host_fits(h, type)))
			continue;
		w->hosts++;
		if (!ctrl_place_host_live(h))
			w->down++;
		else if (h->drained && h->drain_reason &&
			 !strncmp(h->drain_reason, "quarantined", 11))
			w->quarantined++;
		else if (h->drained)
			w->drained++;
		else if (h->warm)
			w->warm++;
		else if (h->busy)
			w->busy++;
	}
}

/* "; hosts held: " before the first part that is not 0, ", " before the
 * others (the scheduler's wording, controller/sched/decide.h). */
static void held_part(struct buf *b, int *n, int h, const char *what)
{
	if (h <= 0)
		return;
	(void)buf_addf(b, "%s%d %s", *n ? ", " : "; hosts held: ", h, what);
	(*n)++;
}

void ctrl_wait_message_why(struct buf *b, int want, const char *type, int free,
			   const struct ctrl_wait_holders *w)
{
	int n = 0;

	(void)buf_addf(b, "Waiting for %d free host%s of type %s (%d free now)",
		       want, want == 1 ? "" : "s", type, free);
	if (!w)
		return;
	if (!w->hosts) {
		(void)buf_adds(b, "; no host serves this type");
		return;
	}
	held_part(b, &n, w->busy, "by other jobs");
	held_part(b, &n, w->warm, "by a warm pool");
	held_part(b, &n, w->drained, "drained");
	held_part(b, &n, w->quarantined, "quarantined");
	held_part(b, &n, w->down, "not responding");
}

/* A pin of a job's image, on an I/O worker (registry.h). */
struct pin_step {
	struct ctrl_ctx *ctx;
	char *job;
	char *image;
};

static void pin_run(void *arg)
{
	struct pin_step *p = arg;
	struct ctrl_ctx *ctx = p->ctx;
	struct ctrl_jobrt *rt;
	struct buf err = BUF_INIT;
	char *pinned = NULL;
	int ret, db_ret;

	ret = ctrl_registry_pin(&ctx->registry, p->image, &pinned, &err);
	/* A job deleted meanwhile has nothing to record it in. */
	if (!ret &&
	    (db_ret = db_job_set_image(ctx->db, p->job, pinned, &err)) &&
	    db_ret != ERR_NOTFOUND)
		log_error("job '%s': cannot record its image: %s", p->job,
			  err.data);
	if (ret)
		log_info("job '%s': %s", p->job, err.data);
	else
		log_info("job '%s': image %s is %s", p->job, p->image, pinned);
	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_find(ctx, p->job);
	if (rt) {
		rt->pinning = 0;
		if (ret) {
			free(rt->pin_error);
			rt->pin_error = buf_detach(&err, NULL);
		} else {
			free(rt->image);
			rt->image = pinned;
			pinned = NULL;
		}
	}
	pthread_mutex_unlock(&ctx->jobs_lock);
	ctrl_reconciler_wake_job(ctx, p->job);
	free(pinned);
	buf_release(&err);
	free(p->job);
	free(p->image);
	free(p);
}

/*
 * The job's image is not pinned yet: a pin that failed is the job's
 * failure (-1, err set); else one is started unless it runs (1: the job
 * waits for it). Caller holds jobs_lock.
 */
static int pin_image(struct ctrl_ctx *ctx, struct ctrl_jobrt *rt,
		     const char *image, struct buf *err)
{
	struct pin_step *p;

	if (rt->pin_error) {
		(void)buf_adds(err, rt->pin_error);
		return -1;
	}
	if (rt->pinning)
		return 1;
	rt->pinning = 1;
	p = xcalloc(1, sizeof(*p));
	p->ctx = ctx;
	p->job = xstrdup(rt->name);
	p->image = xstrdup(image);
	if (ctrl_iopool_run(ctx->iopool, NULL, pin_run, p)) {
		/* No workers (stopping): it waits for the next start. */
		rt->pinning = 0;
		free(p->job);
		free(p->image);
		free(p);
	}
	return 1;
}

/*
 * The Available pool job (with job's key, wp_key) may reuse now: the
 * oldest whose hosts number need and are all usable. Fills chosen[0..need)
 * with its hosts (names valid while the controller runs) and returns its
 * job's name (caller frees), or NULL. pools[0..n): the Available pools
 * (db_warm_pools_available()). Caller holds hosts_lock.
 */
static char *warm_pool_pick(struct ctrl_ctx *ctx,
			    const struct db_warm_pool *pools, size_t n,
			    const char *key, size_t need, const char **chosen)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		const struct db_warm_pool *p = &pools[i];

		if (strcmp(p->key, key) || p->n_hosts != need)
			continue;
		for (k = 0; k < need; k++) {
			const struct ctrl_host *h =
				ctrl_hosts_find(ctx, p->hosts[k]);

			if (!h || !ctrl_place_host_usable(h))
				break;
			chosen[k] = h->name;
		}
		if (k == need)
			return xstrdup(p->job);
	}
	return NULL;
}

/*
 * The hosts the scheduler chose, want[0..need), when each is still free
 * and serves the job's type: copied to chosen (names valid while the
 * controller runs). Returns how many were taken (need or 0). Caller holds
 * hosts_lock.
 */
static size_t take_wanted(struct ctrl_ctx *ctx, const char *type,
			  const char *const *want, size_t need,
			  const char **chosen, struct buf *msg)
{
	size_t i;

	for (i = 0; i < need; i++) {
		const struct ctrl_host *h = ctrl_hosts_find(ctx, want[i]);

		if (!h || !host_free(h, type)) {
			(void)buf_addf(msg,
				       "Waiting for hosts: %s was taken "
				       "before the job could start",
				       want[i]);
			return 0;
		}
		chosen[i] = h->name;
	}
	return need;
}

/* What a placement found, in one hold of jobs_lock. */
struct pick {
	const char *const *want; /* the scheduler's choice, or NULL */
	const char **chosen; /* need entries */
	size_t k;	     /* how many were found */
	char *reuse;	     /* the warm pool taken (its job's name), or NULL */
	int pinning;	     /* > 0: it waits for its image's pin */
	int bad_image;	     /* its image cannot run: err says why */
};

/*
 * Hosts for job (a warm pool's when one of pools matches, else free
 * ones) and, when all were found, its image: resolved, or a pin started.
 * When not all were found msg says what the job waits for. Caller holds
 * jobs_lock.
 */
static void pick(struct ctrl_ctx *ctx, struct ctrl_jobrt *rt,
		 const struct db_job *job, struct db_warm_pool *pools,
		 size_t n_pools, size_t need, struct pick *p, struct buf *msg,
		 struct buf *err)
{
	struct ctrl_launch launch;

	pthread_mutex_lock(&ctx->hosts_lock);
	if (n_pools)
		p->reuse = warm_pool_pick(ctx, pools, n_pools, job->wp_key,
					  need, p->chosen);
	if (p->reuse)
		p->k = need;
	else if (p->want)
		p->k = take_wanted(ctx, rt->spec.instance_type, p->want, need,
				   p->chosen, msg);
	else
		p->k = choose_hosts(ctx, &rt->spec, p->chosen, msg);
	pthread_mutex_unlock(&ctx->hosts_lock);
	if (p->k < need)
		return;
	p->bad_image = ctrl_image_resolve(&ctx->registry, rt, &launch, err);
	if (!p->bad_image) {
		if (launch.mode == API_LAUNCH_CONTAINER && !launch.image)
			p->pinning = pin_image(ctx, rt, launch.want, err);
		p->bad_image = p->pinning < 0;
		ctrl_launch_release(&launch);
	}
}

/* Starts job's next attempt on the hosts chosen (reuse: a warm pool's). */
static void start_attempt(struct ctrl_ctx *ctx, const struct db_job *job,
			  const char **chosen, int need, const char *reuse,
			  int *busy_valid, struct buf *err)
{
	int ports = ctrl_place_ports(2 * need + 2);
	int i, ret;

	if (reuse)
		ret = db_attempt_start_warm(ctx->db, job->name,
					    job->attempt + 1, ports, chosen,
					    (size_t)need, time_now_ms(), reuse,
					    err);
	else
		ret = db_attempt_start(ctx->db, job->name, job->attempt + 1,
				       ports, chosen, (size_t)need,
				       time_now_ms(), err);
	if (ret == ERR_CONFLICT && reuse) {
		/* The pool was taken or ended meanwhile: the next pass
		 * looks again. */
		log_info("job '%s': warm pool of '%s' is gone", job->name,
			 reuse);
		*busy_valid = 0;
		return;
	}
	if (ret) {
		log_error("job '%s': cannot start attempt: %s", job->name,
			  err->data);
		return;
	}
	if (reuse) {
		log_info("job '%s': attempt %d on %d host%s of the warm pool "
			 "of '%s'",
			 job->name, job->attempt + 1, need,
			 need == 1 ? "" : "s", reuse);
		ctrl_jobs_changed(ctx);
	} else {
		log_info("job '%s': attempt %d on %d host%s", job->name,
			 job->attempt + 1, need, need == 1 ? "" : "s");
	}
	set_busy(ctx, chosen, (size_t)need);
	for (i = 0; i < need; i++)
		ctrl_hosts_bump(ctx, chosen[i]);
}

int ctrl_place_job(struct ctrl_ctx *ctx, const struct db_job *job,
		   int *busy_valid, struct buf *fail)
{
	return ctrl_place_job_on(ctx, job, NULL, 0, busy_valid, fail);
}

int ctrl_place_job_on(struct ctrl_ctx *ctx, const struct db_job *job,
		      const char *const *hosts, size_t n_hosts,
		      int *busy_valid, struct buf *fail)
{
	struct ctrl_jobrt *rt;
	struct pick p;
	struct buf err = BUF_INIT;
	struct buf msg = BUF_INIT;
	struct db_warm_pool *pools = NULL;
	size_t n_pools = 0;
	int keep_queued;
	int failed = 0;
	int need;

	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	need = rt ? job_instance_count(&rt->spec) : 0;
	pthread_mutex_unlock(&ctx->jobs_lock);
	if (need < 1 || (hosts && n_hosts != (size_t)need))
		return 0;
	memset(&p, 0, sizeof(p));
	p.want = hosts;
	p.chosen = xcalloc((size_t)need, sizeof(*p.chosen));
	ctrl_place_busy_refresh(ctx, busy_valid);
	/* A job that asks for a keep-alive period may take the hosts of an
	 * Available warm pool made for its like, and starts at once. */
	if (!hosts && job->attempt == 0 && job->wp_key && job->wp_status &&
	    !strcmp(job->wp_status, "InUse") &&
	    db_warm_pools_available(ctx->db, &pools, &n_pools, &err))
		log_error("job '%s': %s", job->name, err.data);
	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	if (rt)
		pick(ctx, rt, job, pools, n_pools, (size_t)need, &p, &msg,
		     &err);
	keep_queued = ctrl_jobrt_count(ctx) <= CTRL_JOBRT_QUEUED_MAX;
	pthread_mutex_unlock(&ctx->jobs_lock);
	if (p.k < (size_t)need) {
		const char *nm = job->name;
		const char *mm = msg.data;

		(void)db_jobs_set_waiting(ctx->db, &nm, &mm, 1, &err);
		if (!keep_queued)
			ctrl_jobrt_drop(ctx, job->name);
	} else if (p.pinning > 0) {
		/* Placed once its image is pinned. */
	} else if (p.bad_image) {
		/* As SageMaker does with an image it cannot pull: the job
		 * was accepted and fails as it starts. */
		(void)buf_addf(fail, "ClientError: %s", err.data);
		failed = 1;
	} else {
		start_attempt(ctx, job, p.chosen, need, p.reuse, busy_valid,
			      &err);
	}
	free(p.chosen);
	free(p.reuse);
	db_warm_pools_free(pools, n_pools);
	buf_release(&err);
	buf_release(&msg);
	return failed;
}

/* The instance type of algo-(index+1), group after group. */
const char *ctrl_place_type_of_index(const struct api_job_spec *spec, int index)
{
	size_t g;
	int k = 0;

	if (!spec->n_groups)
		return spec->instance_type;
	for (g = 0; g < spec->n_groups; g++) {
		k += spec->groups[g].count;
		if (index < k)
			return spec->groups[g].instance_type;
	}
	return spec->groups[spec->n_groups - 1].instance_type;
}

const char *ctrl_place_spare(struct ctrl_ctx *ctx, const struct ctrl_jobrt *rt,
			     int index, const char **chosen, size_t n)
{
	const char *type = rt ? ctrl_place_type_of_index(&rt->spec, index) :
				NULL;
	size_t from = 0;

	return type ? ctrl_place_pick_free(ctx, type, &from, chosen, n) : NULL;
}

/* Why algo-N leaves host h, for the log. */
static const char *why_moved(const struct ctrl_host *h, int suspect)
{
	if (h && h->drained)
		return "drained";
	return suspect ? "suspected" : "lost";
}

size_t ctrl_place_replacements(struct ctrl_ctx *ctx, const struct db_job *job,
			       const struct db_assignment *as, size_t n,
			       size_t slots, const char *suspect,
			       const char **chosen)
{
	struct ctrl_jobrt *rt;
	size_t i, missing = 0;

	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job->name);
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < n; i++) {
		struct ctrl_host *h = ctrl_hosts_find(ctx, as[i].host);
		int suspected = suspect && !strcmp(as[i].host, suspect);
		int index = as[i].host_index;

		if ((size_t)index >= slots)
			continue;
		if (h && ctrl_place_host_usable(h) && !suspected) {
			chosen[index] = h->name;
			continue;
		}
		chosen[index] = ctrl_place_spare(ctx, rt, index, chosen, slots);
		if (chosen[index])
			log_info("job '%s': algo-%d moves from %s host '%s' "
				 "to '%s'",
				 job->name, index + 1, why_moved(h, suspected),
				 as[i].host, chosen[index]);
		else if (h && ctrl_place_host_live(h) &&
			 !ctrl_quarantine_is(h->drain_reason))
			/* Drained or suspected, and no spare is free: back
			 * on it rather than failing a job that did nothing
			 * wrong. A quarantined host is not taken back. */
			chosen[index] = h->name;
	}
	/* The places an elastic job's smaller attempt left empty. */
	for (i = n; i < slots; i++)
		if (!chosen[i])
			chosen[i] = ctrl_place_spare(ctx, rt, (int)i, chosen,
						     slots);
	/* The chosen names stay valid: hosts are never freed while the
	 * controller runs. */
	pthread_mutex_unlock(&ctx->hosts_lock);
	pthread_mutex_unlock(&ctx->jobs_lock);
	for (i = 0; i < slots; i++)
		missing += !chosen[i];
	return missing;
}

/* Free live hosts that can serve type, given the current assignments. */
int ctrl_place_free_count(struct ctrl_ctx *ctx, const char *type)
{
	size_t i;
	int n = 0;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		const struct ctrl_host *h = ctx->hosts[i];

		n += host_free(h, type);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	return n;
}

/* Queued jobs looked at per pass, per kind of free host. */
#define QUEUE_LOOK 64

/*
 * Which queued jobs are worth a look: those of every instance type with a
 * free host (copied into *types, to free with ctrl_place_free_types()), of any
 * type when a free host serves every type. Returns whether any host is free.
 */
int ctrl_place_free_kinds(struct ctrl_ctx *ctx, struct db_queue_look *look,
			  char ***types)
{
	size_t i, k, n = 0;

	memset(look, 0, sizeof(*look));
	*types = NULL;
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		const struct ctrl_host *h = ctx->hosts[i];
		int seen = 0;

		/* A warm pool's hosts count: a queued job may match it. */
		if (!host_free(h, NULL) &&
		    !(h->warm && ctrl_place_host_usable(h)))
			continue;
		if (!h->instance_type) {
			look->any_type = 1;
			continue;
		}
		for (k = 0; k < n && !seen; k++)
			seen = !strcmp((*types)[k], h->instance_type);
		if (seen)
			continue;
		*types = xrealloc(*types, (n + 1) * sizeof(**types));
		(*types)[n++] = xstrdup(h->instance_type);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	look->types = (const char *const *)*types;
	look->n_types = n;
	look->per = QUEUE_LOOK;
	return look->any_type || n;
}

void ctrl_place_free_types(char **types, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(types[i]);
	free(types);
}
