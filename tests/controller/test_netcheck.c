/*
 * Tests controller/netcheck.c: the verdict on an attempt's hosts' network
 * figures. Healthy hosts pass; a host whose round trip is far above the
 * median (by the factor and the floor both) or whose bandwidth is far
 * below it fails, the worst named with how far; small differences and
 * two hosts (one link, both ends alike) pass; a host that reached none
 * of its peers fails; hosts that ran no network check are left out; the
 * verdict over assignments reads the agents' reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "controller/netcheck.h"
#include "db/run.h"

static const struct ctrl_net_limits lim = { 5, 5000, 4 };

static struct api_net_figures fig(int64_t rtt, int64_t mbps)
{
	struct api_net_figures f = { 2, 2, rtt, mbps };

	return f;
}

static size_t judge(const struct api_net_figures *f, size_t n, char *why,
		    size_t cap)
{
	struct ctrl_net_median med;
	struct buf b = BUF_INIT;
	size_t k = ctrl_netcheck_judge(f, n, &lim, &med, &b);

	(void)snprintf(why, cap, "%s", b.data ? b.data : "");
	buf_release(&b);
	return k;
}

static void test_healthy(void **state)
{
	struct api_net_figures f[3] = { fig(60, 9000), fig(80, 7000),
					fig(150, 5000) };
	struct ctrl_net_median med;
	struct buf b = BUF_INIT;

	(void)state;
	assert_int_equal(ctrl_netcheck_judge(f, 3, &lim, &med, &b), 0);
	assert_int_equal(med.hosts, 3);
	assert_int_equal(med.rtt_us, 80);
	assert_int_equal(med.mbps, 7000);
	buf_release(&b);
}

static void test_slow_round_trip(void **state)
{
	struct api_net_figures f[4] = { fig(60, 9000), fig(80, 8000),
					fig(40000, 8000), fig(70, 8500) };
	char why[256];

	(void)state;
	assert_int_equal(judge(f, 4, why, sizeof(why)), 3);
	assert_string_equal(why, "its best round trip to its peers is 40.00 "
				 "ms, 571x the job's median of 0.07 ms");
	/* 5x the median but under the floor: jitter of a loaded host. */
	f[2].rtt_us = 3000;
	assert_int_equal(judge(f, 4, why, sizeof(why)), 0);
}

static void test_low_bandwidth(void **state)
{
	struct api_net_figures f[3] = { fig(60, 9000), fig(90, 15),
					fig(70, 8000) };
	char why[256];

	(void)state;
	assert_int_equal(judge(f, 3, why, sizeof(why)), 2);
	assert_string_equal(why, "its best bandwidth to its peers is 15 "
				 "Mbit/s, 1/533 of the job's median of 8000 "
				 "Mbit/s");
	/* A third of the median is within a factor of 4. */
	f[1].mbps = 2700;
	assert_int_equal(judge(f, 3, why, sizeof(why)), 0);
}

/* The worst of two failing hosts is named. */
static void test_worst(void **state)
{
	struct api_net_figures f[5] = { fig(60, 9000), fig(90, 100),
					fig(70, 8000), fig(80, 10),
					fig(65, 7000) };
	char why[256];

	(void)state;
	assert_int_equal(judge(f, 5, why, sizeof(why)), 4);
}

static void test_two_hosts(void **state)
{
	struct api_net_figures f[2] = { fig(40000, 10), fig(40000, 10) };
	char why[256];

	(void)state;
	assert_int_equal(judge(f, 2, why, sizeof(why)), 0);
	f[1].reached = 0;
	f[1].rtt_us = f[1].mbps = -1;
	f[1].peers = 1;
	assert_int_equal(judge(f, 2, why, sizeof(why)), 2);
	assert_string_equal(why, "none of its 1 peer answered");
	f[0].reached = 0;
	assert_int_equal(judge(f, 2, why, sizeof(why)), 1);
	assert_string_equal(why, "none of its 2 peers answered, and no host "
				 "reached another");
}

static void test_not_measured(void **state)
{
	struct api_net_figures f[3] = { fig(60, 9000), fig(60, 9000),
					fig(40000, 10) };
	char why[256];

	(void)state;
	f[0].peers = 0; /* e.g. an agent restarted after its checks */
	assert_int_equal(judge(f, 3, why, sizeof(why)), 0);
}

static void test_verdict(void **state)
{
	static char r1[] =
		"{\"boot_id\":\"b\",\"assignments\":[{\"job\":\"j\","
		"\"attempt\":1,\"algo\":\"algo-1\",\"phase\":\"preparing\","
		"\"started_ms\":null,\"processes\":[],\"failure\":null,"
		"\"error\":null,\"check_ms\":12,\"net\":{\"peers\":2,"
		"\"reached\":2,\"rtt_us\":60,\"mbps\":9000}}]}";
	static char r2[] =
		"{\"boot_id\":\"b\",\"assignments\":[{\"job\":\"j\","
		"\"attempt\":1,\"algo\":\"algo-2\",\"phase\":\"preparing\","
		"\"started_ms\":null,\"processes\":[],\"failure\":null,"
		"\"error\":null,\"check_ms\":12,\"net\":{\"peers\":2,"
		"\"reached\":2,\"rtt_us\":70,\"mbps\":9,\"x\":1}}]}";
	static char r3[] =
		"{\"boot_id\":\"b\",\"assignments\":[{\"job\":\"j\","
		"\"attempt\":1,\"algo\":\"algo-3\",\"phase\":\"preparing\","
		"\"started_ms\":null,\"processes\":[],\"failure\":null,"
		"\"error\":null,\"check_ms\":12,\"net\":{\"peers\":2,"
		"\"reached\":2,\"rtt_us\":65,\"mbps\":8000}}]}";
	struct db_assignment as[3];
	struct ctrl_net_median med;
	struct buf why = BUF_INIT;

	(void)state;
	memset(as, 0, sizeof(as));
	as[0].host_index = 2, as[0].report_json = r3;
	as[1].host_index = 0, as[1].report_json = r1;
	as[2].host_index = 1, as[2].report_json = r2;
	assert_int_equal(ctrl_netcheck_verdict(as, 3, &lim, &med, &why), 2);
	assert_int_equal(med.hosts, 3);
	assert_non_null(strstr(why.data, "9 Mbit/s"));
	as[2].report_json = NULL; /* not reported yet: too few to judge */
	buf_reset(&why);
	assert_int_equal(ctrl_netcheck_verdict(as, 3, &lim, &med, &why), 0);
	assert_int_equal(med.hosts, 2);
	buf_release(&why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy),
		cmocka_unit_test(test_slow_round_trip),
		cmocka_unit_test(test_low_bandwidth),
		cmocka_unit_test(test_worst),
		cmocka_unit_test(test_two_hosts),
		cmocka_unit_test(test_not_measured),
		cmocka_unit_test(test_verdict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
