/*
 * The job's latest checkpoints kept in the host's memory (agent/memckpt.h):
 * the copy made after each checkpoint sync, and the restore that prefers
 * it to the store when the store's manifest says it is the published one.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/memckpt.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/strvec.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MANIFEST "MANIFEST.json"
#define MANIFEST_MAX (1 << 20)
#define NAME_MAX_LEN 255

int agent_memckpt_name(const char *name, size_t len, int memory,
		       long long *step, long *rank)
{
	size_t i = 5, j;
	long long v = 0;
	long r = 0;

	if (len < 22 || strncmp(name, "step-", 5))
		return 0;
	for (; i < 15; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		v = v * 10 + (name[i] - '0');
	}
	if (strncmp(name + 15, ".rank-", 6))
		return 0;
	for (j = 21; j < len && name[j] >= '0' && name[j] <= '9'; j++) {
		if (j - 21 >= 7 || (j > 21 && name[21] == '0'))
			return 0;
		r = r * 10 + (name[j] - '0');
	}
	if (j == 21)
		return 0;
	if (memory) {
		if (len - j < 3 || strncmp(name + j, ".a", 2))
			return 0;
		for (j += 2; j < len; j++)
			if (name[j] < '0' || name[j] > '9')
				return 0;
	}
	if (j != len)
		return 0;
	*step = v;
	*rank = r;
	return 1;
}

/* A plain file name inside a checkpoint folder (docs/checkpoints.md). */
int agent_memckpt_file_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > NAME_MAX_LEN || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789._-") == n;
}

/* --- the plan: which step --------------------------------------------- */

struct rank_steps {
	long rank;
	struct strvec steps; /* "%lld" of each step with a manifest */
};

static struct rank_steps *rank_of(struct rank_steps **v, size_t *n, long r)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if ((*v)[i].rank == r)
			return &(*v)[i];
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[*n].rank = r;
	memset(&(*v)[*n].steps, 0, sizeof((*v)[*n].steps));
	return &(*v)[(*n)++];
}

static int has_step(const struct rank_steps *r, long long step)
{
	size_t i;

	for (i = 0; i < r->steps.n; i++)
		if (strtoll(r->steps.v[i], NULL, 10) == step)
			return 1;
	return 0;
}

int agent_memckpt_plan(const char *const *keys, size_t n, long long *step)
{
	struct rank_steps *ranks = NULL;
	size_t n_ranks = 0, i, k;
	long long best = -1, s;
	long r;
	int ret = 0;

	for (i = 0; i < n && !ret; i++) {
		const char *slash = strchr(keys[i], '/');

		if (!slash ||
		    !agent_memckpt_name(keys[i], (size_t)(slash - keys[i]), 0,
					&s, &r) ||
		    strchr(slash + 1, '/') || !agent_memckpt_file_ok(slash + 1))
			ret = ERR_NOTFOUND;
		else if (!strcmp(slash + 1, MANIFEST))
			strvec_pushf(&rank_of(&ranks, &n_ranks, r)->steps,
				     "%lld", s);
	}
	for (i = 0; !ret && n_ranks && i < ranks[0].steps.n; i++) {
		s = strtoll(ranks[0].steps.v[i], NULL, 10);
		for (k = 1; k < n_ranks && has_step(&ranks[k], s); k++)
			;
		if (k == n_ranks && s > best)
			best = s;
	}
	for (i = 0; i < n_ranks; i++)
		strvec_release(&ranks[i].steps);
	free(ranks);
	if (!ret && best < 0)
		ret = ERR_NOTFOUND;
	if (!ret)
		*step = best;
	return ret;
}

/* --- files ------------------------------------------------------------ */

static int copy_file(const char *src, const char *dst, mode_t mode,
		     int64_t *bytes)
{
	struct stat sb;
	int in, out, ret = 0;
	off_t left;

	in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return ERR_IO;
	if (fstat(in, &sb) || !S_ISREG(sb.st_mode)) {
		close(in);
		return ERR_IO;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		   mode);
	if (out < 0) {
		close(in);
		return ERR_IO;
	}
	for (left = sb.st_size; left > 0 && !ret;) {
		ssize_t k = sendfile(out, in, NULL,
				     left > (1 << 30) ? (1 << 30) : left);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			ret = ERR_IO;
		else
			left -= k;
	}
	if (close(out) && !ret)
		ret = ERR_IO;
	close(in);
	if (!ret)
		*bytes += sb.st_size;
	return ret;
}

