/*
 * Tests storage/archive.c: packing (one folder, several merged) and
 * unpacking, and that hostile archives (built by make_tars.py with
 * Python's tarfile) are refused with a clear error while nothing is
 * written outside the target folder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "storage/storage.h"
#include "tests/storage/helpers.h"
#include "common/err.h"

static char *g_dir;

static const char *p(struct buf *b, const char *rel)
{
	buf_reset(b);
	(void)buf_addf(b, "%s/%s", g_dir, rel);
	return b->data;
}

static int group_setup(void **state)
{
	struct buf cmd = BUF_INIT, b = BUF_INIT;
	int rc;

	(void)state;
	g_dir = th_mkdtemp("test_archive");
	mkdir(p(&b, "outside"), 0755);
	mkdir(p(&b, "tars"), 0755);
	th_write_text(p(&b, "outside/secret"), "secret\n");
	(void)buf_addf(&cmd,
		       "/usr/bin/python3 tests/storage/make_tars.py "
		       "'%s/tars' '%s/outside'",
		       g_dir, g_dir);
	rc = system(cmd.data);
	buf_release(&cmd);
	buf_release(&b);
	return rc ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	th_rm_rf(g_dir);
	free(g_dir);
	return 0;
}

/* Nothing in outside/ but the secret, unchanged. */
static void assert_outside_untouched(void)
{
	struct buf b = BUF_INIT, t = BUF_INIT;

	assert_int_equal(th_count_names(p(&b, "outside"), ""), 2);
	assert_int_equal(th_read_text(p(&b, "outside/secret"), &t), 0);
	assert_string_equal(t.data, "secret\n");
	buf_release(&b);
	buf_release(&t);
}

static void refuse(const char *tarname, const char *why)
{
	struct buf a = BUF_INIT, b = BUF_INIT, err = BUF_INIT;
	int ret;

	th_rm_rf(p(&b, "target"));
	ret = stor_archive_unpack(p(&a, tarname), p(&b, "target"), NULL, &err);
	print_message("# %s: %s\n", tarname, err.data);
	assert_true(ret < 0);
	assert_non_null(strstr(err.data, why));
	assert_outside_untouched();
	buf_release(&a);
	buf_release(&b);
	buf_release(&err);
}

static void test_traversal(void **state)
{
	(void)state;
	refuse("tars/traversal.tar.gz", "'..' component");
	refuse("tars/traversal_deep.tar.gz", "'..' component");
}

static void test_absolute(void **state)
{
	(void)state;
	refuse("tars/absolute.tar.gz", "absolute name");
}

static void test_symlinks(void **state)
{
	(void)state;
	refuse("tars/symlink_abs.tar.gz", "points outside");
	refuse("tars/symlink_rel.tar.gz", "points outside");
	refuse("tars/symlink_then_file.tar.gz", "points outside");
}

static void test_through_existing_symlink(void **state)
{
	struct buf a = BUF_INIT, b = BUF_INIT, err = BUF_INIT;

	(void)state;
	th_rm_rf(p(&b, "target"));
	mkdir(b.data, 0755);
	/* Left by an earlier job, or planted: target/evil -> outside. */
	assert_int_equal(symlink(p(&a, "outside"), p(&b, "target/evil")), 0);
	assert_true(stor_archive_unpack(p(&a, "tars/through_existing.tar.gz"),
					p(&b, "target"), NULL, &err) < 0);
	print_message("# through_existing: %s\n", err.data);
	assert_non_null(strstr(err.data, "through the symlink"));
	assert_outside_untouched();
	buf_release(&a);
	buf_release(&b);
	buf_release(&err);
}

static void test_hardlinks(void **state)
{
	(void)state;
	refuse("tars/hardlink_abs.tar.gz", "points outside");
	refuse("tars/hardlink_rel.tar.gz", "points outside");
}

static void test_device(void **state)
{
	(void)state;
	refuse("tars/device.tar.gz", "device");
}

static void test_huge_header(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	refuse("tars/huge.tar", "claims");
	assert_false(th_exists(p(&b, "target/huge.bin")));
	buf_release(&b);
}

