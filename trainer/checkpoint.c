/*
 * Atomic checkpoints: files go into a private temporary directory, the
 * manifest is written last, and one rename(2) publishes the whole step.
 * A crash leaves either the previous state or a .tmp- directory, which
 * _latest ignores and the next save of this rank removes. The layout and
 * the manifest are described in docs/checkpoints.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "trainer/internal.h"
#include "common/banned.h"

#define STEP_MAX INT64_C(9999999999) /* ten digits in the directory name */
#define TMP_PREFIX ".tmp-step-"

/* "step-0000000042.rank-3" */
static void step_dirname(char *buf, size_t len, int64_t step, int rank)
{
	(void)snprintf(buf, len, "step-%010" PRId64 ".rank-%d", step, rank);
}

static int check_step(struct trainer *t, int64_t step)
{
	if (step < 0 || step > STEP_MAX)
		return trainer__err(t, TRAINER_EINVAL,
				    "checkpoint step %" PRId64
				    " is not in 0..9999999999",
				    step);
	return 0;
}

static int all_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n > 0;
}

/*
 * The step of a directory entry "step-<10 digits>.rank-<rank>" of this
 * rank, or -1 for any other name.
 */
static int64_t parse_step_dir(const char *name, int rank)
{
	char suffix[32];
	int64_t step = 0;
	size_t i;

	if (strncmp(name, "step-", 5) || !all_digits(name + 5, 10))
		return -1;
	(void)snprintf(suffix, sizeof(suffix), ".rank-%d", rank);
	if (strcmp(name + 15, suffix))
		return -1;
	for (i = 5; i < 15; i++)
		step = step * 10 + (name[i] - '0');
	return step;
}

/*
 * Whether a directory entry is a temporary directory of this rank:
 * ".tmp-step-<10 digits>.rank-<rank>.<anything>".
 */
static int is_own_tmp(const char *name, int rank)
{
	char suffix[32];
	size_t n;

	if (strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)))
		return 0;
	name += strlen(TMP_PREFIX);
	if (!all_digits(name, 10))
		return 0;
	n = (size_t)snprintf(suffix, sizeof(suffix), ".rank-%d.", rank);
	return !strncmp(name + 10, suffix, n);
}

/* Removes a file or a directory tree; a missing path is no error. */
static int rm_rf(struct trainer *t, const char *path)
{
	struct dirent *de;
	struct stat st;
	char *sub;
	DIR *d;
	int ret = 0;

	if (lstat(path, &st))
		return errno == ENOENT ?
			       0 :
			       trainer__err(t, TRAINER_EIO, "stat %s: %s", path,
					    strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) && errno != ENOENT)
			return trainer__err(t, TRAINER_EIO, "unlink %s: %s",
					    path, strerror(errno));
		return 0;
	}
	d = opendir(path);
	if (!d)
		return trainer__err(t, TRAINER_EIO, "opendir %s: %s", path,
				    strerror(errno));
	while (!ret && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		sub = trainer__path_join(path, de->d_name);
		if (!sub) {
			ret = trainer__err(t, TRAINER_ENOMEM, "out of memory");
			break;
		}
		ret = rm_rf(t, sub);
		free(sub);
	}
	(void)closedir(d);
	if (!ret && rmdir(path) && errno != ENOENT)
		ret = trainer__err(t, TRAINER_EIO, "rmdir %s: %s", path,
				   strerror(errno));
	return ret;
}

/* mkdir -p */
static int mkdir_p(struct trainer *t, const char *dir)
{
	char *p, *s, c;
	struct stat st;
	int ret = 0;

	s = trainer__strdup(dir);
	if (!s)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	for (p = s + 1; ret == 0; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		c = *p;
		*p = '\0';
		if (mkdir(s, 0755) && errno != EEXIST)
			ret = trainer__err(t, TRAINER_EIO, "mkdir %s: %s", s,
					   strerror(errno));
		*p = c;
		if (c == '\0')
			break;
	}
	if (!ret && (stat(s, &st) || !S_ISDIR(st.st_mode)))
		ret = trainer__err(t, TRAINER_EIO, "%s is not a directory", s);
	free(s);
	return ret;
}

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * The steps of this rank's checkpoint directories, newest first, in a
 * malloc'ed array (NULL and 0 when the directory does not exist).
 */
