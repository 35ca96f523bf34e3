/*
 * Tests agent/netcheck.c: the median and the best figures a host reports
 * (unreachable peers skipped, none reached gives -1), the port each host
 * listens on, and three checks run at once on the loopback, each serving
 * the others and measuring them: every peer answers with a round trip
 * and a bandwidth; a check whose peer never listens ends within its
 * budget with that peer unreached.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/netcheck.h"
#include "common/buf.h"

static void test_median(void **state)
{
	int64_t a[] = { 5, 1, 4, 2, 3 };
	int64_t b[] = { 10, 2 };

	(void)state;
	assert_int_equal(agent_netcheck_median(a, 5), 3);
	assert_int_equal(agent_netcheck_median(b, 2), 2);
	assert_int_equal(agent_netcheck_median(a, 0), -1);
}

static void test_best(void **state)
{
	struct agent_net_peer p[3] = { { 900, 800 }, { -1, -1 }, { 300, 200 } };
	struct api_net_figures f;

	(void)state;
	agent_netcheck_best(p, 3, &f);
	assert_int_equal(f.peers, 3);
	assert_int_equal(f.reached, 2);
	assert_int_equal(f.rtt_us, 300);
	assert_int_equal(f.mbps, 800);
	p[0].rtt_us = p[2].rtt_us = -1;
	agent_netcheck_best(p, 3, &f);
	assert_int_equal(f.reached, 0);
	assert_int_equal(f.rtt_us, -1);
	assert_int_equal(f.mbps, -1);
}

static void test_port(void **state)
{
	(void)state;
	assert_int_equal(agent_netcheck_port(30000, 0), 30001);
	assert_int_equal(agent_netcheck_port(30000, 2), 30005);
}

/* A port base whose first ports are free here, from the pid. */
static int port_base(void)
{
	return 20000 + (int)(getpid() % 2000) * 16;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for nc to finish within ms; 1 when it did. */
static int wait_done(struct agent_netcheck *nc, struct api_net_figures *f,
		     int64_t ms)
{
	int64_t until = now_ms() + ms;

	while (now_ms() < until) {
		if (agent_netcheck_done(nc, f))
			return 1;
		usleep(20000);
	}
	return 0;
}

static void test_three_hosts(void **state)
{
	const char *addrs[] = { "127.0.0.1", "127.0.0.1", "localhost", NULL };
	struct agent_netcheck *nc[3];
	struct api_net_figures f[3];
	struct buf err = BUF_INIT;
	int base = port_base();
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		nc[i] = agent_netcheck_start(addrs, 3, i, base, 5000, &err);
		assert_non_null(nc[i]);
	}
	for (i = 0; i < 3; i++) {
		assert_true(wait_done(nc[i], &f[i], 6000));
		assert_int_equal(f[i].peers, 2);
		assert_int_equal(f[i].reached, 2);
		assert_true(f[i].rtt_us > 0 && f[i].rtt_us < 1000000);
		assert_true(f[i].mbps > 0);
	}
	for (i = 0; i < 3; i++)
		agent_netcheck_free(nc[i]);
	buf_release(&err);
}

static void test_peer_absent(void **state)
{
	const char *addrs[] = { "127.0.0.1", "127.0.0.1", NULL };
	struct agent_netcheck *nc;
	struct api_net_figures f;
	struct buf err = BUF_INIT;
	int64_t t0 = now_ms();

	(void)state;
	nc = agent_netcheck_start(addrs, 2, 0, port_base() + 8, 600, &err);
	assert_non_null(nc);
	assert_true(wait_done(nc, &f, 3000));
	assert_true(now_ms() - t0 < 2000);
	assert_int_equal(f.peers, 1);
	assert_int_equal(f.reached, 0);
	assert_int_equal(f.rtt_us, -1);
	agent_netcheck_free(nc);
	buf_release(&err);
}

/* The port is taken: the check cannot start, and says why. */
static void test_port_taken(void **state)
{
	const char *addrs[] = { "127.0.0.1", "127.0.0.1", NULL };
	struct agent_netcheck *a, *b;
	struct buf err = BUF_INIT;
	int base = port_base() + 12;

	(void)state;
	a = agent_netcheck_start(addrs, 2, 0, base, 200, &err);
	assert_non_null(a);
	b = agent_netcheck_start(addrs, 2, 0, base, 200, &err);
	assert_null(b);
	assert_non_null(strstr(err.data, "cannot listen on port"));
	agent_netcheck_free(a);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_best),
		cmocka_unit_test(test_port),
		cmocka_unit_test(test_three_hosts),
		cmocka_unit_test(test_peer_absent),
		cmocka_unit_test(test_port_taken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
