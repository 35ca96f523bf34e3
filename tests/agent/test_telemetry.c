/*
 * Tests agent/telemetry.c's parsers on sample files of /proc and cgroup v2
 * (tests/agent/data/proc/), and agent/nvml.c: without NVIDIA's library
 * the agent reports no GPU; with it, at least one GPU with sane figures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/telemetry.h"
#include "common/buf.h"
#include "common/err.h"

#define DATA "tests/agent/data/proc/"

static char *load(const char *name)
{
	char path[256], *text;
	long n;
	FILE *f;

	snprintf(path, sizeof(path), DATA "%s", name);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

static void test_stat(void **state)
{
	struct agent_cpu_times t;
	char *text = load("stat");
	int cpus = 0;

	(void)state;
	assert_int_equal(agent_tm_parse_stat(text, &t, &cpus), 0);
	/* user nice system idle iowait irq softirq steal; guest excluded */
	assert_int_equal(t.total, 1000 + 50 + 300 + 8000 + 200 + 10 + 40 + 0);
	assert_int_equal(t.idle, 8000 + 200);
	assert_int_equal(cpus, 2);
	assert_int_equal(agent_tm_parse_stat("intr 1 2\n", &t, &cpus),
			 ERR_INVALID);
	assert_int_equal(agent_tm_parse_stat("cpu  1 2\n", &t, &cpus),
			 ERR_INVALID);
	assert_int_equal(agent_tm_parse_stat("", &t, &cpus), ERR_INVALID);
	free(text);
}

static void test_meminfo(void **state)
{
	int64_t total = 0, avail = 0;
	char *text = load("meminfo");

	(void)state;
	assert_int_equal(agent_tm_parse_meminfo(text, &total, &avail), 0);
	assert_int_equal(total, 16384000LL * 1024);
	assert_int_equal(avail, 4096000LL * 1024);
	assert_int_equal(agent_tm_parse_meminfo("MemTotal: 10 kB\n", &total,
						&avail),
			 ERR_INVALID);
	free(text);
}

/* The disks of the fixture: sda and nvme0n1 (not the partition sda1). */
static int fixture_disk(const char *name, void *arg)
{
	(void)arg;
	return !strcmp(name, "sda") || !strcmp(name, "nvme0n1");
}

static void test_diskstats(void **state)
{
	int64_t rd = 0, wr = 0;
	char *text = load("diskstats");

	(void)state;
	assert_int_equal(agent_tm_parse_diskstats(text, fixture_disk, NULL, &rd,
						  &wr),
			 0);
	assert_int_equal(rd, (4000 + 1000) * 512LL);
	assert_int_equal(wr, (8000 + 2000) * 512LL);
	/* Without a filter every line counts, a short one none. */
	assert_int_equal(agent_tm_parse_diskstats(text, NULL, NULL, &rd, &wr),
			 0);
	assert_int_equal(rd, (2000 + 4000 + 3900 + 1000 + 800) * 512LL);
	assert_int_equal(agent_tm_parse_diskstats("8 0 sda 1 2\n", NULL, NULL,
						  &rd, &wr),
			 0);
	assert_int_equal(rd, 0);
	free(text);
}

static void test_net_dev(void **state)
{
	int64_t rx = 0, tx = 0;
	char *text = load("net_dev");

	(void)state;
	assert_int_equal(agent_tm_parse_net_dev(text, &rx, &tx), 0);
	assert_int_equal(rx, 123456789LL + 1000);
	assert_int_equal(tx, 98765432LL + 2000);
	free(text);
}

static void test_pid_stat(void **state)
{
	struct agent_pid_stat st;
	char *text = load("pid_stat");

	(void)state;
	/* The command holds spaces and parentheses. */
	assert_int_equal(agent_tm_parse_pid_stat(text, &st), 0);
	assert_int_equal(st.pid, 4242);
	assert_int_equal(st.pgrp, 4242);
	assert_int_equal(st.session, 4242);
	assert_int_equal(st.ticks, 150 + 50 + 30 + 20);
	assert_int_equal(st.rss_pages, 2560);
	assert_int_equal(agent_tm_parse_pid_stat("4242 (x) S 1 2", &st),
			 ERR_INVALID);
	assert_int_equal(agent_tm_parse_pid_stat("nonsense", &st), ERR_INVALID);
	free(text);
}

