/*
 * Tests storage/s3.c, s3_xml.c and http.c: against a real S3-compatible
 * server (s3rver, started by tests/storage/s3rver.sh on a free loopback
 * port) for objects, listings over several pages, multipart uploads and
 * ranged downloads, and a killed multipart upload; against a small fake
 * server (libmicrohttpd) for the retry policy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>

#include "storage/storage.h"
#include "tests/storage/helpers.h"
#include "common/err.h"

#define MIB (1024 * 1024)

static char *g_dir;
static int g_port; /* s3rver; 0 when it cannot run here */

static const char *tp(struct buf *b, const char *rel)
{
	buf_reset(b);
	(void)buf_addf(b, "%s/%s", g_dir, rel);
	return b->data;
}

static struct stor *open_s3(int port, const char *key, int parallel)
{
	struct stor_config cfg;
	struct stor *s = NULL;
	struct buf url = BUF_INIT, err = BUF_INIT;

	stor_config_init(&cfg);
	(void)buf_addf(&url, "http://127.0.0.1:%d", port);
	stor_config_set(&cfg.s3_endpoint, url.data);
	stor_config_set(&cfg.access_key, key);
	stor_config_set(&cfg.secret_key, "S3RVER");
	/* Small parts so that a few MiB exercise multipart. */
	cfg.multipart_threshold = 5 * MIB;
	cfg.part_size = 5 * MIB;
	cfg.parallel = parallel;
	cfg.retry_base_ms = 1;
	assert_int_equal(stor_open(&cfg, &s, &err), 0);
	stor_config_release(&cfg);
	buf_release(&url);
	buf_release(&err);
	return s;
}

static int group_setup(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	g_dir = th_mkdtemp("test_s3");
	g_port = th_s3rver_start(tp(&b, "s3rver"), "bkt");
	buf_release(&b);
	return 0;
}

static int group_teardown(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	if (g_port)
		th_s3rver_stop(tp(&b, "s3rver"));
	th_rm_rf(g_dir);
	free(g_dir);
	buf_release(&b);
	return 0;
}

#define NEED_S3RVER()                                                    \
	do {                                                             \
		if (!g_port) {                                           \
			print_message("s3rver cannot run here (node or " \
				      "npm missing)\n");                 \
			skip();                                          \
		}                                                        \
	} while (0)

static void test_object(void **state)
{
	const char *uri = "s3://bkt/dir/a b+c~(1)/\xc3\xa9t\xc3\xa9.bin";
	struct stor *s;
	struct stor_object info;
	struct buf a = BUF_INIT, err = BUF_INIT;

	(void)state;
	NEED_S3RVER();
	s = open_s3(g_port, "S3RVER", 4);
	th_write_file(tp(&a, "small.bin"), 100000, 5);
	assert_int_equal(stor_put(s, a.data, uri, &info, &err), 0);
	/* A single-part ETag is the MD5 we computed. */
	assert_string_equal(info.etag, info.md5);
	assert_int_equal(strlen(info.sha256), 64);
	stor_object_release(&info);
	assert_int_equal(stor_stat(s, uri, &info, &err), 0);
	assert_int_equal(info.size, 100000);
	assert_true(info.mtime_ms > 0);
	stor_object_release(&info);
	assert_int_equal(stor_get(s, uri, tp(&a, "got.bin"), &info, &err), 0);
	assert_true(th_check_file(a.data, 100000, 5));
	assert_string_equal(info.md5, info.etag);
	stor_object_release(&info);
	assert_int_equal(stor_delete(s, uri, &err), 0);
	assert_int_equal(stor_stat(s, uri, &info, &err), ERR_NOTFOUND);
	assert_int_equal(stor_get(s, uri, a.data, NULL, &err), ERR_NOTFOUND);
	assert_int_equal(stor_delete(s, uri, &err), 0);
	buf_reset(&err);
	/* An empty object. */
	th_write_text(tp(&a, "empty"), "");
	assert_int_equal(stor_put(s, a.data, "s3://bkt/empty", NULL, &err), 0);
	assert_int_equal(stor_get(s, "s3://bkt/empty", tp(&a, "empty.got"),
				  NULL, &err),
			 0);
	assert_true(th_check_file(a.data, 0, 0));
	stor_close(s);
	buf_release(&a);
	buf_release(&err);
}

