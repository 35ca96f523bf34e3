#define LOG_TAG "rdzv"

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctrl.h"
#include "controller/files.h"
#include "controller/jobrt.h"
#include "controller/rendezvous.h"
#include "controller/route.h"
#include "db/db.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

struct rdzv_entry {
	char *key;
	char *value;
	size_t len;
	struct rdzv_entry *next;
};

/* The values of one attempt of one job, and what they cost. */
struct rdzv_attempt {
	char *job;
	int attempt;
	size_t bytes; /* of its keys and values */
	size_t keys;
	struct rdzv_entry *entries;
	struct rdzv_attempt *next;
};

/* Attempts up to attempt of a job (its uid) ended: their tokens are dead. */
struct rdzv_ended {
	char *job;
	char *uid;
	int attempt;
	struct rdzv_ended *next;
};

/* Ended jobs remembered, newest first: a bound on memory. */
#define RDZV_MAX_ENDED 4096

struct rdzv_waiter {
	struct MHD_Connection *conn;
	int *resumed;
	int64_t deadline_ms;
	char *job;
	int attempt;
	char *key;
	struct rdzv_waiter *next;
};

/* Everything below is guarded by ctx->hosts_lock. */
struct ctrl_rdzv {
	unsigned char secret[32];
	struct rdzv_attempt *attempts;
	struct rdzv_waiter *waiters;
	struct rdzv_ended *ended;
	size_t bytes; /* of every key and value held */
	/* Budgets (--rdzv-attempt-bytes, --rdzv-attempt-keys and
	 * --rdzv-total-bytes): one attempt's keys and values, and all of
	 * them, a bound on memory that one attempt cannot use up. */
	size_t attempt_bytes;
	size_t attempt_keys;
	size_t total_bytes;
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int ctrl_rdzv_init(struct ctrl_ctx *ctx, struct buf *err)
{
	struct ctrl_rdzv *r = xcalloc(1, sizeof(*r));
	struct buf path = BUF_INIT;
	char *hex;
	size_t i;
	int existed;

	/* In the store: every member of a replicated controller signs the
	 * ranks' tokens with the same key. */
	(void)buf_addf(&path, "%s/rendezvous.key", ctx->cfg.state_dir);
	hex = ctrl_secret(ctx, "rendezvous-key", path.data, 32, &existed);
	buf_release(&path);
	if (!hex) {
		(void)buf_adds(err, "cannot keep the rendezvous key in the "
				    "store");
		free(r);
		return ERR_DB;
	}
	for (i = 0; i < 32; i++)
		r->secret[i] = (unsigned char)(hexval(hex[2 * i]) << 4 |
					       hexval(hex[2 * i + 1]));
	OPENSSL_cleanse(hex, strlen(hex));
	free(hex);
	r->attempt_bytes = (size_t)ctx->cfg.rdzv_attempt_bytes;
	r->attempt_keys = (size_t)ctx->cfg.rdzv_attempt_keys;
	r->total_bytes = (size_t)ctx->cfg.rdzv_total_bytes;
	ctx->rdzv = r;
	return 0;
}

static void entry_free(struct rdzv_entry *e)
{
	free(e->key);
	free(e->value);
	free(e);
}

static void attempt_free(struct rdzv_attempt *a)
{
	while (a->entries) {
		struct rdzv_entry *e = a->entries;

		a->entries = e->next;
		entry_free(e);
	}
	free(a->job);
	free(a);
}

void ctrl_rdzv_release(struct ctrl_ctx *ctx)
{
	struct ctrl_rdzv *r = ctx->rdzv;

	if (!r)
		return;
	while (r->attempts) {
		struct rdzv_attempt *a = r->attempts;

		r->attempts = a->next;
		attempt_free(a);
	}
	while (r->ended) {
		struct rdzv_ended *x = r->ended;

		r->ended = x->next;
		free(x->job);
		free(x->uid);
		free(x);
	}
	OPENSSL_cleanse(r->secret, sizeof(r->secret));
	free(r);
	ctx->rdzv = NULL;
}

void ctrl_rdzv_token(const struct ctrl_ctx *ctx, const char *job,
		     const char *uid, int attempt, char out[65])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int n = 0, i;
	struct buf msg = BUF_INIT;

