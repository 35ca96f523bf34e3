#define LOG_TAG "repl"
/*
 * Job logs on every member of a replicated controller
 * (controller/replicate.h): a chunk appended on the leader is copied with
 * its offset; a member whose file is shorter says how long it is and gets
 * the rest; the keeper thread compares each member's listing of its log
 * files' sizes with its own and fetches what its files lack.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/replicate.h"
#include "controller/replicate_int.h"
#include "db/objects.h"
#include "ha/ha.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* A chunk's copy gets this long; a fetch reads at most FETCH_MAX. */
#define APPEND_MS 5000
#define APPEND_GRACE_MS 500
#define FETCH_MAX (4 << 20)

/* ------------------------------------------------------------- names */

/* A job's or a stream's name: [A-Za-z0-9._-], not starting with '.'. */
static int name_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len > 255 || s[0] == '.')
		return 0;
	for (i = 0; i < len; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._-",
			    s[i]) ||
		    !s[i])
			return 0;
	return 1;
}

/*
 * Parses "<offset>/<job>/<stream>" into *off and the file's path (and its
 * job folder). 0 or -1.
 */
static int parse_tail(const char *tail, int64_t *off, struct buf *dir,
		      struct buf *path)
{
	const char *job, *stream;
	char *end;

	*off = strtoll(tail, &end, 10);
	if (end == tail || *end != '/' || *off < 0 || tail[0] == '-')
		return -1;
	job = end + 1;
	stream = strchr(job, '/');
	if (!stream || !name_ok(job, (size_t)(stream - job)) ||
	    !name_ok(stream + 1, strlen(stream + 1)))
		return -1;
	(void)buf_addf(dir, "%s/logs/%.*s", ctrl_repl__state_dir(),
		       (int)(stream - job), job);
	(void)buf_addf(path, "%s/%s.log", dir->data, stream + 1);
	return 0;
}

/* ------------------------------------------------- the members' route */

struct ctrl_replog_req {
	int fd;
	int status;
	int64_t size; /* the file's, before this request */
	int64_t skip; /* bytes of the body this member holds already */
	int64_t seen; /* body bytes read */
	int failed;
	struct buf answer;
};

/* Opens (creating) the log file, locked: 0 or -1. */
static int open_locked(struct ctrl_replog_req *r, const struct buf *dir,
		       const struct buf *path)
{
	struct stat st;
	char *logs = xstrndup(dir->data,
			      (size_t)(strrchr(dir->data, '/') - dir->data));

	(void)mkdir(logs, 0700);
	(void)mkdir(dir->data, 0700);
	free(logs);
	r->fd = open(path->data, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (r->fd < 0 || flock(r->fd, LOCK_EX) || fstat(r->fd, &st))
		return -1;
	r->size = (int64_t)st.st_size;
	return 0;
}

static struct ctrl_replog_req *put_begin(struct ctrl_replog_req *r, int64_t off,
					 int64_t length, int *status)
{
	if (length < 0 || r->size < off) {
		/* A gap: the sender goes back to what this member has. */
		r->status = 409;
	} else if (r->size >= off + length) {
		r->status = 200; /* held already */
	} else {
		r->skip = r->size - off;
		return r;
	}
	*status = r->status;
	(void)buf_addf(&r->answer, "%" PRId64, r->size);
	return r;
}

/* GET: the file's bytes from off, at most FETCH_MAX. */
static struct ctrl_replog_req *get_begin(struct ctrl_replog_req *r, int64_t off,
					 int *status)
{
	int64_t n = r->size > off ? r->size - off : 0;
	ssize_t got;

	if (n > FETCH_MAX)
		n = FETCH_MAX;
	buf_init(&r->answer, (size_t)n + 1);
	if (buf_grow(&r->answer, (size_t)n + 1))
		n = 0;
	got = n ? pread(r->fd, r->answer.data, (size_t)n, off) : 0;
	r->answer.len = got > 0 ? (size_t)got : 0;
	r->answer.data[r->answer.len] = '\0';
	r->status = 200;
	*status = 200;
	return r;
}

/* The size of job's stream's file here, -1 when there is none. */
static int64_t size_here(const char *job, const char *stream)
{
	struct buf p = BUF_INIT;
	struct stat st;
	int64_t size;

	(void)buf_addf(&p, "%s/logs/%s/%s.log", ctrl_repl__state_dir(), job,
		       stream);
	size = stat(p.data, &st) ? -1 : (int64_t)st.st_size;
	buf_release(&p);
	return size;
}

/* GET "": "JOB STREAM SIZE" for every log the store names and this
 * member has. */
static struct ctrl_replog_req *list_logs(struct ctrl_replog_req *r, int *status)
{
	struct db_log_ref *refs = NULL;
	struct buf err = BUF_INIT;
	size_t n = 0, i;

	r->status = db_log_refs(ctrl_repl__db(), &refs, &n, &err) ? 500 : 200;
	for (i = 0; i < n; i++) {
		int64_t size = size_here(refs[i].job, refs[i].stream);

		if (size > 0)
			(void)buf_addf(&r->answer, "%s %s %" PRId64 "\n",
				       refs[i].job, refs[i].stream, size);
	}
	db_log_refs_free(refs, n);
	buf_release(&err);
	*status = r->status;
	return r;
}

struct ctrl_replog_req *ctrl_replog__begin(const char *method, const char *tail,
					   int64_t length, int *status,
					   struct buf *msg)
{
	struct buf dir = BUF_INIT, path = BUF_INIT;
	struct ctrl_replog_req *r = xcalloc(1, sizeof(*r));
	int64_t off;
	int get = !strcmp(method, "GET");

	r->fd = -1;
	buf_init(&r->answer, 0);
	if (get && !*tail && ctrl_repl__state_dir())
		return list_logs(r, status);
	if (!ctrl_repl__state_dir() || parse_tail(tail, &off, &dir, &path)) {
		*status = 400;
		(void)buf_adds(msg, "not a log's path");
	} else if (!get && strcmp(method, "PUT")) {
		*status = 405;
		(void)buf_adds(msg, "GET or PUT");
	} else if (get && access(path.data, F_OK)) {
		*status = 404;
		(void)buf_adds(msg, "no such log");
	} else if (open_locked(r, &dir, &path)) {
		*status = 500;
		(void)buf_addf(msg, "%s: %s", path.data, strerror(errno));
	}
	buf_release(&dir);
	buf_release(&path);
	if (*status) {
		ctrl_replog__release(r);
		return NULL;
	}
	return get ? get_begin(r, off, status) :
		     put_begin(r, off, length, status);
}

void ctrl_replog__data(struct ctrl_replog_req *r, const char *p, size_t n)
{
	size_t from = 0;

	if (r->status || r->failed)
		return;
	if (r->seen < r->skip)
		from = (size_t)(r->skip - r->seen) < n ?
			       (size_t)(r->skip - r->seen) :
			       n;
	r->seen += (int64_t)n;
	while (from < n) {
		ssize_t w = write(r->fd, p + from, n - from);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r->failed = 1;
			return;
		}
		from += (size_t)w;
	}
}

