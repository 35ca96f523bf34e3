/*
 * Tests api/hosts_json.c: the drain request body both ways (what the CLI
 * sends and the controller accepts or refuses), and the drained state in
 * GET /v1/hosts and its table, and the images answers list-images and
 * prune-images read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/hosts_json.h"
#include "common/buf.h"
#include "common/err.h"

static void expect_refused(const char *body, const char *mention)
{
	struct buf err = BUF_INIT;
	char *reason = (char *)"untouched";

	assert_int_equal(api_host_drain_parse(body, strlen(body), &reason,
					      &err),
			 ERR_INVALID);
	assert_null(reason);
	if (!strstr(err.data, mention))
		fail_msg("'%s': error '%s' does not name '%s'", body, err.data,
			 mention);
	buf_release(&err);
}

static void test_drain_body(void **state)
{
	struct buf out = BUF_INIT, err = BUF_INIT;
	char *reason = NULL, big[400];

	(void)state;
	assert_int_equal(api_host_drain_build("disk swap \"B\"", &out), 0);
	assert_int_equal(api_host_drain_parse(out.data, out.len, &reason, &err),
			 0);
	assert_string_equal(reason, "disk swap \"B\"");
	free(reason);
	buf_reset(&out);
	assert_int_equal(api_host_drain_build(NULL, &out), 0);
	assert_string_equal(out.data, "{}");
	assert_int_equal(api_host_drain_parse(out.data, out.len, &reason, &err),
			 0);
	assert_null(reason);
	/* No body at all: no reason. */
	assert_int_equal(api_host_drain_parse("", 0, &reason, &err), 0);
	assert_null(reason);
	expect_refused("{\"reason\": 5}", "reason");
	expect_refused("{\"reason\": null}", "reason");
	expect_refused("{\"why\": \"x\"}", "why");
	expect_refused("[\"x\"]", "object");
	expect_refused("{\"reason\": ", "");
	memset(big, 'a', sizeof(big));
	memcpy(big, "{\"reason\":\"", 11);
	memcpy(big + sizeof(big) - 3, "\"}", 3);
	expect_refused(big, "256");
	buf_release(&out);
	buf_release(&err);
}

static void test_drained_listed(void **state)
{
	struct api_host_info h[2];
	struct buf out = BUF_INIT, table = BUF_INIT, err = BUF_INIT;

	(void)state;
	memset(h, 0, sizeof(h));
	h[0].name = "node1";
	h[0].state = "draining";
	h[0].heartbeat_age_ms = 12;
	h[0].job = "mnist-1";
	h[0].algo = "algo-2";
	h[0].drained = 1;
	h[0].drain_reason = "disk swap";
	h[1].name = "node2";
	h[1].state = "ready";
	h[1].heartbeat_age_ms = -1;
	assert_int_equal(api_hosts_build(h, 2, &out), 0);
	assert_non_null(strstr(out.data, "\"drained\":true"));
	assert_non_null(strstr(out.data, "\"drain_reason\":\"disk swap\""));
	assert_non_null(strstr(out.data, "\"drained\":false"));
	assert_non_null(strstr(out.data, "\"drain_reason\":null"));
	assert_int_equal(api_hosts_table(out.data, out.len, &table, &err), 0);
	assert_non_null(strstr(table.data, "draining"));
	assert_non_null(strstr(table.data, "  drained: disk swap\n"));
	buf_release(&out);
	buf_release(&table);
	buf_release(&err);
}

static void test_images(void **state)
{
	static const char list[] =
		"{\"images\":[{\"names\":[\"r/a:1\"],\"digest\":\"sha256:1\","
		"\"id\":\"abc\",\"size\":1500,\"created\":\"2024\"},"
		"{\"digest\":\"sha256:2\",\"size\":\"big\"},{\"names\":[3]},7],"
		"\"prune\":{\"done\":2}}";
	struct api_host_images im;

	(void)state;
	assert_int_equal(api_host_images_parse(list, sizeof(list) - 1, &im), 0);
	assert_true(im.reported);
	assert_int_equal(im.n, 4);
	assert_string_equal(im.images[0].name, "r/a:1");
	assert_string_equal(im.images[0].id, "abc");
	assert_string_equal(im.images[0].created, "2024");
	assert_int_equal(im.images[0].size, 1500);
	assert_string_equal(im.images[1].name, "sha256:2");
	assert_null(im.images[1].id);
	assert_int_equal(im.images[1].size, 0);
	assert_null(im.images[2].name);
	assert_null(im.images[3].name);
	assert_int_equal(im.prune, 0);
	assert_int_equal(im.prune_done, 2);
	api_host_images_release(&im);

	assert_int_equal(api_host_images_parse("{\"images\":null,\"prune\":3}",
					       25, &im),
			 0);
	assert_false(im.reported);
	assert_int_equal(im.n, 0);
	assert_int_equal(im.prune, 3);
	assert_int_equal(im.prune_done, -1);
	api_host_images_release(&im);

	assert_int_equal(api_host_images_parse("[1]", 3, &im), ERR_INVALID);
	assert_int_equal(api_host_images_parse("nope", 4, &im), ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drain_body),
		cmocka_unit_test(test_drained_listed),
		cmocka_unit_test(test_images),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
