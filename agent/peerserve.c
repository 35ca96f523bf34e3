/*
 * Serves the checkpoint copies this host holds to the job's other hosts,
 * and takes those the previous host of the job pushes (agent/peerckpt.h
 * has the paths, agent/peerserve.h the life cycle). libmicrohttpd runs
 * its own threads, one per connection, so that a file goes out in large
 * sendfile() chunks without waiting on the agent's loop. They touch
 * nothing of the loop's: the loop hands them the jobs' tokens through a
 * table under a lock (agent_peerserve_run()), and a request is served
 * only for a job this host runs or ran, with the job's token. The threads
 * block every signal: the loop's handlers stay with the loop.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/assignment.h"
#include "agent/memckpt.h"
#include "agent/peerckpt.h"
#include "agent/peerserve.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/strvec.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MANIFEST "MANIFEST.json"
#define PEER_DIR ".peer"
#define INCOMING ".in-"
/* Connections served at once (a thread each). */
#define MAX_CONNECTIONS 16U

/* The job's token, learned from its assignment on this host. */
struct known_job {
	char *uid;
	char *token;
	int64_t seen; /* monotonic ms */
};

struct agent_peerserve {
	struct MHD_Daemon *d;
	char *own;   /* <memckpt dir>/<host>: this host's own copies */
	char *peers; /* own/.peer: what other hosts pushed here */
	int64_t limit;
	pthread_mutex_t lock; /* over known */
	struct known_job *known;
	size_t n_known;
};

/* A PUT under way. */
struct upload {
	char *dir;  /* peers/<uid>/.in-<folder> */
	char *done; /* peers/<uid>/<folder> */
	char *path; /* dir/<file> */
	int fd;
	int manifest; /* the last file: completes the folder */
	int64_t want; /* Content-Length */
	int64_t got;
	int failed;
};

/* --- access ----------------------------------------------------------- */

