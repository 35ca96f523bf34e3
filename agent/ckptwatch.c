/*
 * Which files of a running assignment's checkpoint folder are complete.
 * Programs that do not use libtrainer write plain files (torch.save into
 * /opt/ml/checkpoints, often to a temp name and then os.replace): such a
 * file is complete once it was closed after writing (IN_CLOSE_WRITE) or
 * renamed into place (IN_MOVED_TO), and the mirror may copy it at once
 * instead of waiting for it to be quiet. The watch covers the folder's
 * subfolders too (a folder renamed into place brings its files, which are
 * complete). What it learns goes to the mirror as a sorted list of keys
 * with the size and mtime each had then; a file written again afterwards
 * no longer matches and waits for its next close.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/ckptwatch.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Bounds: folders watched, folder depth, files remembered. */
#define WATCH_DIRS_MAX 1024
#define WATCH_DEPTH_MAX 8
#define WATCH_FILES_MAX 65536

#define DIR_EVENTS                                                  \
	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | \
	 IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR |   \
	 IN_DONT_FOLLOW | IN_EXCL_UNLINK)

void agent_ckpt_watch_init(struct agent_ckpt_watch *w)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
}

static void drop_dir(struct agent_ckpt_watch *w, size_t i)
{
	free(w->dirs[i].rel);
	w->dirs[i] = w->dirs[--w->n_dirs];
}

static struct agent_ckpt_watch_dir *dir_of(struct agent_ckpt_watch *w, int wd)
{
	size_t i;

	for (i = 0; i < w->n_dirs; i++)
		if (w->dirs[i].wd == wd)
			return &w->dirs[i];
	return NULL;
}

static int depth_of(const char *rel)
{
	int d = 0;

	for (; *rel; rel++)
		d += *rel == '/';
	return d;
}

static ssize_t file_index(const struct agent_ckpt_watch *w, const char *key)
{
	size_t lo = 0, hi = w->complete.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(w->complete.v[mid].key, key);

		if (!c)
			return (ssize_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1 - (ssize_t)lo;
}

static void forget(struct agent_ckpt_watch *w, const char *key)
{
	ssize_t i = file_index(w, key);

	if (i < 0)
		return;
	stor_object_release(&w->complete.v[i]);
	memmove(&w->complete.v[i], &w->complete.v[i + 1],
		(w->complete.n - (size_t)i - 1) * sizeof(*w->complete.v));
	w->complete.n--;
}

/* Remembers key as complete with the size and mtime it has now. */
static void remember(struct agent_ckpt_watch *w, const char *key)
{
	struct stor_object *o;
	struct buf path = BUF_INIT;
	struct stat st;
	ssize_t i;

	(void)buf_addf(&path, "%s/%s", w->root, key);
	if (lstat(path.data, &st) || !S_ISREG(st.st_mode)) {
		buf_release(&path);
		return;
	}
	buf_release(&path);
	i = file_index(w, key);
	if (i < 0) {
		size_t at = (size_t)(-1 - i);

		if (w->complete.n >= WATCH_FILES_MAX)
			return;
		(void)stor_list_push(&w->complete, key, 0, 0);
		o = &w->complete.v[w->complete.n - 1];
		if (at != w->complete.n - 1) {
			struct stor_object tmp = *o;

			memmove(&w->complete.v[at + 1], &w->complete.v[at],
				(w->complete.n - 1 - at) *
					sizeof(*w->complete.v));
			w->complete.v[at] = tmp;
		}
		i = (ssize_t)at;
	}
	o = &w->complete.v[i];
	o->size = (int64_t)st.st_size;
	o->mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 +
		      st.st_mtim.tv_nsec / 1000000;
	w->news = 1;
}

static void join(struct buf *out, const char *rel, const char *name)
{
	buf_reset(out);
	if (*rel)
		(void)buf_addf(out, "%s/", rel);
	(void)buf_adds(out, name);
}

/*
 * Watches root/rel and, below it, every folder; a folder that arrives
 * whole (renamed into place) has its files remembered as complete.
 */
static void add_dir(struct agent_ckpt_watch *w, const char *rel, int whole)
{
	struct buf path = BUF_INIT, sub = BUF_INIT;
	struct dirent *de;
	DIR *d;
	int wd;

	if (w->n_dirs >= WATCH_DIRS_MAX || depth_of(rel) >= WATCH_DEPTH_MAX)
		return;
	if (*rel)
		(void)buf_addf(&path, "%s/%s", w->root, rel);
	else
		(void)buf_adds(&path, w->root);
	wd = inotify_add_watch(w->fd, path.data, DIR_EVENTS);
	if (wd < 0) {
		buf_release(&path);
		return;
	}
	if (!dir_of(w, wd)) {
		ALLOC_GROW(w->dirs, w->n_dirs + 1, w->alloc_dirs);
		w->dirs[w->n_dirs].wd = wd;
		w->dirs[w->n_dirs].rel = xstrdup(rel);
		w->n_dirs++;
	}
	d = opendir(path.data);
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		join(&sub, rel, de->d_name);
		if (de->d_type == DT_DIR)
			add_dir(w, sub.data, whole);
		else if (whole && de->d_type == DT_REG)
			remember(w, sub.data);
	}
	if (d)
		closedir(d);
	buf_release(&path);
	buf_release(&sub);
}