void ctrl_replog__finish(struct ctrl_replog_req *r, struct ha_local_reply *out)
{
	struct stat st;

	if (!r->status) {
		r->status = !r->failed && !fsync(r->fd) && !fstat(r->fd, &st) ?
				    200 :
				    500;
		(void)buf_addf(&r->answer, "%lld",
			       r->status == 200 ? (long long)st.st_size : -1LL);
	}
	out->status = r->status;
	(void)buf_add(&out->body, r->answer.data, r->answer.len);
}

void ctrl_replog__release(struct ctrl_replog_req *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd); /* and its lock */
	buf_release(&r->answer);
	free(r);
}

/* ------------------------------------------------------ the leader's copy */

/* Streams whose last chunk no member took yet. */
static pthread_mutex_t dirty_lock = PTHREAD_MUTEX_INITIALIZER;
static char **dirty;
static size_t n_dirty;

static void dirty_add(const char *job, const char *stream)
{
	struct buf b = BUF_INIT;
	size_t i;

	(void)buf_addf(&b, "%s/%s", job, stream);
	pthread_mutex_lock(&dirty_lock);
	for (i = 0; i < n_dirty && strcmp(dirty[i], b.data); i++)
		;
	if (i == n_dirty) {
		dirty = xrealloc(dirty, (n_dirty + 1) * sizeof(*dirty));
		dirty[n_dirty++] = buf_detach(&b, NULL);
	}
	pthread_mutex_unlock(&dirty_lock);
	buf_release(&b);
}

static void log_url(struct buf *out, const char *member, int64_t off,
		    const char *job, const char *stream)
{
	buf_reset(out);
	(void)buf_addf(out, "%s%slogs/%" PRId64 "/%s/%s", member,
		       CTRL_REPL_PREFIX, off, job, stream);
}

/* The chunk again to the member at url, from the size it said it has. */
static int send_rest(const char *url, const char *job, const char *stream,
		     int fd, int64_t have, int64_t end)
{
	struct ctrl_repl_push p;
	struct buf u = BUF_INIT;
	int ret;

	memset(&p, 0, sizeof(p));
	log_url(&u, url, have, job, stream);
	p.url = u.data;
	p.fd = fd;
	p.base = have;
	p.size = end - have;
	ret = ctrl_repl__push_all(&p, 1, time_mono_ms() + APPEND_MS, 0);
	buf_release(&p.answer);
	buf_release(&u);
	return ret;
}