static void test_entry_cap(void **state)
{
	struct stor_unpack_limits lim = { 0, 5 };
	struct buf a = BUF_INIT, b = BUF_INIT, err = BUF_INIT;

	(void)state;
	th_rm_rf(p(&b, "target"));
	assert_int_equal(stor_archive_unpack(p(&a, "tars/many.tar.gz"),
					     p(&b, "target"), &lim, &err),
			 ERR_TOOBIG);
	assert_non_null(strstr(err.data, "more than 5 entries"));
	lim.max_entries = 0;
	lim.max_bytes = 5;
	buf_reset(&err);
	th_rm_rf(p(&b, "target"));
	assert_int_equal(stor_archive_unpack(p(&a, "tars/many.tar.gz"),
					     p(&b, "target"), &lim, &err),
			 ERR_TOOBIG);
	assert_non_null(strstr(err.data, "limit of 5 bytes"));
	buf_release(&a);
	buf_release(&b);
	buf_release(&err);
}

static void test_good_links(void **state)
{
	struct buf a = BUF_INIT, b = BUF_INIT, err = BUF_INIT, t = BUF_INIT;

	(void)state;
	th_rm_rf(p(&b, "target"));
	assert_int_equal(stor_archive_unpack(p(&a, "tars/good.tar.gz"),
					     p(&b, "target"), NULL, &err),
			 0);
	assert_int_equal(th_read_text(p(&b, "target/dir/l"), &t), 0);
	assert_string_equal(t.data, "a");
	assert_int_equal(th_read_text(p(&b, "target/dir/h"), &t), 0);
	assert_string_equal(t.data, "a");
	assert_int_equal(th_read_text(p(&b, "target/up"), &t), 0);
	assert_string_equal(t.data, "a");
	buf_release(&a);
	buf_release(&b);
	buf_release(&err);
	buf_release(&t);
}

static void test_pack_merge(void **state)
{
	struct buf a = BUF_INIT, b = BUF_INIT, c = BUF_INIT, err = BUF_INIT;
	struct buf t = BUF_INIT;
	const char *dirs[2];

	(void)state;
	mkdir(p(&a, "host1"), 0755);
	mkdir(p(&a, "host1/sub"), 0755);
	mkdir(p(&a, "host2"), 0755);
	th_write_text(p(&a, "host1/model.pt"), "weights-1");
	th_write_file(p(&a, "host1/sub/big.bin"), 3 << 20, 9);
	th_write_text(p(&a, "host2/extra.json"), "{}");
	th_write_text(p(&a, "host2/model.pt"), "weights-2");
	assert_int_equal(symlink("model.pt", p(&a, "host1/latest")), 0);
	dirs[0] = p(&b, "host1");
	dirs[1] = p(&c, "host2");
	dirs[0] = strdup(dirs[0]);
	assert_int_equal(
		stor_archive_pack(dirs, 2, p(&a, "model.tar.gz"), &err), 0);
	free((void *)dirs[0]);
	th_rm_rf(p(&b, "merged"));
	assert_int_equal(stor_archive_unpack(p(&a, "model.tar.gz"),
					     p(&b, "merged"), NULL, &err),
			 0);
	assert_true(th_check_file(p(&a, "merged/sub/big.bin"), 3 << 20, 9));
	assert_int_equal(th_read_text(p(&a, "merged/extra.json"), &t), 0);
	assert_string_equal(t.data, "{}");
	/* The later folder wins a clash. */
	assert_int_equal(th_read_text(p(&a, "merged/model.pt"), &t), 0);
	assert_string_equal(t.data, "weights-2");
	assert_int_equal(th_read_text(p(&a, "merged/latest"), &t), 0);
	assert_string_equal(t.data, "weights-2");
	/* tar(1) reads what we write. */
	buf_reset(&t);
	(void)buf_addf(&t, "tar -tzf '%s/model.tar.gz' | grep -qx sub/big.bin",
		       g_dir);
	assert_int_equal(system(t.data), 0);
	buf_release(&a);
	buf_release(&b);
	buf_release(&c);
	buf_release(&err);
	buf_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_traversal),
		cmocka_unit_test(test_absolute),
		cmocka_unit_test(test_symlinks),
		cmocka_unit_test(test_through_existing_symlink),
		cmocka_unit_test(test_hardlinks),
		cmocka_unit_test(test_device),
		cmocka_unit_test(test_huge_header),
		cmocka_unit_test(test_entry_cap),
		cmocka_unit_test(test_good_links),
		cmocka_unit_test(test_pack_merge),
	};

	return cmocka_run_group_tests_name("storage_archive", tests,
					   group_setup, group_teardown);
}
