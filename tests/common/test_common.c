/*
 * Tests the shared helpers of common/: mkdir -p, the atomic file write,
 * the option number parser, the port probe, ALLOC_GROW and the monotonic
 * condition variable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/hex.h"
#include "common/netutil.h"
#include "common/opt.h"
#include "common/strvec.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

static char dir[] = "/tmp/test-common-XXXXXX";

static const char *at(struct buf *b, const char *rel)
{
	buf_reset(b);
	(void)buf_addf(b, "%s/%s", dir, rel);
	return b->data;
}

static int mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (int)(st.st_mode & 07777);
}

static void test_mkdir_p(void **state)
{
	struct buf p = BUF_INIT, q = BUF_INIT, err = BUF_INIT;
	mode_t old = umask(077);
	FILE *f;

	(void)state;
	/* Every level made, each with the mode asked for, umask or not. */
	assert_int_equal(fs_mkdir_p(at(&p, "a/b/c"), 0755, &err), 0);
	assert_int_equal(mode_of(at(&p, "a")), 0755);
	assert_int_equal(mode_of(at(&p, "a/b/c")), 0755);
	/* Again: nothing to do. */
	assert_int_equal(fs_mkdir_p(at(&p, "a/b/c"), 0755, &err), 0);
	/* A file in the way is named. */
	f = fopen(at(&p, "a/file"), "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(fs_mkdir_p(at(&p, "a/file/x"), 0755, &err),
			 ERR_CONFLICT);
	assert_non_null(strstr(err.data, "is not a folder"));
	/* A link to a folder is a folder, as for mkdir -p. */
	assert_int_equal(symlink(at(&q, "a/b"), at(&p, "link")), 0);
	assert_int_equal(fs_mkdir_p(at(&p, "link/d"), 0700, NULL), 0);
	assert_int_equal(mode_of(at(&p, "a/b/d")), 0700);
	umask(old);
	buf_release(&p);
	buf_release(&q);
	buf_release(&err);
}

static void test_write_atomic(void **state)
{
	struct buf p = BUF_INIT, q = BUF_INIT, err = BUF_INIT, tmp = BUF_INIT;
	mode_t old = umask(022);
	char got[32];
	FILE *f;
	size_t n;

	(void)state;
	assert_int_equal(fs_write_atomic(at(&p, "w.txt"), "first", 5, 0600, 0,
					 &err),
			 0);
	assert_int_equal(fs_write_atomic(at(&p, "w.txt"), "second\n", 7, 0644,
					 FS_WRITE_SYNC, &err),
			 0);
	f = fopen(p.data, "r");
	assert_non_null(f);
	n = fread(got, 1, sizeof(got) - 1, f);
	fclose(f);
	got[n] = '\0';
	assert_string_equal(got, "second\n");
	assert_int_equal(mode_of(p.data), 0644);
	(void)buf_addf(&tmp, "%s.tmp", p.data);
	assert_int_not_equal(access(tmp.data, F_OK), 0);
	/* No folder: an error that names the file, and nothing left. */
	assert_int_equal(fs_write_atomic(at(&p, "none/w.txt"), "x", 1, 0600, 0,
					 &err),
			 ERR_IO);
	assert_non_null(strstr(err.data, "none/w.txt.tmp"));
	/* A link where the temp file goes is not followed. */
	assert_int_equal(symlink(at(&q, "target"), at(&p, "v.txt.tmp")), 0);
	assert_int_equal(fs_write_atomic(at(&p, "v.txt"), "x", 1, 0600, 0,
					 NULL),
			 ERR_IO);
	assert_int_not_equal(access(at(&p, "target"), F_OK), 0);
	umask(old);
	buf_release(&p);
	buf_release(&q);
	buf_release(&err);
	buf_release(&tmp);
}

static void test_opt_parse_long(void **state)
{
	struct buf err = BUF_INIT;
	long v = 0;

	(void)state;
	assert_int_equal(opt_parse_long("threads", "16", 1, 64, &v, &err), 0);
	assert_int_equal(v, 16);
	assert_int_equal(opt_parse_long("threads", "65", 1, 64, &v, &err),
			 ERR_INVALID);
	assert_string_equal(err.data, "option '--threads' needs a number from "
				      "1 to 64, not '65'");
	buf_reset(&err);
	assert_int_equal(opt_parse_long("x", "", 0, 9, &v, &err), ERR_INVALID);
	assert_int_equal(opt_parse_long("x", "3k", 0, 9, &v, &err),
			 ERR_INVALID);
	assert_int_equal(opt_parse_long("x", "99999999999999999999", 0,
					LONG_MAX, &v, &err),
			 ERR_INVALID);
	assert_int_equal(v, 16);
	buf_release(&err);
}

static void test_port_bindable(void **state)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	assert_int_equal(net_port_bindable(port), 0);
	close(fd);
	assert_int_equal(net_port_bindable(port), 1);
}

static void test_alloc_grow(void **state)
{
	int *v = NULL;
	size_t n = 0, alloc = 0, i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		ALLOC_GROW(v, n + 1, alloc);
		assert_true(alloc >= n + 1);
		v[n++] = (int)i;
	}
	for (i = 0; i < 1000; i++)
		assert_int_equal(v[i], (int)i);
	/* Asking for more than one step at once gets at least that. */
	ALLOC_GROW(v, 5000, alloc);
	assert_true(alloc >= 5000);
	free(v);
}