/*
 * Copies the plain files of folder src into a new folder dst (through a
 * temporary name beside it, renamed into place): private (0700/0600) in
 * memory, 0755/0644 as the store's restore makes them in the checkpoint
 * folder. The bytes copied are added to *bytes.
 */
static int copy_folder(const char *src, const char *dst, int private,
		       int64_t *bytes, struct buf *err)
{
	struct buf tmp = BUF_INIT, a = BUF_INIT, b = BUF_INIT;
	const char *slash = strrchr(dst, '/');
	struct dirent *e;
	DIR *d;
	int ret = 0;

	(void)buf_add(&tmp, dst, (size_t)(slash - dst) + 1);
	(void)buf_addf(&tmp, ".tmp-%s.%ld", slash + 1, (long)getpid());
	(void)fs_remove_tree(tmp.data);
	d = opendir(src);
	if (!d || mkdir(tmp.data, private ? 0700 : 0755)) {
		(void)buf_addf(err, "%s: %s", d ? tmp.data : src,
			       strerror(errno));
		if (d)
			closedir(d);
		buf_release(&tmp);
		return ERR_IO;
	}
	while (!ret && (e = readdir(d))) {
		if (!agent_memckpt_file_ok(e->d_name) ||
		    !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		buf_reset(&a);
		buf_reset(&b);
		(void)buf_addf(&a, "%s/%s", src, e->d_name);
		(void)buf_addf(&b, "%s/%s", tmp.data, e->d_name);
		ret = copy_file(a.data, b.data, private ? 0600 : 0644, bytes);
		if (ret)
			(void)buf_addf(err, "copying %s: %s", a.data,
				       strerror(errno));
	}
	closedir(d);
	if (!ret) {
		(void)fs_remove_tree(dst);
		if (rename(tmp.data, dst)) {
			(void)buf_addf(err, "%s: %s", dst, strerror(errno));
			ret = ERR_IO;
		}
	}
	if (ret)
		(void)fs_remove_tree(tmp.data);
	buf_release(&tmp);
	buf_release(&a);
	buf_release(&b);
	return ret;
}

int agent_memckpt_manifest(const char *dir, struct buf *out)
{
	struct buf p = BUF_INIT;
	char chunk[4096];
	ssize_t k;
	int fd;

	(void)buf_addf(&p, "%s/" MANIFEST, dir);
	fd = open(p.data, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	buf_release(&p);
	if (fd < 0)
		return ERR_NOTFOUND;
	buf_reset(out);
	while ((k = read(fd, chunk, sizeof(chunk))) > 0 &&
	       out->len + (size_t)k <= MANIFEST_MAX)
		(void)buf_add(out, chunk, (size_t)k);
	close(fd);
	return k ? ERR_NOTFOUND : 0;
}

/* Size of the plain files of a folder. */
static int64_t folder_size(const char *dir)
{
	struct buf p = BUF_INIT;
	struct dirent *e;
	struct stat sb;
	int64_t total = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s", dir, e->d_name);
		if (!lstat(p.data, &sb) && S_ISREG(sb.st_mode))
			total += sb.st_size;
	}
	closedir(d);
	buf_release(&p);
	return total;
}

/* --- keep ------------------------------------------------------------- */

struct found {
	char *name; /* as in the folder */
	long long step;
	long rank;
};

static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->step > y->step ? -1 : x->step < y->step; /* newest first */
}

/* The checkpoint folders of dir (memory: with ".a<N>"); sorted by rank,
 * newest first. Local ones count only with their manifest. */
static size_t list_folders(const char *dir, int memory, struct found **out)
{
	struct found *v = NULL;
	struct buf p = BUF_INIT;
	struct dirent *e;
	struct stat sb;
	size_t n = 0;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		long long s;
		long r;

		if (!agent_memckpt_name(e->d_name, strlen(e->d_name), memory,
					&s, &r))
			continue;
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s/" MANIFEST, dir, e->d_name);
		if (lstat(p.data, &sb) || !S_ISREG(sb.st_mode))
			continue;
		v = xrealloc(v, (n + 1) * sizeof(*v));
		v[n].name = xstrdup(e->d_name);
		v[n].step = s;
		v[n++].rank = r;
	}
	if (d)
		closedir(d);
	buf_release(&p);
	if (n)
		qsort(v, n, sizeof(*v), found_cmp);
	*out = v;
	return n;
}

