/*
 * Tests api/sm_env.c and api/pyobj.c against what Python and
 * sagemaker-training-toolkit produce. The expectations in
 * tests/api/data/sm_env/ come from scripts/gen_sm_env_expect.py, which runs
 * TK's logic on a real Python interpreter: every case compares the whole
 * environment (same names, same bytes) and argv. float_repr.txt holds 4000
 * doubles with Python's repr(). The other tests cover what TK would refuse.
 * Run from the top of the tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/pyobj.h"
#include "api/sm_env.h"
#include "common/buf.h"
#include "common/err.h"

#define DATA_DIR "tests/api/data/sm_env/"

static const char *str_or_null(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Builds the environment of one case file and compares all of it. */
static void check_case(const char *name)
{
	char path[256];
	json_error_t jerr;
	json_t *root, *in, *expect, *envj, *args, *v;
	struct api_sm_env_input input;
	struct api_kv *kv = NULL, *env = NULL;
	size_t n_env = 0, n_kv = 0, i;
	char **argv = NULL, **argv2 = NULL;
	struct buf err = BUF_INIT;
	const char *key;
	void *it;
	int ret;

	(void)snprintf(path, sizeof(path), DATA_DIR "%s.json", name);
	root = json_load_file(path, 0, &jerr);
	if (!root)
		fail_msg("%s: %s (run from the top of the tree)", path,
			 jerr.text);
	in = json_object_get(root, "input");
	expect = json_object_get(root, "expect");
	memset(&input, 0, sizeof(input));
	input.base_dir = str_or_null(in, "base_dir");
	input.hyperparameters_json = str_or_null(in, "hyperparameters_json");
	input.input_data_config_json =
		str_or_null(in, "input_data_config_json");
	input.resource_config_json = str_or_null(in, "resource_config_json");
	input.job_name = str_or_null(in, "job_name");
	input.job_arn = str_or_null(in, "job_arn");
	input.region = str_or_null(in, "region");
	input.module_dir = str_or_null(in, "module_dir");
	input.user_entry_point = str_or_null(in, "user_entry_point");
	input.framework_module = str_or_null(in, "framework_module");
	input.num_cpus =
		(int)json_integer_value(json_object_get(in, "num_cpus"));
	input.num_gpus =
		(int)json_integer_value(json_object_get(in, "num_gpus"));
	input.num_neurons =
		(int)json_integer_value(json_object_get(in, "num_neurons"));
	envj = json_object_get(in, "environment");
	if (envj) {
		kv = calloc(json_object_size(envj) + 1, sizeof(*kv));
		for (it = json_object_iter(envj); it;
		     it = json_object_iter_next(envj, it)) {
			kv[n_kv].key = (char *)json_object_iter_key(it);
			kv[n_kv].value = (char *)json_string_value(
				json_object_iter_value(it));
			n_kv++;
		}
	}
	input.environment = kv;
	input.n_environment = n_kv;

	ret = api_sm_env_build(&input, &env, &n_env, &argv, &err);
	if (ret)
		fail_msg("%s: api_sm_env_build: %s", name, err.data);

	envj = json_object_get(expect, "env");
	for (it = json_object_iter(envj); it;
	     it = json_object_iter_next(envj, it)) {
		const char *want =
			json_string_value(json_object_iter_value(it));
		const char *got;

		key = json_object_iter_key(it);
		got = api_sm_env_get(env, n_env, key);
		if (!got)
			fail_msg("%s: %s missing (want '%s')", name, key, want);
		if (strcmp(got, want))
			fail_msg("%s: %s\n got: %s\nwant: %s", name, key, got,
				 want);
	}
	for (i = 0; i < n_env; i++)
		if (!json_object_get(envj, env[i].key))
			fail_msg("%s: unexpected %s=%s", name, env[i].key,
				 env[i].value);
	assert_int_equal(n_env, json_object_size(envj));

	args = json_object_get(expect, "user_args");
	for (i = 0; i < json_array_size(args); i++) {
		v = json_array_get(args, i);
		if (!argv[i])
			fail_msg("%s: argv ends at %zu", name, i);
		if (strcmp(argv[i], json_string_value(v)))
			fail_msg("%s: argv[%zu] '%s', want '%s'", name, i,
				 argv[i], json_string_value(v));
	}
	assert_null(argv[json_array_size(args)]);

	/* The argv helper alone agrees. */
	assert_int_equal(
		api_sm_user_args(input.hyperparameters_json, &argv2, &err), 0);
	for (i = 0; argv[i]; i++)
		assert_string_equal(argv[i], argv2[i]);
	assert_null(argv2[i]);

	api_sm_argv_free(argv2);
	api_sm_env_release(env, n_env, argv);
	free(kv);
	buf_release(&err);
	json_decref(root);
}

