/*
 * Tests storage/fs.c and storage/store.c through the public interface:
 * the file:// backend and the embedded store (<state-dir>/s3/<bucket>),
 * tree transfers, and that a put killed with SIGKILL never leaves a
 * visible partial object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <curl/curl.h>
#include <time.h>

#include "storage/fs.h"
#include "storage/storage.h"
#include "tests/storage/helpers.h"
#include "common/err.h"

struct fixture {
	char *dir;
	struct stor *s;
	struct buf err;
	struct buf a; /* scratch paths */
	struct buf b;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct stor_config cfg;
	struct buf sd = BUF_INIT;

	f->dir = th_mkdtemp("test_fs");
	buf_init(&f->err, 0);
	buf_init(&f->a, 0);
	buf_init(&f->b, 0);
	(void)buf_addf(&sd, "%s/state", f->dir);
	stor_config_init(&cfg);
	stor_config_set(&cfg.state_dir, sd.data);
	if (stor_open(&cfg, &f->s, &f->err))
		return -1;
	stor_config_release(&cfg);
	buf_release(&sd);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	stor_close(f->s);
	th_rm_rf(f->dir);
	free(f->dir);
	buf_release(&f->err);
	buf_release(&f->a);
	buf_release(&f->b);
	free(f);
	return 0;
}

/* f->a = "<dir>/<rel>" */
static const char *path(struct fixture *f, struct buf *b, const char *rel)
{
	buf_reset(b);
	(void)buf_addf(b, "%s/%s", f->dir, rel);
	return b->data;
}

static void roundtrip(struct fixture *f, const char *uri)
{
	struct stor_object info;
	struct stor_list l = STOR_LIST_INIT;

	th_write_file(path(f, &f->a, "src.bin"), 3 * 1024 * 1024 + 17, 7);
	assert_int_equal(stor_put(f->s, f->a.data, uri, &info, &f->err), 0);
	assert_int_equal(info.size, 3 * 1024 * 1024 + 17);
	stor_object_release(&info);
	assert_int_equal(stor_stat(f->s, uri, &info, &f->err), 0);
	assert_int_equal(info.size, 3 * 1024 * 1024 + 17);
	stor_object_release(&info);
	assert_int_equal(stor_get(f->s, uri, path(f, &f->b, "out/got.bin"),
				  NULL, &f->err),
			 0);
	assert_true(th_check_file(f->b.data, 3 * 1024 * 1024 + 17, 7));
	assert_int_equal(stor_list(f->s, uri, &l, &f->err), 0);
	assert_int_equal(l.n, 1);
	stor_list_release(&l);
	assert_int_equal(stor_delete(f->s, uri, &f->err), 0);
	assert_int_equal(stor_stat(f->s, uri, &info, &f->err), ERR_NOTFOUND);
	/* Deleting again is not an error, as in S3. */
	assert_int_equal(stor_delete(f->s, uri, &f->err), 0);
	assert_int_equal(stor_get(f->s, uri, f->b.data, NULL, &f->err),
			 ERR_NOTFOUND);
}

/* stor_get_stream: in order, in chunks, stoppable, ERR_NOTFOUND. */
static void test_stream(void **state)
{
	struct fixture *f = *state;
	struct buf uri = BUF_INIT;
	struct th_stream t = { 9, 0, 0, 0, 0 };
	int64_t got = -1;

	assert_int_equal(mkdir(path(f, &f->a, "store"), 0755), 0);
	th_write_file(path(f, &f->a, "store/s.bin"), 3 * 1024 * 1024 + 5, 9);
	(void)buf_addf(&uri, "file://%s", f->a.data);
	assert_int_equal(stor_get_stream(f->s, uri.data, th_stream_check, &t,
					 &got, &f->err),
			 0);
	assert_int_equal(got, 3 * 1024 * 1024 + 5);
	assert_int_equal(t.off, 3 * 1024 * 1024 + 5);
	assert_false(t.bad);
	assert_true(t.calls >= 4); /* never the whole object at once */
	memset(&t, 0, sizeof(t));
	t.seed = 9;
	t.stop_at = 1;
	assert_int_equal(stor_get_stream(f->s, uri.data, th_stream_check, &t,
					 &got, &f->err),
			 42);
	assert_int_equal(t.calls, 1);
	buf_reset(&f->err);
	buf_addch(&uri, 'x');
	assert_int_equal(stor_get_stream(f->s, uri.data, th_stream_check, &t,
					 NULL, &f->err),
			 ERR_NOTFOUND);
	print_message("# %s\n", f->err.data);
	buf_release(&uri);
}