static int list_steps(struct trainer *t, int64_t **out, size_t *n)
{
	int64_t *v = NULL, *nv, step;
	size_t cap = 0;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*n = 0;
	d = opendir(t->ckpt_dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return trainer__err(t, TRAINER_EIO, "opendir %s: %s",
				    t->ckpt_dir, strerror(errno));
	}
	while ((de = readdir(d)) != NULL) {
		step = parse_step_dir(de->d_name, t->rank);
		if (step < 0)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				(void)closedir(d);
				*n = 0;
				return trainer__err(t, TRAINER_ENOMEM,
						    "out of memory");
			}
			v = nv;
		}
		v[(*n)++] = step;
	}
	(void)closedir(d);
	if (*n > 1)
		qsort(v, *n, sizeof(*v), cmp_desc);
	*out = v;
	return 0;
}

/*
 * Whether the checkpoint of step is complete: its manifest names this
 * step and rank and every file has its size (and hash, when hash is set).
 * 0 when complete, else the reason's code.
 */
static int verify_step(struct trainer *t, int64_t step, int hash)
{
	struct trainer__manifest m;
	char name[64], *dir;
	size_t i;
	int ret;

	step_dirname(name, sizeof(name), step, t->rank);
	dir = trainer__path_join(t->ckpt_dir, name);
	if (!dir)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	ret = trainer__manifest_read(t, dir, &m);
	if (ret) {
		free(dir);
		return ret;
	}
	if (m.step != step || m.rank != t->rank)
		ret = trainer__err(t, TRAINER_EIO,
				   "%s: manifest is for step %" PRId64
				   " rank %d",
				   dir, m.step, m.rank);
	for (i = 0; !ret && i < m.n; i++)
		ret = trainer__file_verify(t, dir, &m.files[i], hash, NULL);
	trainer__manifest_release(&m);
	free(dir);
	return ret;
}

/* Removes this rank's temporary directories left by a crashed save. */
static int clean_tmp(struct trainer *t)
{
	struct dirent *de;
	char *path;
	DIR *d;
	int ret = 0;

	d = opendir(t->ckpt_dir);
	if (!d)
		return trainer__err(t, TRAINER_EIO, "opendir %s: %s",
				    t->ckpt_dir, strerror(errno));
	while (!ret && (de = readdir(d)) != NULL) {
		if (!is_own_tmp(de->d_name, t->rank))
			continue;
		path = trainer__path_join(t->ckpt_dir, de->d_name);
		if (!path) {
			ret = trainer__err(t, TRAINER_ENOMEM, "out of memory");
			break;
		}
		ret = rm_rf(t, path);
		free(path);
	}
	(void)closedir(d);
	return ret;
}

/*
 * Keeps the checkpoint just saved and the newest keep-1 other complete
 * ones of this rank; removes the rest.
 */
static int prune(struct trainer *t, int64_t saved)
{
	char name[64], *path;
	int64_t *steps = NULL;
	size_t n = 0, i;
	int kept = 1, ret;

	if (t->keep <= 0)
		return 0;
	ret = list_steps(t, &steps, &n);
	for (i = 0; !ret && i < n; i++) {
		if (steps[i] == saved)
			continue;
		if (kept < t->keep && verify_step(t, steps[i], 0) == 0) {
			kept++;
			continue;
		}
		step_dirname(name, sizeof(name), steps[i], t->rank);
		path = trainer__path_join(t->ckpt_dir, name);
		if (!path) {
			ret = trainer__err(t, TRAINER_ENOMEM, "out of memory");
			break;
		}
		ret = rm_rf(t, path);
		free(path);
	}
	free(steps);
	return ret;
}

static int check_files(struct trainer *t, const struct trainer_file *files,
		       size_t n)
{
	size_t i, j;

	if (n > 0 && !files)
		return trainer__err(t, TRAINER_EINVAL, "files is NULL");
	for (i = 0; i < n; i++) {
		if (!trainer__name_valid(files[i].name))
			return trainer__err(t, TRAINER_EINVAL,
					    "checkpoint file name '%s' is not "
					    "[A-Za-z0-9._-]{1,255} (nor ., .., "
					    "MANIFEST.json)",
					    files[i].name ? files[i].name :
							    "(null)");
		if (!files[i].data && files[i].len > 0)
			return trainer__err(t, TRAINER_EINVAL,
					    "checkpoint file '%s': data is "
					    "NULL",
					    files[i].name);
		for (j = 0; j < i; j++)
			if (!strcmp(files[i].name, files[j].name))
				return trainer__err(t, TRAINER_EINVAL,
						    "checkpoint file '%s' "
						    "given twice",
						    files[i].name);
	}
	return 0;
}