static void test_one_host(void **state)
{
	(void)state;
	check_case("one_host");
}

static void test_three_hosts(void **state)
{
	(void)state;
	check_case("three_hosts");
}

static void test_hp_types(void **state)
{
	(void)state;
	check_case("hp_types");
}

static void test_channel_names(void **state)
{
	(void)state;
	check_case("channel_names");
}

static void test_hetero_master(void **state)
{
	(void)state;
	check_case("hetero_master");
	check_case("hetero_master_self");
	check_case("group_order_master");
}

static void test_environment(void **state)
{
	(void)state;
	check_case("environment");
	check_case("no_groups");
	check_case("overrides");
}

/* Spot checks that do not depend on the generator. */
static void test_known_values(void **state)
{
	struct api_sm_env_input in;
	struct api_kv *env;
	size_t n;
	char **argv;
	struct buf err = BUF_INIT;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.hyperparameters_json = "{\"epochs\":\"10\",\"learning-rate\":"
				  "\"0.01\",\"k\":\"true\","
				  "\"sagemaker_program\":\"\\\"train.py\\\"\"}";
	in.input_data_config_json = "{\"training\":{},\"testing\":{}}";
	in.resource_config_json =
		"{\"current_host\":\"algo-2\",\"hosts\":[\"algo-1\","
		"\"algo-2\"]}";
	in.num_cpus = 4;
	assert_int_equal(api_sm_env_build(&in, &env, &n, &argv, &err), 0);
	assert_string_equal(api_sm_env_get(env, n, "SM_CHANNELS"),
			    "[\"testing\",\"training\"]");
	assert_string_equal(api_sm_env_get(env, n, "SM_CHANNEL_TRAINING"),
			    "/opt/ml/input/data/training");
	assert_string_equal(api_sm_env_get(env, n, "SM_HP_LEARNING-RATE"),
			    "0.01");
	assert_string_equal(api_sm_env_get(env, n, "SM_HOSTS"),
			    "[\"algo-1\",\"algo-2\"]");
	assert_string_equal(api_sm_env_get(env, n, "SM_MODULE_NAME"), "train");
	assert_string_equal(api_sm_env_get(env, n, "SM_LOG_LEVEL"), "20");
	assert_string_equal(api_sm_env_get(env, n, "CURRENT_HOST"), "algo-2");
	assert_null(api_sm_env_get(env, n, "SM_TOPOLOGY"));
	assert_non_null(strstr(api_sm_env_get(env, n, "SM_TRAINING_ENV"),
			       "\"is_master\":false,"));
	assert_non_null(strstr(api_sm_env_get(env, n, "SM_TRAINING_ENV"),
			       "\"master_hostname\":\"algo-1\","));
	assert_string_equal(argv[0], "--epochs");
	assert_string_equal(argv[1], "10");
	assert_string_equal(argv[2], "-k");
	assert_string_equal(argv[3], "True");
	assert_string_equal(argv[4], "--learning-rate");
	assert_string_equal(argv[5], "0.01");
	assert_null(argv[6]);
	api_sm_env_release(env, n, argv);
	buf_release(&err);
}

static int from_hex(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 16);

	*out = v;
	return end == s + 16 ? 0 : -1;
}

