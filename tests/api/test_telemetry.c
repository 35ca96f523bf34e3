/*
 * Tests api/telemetry.c through the status message of api/agent_proto.c:
 * samples survive build -> parse -> build unchanged; a status without
 * them (an older agent) parses as before and rebuilds byte for byte, which
 * the controller's "nothing new" check relies on; the limits on samples,
 * GPUs and assignments per sample and the range of every figure are
 * enforced with a message naming the member, and refused samples leave the
 * rest of the status (the heartbeat, the reports) accepted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/agent_proto.h"
#include "api/telemetry.h"
#include "common/buf.h"
#include "common/err.h"

static void fill(struct tm_host_sample *s, int64_t ts)
{
	memset(s, 0, sizeof(*s));
	s->ts_ms = ts;
	s->cpu_percent = 42.5;
	s->cpus = 8;
	s->mem_used = 3LL << 30;
	s->mem_total = 16LL << 30;
	s->mem_limit = 8LL << 30;
	s->disk_read = 1000;
	s->disk_write = 2000;
	s->net_rx = 3000;
	s->net_tx = 4000;
	s->fs_used = 25;
	s->fs_total = 100;
	s->n_gpus = 2;
	s->gpus = calloc(2, sizeof(*s->gpus));
	s->gpus[0] = (struct tm_gpu_sample){ 0, 90.0, 40LL << 30, 80LL << 30 };
	s->gpus[1] = (struct tm_gpu_sample){ 1, 10.0, 20LL << 30, 80LL << 30 };
	s->n_ranks = 1;
	s->ranks = calloc(1, sizeof(*s->ranks));
	s->ranks[0].job = strdup("mnist-1");
	s->ranks[0].job_uid = strdup("5e1f0c0ffee0d00d");
	s->ranks[0].attempt = 1;
	s->ranks[0].algo = strdup("algo-2");
	s->ranks[0].cpu_percent = 250.0;
	s->ranks[0].rss_bytes = 1LL << 30;
	s->ranks[0].procs = 3;
	s->ranks[0].run_ns = 8123456789LL;
	s->ranks[0].wait_ns = 2500000000LL;
	s->ranks[0].top_rank = 0;
}

static const char *const BARE =
	"{\"boot_id\":\"b1\",\"assignments\":[{\"job\":\"mnist-1\","
	"\"job_uid\":\"5e1f0c0ffee0d00d\",\"attempt\":1,\"algo\":\"algo-1\","
	"\"phase\":\"running\",\"started_ms\":1796211299642,\"processes\":"
	"[{\"rank\":0,\"pid\":4242,\"started_ms\":1796211299650,"
	"\"exit_code\":null,\"signal\":null,\"exited_ms\":null}],"
	"\"failure\":null,\"error\":null}]}";

static void test_roundtrip(void **state)
{
	struct api_status st, back;
	struct buf one = BUF_INIT, two = BUF_INIT, err = BUF_INIT;
	struct tm_host_sample s[2];

	(void)state;
	assert_int_equal(api_status_parse(BARE, strlen(BARE), &st, &err), 0);
	assert_int_equal(st.n_samples, 0);
	fill(&s[0], 1796211300000);
	fill(&s[1], 1796211305000);
	s[1].ranks[0].run_ns = -1; /* not written */
	s[1].ranks[0].top_rank = -1;
	st.samples = s;
	st.n_samples = 2;
	assert_int_equal(api_status_build(&st, &one), 0);
	st.samples = NULL;
	st.n_samples = 0;
	api_status_release(&st);
	tm_host_sample_release(&s[0]);
	tm_host_sample_release(&s[1]);

	assert_int_equal(api_status_parse(one.data, one.len, &back, &err), 0);
	assert_int_equal(back.n_samples, 2);
	assert_int_equal(back.samples[1].ts_ms, 1796211305000);
	assert_true(back.samples[0].cpu_percent == 42.5);
	assert_int_equal(back.samples[0].mem_limit, 8LL << 30);
	assert_int_equal(back.samples[0].n_gpus, 2);
	assert_int_equal(back.samples[0].gpus[1].mem_used, 20LL << 30);
	assert_string_equal(back.samples[0].ranks[0].algo, "algo-2");
	assert_true(back.samples[0].ranks[0].cpu_percent == 250.0);
	assert_int_equal(back.samples[0].ranks[0].procs, 3);
	assert_int_equal(back.samples[0].ranks[0].run_ns, 8123456789LL);
	assert_int_equal(back.samples[0].ranks[0].wait_ns, 2500000000LL);
	assert_int_equal(back.samples[0].ranks[0].top_rank, 0);
	/* An older agent's entry without them: unknown. */
	assert_int_equal(back.samples[1].ranks[0].run_ns, -1);
	assert_int_equal(back.samples[1].ranks[0].top_rank, -1);
	/* SageMaker's figures: memory of the smaller of limit and total,
	 * CPU and GPU summed over cores and GPUs. */
	assert_true(tm_host_sample_mem_percent(&back.samples[0]) == 37.5);
	assert_true(tm_host_sample_disk_percent(&back.samples[0]) == 25.0);
	assert_true(tm_host_sample_gpu_percent(&back.samples[0]) == 100.0);
	assert_true(tm_host_sample_gpu_mem_percent(&back.samples[0]) == 75.0);
	assert_true(tm_host_sample_cores_percent(&back.samples[0]) == 340.0);
	assert_int_equal(api_status_build(&back, &two), 0);
	assert_int_equal(one.len, two.len);
	assert_memory_equal(one.data, two.data, one.len);

	/* Without its samples the status rebuilds exactly as an agent that
	 * has none sends it. */
	buf_reset(&two);
	tm_host_sample_release(&back.samples[0]);
	tm_host_sample_release(&back.samples[1]);
	free(back.samples);
	back.samples = NULL;
	back.n_samples = 0;
	assert_int_equal(api_status_build(&back, &two), 0);
	assert_string_equal(two.data, BARE);
	api_status_release(&back);
	buf_release(&one);
	buf_release(&two);
	buf_release(&err);
}

