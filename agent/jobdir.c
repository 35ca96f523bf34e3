/*
 * Job directories: <work-dir>/jobs/<job>/<attempt>/<algo>/ holds the
 * /opt/ml tree of one assignment and state.json, the assignment's REPORT,
 * rewritten atomically on every change so that a restarted agent finds
 * its processes again.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/ident.h"
#include "agent/jobdir.h"
#include "agent/lines.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define STATE_FILE "state.json"
#define STATE_MAX (1u << 20)
#define FAILURE_MAX 1024

/* Names that become one path component each: no '/', no "..". */
static int component_ok(const char *s)
{
	size_t i;

	if (!s || !*s || strlen(s) > 255 || s[0] == '.')
		return 0;
	for (i = 0; s[i]; i++)
		if (s[i] == '/' || (unsigned char)s[i] < 0x20)
			return 0;
	return 1;
}

int agent_jobdir_path(const char *work_dir, const char *job, const char *uid,
		      int attempt, const char *algo, struct buf *out,
		      struct buf *err)
{
	if (!component_ok(job) || !component_ok(algo) || attempt < 0 ||
	    (uid && !component_ok(uid))) {
		(void)buf_addf(err, "bad assignment name '%s/%d/%s'",
			       job ? job : "", attempt, algo ? algo : "");
		return ERR_INVALID;
	}
	return buf_addf(out, "%s/jobs/%s%s%s/%d/%s", work_dir, job,
			uid ? "." : "", uid ? uid : "", attempt, algo);
}

/*
 * Writes data to path atomically: temp file, rename. No fsync: these files
 * (config files, state.json) must survive a crash of the agent, which the
 * rename guarantees, not a crash of the host, after which the controller
 * restarts the attempt elsewhere anyway. An fsync here would sit on the
 * launch path of every job.
 */
static int write_atomic(const char *path, const char *data, size_t len,
			struct buf *err)
{
	return fs_write_atomic(path, data, len, 0600, 0, err);
}

static int write_in(const char *dir, const char *rel, const char *text,
		    struct buf *err)
{
	struct buf path = BUF_INIT;
	int ret;

	(void)buf_addf(&path, "%s/%s", dir, rel);
	ret = write_atomic(path.data, text ? text : "{}",
			   text ? strlen(text) : 2, err);
	buf_release(&path);
	return ret;
}

/*
 * With a job user, what its processes write is theirs (mode 0700: no other
 * user reads it); the folder itself, state.json and .trainagent (the
 * ranks' pipes) stay the agent's. .trainagent/scratch is where the job's
 * workers put the archives they make and fetch.
 */
static int give_to_user(const char *dir, const struct api_assignment *spec,
			const struct agent_ident *id, struct buf *err)
{
	static const char *const mine[] = {
		"input",  "code",	 "model",
		"output", "checkpoints", ".trainagent/scratch"
	};
	struct buf path = BUF_INIT;
	char *ckpt =
		agent_jobdir_checkpoint_path(dir, spec->checkpoint_local_path);
	size_t i, n = strlen(dir);
	int ret = 0;

	for (i = 0; i < ARRAY_SIZE(mine) && !ret; i++) {
		buf_reset(&path);
		(void)buf_addf(&path, "%s/%s", dir, mine[i]);
		ret = agent_ident_chown_tree(path.data, id, 0700, err);
	}
	/* LocalPath may be deeper: each of its folders below dir. */
	if (!ret && fs_mkdir_p(ckpt, 0700, NULL)) {
		(void)buf_addf(err, "cannot create %s: %s", ckpt,
			       strerror(errno));
		ret = ERR_IO;
	}
	while (!ret && strlen(ckpt) > n && !strncmp(ckpt, dir, n)) {
		char *slash = strrchr(ckpt, '/');

		if (lchown(ckpt, id->uid, id->gid)) {
			(void)buf_addf(err,
				       "cannot give %s to the job's user: %s",
				       ckpt, strerror(errno));
			ret = ERR_IO;
		}
		*slash = '\0';
	}
	buf_reset(&path);
	(void)buf_addf(&path, "%s/.trainagent", dir);
	if (!ret && chmod(path.data, 0711)) {
		(void)buf_addf(err, "%s: %s", path.data, strerror(errno));
		ret = ERR_IO;
	}
	free(ckpt);
	buf_release(&path);
	return ret;
}

int agent_channel_is_pipe(const struct api_channel *c)
{
	return c->input_mode && !strcmp(c->input_mode, "Pipe");
}