int ctrl_repl_log_append(const char *job, const char *stream, int fd,
			 int64_t off, int64_t len)
{
	size_t n, i;
	char *const *urls = ctrl_repl__members(&n);
	struct ctrl_repl_push *p;
	struct buf *u;
	int ret;

	if (!ctrl_repl_on())
		return 0;
	p = xcalloc(n, sizeof(*p));
	u = xcalloc(n, sizeof(*u));
	for (i = 0; i < n; i++) {
		log_url(&u[i], urls[i], off, job, stream);
		p[i].url = u[i].data;
		p[i].fd = fd;
		p[i].base = off;
		p[i].size = len;
	}
	ret = ctrl_repl__push_all(p, n, time_mono_ms() + APPEND_MS,
				  APPEND_GRACE_MS);
	/* A member that missed earlier chunks gets them with this one. */
	for (i = 0; i < n && ret; i++)
		if (p[i].status == 409 && p[i].answer.len &&
		    strtoll(p[i].answer.data, NULL, 10) < off)
			ret = send_rest(urls[i], job, stream, fd,
					strtoll(p[i].answer.data, NULL, 10),
					off + len);
	for (i = 0; i < n; i++) {
		buf_release(&p[i].answer);
		buf_release(&u[i]);
	}
	free(p);
	free(u);
	if (ret) {
		log_warn("log %s/%s: no other member took %" PRId64
			 " bytes at %" PRId64,
			 job, stream, len, off);
		dirty_add(job, stream);
	}
	return ret;
}

/* Sends stream "job/stream"'s end again: 0 when a member holds it all. */
static int settle_one(const char *js)
{
	struct buf path = BUF_INIT;
	const char *slash = strchr(js, '/');
	char *job = xstrndup(js, (size_t)(slash - js));
	struct stat st;
	int fd, ret = -1;

	(void)buf_addf(&path, "%s/logs/%s.log", ctrl_repl__state_dir(), js);
	fd = open(path.data, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &st))
		ret = ctrl_repl_log_append(job, slash + 1, fd,
					   (int64_t)st.st_size, 0);
	if (fd >= 0)
		close(fd);
	free(job);
	buf_release(&path);
	return ret;
}

int ctrl_repl_log_settle(void)
{
	char **mine;
	size_t n, i, left = 0;

	pthread_mutex_lock(&dirty_lock);
	mine = dirty;
	n = n_dirty;
	dirty = NULL;
	n_dirty = 0;
	pthread_mutex_unlock(&dirty_lock);
	/* A stream that fails again is added back by the append. */
	for (i = 0; i < n; i++) {
		left += settle_one(mine[i]) != 0;
		free(mine[i]);
	}
	free(mine);
	return left ? -1 : 0;
}

/* ------------------------------------------------------------ catch-up */

/* Appends what the member at url has of a stream past this member's end. */
static void fetch_stream(const char *url, const char *job, const char *stream)
{
	struct buf dir = BUF_INIT, path = BUF_INIT, u = BUF_INIT, body;
	struct ctrl_replog_req r;
	long status;
	int64_t off;

	memset(&r, 0, sizeof(r));
	r.fd = -1;
	(void)buf_addf(&u, "0/%s/%s", job, stream);
	if (parse_tail(u.data, &off, &dir, &path) ||
	    open_locked(&r, &dir, &path))
		goto out;
	log_url(&u, url, r.size, job, stream);
	buf_init(&body, FETCH_MAX);
	if (!ctrl_repl__get(u.data, &status, &body, FETCH_MAX) &&
	    status == 200 && body.len) {
		r.skip = 0;
		ctrl_replog__data(&r, body.data, body.len);
		if (!r.failed && !fsync(r.fd))
			log_info("log %s/%s: %zu bytes from another member",
				 job, stream, body.len);
	}
	buf_release(&body);
out:
	if (r.fd >= 0)
		close(r.fd);
	buf_release(&dir);
	buf_release(&path);
	buf_release(&u);
}

/*
 * Compares the logs of the member at url with this member's (one listing)
 * and fetches from it what this member's files lack.
 */
static void catch_up_from(const char *url)
{
	struct buf u = BUF_INIT, list;
	char *line, *save = NULL;
	long status;

	(void)buf_addf(&u, "%s%slogs/", url, CTRL_REPL_PREFIX);
	if (ctrl_repl__get(u.data, &status, &list, 64 << 20) || status != 200)
		goto out;
	for (line = strtok_r(list.data, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *stream = strchr(line, ' '), *size;

		if (!stream || !(size = strchr(stream + 1, ' ')))
			continue;
		*stream++ = '\0';
		*size++ = '\0';
		if (name_ok(line, strlen(line)) &&
		    name_ok(stream, strlen(stream)) &&
		    strtoll(size, NULL, 10) > size_here(line, stream))
			fetch_stream(url, line, stream);
	}
out:
	buf_release(&list);
	buf_release(&u);
}

void ctrl_replog__catch_up(void)
{
	size_t nm, m;
	char *const *urls = ctrl_repl__members(&nm);

	if (!ctrl_repl__state_dir())
		return;
	for (m = 0; m < nm; m++)
		catch_up_from(urls[m]);
}