static void found_free(struct found *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* The copy in mem (n) of local folder l whose manifest is the same. */
static const struct found *same_copy(const char *jdir, const char *ckpt_dir,
				     const struct found *l,
				     const struct found *mem, size_t n)
{
	struct buf a = BUF_INIT, b = BUF_INIT, p = BUF_INIT;
	const struct found *hit = NULL;
	size_t i;

	(void)buf_addf(&p, "%s/%s", ckpt_dir, l->name);
	if (agent_memckpt_manifest(p.data, &a))
		n = 0;
	for (i = 0; i < n && !hit; i++) {
		if (mem[i].rank != l->rank || mem[i].step != l->step)
			continue;
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s", jdir, mem[i].name);
		if (!agent_memckpt_manifest(p.data, &b) && a.len == b.len &&
		    !memcmp(a.data, b.data, a.len))
			hit = &mem[i];
	}
	buf_release(&a);
	buf_release(&b);
	buf_release(&p);
	return hit;
}

/* The job's folder under root, created (0700) when create is set; NULL
 * when it is not ours. */
static char *job_dir(const char *root, const char *uid, int create)
{
	struct buf p = BUF_INIT;
	struct stat sb;

	(void)buf_addf(&p, "%s/%s", root, uid);
	if (create)
		(void)mkdir(p.data, 0700);
	if (lstat(p.data, &sb) || !S_ISDIR(sb.st_mode) ||
	    sb.st_uid != geteuid()) {
		buf_release(&p);
		return NULL;
	}
	return buf_detach(&p, NULL);
}

/* Marks in keep[] the local folders to have in memory, within limit. */
static void choose(const char *ckpt_dir, const struct found *l, size_t n,
		   int64_t limit, char *keep, int64_t *sizes,
		   struct agent_memckpt_stats *st)
{
	struct buf p = BUF_INIT;
	int64_t total = 0;
	size_t i, k;

	/* Newest first across ranks: round r takes each rank's r-th. */
	for (k = 0; k < AGENT_MEMCKPT_KEEP; k++)
		for (i = 0; i < n; i++) {
			size_t nth = 0, j;

			for (j = i; j > 0 && l[j - 1].rank == l[i].rank; j--)
				nth++;
			if (nth != k)
				continue;
			buf_reset(&p);
			(void)buf_addf(&p, "%s/%s", ckpt_dir, l[i].name);
			sizes[i] = folder_size(p.data);
			if (total + sizes[i] > limit) {
				st->skipped++;
				continue;
			}
			total += sizes[i];
			keep[i] = 1;
		}
	buf_release(&p);
}

/* A copy about to be replaced under the same name is not removed. */
static void mark_named(const struct found *m, size_t n, char *used,
		       const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(m[i].name, name))
			used[i] = 1;
}

int agent_memckpt_keep(const char *root, const char *uid, int attempt,
		       const char *ckpt_dir, int64_t limit,
		       struct agent_memckpt_stats *st, struct buf *err)
{
	struct found *l = NULL, *m = NULL;
	struct buf a = BUF_INIT, b = BUF_INIT;
	size_t nl, nm, i;
	char *jdir, *keep, *used;
	int64_t *sizes;
	int ret = 0;

	memset(st, 0, sizeof(*st));
	jdir = job_dir(root, uid, 1);
	if (!jdir) {
		(void)buf_addf(err, "%s/%s: not a folder of this user", root,
			       uid);
		return ERR_IO;
	}
	nl = list_folders(ckpt_dir, 0, &l);
	nm = list_folders(jdir, 1, &m);
	keep = xcalloc(nl + 1, 1);
	used = xcalloc(nm + 1, 1);
	sizes = xcalloc(nl + 1, sizeof(*sizes));
	choose(ckpt_dir, l, nl, limit, keep, sizes, st);
	for (i = 0; i < nl && !ret; i++) {
		const struct found *hit;

		if (!keep[i])
			continue;
		hit = same_copy(jdir, ckpt_dir, &l[i], m, nm);
		if (hit) {
			used[hit - m] = 1;
			continue;
		}
		buf_reset(&a);
		buf_reset(&b);
		(void)buf_addf(&a, "%s/%s", ckpt_dir, l[i].name);
		(void)buf_addf(&b, "%s/%s.a%d", jdir, l[i].name, attempt);
		mark_named(m, nm, used, b.data + strlen(jdir) + 1);
		ret = copy_folder(a.data, b.data, 1, &st->bytes, err);
		if (!ret)
			st->folders++;
	}
	for (i = 0; i < nm && !ret; i++) {
		buf_reset(&b);
		(void)buf_addf(&b, "%s/%s", jdir, m[i].name);
		if (!used[i])
			(void)fs_remove_tree(b.data);
	}
	found_free(l, nl);
	found_free(m, nm);
	free(keep);
	free(used);
	free(sizes);
	free(jdir);
	buf_release(&a);
	buf_release(&b);
	return ret;
}

