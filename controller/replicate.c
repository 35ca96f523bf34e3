#define LOG_TAG "repl"
/*
 * The embedded store's objects on every member of a replicated controller
 * (controller/replicate.h): the copy before an answer, the members'
 * routes, and the thread that keeps a member's store in step with the
 * replicated record.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <microhttpd.h>

#include "controller/replicate.h"
#include "controller/replicate_int.h"
#include "controller/ctrl.h"
#include "controller/files.h"
#include "controller/request.h"
#include "db/members.h"
#include "db/objects.h"
#include "db/secrets.h"
#include "ha/ha.h"
#include "storage/s3d/blob.h"
#include "storage/s3d/mirror.h"
#include "storage/s3d/s3d.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define META_HEADER "X-Trainctl-Meta"
#define OBJECTS_PREFIX CTRL_REPL_PREFIX "objects/"
#define LOGS_PREFIX CTRL_REPL_PREFIX "logs/"
#define TM_PREFIX CTRL_REPL_PREFIX "telemetry/"
#define SECRET_NAME "members"
#define SECRET_BYTES 24
/* A copy gets this long, and a second more for every 20 MB. */
#define COPY_BASE_MS 10000
#define COPY_BYTES_PER_MS 20000
/* How often the store is compared with the record; a failed fetch waits
 * RETRY_MS. */
#define POLL_MS 200
#define RETRY_MS 1000
#define PAGE 256
/* How often the logs are compared with another member's. */
#define LOG_SYNC_MS 2000
/* How long a new leader waits for its keeper to fetch what it lacks. */
#define LEAD_WAIT_MS 1000
/* After one member holds a copy, how long the others have to finish. */
#define COPY_GRACE_MS 200
/* Between two rounds of a copy that no member took. */
#define ROUND_GAP_MS 100

struct url_set {
	char **v;
	size_t n;
	struct url_set *next; /* retired */
};

static struct repl {
	struct ctrl_ctx *ctx;
	struct db *db;
	const char *root;
	int64_t max_object;
	/* The other members' API URLs (atomic pointer): a set replaced when
	 * members change is kept, in retired, until ctrl_repl_stop(), so
	 * that readers need no lock. */
	struct url_set *urls;
	struct url_set *retired;
	pthread_t thread;
	int running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	char *key;	   /* the members' key, once known */
	int64_t caught_up; /* the keeper has applied the record up to here */
	int on;		   /* --peers: logs and telemetry are copied */
} R = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/* ------------------------------------------------------------- the key */

/* The members' key (owned by R), or NULL while the store has none. A
 * leader creates it. */
static const char *members_key(int create)
{
	struct buf err = BUF_INIT;
	char *k = NULL;
	int existed;

	pthread_mutex_lock(&R.lock);
	if (!R.key) {
		if (create)
			k = ctrl_secret(R.ctx, SECRET_NAME, NULL, SECRET_BYTES,
					&existed);
		else if (db_secret_get(R.db, SECRET_NAME, &k, &err))
			k = NULL;
		R.key = k;
	}
	pthread_mutex_unlock(&R.lock);
	buf_release(&err);
	return R.key;
}

/* Whether auth is "Bearer <the members' key>" (constant time). */
static int key_ok(const char *auth)
{
	return s3d_blob_auth_ok(auth, members_key(0));
}

/* ------------------------------------------------------- hex of the meta */

static void hex_encode(const char *s, size_t n, struct buf *out)
{
	char *hex = xmalloc(2 * n + 1);

	stor_hex((const unsigned char *)s, n, hex);
	(void)buf_adds(out, hex);
	free(hex);
}

/* Decodes hex into out; 0 or -1. */
static int hex_decode(const char *hex, struct buf *out)
{
	size_t n = strlen(hex), i;

	if (n % 2 || n > 4 * 8192)
		return -1;
	for (i = 0; i < n; i += 2) {
		char c[3] = { hex[i], hex[i + 1], 0 }, *end;
		long v = strtol(c, &end, 16);

		if (*end || end != c + 2)
			return -1;
		(void)buf_addch(out, (char)v);
	}
	return 0;
}

/* ------------------------------------------------------------ members */