static void test_denied(void **state)
{
	struct stor *s;
	struct stor_list l = STOR_LIST_INIT;
	struct buf err = BUF_INIT;

	(void)state;
	NEED_S3RVER();
	s = open_s3(g_port, "NOT-A-KEY", 1);
	assert_int_equal(stor_list(s, "s3://bkt/", &l, &err), ERR_AUTH);
	print_message("# %s\n", err.data);
	assert_non_null(strstr(err.data, "InvalidAccessKeyId"));
	stor_list_release(&l);
	stor_close(s);
	buf_release(&err);
}

static void test_list_pages(void **state)
{
	struct stor *s;
	struct stor_list l = STOR_LIST_INIT;
	struct stor_sync_stats st;
	struct buf a = BUF_INIT, err = BUF_INIT;
	int i;

	(void)state;
	NEED_S3RVER();
	s = open_s3(g_port, "S3RVER", 4);
	mkdir(tp(&a, "many"), 0755);
	for (i = 0; i < 1234; i++) {
		buf_reset(&a);
		(void)buf_addf(&a, "%s/many/k%05d", g_dir, i);
		th_write_text(a.data, "v");
	}
	i = stor_put_dir(s, tp(&a, "many"), "s3://bkt/pages/", 0, &st, &err);
	if (i)
		print_message("# %s\n", err.data);
	assert_int_equal(i, 0);
	assert_int_equal(st.files, 1234);
	/* s3rver answers 1000 keys a page: two pages, one continuation. */
	i = stor_list(s, "s3://bkt/pages", &l, &err);
	if (i)
		print_message("# %s\n", err.data);
	assert_int_equal(i, 0);
	assert_int_equal(l.n, 1234);
	assert_string_equal(l.v[0].key, "pages/k00000");
	assert_string_equal(l.v[1233].key, "pages/k01233");
	assert_int_equal(l.v[5].size, 1);
	stor_list_release(&l);
	assert_int_equal(stor_get_prefix(s, "s3://bkt/pages/",
					 tp(&a, "many_back"), &st, &err),
			 0);
	assert_int_equal(st.files, 1234);
	assert_true(th_exists(tp(&a, "many_back/k01233")));
	stor_close(s);
	buf_release(&a);
	buf_release(&err);
}

