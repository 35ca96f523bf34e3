/*
 * Tests our S3 request signing (libcurl's CURLOPT_AWS_SIGV4 plus the
 * headers and canonical queries storage/s3.c adds). s3rver does not check
 * signatures, so a capture server (sigv4_capture.py) records the raw
 * requests and botocore, the aws CLI's own signer, checks them:
 *
 * 1. The aws CLI (/usr/bin/aws s3api put-object) and we upload the same
 *    bytes to the same key with the same keys, and we reuse the CLI's
 *    X-Amz-Date. The two requests must have the same method, canonical
 *    URI and query, signed header names and values (content-md5, host,
 *    x-amz-content-sha256, x-amz-date), payload hash, canonical request
 *    and therefore the same Authorization header, byte for byte.
 * 2. Every other kind of request we send (HEAD, ranged and plain GET,
 *    ListObjectsV2 with prefix and continuation token, the multipart
 *    calls with UNSIGNED-PAYLOAD, DELETE, with a session token) carries
 *    the signature botocore computes for exactly that request.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <curl/curl.h>

#include "storage/storage.h"
#include "tests/storage/helpers.h"
#include "common/err.h"

#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define REGION "us-east-1"
#define KEY "dir/a b+c~(1)/model.bin"

static char *g_dir;
static pid_t g_pid;
static int g_port;

static const char *tp(struct buf *b, const char *rel)
{
	buf_reset(b);
	(void)buf_addf(b, "%s/%s", g_dir, rel);
	return b->data;
}

static int group_setup(void **state)
{
	struct buf b = BUF_INIT, t = BUF_INIT;
	int i;

	(void)state;
	g_dir = th_mkdtemp("test_sigv4");
	if (access("/usr/bin/python3", X_OK) || access("/usr/bin/aws", X_OK) ||
	    system("/usr/bin/python3 -c 'import botocore' 2>/dev/null"))
		return 0;
	g_pid = fork();
	if (g_pid == 0) {
		execl("/usr/bin/python3", "python3",
		      "tests/storage/sigv4_capture.py", "serve", tp(&b, "port"),
		      tp(&t, "log"), (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 200 && !g_port; i++)
		if (!th_read_text(tp(&b, "port"), &t))
			g_port = atoi(t.data);
		else
			usleep(20000);
	buf_release(&b);
	buf_release(&t);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (g_pid > 0) {
		kill(g_pid, SIGTERM);
		waitpid(g_pid, NULL, 0);
	}
	th_rm_rf(g_dir);
	free(g_dir);
	return 0;
}

#define NEED_CAPTURE()                                                \
	do {                                                          \
		if (!g_port) {                                        \
			print_message("needs /usr/bin/python3 with "  \
				      "botocore and /usr/bin/aws\n"); \
			skip();                                       \
		}                                                     \
	} while (0)

static struct stor *open_capture(const char *date, const char *token)
{
	struct stor_config cfg;
	struct stor *s = NULL;
	struct buf url = BUF_INIT, err = BUF_INIT;

	stor_config_init(&cfg);
	(void)buf_addf(&url, "http://127.0.0.1:%d", g_port);
	stor_config_set(&cfg.s3_endpoint, url.data);
	stor_config_set(&cfg.access_key, AKID);
	stor_config_set(&cfg.secret_key, SECRET);
	stor_config_set(&cfg.session_token, token);
	stor_config_set(&cfg.s3_region, REGION);
	stor_config_set(&cfg.amz_date, date);
	cfg.multipart_threshold = 1 << 20;
	cfg.part_size = 1 << 20;
	cfg.parallel = 1;
	assert_int_equal(stor_open(&cfg, &s, &err), 0);
	stor_config_release(&cfg);
	buf_release(&url);
	buf_release(&err);
	return s;
}

/* Runs sigv4_capture.py MODE on the log; prints its report. */
static int check(const char *mode, struct buf *out)
{
	struct buf cmd = BUF_INIT, b = BUF_INIT;
	const char *line, *end;
	int rc;

	(void)buf_addf(&cmd,
		       "/usr/bin/python3 tests/storage/sigv4_capture.py %s "
		       "'%s/log' '" SECRET "' " REGION " > '%s/check.out' 2>&1",
		       mode, g_dir, g_dir);
	rc = system(cmd.data);
	th_read_text(tp(&b, "check.out"), out);
	/* Line by line, as TAP comments (cmocka cuts long messages). */
	for (line = out->data; *line; line = end + (*end == '\n')) {
		end = line + strcspn(line, "\n");
		print_message("# %.*s\n", (int)(end - line), line);
	}
	buf_release(&cmd);
	buf_release(&b);
	return rc;
}