	(void)buf_addf(&msg, "%s/%d", job, attempt);
	if (uid)
		(void)buf_addf(&msg, "/%s", uid);
	if (!HMAC(EVP_sha256(), ctx->rdzv->secret, sizeof(ctx->rdzv->secret),
		  (const unsigned char *)msg.data, msg.len, mac, &n))
		BUG("HMAC failed");
	for (i = 0; i < 32 && i < n; i++)
		(void)snprintf(out + 2 * i, 3, "%02x", mac[i]);
	out[64] = '\0';
	buf_release(&msg);
}

/* Drops the attempts of job older than attempt (all of them for 0). */
static void drop_old(struct ctrl_rdzv *r, const char *job, int attempt)
{
	struct rdzv_attempt **pp = &r->attempts;

	while (*pp) {
		struct rdzv_attempt *a = *pp;

		if (!strcmp(a->job, job) &&
		    (!attempt || a->attempt < attempt)) {
			*pp = a->next;
			r->bytes -= a->bytes;
			attempt_free(a);
		} else {
			pp = &a->next;
		}
	}
}

/* The ended attempts of job (uid), or NULL. */
static struct rdzv_ended *find_ended(struct ctrl_rdzv *r, const char *job,
				     const char *uid)
{
	struct rdzv_ended *x;

	for (x = r->ended; x; x = x->next)
		if (!strcmp(x->job, job) && !strcmp(x->uid, uid ? uid : ""))
			return x;
	return NULL;
}

