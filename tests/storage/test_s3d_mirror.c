/*
 * Tests storage/s3d/mirror.c: a copy lands as the store writes an object
 * (bytes, ETag, time) and reads back with the same metadata; names that
 * leave the store, metadata that is not an object's, a length over the
 * limit and bytes that are not the ETag's are refused with nothing
 * written; removal of an object and of a bucket.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <sys/stat.h>

#include "storage/s3d/mirror.h"
#include "tests/storage/helpers.h"
#include "common/err.h"

/* "abc" and its MD5 */
#define ABC_MD5 "900150983cd24fb0d6963f7d28e17f72"
#define META(etag, size)                         \
	"{\"etag\":\"" etag "\",\"size\":" #size \
	",\"mtime_ns\":1500000000123456789,"     \
	"\"headers\":{\"content-type\":\"text/plain\"}}"

static int put(const char *root, const char *bucket, const char *key,
	       const char *meta, const char *data, int64_t max)
{
	struct buf err = BUF_INIT;
	struct s3d_mirror_in *in;
	int r;

	in = s3d_mirror_in_begin(root, bucket, key, meta, (int64_t)strlen(data),
				 max, &err);
	if (!in) {
		buf_release(&err);
		return ERR_INVALID;
	}
	r = s3d_mirror_in_data(in, data, strlen(data));
	if (!r)
		r = s3d_mirror_in_finish(in, &err);
	s3d_mirror_in_free(in);
	buf_release(&err);
	return r;
}

/* Entries of dir but "." and "..", -1 when it does not exist. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void test_round_trip(void **state)
{
	char *root = th_mkdtemp("mirror");
	struct buf meta = BUF_INIT, err = BUF_INIT, p = BUF_INIT;
	char etag[S3D_ETAG_MAX], data[8] = { 0 };
	struct stat st;
	int64_t size;
	int fd;

	(void)state;
	assert_int_equal(
		put(root, "bkt", "a/b.txt", META(ABC_MD5, 3), "abc", 100), 0);
	assert_int_equal(s3d_mirror_etag(root, "bkt", "a/b.txt", etag), 0);
	assert_string_equal(etag, ABC_MD5);
	(void)buf_addf(&p, "%s/bkt/a/b.txt", root);
	assert_int_equal(stat(p.data, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1500000000);
	assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	assert_int_equal(s3d_mirror_open(root, "bkt", "a/b.txt", &fd, &size,
					 &meta, &err),
			 0);
	assert_int_equal(size, 3);
	assert_int_equal(read(fd, data, sizeof(data)), 3);
	assert_string_equal(data, "abc");
	close(fd);
	assert_non_null(strstr(meta.data, "text/plain"));
	assert_int_equal(s3d_mirror_meta_etag(meta.data, etag), 0);
	assert_string_equal(etag, ABC_MD5);
	/* A multipart ETag is taken as it is. */
	assert_int_equal(
		put(root, "bkt", "m", META(ABC_MD5 "-2", 3), "xyz", 100), 0);
	assert_int_equal(s3d_mirror_remove(root, "bkt", "a/b.txt", &err), 0);
	assert_int_equal(s3d_mirror_etag(root, "bkt", "a/b.txt", etag),
			 ERR_NOTFOUND);
	assert_int_equal(s3d_mirror_remove(root, "bkt", NULL, &err), 0);
	assert_int_equal(entries(root), 0);
	buf_release(&meta);
	buf_release(&err);
	buf_release(&p);
	th_rm_rf(root);
	free(root);
}

static void test_refusals(void **state)
{
	char *root = th_mkdtemp("mirror");
	struct buf err = BUF_INIT, p = BUF_INIT;
	char *b, *k;

	(void)state;
	assert_int_equal(s3d_mirror_split("bkt/x/y", &b, &k, &err), 0);
	assert_string_equal(b, "bkt");
	assert_string_equal(k, "x/y");
	free(b);
	free(k);
	assert_int_equal(s3d_mirror_split("bkt/../../etc/passwd", &b, &k, &err),
			 ERR_INVALID);
	assert_int_equal(s3d_mirror_split("../x", &b, &k, &err), ERR_INVALID);
	assert_int_equal(s3d_mirror_split("bkt", &b, &k, &err), ERR_INVALID);
	assert_int_not_equal(
		put(root, "bkt", "../x", META(ABC_MD5, 3), "abc", 100), 0);
	assert_int_not_equal(
		put(root, "B_A_D", "x", META(ABC_MD5, 3), "abc", 100), 0);
	assert_int_not_equal(put(root, "bkt", "x", "{}", "abc", 100), 0);
	assert_int_not_equal(put(root, "bkt", "x", "not json", "abc", 100), 0);
	/* the size the metadata gives is not the length */
	assert_int_not_equal(
		put(root, "bkt", "x", META(ABC_MD5, 4), "abc", 100), 0);
	/* over the limit */
	assert_int_not_equal(put(root, "bkt", "x", META(ABC_MD5, 3), "abc", 2),
			     0);
	/* bytes that are not the ETag's */
	assert_int_not_equal(
		put(root, "bkt", "x", META(ABC_MD5, 3), "abd", 100), 0);
	(void)buf_addf(&p, "%s/bkt", root);
	assert_true(entries(p.data) <= 0); /* no object, no temp file */
	buf_release(&err);
	buf_release(&p);
	th_rm_rf(root);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