/* Moves tmp to final, replacing a checkpoint of the same step. */
static int publish(struct trainer *t, const char *tmp, const char *final)
{
	char *old;
	size_t n;
	int ret;

	if (rename(tmp, final) == 0)
		return 0;
	if (errno != ENOTEMPTY && errno != EEXIST)
		return trainer__err(t, TRAINER_EIO, "rename %s: %s", tmp,
				    strerror(errno));
	/* The old one goes under a .tmp- name, so a crash here leaves
	 * nothing that counts as a checkpoint and the next save cleans it. */
	n = strlen(tmp);
	old = malloc(n + 5);
	if (!old)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	memcpy(old, tmp, n);
	memcpy(old + n, ".old", 5);
	if (rename(final, old) || rename(tmp, final)) {
		ret = trainer__err(t, TRAINER_EIO, "rename %s: %s", final,
				   strerror(errno));
		free(old);
		return ret;
	}
	ret = rm_rf(t, old);
	free(old);
	return ret;
}

/* The request file, or NULL outside a job. */
static const char *request_path(void)
{
	const char *p = getenv("TRAINCTL_CHECKPOINT_NOW");

	return p && *p ? p : NULL;
}

int trainer_checkpoint_requested(struct trainer *t)
{
	const char *path = request_path();
	int64_t any;
	int ret;

	if (!t)
		return TRAINER_EINVAL;
	if (path && !t->ckpt_now_listening) {
		size_t len = strlen(path) + sizeof(".listening");
		char *mark = malloc(len);
		int fd;

		if (!mark)
			return trainer__err(t, TRAINER_ENOMEM, "out of memory");
		(void)snprintf(mark, len, "%s.listening", path);
		fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			ret = trainer__err(t, TRAINER_EIO, "create %s: %s",
					   mark, strerror(errno));
			free(mark);
			return ret;
		}
		close(fd);
		free(mark);
		t->ckpt_now_listening = 1;
	}
	any = path && !access(path, F_OK);
	if (t->world > 1) {
		ret = trainer_allreduce(t, &any, 1, TRAINER_INT64, TRAINER_MAX);
		if (ret)
			return ret;
	}
	t->ckpt_now_pending = any > 0;
	return t->ckpt_now_pending;
}

/* Every rank saved the requested checkpoint: the agent may stop them. */
static int answer_request(struct trainer *t)
{
	const char *path = request_path();
	int ret = t->world > 1 ? trainer_barrier(t) : 0;

	if (ret)
		return ret;
	t->ckpt_now_pending = 0;
	if (path && unlink(path) && errno != ENOENT)
		return trainer__err(t, TRAINER_EIO, "remove %s: %s", path,
				    strerror(errno));
	return 0;
}

int trainer_checkpoint_save(struct trainer *t, int64_t step,
			    const struct trainer_file *files, size_t n)
{
	struct trainer__manifest m = { 0 };
	char name[64], tname[128];
	char *tmp = NULL, *final = NULL;
	size_t i;
	int ret;

	if (!t)
		return TRAINER_EINVAL;
	ret = check_step(t, step);
	if (!ret)
		ret = check_files(t, files, n);
	if (!ret)
		ret = mkdir_p(t, t->ckpt_dir);
	if (!ret)
		ret = clean_tmp(t);
	if (ret)
		return ret;

	step_dirname(name, sizeof(name), step, t->rank);
	(void)snprintf(tname, sizeof(tname), ".tmp-%s.%ld", name,
		       (long)getpid());
	tmp = trainer__path_join(t->ckpt_dir, tname);
	final = trainer__path_join(t->ckpt_dir, name);
	m.files = calloc(n + 1, sizeof(*m.files));
	if (!tmp || !final || !m.files) {
		ret = trainer__err(t, TRAINER_ENOMEM, "out of memory");
		goto out;
	}
	if (mkdir(tmp, 0755)) {
		ret = trainer__err(t, TRAINER_EIO, "mkdir %s: %s", tmp,
				   strerror(errno));
		free(tmp);
		tmp = NULL; /* not ours: do not remove it */
		goto out;
	}
	m.step = step;
	m.rank = t->rank;
	m.world_size = t->world;
	for (i = 0; i < n; i++) {
		/* The names point into the caller's array; m does not own
		 * them, so m.n stays 0 for the release below. */
		m.files[i].name = (char *)files[i].name;
		m.files[i].size = files[i].len;
		ret = trainer__file_write(t, tmp, files[i].name, files[i].data,
					  files[i].len, m.files[i].sha256);
		if (ret)
			goto out;
	}
	m.n = n;
	ret = trainer__manifest_write(t, tmp, &m);
	m.n = 0;
	if (!ret)
		ret = trainer__dir_fsync(t, tmp);
	if (!ret)
		ret = publish(t, tmp, final);
	if (ret)
		goto out;
	free(tmp);
	tmp = NULL;
	ret = trainer__dir_fsync(t, t->ckpt_dir);
	if (!ret)
		ret = prune(t, step);
	if (!ret && t->ckpt_now_pending)
		ret = answer_request(t);
out:
	if (tmp)
		(void)rm_rf(t, tmp);
	free(m.files);
	free(tmp);
	free(final);
	return ret;
}