static void test_float_repr(void **state)
{
	FILE *f = fopen(DATA_DIR "float_repr.txt", "r");
	char line[128], want[64];
	struct buf out = BUF_INIT;
	size_t n = 0;

	(void)state;
	if (!f)
		fail_msg("%sfloat_repr.txt missing (run from the top of the "
			 "tree)",
			 DATA_DIR);
	while (fgets(line, sizeof(line), f)) {
		uint64_t bits;
		double d;

		if (line[0] == '#')
			continue;
		assert_int_equal(from_hex(line, &bits), 0);
		assert_int_equal(sscanf(line + 17, "%63s", want), 1);
		memcpy(&d, &bits, sizeof(d));
		buf_reset(&out);
		assert_int_equal(api__py_float_repr(d, &out), 0);
		if (strcmp(out.data, want))
			fail_msg("repr(%s): got %s, want %s", line, out.data,
				 want);
		n++;
	}
	fclose(f);
	assert_true(n >= 4000);
	buf_release(&out);
}

static void expect_loads(const char *json, const char *dumped, const char *str)
{
	struct api__py *o;
	struct buf b = BUF_INIT, err = BUF_INIT;

	if (api__py_loads(json, strlen(json), &o, &err))
		fail_msg("loads(%s): %s", json, err.data);
	assert_int_equal(api__py_dumps(o, &b), 0);
	assert_string_equal(b.data, dumped);
	buf_reset(&b);
	assert_int_equal(api__py_to_str(o, &b), 0);
	assert_string_equal(b.data, str);
	api__py_free(o);
	buf_release(&b);
	buf_release(&err);
}

static void expect_not_json(const char *json, int code)
{
	struct api__py *o = NULL;
	struct buf err = BUF_INIT;

	assert_int_equal(api__py_loads(json, strlen(json), &o, &err), code);
	assert_null(o);
	assert_true(err.len > 0);
	buf_release(&err);
}

static void test_py_json(void **state)
{
	struct buf big = BUF_INIT;
	int i;

	(void)state;
	expect_loads(" [1,2] ", "[1,2]", "[1, 2]");
	expect_loads("{\"b\":1,\"a\":{\"d\":null,\"c\":false}}",
		     "{\"a\":{\"c\":false,\"d\":null},\"b\":1}",
		     "{'b': 1, 'a': {'d': None, 'c': False}}");
	expect_loads("{\"a\":1,\"b\":2,\"a\":3}", "{\"a\":3,\"b\":2}",
		     "{'a': 3, 'b': 2}");
	expect_loads("\"\\ud83d\\ude00\"", "\"\\ud83d\\ude00\"",
		     "\xf0\x9f\x98\x80");
	expect_loads("\"\\udc80\"", "\"\\udc80\"", "\xed\xb2\x80");
	expect_loads("[\"\\u00e9\\u00a0\\u0085'\"]",
		     "[\"\\u00e9\\u00a0\\u0085'\"]",
		     "[\"\xc3\xa9\\xa0\\x85'\"]");
	expect_loads("-0", "0", "0");
	expect_loads("1E400", "Infinity", "inf");
	expect_loads("[NaN,-Infinity]", "[NaN,-Infinity]", "[nan, -inf]");
	expect_loads("\"\\u007f\"", "\"\\u007f\"", "\x7f");
	expect_not_json("", ERR_INVALID);
	expect_not_json("01", ERR_INVALID);
	expect_not_json("1.", ERR_INVALID);
	expect_not_json("[1,]", ERR_INVALID);
	expect_not_json("{\"a\" 1}", ERR_INVALID);
	expect_not_json("\"a\tb\"", ERR_INVALID);
	expect_not_json("\"\\x\"", ERR_INVALID);
	expect_not_json("\"\\u12\"", ERR_INVALID);
	expect_not_json("\"\xff\"", ERR_INVALID);
	expect_not_json("\"\xed\xa0\x80\"", ERR_INVALID);
	expect_not_json("\xef\xbb\xbf{}", ERR_INVALID);
	expect_not_json("nan", ERR_INVALID);
	expect_not_json("-NaN", ERR_INVALID);
	expect_not_json("{} x", ERR_INVALID);

	/* Python's int() limit, and its recursion limit. */
	for (i = 0; i < API__PY_INT_MAX_DIGITS; i++)
		(void)buf_addch(&big, '7');
	{
		struct api__py *o;
		struct buf err = BUF_INIT;

		assert_int_equal(api__py_loads(big.data, big.len, &o, &err), 0);
		api__py_free(o);
		buf_release(&err);
	}
	(void)buf_addch(&big, '7');
	expect_not_json(big.data, ERR_INVALID);
	buf_reset(&big);
	for (i = 0; i <= API__PY_MAX_DEPTH; i++)
		(void)buf_addch(&big, '[');
	expect_not_json(big.data, ERR_TOOBIG);
	buf_release(&big);
}