/*
 * Parses body: ERR_INVALID when the status is refused, or when its samples
 * are (then with the reason in err, and the status kept without them).
 */
static int parse_status(const char *body, size_t len, struct buf *err)
{
	struct api_status st;
	int ret;

	buf_reset(err);
	ret = api_status_parse(body, len, &st, err);
	if (ret)
		return ret;
	if (st.telemetry_error) {
		assert_int_equal(st.n_samples, 0);
		assert_null(st.samples);
		(void)buf_adds(err, st.telemetry_error);
		ret = ERR_INVALID;
	}
	api_status_release(&st);
	return ret;
}

/* A status of one sample whose member key is replaced by value. */
static int parse_with(const char *key, const char *value, struct buf *err)
{
	struct tm_host_sample s;
	struct api_status st;
	struct buf body = BUF_INIT, out = BUF_INIT;
	char *at, *end;
	int ret;

	memset(&st, 0, sizeof(st));
	st.boot_id = (char *)"b1";
	fill(&s, 1796211300000);
	st.samples = &s;
	st.n_samples = 1;
	assert_int_equal(api_status_build(&st, &body), 0);
	tm_host_sample_release(&s);
	buf_reset(err);
	(void)buf_addf(&out, "\"%s\":", key);
	at = strstr(body.data, out.data);
	assert_non_null(at);
	at += out.len;
	end = at;
	/* The old value: up to the next ',' or '}' outside brackets. */
	if (*end == '[') {
		int depth = 0;

		do {
			depth += *end == '[';
			depth -= *end == ']';
			end++;
		} while (depth);
	} else {
		end += strcspn(end, ",}");
	}
	buf_reset(&out);
	(void)buf_add(&out, body.data, (size_t)(at - body.data));
	(void)buf_adds(&out, value);
	(void)buf_adds(&out, end);
	ret = parse_status(out.data, out.len, err);
	buf_release(&body);
	buf_release(&out);
	return ret;
}