int agent_jobdir_create(const char *dir, const struct api_assignment *spec,
			const struct agent_ident *id, struct buf *err)
{
	static const char *const tree[] = {
		"input/config", "input/data",  "code",
		"model",	"output/data", "output/intermediate",
		"checkpoints",	".trainagent", ".trainagent/scratch",
	};
	struct buf path = BUF_INIT;
	size_t i;
	int ret = 0;

	for (i = 0; i < ARRAY_SIZE(tree) && !ret; i++) {
		buf_reset(&path);
		(void)buf_addf(&path, "%s/%s", dir, tree[i]);
		if (fs_mkdir_p(path.data, 0755, NULL)) {
			(void)buf_addf(err, "cannot create %s: %s", path.data,
				       strerror(errno));
			ret = ERR_IO;
		}
	}
	for (i = 0; i < spec->n_channels && !ret; i++) {
		if (!component_ok(spec->channels[i].name)) {
			(void)buf_addf(err, "bad channel name '%s'",
				       spec->channels[i].name);
			ret = ERR_INVALID;
			break;
		}
		/* A Pipe channel is a named pipe per epoch (pipe.c). */
		if (agent_channel_is_pipe(&spec->channels[i]))
			continue;
		buf_reset(&path);
		(void)buf_addf(&path, "%s/input/data/%s", dir,
			       spec->channels[i].name);
		if (fs_mkdir_p(path.data, 0755, NULL)) {
			(void)buf_addf(err, "cannot create %s: %s", path.data,
				       strerror(errno));
			ret = ERR_IO;
		}
	}
	/* TensorBoard's folder is there for the program to write into. */
	if (!ret && spec->tensorboard_local_path) {
		char *tb = agent_jobdir_checkpoint_path(
			dir, spec->tensorboard_local_path);

		if (fs_mkdir_p(tb, 0755, NULL)) {
			(void)buf_addf(err, "cannot create %s: %s", tb,
				       strerror(errno));
			ret = ERR_IO;
		}
		free(tb);
	}
	if (!ret)
		ret = write_in(dir, "input/config/hyperparameters.json",
			       spec->hyperparameters_json, err);
	if (!ret)
		ret = write_in(dir, "input/config/inputdataconfig.json",
			       spec->input_data_config_json, err);
	if (!ret)
		ret = write_in(dir, "input/config/resourceconfig.json",
			       spec->resource_config_json, err);
	/* What SageMaker Debugger's hook and profiler read. */
	if (!ret && spec->debug_hook_config_json)
		ret = write_in(dir, "input/config/debughookconfig.json",
			       spec->debug_hook_config_json, err);
	if (!ret && spec->profiler_config_json)
		ret = write_in(dir, "input/config/profilerconfig.json",
			       spec->profiler_config_json, err);
	if (!ret && id->set)
		ret = give_to_user(dir, spec, id, err);
	buf_release(&path);
	return ret;
}

int agent_jobdir_save_state(const char *dir, const struct api_status *st,
			    struct buf *err)
{
	struct buf json = BUF_INIT;
	struct buf path = BUF_INIT;
	int ret;

	ret = api_status_build(st, &json);
	if (!ret) {
		(void)buf_addf(&path, "%s/%s", dir, STATE_FILE);
		ret = write_atomic(path.data, json.data, json.len, err);
	}
	buf_release(&json);
	buf_release(&path);
	return ret;
}

/* Reads at most max bytes of path; NULL when it cannot be read. */
static char *read_file(const char *path, size_t max, size_t *len)
{
	struct buf b = BUF_INIT;
	char chunk[8192];
	ssize_t n;
	/* The job's user may have put a link where a file was expected. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	while (b.len < max) {
		n = read(fd, chunk,
			 max - b.len < sizeof(chunk) ? max - b.len :
						       sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		(void)buf_add(&b, chunk, (size_t)n);
	}
	close(fd);
	return buf_detach(&b, len);
}

char *agent_jobdir_read_failure(const char *dir)
{
	struct buf path = BUF_INIT;
	struct buf fixed = BUF_INIT;
	size_t len = 0, i, chars = 0;
	char *raw;

	(void)buf_addf(&path, "%s/output/failure", dir);
	/* 1024 characters are at most 4096 bytes of UTF-8. */
	raw = read_file(path.data, 4 * FAILURE_MAX, &len);
	buf_release(&path);
	if (!raw)
		return NULL;
	agent_utf8_repair(raw, len, &fixed);
	free(raw);
	for (i = 0; i < fixed.len; i++) {
		if (((unsigned char)fixed.data[i] & 0xc0) == 0x80)
			continue;
		if (chars++ == FAILURE_MAX) {
			fixed.len = i;
			fixed.data[i] = '\0';
			break;
		}
	}
	return buf_detach(&fixed, NULL);
}