#define TRUTHY "[1, 1.0, true, \"1\"]"
#define FALSY "[0, 0.0, \"\", [], {}, null, false]"

static void test_py_compare(void **state)
{
	struct api__py *a, *b, *c;
	struct buf err = BUF_INIT;
	int in;

	(void)state;
	assert_int_equal(api__py_loads(TRUTHY, strlen(TRUTHY), &a, &err), 0);
	assert_true(api__py_eq(a->items[0], a->items[1]));
	assert_true(api__py_eq(a->items[0], a->items[2]));
	assert_false(api__py_eq(a->items[0], a->items[3]));
	assert_int_equal(api__py_contains(a, a->items[3], &in), 0);
	assert_true(in);
	b = api__py_strz("xgpux");
	c = api__py_strz("gpu");
	assert_int_equal(api__py_contains(b, c, &in), 0);
	assert_true(in);
	assert_int_equal(api__py_contains(b, a->items[0], &in), ERR_INVALID);
	assert_int_equal(api__py_contains(a->items[0], c, &in), ERR_INVALID);
	assert_true(api__py_truthy(a->items[0]));
	api__py_free(a);
	assert_int_equal(api__py_loads(FALSY, strlen(FALSY), &a, &err), 0);
	for (in = 0; in < 7; in++)
		assert_false(api__py_truthy(a->items[in]));
	assert_true(api__py_truthy(b));
	api__py_free(a);
	api__py_free(b);
	api__py_free(c);
	buf_release(&err);
}

static int build_err(const char *hps, const char *rc, const char *needle)
{
	struct api_sm_env_input in;
	struct api_kv *env = (struct api_kv *)&in;
	size_t n = 1;
	char **argv = (char **)&in;
	struct buf err = BUF_INIT;
	int ret;

	memset(&in, 0, sizeof(in));
	in.hyperparameters_json = hps;
	in.resource_config_json = rc;
	ret = api_sm_env_build(&in, &env, &n, &argv, &err);
	if (ret) {
		assert_null(env);
		assert_int_equal(n, 0);
		assert_null(argv);
		if (!strstr(err.data, needle))
			fail_msg("error '%s' does not mention '%s'", err.data,
				 needle);
	} else {
		api_sm_env_release(env, n, argv);
	}
	buf_release(&err);
	return ret;
}

#define RC1 "{\"current_host\":\"algo-1\",\"hosts\":[\"algo-1\"]}"