static void test_refusals(void **state)
{
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(parse_with("cpu_percent", "100.5", &err), ERR_INVALID);
	assert_string_equal(err.data,
			    "member 'telemetry[0].cpu_percent' must be 0..100");
	assert_int_equal(parse_with("cpu_percent", "\"high\"", &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "must be a number"));
	assert_int_equal(parse_with("mem_used", "-1", &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "'telemetry[0].mem_used'"));
	assert_int_equal(parse_with("mem_limit", "-2", &err), ERR_INVALID);
	assert_int_equal(parse_with("cpus", "0", &err), ERR_INVALID);
	assert_int_equal(parse_with("ts_ms", "1.5", &err), ERR_INVALID);
	assert_int_equal(parse_with("util_percent", "101", &err), ERR_INVALID);
	assert_non_null(
		strstr(err.data, "'telemetry[0].gpus[0].util_percent'"));
	assert_int_equal(parse_with("gpus", "{}", &err), ERR_INVALID);
	assert_int_equal(parse_with("ranks", "[1]", &err), ERR_INVALID);
	assert_string_equal(err.data,
			    "member 'telemetry[0].ranks[0]' must be an object");
	assert_int_equal(parse_with("job_uid", "\"XYZ\"", &err), ERR_INVALID);
	assert_int_equal(parse_with("algo", "\"\"", &err), ERR_INVALID);
	assert_int_equal(parse_with("procs", "-3", &err), ERR_INVALID);
	assert_int_equal(parse_with("wait_ns", "-1", &err), ERR_INVALID);
	assert_non_null(strstr(err.data, "'telemetry[0].ranks[0].wait_ns'"));
	/* Absent and null lists are empty. */
	assert_int_equal(parse_with("gpus", "null", &err), 0);
	buf_release(&err);
}

/* Refused samples never cost the heartbeat its reports. */
static void test_bad_samples_keep_reports(void **state)
{
	static const char body[] =
		"{\"boot_id\":\"b1\",\"assignments\":[{\"job\":\"j\","
		"\"attempt\":1,\"algo\":\"algo-1\",\"phase\":\"running\","
		"\"started_ms\":null,\"processes\":[],\"failure\":null,"
		"\"error\":null}],\"telemetry\":{\"x\":1}}";
	struct api_status st;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(api_status_parse(body, strlen(body), &st, &err), 0);
	assert_int_equal(st.n, 1);
	assert_string_equal(st.items[0].job, "j");
	assert_int_equal(st.n_samples, 0);
	assert_string_equal(st.telemetry_error,
			    "member 'telemetry' must be an array or null");
	api_status_release(&st);
	buf_release(&err);
}

/* A status with n samples of g GPUs and r ranks each. */
static int parse_sized(size_t n, size_t g, size_t r, struct buf *err)
{
	struct buf b = BUF_INIT;
	struct api_status st;
	size_t i, k;
	int ret;

	(void)buf_adds(&b, "{\"boot_id\":\"b\",\"assignments\":[],"
			   "\"telemetry\":[");
	for (i = 0; i < n; i++) {
		(void)buf_addf(
			&b,
			"%s{\"ts_ms\":%zu,\"cpu_percent\":1,\"cpus\":1,"
			"\"mem_used\":0,\"mem_total\":0,\"mem_limit\":-1,"
			"\"disk_read\":0,\"disk_write\":0,\"net_rx\":0,"
			"\"net_tx\":0,\"fs_used\":0,\"fs_total\":0,"
			"\"gpus\":[",
			i ? "," : "", i);
		for (k = 0; k < g; k++)
			(void)buf_addf(&b,
				       "%s{\"index\":%zu,\"util_percent\":0,"
				       "\"mem_used\":0,\"mem_total\":0}",
				       k ? "," : "", k % 64);
		(void)buf_adds(&b, "],\"ranks\":[");
		for (k = 0; k < r; k++)
			(void)buf_addf(
				&b,
				"%s{\"job\":\"j\",\"attempt\":1,\"algo\":"
				"\"algo-1\",\"cpu_percent\":0,"
				"\"rss_bytes\":0,\"procs\":0}",
				k ? "," : "");
		(void)buf_adds(&b, "]}");
	}
	(void)buf_adds(&b, "]}");
	ret = parse_status(b.data, b.len, err);
	if (!ret) {
		assert_int_equal(api_status_parse(b.data, b.len, &st, err), 0);
		assert_int_equal(st.n_samples, n);
		api_status_release(&st);
	}
	buf_release(&b);
	return ret;
}