static void test_multipart(void **state)
{
	const uint64_t size = 23ull * MIB + 5;
	struct stor *s, *s1;
	struct stor_object info;
	struct buf a = BUF_INIT, err = BUF_INIT;

	(void)state;
	NEED_S3RVER();
	s = open_s3(g_port, "S3RVER", 3);
	th_write_file(tp(&a, "big.bin"), size, 11);
	assert_int_equal(
		stor_put(s, a.data, "s3://bkt/big/model.bin", &info, &err), 0);
	/*
	 * S3 answers "<md5 of the part MD5s>-<parts>"; s3rver the MD5 of the
	 * whole object. Either way it is not the MD5 of the first part.
	 */
	print_message("# multipart ETag %s\n", info.etag);
	assert_true(strlen(info.etag) >= 32);
	stor_object_release(&info);
	assert_int_equal(stor_stat(s, "s3://bkt/big/model.bin", &info, &err),
			 0);
	assert_int_equal(info.size, (int64_t)size);
	stor_object_release(&info);
	/* Ranged download, 3 at a time. */
	assert_int_equal(stor_get(s, "s3://bkt/big/model.bin",
				  tp(&a, "big.ranged"), NULL, &err),
			 0);
	assert_true(th_check_file(a.data, size, 11));
	/* One stream. */
	s1 = open_s3(g_port, "S3RVER", 1);
	assert_int_equal(stor_get(s1, "s3://bkt/big/model.bin",
				  tp(&a, "big.single"), NULL, &err),
			 0);
	assert_true(th_check_file(a.data, size, 11));
	/* Streamed (Pipe mode): one GET, the bytes in order. */
	{
		struct th_stream t = { 11, 0, 0, 0, 0 };
		int64_t got = 0;

		assert_int_equal(stor_get_stream(s1, "s3://bkt/big/model.bin",
						 th_stream_check, &t, &got,
						 &err),
				 0);
		assert_int_equal(got, (int64_t)size);
		assert_int_equal(t.off, size);
		assert_false(t.bad);
		memset(&t, 0, sizeof(t));
		t.seed = 11;
		t.stop_at = 1;
		assert_int_equal(stor_get_stream(s1, "s3://bkt/big/model.bin",
						 th_stream_check, &t, NULL,
						 &err),
				 42);
		assert_int_equal(t.calls, 1);
		assert_int_equal(stor_get_stream(s1, "s3://bkt/big/none",
						 th_stream_check, &t, NULL,
						 &err),
				 ERR_NOTFOUND);
	}
	stor_close(s1);
	stor_close(s);
	buf_release(&a);
	buf_release(&err);
}

static void test_killed_multipart(void **state)
{
	struct stor *s;
	struct stor_object info;
	struct stor_list l = STOR_LIST_INIT;
	struct buf a = BUF_INIT, u = BUF_INIT, err = BUF_INIT;
	const char *uploads;
	int status, parts, i;
	pid_t pid;

	(void)state;
	NEED_S3RVER();
	s = open_s3(g_port, "S3RVER", 1);
	th_write_file(tp(&a, "huge.bin"), 300ull * MIB, 12);
	/* s3rver keeps the parts of an open upload as <id>/<n> and
	 * <id>/<n>.md5 under this folder until the upload completes. */
	uploads = tp(&u, "s3rver/data/bkt/._S3rver_uploads");
	parts = th_count_names(uploads, ".md5");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct stor *cs = open_s3(g_port, "S3RVER", 1);

		_exit(stor_put(cs, a.data, "s3://bkt/killed/obj", NULL, &err) ?
			      1 :
			      0);
	}
	/* The kill lands once a part is stored: mid-upload. */
	for (i = 0; i < 1200 && th_count_names(uploads, ".md5") <= parts; i++)
		usleep(25000);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_true(th_count_names(uploads, ".md5") > parts);
	print_message("# killed %d ms into the upload, %d part(s) stored\n",
		      i * 25, th_count_names(uploads, ".md5") - parts);
	assert_int_equal(stor_stat(s, "s3://bkt/killed/obj", &info, &err),
			 ERR_NOTFOUND);
	assert_int_equal(stor_list(s, "s3://bkt/killed", &l, &err), 0);
	assert_int_equal(l.n, 0);
	stor_list_release(&l);
	unlink(a.data);
	stor_close(s);
	buf_release(&a);
	buf_release(&u);
	buf_release(&err);
}

/* --- retries, against a fake server ------------------------------------ */

struct fake {
	pthread_mutex_t lock;
	int requests;
	int fail_left; /* answer fail_status this many more times */
	int fail_status;
	const char *fail_body;
};

static struct fake g_fake = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, NULL };