/* Forgets the watches of rel and of every folder below it. */
static void drop_tree(struct agent_ckpt_watch *w, const char *rel)
{
	size_t i = 0, len = strlen(rel);

	while (i < w->n_dirs) {
		const char *r = w->dirs[i].rel;

		if (!strncmp(r, rel, len) && (!r[len] || r[len] == '/')) {
			(void)inotify_rm_watch(w->fd, w->dirs[i].wd);
			drop_dir(w, i);
			continue;
		}
		i++;
	}
}

int agent_ckpt_watch_start(struct agent_ckpt_watch *w, const char *root,
			   struct buf *err)
{
	agent_ckpt_watch_stop(w);
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		(void)buf_addf(err, "inotify_init1: %s", strerror(errno));
		return -1;
	}
	w->root = xstrdup(root);
	add_dir(w, "", 0);
	if (!w->n_dirs) {
		(void)buf_addf(err, "cannot watch '%s': %s", root,
			       strerror(errno));
		agent_ckpt_watch_stop(w);
		return -1;
	}
	return 0;
}

static void on_event(struct agent_ckpt_watch *w, const struct inotify_event *e)
{
	struct agent_ckpt_watch_dir *d;
	struct buf key = BUF_INIT;
	char *rel;

	if (e->mask & IN_Q_OVERFLOW) {
		/* Events were lost: the quiet rule covers those files. */
		log_debug("checkpoint watch of %s overflowed", w->root);
		return;
	}
	d = dir_of(w, e->wd);
	if (!d)
		return;
	if (e->mask & IN_IGNORED) {
		drop_dir(w, (size_t)(d - w->dirs));
		return;
	}
	if (!e->len)
		return;
	rel = xstrdup(d->rel); /* add_dir may move the table */
	join(&key, rel, e->name);
	if (e->mask & IN_ISDIR) {
		if (e->mask & (IN_MOVED_FROM | IN_DELETE))
			drop_tree(w, key.data);
		else if (e->mask & (IN_CREATE | IN_MOVED_TO))
			add_dir(w, key.data, !!(e->mask & IN_MOVED_TO));
	} else if (e->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) {
		remember(w, key.data);
	} else if (e->mask & (IN_MOVED_FROM | IN_DELETE)) {
		forget(w, key.data);
	}
	free(rel);
	buf_release(&key);
}

int agent_ckpt_watch_read(struct agent_ckpt_watch *w)
{
	char evbuf[16384]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	int news;

	if (w->fd < 0)
		return 0;
	while ((n = read(w->fd, evbuf, sizeof(evbuf))) > 0) {
		char *p = evbuf;

		while (p < evbuf + n) {
			const struct inotify_event *e = (const void *)p;

			on_event(w, e);
			p += sizeof(*e) + e->len;
		}
	}
	news = w->news;
	w->news = 0;
	return news;
}

void agent_ckpt_watch_stop(struct agent_ckpt_watch *w)
{
	size_t i;

	if (w->fd >= 0)
		close(w->fd);
	for (i = 0; i < w->n_dirs; i++)
		free(w->dirs[i].rel);
	free(w->dirs);
	free(w->root);
	stor_list_release(&w->complete);
	agent_ckpt_watch_init(w);
}