void ctrl_rdzv_forget(struct ctrl_ctx *ctx, const char *job, const char *uid,
		      int attempt)
{
	struct ctrl_rdzv *r = ctx->rdzv;
	struct rdzv_ended *x, **pp;
	size_t n = 0;

	if (!r)
		return;
	pthread_mutex_lock(&ctx->hosts_lock);
	/* Up to attempt: the next one may already have stored values. */
	drop_old(r, job, attempt + 1);
	x = find_ended(r, job, uid);
	if (!x) {
		x = xcalloc(1, sizeof(*x));
		x->job = xstrdup(job);
		x->uid = xstrdup(uid ? uid : "");
		x->next = r->ended;
		r->ended = x;
	}
	if (attempt > x->attempt)
		x->attempt = attempt;
	/* The oldest go past the bound. */
	for (pp = &r->ended; *pp && n < RDZV_MAX_ENDED; pp = &(*pp)->next)
		n++;
	while (*pp) {
		x = *pp;
		*pp = x->next;
		free(x->job);
		free(x->uid);
		free(x);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

static void waiter_free(struct rdzv_waiter *w)
{
	free(w->job);
	free(w->key);
	free(w);
}

/* Resumes waiters matching (job, attempt, key), or those past now. */
static void resume(struct ctrl_rdzv *r, const char *job, int attempt,
		   const char *key, int64_t now_ms)
{
	struct rdzv_waiter **pp = &r->waiters;

	while (*pp) {
		struct rdzv_waiter *w = *pp;
		int hit = job ? !strcmp(w->job, job) && w->attempt == attempt &&
					  !strcmp(w->key, key) :
				w->deadline_ms <= now_ms;

		if (hit) {
			*pp = w->next;
			*w->resumed = 1;
			MHD_resume_connection(w->conn);
			waiter_free(w);
		} else {
			pp = &w->next;
		}
	}
}

void ctrl_rdzv_tick(struct ctrl_ctx *ctx, int64_t now_ms)
{
	if (ctx->rdzv)
		resume(ctx->rdzv, NULL, 0, NULL, now_ms);
}

/*
 * The values of (job, attempt), or NULL; *newer: a later attempt of job
 * holds values (this one has ended).
 */
static struct rdzv_attempt *find_attempt(struct ctrl_rdzv *r, const char *job,
					 int attempt, int *newer)
{
	struct rdzv_attempt *a, *hit = NULL;

	*newer = 0;
	for (a = r->attempts; a; a = a->next)
		if (!strcmp(a->job, job)) {
			if (a->attempt == attempt)
				hit = a;
			else if (a->attempt > attempt)
				*newer = 1;
		}
	return hit;
}

static struct rdzv_entry *find(struct rdzv_attempt *a, const char *key)
{
	struct rdzv_entry *e;

	for (e = a ? a->entries : NULL; e; e = e->next)
		if (!strcmp(e->key, key))
			return e;
	return NULL;
}

/*
 * Whether a value of len bytes fits in place of old (NULL: a new key) in
 * attempt a (NULL: none yet); if not, the budget it would pass in why.
 */
static int fits(const struct ctrl_rdzv *r, const struct rdzv_attempt *a,
		const struct rdzv_entry *old, const char *key, size_t len,
		struct buf *why)
{
	size_t held = a ? a->bytes : 0, keys = a ? a->keys : 0;
	size_t freed = old ? old->len : 0, added = len;

	if (!old)
		added += strlen(key);
	if (!old && keys >= r->attempt_keys) {
		(void)buf_addf(why,
			       "this attempt holds its budget of %zu "
			       "rendezvous keys",
			       r->attempt_keys);
		return 0;
	}
	if (held - freed + added > r->attempt_bytes) {
		(void)buf_addf(why,
			       "this attempt's rendezvous keys and values "
			       "would pass its budget of %zu bytes (%zu held)",
			       r->attempt_bytes, held);
		return 0;
	}
	if (r->bytes - freed + added > r->total_bytes) {
		(void)buf_addf(why,
			       "the rendezvous store of all jobs is full "
			       "(its budget is %zu bytes)",
			       r->total_bytes);
		return 0;
	}
	return 1;
}

static int key_ok(const char *k)
{
	size_t n = strlen(k), i;

	if (n < 1 || n > 128)
		return 0;
	for (i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') ||
		      (k[i] >= 'A' && k[i] <= 'Z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '.' ||
		      k[i] == '_' || k[i] == '-'))
			return 0;
	return 1;
}

/* Whether the request holds the attempt's token; the job's uid in uid. */
static int authorized(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
		      const char *job, int attempt, char uid[64])
{
	const char *h = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	struct ctrl_jobrt *rt;
	char want[65];

	if (!h || strncmp(h, "Bearer ", 7) || strlen(h + 7) != 64)
		return 0;
	pthread_mutex_lock(&ctx->jobs_lock);
	rt = ctrl_jobrt_get(ctx, job);
	if (rt) {
		ctrl_rdzv_token(ctx, job, rt->uid, attempt, want);
		(void)snprintf(uid, 64, "%s", rt->uid ? rt->uid : "");
	}
	pthread_mutex_unlock(&ctx->jobs_lock);
	return rt && !CRYPTO_memcmp(h + 7, want, 64);
}

/*
 * Whether attempt is the job's current one and the job still runs, as
 * the store says: the memory of ended attempts is bounded and gone after
 * a restart, the store is not, so an old attempt's token never stores
 * values nothing would free.
 */
static int attempt_current(struct ctrl_ctx *ctx, const char *job,
			   const char *uid, int attempt)
{
	struct db_job j;
	struct buf err = BUF_INIT;
	int ok;

	if (db_job_get(ctx->db, job, &j, &err)) {
		buf_release(&err);
		return 0;
	}
	ok = j.attempt == attempt && !strcmp(j.status, "InProgress") &&
	     (!j.uid || !strcmp(j.uid, uid));
	db_job_release(&j);
	buf_release(&err);
	return ok;
}

/* A rendezvous key named by the path /v1/rendezvous/<job>/<attempt>/<key>. */
struct rdzv_key {
	char job[64];
	int attempt;
	const char *key;
};

static int split(const char *url, struct rdzv_key *k)
{
	struct ctrl_route_params p;
	char num[16], *end;
	long a;

	if (!ctrl_route_match("/v1/rendezvous/{}/{}/*", url, &p) ||
	    p.len[0] >= sizeof(k->job) || p.len[1] >= sizeof(num))
		return ERR_INVALID;
	memcpy(k->job, p.s[0], p.len[0]);
	k->job[p.len[0]] = '\0';
	memcpy(num, p.s[1], p.len[1]);
	num[p.len[1]] = '\0';
	a = strtol(num, &end, 10);
	if (*end || a < 1 || a > 1000000)
		return ERR_INVALID;
	k->attempt = (int)a;
	k->key = p.s[2];
	return 0;
}

/* PUT: stores the value (bounded) and wakes whoever waits for it. */
static enum ctrl_route_result
rdzv_put(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	 struct ctrl_http_req *req, const struct rdzv_key *k,
	 struct ctrl_response *resp, const char **content_type)
{
	struct ctrl_rdzv *r = ctx->rdzv;
	struct rdzv_attempt *a;
	struct rdzv_entry *e;
	struct buf why = BUF_INIT;
	size_t len = req->body.len;
	int newer;

	(void)conn;
	(void)content_type;
	if (len > CTRL_RDZV_MAX_VALUE || req->too_big) {
		ctrl_reply_err(resp, CTRL_E_VALUE_TOO_BIG,
			       "a rendezvous value is at most 65536 bytes");
		return CTRL_ROUTE_DONE;
	}
	a = find_attempt(r, k->job, k->attempt, &newer);
	if (newer) {
		ctrl_reply_err(resp, CTRL_E_CONFLICT,
			       "this attempt has ended: a later attempt of "
			       "the job holds the rendezvous store");
		return CTRL_ROUTE_DONE;
	}
	/* A value replaced gives its bytes back; one refused keeps the
	 * old value. Older attempts of the job have ended. */
	drop_old(r, k->job, k->attempt);
	e = find(a, k->key);
	if (!fits(r, a, e, k->key, len, &why)) {
		ctrl_reply_err(resp, CTRL_E_TOO_MANY, why.data);
		buf_release(&why);
		return CTRL_ROUTE_DONE;
	}
	if (!a) {
		a = xcalloc(1, sizeof(*a));
		a->job = xstrdup(k->job);
		a->attempt = k->attempt;
		a->next = r->attempts;
		r->attempts = a;
	}
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		e->key = xstrdup(k->key);
		e->next = a->entries;
		a->entries = e;
		a->keys++;
		a->bytes += strlen(e->key);
		r->bytes += strlen(e->key);
	}
	a->bytes -= e->len;
	r->bytes -= e->len;
	free(e->value);
	e->value = xmalloc(len + 1);
	memcpy(e->value, req->body.data, len);
	e->len = len;
	a->bytes += len;
	r->bytes += len;
	resume(r, k->job, k->attempt, k->key, 0);
	resp->status = 200;
	(void)buf_adds(&resp->body, "{}");
	return CTRL_ROUTE_DONE;
}

/* GET: the value, or a wait of up to wait_ms for it (parked, no thread). */
static enum ctrl_route_result
rdzv_get(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	 struct ctrl_http_req *req, const struct rdzv_key *k,
	 struct ctrl_response *resp, const char **content_type)
{
	struct ctrl_rdzv *r = ctx->rdzv;
	enum ctrl_route_result res = CTRL_ROUTE_DONE;
	const char *w = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
						    "wait_ms");
	long wait = w ? strtol(w, NULL, 10) : 0;
	struct rdzv_entry *e;
	int newer;

	if (wait < 0)
		wait = 0;
	if (wait > CTRL_RDZV_MAX_WAIT_MS)
		wait = CTRL_RDZV_MAX_WAIT_MS;
	e = find(find_attempt(r, k->job, k->attempt, &newer), k->key);
	if (e) {
		resp->status = 200;
		(void)buf_add(&resp->body, e->value, e->len);
		*content_type = "application/octet-stream";
	} else if (wait > 0 && !req->resumed && !ctx->stopping) {
		struct rdzv_waiter *wt = xcalloc(1, sizeof(*wt));

		wt->conn = conn;
		wt->resumed = &req->resumed;
		wt->deadline_ms = time_mono_ms() + wait;
		wt->job = xstrdup(k->job);
		wt->attempt = k->attempt;
		wt->key = xstrdup(k->key);
		wt->next = r->waiters;
		r->waiters = wt;
		req->suspended = 1;
		MHD_suspend_connection(conn);
		res = CTRL_ROUTE_SUSPENDED;
	} else {
		ctrl_reply_err(resp, CTRL_E_NOT_FOUND,
			       "no such rendezvous key (yet)");
	}
	req->resumed = 0;
	return res;
}

