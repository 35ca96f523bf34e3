/*
 * Tests the pure parts of membership (ha/members.c, ha/config.c): a
 * member as an operator names one, role names, and what the members'
 * table needs to name raft's configuration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ha/ha.h"
#include "common/buf.h"
#include "common/err.h"

static void check_fails(unsigned long id, const char *raft, const char *api,
			const char *want)
{
	struct buf err = BUF_INIT;

	assert_int_equal(ha_member_check(id, raft, api, &err), ERR_INVALID);
	if (!strstr(err.data, want))
		fail_msg("%lu %s %s: '%s' lacks '%s'", id, raft, api, err.data,
			 want);
	buf_release(&err);
}

static void test_member_check(void **state)
{
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(ha_member_check(4, "10.0.0.4:7100",
					 "http://10.0.0.4:8080", &err),
			 0);
	assert_int_equal(
		ha_member_check(1000000, "h:1", "http://h:65535", &err), 0);
	check_fails(0, "h:1", "http://h:2", "member id 0 must be 1..1000000");
	check_fails(1000001, "h:1", "http://h:2", "must be 1..1000000");
	check_fails(4, "h", "http://h:2", "raft address 'h' is not HOST:PORT");
	check_fails(4, ":7", "http://h:2", "raft address");
	check_fails(4, "h:0", "http://h:2", "raft address");
	check_fails(4, "h:65536", "http://h:2", "raft address");
	check_fails(4, "h:1x", "http://h:2", "raft address");
	check_fails(4, "h:1", "https://h:2", "API URL 'https://h:2'");
	check_fails(4, "h:1", "http://h", "API URL");
	buf_release(&err);
}

/* --peers' errors name the option and the member. */
static void test_peers_errors(void **state)
{
	struct ha_config cfg;
	struct buf err = BUF_INIT;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(ha_config_parse_peers(&cfg,
					       "1=h:1=http://h:2,2=h:3=ftp://"
					       "h:4,3=h:5=http://h:6",
					       1, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "--peers: member 2's API URL"));
	assert_null(cfg.members);
	buf_release(&err);
}

static void test_role_names(void **state)
{
	(void)state;
	assert_string_equal(ha_role_name(HA_ROLE_LEADER), "leader");
	assert_string_equal(ha_role_name(HA_ROLE_VOTER), "voter");
	assert_string_equal(ha_role_name(HA_ROLE_STANDBY), "standby");
	assert_string_equal(ha_role_name(HA_ROLE_SPARE), "spare");
}

static void peers3(struct ha_config *cfg)
{
	struct buf err = BUF_INIT;

	memset(cfg, 0, sizeof(*cfg));
	if (ha_config_parse_peers(cfg,
				  "1=h1:1=http://h1:2,2=h2:1=http://h2:2,"
				  "3=h3:1=http://h3:2",
				  1, &err))
		fail_msg("%s", err.data);
	buf_release(&err);
}

static void status_of(struct ha_status *st, const unsigned *ids, size_t n)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < n; i++)
		st->members[i].id = ids[i];
	st->n = n;
}

/* The first leadership: an empty table is filled from --peers. */
static void test_plan_first(void **state)
{
	static const unsigned ids[] = { 1, 2, 3 };
	struct ha_config cfg;
	struct ha_status st;
	const struct ha_member **put;
	unsigned *del;
	size_t n_put, n_del;

	(void)state;
	peers3(&cfg);
	status_of(&st, ids, 3);
	ha_members_plan(&st, NULL, 0, &cfg, &put, &n_put, &del, &n_del);
	assert_int_equal(n_put, 3);
	assert_int_equal(n_del, 0);
	assert_null(del);
	assert_string_equal(put[0]->api_url, "http://h1:2");
	assert_string_equal(put[2]->raft_addr, "h3:1");
	free(put);
	ha_config_release(&cfg);
}

/*
 * After changes: rows of members raft no longer has go (member 3
 * removed, or every other member after --ha-recover); a member --peers
 * does not name is not invented; rows there are kept.
 */
static void test_plan_changed(void **state)
{
	static const unsigned ids[] = { 1, 2, 4 };
	struct ha_member rows[] = {
		{ 1, NULL, NULL },
		{ 3, NULL, NULL },
		{ 4, NULL, NULL },
	};
	struct ha_config cfg;
	struct ha_status st;
	const struct ha_member **put;
	unsigned *del;
	size_t n_put, n_del;

	(void)state;
	peers3(&cfg);
	status_of(&st, ids, 3);
	ha_members_plan(&st, rows, 3, &cfg, &put, &n_put, &del, &n_del);
	assert_int_equal(n_put, 1);
	assert_int_equal(put[0]->id, 2);
	assert_int_equal(n_del, 1);
	assert_int_equal(del[0], 3);
	free(put);
	free(del);
	/* Nothing to do when the table names the configuration. */
	status_of(&st, ids, 1);
	ha_members_plan(&st, rows, 1, &cfg, &put, &n_put, &del, &n_del);
	assert_int_equal(n_put + n_del, 0);
	assert_null(put);
	ha_config_release(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_member_check),
		cmocka_unit_test(test_peers_errors),
		cmocka_unit_test(test_role_names),
		cmocka_unit_test(test_plan_first),
		cmocka_unit_test(test_plan_changed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
