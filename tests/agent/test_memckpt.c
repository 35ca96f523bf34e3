/*
 * Tests agent/memckpt.c, the checkpoints a host keeps in memory: names and
 * the step a restore uses (the newest every rank has), the copy after a
 * sync (the newest two per rank, under the limit, the rest removed), and
 * the restore, which takes a copy only when its manifest is the store's
 * (a copy of a stale attempt, or of a step the store does not hold, is
 * never used) and reads the rest from the store; with other hosts' copies,
 * the first holder with the store's manifest, a stale one never.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/memckpt.h"
#include "storage/storage.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/fsutil.h"

struct fx {
	char dir[64];
	struct stor *st;
	struct buf err;
	char *local, *root, *store, *uri, *out;
};

static char *path_of(const struct fx *f, const char *rel)
{
	struct buf p = BUF_INIT;

	(void)buf_addf(&p, "%s/%s", f->dir, rel);
	return buf_detach(&p, NULL);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct stor_config cfg;
	struct buf p = BUF_INIT;

	strcpy(f->dir, "/tmp/test_memckpt.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	buf_init(&f->err, 0);
	f->local = path_of(f, "local");
	f->root = path_of(f, "mem");
	f->store = path_of(f, "store");
	f->out = path_of(f, "out");
	(void)buf_addf(&p, "file://%s", f->store);
	f->uri = buf_detach(&p, NULL);
	(void)fs_mkdir_p(f->local, 0755, NULL);
	(void)fs_mkdir_p(f->store, 0755, NULL);
	(void)fs_mkdir_p(f->out, 0755, NULL);
	assert_int_equal(agent_memckpt_prepare(f->root, &f->err), 0);
	(void)buf_addf(&p, "%s/state", f->dir);
	stor_config_init(&cfg);
	stor_config_set(&cfg.state_dir, p.data);
	buf_release(&p);
	if (stor_open(&cfg, &f->st, &f->err))
		return -1;
	stor_config_release(&cfg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	stor_close(f->st);
	(void)fs_remove_tree(f->dir);
	buf_release(&f->err);
	free(f->local);
	free(f->root);
	free(f->store);
	free(f->uri);
	free(f->out);
	free(f);
	return 0;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	struct buf p = BUF_INIT;

	(void)buf_addf(&p, "%s/%s", dir, name);
	assert_int_equal(
		fs_write_atomic(p.data, text, strlen(text), 0644, 0, NULL), 0);
	buf_release(&p);
}

/* A checkpoint folder step-<step>.rank-<rank> under dir whose model and
 * manifest say what (the manifest stands for the real one: any text). */
static void save(const char *dir, long long step, int rank, const char *what)
{
	struct buf p = BUF_INIT, m = BUF_INIT;

	(void)buf_addf(&p, "%s/step-%010lld.rank-%d", dir, step, rank);
	assert_int_equal(fs_mkdir_p(p.data, 0755, NULL), 0);
	write_file(p.data, "model.bin", what);
	(void)buf_addf(&m, "{\"step\":%lld,\"rank\":%d,\"model\":\"%s\"}", step,
		       rank, what);
	write_file(p.data, "MANIFEST.json", m.data);
	buf_release(&p);
	buf_release(&m);
}

static char *slurp(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT;
	char text[256];
	ssize_t n;
	int fd;

	(void)buf_addf(&p, "%s/%s", dir, rel);
	fd = open(p.data, O_RDONLY);
	buf_release(&p);
	if (fd < 0)
		return NULL;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[n < 0 ? 0 : n] = '\0';
	return strdup(text);
}

static int exists(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT;
	int ok;

	(void)buf_addf(&p, "%s/%s", dir, rel);
	ok = !access(p.data, F_OK);
	buf_release(&p);
	return ok;
}

static void test_names(void **state)
{
	long long s;
	long r;

	(void)state;
	assert_true(
		agent_memckpt_name("step-0000001200.rank-3", 22, 0, &s, &r));
	assert_int_equal(s, 1200);
	assert_int_equal(r, 3);
	assert_false(
		agent_memckpt_name("step-0000001200.rank-03", 23, 0, &s, &r));
	assert_false(
		agent_memckpt_name("step-000001200.rank-3", 21, 0, &s, &r));
	assert_false(
		agent_memckpt_name("step-0000001200.rank-3.a2", 25, 0, &s, &r));
	assert_true(
		agent_memckpt_name("step-0000001200.rank-3.a2", 25, 1, &s, &r));
	assert_false(
		agent_memckpt_name("step-0000001200.rank-3", 22, 1, &s, &r));
	assert_false(
		agent_memckpt_name("step-0000001200.rank-3.a", 24, 1, &s, &r));
}