static void test_file_roundtrip(void **state)
{
	struct fixture *f = *state;
	struct buf uri = BUF_INIT;

	(void)buf_addf(&uri, "file://%s/store/x/y.bin", f->dir);
	roundtrip(f, uri.data);
	/* file:// keeps the folders it does not own. */
	assert_true(th_exists(path(f, &f->a, "store/x")));
	buf_release(&uri);
}

static void test_embedded_roundtrip(void **state)
{
	struct fixture *f = *state;

	roundtrip(f, "s3://bkt/models/run 1/model.tar.gz");
	/* The embedded store's layout, documented in docs/storage.md. */
	th_write_text(path(f, &f->a, "small"), "hello");
	assert_int_equal(stor_put(f->s, f->a.data, "s3://bkt/a/b.txt", NULL,
				  &f->err),
			 0);
	assert_true(th_exists(path(f, &f->b, "state/s3/bkt/a/b.txt")));
	/* A delete drops the folders it empties, but not the bucket. */
	assert_int_equal(stor_delete(f->s, "s3://bkt/a/b.txt", &f->err), 0);
	assert_false(th_exists(path(f, &f->b, "state/s3/bkt/a")));
	assert_false(th_exists(path(f, &f->b, "state/s3/bkt/models")));
	assert_true(th_exists(path(f, &f->b, "state/s3/bkt")));
}

static void test_prefix_semantics(void **state)
{
	static const char *const keys[] = { "data/a.csv", "data/b/c.csv",
					    "data2/x", "datum", "other/d" };
	struct fixture *f = *state;
	struct stor_list l = STOR_LIST_INIT;
	struct buf uri = BUF_INIT;
	size_t i;

	th_write_text(path(f, &f->a, "small"), "x");
	for (i = 0; i < 5; i++) {
		buf_reset(&uri);
		(void)buf_addf(&uri, "s3://bkt/%s", keys[i]);
		assert_int_equal(
			stor_put(f->s, f->a.data, uri.data, NULL, &f->err), 0);
	}
	/* An in-progress write is never listed. */
	th_write_text(path(f, &f->b, "state/s3/bkt/data/.trainctl-tmp.abc"),
		      "partial");
	assert_int_equal(stor_list(f->s, "s3://bkt/data", &l, &f->err), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[0].key, "data/a.csv");
	assert_string_equal(l.v[1].key, "data/b/c.csv");
	assert_string_equal(l.v[2].key, "data2/x");
	stor_list_release(&l);
	assert_int_equal(stor_list(f->s, "s3://bkt/data/", &l, &f->err), 0);
	assert_int_equal(l.n, 2);
	stor_list_release(&l);
	assert_int_equal(stor_list(f->s, "s3://bkt/dat", &l, &f->err), 0);
	assert_int_equal(l.n, 4);
	stor_list_release(&l);
	assert_int_equal(stor_list(f->s, "s3://bkt", &l, &f->err), 0);
	assert_int_equal(l.n, 5);
	stor_list_release(&l);
	assert_int_equal(stor_list(f->s, "s3://nobucket/x", &l, &f->err), 0);
	assert_int_equal(l.n, 0);
	stor_list_release(&l);
	/* A key cannot be both an object and a folder on disk. */
	assert_int_equal(stor_put(f->s, f->a.data, "s3://bkt/datum/x", NULL,
				  &f->err),
			 ERR_CONFLICT);
	buf_release(&uri);
}

