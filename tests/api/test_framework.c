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

#include "api/agent_proto.h"
#include "api/framework.h"
#include "common/buf.h"
#include "common/err.h"

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
	check(ECR "pytorch-training:1.5.0-cpu-py3", "PyTorch", "torch", "1.5.0",
	      "py3");
	check(ECR
	      "pytorch-training:1.13.1-gpu-py39-cu117-ubuntu20.04-sagemaker",
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

/* A script-mode assignment on the wire, with and without "framework". */
static const char work_fmt[] =
	"{\"version\": 1, \"assignments\": [{\"job\": \"j\", \"attempt\": 1, "
	"\"action\": \"run\", \"job_arn\": \"arn:aws:sagemaker:us-east-1:"
	"000000000000:training-job/j\", \"algo\": \"algo-1\", "
	"\"host_index\": 0, \"hosts\": [\"algo-1\"], \"addresses\": "
	"{\"algo-1\": \"127.0.0.1\"}, \"instance_type\": \"ml.m5.large\", "
	"\"hyperparameters\": {}, \"input_data_config\": {}, "
	"\"resource_config\": {\"current_host\": \"algo-1\", \"hosts\": "
	"[\"algo-1\"]}, \"channels\": [], \"environment\": {}, "
	"\"launch\": {\"mode\": \"script\", \"runtime\": "
	"\"/usr/bin/python3\", \"program\": \"train.py\"%s}, "
	"\"output_path\": \"s3://b/out\", \"storage\": {\"blob_url\": "
	"\"http://127.0.0.1:8080/v1/blobs\"}, \"rendezvous\": "
	"{\"master_addr\": \"127.0.0.1\", \"master_port\": 29500}, "
	"\"processes_per_host\": 1, \"grace_ms\": 1000}]}";

static void parse_work(const char *framework, struct api_work *w, int want)
{
	struct buf text = BUF_INIT, err = BUF_INIT;

	(void)buf_addf(&text, work_fmt, framework);
	assert_int_equal(api_work_parse(text.data, text.len, w, &err), want);
	buf_release(&text);
	buf_release(&err);
}

static void test_work_wire(void **state)
{
	struct api_work w, again;
	struct buf out = BUF_INIT;
	const struct api_framework *f;

	(void)state;
	parse_work(", \"framework\": {\"name\": \"PyTorch\", \"dist\": "
		   "\"torch\", \"version\": \"1.5.0\", \"python\": \"py3\", "
		   "\"strict\": true}",
		   &w, 0);
	f = &w.items[0].framework;
	assert_string_equal(f->name, "PyTorch");
	assert_string_equal(f->dist, "torch");
	assert_string_equal(f->version, "1.5.0");
	assert_string_equal(f->python, "py3");
	assert_true(f->strict);
	assert_int_equal(api_work_build(&w, &out), 0);
	assert_int_equal(api_work_parse(out.data, out.len, &again, NULL), 0);
	assert_string_equal(again.items[0].framework.version, "1.5.0");
	assert_true(again.items[0].framework.strict);
	api_work_release(&again);
	api_work_release(&w);
	buf_reset(&out);

	/* Absent (an older controller): nothing asked; null version. */
	parse_work("", &w, 0);
	assert_null(w.items[0].framework.name);
	assert_false(w.items[0].framework.strict);
	assert_int_equal(api_work_build(&w, &out), 0);
	assert_null(strstr(out.data, "framework"));
	api_work_release(&w);
	parse_work(", \"framework\": {\"name\": \"PyTorch\", \"dist\": "
		   "\"torch\", \"version\": null, \"python\": null}",
		   &w, 0);
	assert_null(w.items[0].framework.version);
	assert_false(w.items[0].framework.strict);
	api_work_release(&w);
	parse_work(", \"framework\": {\"strict\": 1}", &w, ERR_INVALID);
	parse_work(", \"framework\": \"torch\"", &w, ERR_INVALID);
	buf_release(&out);
}

static const char status_fmt[] =
	"{\"boot_id\": \"b\", \"assignments\": [{\"job\": \"j\", "
	"\"attempt\": 1, \"algo\": \"algo-1\", \"phase\": \"running\", "
	"\"started_ms\": 1, \"processes\": [], \"failure\": null, "
	"\"error\": null%s}]}";

static void test_status_wire(void **state)
{
	struct api_status st;
	struct buf text = BUF_INIT, out = BUF_INIT;

	(void)state;
	(void)buf_addf(&text, status_fmt,
		       ", \"runtime\": \"Script mode runs Python 3.11.2.\"");
	assert_int_equal(api_status_parse(text.data, text.len, &st, NULL), 0);
	assert_string_equal(st.items[0].runtime,
			    "Script mode runs Python 3.11.2.");
	assert_int_equal(api_status_build(&st, &out), 0);
	assert_non_null(strstr(out.data, "\"runtime\":\"Script mode runs "
					 "Python 3.11.2.\""));
	api_status_release(&st);
	buf_reset(&text);
	buf_reset(&out);
	(void)buf_addf(&text, status_fmt, "");
	assert_int_equal(api_status_parse(text.data, text.len, &st, NULL), 0);
	assert_null(st.items[0].runtime);
	assert_int_equal(api_status_build(&st, &out), 0);
	assert_null(strstr(out.data, "runtime"));
	api_status_release(&st);
	buf_release(&text);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_image),
		cmocka_unit_test(test_version_ok),
		cmocka_unit_test(test_python_ok),
		cmocka_unit_test(test_work_wire),
		cmocka_unit_test(test_status_wire),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
