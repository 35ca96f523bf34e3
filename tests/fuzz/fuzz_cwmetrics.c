/*
 * libFuzzer harness for api/cwmetrics.c and api/cwmetrics_wire.c: the input
 * is tried as each request of each protocol (query form, JSON 1.0, CBOR).
 * A request that parses must be answered without failing.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/cwmetrics.h"
#include "common/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void try_proto(enum api_cwm_proto proto, const char *body, size_t len)
{
	struct api_cwm_list_req l;
	struct api_cwm_stats_req s;
	struct api_cwm_data_req d;
	struct buf err = BUF_INIT, out = BUF_INIT;
	const char *code = NULL;
	enum api_cwm_op op;

	(void)api_cwm_action(proto, body, len, &op, &code, &err);
	buf_reset(&err);
	if (!api_cwm_list_req_parse(proto, body, len, &l, &code, &err))
		api_cwm_list_req_release(&l);
	buf_reset(&err);
	if (!api_cwm_stats_req_parse(proto, body, len, &s, &code, &err)) {
		struct api_cwm_datapoint dp;

		memset(&dp, 0, sizeof(dp));
		dp.ts_ms = s.start_ms;
		if (api_cwm_stats_build(proto, &s, &dp, 1, "rid", &out))
			abort();
		api_cwm_stats_req_release(&s);
	}
	buf_reset(&err);
	if (!api_cwm_data_req_parse(proto, body, len, &d, &code, &err))
		api_cwm_data_req_release(&d);
	else if (api_cwm_error_build(proto, code, 1, err.data, "rid", &out))
		abort();
	buf_release(&err);
	buf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	memcpy(text, data, size);
	text[size] = '\0';
	try_proto(API_CWM_QUERY, text, size);
	try_proto(API_CWM_JSON, text, size);
	try_proto(API_CWM_CBOR, text, size);
	free(text);
	return 0;
}