static const struct url_set *urls_now(void)
{
	static const struct url_set none;
	const struct url_set *u = __atomic_load_n(&R.urls, __ATOMIC_ACQUIRE);

	return u ? u : &none;
}

static void urls_set(char **v, size_t n)
{
	struct url_set *u = xcalloc(1, sizeof(*u));

	u->v = v;
	u->n = n;
	pthread_mutex_lock(&R.lock);
	if (R.urls) {
		R.urls->next = R.retired;
		R.retired = R.urls;
	}
	__atomic_store_n(&R.urls, u, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&R.lock);
}

static int urls_same(const struct url_set *u, char **v, size_t n)
{
	size_t i;

	if (u->n != n)
		return 0;
	for (i = 0; i < n; i++)
		if (strcmp(u->v[i], v[i]))
			return 0;
	return 1;
}

/*
 * The other members as the store's members table names them now (it
 * follows raft's configuration: members added, removed, replaced);
 * --peers until the table has rows. Called by the keeper.
 */
static void urls_refresh(void)
{
	struct db_member *m = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0, i, k = 0;
	char **v;

	if (db_members_list(R.db, &m, &n, &err) || !n) {
		buf_release(&err);
		db_members_free(m, n);
		return;
	}
	v = xcalloc(n, sizeof(*v));
	for (i = 0; i < n; i++)
		if (m[i].id != (unsigned)R.ctx->cfg.member)
			v[k++] = xstrdup(m[i].api_url);
	db_members_free(m, n);
	if (!urls_same(urls_now(), v, k)) {
		log_info("copies go to %zu other member%s", k,
			 k == 1 ? "" : "s");
		urls_set(v, k);
		return;
	}
	for (i = 0; i < k; i++)
		free(v[i]);
	free(v);
}

static void urls_free(struct url_set *u)
{
	size_t i;

	while (u) {
		struct url_set *next = u->next;

		for (i = 0; i < u->n; i++)
			free(u->v[i]);
		free(u->v);
		free(u);
		u = next;
	}
}

/* ------------------------------------------------- for controller/replog.c */

char *const *ctrl_repl__members(size_t *n)
{
	const struct url_set *u = urls_now();

	*n = u->n;
	return u->v;
}

const char *ctrl_repl__key(void)
{
	return members_key(0);
}

const char *ctrl_repl__state_dir(void)
{
	return R.on ? R.ctx->cfg.state_dir : NULL;
}

struct db *ctrl_repl__db(void)
{
	return R.db;
}

struct ctrl_ctx *ctrl_repl__ctx(void)
{
	return R.on ? R.ctx : NULL;
}

int ctrl_repl_on(void)
{
	return R.on;
}

static size_t get_body(char *data, size_t size, size_t n, void *arg)
{
	return buf_add(arg, data, size * n) ? 0 : size * n;
}

int ctrl_repl__get(const char *url, long *status, struct buf *body, size_t max)
{
	struct buf auth = BUF_INIT;
	struct curl_slist *h;
	CURL *c = curl_easy_init();
	CURLcode rc;

	buf_init(body, max);
	(void)buf_addf(&auth, "Authorization: Bearer %s", members_key(0));
	h = curl_slist_append(NULL, auth.data);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, get_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)COPY_BASE_MS);
	rc = curl_easy_perform(c);
	*status = 0;
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	buf_release(&auth);
	return rc == CURLE_OK ? 0 : -1;
}

/* ------------------------------------------------ the members' routes */

/* One request of the members' routes. */
struct mreq {
	int status;
	struct buf msg;
	struct s3d_mirror_in *in; /* PUT */
	int fd;			  /* GET */
	int64_t size;
	struct buf meta;
	struct ctrl_replog_req *log; /* under logs/ */
	struct ctrl_reptm_req *tm;   /* under telemetry/ */
};

static void *mreq_refuse(struct mreq *m, int status, const char *msg)
{
	m->status = status;
	(void)buf_adds(&m->msg, msg);
	return m;
}

/* PUT: the copy's metadata checked and its temp file opened. */
static void mreq_put(struct mreq *m, const char *bucket, const char *key,
		     const char *hdr, int64_t length)
{
	struct buf meta = BUF_INIT;

	if (!hdr || hex_decode(hdr, &meta) || !meta.len) {
		mreq_refuse(m, 400, "no valid " META_HEADER);
	} else {
		m->in = s3d_mirror_in_begin(R.root, bucket, key, meta.data,
					    length, R.max_object, &m->msg);
		if (!m->in)
			m->status = 400;
	}
	buf_release(&meta);
}