static void test_plan(void **state)
{
	const char *both[] = {
		"step-0000000010.rank-0/MANIFEST.json",
		"step-0000000010.rank-0/model.bin",
		"step-0000000010.rank-1/MANIFEST.json",
		"step-0000000020.rank-0/MANIFEST.json",
		"step-0000000020.rank-1/model.bin", /* no manifest yet */
	};
	const char *other[] = { "step-0000000010.rank-0/MANIFEST.json",
				"notes.txt" };
	const char *deep[] = { "step-0000000010.rank-0/x/MANIFEST.json" };
	long long step = -1;

	(void)state;
	assert_int_equal(agent_memckpt_plan(both, 5, &step), 0);
	assert_int_equal(step, 10);
	assert_int_equal(agent_memckpt_plan(both, 4, &step), 0);
	assert_int_equal(step, 10);
	assert_int_equal(agent_memckpt_plan(other, 2, &step), ERR_NOTFOUND);
	assert_int_equal(agent_memckpt_plan(deep, 1, &step), ERR_NOTFOUND);
	assert_int_equal(agent_memckpt_plan(both, 0, &step), ERR_NOTFOUND);
}

static void test_keep(void **state)
{
	struct fx *f = *state;
	struct agent_memckpt_stats ms;
	char *t;

	save(f->local, 10, 0, "ten");
	save(f->local, 20, 0, "twenty");
	save(f->local, 30, 0, "thirty");
	assert_int_equal(agent_memckpt_keep(f->root, "u1", 1, f->local, 1 << 20,
					    &ms, &f->err),
			 0);
	assert_int_equal(ms.folders, 2);
	assert_true(exists(f->root, "u1/step-0000000030.rank-0.a1"));
	assert_true(exists(f->root, "u1/step-0000000020.rank-0.a1"));
	assert_false(exists(f->root, "u1/step-0000000010.rank-0.a1"));
	/* Nothing new: nothing copied; a newer one replaces the oldest. */
	assert_int_equal(agent_memckpt_keep(f->root, "u1", 1, f->local, 1 << 20,
					    &ms, &f->err),
			 0);
	assert_int_equal(ms.folders, 0);
	save(f->local, 40, 0, "forty");
	assert_int_equal(agent_memckpt_keep(f->root, "u1", 2, f->local, 1 << 20,
					    &ms, &f->err),
			 0);
	assert_int_equal(ms.folders, 1);
	assert_false(exists(f->root, "u1/step-0000000020.rank-0.a1"));
	t = slurp(f->root, "u1/step-0000000040.rank-0.a2/model.bin");
	assert_string_equal(t, "forty");
	free(t);
	/* Over the limit: skipped, counted. */
	save(f->local, 50, 0, "fifty-and-a-longer-model");
	assert_int_equal(agent_memckpt_keep(f->root, "u1", 2, f->local, 40, &ms,
					    &f->err),
			 0);
	assert_true(ms.skipped >= 1);
}

static void test_restore(void **state)
{
	struct fx *f = *state;
	struct agent_memckpt_stats ms;
	struct agent_memckpt_restore r;
	char *t;

	/* Published: steps 10 and 20 of ranks 0 and 1. */
	save(f->store, 10, 0, "r0s10");
	save(f->store, 10, 1, "r1s10");
	save(f->store, 20, 0, "r0s20");
	save(f->store, 20, 1, "r1s20");
	/* This host held rank 0; it also has a step 30 the store never got
	 * (its attempt was fenced). */
	save(f->local, 20, 0, "r0s20");
	save(f->local, 30, 0, "r0s30-stale");
	assert_int_equal(agent_memckpt_keep(f->root, "u2", 1, f->local, 1 << 20,
					    &ms, &f->err),
			 0);
	assert_int_equal(agent_memckpt_restore(f->st, f->uri, f->root, "u2",
					       f->out, NULL, &r, &f->err),
			 0);
	assert_int_equal(r.step, 20);
	assert_int_equal(r.from_mem, 1);
	assert_int_equal(r.from_stor, 1);
	t = slurp(f->out, "step-0000000020.rank-0/model.bin");
	assert_string_equal(t, "r0s20");
	free(t);
	t = slurp(f->out, "step-0000000020.rank-1/model.bin");
	assert_string_equal(t, "r1s20");
	free(t);
	assert_false(exists(f->out, "step-0000000030.rank-0"));
	buf_release(&r.record);
	/* Another job's uid: nothing in memory, the caller uses the store. */
	assert_int_equal(agent_memckpt_restore(f->st, f->uri, f->root, "u3",
					       f->out, NULL, &r, &f->err),
			 ERR_NOTFOUND);
	buf_release(&r.record);
}

