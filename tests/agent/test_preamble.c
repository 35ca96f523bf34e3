/* Tests for agent/preamble.c: the lines a script-mode host's log opens
 * with, and what they hide. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>

#include <cmocka.h>

#include "agent/preamble.h"
#include "common/strvec.h"

static int has_line(const struct strvec *l, const char *want)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], want))
			return 1;
	return 0;
}

static void test_secret_names(void **state)
{
	static const char *const secret[] = {
		"AWS_SECRET_ACCESS_KEY", "TRAINCTL_RDZV_TOKEN",
		"db-password",		 "api_key",
		"SM_HP_API_KEY",	 "key",
		"private_cert"
	};
	static const char *const plain[] = { "SM_HOSTS", "keys_dir", "keyword",
					     "epochs", "monkey" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(secret) / sizeof(*secret); i++)
		assert_true(
			agent_preamble_secret(secret[i], strlen(secret[i])));
	for (i = 0; i < sizeof(plain) / sizeof(*plain); i++)
		assert_false(agent_preamble_secret(plain[i], strlen(plain[i])));
}

static void test_build(void **state)
{
	struct strvec env = STRVEC_INIT, args = STRVEC_INIT;
	struct strvec lines = STRVEC_INIT;

	(void)state;
	strvec_push(&env, "PATH=/usr/bin");
	strvec_push(&env, "SM_HOSTS=[\"algo-1\",\"algo-2\"]");
	strvec_push(&env, "SM_CURRENT_HOST=algo-2");
	strvec_push(&env, "SM_HP_EPOCHS=3");
	strvec_push(&env, "SM_HPS={\"epochs\":3}");
	strvec_push(&env, "PYTHONPATH=/opt/ml/code");
	strvec_push(&env, "TRAINCTL_RDZV_TOKEN=abc");
	strvec_push(&env, "AWS_SECRET_ACCESS_KEY=xyz");
	strvec_push(&args, "/usr/bin/python3");
	strvec_push(&args, "train.py");
	strvec_push(&args, "--epochs");
	strvec_push(&args, "3");
	agent_preamble_build("algo-2", 2, "gpu-7", &env, &args, &lines);
	assert_string_equal(lines.v[0],
			    "Training Env: current host algo-2 of hosts "
			    "[\"algo-1\",\"algo-2\"], attempt 2, on machine "
			    "gpu-7");
	assert_string_equal(lines.v[1], "Environment variables:");
	assert_true(has_line(&lines, "SM_HP_EPOCHS=3"));
	assert_true(has_line(&lines, "SM_HPS={\"epochs\":3}"));
	assert_true(has_line(&lines, "PYTHONPATH=/opt/ml/code"));
	assert_string_equal(lines.v[lines.n - 2],
			    "Invoking script with the following command:");
	assert_string_equal(lines.v[lines.n - 1],
			    "/usr/bin/python3 train.py --epochs 3");
	/* Only SM_* and PYTHONPATH; nothing of the rest, secrets least. */
	assert_false(has_line(&lines, "PATH=/usr/bin"));
	assert_int_equal(lines.n, 2 + 5 + 2);
	strvec_release(&lines);
	strvec_release(&env);
	strvec_release(&args);
}

static void test_hidden(void **state)
{
	struct strvec env = STRVEC_INIT, args = STRVEC_INIT;
	struct strvec lines = STRVEC_INIT;
	size_t i;

	(void)state;
	strvec_push(&env, "SM_HOSTS=[\"algo-1\"]");
	strvec_push(&env, "SM_HP_API_KEY=s3cr3t");
	strvec_push(&env, "SM_HP_LR=0.1");
	strvec_push(&env, "SM_HPS={\"api_key\":\"s3cr3t\",\"lr\":0.1}");
	strvec_push(&env, "SM_USER_ARGS=[\"--api_key\",\"s3cr3t\"]");
	strvec_push(&env, "SM_TRAINING_ENV={\"hyperparameters\":{}}");
	strvec_push(&args, "/usr/bin/python3");
	strvec_push(&args, "train.py");
	strvec_push(&args, "--api_key");
	strvec_push(&args, "s3cr3t");
	strvec_push(&args, "--db-password=s3cr3t");
	strvec_push(&args, "--lr");
	strvec_push(&args, "0.1");
	agent_preamble_build("algo-1", 1, NULL, &env, &args, &lines);
	for (i = 0; i < lines.n; i++)
		assert_null(strstr(lines.v[i], "s3cr3t"));
	assert_true(has_line(&lines, "SM_HP_API_KEY=<hidden>"));
	assert_true(has_line(&lines, "SM_HP_LR=0.1"));
	assert_true(has_line(&lines, "SM_HPS=<hidden>"));
	assert_true(has_line(&lines, "SM_USER_ARGS=<hidden>"));
	assert_true(has_line(&lines, "SM_TRAINING_ENV=<hidden>"));
	assert_string_equal(lines.v[lines.n - 1],
			    "/usr/bin/python3 train.py --api_key <hidden> "
			    "--db-password=<hidden> --lr 0.1");
	strvec_release(&lines);
	strvec_release(&env);
	strvec_release(&args);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_secret_names),
		cmocka_unit_test(test_build),
		cmocka_unit_test(test_hidden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