static enum MHD_Result fake_handler(void *cls, struct MHD_Connection *c,
				    const char *url, const char *method,
				    const char *version, const char *up,
				    size_t *up_size, void **con_cls)
{
	static const char ok_body[] =
		"<ListBucketResult><IsTruncated>false</IsTruncated>"
		"</ListBucketResult>";
	struct MHD_Response *r;
	enum MHD_Result ret;
	const char *body = ok_body;
	int status = 200;

	(void)cls;
	(void)url;
	(void)version;
	(void)up;
	if (!*con_cls) {
		*con_cls = (void *)1;
		return MHD_YES;
	}
	if (*up_size) {
		*up_size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&g_fake.lock);
	g_fake.requests++;
	if (g_fake.fail_left) {
		g_fake.fail_left--;
		status = g_fake.fail_status;
		body = g_fake.fail_body ? g_fake.fail_body : "";
	}
	pthread_mutex_unlock(&g_fake.lock);
	(void)method;
	r = MHD_create_response_from_buffer(strlen(body), (void *)body,
					    MHD_RESPMEM_MUST_COPY);
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static void fake_arm(int n, int status, const char *body)
{
	pthread_mutex_lock(&g_fake.lock);
	g_fake.requests = 0;
	g_fake.fail_left = n;
	g_fake.fail_status = status;
	g_fake.fail_body = body;
	pthread_mutex_unlock(&g_fake.lock);
}

/* --- a stream that breaks, against a fake server ----------------------- */

#define BROKEN_SIZE 300000
#define BROKEN_CUT 70000

struct broken {
	pthread_mutex_t lock;
	int requests;
	int cut;	  /* the next whole answer breaks at BROKEN_CUT */
	int ignore_range; /* answer a Range with the whole object */
	char if_match[64];
	char range[64];
};

static struct broken g_broken = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, "", "" };

struct broken_body {
	int64_t from;
	int64_t cut; /* absolute offset to fail at, or -1 */
};

static ssize_t broken_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct broken_body *b = cls;
	uint64_t off = (uint64_t)b->from + pos;
	size_t i;

	if (b->cut >= 0 && off >= (uint64_t)b->cut)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (b->cut >= 0 && off + max > (uint64_t)b->cut)
		max = (size_t)((uint64_t)b->cut - off);
	if (off + max > BROKEN_SIZE)
		max = BROKEN_SIZE - off;
	for (i = 0; i < max; i++)
		buf[i] = (char)th_byte(off + i, 13);
	return (ssize_t)max;
}