static void mreq_get(struct mreq *m, const char *bucket, const char *key)
{
	int r = s3d_mirror_open(R.root, bucket, key, &m->fd, &m->size, &m->meta,
				&m->msg);

	if (r)
		m->status = r == ERR_NOTFOUND ? 404 :
			    r == ERR_INVALID  ? 400 :
						500;
}

/* ha_local_route's begin (the leader's GET too). */
static void *mreq_begin(const char *method, const char *url, const char *auth,
			const char *hdr, int64_t length)
{
	struct mreq *m = xcalloc(1, sizeof(*m));
	char *bucket = NULL, *key = NULL;

	m->fd = -1;
	buf_init(&m->msg, 4096);
	buf_init(&m->meta, 0);
	if (!key_ok(auth))
		return mreq_refuse(m, 403, "not a member's key");
	if (!strncmp(url, LOGS_PREFIX, strlen(LOGS_PREFIX))) {
		m->log = ctrl_replog__begin(method, url + strlen(LOGS_PREFIX),
					    length, &m->status, &m->msg);
		return m;
	}
	if (!strncmp(url, TM_PREFIX, strlen(TM_PREFIX))) {
		m->tm = ctrl_reptm__begin(method, url + strlen(TM_PREFIX),
					  length, &m->status, &m->msg);
		return m;
	}
	if (!R.root)
		return mreq_refuse(m, 404,
				   "objects live in S3 (--s3-endpoint)");
	if (strncmp(url, OBJECTS_PREFIX, strlen(OBJECTS_PREFIX)) ||
	    s3d_mirror_split(url + strlen(OBJECTS_PREFIX), &bucket, &key,
			     &m->msg))
		return mreq_refuse(m, 400, "not an object's path");
	if (!strcmp(method, "PUT"))
		mreq_put(m, bucket, key, hdr, length);
	else if (!strcmp(method, "GET"))
		mreq_get(m, bucket, key);
	else
		mreq_refuse(m, 405, "GET or PUT");
	free(bucket);
	free(key);
	return m;
}

static int mreq_refused(void *st)
{
	return ((struct mreq *)st)->status != 0;
}

static void mreq_data(void *st, const char *p, size_t n)
{
	struct mreq *m = st;

	if (m->in)
		(void)s3d_mirror_in_data(m->in, p, n);
	if (m->log)
		ctrl_replog__data(m->log, p, n);
	if (m->tm)
		ctrl_reptm__data(m->tm, p, n);
}

static void mreq_finish(void *st, struct ha_local_reply *out)
{
	struct mreq *m = st;

	if (!m->status && m->in && s3d_mirror_in_finish(m->in, &m->msg))
		m->status = 400;
	if (m->log) {
		ctrl_replog__finish(m->log, out);
		return;
	}
	if (m->tm) {
		ctrl_reptm__finish(m->tm, out);
		return;
	}
	if (m->status) {
		out->status = m->status;
		(void)buf_addf(&out->body, "%s\n", m->msg.data);
		log_info("members' route refused (%d): %s", m->status,
			 m->msg.data);
		return;
	}
	out->status = 200;
	if (m->fd >= 0) {
		struct buf h = BUF_INIT;

		hex_encode(m->meta.data, m->meta.len, &h);
		out->hdr = buf_detach(&h, NULL);
		out->fd = m->fd;
		out->size = m->size;
		m->fd = -1;
	}
}

static void mreq_release(void *st)
{
	struct mreq *m = st;

	s3d_mirror_in_free(m->in);
	ctrl_replog__release(m->log);
	ctrl_reptm__release(m->tm);
	if (m->fd >= 0)
		close(m->fd);
	buf_release(&m->msg);
	buf_release(&m->meta);
	free(m);
}

static const struct ha_local_route local_route = {
	CTRL_REPL_PREFIX, META_HEADER, mreq_begin,   mreq_refused,
	mreq_data,	  mreq_finish, mreq_release,
};

/* The leader's GET (a member catching up). Reading is the store's own
 * quick open and fstat, as a GetObject's. */
