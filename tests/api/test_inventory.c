/*
 * Tests api/inventory.c: hosts provisioned over SSH and hosts whose agent is
 * started externally, and the errors that name the host and member.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/inventory.h"
#include "common/buf.h"
#include "common/err.h"

static void expect_refused(const char *json, const char *mention)
{
	struct api_inventory inv;
	struct buf err = BUF_INIT;

	assert_int_equal(api_inventory_parse(json, strlen(json), &inv, &err),
			 ERR_INVALID);
	if (!strstr(err.data, mention))
		fail_msg("'%s': error '%s' does not name '%s'", json, err.data,
			 mention);
	buf_release(&err);
}

static void test_ssh_and_external(void **state)
{
	const char *json =
		"{\"hosts\": [{\"name\": \"n1\", \"address\": \"10.0.0.1\", "
		"\"identity_file\": \"/k\", \"known_hosts\": \"/kh\"}, "
		"{\"name\": \"n2\", \"agent\": \"external\", "
		"\"instance_type\": \"ml.c5.xlarge\", \"cpus\": 4, "
		"\"rack\": \"rack-b.2\"}, "
		"{\"name\": \"n3\", \"agent\": \"ssh\", \"address\": \"h3\", "
		"\"identity_file\": \"/k\", \"known_hosts\": \"/kh\"}]}";
	struct api_inventory inv;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(api_inventory_parse(json, strlen(json), &inv, &err),
			 0);
	assert_int_equal(inv.n, 3);
	assert_false(inv.hosts[0].external);
	assert_string_equal(inv.hosts[0].address, "10.0.0.1");
	assert_int_equal(inv.hosts[0].port, 22);
	assert_true(inv.hosts[1].external);
	assert_null(inv.hosts[1].address);
	assert_null(inv.hosts[1].identity_file);
	assert_string_equal(inv.hosts[1].instance_type, "ml.c5.xlarge");
	assert_int_equal(inv.hosts[1].cpus, 4);
	assert_string_equal(inv.hosts[1].rack, "rack-b.2");
	assert_null(inv.hosts[0].rack);
	assert_false(inv.hosts[2].external);
	api_inventory_release(&inv);
	buf_release(&err);
}

static void test_refused(void **state)
{
	(void)state;
	/* An SSH host needs its address and keys. */
	expect_refused("{\"hosts\": [{\"name\": \"n1\", "
		       "\"identity_file\": \"/k\", \"known_hosts\": \"/kh\"}]}",
		       "'address' is required");
	expect_refused("{\"hosts\": [{\"name\": \"n1\", \"address\": \"a\", "
		       "\"known_hosts\": \"/kh\"}]}",
		       "identity_file");
	expect_refused("{\"hosts\": [{\"name\": \"n1\", \"agent\": \"external\", "
		       "\"rack\": \"a/b\"}]}",
		       "rack 'a/b'");
	expect_refused("{\"hosts\": [{\"name\": \"n1\", \"agent\": \"pxe\"}]}",
		       "inventory host 1: 'agent' must be");
	expect_refused("{\"hosts\": [{\"name\": \"n1\", \"agent\": 1}]}",
		       "'agent'");
	expect_refused("{\"hosts\": [{\"name\": \"n1\", \"agent\": "
		       "\"external\"}, {\"name\": \"n1\", \"agent\": "
		       "\"external\"}]}",
		       "n1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ssh_and_external),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