static enum MHD_Result broken_handler(void *cls, struct MHD_Connection *c,
				      const char *url, const char *method,
				      const char *version, const char *up,
				      size_t *up_size, void **con_cls)
{
	const char *range =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range");
	const char *im =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-Match");
	struct broken_body *b = calloc(1, sizeof(*b));
	struct MHD_Response *r;
	enum MHD_Result ret;
	unsigned status = 200;
	char cr[96];

	(void)cls;
	(void)url;
	(void)method;
	(void)version;
	(void)up;
	(void)up_size;
	(void)con_cls;
	pthread_mutex_lock(&g_broken.lock);
	g_broken.requests++;
	(void)snprintf(g_broken.range, sizeof(g_broken.range), "%s",
		       range ? range : "");
	(void)snprintf(g_broken.if_match, sizeof(g_broken.if_match), "%s",
		       im ? im : "");
	b->cut = -1;
	if (range && !g_broken.ignore_range &&
	    sscanf(range, "bytes=%" SCNd64 "-", &b->from) == 1)
		status = 206;
	if (g_broken.cut) {
		g_broken.cut--;
		b->cut = BROKEN_CUT;
	}
	pthread_mutex_unlock(&g_broken.lock);
	r = MHD_create_response_from_callback((uint64_t)(BROKEN_SIZE - b->from),
					      4096, broken_read, b, free);
	(void)MHD_add_response_header(r, "ETag", "\"e-1\"");
	if (status == 206) {
		(void)snprintf(cr, sizeof(cr), "bytes %" PRId64 "-%d/%d",
			       b->from, BROKEN_SIZE - 1, BROKEN_SIZE);
		(void)MHD_add_response_header(r, "Content-Range", cr);
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A stream that breaks goes on from where it broke, with or without a
 * server that honours Range. */
static void test_stream_resume(void **state)
{
	struct MHD_Daemon *d;
	struct stor *s;
	struct buf err = BUF_INIT;
	int pass;

	(void)state;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
			     broken_handler, NULL, MHD_OPTION_END);
	assert_non_null(d);
	s = open_s3(MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port,
		    "AKID", 1);
	for (pass = 0; pass < 2; pass++) {
		struct th_stream t = { 13, 0, 0, 0, 0 };
		int64_t got = 0;
		int ret;

		pthread_mutex_lock(&g_broken.lock);
		g_broken.requests = 0;
		g_broken.cut = 1;
		g_broken.ignore_range = pass;
		pthread_mutex_unlock(&g_broken.lock);
		buf_reset(&err);
		ret = stor_get_stream(s, "s3://bkt/k", th_stream_check, &t,
				      &got, &err);
		if (ret)
			print_message("# %s\n", err.data);
		assert_int_equal(ret, 0);
		assert_int_equal(got, BROKEN_SIZE);
		assert_int_equal(t.off, BROKEN_SIZE);
		assert_false(t.bad);
		assert_int_equal(g_broken.requests, 2);
		assert_string_equal(g_broken.if_match, "\"e-1\"");
		assert_true(!strncmp(g_broken.range, "bytes=", 6));
	}
	stor_close(s);
	MHD_stop_daemon(d);
	buf_release(&err);
}

static void test_retries(void **state)
{
	struct MHD_Daemon *d;
	struct stor *s;
	struct stor_object info;
	struct stor_list l = STOR_LIST_INIT;
	struct buf a = BUF_INIT, err = BUF_INIT;
	int port;

	(void)state;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
			     fake_handler, NULL, MHD_OPTION_END);
	assert_non_null(d);
	port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
	s = open_s3(port, "AKID", 1);

	/* 503 twice, then the answer: three requests, success. */
	fake_arm(2, 503, "<Error><Code>SlowDown</Code></Error>");
	port = stor_get(s, "s3://bkt/k", tp(&a, "r.txt"), NULL, &err);
	if (port)
		print_message("# %s\n", err.data);
	assert_int_equal(port, 0);
	assert_int_equal(g_fake.requests, 2 + 1 + 1); /* + HEAD, GET */
	/*
	 * A 400 whose body says RequestTimeout is retried too (HEAD has no
	 * body, so this needs a request with one: a listing).
	 */
	fake_arm(1, 400, "<Error><Code>RequestTimeout</Code></Error>");
	assert_int_equal(stor_list(s, "s3://bkt/", &l, &err), 0);
	stor_list_release(&l);
	assert_int_equal(g_fake.requests, 2);
	/* Permanent errors are not. */
	fake_arm(1, 403,
		 "<Error><Code>AccessDenied</Code>"
		 "<Message>no</Message></Error>");
	assert_int_equal(stor_stat(s, "s3://bkt/k", &info, &err), ERR_AUTH);
	assert_int_equal(g_fake.requests, 1);
	fake_arm(1, 400, "<Error><Code>InvalidArgument</Code></Error>");
	assert_int_equal(stor_list(s, "s3://bkt/", &l, &err), ERR_IO);
	stor_list_release(&l);
	assert_int_equal(g_fake.requests, 1);
	/* A server that keeps failing: max_attempts (5) requests. */
	fake_arm(100, 500, "<Error><Code>InternalError</Code></Error>");
	buf_reset(&err);
	assert_int_equal(stor_stat(s, "s3://bkt/k", &info, &err), ERR_IO);
	assert_int_equal(g_fake.requests, 5);
	print_message("# %s\n", err.data);
	stor_close(s);
	MHD_stop_daemon(d);
	buf_release(&a);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object),
		cmocka_unit_test(test_denied),
		cmocka_unit_test(test_list_pages),
		cmocka_unit_test(test_multipart),
		cmocka_unit_test(test_killed_multipart),
		cmocka_unit_test(test_stream_resume),
		cmocka_unit_test(test_retries),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests_name("storage_s3", tests, group_setup,
					   group_teardown);
}
