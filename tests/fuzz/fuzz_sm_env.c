/*
 * libFuzzer harness for api/sm_env.c and the Python-style JSON reader under
 * it (api/pyobj.c): the input is tried as each config file in turn. What
 * Python's json.loads() accepts must dump, str() and parse again.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/pyobj.h"
#include "api/sm_env.h"
#include "common/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RC "{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\",\"algo-2\"]}"

static void try_env(const char *hps, const char *idc, const char *rc)
{
	struct api_sm_env_input in;
	struct api_kv *env;
	size_t n;
	char **argv;
	struct buf err = BUF_INIT;

	memset(&in, 0, sizeof(in));
	in.hyperparameters_json = hps;
	in.input_data_config_json = idc;
	in.resource_config_json = rc;
	if (api_sm_env_build(&in, &env, &n, &argv, &err) == 0)
		api_sm_env_release(env, n, argv);
	buf_release(&err);
	if (hps && api_sm_user_args(hps, &argv, &err) == 0)
		api_sm_argv_free(argv);
	buf_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct api__py *o, *o2;
	struct buf err = BUF_INIT, out = BUF_INIT, again = BUF_INIT;

	memcpy(text, data, size);
	text[size] = '\0';
	if (api__py_loads(text, size, &o, &err) == 0) {
		if (api__py_dumps(o, &out) || api__py_to_str(o, &again))
			abort();
		/* json.dumps output is JSON that reads back the same. */
		if (api__py_loads(out.data, out.len, &o2, &err))
			abort();
		buf_reset(&again);
		if (api__py_dumps(o2, &again) || again.len != out.len ||
		    memcmp(again.data, out.data, out.len))
			abort();
		api__py_free(o2);
		api__py_free(o);
	}
	/* Strings stop at a NUL: the config texts are C strings. */
	try_env(text, NULL, RC);
	try_env(NULL, text, RC);
	try_env(NULL, NULL, text);
	free(text);
	buf_release(&err);
	buf_release(&out);
	buf_release(&again);
	return 0;
}