int agent_jobdir_remove(const char *work_dir, const char *dir)
{
	struct buf parent = BUF_INIT;
	char *slash;
	int ret = 0;

	/* Never follows a symlink out of the job directory. */
	ret = fs_remove_tree(dir);
	/* Remove <attempt> and <job> too once they are empty. */
	(void)buf_adds(&parent, dir);
	for (;;) {
		slash = strrchr(parent.data, '/');
		if (!slash)
			break;
		*slash = '\0';
		parent.len = (size_t)(slash - parent.data);
		if (parent.len <= strlen(work_dir) + 5 || rmdir(parent.data))
			break;
	}
	buf_release(&parent);
	return ret;
}

void agent_jobdir_retire(const char *dir)
{
	struct buf from = BUF_INIT, to = BUF_INIT;

	(void)buf_addf(&from, "%s/%s", dir, STATE_FILE);
	(void)buf_addf(&to, "%s/%s.done", dir, STATE_FILE);
	(void)rename(from.data, to.data);
	buf_release(&from);
	buf_release(&to);
}

char *agent_jobdir_scratch(const char *dir, const char *name)
{
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, "%s/.trainagent/scratch/%s", dir, name);
	return buf_detach(&b, NULL);
}

char *agent_fifo_path(const char *dir, int rank, const char *stream)
{
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, "%s/.trainagent/rank%d.%s", dir, rank, stream);
	return buf_detach(&b, NULL);
}

char *agent_jobdir_checkpoint_path(const char *dir, const char *local_path)
{
	struct buf b = BUF_INIT;
	const char *lp = local_path && *local_path ? local_path :
						     "/opt/ml/checkpoints";

	/* The job sees its directory at /opt/ml (or through SM_*). */
	if (!strcmp(lp, "/opt/ml") || !strncmp(lp, "/opt/ml/", 8))
		(void)buf_addf(&b, "%s%s", dir, lp + 7);
	else
		(void)buf_adds(&b, lp);
	while (b.len > 1 && b.data[b.len - 1] == '/')
		b.data[--b.len] = '\0';
	return buf_detach(&b, NULL);
}

static int is_number(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static void scan_one(const char *dir, agent_state_fn *fn, void *data)
{
	struct api_status st;
	struct buf path = BUF_INIT;
	struct buf err = BUF_INIT;
	size_t len = 0;
	char *json;

	(void)buf_addf(&path, "%s/%s", dir, STATE_FILE);
	json = read_file(path.data, STATE_MAX, &len);
	if (!json)
		goto out;
	if (api_status_parse(json, len, &st, &err)) {
		log_warn("ignoring %s: %s", path.data, err.data);
	} else {
		if (st.n == 1)
			fn(data, dir, &st.items[0]);
		api_status_release(&st);
	}
	free(json);
out:
	buf_release(&path);
	buf_release(&err);
}

void agent_jobdir_scan(const char *work_dir, agent_state_fn *fn, void *data)
{
	struct buf p = BUF_INIT;
	struct dirent *j, *t, *h;
	DIR *dj, *dt, *dh;
	size_t l1, l2;

	(void)buf_addf(&p, "%s/jobs", work_dir);
	dj = opendir(p.data);
	if (!dj)
		goto out;
	while ((j = readdir(dj))) {
		if (!component_ok(j->d_name))
			continue;
		l1 = p.len;
		(void)buf_addf(&p, "/%s", j->d_name);
		dt = opendir(p.data);
		while (dt && (t = readdir(dt))) {
			if (!is_number(t->d_name))
				continue;
			l2 = p.len;
			(void)buf_addf(&p, "/%s", t->d_name);
			dh = opendir(p.data);
			while (dh && (h = readdir(dh))) {
				size_t l3 = p.len;

				if (!component_ok(h->d_name))
					continue;
				(void)buf_addf(&p, "/%s", h->d_name);
				scan_one(p.data, fn, data);
				p.len = l3;
				p.data[l3] = '\0';
			}
			if (dh)
				closedir(dh);
			p.len = l2;
			p.data[l2] = '\0';
		}
		if (dt)
			closedir(dt);
		p.len = l1;
		p.data[l1] = '\0';
	}
	closedir(dj);
out:
	buf_release(&p);
}
