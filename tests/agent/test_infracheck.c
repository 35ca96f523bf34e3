/*
 * Tests agent/infracheck.c's verdict: free space of the folders and of
 * /dev/shm against their thresholds, the clock offset either way, the
 * GPUs (none expected and none there passes; a missing GPU, ECC errors
 * and pages pending retirement fail), and the first failure named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/infracheck.h"

static const struct api_infra_check limits = {
	.enabled = 1,
	.min_disk_mb = 1024,
	.min_shm_mb = 64,
	.max_skew_ms = 2000,
};

/* A healthy host without GPUs. */
static void healthy(struct agent_infra_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->dir_name[0] = "the work folder";
	f->free_mb[0] = 50000;
	f->dir_name[1] = "the checkpoint folder";
	f->free_mb[1] = 50000;
	f->dir_name[2] = "/dev/shm";
	f->free_mb[2] = 64;
	f->dir_is_shm[2] = 1;
	f->skew_ms = 3;
	f->gpus_seen = -1;
}

static int judge(const struct agent_infra_facts *f, char *why, size_t n)
{
	struct buf b = BUF_INIT;
	int bad = agent_infra_judge(f, &limits, &b);

	why[0] = '\0';
	if (b.len)
		(void)snprintf(why, n, "%s", b.data);
	buf_release(&b);
	return bad;
}

static void test_healthy_passes(void **state)
{
	struct agent_infra_facts f;
	char why[256];

	(void)state;
	healthy(&f);
	assert_int_equal(judge(&f, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* No checkpoint folder: not measured, not judged. */
	f.dir_name[1] = NULL;
	f.free_mb[1] = 0;
	assert_int_equal(judge(&f, why, sizeof(why)), 0);
}

/* A failure to prepare is the host's on a full or read-only disk. */
static void test_disk_fault(void **state)
{
	struct buf why = BUF_INIT;

	(void)state;
	assert_int_equal(agent_infra_disk_judge(AGENT_DISK_FULL_BYTES, 0, &why),
			 0);
	assert_int_equal(why.len, 0);
	assert_int_equal(agent_infra_disk_judge(12 << 10, 0, &why), 1);
	assert_string_equal(why.data,
			    "the disk of the work folder is full: 12 KiB free");
	buf_reset(&why);
	assert_int_equal(agent_infra_disk_judge(1ULL << 40, 1, &why), 1);
	assert_string_equal(why.data,
			    "the disk of the work folder is read-only");
	buf_reset(&why);
	/* A folder that cannot be read says nothing. */
	assert_int_equal(agent_infra_disk_fault("/nonexistent/x", &why), 0);
	buf_release(&why);
}

static void test_space(void **state)
{
	struct agent_infra_facts f;
	char why[256];

	(void)state;
	healthy(&f);
	f.free_mb[2] = 3;
	assert_int_equal(judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "/dev/shm has 3 MiB free, needs 64 MiB");
	healthy(&f);
	f.free_mb[0] = 1023;
	assert_int_equal(judge(&f, why, sizeof(why)), 1);
	assert_string_equal(
		why, "the work folder has 1023 MiB free, needs 1024 MiB");
	/* /dev/shm's threshold is its own: 100 MiB is enough there. */
	healthy(&f);
	f.free_mb[2] = 100;
	assert_int_equal(judge(&f, why, sizeof(why)), 0);
	healthy(&f);
	f.free_mb[1] = -1;
	assert_int_equal(judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "the checkpoint folder: its free space "
				 "cannot be read");
}

static void test_clock(void **state)
{
	struct agent_infra_facts f;
	char why[256];

	(void)state;
	healthy(&f);
	f.skew_ms = 2000;
	assert_int_equal(judge(&f, why, sizeof(why)), 0);
	f.skew_ms = -2000;
	assert_int_equal(judge(&f, why, sizeof(why)), 0);
	f.skew_ms = 2001;
	assert_int_equal(judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "the clock is 2001 ms ahead of the "
				 "controller's, at most 2000 ms allowed");
	f.skew_ms = -5000;
	assert_int_equal(judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "the clock is 5000 ms behind the "
				 "controller's, at most 2000 ms allowed");
}

static void test_gpus(void **state)
{
	struct agent_infra_facts f;
	char why[256];

	(void)state;
	healthy(&f);
	f.gpus_expected = 2;
	assert_int_equal(judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "NVML sees no GPU, 2 expected");
	f.gpus_seen = 1;
	assert_int_equal(judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "NVML sees 1 GPU, 2 expected");
	f.gpus_seen = 2;
	assert_int_equal(judge(&f, why, sizeof(why)), 0);
	f.ecc_errors = 3;
	assert_int_equal(judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "a GPU has 3 uncorrected ECC errors");
	f.ecc_errors = 0;
	f.pending_retire = 1;
	assert_int_equal(judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "a GPU has memory pages pending retirement "
				 "(it needs a reset)");
}

/* The first failure in order (space, clock, GPUs) is the one named. */
static void test_first_named(void **state)
{
	struct agent_infra_facts f;
	char why[256];

	(void)state;
	healthy(&f);
	f.free_mb[2] = 1;
	f.skew_ms = 99999;
	f.gpus_expected = 1;
	assert_int_equal(judge(&f, why, sizeof(why)), 1);
	assert_string_equal(why, "/dev/shm has 1 MiB free, needs 64 MiB");
}

/* The measure of this host: /dev/shm and a folder are read, no GPU. */
static void test_measure(void **state)
{
	struct api_infra_check c = limits;
	struct agent_infra_facts f;

	(void)state;
	c.controller_ms = 1000;
	agent_infra_measure(&f, &c, "/tmp", NULL, 1250, 0);
	assert_true(f.free_mb[0] >= 0);
	assert_null(f.dir_name[1]);
	assert_true(f.free_mb[2] >= 0);
	assert_int_equal(f.skew_ms, 250);
	assert_int_equal(f.gpus_expected, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_passes),
		cmocka_unit_test(test_space),
		cmocka_unit_test(test_disk_fault),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_gpus),
		cmocka_unit_test(test_first_named),
		cmocka_unit_test(test_measure),
	};

	return cmocka_run_group_tests_name("agent/infracheck", tests, NULL,
					   NULL);
}
