/*
 * Tests agent/logq.c: batches taken in order and acknowledged, a failed
 * batch sent again, the 1 MiB batch cap, and the bounded queue dropping
 * its oldest unsent lines with one marker line per assignment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/logq.h"
#include "api/agent_proto.h"
#include "common/buf.h"

static void push(struct agent_logq *q, const char *job, const char *text)
{
	agent_logq_push(q, job, NULL, 1, "algo-1", 0, 0, 1000, text,
			strlen(text), 0);
}

/* Takes a batch and parses it back. */
static size_t take(struct agent_logq *q, struct api_log_batch *b)
{
	struct buf json = BUF_INIT;
	struct buf err = BUF_INIT;
	size_t n;

	n = agent_logq_take(q, "boot-1", 2000, &json);
	memset(b, 0, sizeof(*b));
	if (n) {
		if (api_log_batch_parse(json.data, json.len, b, &err))
			fail_msg("batch does not parse: %s", err.data);
		assert_int_equal(b->n, n);
		assert_true(json.len <= AGENT_LOGQ_BATCH_MAX + 4096);
	}
	buf_release(&json);
	buf_release(&err);
	return n;
}

static void test_order_ack_nack(void **state)
{
	struct agent_logq q;
	struct api_log_batch b;

	(void)state;
	agent_logq_init(&q, 0);
	assert_int_equal(agent_logq_oldest_unsent(&q), -1);
	push(&q, "j", "one");
	push(&q, "j", "two \"quoted\"\ttab");
	assert_int_equal(take(&q, &b), 2);
	assert_string_equal(b.lines[0].text, "one");
	assert_string_equal(b.lines[1].text, "two \"quoted\"\ttab");
	assert_string_equal(b.lines[0].job, "j");
	assert_string_equal(b.lines[0].algo, "algo-1");
	api_log_batch_release(&b);
	/* One batch at a time; new lines wait. */
	push(&q, "j", "three");
	assert_int_equal(take(&q, &b), 0);
	assert_int_equal(agent_logq_oldest_unsent(&q), 0);
	agent_logq_nack(&q);
	/* A nacked batch goes again as it was: same lines, same seq. */
	assert_int_equal(take(&q, &b), 2);
	assert_string_equal(b.lines[1].text, "two \"quoted\"\ttab");
	assert_string_equal(b.boot_id, "boot-1");
	assert_int_equal(b.seq, 1);
	api_log_batch_release(&b);
	assert_int_equal(take(&q, &b), 0);
	agent_logq_ack(&q);
	assert_int_equal(take(&q, &b), 1);
	assert_string_equal(b.lines[0].text, "three");
	assert_int_equal(b.seq, 2);
	api_log_batch_release(&b);
	agent_logq_ack(&q);
	assert_int_equal(q.n, 0);
	assert_int_equal(q.bytes, 0);
	assert_int_equal(take(&q, &b), 0);
	agent_logq_release(&q);
}

static void test_batch_cap(void **state)
{
	struct agent_logq q;
	struct api_log_batch b;
	char *line = malloc(60000);
	size_t i, total = 0, n;

	(void)state;
	memset(line, 'x', 59999);
	line[59999] = '\0';
	agent_logq_init(&q, 64u << 20);
	for (i = 0; i < 40; i++)
		push(&q, "j", line);
	while ((n = take(&q, &b))) {
		assert_true(n < 40);
		total += n;
		api_log_batch_release(&b);
		agent_logq_ack(&q);
	}
	assert_int_equal(total, 40);
	free(line);
	agent_logq_release(&q);
}

static void test_drop_oldest(void **state)
{
	struct agent_logq q;
	struct api_log_batch b;
	char text[32];
	size_t i, n;

	(void)state;
	/* Room for a few dozen short lines only. */
	agent_logq_init(&q, 8192);
	push(&q, "j", "in flight");
	assert_int_equal(take(&q, &b), 1);
	api_log_batch_release(&b);
	for (i = 0; i < 200; i++) {
		snprintf(text, sizeof(text), "line %zu", i);
		push(&q, i % 2 ? "a" : "b", text);
	}
	assert_true(q.bytes <= 8192);
	assert_true(q.dropped_total > 0);
	/* The line in flight was kept. */
	assert_string_equal(q.head->line.text, "in flight");
	agent_logq_ack(&q);
	n = take(&q, &b);
	assert_int_equal(n, q.inflight_n);
	assert_true(n > 2);
	/* Two markers first (jobs a and b), then the newest lines. */
	assert_non_null(strstr(b.lines[0].text, "log lines dropped"));
	assert_non_null(strstr(b.lines[1].text, "log lines dropped"));
	assert_true(b.lines[0].is_stderr);
	assert_string_not_equal(b.lines[0].job, b.lines[1].job);
	assert_null(strstr(b.lines[2].text, "dropped"));
	assert_string_equal(b.lines[b.n - 1].text, "line 199");
	api_log_batch_release(&b);
	agent_logq_ack(&q);
	agent_logq_release(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_ack_nack),
		cmocka_unit_test(test_batch_cap),
		cmocka_unit_test(test_drop_oldest),
	};

	return cmocka_run_group_tests_name("agent/logq", tests, NULL, NULL);
}