/* --- restore ---------------------------------------------------------- */

struct stored {
	struct strvec keys; /* relative to the prefix */
	struct buf prefix;  /* uri with its '/' */
};

/* The keys under uri, relative to it. */
static int list_stored(struct stor *st, const char *uri, struct stored *out,
		       struct buf *err)
{
	struct stor_list l = STOR_LIST_INIT;
	struct stor_uri u;
	size_t i, plen;
	int ret;

	(void)buf_adds(&out->prefix, uri);
	if (out->prefix.len && out->prefix.data[out->prefix.len - 1] != '/')
		(void)buf_addch(&out->prefix, '/');
	ret = stor_uri_parse(out->prefix.data, &u, err);
	if (ret)
		return ret;
	plen = strlen(u.key);
	ret = stor_list(st, out->prefix.data, &l, err);
	for (i = 0; !ret && i < l.n; i++)
		if (strlen(l.v[i].key) > plen)
			strvec_push(&out->keys, l.v[i].key + plen);
	stor_list_release(&l);
	stor_uri_release(&u);
	return ret;
}

static int stream_to_buf(void *arg, const char *data, size_t n)
{
	struct buf *b = arg;

	if (b->len + n > MANIFEST_MAX)
		return ERR_INVALID;
	return buf_add(b, data, n) ? ERR_NOMEM : 0;
}

/* The store's MANIFEST.json of folder into want; 0 or an error code. */
static int store_manifest(struct stor *st, const struct stored *s,
			  const char *folder, struct buf *want)
{
	struct buf uri = BUF_INIT, e = BUF_INIT;
	int ret;

	(void)buf_addf(&uri, "%s%s/" MANIFEST, s->prefix.data, folder);
	ret = stor_get_stream(st, uri.data, stream_to_buf, want, NULL, &e);
	buf_release(&uri);
	buf_release(&e);
	return ret;
}

/* Whether name is a copy of folder: "<folder>.a<N>". */
static int copy_of(const char *name, const char *folder)
{
	size_t fl = strlen(folder);

	return !strncmp(name, folder, fl) && name[fl] == '.';
}

/* The memory copy of folder (step-S.rank-R) whose manifest is want, as a
 * path; NULL when there is none. */
static char *copy_for(const char *jdir, const char *folder,
		      const struct buf *want, const struct found *mem, size_t n)
{
	struct buf have = BUF_INIT, p = BUF_INIT;
	char *hit = NULL;
	size_t i;

	for (i = 0; i < n && !hit; i++) {
		if (!copy_of(mem[i].name, folder))
			continue;
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s", jdir, mem[i].name);
		if (!agent_memckpt_manifest(p.data, &have) &&
		    have.len == want->len &&
		    !memcmp(have.data, want->data, want->len))
			hit = buf_detach(&p, NULL);
	}
	buf_release(&have);
	buf_release(&p);
	return hit;
}

/* The folders of the step (one per rank) named in keys. */
static void step_folders(const struct strvec *keys, long long step,
			 struct strvec *out)
{
	size_t i;

	for (i = 0; i < keys->n; i++) {
		const char *k = keys->v[i], *slash = strchr(k, '/');
		long long s;
		long r;

		if (slash && !strcmp(slash + 1, MANIFEST) &&
		    agent_memckpt_name(k, (size_t)(slash - k), 0, &s, &r) &&
		    s == step)
			strvec_pushf(out, "%.*s", (int)(slash - k), k);
	}
}

/* The names each holder has, asked once per restore. */
struct peer_names {
	struct strvec *names; /* [peers->n] */
	char *asked;	      /* [peers->n] */
};

/*
 * Folder from the first holder whose copy has the store's manifest
 * (want), into the new folder dst: 0 with *who set to the holder and
 * *used to the copy's name (the holder's), else ERR_NOTFOUND. A holder
 * that fails is skipped.
 */