static enum ctrl_route_result
leader_get(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
	   const char *method, const char *url, struct ctrl_http_req *req,
	   struct ctrl_response *resp, const char **content_type)
{
	struct ha_local_reply a = { 0, BUF_INIT, -1, 0, NULL };
	struct MHD_Response *mr = NULL;
	int queued = 0;
	void *m;

	(void)ctx;
	(void)req;
	(void)content_type;
	if (!R.on) {
		ctrl_reply_error(resp, 404, "NotFound", "not replicating");
		return CTRL_ROUTE_DONE;
	}
	m = mreq_begin(method, url,
		       MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						   "Authorization"),
		       NULL, 0);
	mreq_finish(m, &a);
	mreq_release(m);
	if (a.fd >= 0)
		mr = MHD_create_response_from_fd64((uint64_t)a.size, a.fd);
	else
		mr = MHD_create_response_from_buffer(a.body.len, a.body.data,
						     MHD_RESPMEM_MUST_COPY);
	if (mr && a.hdr)
		MHD_add_response_header(mr, META_HEADER, a.hdr);
	if (mr)
		a.fd = -1; /* MHD's now */
	if (mr && MHD_queue_response(conn, (unsigned)a.status, mr) == MHD_YES)
		queued = 1;
	else
		ctrl_reply_error(resp, 500, "InternalError", "cannot answer");
	if (mr)
		MHD_destroy_response(mr);
	if (a.fd >= 0)
		close(a.fd);
	buf_release(&a.body);
	free(a.hdr);
	return queued ? CTRL_ROUTE_QUEUED : CTRL_ROUTE_DONE;
}

static const struct ctrl_route repl_rows[] = {
	{ CTRL_ROW(CTRL_LISTEN_API, "GET", CTRL_MATCH_PATH,
		   CTRL_REPL_PREFIX "*", CTRL_AUTH_NONE, CTRL_BODY_BUFFERED,
		   leader_get) },
};

const struct ctrl_route_block ctrl_repl_routes = CTRL_ROUTE_BLOCK(repl_rows);

static int nap(int64_t ms);

/* ------------------------------------------------------------ the copy */

/* A URL of the members' routes for an object at member url. */
static void object_url(struct buf *out, const char *url, const char *bucket,
		       const char *key)
{
	buf_reset(out);
	(void)buf_addf(out, "%s%sobjects/", url, CTRL_REPL_PREFIX);
	stor_uri_encode(out, bucket, 0);
	(void)buf_addch(out, '/');
	stor_uri_encode(out, key, 1);
}

static size_t push_read(char *buf, size_t size, size_t n, void *arg)
{
	struct ctrl_repl_push *p = arg;
	size_t want = size * n;
	ssize_t r;

	if (p->off >= p->size)
		return 0;
	if ((int64_t)want > p->size - p->off)
		want = (size_t)(p->size - p->off);
	if (p->data) {
		memcpy(buf, p->data + p->off, want);
		p->off += (int64_t)want;
		return want;
	}
	r = pread(p->fd, buf, want, p->base + p->off);
	if (r < 0)
		return CURL_READFUNC_ABORT;
	p->off += r;
	return (size_t)r;
}

static size_t push_answer(char *data, size_t size, size_t n, void *arg)
{
	struct ctrl_repl_push *p = arg;

	(void)buf_add(&p->answer, data, size * n);
	return size * n;
}

