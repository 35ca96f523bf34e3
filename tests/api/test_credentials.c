/*
 * The AWS shared credentials file as trainctld reads it
 * (api_credentials_parse): profiles, users with their roles and S3
 * prefixes, and the refusals of malformed files, each naming the line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/sigv4.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/xalloc.h"

static void test_credentials_two_profiles(void **state)
{
	struct api_credentials c;
	struct buf err = BUF_INIT;
	struct buf text = BUF_INIT;
	int i;

	(void)state;
	assert_int_equal(buf_adds(&text, "# AWS shared credentials\n"
					 "\n"
					 "; another comment\n"
					 "[default]\n"
					 "aws_access_key_id = AKIDONE\n"
					 "   \n"
					 "aws_secret_access_key=secret/one+x\n"
					 "region = us-west-2\n"
					 "aws_session_token = "),
			 0);
	/* Longer than libinih's line buffer: ignored, and lines still count. */
	for (i = 0; i < 1000; i++)
		assert_int_equal(buf_addch(&text, 'T'), 0);
	assert_int_equal(buf_adds(&text,
				  "\n"
				  "\n"
				  "[ci]\r\n"
				  "AWS_ACCESS_KEY_ID: AKIDTWO\r\n"
				  "aws_secret_access_key = s2 ; note\r\n"),
			 0);
	assert_int_equal(api_credentials_parse(text.data, &c, &err), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.items[0].profile, "default");
	assert_string_equal(c.items[0].access_key_id, "AKIDONE");
	assert_string_equal(c.items[0].secret_access_key, "secret/one+x");
	assert_string_equal(c.items[1].profile, "ci");
	assert_string_equal(c.items[1].access_key_id, "AKIDTWO");
	assert_string_equal(c.items[1].secret_access_key, "s2");
	assert_string_equal(err.data, "");
	api_credentials_release(&c);
	assert_int_equal(c.n, 0);
	assert_null(c.items);
	api_credentials_release(&c); /* twice is harmless */
	/* No text is an error; no err buffer is allowed. */
	assert_int_equal(api_credentials_parse(NULL, &c, &err), ERR_INVALID);
	assert_int_equal(api_credentials_parse("[a]\naws_access_key_id = A\n"
					       "aws_secret_access_key = s\n",
					       &c, NULL),
			 0);
	api_credentials_release(&c);
	buf_release(&text);
	buf_release(&err);
}

/* trainctl_user / trainctl_role: users, roles and their defaults. */
static void test_credentials_users(void **state)
{
	static const char *const bad[][2] = {
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_role = user\n",
		  "no trainctl_user" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_role = root\n",
		  "'admin' or 'user'" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_user = al/ice\n",
		  "not a valid Unix user name" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_user = x\ntrainctl_user = y\n",
		  "given twice" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_s3_prefixes = AB/x\n",
		  "is not bucket[/prefix]" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_batch_queues = q1, q/2\n",
		  "'q/2' is not a job queue name" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_batch_queues = q1\ntrainctl_batch_queues = q2\n",
		  "'trainctl_batch_queues' given twice" },
		{ "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
		  "trainctl_user = x\n[b]\naws_access_key_id = A\n"
		  "aws_secret_access_key = s\ntrainctl_user = y\n",
		  "different users or roles" },
	};
	struct api_credentials c;
	struct buf err = BUF_INIT;
	size_t i;

	(void)state;
	assert_int_equal(
		api_credentials_parse(
			"[ops]\naws_access_key_id = A1\naws_secret_access_key = s\n"
			"[alice]\naws_access_key_id = A2\n"
			"aws_secret_access_key = s\ntrainctl_user = alice\n"
			"[lead]\naws_access_key_id = A3\n"
			"aws_secret_access_key = s\ntrainctl_user = bob\n"
			"trainctl_role = admin\n",
			&c, &err),
		0);
	assert_int_equal(c.n, 3);
	assert_null(c.items[0].user);
	assert_true(c.items[0].admin);
	assert_string_equal(c.items[1].user, "alice");
	assert_false(c.items[1].admin);
	assert_string_equal(c.items[2].user, "bob");
	assert_true(c.items[2].admin);
	assert_ptr_equal(api_credentials_find(&c, "A2"), &c.items[1]);
	assert_null(api_credentials_find(&c, "A4"));
	/* An admin reaches every key; a user without prefixes none. */
	assert_true(api_credential_s3_allowed(&c.items[0], "any/x"));
	assert_false(api_credential_s3_allowed(&c.items[1], "any/x"));
	api_credentials_release(&c);
	assert_int_equal(
		api_credentials_parse(
			"[u]\naws_access_key_id = A\naws_secret_access_key = s\n"
			"trainctl_user = u\n"
			"trainctl_s3_prefixes = s3://team-a, team-b/u/ ,team-c/x\n",
			&c, &err),
		0);
	assert_int_equal(c.items[0].n_s3_prefixes, 3);
	assert_string_equal(c.items[0].s3_prefixes[0], "team-a/");
	assert_string_equal(c.items[0].s3_prefixes[1], "team-b/u/");
	assert_string_equal(c.items[0].s3_prefixes[2], "team-c/x");
	assert_true(api_credential_s3_allowed(&c.items[0], "team-a/k"));
	assert_false(api_credential_s3_allowed(&c.items[0], "team-ab/k"));
	assert_true(api_credential_s3_allowed(&c.items[0], "team-b/u/k"));
	assert_false(api_credential_s3_allowed(&c.items[0], "team-b/v/k"));
	assert_true(api_credential_s3_allowed(&c.items[0], "team-c/xy"));
	/* Without trainctl_batch_queues: every queue. */
	assert_true(api_credential_queue_allowed(&c.items[0], "any-q"));
	api_credentials_release(&c);
	assert_int_equal(
		api_credentials_parse(
			"[u]\naws_access_key_id = A\naws_secret_access_key = s\n"
			"trainctl_user = u\ntrainctl_batch_queues = ml_a, ml-b\n"
			"[o]\naws_access_key_id = B\naws_secret_access_key = s\n"
			"trainctl_batch_queues = ml_a\n",
			&c, &err),
		0);
	assert_int_equal(c.items[0].n_batch_queues, 2);
	assert_true(api_credential_queue_allowed(&c.items[0], "ml_a"));
	assert_true(api_credential_queue_allowed(&c.items[0], "ml-b"));
	assert_false(api_credential_queue_allowed(&c.items[0], "ml"));
	assert_false(api_credential_queue_allowed(&c.items[0], NULL));
	/* An admin key submits anywhere. */
	assert_true(api_credential_queue_allowed(&c.items[1], "other"));
	api_credentials_release(&c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		assert_int_equal(api_credentials_parse(bad[i][0], &c, &err),
				 ERR_INVALID);
		if (!strstr(err.data, bad[i][1]))
			fail_msg("'%s': error '%s' lacks '%s'", bad[i][0],
				 err.data, bad[i][1]);
	}
	buf_release(&err);
}