static void test_stale_copy(void **state)
{
	struct fx *f = *state;
	struct agent_memckpt_stats ms;
	struct agent_memckpt_restore r;

	/* The store's step 20 was written by the current attempt; this host's
	 * copy of step 20 comes from an older attempt with other content. */
	save(f->store, 20, 0, "published");
	save(f->local, 20, 0, "stale");
	assert_int_equal(agent_memckpt_keep(f->root, "u4", 1, f->local, 1 << 20,
					    &ms, &f->err),
			 0);
	assert_int_equal(ms.folders, 1);
	assert_int_equal(agent_memckpt_restore(f->st, f->uri, f->root, "u4",
					       f->out, NULL, &r, &f->err),
			 ERR_NOTFOUND);
	assert_int_equal(r.from_mem, 0);
	buf_release(&r.record);
}

static void test_not_ours(void **state)
{
	struct fx *f = *state;
	struct agent_memckpt_restore r;
	struct buf p = BUF_INIT;

	/* Files outside checkpoint folders: the whole prefix is restored. */
	save(f->store, 20, 0, "x");
	write_file(f->store, "notes.txt", "n");
	(void)buf_addf(&p, "%s/u5/step-0000000020.rank-0.a1", f->root);
	assert_int_equal(fs_mkdir_p(p.data, 0700, NULL), 0);
	write_file(p.data, "MANIFEST.json",
		   "{\"step\":20,\"rank\":0,"
		   "\"model\":\"x\"}");
	assert_int_equal(agent_memckpt_restore(f->st, f->uri, f->root, "u5",
					       f->out, NULL, &r, &f->err),
			 ERR_NOTFOUND);
	buf_release(&r.record);
	buf_release(&p);
}

/* Holders for the restore, each a folder of copies on this machine (as
 * another host's would be); "" stands for a host that cannot be reached. */
struct fake_peers {
	const char *dirs[3];
	const char *names[3];
	int listed[3];
};

static int fp_list(void *arg, size_t i, struct strvec *names)
{
	struct fake_peers *fp = arg;

	fp->listed[i]++;
	if (!*fp->dirs[i])
		return ERR_IO;
	return agent_memckpt_list(fp->dirs[i], "u6", names);
}

static int fp_manifest(void *arg, size_t i, const char *name, struct buf *out)
{
	struct fake_peers *fp = arg;
	struct buf p = BUF_INIT;
	int ret;

	(void)buf_addf(&p, "%s/u6/%s", fp->dirs[i], name);
	ret = agent_memckpt_manifest(p.data, out);
	buf_release(&p);
	return ret;
}

static int fp_fetch(void *arg, size_t i, const char *name, const char *dst,
		    int64_t *bytes, struct buf *err)
{
	struct fake_peers *fp = arg;
	struct buf p = BUF_INIT;
	char *t;

	(void)err;
	(void)buf_addf(&p, "%s/u6/%s", fp->dirs[i], name);
	t = slurp(p.data, "model.bin");
	assert_int_equal(mkdir(dst, 0755), 0);
	write_file(dst, "model.bin", t);
	*bytes += (int64_t)strlen(t);
	free(t);
	t = slurp(p.data, "MANIFEST.json");
	write_file(dst, "MANIFEST.json", t);
	free(t);
	buf_release(&p);
	return 0;
}

static const char *fp_label(void *arg, size_t i)
{
	return ((struct fake_peers *)arg)->names[i];
}

/* A holder's copies of job u6: made by keep from its own folder. */
static char *holder(struct fx *f, const char *name, long long step, int rank,
		    const char *what, int attempt)
{
	struct agent_memckpt_stats ms;
	struct buf p = BUF_INIT;
	char *root, *local;

	(void)buf_addf(&p, "%s-root", name);
	root = path_of(f, p.data);
	buf_reset(&p);
	(void)buf_addf(&p, "%s-local", name);
	local = path_of(f, p.data);
	buf_release(&p);
	assert_int_equal(agent_memckpt_prepare(root, &f->err), 0);
	save(local, step, rank, what);
	assert_int_equal(agent_memckpt_keep(root, "u6", attempt, local, 1 << 20,
					    &ms, &f->err),
			 0);
	free(local);
	return root;
}