static void push_setup(struct ctrl_repl_push *p, CURLM *m)
{
	struct buf h = BUF_INIT;

	p->c = curl_easy_init();
	p->off = 0;
	p->status = 0;
	buf_init(&p->answer, 64);
	(void)buf_addf(&h, "Authorization: Bearer %s", members_key(0));
	p->hdrs = curl_slist_append(NULL, h.data);
	if (p->meta) {
		buf_reset(&h);
		(void)buf_addf(&h, "%s: %s", META_HEADER, p->meta);
		p->hdrs = curl_slist_append(p->hdrs, h.data);
	}
	p->hdrs = curl_slist_append(p->hdrs, "Expect:");
	buf_release(&h);
	curl_easy_setopt(p->c, CURLOPT_URL, p->url);
	curl_easy_setopt(p->c, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(p->c, CURLOPT_READFUNCTION, push_read);
	curl_easy_setopt(p->c, CURLOPT_READDATA, p);
	curl_easy_setopt(p->c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)p->size);
	curl_easy_setopt(p->c, CURLOPT_HTTPHEADER, p->hdrs);
	curl_easy_setopt(p->c, CURLOPT_WRITEFUNCTION, push_answer);
	curl_easy_setopt(p->c, CURLOPT_WRITEDATA, p);
	curl_easy_setopt(p->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->c, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	curl_easy_setopt(p->c, CURLOPT_PRIVATE, p);
	curl_multi_add_handle(m, p->c);
}

/*
 * Waits until one push is answered 200 (0) or every one failed (-1); after
 * a 200, until the others are done or grace_ms has passed.
 */
static int push_wait(CURLM *m, size_t n, int64_t deadline_ms, int64_t grace_ms)
{
	size_t done = 0;
	int running = 1, left, ok = 0;
	CURLMsg *msg;

	while (time_mono_ms() < deadline_ms) {
		if (curl_multi_perform(m, &running) != CURLM_OK)
			break;
		while ((msg = curl_multi_info_read(m, &left))) {
			struct ctrl_repl_push *p = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
					  (char **)&p);
			if (msg->data.result == CURLE_OK)
				curl_easy_getinfo(msg->easy_handle,
						  CURLINFO_RESPONSE_CODE,
						  &p->status);
			done++;
			if (p->status == 200 && !ok) {
				ok = 1;
				if (time_mono_ms() + grace_ms < deadline_ms)
					deadline_ms = time_mono_ms() + grace_ms;
			}
		}
		if (done == n || !running)
			break;
		(void)curl_multi_poll(m, NULL, 0, 50, NULL);
	}
	return ok ? 0 : -1;
}

int ctrl_repl__push_all(struct ctrl_repl_push *p, size_t n, int64_t deadline,
			int64_t grace_ms)
{
	CURLM *m = curl_multi_init();
	size_t i;
	int ret;

	for (i = 0; i < n; i++)
		push_setup(&p[i], m);
	ret = push_wait(m, n, deadline, grace_ms);
	for (i = 0; i < n; i++) {
		curl_multi_remove_handle(m, p[i].c);
		curl_easy_cleanup(p[i].c);
		curl_slist_free_all(p[i].hdrs);
	}
	curl_multi_cleanup(m);
	return ret;
}

/* One round of an object's copy to every other member. */
static int push_round(const char *bucket, const char *key, int fd, int64_t size,
		      const char *meta, int64_t deadline)
{
	const struct url_set *u = urls_now();
	struct ctrl_repl_push *p = xcalloc(u->n + 1, sizeof(*p));
	struct buf *urls = xcalloc(u->n + 1, sizeof(*urls));
	size_t i;
	int ret;

	for (i = 0; i < u->n; i++) {
		object_url(&urls[i], u->v[i], bucket, key);
		p[i].url = urls[i].data;
		p[i].fd = fd;
		p[i].size = size;
		p[i].meta = meta;
	}
	ret = ctrl_repl__push_all(p, u->n, deadline, COPY_GRACE_MS);
	for (i = 0; i < u->n; i++) {
		buf_release(&p[i].answer);
		buf_release(&urls[i]);
	}
	free(urls);
	free(p);
	return ret;
}

/*
 * Copies bucket/key to the other members until one holds it, in rounds
 * (a member that restarts refuses connections for a moment) until the
 * deadline. Fills row's size and ETag. Returns 0 or -1 (why logged).
 */
static int copy_out(const char *bucket, const char *key, struct db_object *row)
{
	struct buf meta = BUF_INIT, err = BUF_INIT, hex = BUF_INIT;
	char etag[S3D_ETAG_MAX];
	int fd = -1, ret = -1;
	int64_t size = 0, deadline;

	if (s3d_mirror_open(R.root, bucket, key, &fd, &size, &meta, &err) ||
	    s3d_mirror_meta_etag(meta.data, etag) || !members_key(0))
		goto out;
	row->size = size;
	row->etag = xstrdup(etag);
	hex_encode(meta.data, meta.len, &hex);
	deadline = time_mono_ms() + COPY_BASE_MS + size / COPY_BYTES_PER_MS;
	while ((ret = push_round(bucket, key, fd, size, hex.data, deadline)) &&
	       time_mono_ms() + ROUND_GAP_MS < deadline)
		(void)nap(ROUND_GAP_MS);
out:
	if (ret)
		log_warn("s3://%s/%s: no other member took a copy%s%s", bucket,
			 key, err.len ? ": " : "", err.data);
	if (fd >= 0)
		close(fd);
	buf_release(&meta);
	buf_release(&err);
	buf_release(&hex);
	return ret;
}