static void test_trees(void **state)
{
	struct fixture *f = *state;
	struct stor_sync_stats st;
	struct buf uri = BUF_INIT;

	assert_int_equal(mkdir(path(f, &f->a, "tree"), 0755), 0);
	assert_int_equal(mkdir(path(f, &f->a, "tree/sub"), 0755), 0);
	th_write_text(path(f, &f->a, "tree/top.txt"), "top");
	th_write_file(path(f, &f->a, "tree/sub/big.bin"), 1 << 20, 3);
	assert_int_equal(symlink("top.txt", path(f, &f->a, "tree/link")), 0);
	assert_int_equal(stor_put_dir(f->s, path(f, &f->a, "tree"),
				      "s3://bkt/ckpt", 0, &st, &f->err),
			 0);
	assert_int_equal(st.files, 2); /* the symlink is skipped */
	assert_int_equal(stor_put_dir(f->s, path(f, &f->a, "tree"),
				      "s3://bkt/ckpt/", STOR_SYNC_CHANGED, &st,
				      &f->err),
			 0);
	assert_int_equal(st.files, 0);
	assert_int_equal(st.skipped, 2);
	usleep(20 * 1000); /* the fetch is later than the objects */
	assert_int_equal(stor_get_prefix(f->s, "s3://bkt/ckpt",
					 path(f, &f->a, "restored"), &st,
					 &f->err),
			 0);
	assert_int_equal(st.files, 2);
	assert_true(th_check_file(path(f, &f->a, "restored/sub/big.bin"),
				  1 << 20, 3));
	assert_true(th_exists(path(f, &f->a, "restored/top.txt")));
	/* A fetched file has its object's time, not the time of the fetch:
	 * a restored checkpoint is older than what the program writes. */
	{
		struct stor_list l = STOR_LIST_INIT;
		struct stat sb;
		size_t i;

		assert_int_equal(stor_list(f->s, "s3://bkt/ckpt/", &l, &f->err),
				 0);
		for (i = 0; i < l.n && strcmp(l.v[i].key, "ckpt/top.txt"); i++)
			;
		assert_true(i < l.n && l.v[i].mtime_ms > 0);
		assert_int_equal(stat(path(f, &f->a, "restored/top.txt"), &sb),
				 0);
		assert_int_equal((int64_t)sb.st_mtim.tv_sec * 1000 +
					 sb.st_mtim.tv_nsec / 1000000,
				 l.v[i].mtime_ms);
		stor_list_release(&l);
	}
	/* The same through file://. */
	(void)buf_addf(&uri, "file://%s/tree", f->dir);
	assert_int_equal(stor_get_prefix(f->s, uri.data, path(f, &f->a, "copy"),
					 &st, &f->err),
			 0);
	assert_int_equal(st.files, 2);
	assert_true(
		th_check_file(path(f, &f->a, "copy/sub/big.bin"), 1 << 20, 3));
	buf_release(&uri);
}

/*
 * The checkpoint mirror's rule for plain files: one written just now
 * waits, unless it is listed as complete with its current size and mtime,
 * or the sync is the final one; a libtrainer folder goes by its manifest.
 */
static void test_sync_complete(void **state)
{
	struct fixture *f = *state;
	struct stor_list complete = STOR_LIST_INIT, l = STOR_LIST_INIT;
	struct stor_ckpt_sync opt = { 0, NULL, 0 };
	struct stor_sync_stats st;
	struct stat sb;

	assert_int_equal(mkdir(path(f, &f->a, "ck"), 0755), 0);
	th_write_text(path(f, &f->a, "ck/ckpt.pt"), "weights");
	th_write_text(path(f, &f->a, "ck/other.pt"), "partial");
	assert_int_equal(stor_sync_checkpoints(f->s, path(f, &f->a, "ck"),
					       "s3://bkt/ck/", &opt, &st,
					       &f->err),
			 0);
	assert_int_equal(st.files, 0); /* both written just now */
	assert_int_equal(stat(path(f, &f->a, "ck/ckpt.pt"), &sb), 0);
	(void)stor_list_push(&complete, "ckpt.pt", (int64_t)sb.st_size,
			     (int64_t)sb.st_mtim.tv_sec * 1000 +
				     sb.st_mtim.tv_nsec / 1000000);
	opt.complete = &complete;
	assert_int_equal(stor_sync_checkpoints(f->s, path(f, &f->a, "ck"),
					       "s3://bkt/ck/", &opt, &st,
					       &f->err),
			 0);
	assert_int_equal(st.files, 1);
	assert_int_equal(stor_list(f->s, "s3://bkt/ck/", &l, &f->err), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.v[0].key, "ck/ckpt.pt");
	stor_list_release(&l);
	/* Written again since it completed: it waits for its next close. */
	th_write_text(path(f, &f->a, "ck/ckpt.pt"), "newer weights");
	assert_int_equal(stor_sync_checkpoints(f->s, path(f, &f->a, "ck"),
					       "s3://bkt/ck/", &opt, &st,
					       &f->err),
			 0);
	assert_int_equal(st.files, 0);
	/* The program ended: every file is complete. */
	opt.final = 1;
	assert_int_equal(stor_sync_checkpoints(f->s, path(f, &f->a, "ck"),
					       "s3://bkt/ck/", &opt, &st,
					       &f->err),
			 0);
	assert_int_equal(st.files, 2);
	stor_list_release(&complete);
}

/*
 * A plain file completed while no agent watched (no close or rename was
 * seen): it goes once nothing wrote it for 2 s, and not before.
 */