struct cred_case {
	const char *name;
	const char *text;
	const char *want; /* substring of the error */
};

static const struct cred_case cred_cases[] = {
	{ "credentials_missing_secret",
	  "[default]\naws_access_key_id = A\naws_secret_access_key = s\n\n"
	  "[second]\naws_access_key_id = B\n",
	  "profile 'second' (line 6) has no aws_secret_access_key" },
	{ "credentials_missing_key_id",
	  "[default]\n# comment\naws_secret_access_key = s\n",
	  "profile 'default' (line 3) has no aws_access_key_id" },
	{ "credentials_outside_profile", "aws_access_key_id = A\n",
	  "line 1: 'aws_access_key_id' outside a [profile] section" },
	{ "credentials_syntax_error",
	  "[default]\naws_access_key_id = A\nthis is not ini\n"
	  "aws_secret_access_key = s\n",
	  "line 3:" },
	{ "credentials_bad_section", "[default\naws_access_key_id = A\n",
	  "line 1:" },
	{ "credentials_duplicate_key",
	  "[default]\naws_access_key_id = A\naws_access_key_id = B\n"
	  "aws_secret_access_key = s\n",
	  "line 3: 'aws_access_key_id' given twice in profile 'default'" },
	{ "credentials_duplicate_profile",
	  "[a]\naws_access_key_id = A\naws_secret_access_key = s\n"
	  "[b]\naws_access_key_id = B\naws_secret_access_key = s\n"
	  "[a]\nregion = x\naws_access_key_id = C\n",
	  "line 9: profile 'a' appears more than once" },
	{ "credentials_empty_value",
	  "[default]\naws_access_key_id =\naws_secret_access_key = s\n",
	  "line 2:" },
	{ "credentials_bad_key_chars",
	  "[default]\naws_access_key_id = A/B\naws_secret_access_key = s\n",
	  "line 2:" },
	{ "credentials_conflicting_secrets",
	  "[a]\naws_access_key_id = A\naws_secret_access_key = s1\n"
	  "[b]\naws_access_key_id = A\naws_secret_access_key = s2\n",
	  "profiles 'a' and 'b'" },
	{ "credentials_empty", "", "no profile" },
	{ "credentials_only_comments", "# nothing\n; here\n\n", "no profile" },
	{ "credentials_key_line_too_long",
	  "[default]\naws_access_key_id = "
	  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	  "\naws_secret_access_key = s\n",
	  "line 2: value of 'aws_access_key_id' in profile 'default' is too "
	  "long" },
};

static void test_cred_case(void **state)
{
	const struct cred_case *c = *state;
	struct api_credentials creds;
	struct buf err = BUF_INIT;

	assert_int_equal(api_credentials_parse(c->text, &creds, &err),
			 ERR_INVALID);
	assert_int_equal(creds.n, 0);
	assert_null(creds.items);
	if (!strstr(err.data, c->want))
		print_message("# got '%s'\n", err.data);
	assert_non_null(strstr(err.data, c->want));
	api_credentials_release(&creds);
	buf_release(&err);
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_credentials_two_profiles),
		cmocka_unit_test(test_credentials_users),
	};
	struct CMUnitTest *tests;
	size_t n = 0, i;
	int rc;

	tests = xcalloc(ARRAY_SIZE(fixed) + ARRAY_SIZE(cred_cases),
			sizeof(*tests));
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		tests[n++] = fixed[i];
	for (i = 0; i < ARRAY_SIZE(cred_cases); i++) {
		tests[n].name = cred_cases[i].name;
		tests[n].test_func = test_cred_case;
		tests[n].initial_state = (void *)&cred_cases[i];
		n++;
	}
	rc = _cmocka_run_group_tests("credentials", tests, n, NULL, NULL);
	free(tests);
	return rc;
}