/* The record of one change (strings owned: db_objects_free()). */
static int change_row(const struct s3d_change *c, struct db_object *row)
{
	memset(row, 0, sizeof(*row));
	row->bucket = xstrdup(c->bucket);
	row->key = xstrdup(c->key ? c->key : "");
	row->deleted = c->kind == S3D_CH_DELETE || c->kind == S3D_CH_UNBUCKET;
	if (c->kind == S3D_CH_PUT)
		return copy_out(c->bucket, c->key, row);
	return 0;
}

/* Copies and records n changes: 0, or -1 when one failed. */
static int replicate_changes(const struct s3d_change *c, size_t n)
{
	struct db_object *rows = xcalloc(n, sizeof(*rows));
	struct buf err = BUF_INIT;
	size_t i;
	int failed = 0;

	for (i = 0; i < n; i++)
		if (change_row(&c[i], &rows[i]))
			failed = 1;
	if (!failed && db_objects_record(R.db, rows, n, &err)) {
		log_warn("cannot record the store's change: %s", err.data);
		failed = 1;
	}
	db_objects_free(rows, n);
	buf_release(&err);
	return failed ? -1 : 0;
}

#define NOT_DURABLE                                                 \
	"The object could not be copied to a second member of the " \
	"controller; please retry."

void ctrl_repl_s3(struct s3d *s, struct s3d_reply *reply)
{
	const struct s3d_change *c;
	size_t n;

	if (!R.root)
		return;
	c = s3d_changes(s, &n);
	if (n && replicate_changes(c, n) && reply->status < 300)
		s3d_refuse_reply(s, reply, "SlowDown", 503, NOT_DURABLE);
}

void ctrl_repl_blob(const struct s3d_blob *b, struct s3d_blob_reply *reply)
{
	struct s3d_change c;
	const char *bucket, *key;
	int kind;

	if (!R.root)
		return;
	kind = s3d_blob_changed(b, reply, &bucket, &key);
	if (!kind)
		return;
	c.kind = (enum s3d_change_kind)kind;
	c.bucket = (char *)bucket;
	c.key = (char *)key;
	if (replicate_changes(&c, 1))
		s3d_blob_refuse_reply(reply, NOT_DURABLE);
}

int ctrl_repl_object(const char *bucket, const char *key, struct buf *err)
{
	struct s3d_change c;

	if (!R.root)
		return 0;
	c.kind = S3D_CH_PUT;
	c.bucket = (char *)bucket;
	c.key = (char *)key;
	if (!replicate_changes(&c, 1))
		return 0;
	(void)buf_addf(err, "s3://%s/%s: %s", bucket, key, NOT_DURABLE);
	return ERR_IO;
}

/* ----------------------------------------------------------- catch-up */

/* One object being fetched from another member. */
struct fetch {
	const struct db_object *row;
	long status;
	int64_t length;
	struct buf meta; /* decoded */
	struct s3d_mirror_in *in;
	int bad;
};

static size_t fetch_header(char *data, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;
	size_t len = size * n, hl = strlen(META_HEADER);
	char *line = xstrndup(data, len);

	line[strcspn(line, "\r\n")] = '\0';
	if (!strncmp(line, "HTTP/", 5)) {
		buf_reset(&f->meta);
		f->length = -1;
		f->status = strtol(strchr(line, ' ') ? strchr(line, ' ') : "0",
				   NULL, 10);
	} else if (!strncasecmp(line, "Content-Length:", 15)) {
		f->length = strtoll(line + 15, NULL, 10);
	} else if (!strncasecmp(line, META_HEADER, hl) && line[hl] == ':') {
		buf_reset(&f->meta);
		if (hex_decode(line + hl + 1 + strspn(line + hl + 1, " "),
			       &f->meta))
			f->bad = 1;
	}
	free(line);
	return len;
}