void trainer_checkpoint_keep(struct trainer *t, int keep)
{
	if (t)
		t->keep = keep;
}

/* The newest complete step <= bound, or -1; hashes are checked. */
static int newest_complete(struct trainer *t, int64_t bound, int64_t *step)
{
	int64_t *steps = NULL;
	size_t n = 0, i;
	int ret;

	*step = -1;
	ret = list_steps(t, &steps, &n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (steps[i] > bound)
			continue;
		ret = verify_step(t, steps[i], 1);
		if (ret == TRAINER_ENOMEM)
			break;
		if (ret == 0) {
			*step = steps[i];
			break;
		}
		ret = 0;
	}
	free(steps);
	return ret;
}

int trainer_checkpoint_latest(struct trainer *t, int64_t *step)
{
	int64_t s;
	int ret;

	if (!t || !step)
		return t ? trainer__err(t, TRAINER_EINVAL, "step is NULL") :
			   TRAINER_EINVAL;
	ret = newest_complete(t, STEP_MAX, &s);
	if (ret)
		return ret;
	if (s < 0)
		return trainer__err(t, TRAINER_ENOTFOUND,
				    "no complete checkpoint of rank %d in %s",
				    t->rank, t->ckpt_dir);
	*step = s;
	return 0;
}

int trainer_checkpoint_load(struct trainer *t, int64_t step, const char *name,
			    void **data, size_t *len)
{
	struct trainer__manifest m;
	char dname[64], *dir;
	size_t i;
	int ret;

	if (!t)
		return TRAINER_EINVAL;
	if (data)
		*data = NULL;
	if (len)
		*len = 0;
	if (!data || !len)
		return trainer__err(t, TRAINER_EINVAL, "data or len is NULL");
	ret = check_step(t, step);
	if (ret)
		return ret;
	if (!trainer__name_valid(name))
		return trainer__err(t, TRAINER_EINVAL,
				    "checkpoint file name '%s' is not valid",
				    name ? name : "(null)");
	step_dirname(dname, sizeof(dname), step, t->rank);
	dir = trainer__path_join(t->ckpt_dir, dname);
	if (!dir)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	ret = trainer__manifest_read(t, dir, &m);
	if (ret == TRAINER_ENOTFOUND)
		ret = trainer__err(t, TRAINER_ENOTFOUND,
				   "no checkpoint of step %" PRId64
				   " for rank %d in %s",
				   step, t->rank, t->ckpt_dir);
	if (ret) {
		free(dir);
		return ret;
	}
	for (i = 0; i < m.n; i++)
		if (!strcmp(m.files[i].name, name))
			break;
	if (i == m.n)
		ret = trainer__err(t, TRAINER_ENOTFOUND,
				   "checkpoint step %" PRId64
				   " has no file '%s'",
				   step, name);
	else
		ret = trainer__file_verify(t, dir, &m.files[i], 1, data);
	if (!ret)
		*len = (size_t)m.files[i].size;
	trainer__manifest_release(&m);
	free(dir);
	return ret;
}

/*
 * Rounds of one allreduce each: every rank proposes its newest complete
 * step at or below the bound; the MIN becomes the next bound, and when
 * MIN equals MAX every rank has that step. The first round is the MIN of
 * every rank's latest; more rounds happen only when ranks hold different
 * sets of steps. Every rank takes part in every round, even after a local
 * failure (it proposes -1), so that no rank is left waiting.
 */
int trainer_checkpoint_latest_all(struct trainer *t, int64_t *step)
{
	int64_t bound = STEP_MAX, p, v[2];
	int local = 0, ret;
	char msg[TRAINER__ERRLEN];

	if (!t || !step)
		return t ? trainer__err(t, TRAINER_EINVAL, "step is NULL") :
			   TRAINER_EINVAL;
	for (;;) {
		p = -1;
		if (!local) {
			local = newest_complete(t, bound, &p);
			if (local) {
				p = -1;
				(void)snprintf(msg, sizeof(msg), "%s", t->err);
			}
		}
		v[0] = p;
		v[1] = -p;
		ret = trainer__allreduce_host_i64(t, v, 2, TRAINER_MIN);
		if (ret)
			return ret;
		if (local)
			return trainer__err(t, local, "%s", msg);
		if (v[0] < 0)
			return trainer__err(t, TRAINER_ENOTFOUND,
					    "no checkpoint is complete on "
					    "every rank");
		if (v[0] == -v[1]) {
			*step = v[0];
			return 0;
		}
		bound = v[0];
	}
}
