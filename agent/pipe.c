/*
 * Pipe mode (docs/pipe-mode.md): a channel whose input mode is Pipe is not
 * downloaded. Staging checks that it has objects for this host and makes
 * the named pipe input/data/<channel>_0; while the ranks run, a forked
 * worker streams the channel into it, and each time the program has read
 * an epoch to its end, into <channel>_1, _2, ... as SageMaker does.
 *
 * One worker per assignment, with one child per Pipe channel (each blocks
 * in open(2) or write(2) on its own pipe until the program reads); all of
 * them in the worker's process group, which the agent kills when the
 * ranks have ended. A program that stops reading blocks only its writer;
 * nothing is buffered but the chunk in flight.
 */
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zlib.h>

#include "agent/assignment.h"
#include "agent/ident.h"
#include "agent/jobdir.h"
#include "agent/lines.h"
#include "agent/locations.h"
#include "agent/pipe.h"
#include "agent/stage.h"
#include "agent/task.h"
#include "api/manifest.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define PIPE_MANIFEST_MAX (64u << 20)

/* MXNet RecordIO: magic, then (cflag << 29 | length), data, 4-byte pad. */
#define RECORDIO_MAGIC 0xced7230aU
#define RECORDIO_MAX_LEN ((1U << 29) - 1)

/* A stream's reader went away: this epoch ends early. */
#define PIPE_EPIPE 1

static int has_pipes(const struct api_assignment *s)
{
	size_t i;

	for (i = 0; i < s->n_channels; i++)
		if (agent_channel_is_pipe(&s->channels[i]))
			return 1;
	return 0;
}

static int is_gzip(const struct api_channel *c)
{
	return c->compression && !strcmp(c->compression, "Gzip");
}

static int is_recordio(const struct api_channel *c)
{
	return c->record_wrapper && !strcmp(c->record_wrapper, "RecordIO");
}

