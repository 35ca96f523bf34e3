/*
 * What test_job_spec.c and test_job_spec_members.c share: the full
 * request fixture and the checks of a parse.
 */
#ifndef TESTS_API_JOB_SPEC_FIXTURE_H
#define TESTS_API_JOB_SPEC_FIXTURE_H

#define FULL_REQUEST "tests/api/data/spec/create_full.json"

static __attribute__((unused)) json_t *load_full(void)
{
	json_error_t jerr;
	json_t *root = json_load_file(FULL_REQUEST, 0, &jerr);

	if (!root)
		fail_msg("%s: %s (run from the top of the tree)", FULL_REQUEST,
			 jerr.text);
	return root;
}

/* Serializes req (consuming the reference) and parses it as a request. */
static __attribute__((unused)) int
parse_json(json_t *req, struct api_job_spec *spec, struct buf *err)
{
	char *text = json_dumps(req, JSON_COMPACT);
	int ret;

	json_decref(req);
	assert_non_null(text);
	ret = api_job_spec_parse(text, strlen(text), spec, err);
	free(text);
	return ret;
}

static __attribute__((unused)) int contains_ci(const char *hay,
					       const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++)
		if (!strncasecmp(hay, needle, n))
			return 1;
	return 0;
}

/* The spec of a failed parse is empty. */
static __attribute__((unused)) void
assert_spec_empty(const struct api_job_spec *spec)
{
	static const struct api_job_spec zero;

	assert_memory_equal(spec, &zero, sizeof(zero));
}

/* req must be rejected with a message mentioning every one of words. */
static __attribute__((unused)) void expect_invalid(json_t *req,
						   const char *const *words)
{
	struct api_job_spec spec;
	struct buf err = BUF_INIT;
	int ret = parse_json(req, &spec, &err);

	if (ret != ERR_INVALID)
		fail_msg("expected ERR_INVALID, got %d (%s)", ret, err.data);
	assert_spec_empty(&spec);
	for (; *words; words++)
		if (!contains_ci(err.data, *words))
			fail_msg("message '%s' does not name '%s'", err.data,
				 *words);
	buf_release(&err);
}

#define EXPECT_INVALID(req, ...)                                           \
	do {                                                               \
		static const char *const words_[] = { __VA_ARGS__, NULL }; \
		expect_invalid((req), words_);                             \
	} while (0)

static __attribute__((unused)) json_t *obj(json_t *root, const char *key)
{
	json_t *v = json_object_get(root, key);

	assert_non_null(v);
	return v;
}

#endif