static void test_refused(void **state)
{
	(void)state;
	assert_int_equal(build_err("{}", NULL, "resourceconfig"), ERR_INVALID);
	assert_int_equal(build_err("{}", "{\"current_host\":\"a\"}", "hosts"),
			 ERR_INVALID);
	assert_int_equal(build_err("{}", "{\"hosts\":[\"a\"]}", "current_host"),
			 ERR_INVALID);
	assert_int_equal(build_err("{}",
				   "{\"current_host\":\"a\",\"hosts\":[]}",
				   "empty"),
			 ERR_INVALID);
	assert_int_equal(build_err("[]", RC1, "hyperparameters.json"),
			 ERR_INVALID);
	assert_int_equal(build_err("{", RC1, "hyperparameters.json"),
			 ERR_INVALID);
	assert_int_equal(build_err("{}", "{\"current_host\":1,\"hosts\":[1]}",
				   "current_host"),
			 ERR_INVALID);
	/* os.environ refuses these, so TK fails the job. */
	assert_int_equal(build_err("{\"a=b\":\"1\"}", RC1, "illegal"),
			 ERR_INVALID);
	assert_int_equal(build_err("{\"a\":\"\\\"x\\\\u0000y\\\"\"}", RC1,
				   "SM_HP_A"),
			 ERR_INVALID);
	assert_int_equal(build_err("{\"a\":\"\\\"\\\\ud800\\\"\"}", RC1,
				   "SM_HP_A"),
			 ERR_INVALID);
	assert_int_equal(build_err("{\"sagemaker_job_name\":\"5\"}", RC1,
				   "sagemaker_job_name"),
			 ERR_INVALID);
	assert_int_equal(
		build_err("{\"sagemaker_distribution_instance_groups\":"
			  "\"3\",\"x\":\"1\"}",
			  "{\"current_host\":\"a\",\"hosts\":[\"a\"],"
			  "\"instance_groups\":[{\"instance_group_"
			  "name\":\"g\",\"hosts\":[\"a\"]}]}",
			  "sagemaker_distribution_instance_groups"),
		ERR_INVALID);
	assert_int_equal(build_err("{}",
				   "{\"current_host\":\"a\",\"hosts\":[\"a\"],"
				   "\"instance_groups\":null}",
				   "instance_groups"),
			 ERR_INVALID);
	/* surrogateescape: U+DC80..U+DCFF are raw bytes, not an error. */
	assert_int_equal(build_err("{\"a\":\"\\\"\\\\udcff\\\"\"}", RC1, ""),
			 0);
}

static void test_deep_hp(void **state)
{
	struct buf hps = BUF_INIT;
	int i;

	(void)state;
	(void)buf_adds(&hps, "{\"a\":\"");
	for (i = 0; i < 600; i++)
		(void)buf_addch(&hps, '[');
	(void)buf_adds(&hps, "\"}");
	/* json.loads would raise RecursionError, which TK does not catch. */
	assert_int_equal(build_err(hps.data, RC1, "nested"), ERR_INVALID);
	buf_release(&hps);
}

static void test_user_args_helper(void **state)
{
	char **argv;
	struct buf err = BUF_INIT;

	(void)state;
	assert_int_equal(api_sm_user_args("{\"b\":\"[1, 2]\",\"a\":"
					  "\"{\\\"y\\\": 1, \\\"x\\\": "
					  "\\\"s\\\"}\",\"sagemaker_x\":\"1\","
					  "\"\":\"null\",\"\\u00e9\":\"0\"}",
					  &argv, &err),
			 0);
	assert_string_equal(argv[0], "");
	assert_string_equal(argv[1], "");
	assert_string_equal(argv[2], "-a");
	assert_string_equal(argv[3], "x=s,y=1");
	assert_string_equal(argv[4], "-b");
	assert_string_equal(argv[5], "[1, 2]");
	assert_string_equal(argv[6], "-\xc3\xa9");
	assert_string_equal(argv[7], "0");
	assert_null(argv[8]);
	api_sm_argv_free(argv);
	assert_int_equal(api_sm_user_args("not json", &argv, &err),
			 ERR_INVALID);
	assert_null(argv);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_host),
		cmocka_unit_test(test_three_hosts),
		cmocka_unit_test(test_hp_types),
		cmocka_unit_test(test_channel_names),
		cmocka_unit_test(test_hetero_master),
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_known_values),
		cmocka_unit_test(test_float_repr),
		cmocka_unit_test(test_py_json),
		cmocka_unit_test(test_py_compare),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_deep_hp),
		cmocka_unit_test(test_user_args_helper),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