static void test_cond_mono(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c;
	struct timespec ts;
	int64_t t0, waited;
	int rc;

	(void)state;
	assert_int_equal(time_cond_init_mono(&c), 0);
	pthread_mutex_lock(&m);
	t0 = time_mono_ms();
	time_mono_deadline(&ts, 50);
	do
		rc = pthread_cond_timedwait(&c, &m, &ts);
	while (rc == 0);
	waited = time_mono_ms() - t0;
	pthread_mutex_unlock(&m);
	assert_int_equal(rc, ETIMEDOUT);
	assert_true(waited >= 49 && waited < 5000);
	pthread_cond_destroy(&c);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[64];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_strvec(void **state)
{
	struct strvec s = STRVEC_INIT;
	char **copy;

	(void)state;
	strvec_push(&s, "a");
	strvec_pushf(&s, "%s=%d", "b", 2);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.v[1], "b=2");
	assert_null(s.v[2]);
	copy = strv_dup(s.v);
	assert_int_equal(strv_len(copy), 2);
	assert_true(copy[0] != s.v[0]);
	assert_string_equal(copy[0], "a");
	strvec_release(&s);
	assert_null(s.v);
	assert_int_equal(s.n, 0);
	strv_free(copy);
	copy = strv_dup(NULL);
	assert_int_equal(strv_len(copy), 0);
	strv_free(copy);
	strv_free(NULL);
	/* split: empty fields kept, the vector NULL-terminated */
	strvec_split(&s, "a,,b", ',');
	assert_int_equal(s.n, 3);
	assert_string_equal(s.v[0], "a");
	assert_string_equal(s.v[1], "");
	assert_string_equal(s.v[2], "b");
	assert_null(s.v[3]);
	strvec_release(&s);
	strvec_split(&s, "", ',');
	assert_int_equal(s.n, 1);
	assert_string_equal(s.v[0], "");
	strvec_release(&s);
	strvec_split(&s, "x,", ',');
	assert_int_equal(s.n, 2);
	assert_string_equal(s.v[1], "");
	strvec_release(&s);
}

/* Code point (or -1) and length of the first sequence of s. */
static void utf8_case(const char *s, size_t n, unsigned flags, long cp,
		      size_t len)
{
	size_t got;

	assert_int_equal(utf8_decode((const unsigned char *)s, n, flags, &got),
			 cp);
	assert_int_equal(got, len);
}

static void test_utf8(void **state)
{
	(void)state;
	utf8_case("A", 1, 0, 'A', 1);
	utf8_case("", 1, 0, 0, 1);
	utf8_case("\xc3\xa9", 2, 0, 0xe9, 2);
	utf8_case("\xe2\x82\xac", 3, 0, 0x20ac, 3);
	utf8_case("\xf0\x9f\x98\x80", 4, 0, 0x1f600, 4);
	utf8_case("\xf4\x8f\xbf\xbf", 4, 0, 0x10ffff, 4);
	/* Not a lead byte, overlong forms, above U+10FFFF. */
	utf8_case("\x80", 1, 0, -1, 1);
	utf8_case("\xc0\x80", 2, 0, -1, 1);
	utf8_case("\xe0\x80\x80", 3, 0, -1, 1);
	utf8_case("\xf0\x80\x80\x80", 4, 0, -1, 1);
	utf8_case("\xf4\x90\x80\x80", 4, 0, -1, 1);
	utf8_case("\xf5\x80\x80\x80", 4, 0, -1, 1);
	/* A truncated sequence is one ill-formed subpart. */
	utf8_case("\xe2\x82", 2, 0, -1, 2);
	utf8_case("\xe2\x82" "A", 3, 0, -1, 2);
	utf8_case("\xf0\x9f\x98", 3, 0, -1, 3);
	/* Surrogates only where asked for. */
	utf8_case("\xed\xa0\x80", 3, 0, -1, 1);
	utf8_case("\xed\xa0\x80", 3, UTF8_SURROGATES, 0xd800, 3);
	utf8_case("\xed\x9f\xbf", 3, 0, 0xd7ff, 3);
}

static void test_hex_uuid(void **state)
{
	unsigned char b[16];
	char out[37];

	(void)state;
	memset(b, 0xff, sizeof(b));
	hex_uuid(b, out);
	assert_string_equal(out, "ffffffff-ffff-4fff-bfff-ffffffffffff");
	memset(b, 0, sizeof(b));
	hex_uuid(b, out);
	assert_string_equal(out, "00000000-0000-4000-8000-000000000000");
	assert_int_equal(hex_digit('B'), 11);
	assert_int_equal(hex_digit('g'), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mkdir_p),
		cmocka_unit_test(test_write_atomic),
		cmocka_unit_test(test_opt_parse_long),
		cmocka_unit_test(test_port_bindable),
		cmocka_unit_test(test_alloc_grow),
		cmocka_unit_test(test_cond_mono),
		cmocka_unit_test(test_strvec),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_hex_uuid),
	};

	return cmocka_run_group_tests_name("common", tests, setup, teardown);
}