static void test_schedstat(void **state)
{
	int64_t run, wait;

	(void)state;
	assert_int_equal(agent_tm_parse_schedstat("8123456789 2500000000 "
						  "4711\n",
						  &run, &wait),
			 0);
	assert_int_equal(run, 8123456789LL);
	assert_int_equal(wait, 2500000000LL);
	assert_int_equal(agent_tm_parse_schedstat("0 0 0\n", &run, &wait), 0);
	assert_int_equal(run, 0);
	assert_int_equal(agent_tm_parse_schedstat("12\n", &run, &wait),
			 ERR_INVALID);
	assert_int_equal(agent_tm_parse_schedstat("", &run, &wait),
			 ERR_INVALID);
	assert_int_equal(agent_tm_parse_schedstat("-1 5 1\n", &run, &wait),
			 ERR_INVALID);
}

static void test_cgroup(void **state)
{
	struct buf path = BUF_INIT;
	char *text = load("cgroup"), *v1 = load("cgroup_v1");
	char *max = load("memory.max"), *unl = load("memory.max_unlimited");
	int64_t v = 0;

	(void)state;
	assert_int_equal(agent_tm_parse_cgroup_path(text, &path), 0);
	assert_string_equal(path.data, "/system.slice/trainagent.service");
	assert_int_equal(agent_tm_parse_cgroup_path(v1, &path), ERR_NOTFOUND);
	assert_int_equal(agent_tm_parse_cgroup_max(max, &v), 0);
	assert_int_equal(v, 8589934592LL);
	assert_int_equal(agent_tm_parse_cgroup_max(unl, &v), 0);
	assert_int_equal(v, -1);
	assert_int_equal(agent_tm_parse_cgroup_max("-5\n", &v), ERR_INVALID);
	assert_int_equal(agent_tm_parse_cgroup_max("12x\n", &v), ERR_INVALID);
	buf_release(&path);
	free(text);
	free(v1);
	free(max);
	free(unl);
}

static void test_nvml(void **state)
{
	struct tm_gpu_sample gpus[API_TELEMETRY_MAX_GPUS];
	struct buf err = BUF_INIT;
	struct agent_nvml *n = agent_nvml_open(&err);
	size_t k, i;

	(void)state;
	if (!n) {
		/* A host without the driver: a reason, and a visible skip.
		 * A host with an NVIDIA GPU must read it. */
		assert_true(err.len > 0);
		print_message("# NVML: %s\n", err.data);
		buf_release(&err);
		if (access("/dev/nvidia0", F_OK) == 0)
			fail_msg("/dev/nvidia0 exists but NVML cannot be read");
		skip();
	}
	k = agent_nvml_sample(n, gpus, API_TELEMETRY_MAX_GPUS);
	assert_true(k >= 1);
	for (i = 0; i < k; i++) {
		assert_true(gpus[i].util_percent >= 0.0 &&
			    gpus[i].util_percent <= 100.0);
		assert_true(gpus[i].mem_total > 0);
		assert_true(gpus[i].mem_used <= gpus[i].mem_total);
		print_message("# GPU %d: %.0f %% busy, %lld of %lld bytes\n",
			      gpus[i].index, gpus[i].util_percent,
			      (long long)gpus[i].mem_used,
			      (long long)gpus[i].mem_total);
	}
	agent_nvml_close(n);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat),
		cmocka_unit_test(test_meminfo),
		cmocka_unit_test(test_diskstats),
		cmocka_unit_test(test_net_dev),
		cmocka_unit_test(test_pid_stat),
		cmocka_unit_test(test_schedstat),
		cmocka_unit_test(test_cgroup),
		cmocka_unit_test(test_nvml),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
