/*
 * Tests api/framework.c: the framework and Python versions a SageMaker
 * framework image's tag asks for, and whether a host's versions give them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/framework.h"

#define ECR "763104351884.dkr.ecr.us-east-1.amazonaws.com/"

static void check(const char *image, const char *name, const char *dist,
		  const char *version, const char *python)
{
	struct api_framework f;
	int r = api_framework_from_image(image, &f);

	assert_int_equal(r, name != NULL);
	if (name) {
		assert_string_equal(f.name, name);
		assert_string_equal(f.dist, dist);
	} else {
		assert_null(f.name);
	}
	if (version)
		assert_string_equal(f.version, version);
	else
		assert_null(f.version);
	if (python)
		assert_string_equal(f.python, python);
	else
		assert_null(f.python);
	api_framework_release(&f);
}

static void test_from_image(void **state)
{
	(void)state;
	/* The SDK's image_uris.retrieve() names. */
	check(ECR "pytorch-training:1.5.0-cpu-py3", "PyTorch", "torch",
	      "1.5.0", "py3");
	check(ECR "pytorch-training:1.13.1-gpu-py39-cu117-ubuntu20.04-sagemaker",
	      "PyTorch", "torch", "1.13.1", "py39");
	check(ECR "tensorflow-training:2.11.0-cpu-py39", "TensorFlow",
	      "tensorflow", "2.11.0", "py39");
	check(ECR "huggingface-pytorch-training:1.13.1-transformers4.26.0-"
		  "gpu-py39-cu117-ubuntu20.04",
	      "PyTorch", "torch", "1.13.1", "py39");
	check("683313688378.dkr.ecr.us-east-1.amazonaws.com/"
	      "sagemaker-scikit-learn:1.2-1-cpu-py3",
	      "scikit-learn", "scikit-learn", "1.2", "py3");
	check("683313688378.dkr.ecr.us-east-1.amazonaws.com/"
	      "sagemaker-xgboost:1.7-1",
	      "XGBoost", "xgboost", "1.7", NULL);
	check(ECR "mxnet-training:1.9.0-cpu-py38", "MXNet", "mxnet", "1.9.0",
	      "py38");
	check(ECR "pytorch-training:2.1.0-cpu-py310@sha256:abc", "PyTorch",
	      "torch", "2.1.0", "py310");
	/* No tag, a tag without a version, no framework. */
	check("pytorch-training", "PyTorch", "torch", NULL, NULL);
	check(ECR "pytorch-training:latest", "PyTorch", "torch", NULL, NULL);
	check("trainctl/python", NULL, NULL, NULL, NULL);
	check("registry:5000/pytorch:1.13", NULL, NULL, NULL, NULL);
	check("file:///usr/bin/train", NULL, NULL, NULL, NULL);
	/* "py" inside a word is not the Python tag. */
	check(ECR "pytorch-training:1.5.0-happy3", "PyTorch", "torch", "1.5.0",
	      NULL);
}

static void test_version_ok(void **state)
{
	(void)state;
	assert_true(api_framework_version_ok("1.13.1", "1.13.0a0+gitunknown"));
	assert_true(api_framework_version_ok("1.13", "1.13.1"));
	assert_true(api_framework_version_ok("1.2", "1.2.1"));
	assert_true(api_framework_version_ok("2", "2.11.0"));
	assert_true(api_framework_version_ok(NULL, NULL));
	assert_false(api_framework_version_ok("1.5.0", "1.13.1"));
	assert_false(api_framework_version_ok("1.13", "1.1"));
	assert_false(api_framework_version_ok("2.11.0", "1.11.0"));
	assert_false(api_framework_version_ok("1.5.0", NULL));
	assert_false(api_framework_version_ok("1.5", "1"));
}

static void test_python_ok(void **state)
{
	(void)state;
	assert_true(api_framework_python_ok("py3", "3.11.2"));
	assert_true(api_framework_python_ok("py311", "3.11.2"));
	assert_true(api_framework_python_ok("py39", "3.9.18"));
	assert_true(api_framework_python_ok(NULL, "3.11.2"));
	assert_true(api_framework_python_ok("python", "3.11.2"));
	assert_false(api_framework_python_ok("py39", "3.11.2"));
	assert_false(api_framework_python_ok("py310", "3.1.0"));
	assert_false(api_framework_python_ok("py2", "3.11.2"));
	assert_false(api_framework_python_ok("py3", NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_image),
		cmocka_unit_test(test_version_ok),
		cmocka_unit_test(test_python_ok),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