/* The copy's temp file, opened once the answer's headers are in. */
static int fetch_open(struct fetch *f)
{
	struct buf err = BUF_INIT;
	char etag[S3D_ETAG_MAX];

	if (f->in || f->bad)
		return f->bad ? -1 : 0;
	if (f->status != 200 || !f->meta.len ||
	    s3d_mirror_meta_etag(f->meta.data, etag) ||
	    strcmp(etag, f->row->etag)) {
		f->bad = 1; /* not there, or not this version */
		return -1;
	}
	f->in = s3d_mirror_in_begin(R.root, f->row->bucket, f->row->key,
				    f->meta.data, f->length, R.max_object,
				    &err);
	if (!f->in) {
		log_info("s3://%s/%s: %s", f->row->bucket, f->row->key,
			 err.data);
		f->bad = 1;
	}
	buf_release(&err);
	return f->in ? 0 : -1;
}

static size_t fetch_body(char *data, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;

	if (fetch_open(f) || s3d_mirror_in_data(f->in, data, size * n))
		return 0;
	return size * n;
}

/* Fetches row's object from the member at url: 0 or -1. */
static int fetch_from(const char *url, const struct db_object *row)
{
	struct fetch f = { row, 0, -1, BUF_INIT, NULL, 0 };
	struct buf target = BUF_INIT, auth = BUF_INIT, err = BUF_INIT;
	struct curl_slist *hdrs;
	CURL *c = curl_easy_init();
	CURLcode rc;
	int ret = -1;

	buf_init(&f.meta, 64 * 1024);
	object_url(&target, url, row->bucket, row->key);
	(void)buf_addf(&auth, "Authorization: Bearer %s", members_key(0));
	hdrs = curl_slist_append(NULL, auth.data);
	curl_easy_setopt(c, CURLOPT_URL, target.data);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, fetch_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &f);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fetch_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
			 (long)(COPY_BASE_MS + row->size / COPY_BYTES_PER_MS));
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK && !fetch_open(&f) &&
	    !s3d_mirror_in_finish(f.in, &err))
		ret = 0;
	s3d_mirror_in_free(f.in);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	buf_release(&f.meta);
	buf_release(&target);
	buf_release(&auth);
	buf_release(&err);
	return ret;
}

/* Brings this member's store in step with one row: 0, or -1 to retry. */
static int apply_row(const struct db_object *row)
{
	struct buf err = BUF_INIT;
	char etag[S3D_ETAG_MAX];
	const char *key = row->key[0] ? row->key : NULL;
	size_t i;
	int ret = 0;

	if (row->deleted)
		ret = s3d_mirror_remove(R.root, row->bucket, key, &err);
	else if (!key)
		ret = s3d_mirror_bucket(R.root, row->bucket, &err);
	else if (s3d_mirror_etag(R.root, row->bucket, key, etag) ||
		 strcmp(etag, row->etag)) {
		const struct url_set *u = urls_now();

		ret = -1;
		for (i = 0; i < u->n && ret; i++)
			ret = fetch_from(u->v[i], row);
		if (!ret)
			log_info("s3://%s/%s: fetched from another member",
				 row->bucket, key);
	}
	buf_release(&err);
	return ret ? -1 : 0;
}

/*
 * One pass over the rows changed after *mark: *mark moves past every row
 * applied before the first that failed. Returns 1 when rows are left
 * (another page), 0 when done, -1 when one failed.
 */
static int catch_up(int64_t *mark)
{
	struct db_object *rows = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0, i;
	int failed = 0;

	if (db_objects_since(R.db, *mark, PAGE, &rows, &n, &err)) {
		buf_release(&err);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (apply_row(&rows[i]))
			failed = 1;
		else if (!failed)
			*mark = rows[i].seq;
	db_objects_free(rows, n);
	buf_release(&err);
	return failed ? -1 : n == PAGE;
}

/* Waits ms unless asked to stop; 1 when asked. */
static int nap(int64_t ms)
{
	struct timespec ts;
	int stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&R.lock);
	if (!R.stop)
		(void)pthread_cond_timedwait(&R.cond, &R.lock, &ts);
	stop = R.stop;
	pthread_mutex_unlock(&R.lock);
	return stop;
}