/* splitmix64: a small generator whose stream a seed fixes. */
static uint64_t next_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void agent_channel_order(const struct api_channel *c, size_t n, int epoch,
			 size_t *order)
{
	uint64_t st;
	size_t i;

	for (i = 0; i < n; i++)
		order[i] = i;
	if (!c->shuffle || n < 2)
		return;
	st = (uint64_t)c->shuffle_seed ^
	     ((uint64_t)(unsigned)epoch * 0xd1b54a32d192ed03ULL);
	for (i = n - 1; i > 0; i--) {
		size_t j = (size_t)(next_rand(&st) % (i + 1));
		size_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

char *agent_pipe_path(const char *dir, const char *channel, int epoch)
{
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, "%s/input/data/%s_%d", dir, channel, epoch);
	return buf_detach(&b, NULL);
}

/* Makes the named pipe of an epoch, replacing what a restage left. */
static int make_fifo(const char *dir, const char *channel, int epoch,
		     struct buf *err)
{
	char *path = agent_pipe_path(dir, channel, epoch);
	int ret = 0;

	(void)unlink(path);
	if (mkfifo(path, 0644)) {
		(void)buf_addf(err, "cannot create the pipe %s: %s", path,
			       strerror(errno));
		ret = ERR_IO;
	}
	free(path);
	return ret;
}

static int collect_manifest(void *arg, const char *data, size_t n)
{
	return buf_add(arg, data, n) ? ERR_TOOBIG : 0;
}

/* The bucket part of a URI ("s3://b/" or "file:///"), for listed keys. */
static void object_uri(const struct stor_uri *u, const char *key,
		       struct buf *out)
{
	if (u->scheme == STOR_SCHEME_FILE)
		(void)buf_addf(out, "file:///%s", key);
	else
		(void)buf_addf(out, "s3://%s/%s", u->bucket, key);
}

/*
 * The channel's objects, in order: an S3Prefix's keys in byte order, a
 * ManifestFile's in its order. sizes[i] is -1 when not listed.
 */
static int pipe_objects(struct stor *st, const struct api_assignment *s,
			const struct api_channel *c, struct strvec *uris,
			int64_t **sizes, struct buf *err)
{
	struct stor_list l = STOR_LIST_INIT;
	struct stor_uri u;
	struct buf uri = BUF_INIT, text = BUF_INIT_MAX(PIPE_MANIFEST_MAX);
	struct buf why = BUF_INIT;
	size_t i, n = 0;
	char *prefix = NULL;
	char **keys = NULL;
	int ret;

	*sizes = NULL;
	ret = agent_channel_uri_check(s, c, c->s3_uri, err);
	if (ret)
		return ret;
	if (c->s3_data_type && !strcmp(c->s3_data_type, "ManifestFile")) {
		ret = stor_get_stream(st, c->s3_uri, collect_manifest, &text,
				      NULL, err);
		if (!ret && api_manifest_parse(text.data, text.len, &prefix,
					       &keys, &n, &why)) {
			(void)buf_addf(err, "%s: %s", c->s3_uri, why.data);
			ret = ERR_INVALID;
		}
		if (ret)
			goto out;
		*sizes = xcalloc(n ? n : 1, sizeof(**sizes));
		for (i = 0; i < n; i++) {
			size_t plen = strlen(prefix);

			buf_reset(&uri);
			(void)buf_addf(&uri, "%s%s%s", prefix,
				       plen && prefix[plen - 1] == '/' ? "" :
									 "/",
				       keys[i]);
			ret = agent_manifest_uri_check(s, c, uri.data, err);
			if (ret)
				goto out;
			(*sizes)[uris->n] = -1;
			strvec_push(uris, uri.data);
		}
		goto out;
	}
	ret = stor_uri_parse(c->s3_uri, &u, err);
	if (ret)
		goto out;
	ret = stor_list(st, c->s3_uri, &l, err);
	*sizes = xcalloc(l.n ? l.n : 1, sizeof(**sizes));
	for (i = 0; !ret && i < l.n; i++) {
		buf_reset(&uri);
		object_uri(&u, l.v[i].key, &uri);
		(*sizes)[uris->n] = l.v[i].size;
		strvec_push(uris, uri.data);
	}
	stor_uri_release(&u);
out:
	if (!ret && uris->n == 0) {
		(void)buf_addf(err, "channel '%s': no objects under %s",
			       c->name, c->s3_uri);
		ret = ERR_NOTFOUND;
	}
	if (ret) {
		free(*sizes);
		*sizes = NULL;
	}
	api_manifest_release(prefix, keys, n);
	stor_list_release(&l);
	buf_release(&uri);
	buf_release(&text);
	buf_release(&why);
	return ret;
}

/*
 * Which objects this host streams in an epoch, in order: positions of the
 * (shuffled) list, with ShardedByS3Key this host's share of them.
 * Returns their count; pick holds indices into the list.
 */
static size_t epoch_pick(const struct api_assignment *s,
			 const struct api_channel *c, size_t n, int epoch,
			 size_t *pick)
{
	/* A channel of some instance groups is split between their hosts. */
	size_t hosts = c->shard_count > 0 ? (size_t)c->shard_count :
		       s->n_hosts	  ? s->n_hosts :
					    1;
	size_t me = c->shard_count > 0 ? (size_t)c->shard_index :
					 (size_t)s->host_index;
	size_t k, m = 0;
	int sharded = c->distribution &&
		      !strcmp(c->distribution, "ShardedByS3Key");

	agent_channel_order(c, n, epoch, pick);
	for (k = 0; k < n; k++)
		if (!sharded || k % hosts == me)
			pick[m++] = pick[k];
	return m;
}

int agent_pipe_stage(struct stor *st, const struct api_assignment *s,
		     const struct api_channel *c, const char *dir, int fd,
		     struct buf *err)
{
	struct strvec uris = STRVEC_INIT;
	int64_t *sizes = NULL, bytes = 0;
	size_t *pick = NULL, i, m = 0;
	int ret = 0;

	if (is_gzip(c) && is_recordio(c)) {
		(void)buf_addf(err,
			       "channel '%s': RecordWrapperType RecordIO "
			       "with CompressionType Gzip is not supported",
			       c->name);
		return ERR_INVALID;
	}
	if (c->s3_data_type && strcmp(c->s3_data_type, "S3Prefix") &&
	    strcmp(c->s3_data_type, "ManifestFile")) {
		(void)buf_addf(err,
			       "channel '%s': S3DataType %s is not supported "
			       "in Pipe mode",
			       c->name, c->s3_data_type);
		return ERR_INVALID;
	}
	ret = pipe_objects(st, s, c, &uris, &sizes, err);
	if (!ret) {
		pick = xcalloc(uris.n, sizeof(*pick));
		m = epoch_pick(s, c, uris.n, 0, pick);
	}
	if (!ret && m == 0) {
		(void)buf_addf(err, "channel '%s': no objects for this host",
			       c->name);
		ret = ERR_NOTFOUND;
	}
	for (i = 0; !ret && i < uris.n; i++) {
		if (is_recordio(c) && sizes[i] < 0) {
			(void)buf_addf(err,
				       "channel '%s': RecordIO needs S3Prefix "
				       "objects (their sizes are listed)",
				       c->name);
			ret = ERR_INVALID;
		}
	}
	/* A manifest's objects are not listed: their sizes are unknown. */
	for (i = 0; !ret && i < m && bytes >= 0; i++)
		bytes = sizes[pick[i]] < 0 ? -1 : bytes + sizes[pick[i]];
	if (!ret)
		ret = make_fifo(dir, c->name, 0, err);
	if (!ret)
		agent_task_say(fd,
			       "log channel '%s': Pipe of %zu of %zu objects "
			       "(%lld bytes in epoch 0; -1: not listed)%s%s",
			       c->name, m, uris.n, (long long)bytes,
			       m < uris.n ? ", sharded by key" : "",
			       c->shuffle ? ", shuffled" : "");
	free(pick);
	free(sizes);
	strvec_release(&uris);
	return ret;
}

/* --- the writer ------------------------------------------------------- */

struct pipe_writer {
	int fd;		   /* the epoch's pipe, write end */
	int recordio;	   /* wrap each object as RecordIO records */
	int64_t obj_left;  /* RecordIO: bytes of the object still to come */
	uint32_t rec_left; /* ... of the current record */
	uint32_t rec_len;  /* ... its length, for the padding */
	int gzip;
	z_stream z;
	int z_live;
	int64_t written; /* bytes into the pipe this epoch */
};

static int write_all(struct pipe_writer *w, const void *data, size_t n)
{
	const char *p = data;

	while (n > 0) {
		ssize_t r = write(w->fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno == EPIPE ? PIPE_EPIPE : ERR_IO;
		p += r;
		n -= (size_t)r;
		w->written += r;
	}
	return 0;
}

static int record_header(struct pipe_writer *w, int first)
{
	uint32_t len = w->obj_left > RECORDIO_MAX_LEN ? RECORDIO_MAX_LEN :
							(uint32_t)w->obj_left;
	int last = (int64_t)len == w->obj_left;
	uint32_t cflag = first && last ? 0 : first ? 1 : last ? 3 : 2;
	unsigned char h[8];
	uint32_t v[2] = { RECORDIO_MAGIC, cflag << 29 | len };
	int i;

	/* Little-endian, as MXNet writes it. */
	for (i = 0; i < 8; i++)
		h[i] = (unsigned char)(v[i / 4] >> (8 * (i % 4)));
	w->rec_left = len;
	w->rec_len = len;
	return write_all(w, h, sizeof(h));
}

static int record_pad(struct pipe_writer *w)
{
	static const char zero[4];
	size_t pad = (4 - w->rec_len % 4) % 4;

	return pad ? write_all(w, zero, pad) : 0;
}

/* Raw object bytes, wrapped when RecordIO is asked for. */
static int put_data(struct pipe_writer *w, const char *data, size_t n)
{
	int ret;

	if (!w->recordio)
		return write_all(w, data, n);
	while (n > 0) {
		size_t k;

		if (w->obj_left <= 0)
			return ERR_IO; /* more bytes than listed */
		k = n < w->rec_left ? n : w->rec_left;
		ret = write_all(w, data, k);
		if (ret)
			return ret;
		data += k;
		n -= k;
		w->rec_left -= (uint32_t)k;
		w->obj_left -= (int64_t)k;
		if (w->rec_left == 0) {
			ret = record_pad(w);
			if (!ret && w->obj_left > 0)
				ret = record_header(w, 0);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static int on_chunk(void *arg, const char *data, size_t n)
{
	struct pipe_writer *w = arg;
	unsigned char out[65536];
	int zr, ret;

	if (!w->gzip)
		return put_data(w, data, n);
	w->z.next_in = (unsigned char *)(uintptr_t)data;
	w->z.avail_in = (uInt)n;
	/* Until the input is used up and no output is pending. */
	do {
		w->z.next_out = out;
		w->z.avail_out = sizeof(out);
		zr = inflate(&w->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return ERR_INVALID;
		ret = put_data(w, (const char *)out,
			       sizeof(out) - w->z.avail_out);
		if (ret)
			return ret;
		/* Concatenated gzip members decompress one after another. */
		if (zr == Z_STREAM_END && inflateReset(&w->z) != Z_OK)
			return ERR_INVALID;
		if (zr == Z_BUF_ERROR)
			break;
	} while (w->z.avail_in > 0 || w->z.avail_out == 0);
	return 0;
}

/* Streams one object into the epoch's pipe. */
static int stream_object(struct stor *st, struct pipe_writer *w,
			 const char *uri, int64_t size, struct buf *err)
{
	int64_t got = 0;
	int ret;

	if (w->recordio) {
		w->obj_left = size;
		ret = record_header(w, 1);
		if (ret)
			return ret;
	}
	if (w->gzip) {
		memset(&w->z, 0, sizeof(w->z));
		if (inflateInit2(&w->z, 16 + MAX_WBITS) != Z_OK) {
			(void)buf_addf(err, "zlib: cannot start");
			return ERR_NOMEM;
		}
		w->z_live = 1;
	}
	ret = stor_get_stream(st, uri, on_chunk, w, &got, err);
	if (w->z_live) {
		(void)inflateEnd(&w->z);
		w->z_live = 0;
	}
	if (ret == ERR_INVALID && w->gzip)
		(void)buf_addf(err, " (not gzip data)");
	if (!ret && w->recordio && (w->obj_left != 0 || got != size)) {
		(void)buf_addf(err, "%s changed while it was read", uri);
		ret = ERR_IO;
	}
	if (!ret && w->recordio && size == 0)
		ret = record_pad(w);
	return ret;
}

struct pipe_job {
	struct agent_ctx *ctx;
	struct agent_assign *a;
};

/*
 * One channel's writer, in a child of the worker: epoch after epoch, opens
 * the pipe (which waits for the program to open it), streams the objects
 * and, before closing it, makes the next epoch's pipe, so that a program
 * that saw the end of one finds the next one there.
 */
static int channel_main(struct pipe_job *pj, const struct api_channel *c,
			int fd)
{
	const struct api_assignment *s = &pj->a->spec;
	struct stor_config cfg;
	struct stor *st = NULL;
	struct strvec uris = STRVEC_INIT;
	struct buf err = BUF_INIT;
	struct pipe_writer w;
	int64_t *sizes = NULL;
	size_t *pick = NULL, i, m = 0;
	char *path;
	int epoch, ret;

	agent_stor_config(pj->ctx, s, &cfg);
	ret = stor_open(&cfg, &st, &err);
	if (!ret)
		ret = pipe_objects(st, s, c, &uris, &sizes, &err);
	if (!ret)
		pick = xcalloc(uris.n, sizeof(*pick));
	for (epoch = 0; !ret; epoch++) {
		m = epoch_pick(s, c, uris.n, epoch, pick);
		memset(&w, 0, sizeof(w));
		w.recordio = is_recordio(c);
		w.gzip = is_gzip(c);
		path = agent_pipe_path(pj->a->dir, c->name, epoch);
		do {
			w.fd = open(path, O_WRONLY | O_CLOEXEC);
		} while (w.fd < 0 && errno == EINTR);
		if (w.fd < 0) {
			(void)buf_addf(&err, "cannot open %s: %s", path,
				       strerror(errno));
			ret = ERR_IO;
		}
		free(path);
		for (i = 0; !ret && i < m; i++)
			ret = stream_object(st, &w, uris.v[pick[i]],
					    sizes[pick[i]], &err);
		if (ret == PIPE_EPIPE) {
			/* The reader closed it early: on to the next. */
			buf_reset(&err);
			ret = 0;
		}
		if (!ret)
			ret = make_fifo(pj->a->dir, c->name, epoch + 1, &err);
		if (w.fd >= 0)
			close(w.fd);
	}
	agent_task_say(fd, "note channel '%s': Pipe stopped at epoch %d: %s",
		       c->name, epoch, err.len ? err.data : err_str(ret));
	free(pick);
	free(sizes);
	strvec_release(&uris);
	if (st)
		stor_close(st);
	stor_config_release(&cfg);
	buf_release(&err);
	return 1;
}

/* Runs in the worker: one child per Pipe channel, then waits. */
static int pipe_main(void *arg, int fd)
{
	struct pipe_job *pj = arg;
	const struct api_assignment *s = &pj->a->spec;
	size_t i;
	pid_t pid;

	for (i = 0; i < s->n_channels; i++) {
		if (!agent_channel_is_pipe(&s->channels[i]))
			continue;
		pid = fork();
		if (pid == 0) {
			/* Not even a moment without the worker. */
			(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(1);
			_exit(channel_main(pj, &s->channels[i], fd));
		}
		if (pid < 0)
			agent_task_say(fd,
				       "note channel '%s': cannot start its "
				       "Pipe: %s",
				       s->channels[i].name, strerror(errno));
	}
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return 0;
}

int agent_pipe_start(struct agent_ctx *ctx, struct agent_assign *a,
		     struct buf *err)
{
	struct pipe_job pj = { ctx, a };
	int ret;

	if (!a->have_spec || !has_pipes(&a->spec))
		return 0;
	ret = agent_ident_resolve(&a->ident, a->spec.run_as, err);
	if (!ret)
		ret = agent_task_start(&a->pipe, pipe_main, &pj, &a->ident,
				       err);
	return ret;
}

void agent_pipe_stop(struct agent_assign *a)
{
	agent_task_kill(&a->pipe);
}

struct pipe_line {
	struct agent_assign *a;
	struct strvec *notes;
};

static void on_pipe_line(void *arg, const char *line, size_t len)
{
	struct pipe_line *tl = arg;

	(void)len;
	if (!strncmp(line, "note ", 5))
		strvec_push(tl->notes, line + 5);
	else if (!strncmp(line, "log ", 4))
		log_info("%s/%d/%s: %s", tl->a->job, tl->a->attempt,
			 tl->a->algo, line + 4);
}

void agent_pipe_on_report(struct agent_assign *a, struct strvec *notes)
{
	struct pipe_line tl = { a, notes };

	if (a->pipe.fd < 0)
		return;
	if (agent_lines_read(&a->pipe.lines, a->pipe.fd, on_pipe_line, &tl)) {
		close(a->pipe.fd);
		a->pipe.fd = -1;
	}
}
