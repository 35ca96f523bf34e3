/*
 * libFuzzer harness for the agent protocol parsers (api/agent_proto.c):
 * every body an agent or the controller receives goes through one of them.
 * Whatever parses must build again, and what it builds must parse and
 * build to the same bytes (the round trip is exact).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/agent_proto.h"
#include "common/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_same(const struct buf *a, const struct buf *b)
{
	if (a->len != b->len || memcmp(a->data, b->data, a->len))
		abort();
}

static void fuzz_work(const char *json, size_t size)
{
	struct api_work w, w2;
	struct buf err = BUF_INIT, out = BUF_INIT, again = BUF_INIT;

	if (api_work_parse(json, size, &w, &err) == 0) {
		if (api_work_build(&w, &out) ||
		    api_work_parse(out.data, out.len, &w2, &err))
			abort();
		if (api_work_build(&w2, &again))
			abort();
		check_same(&out, &again);
		api_work_release(&w2);
		api_work_release(&w);
	}
	buf_release(&err);
	buf_release(&out);
	buf_release(&again);
}

static void fuzz_status(const char *json, size_t size)
{
	struct api_status s, s2;
	struct buf err = BUF_INIT, out = BUF_INIT, again = BUF_INIT;

	if (api_status_parse(json, size, &s, &err) == 0) {
		if (api_status_build(&s, &out) ||
		    api_status_parse(out.data, out.len, &s2, &err))
			abort();
		if (api_status_build(&s2, &again))
			abort();
		check_same(&out, &again);
		api_status_release(&s2);
		api_status_release(&s);
	}
	buf_release(&err);
	buf_release(&out);
	buf_release(&again);
}

static void fuzz_register(const char *json, size_t size)
{
	struct api_register r, r2;
	struct buf err = BUF_INIT, out = BUF_INIT, again = BUF_INIT;
	int64_t hb, dl;

	if (api_register_parse(json, size, &r, &err) == 0) {
		if (api_register_build(&r, &out) ||
		    api_register_parse(out.data, out.len, &r2, &err))
			abort();
		if (api_register_build(&r2, &again))
			abort();
		check_same(&out, &again);
		api_register_release(&r2);
		api_register_release(&r);
	}
	if (api_register_reply_parse(json, size, &hb, &dl, &err) == 0) {
		buf_reset(&out);
		if (api_register_reply_build(hb, dl, &out))
			abort();
	}
	buf_release(&err);
	buf_release(&out);
	buf_release(&again);
}

static void fuzz_logs(const char *json, size_t size)
{
	struct api_log_batch b, b2;
	struct buf err = BUF_INIT, out = BUF_INIT, again = BUF_INIT;

	if (api_log_batch_parse(json, size, &b, &err) == 0) {
		if (api_log_batch_build(&b, &out) ||
		    api_log_batch_parse(out.data, out.len, &b2, &err))
			abort();
		if (api_log_batch_build(&b2, &again))
			abort();
		check_same(&out, &again);
		api_log_batch_release(&b2);
		api_log_batch_release(&b);
	}
	/* Sanitized bytes always make a line the builder accepts. */
	buf_reset(&out);
	if (api_utf8_sanitize(json, size, &out) == 0) {
		struct api_log_line l = { 0 };
		struct api_log_batch one = { &l, 1 };

		l.job = (char *)"j";
		l.algo = (char *)"algo-1";
		l.attempt = 1;
		l.text = out.data;
		buf_reset(&again);
		if (api_log_batch_build(&one, &again))
			abort();
	}
	buf_release(&err);
	buf_release(&out);
	buf_release(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *json = (const char *)data;

	fuzz_work(json, size);
	fuzz_status(json, size);
	fuzz_register(json, size);
	fuzz_logs(json, size);
	return 0;
}
