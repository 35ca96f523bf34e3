/*
 * Tests api/ha_members.c: POST /v1/members's body checked member by
 * member, GET /v1/members's answer and the table trainctl prints of it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/ha_members.h"
#include "common/buf.h"
#include "common/err.h"

static void parse_fails(const char *json, const char *want)
{
	struct buf err = BUF_INIT;
	unsigned long id = 0;
	char *raft = NULL, *api = NULL;

	assert_int_equal(api_member_add_parse(json, strlen(json), &id, &raft,
					      &api, &err),
			 ERR_INVALID);
	if (!strstr(err.data, want))
		fail_msg("%s: '%s' lacks '%s'", json, err.data, want);
	assert_null(raft);
	assert_null(api);
	buf_release(&err);
}

static void test_add_parse(void **state)
{
	struct buf err = BUF_INIT, body = BUF_INIT;
	unsigned long id = 0;
	char *raft = NULL, *api = NULL;

	(void)state;
	assert_int_equal(api_member_add_build(4, "10.0.0.4:7100",
					      "http://10.0.0.4:8080", &body),
			 0);
	assert_int_equal(api_member_add_parse(body.data, body.len, &id, &raft,
					      &api, &err),
			 0);
	assert_int_equal(id, 4);
	assert_string_equal(raft, "10.0.0.4:7100");
	assert_string_equal(api, "http://10.0.0.4:8080");
	free(raft);
	free(api);
	parse_fails("{\"RaftAddress\":\"h:1\",\"ApiUrl\":\"http://h:2\"}",
		    "'Id' is missing");
	parse_fails("{\"Id\":\"4\",\"RaftAddress\":\"h:1\",\"ApiUrl\":\"x\"}",
		    "'Id' must be a positive integer");
	parse_fails("{\"Id\":0,\"RaftAddress\":\"h:1\",\"ApiUrl\":\"x\"}",
		    "'Id' must be a positive integer");
	parse_fails("{\"Id\":4,\"ApiUrl\":\"http://h:2\"}",
		    "'RaftAddress' is missing");
	parse_fails("{\"Id\":4,\"RaftAddress\":7,\"ApiUrl\":\"x\"}",
		    "'RaftAddress' must be a string");
	parse_fails("{\"Id\":4,\"RaftAddress\":\"h:1\",\"ApiUrl\":\"\"}",
		    "'ApiUrl' must be a string of 1 to 256 bytes");
	parse_fails("{\"Id\":4,\"RaftAddress\":\"h:1\",\"ApiUrl\":\"x\","
		    "\"Role\":\"voter\"}",
		    "unknown member 'Role'");
	parse_fails("[1]", "");
	parse_fails("{", "");
	buf_release(&err);
	buf_release(&body);
}

static void test_build_and_table(void **state)
{
	struct api_member m[] = {
		{ 1, "h1:1", "http://h1:2", "leader", 1, 0 },
		{ 4, "h4:1", NULL, "spare", 0, 1234 },
	};
	struct api_members v = { 7, 1, 99, m, 2 };
	struct buf out = BUF_INIT, table = BUF_INIT, err = BUF_INIT;

	(void)state;
	assert_int_equal(api_members_build(&v, &out), 0);
	assert_non_null(strstr(out.data, "\"Term\":7"));
	assert_non_null(strstr(out.data, "\"LeaderId\":1"));
	assert_non_null(strstr(out.data, "\"ApiUrl\":null"));
	assert_non_null(strstr(out.data, "\"Lag\":1234"));
	assert_non_null(strstr(out.data, "\"Reachable\":false"));
	assert_int_equal(api_members_table(out.data, out.len, &table, &err), 0);
	assert_non_null(strstr(table.data, "term 7, leader 1, last entry 99"));
	assert_non_null(strstr(table.data, "leader"));
	assert_non_null(strstr(table.data, "spare    no          1234"));
	assert_int_equal(api_members_table("{}", 2, &table, &err), ERR_INVALID);
	buf_release(&out);
	buf_release(&table);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_parse),
		cmocka_unit_test(test_build_and_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