static void *keeper(void *arg)
{
	int64_t mark = 0, seen = -1, last, logs_at = 0;
	int r = 0;

	(void)arg;
	while (!nap(r < 0 ? RETRY_MS : r > 0 ? 0 : POLL_MS)) {
		urls_refresh();
		if (members_key(0) && time_mono_ms() >= logs_at) {
			ctrl_replog__catch_up();
			ctrl_reptm__catch_up();
			logs_at = time_mono_ms() + LOG_SYNC_MS;
		}
		if (!R.root)
			continue; /* objects live in S3 */
		last = db_objects_last_seq(R.db);
		if (r == 0 && last == seen)
			continue;
		if (!members_key(0)) {
			r = -1; /* no leader has made it yet */
			continue;
		}
		seen = last;
		r = catch_up(&mark);
		pthread_mutex_lock(&R.lock);
		R.caught_up = mark;
		pthread_mutex_unlock(&R.lock);
	}
	return NULL;
}

/* --------------------------------------------------------- start, stop */

static int peers_urls(const struct ctrl_config *cfg, struct buf *err)
{
	struct ha_config hc;
	size_t i, k = 0;
	char **v;
	int ret;

	memset(&hc, 0, sizeof(hc));
	ret = ha_config_parse_peers(&hc, cfg->peers, (unsigned)cfg->member,
				    err);
	if (ret)
		return ret;
	v = xcalloc(hc.n_members, sizeof(*v));
	for (i = 0; i < hc.n_members; i++)
		if (hc.members[i].id != hc.self)
			v[k++] = xstrdup(hc.members[i].api_url);
	ha_config_release(&hc);
	urls_set(v, k);
	return 0;
}

int ctrl_repl_start(struct ctrl_ctx *ctx, struct buf *err)
{
	int ret;

	if (!ctx->cfg.peers)
		return 0;
	ret = peers_urls(&ctx->cfg, err);
	if (ret)
		return ret;
	R.ctx = ctx;
	R.db = ctx->db;
	R.max_object = ctx->s3.max_object;
	/* With --s3-endpoint objects live there; logs and telemetry are
	 * still the members' own. */
	R.root = ctx->cfg.s3_endpoint ? NULL : ctx->s3.root;
	R.on = 1;
	R.stop = 0;
	ha_proxy_set_local(&local_route);
	if (pthread_create(&R.thread, NULL, keeper, NULL)) {
		(void)buf_adds(err, "cannot start the store's keeper thread");
		R.root = NULL;
		R.on = 0;
		return ERR_INTERNAL;
	}
	R.running = 1;
	return 0;
}

/* Whether the keeper has applied the record up to seq. */
static int caught_up_to(int64_t seq)
{
	int64_t at;

	pthread_mutex_lock(&R.lock);
	at = R.caught_up;
	pthread_cond_broadcast(&R.cond); /* look now */
	pthread_mutex_unlock(&R.lock);
	return at >= seq;
}

void ctrl_repl_lead(void)
{
	int64_t until = time_mono_ms() + LEAD_WAIT_MS, last;

	if (!R.on)
		return;
	if (!members_key(1))
		log_warn("no members' key: nothing can be copied");
	if (!R.root)
		return;
	/* A new leader serves the objects acknowledged before it led: the
	 * few its keeper has not fetched yet are fetched first. */
	last = db_objects_last_seq(R.db);
	while (!caught_up_to(last) && time_mono_ms() < until)
		(void)nap(20);
	if (!caught_up_to(last))
		log_warn("leading before every object is here; the keeper "
			 "goes on fetching them");
}

void ctrl_repl_stop(void)
{
	if (R.running) {
		pthread_mutex_lock(&R.lock);
		R.stop = 1;
		pthread_cond_signal(&R.cond);
		pthread_mutex_unlock(&R.lock);
		pthread_join(R.thread, NULL);
		R.running = 0;
	}
	ha_proxy_set_local(NULL);
	R.root = NULL;
	R.on = 0;
	urls_free(R.urls);
	urls_free(R.retired);
	R.urls = R.retired = NULL;
	free(R.key);
	R.key = NULL;
}