static void test_limits(void **state)
{
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(parse_sized(API_TELEMETRY_MAX_SAMPLES, 1, 1, &err), 0);
	assert_int_equal(parse_sized(API_TELEMETRY_MAX_SAMPLES + 1, 0, 0, &err),
			 ERR_INVALID);
	assert_string_equal(err.data, "member 'telemetry' must hold at most "
				      "64 samples");
	assert_int_equal(parse_sized(1, API_TELEMETRY_MAX_GPUS, 0, &err), 0);
	assert_int_equal(parse_sized(1, API_TELEMETRY_MAX_GPUS + 1, 0, &err),
			 ERR_INVALID);
	assert_string_equal(err.data, "member 'telemetry[0].gpus' must hold "
				      "at most 64 entries");
	assert_int_equal(parse_sized(1, 0, API_TELEMETRY_MAX_RANKS, &err), 0);
	assert_int_equal(parse_sized(1, 0, API_TELEMETRY_MAX_RANKS + 1, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "'telemetry[0].ranks'"));
	assert_int_equal(parse_sized(0, 0, 0, &err), 0);
	buf_release(&err);
}

static void test_register_reply(void **state)
{
	struct buf out = BUF_INIT, err = BUF_INIT;
	int64_t h = 0, d = 0, ms = 0;

	(void)state;
	assert_int_equal(api_register_reply_build_tm(1000, 3000, 2500, &out),
			 0);
	assert_string_equal(out.data, "{\"heartbeat_ms\":1000,\"deadline_ms\":"
				      "3000,\"telemetry_ms\":2500}");
	/* An older agent reads the rest as before. */
	assert_int_equal(
		api_register_reply_parse(out.data, out.len, &h, &d, &err), 0);
	assert_int_equal(h, 1000);
	assert_int_equal(
		api_register_reply_telemetry(out.data, out.len, &ms, &err), 0);
	assert_int_equal(ms, 2500);
	buf_reset(&out);
	assert_int_equal(api_register_reply_build_tm(1000, 3000, -1, &out), 0);
	assert_string_equal(out.data,
			    "{\"heartbeat_ms\":1000,\"deadline_ms\":3000}");
	assert_int_equal(
		api_register_reply_telemetry(out.data, out.len, &ms, &err), 0);
	assert_int_equal(ms, -1);
	assert_int_equal(api_register_reply_telemetry(
				 "{\"telemetry_ms\":-5}",
				 strlen("{\"telemetry_ms\":-5}"), &ms, &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "'telemetry_ms' must be 0..3600000"));
	assert_int_equal(ms, -1);
	buf_release(&out);
	buf_release(&err);
}

static void test_series(void **state)
{
	struct tm_host_sample s[2];
	struct buf out = BUF_INIT;

	(void)state;
	fill(&s[0], 1000);
	fill(&s[1], 3000);
	s[1].disk_read = 1000 + 4000; /* 2000 bytes/s */
	s[1].net_tx = 100;	      /* went back: the host rebooted */
	assert_int_equal(
		api_telemetry_series_build("h1", 0, 5000, 0, s, 2, &out), 0);
	assert_non_null(strstr(out.data, "\"disk_read_bps\":2000"));
	assert_non_null(strstr(out.data, "\"net_tx_bps\":0"));
	assert_non_null(strstr(out.data, "\"mem_percent\":37.5"));
	assert_non_null(strstr(out.data, "\"truncated\":false"));
	tm_host_sample_release(&s[0]);
	tm_host_sample_release(&s[1]);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_bad_samples_keep_reports),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_register_reply),
		cmocka_unit_test(test_series),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