/* A method on a key, the arg of its row; each runs under hosts_lock. */
struct rdzv_op {
	enum ctrl_route_result (*fn)(struct ctrl_ctx *, struct MHD_Connection *,
				     struct ctrl_http_req *,
				     const struct rdzv_key *,
				     struct ctrl_response *, const char **);
};

static const struct rdzv_op op_put = { rdzv_put }, op_get = { rdzv_get };

/*
 * A rendezvous request: the path and the attempt's token are checked
 * first, then the method (a row without an op: 405).
 */
static enum ctrl_route_result
rdzv_route(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	   const char *method, const char *url, struct ctrl_http_req *req,
	   struct ctrl_response *resp, const char **content_type)
{
	const struct rdzv_op *op = req->route->arg;
	enum ctrl_route_result res = CTRL_ROUTE_DONE;
	struct rdzv_key k;
	struct rdzv_ended *x;
	char uid[64] = "";

	(void)method;
	*content_type = "application/json";
	if (split(url, &k) || !key_ok(k.key)) {
		ctrl_reply_err(resp, CTRL_E_VALIDATION,
			       "rendezvous paths are /v1/rendezvous/<job>/"
			       "<attempt>/<key>, key [A-Za-z0-9._-]{1,128}");
		return CTRL_ROUTE_DONE;
	}
	if (!ctx->rdzv || !authorized(ctx, conn, k.job, k.attempt, uid)) {
		ctrl_reply_err(resp, CTRL_E_UNAUTHORIZED,
			       "a rendezvous request needs the attempt's token "
			       "(Authorization: Bearer $TRAINCTL_RDZV_TOKEN)");
		return CTRL_ROUTE_DONE;
	}
	if (!op) {
		ctrl_reply_err(resp, CTRL_E_RDZV_METHOD,
			       "use GET or PUT on rendezvous keys");
		return CTRL_ROUTE_DONE;
	}
	if (!attempt_current(ctx, k.job, uid, k.attempt)) {
		ctrl_reply_err(resp, CTRL_E_CONFLICT,
			       "this attempt of the job has ended");
		return CTRL_ROUTE_DONE;
	}
	pthread_mutex_lock(&ctx->hosts_lock);
	x = find_ended(ctx->rdzv, k.job, uid);
	if (x && x->attempt >= k.attempt)
		/* Its values are gone; it may not store more. */
		ctrl_reply_err(resp, CTRL_E_CONFLICT,
			       "this attempt of the job has ended");
	else
		res = op->fn(ctx, conn, req, &k, resp, content_type);
	pthread_mutex_unlock(&ctx->hosts_lock);
	return res;
}

#define RDZV_ROW(method_, pattern_)                                    \
	CTRL_ROW(CTRL_LISTEN_BOTH, method_, CTRL_MATCH_PATH, pattern_, \
		 CTRL_AUTH_RDZV, CTRL_BODY_BUFFERED, rdzv_route)

/* The store's keys: /v1/rendezvous/<job>/<attempt>/<key>. */
static const struct ctrl_route rows[] = {
	{ RDZV_ROW("PUT", "/v1/rendezvous/{}/{}/*"), .arg = &op_put },
	{ RDZV_ROW("GET", "/v1/rendezvous/{}/{}/*"), .arg = &op_get },
	{ RDZV_ROW("*", "/v1/rendezvous/*") },
};

const struct ctrl_route_block ctrl_rdzv_routes = CTRL_ROUTE_BLOCK(rows);

void ctrl_rdzv_resume_all(struct ctrl_ctx *ctx)
{
	if (ctx->rdzv)
		resume(ctx->rdzv, NULL, 0, NULL, INT64_MAX);
}
