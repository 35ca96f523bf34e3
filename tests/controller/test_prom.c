/* Tests controller/obs/prom.c: the Prometheus text format writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "controller/obs/prom.h"

static void test_family(void **state)
{
	struct buf out = BUF_INIT;

	(void)state;
	ctrl_prom_family(&out, "trainctl_jobs", "gauge", "Jobs by status.");
	assert_string_equal(out.data, "# HELP trainctl_jobs Jobs by status.\n"
				      "# TYPE trainctl_jobs gauge\n");
	buf_release(&out);
}

static void test_samples(void **state)
{
	struct ctrl_prom_sample s;
	struct buf out = BUF_INIT;

	(void)state;
	ctrl_prom_sample_start(&s, &out, "trainctl_log_lines_ingested_total");
	ctrl_prom_value(&s, "%llu", 42ULL);
	ctrl_prom_sample_start(&s, &out, "trainctl_hosts");
	ctrl_prom_label(&s, "state", "ready");
	ctrl_prom_value(&s, "%lld", 2LL);
	ctrl_prom_sample_start(&s, &out, "trainctl_host_gpu_memory_used_bytes");
	ctrl_prom_label(&s, "host", "local-1");
	ctrl_prom_label_int(&s, "gpu", 3);
	ctrl_prom_value(&s, "%.17g", 0.5);
	assert_string_equal(
		out.data,
		"trainctl_log_lines_ingested_total 42\n"
		"trainctl_hosts{state=\"ready\"} 2\n"
		"trainctl_host_gpu_memory_used_bytes{host=\"local-1\","
		"gpu=\"3\"} 0.5\n");
	buf_release(&out);
}

static void test_escape(void **state)
{
	struct ctrl_prom_sample s;
	struct buf out = BUF_INIT;

	(void)state;
	ctrl_prom_sample_start(&s, &out, "m");
	ctrl_prom_label(&s, "host", "a\\b\"c\nd");
	ctrl_prom_value(&s, "%d", 1);
	assert_string_equal(out.data, "m{host=\"a\\\\b\\\"c\\nd\"} 1\n");
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_family),
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests_name("controller/prom", tests, NULL,
					   NULL);
}
