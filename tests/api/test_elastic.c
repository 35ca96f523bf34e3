/*
 * Tests the elastic tag of a CreateTrainingJob request (api/elastic.c):
 * the minimum read into the spec, the values and shapes refused with a
 * message naming the tag, another trainctl: key refused, and the minimum
 * read back from a stored body.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "api/elastic.h"
#include "api/job_spec.h"
#include "common/buf.h"
#include "common/err.h"
#include "tests/api/job_spec_fixture.h"

/* The full request with InstanceCount 3 and the tag set to value. */
static json_t *with_tag(const char *key, const char *value)
{
	json_t *req = load_full();
	json_t *tags = json_array();

	json_object_set_new(obj(req, "ResourceConfig"), "InstanceCount",
			    json_integer(3));
	json_array_append_new(tags, json_pack("{s:s, s:s}", "Key", key, "Value",
					      value));
	json_object_set_new(req, "Tags", tags);
	return req;
}

static void test_min_read(void **state)
{
	static const struct {
		const char *value;
		int min;
	} ok[] = { { "1", 1 }, { "2", 2 }, { "3", 3 } };
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(
			parse_json(with_tag(API_ELASTIC_TAG, ok[i].value),
				   &spec, &err),
			0);
		assert_int_equal(spec.min_instances, ok[i].min);
		api_job_spec_release(&spec);
	}
	/* Without the tag: not elastic. */
	assert_int_equal(parse_json(load_full(), &spec, &err), 0);
	assert_int_equal(spec.min_instances, 0);
	api_job_spec_release(&spec);
	buf_release(&err);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"0", "4", "-1", "two", "", "2.5", " 2", "99999999999999999999"
	};
	json_t *req;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_INVALID(with_tag(API_ELASTIC_TAG, bad[i]),
			       API_ELASTIC_TAG, "integer from 1");
	EXPECT_INVALID(with_tag("trainctl:other", "2"), "trainctl:other",
		       "reserved");
	req = with_tag(API_ELASTIC_TAG, "2");
	json_object_set_new(obj(req, "HyperParameters"),
			    "sagemaker_mpi_enabled", json_string("true"));
	EXPECT_INVALID(req, API_ELASTIC_TAG, "cannot change");
}

static void test_min_of_request(void **state)
{
	(void)state;
	assert_int_equal(api_elastic_min_of_request(NULL), 0);
	assert_int_equal(api_elastic_min_of_request("{}"), 0);
	assert_int_equal(api_elastic_min_of_request("not json"), 0);
	assert_int_equal(api_elastic_min_of_request(
				 "{\"Tags\":[{\"Key\":\"a\",\"Value\":\"b\"},"
				 "{\"Key\":\"trainctl:min-instance-count\","
				 "\"Value\":\"2\"}]}"),
			 2);
	assert_true(api_elastic_reserved_key("trainctl:x"));
	assert_false(api_elastic_reserved_key("trainctlx"));
	assert_false(api_elastic_reserved_key(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_min_read),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_min_of_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