static void test_sync_quiet(void **state)
{
	struct fixture *f = *state;
	struct stor_list l = STOR_LIST_INIT;
	struct stor_ckpt_sync opt = { 0, NULL, 0 };
	struct stor_sync_stats st;
	struct timespec ts[2];

	assert_int_equal(mkdir(path(f, &f->a, "cq"), 0755), 0);
	th_write_text(path(f, &f->a, "cq/old.pt"), "written before");
	th_write_text(path(f, &f->a, "cq/new.pt"), "still written");
	assert_int_equal(clock_gettime(CLOCK_REALTIME, &ts[0]), 0);
	ts[0].tv_sec -= 3;
	ts[1] = ts[0];
	assert_int_equal(utimensat(AT_FDCWD, path(f, &f->a, "cq/old.pt"), ts,
				   0),
			 0);
	assert_int_equal(stor_sync_checkpoints(f->s, path(f, &f->a, "cq"),
					       "s3://bkt/cq/", &opt, &st,
					       &f->err),
			 0);
	assert_int_equal(st.files, 1);
	assert_int_equal(stor_list(f->s, "s3://bkt/cq/", &l, &f->err), 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.v[0].key, "cq/old.pt");
	stor_list_release(&l);
}

/*
 * A put into folders that do not exist yet makes them only when it
 * commits: one killed midway leaves no (empty) folder behind.
 */
static void test_put_makes_folders_at_commit(void **state)
{
	struct fixture *f = *state;
	struct buf tmp = BUF_INIT, p = BUF_INIT, err = BUF_INIT;
	int fd = -1;

	assert_int_equal(mkdir(path(f, &f->a, "bk"), 0755), 0);
	(void)buf_addf(&p, "%s/bk/step-1.rank-0/model.bin", f->dir);
	assert_int_equal(stor_fs_tmp_open(p.data, &fd, &tmp, &err), 0);
	assert_true(fd >= 0);
	assert_false(th_exists(path(f, &f->a, "bk/step-1.rank-0")));
	assert_non_null(strstr(tmp.data, "/bk/.trainctl-tmp."));
	assert_int_equal(write(fd, "w", 1), 1);
	assert_int_equal(stor_fs_tmp_commit(fd, tmp.data, p.data, 0, &err), 0);
	assert_true(th_exists(p.data));
	assert_false(th_exists(tmp.data));
	/* A file where a folder should be is still refused by name. */
	th_write_text(path(f, &f->a, "bk/plain"), "x");
	buf_reset(&p);
	(void)buf_addf(&p, "%s/bk/plain/sub/obj", f->dir);
	buf_reset(&err);
	assert_int_equal(stor_fs_tmp_open(p.data, &fd, &tmp, &err),
			 ERR_CONFLICT);
	assert_non_null(strstr(err.data, "not a folder"));
	buf_release(&tmp);
	buf_release(&p);
	buf_release(&err);
}

static void test_no_backend(void **state)
{
	struct stor_config cfg;
	struct stor *s;
	struct buf err = BUF_INIT;
	struct stor_list l = STOR_LIST_INIT;

	(void)state;
	stor_config_init(&cfg);
	assert_int_equal(stor_open(&cfg, &s, &err), 0);
	assert_int_equal(stor_list(s, "s3://bkt/x", &l, &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "no S3 endpoint"));
	stor_close(s);
	stor_config_release(&cfg);
	buf_release(&err);
}

/*
 * Kills a put of a big file mid-copy, over an existing object: the
 * object stays the complete old one; the temp file is never listed. A put
 * that finished before the kill proves nothing, so it is tried again (up
 * to five times) until a kill lands while the temp file is being written.
 */