static int from_peer(const struct agent_memckpt_peers *pe,
		     struct peer_names *pn, const char *folder,
		     const struct buf *want, const char *dst, int64_t *bytes,
		     size_t *who, const char **used)
{
	struct buf have = BUF_INIT, e = BUF_INIT;
	size_t i, k;
	int ret = ERR_NOTFOUND;

	for (i = 0; pe && i < pe->n && ret; i++) {
		if (!pn->asked[i]) {
			pn->asked[i] = 1;
			if (pe->list(pe->arg, i, &pn->names[i]))
				strvec_release(&pn->names[i]);
		}
		for (k = 0; k < pn->names[i].n && ret; k++) {
			const char *name = pn->names[i].v[k];

			buf_reset(&have);
			buf_reset(&e);
			if (!copy_of(name, folder) ||
			    pe->manifest(pe->arg, i, name, &have) ||
			    have.len != want->len ||
			    memcmp(have.data, want->data, want->len))
				continue;
			(void)fs_remove_tree(dst);
			if (!pe->fetch(pe->arg, i, name, dst, bytes, &e)) {
				*who = i;
				*used = name;
				ret = 0;
			} else {
				(void)fs_remove_tree(dst);
			}
		}
	}
	buf_release(&have);
	buf_release(&e);
	return ret;
}

struct restore_run {
	struct stor *st;
	const struct stored *s;
	const char *jdir;
	struct found *mem;
	size_t n;
	const struct agent_memckpt_peers *peers;
	struct peer_names pn;
	const char *ckpt_dir;
	struct agent_memckpt_restore *out;
};

/* Into ckpt_dir/folder through tmp (renamed into place) from the store. */
static int from_store(struct restore_run *rr, const char *folder,
		      const char *tmp, const char *dst, struct buf *err)
{
	struct stor_sync_stats ss = { 0 };
	struct buf uri = BUF_INIT;
	int ret;

	(void)buf_addf(&uri, "%s%s/", rr->s->prefix.data, folder);
	ret = stor_get_prefix(rr->st, uri.data, tmp, &ss, err);
	if (!ret && rename(tmp, dst)) {
		(void)buf_addf(err, "%s: %s", dst, strerror(errno));
		ret = ERR_IO;
	}
	rr->out->from_stor += !ret;
	rr->out->stor_bytes += ss.bytes;
	buf_release(&uri);
	return ret;
}

/* " (attempt N)": which attempt made the copy name (".a<N>"). */
static void made_by(struct buf *record, const char *name)
{
	const char *a = strrchr(name, '.');

	if (a && a[1] == 'a')
		(void)buf_addf(record, " (attempt %s)", a + 2);
}

/* One folder of the step into ckpt_dir: from memory, else a peer's copy,
 * else the store; the record says which (and which attempt made the
 * copy). */
static int restore_folder(struct restore_run *rr, const char *folder,
			  struct buf *err)
{
	struct buf dst = BUF_INIT, tmp = BUF_INIT, want = BUF_INIT;
	struct agent_memckpt_restore *out = rr->out;
	char *src = NULL;
	const char *label, *used = NULL;
	long long step;
	long rank = 0;
	size_t who = 0;
	int64_t got = 0;
	int ret = ERR_NOTFOUND;

	(void)agent_memckpt_name(folder, strlen(folder), 0, &step, &rank);
	(void)buf_addf(&out->record, "%srank %ld ", out->record.len ? ", " : "",
		       rank);
	(void)buf_addf(&dst, "%s/%s", rr->ckpt_dir, folder);
	(void)buf_addf(&tmp, "%s/.tmp-%s.%ld", rr->ckpt_dir, folder,
		       (long)getpid());
	(void)fs_remove_tree(tmp.data);
	if (!store_manifest(rr->st, rr->s, folder, &want))
		src = copy_for(rr->jdir, folder, &want, rr->mem, rr->n);
	if (src) {
		ret = copy_folder(src, dst.data, 0, &out->mem_bytes, err);
		out->from_mem += !ret;
		(void)buf_adds(&out->record, "memory");
		made_by(&out->record, strrchr(src, '/') + 1);
	} else if (want.len && !from_peer(rr->peers, &rr->pn, folder, &want,
					  tmp.data, &got, &who, &used)) {
		ret = rename(tmp.data, dst.data) ? ERR_IO : 0;
		if (ret)
			(void)buf_addf(err, "%s: %s", dst.data,
				       strerror(errno));
		/* No label: a copy another host pushed here, in this host's
		 * memory too. */
		label = rr->peers->label(rr->peers->arg, who);
		*(label ? &out->from_peer : &out->from_mem) += !ret;
		*(label ? &out->peer_bytes : &out->mem_bytes) += got;
		if (label)
			(void)buf_addf(&out->record, "peer %s", label);
		else
			(void)buf_adds(&out->record, "memory");
		made_by(&out->record, used);
	}
	if (ret == ERR_NOTFOUND) {
		(void)fs_remove_tree(dst.data);
		ret = from_store(rr, folder, tmp.data, dst.data, err);
		(void)buf_adds(&out->record, "store");
	}
	if (ret)
		(void)fs_remove_tree(tmp.data);
	free(src);
	buf_release(&dst);
	buf_release(&tmp);
	buf_release(&want);
	return ret;
}