static void test_peer_restore(void **state)
{
	struct fx *f = *state;
	struct fake_peers fp = { { "", NULL, NULL },
				 { "algo-3", "algo-1", "algo-2" },
				 { 0, 0, 0 } };
	struct agent_memckpt_peers pe = { 3,	    fp_list,  fp_manifest,
					  fp_fetch, fp_label, &fp };
	struct agent_memckpt_restore r;
	char *stale, *good, *t;

	save(f->store, 20, 0, "r0s20");
	save(f->store, 20, 1, "r1s20");
	save(f->store, 20, 2, "r2s20");
	/* algo-3 is down; algo-1 holds a copy of rank 0's step 20 from a
	 * stale attempt (other content, so another manifest); algo-2 the
	 * published one. Rank 1 is nowhere but in the store. */
	stale = holder(f, "a1", 20, 0, "r0s20-stale", 1);
	good = holder(f, "a2", 20, 0, "r0s20", 2);
	save(f->local, 20, 2, "r2s20");
	fp.dirs[1] = stale;
	fp.dirs[2] = good;
	{
		struct agent_memckpt_stats ms;

		assert_int_equal(agent_memckpt_keep(f->root, "u6", 2, f->local,
						    1 << 20, &ms, &f->err),
				 0);
	}
	assert_int_equal(agent_memckpt_restore(f->st, f->uri, f->root, "u6",
					       f->out, &pe, &r, &f->err),
			 0);
	assert_int_equal(r.step, 20);
	assert_int_equal(r.from_peer, 1);
	assert_int_equal(r.from_mem, 1);
	assert_int_equal(r.from_stor, 1);
	assert_string_equal(r.record.data,
			    "rank 0 peer algo-2 (attempt 2), rank 1 store, "
			    "rank 2 memory (attempt 2)");
	/* Each holder is listed once for the whole restore. */
	assert_int_equal(fp.listed[0], 1);
	assert_int_equal(fp.listed[2], 1);
	t = slurp(f->out, "step-0000000020.rank-0/model.bin");
	assert_string_equal(t, "r0s20");
	free(t);
	buf_release(&r.record);
	free(stale);
	free(good);
}

static void test_peer_stale_only(void **state)
{
	struct fx *f = *state;
	struct fake_peers fp = { { NULL, NULL, NULL },
				 { "algo-2", NULL, NULL },
				 { 0, 0, 0 } };
	struct agent_memckpt_peers pe = { 1,	    fp_list,  fp_manifest,
					  fp_fetch, fp_label, &fp };
	struct agent_memckpt_restore r;
	char *stale;

	/* The only copy anywhere is a stale attempt's: never restored, the
	 * whole prefix comes from the store. */
	save(f->store, 20, 0, "published");
	stale = holder(f, "a1", 20, 0, "stale", 1);
	fp.dirs[0] = stale;
	assert_int_equal(agent_memckpt_restore(f->st, f->uri, f->root, "u6",
					       f->out, &pe, &r, &f->err),
			 ERR_NOTFOUND);
	assert_int_equal(r.from_peer, 0);
	assert_string_equal(r.record.data, "rank 0 store");
	buf_release(&r.record);
	free(stale);
}

static void test_pushed_here(void **state)
{
	struct fx *f = *state;
	struct fake_peers fp = { { NULL, NULL, NULL },
				 { NULL, NULL, NULL },
				 { 0, 0, 0 } };
	struct agent_memckpt_peers pe = { 1,	    fp_list,  fp_manifest,
					  fp_fetch, fp_label, &fp };
	struct agent_memckpt_restore r;

	/* A holder with no label is this host's own server: the copy that
	 * another host pushed here counts as memory. */
	save(f->store, 20, 0, "r0s20");
	fp.dirs[0] = holder(f, "self", 20, 0, "r0s20", 1);
	assert_int_equal(agent_memckpt_restore(f->st, f->uri, f->root, "u6",
					       f->out, &pe, &r, &f->err),
			 0);
	assert_int_equal(r.from_mem, 1);
	assert_int_equal(r.from_peer, 0);
	assert_true(r.mem_bytes > 0);
	assert_string_equal(r.record.data, "rank 0 memory (attempt 1)");
	buf_release(&r.record);
	free((char *)fp.dirs[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_plan),
		cmocka_unit_test_setup_teardown(test_keep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_copy, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_not_ours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_restore, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_peer_stale_only, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pushed_here, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