static void killed_put(struct fixture *f, const char *uri, const char *obj_dir)
{
	const uint64_t old_size = 1 << 20, new_size = 768ull << 20;
	struct stor_list l = STOR_LIST_INIT;
	struct stor_object info;
	struct buf nb = BUF_INIT;
	int status = 0, killed = 0, seen, i, try;
	pid_t pid;

	/* obj_dir may be f->b's text: the new file's path has a buffer of
	 * its own. */
	(void)buf_addf(&nb, "%s/new.bin", f->dir);
	th_write_file(path(f, &f->a, "old.bin"), old_size, 1);
	th_write_file(nb.data, new_size, 2);
	for (try = 0; try < 5 && !killed; try++) {
		assert_int_equal(stor_put(f->s, f->a.data, uri, NULL, &f->err),
				 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct buf err = BUF_INIT;

			_exit(stor_put(f->s, nb.data, uri, NULL, &err) ? 1 : 0);
		}
		/* Wait until the temp file exists, then a little more. */
		for (i = 0, seen = 0; i < 20000 && !seen; i++) {
			seen = th_count_names(obj_dir, ".trainctl-tmp.") > 0;
			if (!seen)
				usleep(200);
		}
		usleep(20000);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		killed = seen && WIFSIGNALED(status);
		if (!killed)
			print_message("# try %d: the put finished before the "
				      "kill\n",
				      try + 1);
	}
	assert_true(killed);
	assert_int_equal(stor_stat(f->s, uri, &info, &f->err), 0);
	assert_int_equal(info.size, (int64_t)old_size);
	stor_object_release(&info);
	assert_int_equal(stor_get(f->s, uri, path(f, &f->a, "after.bin"), NULL,
				  &f->err),
			 0);
	assert_true(th_check_file(f->a.data, old_size, 1));
	assert_int_equal(stor_list(f->s, uri, &l, &f->err), 0);
	assert_int_equal(l.n, 1);
	stor_list_release(&l);
	unlink(nb.data);
	buf_release(&nb);
}

/*
 * Makes path s seconds old. A file written this second may carry a
 * modification time a tick ahead of time(), so the sweep's age test is
 * given files whose age is not in doubt.
 */
static void backdate(const char *path, time_t s)
{
	struct timespec t[2];

	t[0].tv_sec = t[1].tv_sec = time(NULL) - s;
	t[0].tv_nsec = t[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/*
 * What a killed put leaves is swept: the temp file, and folders that held
 * only it; objects, buckets and the root stay.
 */
static void test_sweep_tmp(void **state)
{
	struct fixture *f = *state;
	struct buf root = BUF_INIT, p = BUF_INIT;
	struct stor_object info;

	(void)buf_addf(&root, "%s/state/s3", f->dir);
	th_write_file(path(f, &f->a, "obj.bin"), 1000, 1);
	assert_int_equal(stor_put(f->s, f->a.data, "s3://bkt/keep/obj.bin",
				  NULL, &f->err),
			 0);
	(void)buf_addf(&p, "%s/bkt/gone/deeper", root.data);
	assert_int_equal(stor_fs_mkdirs(p.data, &f->err), 0);
	buf_reset(&p);
	(void)buf_addf(&p, "%s/bkt/gone/deeper/.trainctl-tmp.AbCdEf",
		       root.data);
	th_write_file(p.data, 10, 3);
	backdate(p.data, 60);
	buf_reset(&p);
	(void)buf_addf(&p, "%s/bkt/keep/.trainctl-tmp.XyZ123", root.data);
	th_write_file(p.data, 10, 3);
	backdate(p.data, 60);
	/* Too young for a sweep that wants an hour. */
	assert_int_equal(stor_fs_sweep_tmp(root.data, 3600), 0);
	assert_int_equal(stor_fs_sweep_tmp(root.data, 30), 2);
	buf_reset(&p);
	(void)buf_addf(&p, "%s/bkt/gone", root.data);
	assert_int_not_equal(access(p.data, F_OK), 0);
	buf_reset(&p);
	(void)buf_addf(&p, "%s/bkt", root.data);
	assert_int_equal(access(p.data, F_OK), 0);
	assert_int_equal(
		stor_stat(f->s, "s3://bkt/keep/obj.bin", &info, &f->err), 0);
	stor_object_release(&info);
	assert_int_equal(th_count_names(path(f, &f->b, "state/s3/bkt/keep"),
					".trainctl-tmp."),
			 0);
	buf_release(&root);
	buf_release(&p);
}

static void test_killed_put_embedded(void **state)
{
	struct fixture *f = *state;

	killed_put(f, "s3://bkt/big/object.bin",
		   path(f, &f->b, "state/s3/bkt/big"));
}

static void test_killed_put_file(void **state)
{
	struct fixture *f = *state;
	struct buf uri = BUF_INIT, dir = BUF_INIT;

	(void)buf_addf(&uri, "file://%s/shared/object.bin", f->dir);
	(void)buf_addf(&dir, "%s/shared", f->dir);
	killed_put(f, uri.data, dir.data);
	buf_release(&uri);
	buf_release(&dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_embedded_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_prefix_semantics, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_trees, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_complete, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sync_quiet, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_put_makes_folders_at_commit, setup, teardown),
		cmocka_unit_test(test_no_backend),
		cmocka_unit_test_setup_teardown(test_killed_put_embedded, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sweep_tmp, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_killed_put_file, setup,
						teardown),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests_name("storage_fs", tests, NULL, NULL);
}