static int same_secret(const char *a, const char *b)
{
	size_t n = strlen(b), i;
	unsigned char d = 0;

	if (strlen(a) != n)
		return 0;
	for (i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return !d;
}

/*
 * Learns the tokens of the jobs this host runs, and keeps each for as
 * long as copies are kept: a host that replaced a lost one asks between
 * the job's attempts too, when the old attempt has ended here and the
 * new one's work may not have arrived yet.
 */
static void learn_tokens(struct agent_ctx *ctx)
{
	struct agent_peerserve *ps = ctx->peer;
	const struct agent_assign *a;
	int64_t now = time_mono_ms();
	size_t i;

	pthread_mutex_lock(&ps->lock);
	for (a = ctx->assigns; a; a = a->next) {
		const struct api_assignment *s = &a->spec;

		if (!a->have_spec || !s->job_uid || !s->peer_token)
			continue;
		for (i = 0; i < ps->n_known; i++)
			if (!strcmp(ps->known[i].uid, s->job_uid))
				break;
		if (i == ps->n_known) {
			ps->known = xrealloc(ps->known,
					     (i + 1) * sizeof(*ps->known));
			ps->known[i].uid = xstrdup(s->job_uid);
			ps->known[i].token = NULL;
			ps->n_known++;
		}
		if (!ps->known[i].token ||
		    strcmp(ps->known[i].token, s->peer_token)) {
			free(ps->known[i].token);
			ps->known[i].token = xstrdup(s->peer_token);
		}
		ps->known[i].seen = now;
	}
	for (i = 0; i < ps->n_known;) {
		if (now - ps->known[i].seen <= AGENT_MEMCKPT_TTL_MS) {
			i++;
			continue;
		}
		free(ps->known[i].uid);
		free(ps->known[i].token);
		ps->known[i] = ps->known[--ps->n_known];
	}
	pthread_mutex_unlock(&ps->lock);
}

/*
 * Whether the request may read or write uid's copies: it shows the job's
 * token, which the controller gives only to the job's hosts.
 */
static int allowed(struct agent_peerserve *ps, struct MHD_Connection *c,
		   const char *uid)
{
	const char *h = MHD_lookup_connection_value(
		c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	size_t i;
	int ok = 0;

	if (!h || strncmp(h, "Bearer ", 7))
		return 0;
	pthread_mutex_lock(&ps->lock);
	for (i = 0; i < ps->n_known; i++)
		if (!strcmp(ps->known[i].uid, uid)) {
			ok = same_secret(h + 7, ps->known[i].token);
			break;
		}
	pthread_mutex_unlock(&ps->lock);
	return ok;
}

/* --- answers ---------------------------------------------------------- */

static enum MHD_Result answer(struct MHD_Connection *c, unsigned int status,
			      const char *text, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, (void *)text, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				      "text/plain");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result status_only(struct MHD_Connection *c,
				   unsigned int status, const char *why)
{
	return answer(c, status, why, strlen(why));
}

/* The folder of uid's copy name: this host's own, else one pushed here;
 * NULL when neither holds it. */
static char *folder_of(const struct agent_peerserve *ps, const char *uid,
		       const char *name)
{
	const char *roots[2] = { ps->own, ps->peers };
	struct buf p = BUF_INIT;
	struct stat sb;
	size_t i;

	for (i = 0; i < 2; i++) {
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s/%s/" MANIFEST, roots[i], uid, name);
		if (!lstat(p.data, &sb) && S_ISREG(sb.st_mode)) {
			buf_reset(&p);
			(void)buf_addf(&p, "%s/%s/%s", roots[i], uid, name);
			return buf_detach(&p, NULL);
		}
	}
	buf_release(&p);
	return NULL;
}

/* The copies held of uid, a line each, no name twice. */
static enum MHD_Result list_copies(struct MHD_Connection *c,
				   const struct agent_peerserve *ps,
				   const char *uid)
{
	struct strvec v = STRVEC_INIT;
	struct buf out = BUF_INIT;
	size_t i, k;
	enum MHD_Result ret;

	(void)agent_memckpt_list(ps->own, uid, &v);
	(void)agent_memckpt_list(ps->peers, uid, &v);
	for (i = 0; i < v.n; i++) {
		for (k = 0; k < i && strcmp(v.v[k], v.v[i]); k++)
			;
		if (k == i)
			(void)buf_addf(&out, "%s\n", v.v[i]);
	}
	ret = answer(c, MHD_HTTP_OK, out.data ? out.data : "", out.len);
	strvec_release(&v);
	buf_release(&out);
	return ret;
}

/* A copy's files, "name size" a line each. */
static enum MHD_Result list_files(struct MHD_Connection *c, const char *dir)
{
	struct buf out = BUF_INIT, p = BUF_INIT;
	struct dirent *e;
	struct stat sb;
	enum MHD_Result ret;
	DIR *d = opendir(dir);

	if (!d)
		return status_only(c, MHD_HTTP_NOT_FOUND, "no such copy\n");
	while ((e = readdir(d))) {
		if (!agent_memckpt_file_ok(e->d_name))
			continue;
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s", dir, e->d_name);
		if (!lstat(p.data, &sb) && S_ISREG(sb.st_mode))
			(void)buf_addf(&out, "%s %lld\n", e->d_name,
				       (long long)sb.st_size);
	}
	closedir(d);
	ret = answer(c, MHD_HTTP_OK, out.data ? out.data : "", out.len);
	buf_release(&out);
	buf_release(&p);
	return ret;
}

static enum MHD_Result send_file(struct MHD_Connection *c, const char *dir,
				 const char *file)
{
	struct MHD_Response *r;
	struct buf p = BUF_INIT;
	struct stat sb;
	enum MHD_Result ret;
	int fd;

	(void)buf_addf(&p, "%s/%s", dir, file);
	fd = open(p.data, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	buf_release(&p);
	if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		if (fd >= 0)
			close(fd);
		return status_only(c, MHD_HTTP_NOT_FOUND, "no such file\n");
	}
	r = MHD_create_response_from_fd64((uint64_t)sb.st_size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_get(struct MHD_Connection *c,
				 const struct agent_peerserve *ps,
				 const struct agent_peerckpt_path *p)
{
	enum MHD_Result ret;
	char *dir;

	if (!p->folder[0])
		return list_copies(c, ps, p->uid);
	dir = folder_of(ps, p->uid, p->folder);
	if (!dir)
		return status_only(c, MHD_HTTP_NOT_FOUND, "no such copy\n");
	ret = p->file[0] ? send_file(c, dir, p->file) : list_files(c, dir);
	free(dir);
	return ret;
}

/* --- uploads ---------------------------------------------------------- */

/* Bytes of the plain files one and two levels below dir. */
static int64_t usage(const char *dir, int depth)
{
	struct buf p = BUF_INIT;
	struct dirent *e;
	struct stat sb;
	int64_t total = 0;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s", dir, e->d_name);
		if (lstat(p.data, &sb))
			continue;
		if (S_ISREG(sb.st_mode))
			total += sb.st_size;
		else if (S_ISDIR(sb.st_mode) && depth > 0)
			total += usage(p.data, depth - 1);
	}
	if (d)
		closedir(d);
	buf_release(&p);
	return total;
}

/* Of rank's copies of uid pushed here, keeps the newest keep. */
static void prune_rank(const struct agent_peerserve *ps, const char *uid,
		       long rank, int keep)
{
	struct strvec v = STRVEC_INIT;
	struct buf p = BUF_INIT;
	long long s;
	long r;
	size_t i;
	int seen = 0;

	(void)agent_memckpt_list(ps->peers, uid, &v);
	for (i = 0; i < v.n; i++) { /* newest first per rank */
		if (!agent_memckpt_name(v.v[i], strlen(v.v[i]), 1, &s, &r) ||
		    r != rank || ++seen <= keep)
			continue;
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s/%s", ps->peers, uid, v.v[i]);
		(void)fs_remove_tree(p.data);
	}
	strvec_release(&v);
	buf_release(&p);
}

static void upload_free(struct upload *u)
{
	if (u->fd >= 0)
		close(u->fd);
	/* A folder with a failed file is not completed: it goes. */
	if (u->failed)
		(void)fs_remove_tree(u->dir);
	free(u->dir);
	free(u->done);
	free(u->path);
	free(u);
}

/* The Content-Length of c, -1 when absent or bad. */
static int64_t content_length(struct MHD_Connection *c)
{
	const char *v = MHD_lookup_connection_value(
		c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	char *end;
	long long n;

	if (!v || !*v)
		return -1;
	n = strtoll(v, &end, 10);
	return *end || n < 0 ? -1 : n;
}

/*
 * A PUT's first call: room under the limit (a new folder first drops the
 * rank's older copies beyond the newest AGENT_MEMCKPT_KEEP - 1), then the
 * file opened in the folder's incoming twin. NULL with *status set when
 * refused.
 */
static struct upload *upload_begin(const struct agent_peerserve *ps,
				   struct MHD_Connection *c,
				   const struct agent_peerckpt_path *p,
				   unsigned int *status)
{
	struct upload *u = xcalloc(1, sizeof(*u));
	struct buf b = BUF_INIT;
	long long s;
	long r;

	u->fd = -1;
	u->want = content_length(c);
	u->manifest = !strcmp(p->file, MANIFEST);
	(void)buf_addf(&b, "%s/%s", ps->peers, p->uid);
	(void)mkdir(b.data, 0700);
	(void)buf_addf(&b, "/" INCOMING "%s", p->folder);
	u->dir = buf_detach(&b, NULL);
	(void)buf_addf(&b, "%s/%s/%s", ps->peers, p->uid, p->folder);
	u->done = buf_detach(&b, NULL);
	(void)buf_addf(&b, "%s/%s", u->dir, p->file);
	u->path = buf_detach(&b, NULL);
	*status = MHD_HTTP_LENGTH_REQUIRED;
	if (u->want < 0)
		goto refuse;
	if (!mkdir(u->dir, 0700) &&
	    agent_memckpt_name(p->folder, strlen(p->folder), 1, &s, &r))
		prune_rank(ps, p->uid, r, AGENT_MEMCKPT_KEEP - 1);
	*status = MHD_HTTP_CONTENT_TOO_LARGE;
	(void)buf_addf(&b, "%s/%s", ps->peers, p->uid);
	if (usage(b.data, 2) + u->want > ps->limit)
		goto refuse;
	*status = MHD_HTTP_INTERNAL_SERVER_ERROR;
	u->fd = open(u->path,
		     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		     0600);
	if (u->fd < 0)
		goto refuse;
	buf_release(&b);
	return u;
refuse:
	u->failed = 1;
	upload_free(u);
	buf_release(&b);
	return NULL;
}

/* The last call of a PUT: the file whole; the manifest completes. */
static enum MHD_Result upload_end(struct MHD_Connection *c,
				  const struct agent_peerserve *ps,
				  const struct agent_peerckpt_path *p,
				  struct upload *u)
{
	int bad = close(u->fd) != 0;

	u->fd = -1;
	bad = bad || u->failed || u->got != u->want;
	if (!bad && u->manifest) {
		(void)fs_remove_tree(u->done);
		bad = rename(u->dir, u->done) != 0;
		if (!bad)
			agent_memckpt_sweep(ps->peers, p->uid);
	}
	u->failed = bad;
	if (bad)
		return status_only(c, MHD_HTTP_BAD_REQUEST,
				   "incomplete upload\n");
	return status_only(c, MHD_HTTP_CREATED, "stored\n");
}

static enum MHD_Result serve_put(struct MHD_Connection *c,
				 const struct agent_peerserve *ps,
				 const struct agent_peerckpt_path *p,
				 const char *data, size_t *size, void **cls)
{
	struct upload *u = *cls;
	unsigned int status;

	if (!u) {
		if (!p->file[0])
			return status_only(c, MHD_HTTP_METHOD_NOT_ALLOWED,
					   "PUT names a file\n");
		u = upload_begin(ps, c, p, &status);
		if (!u)
			return status_only(c, status, "refused\n");
		*cls = u;
		return MHD_YES;
	}
	if (*size) {
		if (!u->failed && (u->got + (int64_t)*size > u->want ||
				   fs_write_all(u->fd, data, *size)))
			u->failed = 1;
		u->got += (int64_t)*size;
		*size = 0;
		return MHD_YES;
	}
	return upload_end(c, ps, p, u);
}

/* --- the daemon ------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *data,
				  size_t *size, void **con_cls)
{
	struct agent_peerserve *ps = cls;
	struct agent_peerckpt_path p;
	int put = !strcmp(method, "PUT");

	(void)version;
	if (*con_cls && put) {
		/* The path was checked on the first call. */
		(void)agent_peerckpt_path(url, &p);
		return serve_put(c, ps, &p, data, size, con_cls);
	}
	if (agent_peerckpt_path(url, &p))
		return status_only(c, MHD_HTTP_NOT_FOUND, "no such path\n");
	if (!allowed(ps, c, p.uid))
		return status_only(c, MHD_HTTP_FORBIDDEN, "not allowed\n");
	if (put)
		return serve_put(c, ps, &p, data, size, con_cls);
	if (strcmp(method, "GET"))
		return status_only(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				   "GET or PUT\n");
	return serve_get(c, ps, &p);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
		    enum MHD_RequestTerminationCode toe)
{
	struct upload *u = *con_cls;

	(void)cls;
	(void)c;
	if (!u)
		return;
	if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		u->failed = 1;
	upload_free(u);
	*con_cls = NULL;
}

int agent_peerserve_start(struct agent_ctx *ctx, struct buf *err)
{
	const struct agent_config *cfg = &ctx->cfg;
	struct agent_peerserve *ps;
	struct buf p = BUF_INIT;
	sigset_t all, old;

	if (cfg->peer_port <= 0 || cfg->memckpt_mb <= 0)
		return 0;
	ps = xcalloc(1, sizeof(*ps));
	ps->own = agent_memckpt_root(cfg->memckpt_dir, cfg->host);
	(void)buf_addf(&p, "%s/" PEER_DIR, ps->own);
	ps->peers = buf_detach(&p, NULL);
	ps->limit = (int64_t)cfg->memckpt_mb << 20;
	pthread_mutex_init(&ps->lock, NULL);
	ctx->peer = ps;
	(void)mkdir(ps->peers, 0700);
	agent_memckpt_sweep(ps->peers, NULL);
	/* The threads start with the mask in force here: none of them. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ps->d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
		(uint16_t)cfg->peer_port, NULL, NULL, on_request, ps,
		MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
		MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS,
		MHD_OPTION_CONNECTION_TIMEOUT, 30U, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ps->d) {
		(void)buf_addf(err,
			       "cannot serve checkpoint copies on port %ld",
			       cfg->peer_port);
		agent_peerserve_stop(ctx);
		return ERR_IO;
	}
	return 0;
}

void agent_peerserve_run(struct agent_ctx *ctx)
{
	if (ctx->peer)
		learn_tokens(ctx);
}

void agent_peerserve_stop(struct agent_ctx *ctx)
{
	struct agent_peerserve *ps = ctx->peer;

	if (!ps)
		return;
	if (ps->d)
		MHD_stop_daemon(ps->d);
	while (ps->n_known--) {
		free(ps->known[ps->n_known].uid);
		free(ps->known[ps->n_known].token);
	}
	pthread_mutex_destroy(&ps->lock);
	free(ps->known);
	free(ps->own);
	free(ps->peers);
	free(ps);
	ctx->peer = NULL;
}