int agent_memckpt_restore(struct stor *st, const char *uri, const char *root,
			  const char *uid, const char *ckpt_dir,
			  const struct agent_memckpt_peers *peers,
			  struct agent_memckpt_restore *out, struct buf *err)
{
	struct stored s = { STRVEC_INIT, BUF_INIT };
	struct strvec folders = STRVEC_INIT;
	struct restore_run rr;
	size_t n_peers = peers ? peers->n : 0, i;
	char *jdir;
	int ret;

	memset(out, 0, sizeof(*out));
	memset(&rr, 0, sizeof(rr));
	buf_init(&out->record, 0);
	jdir = job_dir(root, uid, 0);
	if (jdir)
		rr.n = list_folders(jdir, 1, &rr.mem);
	if (!rr.n && !n_peers) {
		free(jdir);
		return ERR_NOTFOUND;
	}
	rr.st = st;
	rr.s = &s;
	rr.jdir = jdir;
	rr.peers = peers;
	rr.pn.names = xcalloc(n_peers + 1, sizeof(*rr.pn.names));
	rr.pn.asked = xcalloc(n_peers + 1, 1);
	rr.ckpt_dir = ckpt_dir;
	rr.out = out;
	ret = list_stored(st, uri, &s, err);
	if (!ret)
		ret = agent_memckpt_plan((const char *const *)s.keys.v,
					 s.keys.n, &out->step);
	if (!ret)
		step_folders(&s.keys, out->step, &folders);
	for (i = 0; !ret && i < folders.n; i++)
		ret = restore_folder(&rr, folders.v[i], err);
	/* Nothing came from a copy: the caller's whole-prefix restore
	 * gives the program every step, as without copies. */
	if (!ret && !out->from_mem && !out->from_peer)
		ret = ERR_NOTFOUND;
	for (i = 0; i < n_peers; i++)
		strvec_release(&rr.pn.names[i]);
	free(rr.pn.names);
	free(rr.pn.asked);
	found_free(rr.mem, rr.n);
	strvec_release(&folders);
	strvec_release(&s.keys);
	buf_release(&s.prefix);
	free(jdir);
	return ret;
}

int agent_memckpt_list(const char *root, const char *uid, struct strvec *names)
{
	struct buf p = BUF_INIT;
	struct found *v = NULL;
	size_t n, i;

	(void)buf_addf(&p, "%s/%s", root, uid);
	n = list_folders(p.data, 1, &v);
	for (i = 0; i < n; i++)
		strvec_push(names, v[i].name);
	found_free(v, n);
	buf_release(&p);
	return n ? 0 : ERR_NOTFOUND;
}

/* --- sweep ------------------------------------------------------------ */

void agent_memckpt_sweep(const char *root, const char *keep_uid)
{
	struct buf p = BUF_INIT;
	struct dirent *e;
	struct stat sb;
	int64_t now = time_now_ms();
	DIR *d = opendir(root);

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' ||
		    (keep_uid && !strcmp(e->d_name, keep_uid)))
			continue;
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s", root, e->d_name);
		if (!lstat(p.data, &sb) && S_ISDIR(sb.st_mode) &&
		    now - (int64_t)sb.st_mtime * 1000 > AGENT_MEMCKPT_TTL_MS)
			(void)fs_remove_tree(p.data);
	}
	if (d)
		closedir(d);
	buf_release(&p);
}

char *agent_memckpt_root(const char *dir, const char *host)
{
	struct buf p = BUF_INIT;

	(void)buf_addf(&p, "%s/%s", dir, host);
	return buf_detach(&p, NULL);
}

int agent_memckpt_prepare(const char *root, struct buf *err)
{
	struct stat sb;

	if (fs_mkdir_p(root, 0755, err))
		return ERR_IO;
	if (lstat(root, &sb) || !S_ISDIR(sb.st_mode) ||
	    sb.st_uid != geteuid() || chmod(root, 01777)) {
		(void)buf_addf(err, "%s: not a folder of the agent's user",
			       root);
		return ERR_IO;
	}
	return 0;
}