static void test_put_same_as_awscli(void **state)
{
	struct buf cmd = BUF_INIT, a = BUF_INIT, date = BUF_INIT;
	struct buf err = BUF_INIT;
	struct stor *s;
	int rc;

	(void)state;
	NEED_CAPTURE();
	unlink(tp(&a, "log"));
	th_write_file(tp(&a, "body.bin"), 4096, 21);
	(void)buf_addf(&cmd,
		       "env -i PATH=/usr/bin:/bin HOME=%s "
		       "AWS_ACCESS_KEY_ID=" AKID
		       " AWS_SECRET_ACCESS_KEY=" SECRET
		       " AWS_EC2_METADATA_DISABLED=true "
		       "AWS_CONFIG_FILE=/dev/null "
		       "AWS_SHARED_CREDENTIALS_FILE=/dev/null "
		       "/usr/bin/aws --endpoint-url http://127.0.0.1:%d "
		       "--region " REGION " s3api put-object --bucket bkt "
		       "--key '" KEY "' --body '%s' >/dev/null",
		       g_dir, g_port, a.data);
	assert_int_equal(system(cmd.data), 0);
	buf_reset(&cmd);
	(void)buf_addf(&cmd,
		       "/usr/bin/python3 tests/storage/sigv4_capture.py date "
		       "'%s/log' > '%s/date'",
		       g_dir, g_dir);
	assert_int_equal(system(cmd.data), 0);
	assert_int_equal(th_read_text(tp(&a, "date"), &date), 0);
	date.data[strcspn(date.data, "\n")] = '\0';
	s = open_capture(date.data, NULL);
	rc = stor_put(s, tp(&a, "body.bin"), "s3://bkt/" KEY, NULL, &err);
	if (rc)
		print_message("# %s\n", err.data);
	assert_int_equal(rc, 0);
	stor_close(s);
	assert_int_equal(check("compare", &cmd), 0);
	assert_non_null(strstr(cmd.data, "2 requests"));
	buf_release(&cmd);
	buf_release(&a);
	buf_release(&date);
	buf_release(&err);
}

static void test_every_request_signed(void **state)
{
	struct buf a = BUF_INIT, err = BUF_INIT, out = BUF_INIT;
	struct stor_list l = STOR_LIST_INIT;
	struct stor_object info;
	struct stor *s;

	(void)state;
	NEED_CAPTURE();
	unlink(tp(&a, "log"));
	s = open_capture(NULL, "session/token+=");
	th_write_file(tp(&a, "parts.bin"), (2 << 20) + 100, 22);
	/* CreateMultipartUpload, 3 x UploadPart, CompleteMultipartUpload */
	assert_int_equal(stor_put(s, a.data, "s3://bkt/" KEY, NULL, &err), 0);
	/* ListObjectsV2 twice (a continuation token with '+', '/', '=') */
	assert_int_equal(stor_list(s, "s3://bkt/dir/a b", &l, &err), 0);
	assert_int_equal(l.n, 2);
	stor_list_release(&l);
	assert_int_equal(stor_stat(s, "s3://bkt/" KEY, &info, &err), 0);
	stor_object_release(&info);
	assert_int_equal(stor_delete(s, "s3://bkt/" KEY, &err), 0);
	stor_close(s);
	assert_int_equal(check("signed", &out), 0);
	/* 1 + 3 + 1 multipart, 2 listings, HEAD, DELETE */
	assert_non_null(strstr(out.data, "9 requests"));
	assert_non_null(strstr(out.data, "x-amz-security-token"));
	assert_non_null(strstr(out.data, "UNSIGNED-PAYLOAD"));
	buf_release(&out);
	buf_release(&a);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_same_as_awscli),
		cmocka_unit_test(test_every_request_signed),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests_name("storage_sigv4", tests, group_setup,
					   group_teardown);
}
