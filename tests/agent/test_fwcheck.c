/*
 * Tests agent/fwcheck.c: the sentence that says which Python and
 * framework a script-mode job runs, and whether it meets the image's
 * request.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/fwcheck.h"
#include "common/buf.h"

static int say(const char *name, const char *version, const char *python,
	       int strict, const char *have_py, const char *have_fw,
	       const char *want)
{
	struct api_assignment s;
	struct buf out = BUF_INIT;
	int r;

	memset(&s, 0, sizeof(s));
	s.launch_mode = API_LAUNCH_SCRIPT;
	s.framework.name = (char *)name;
	s.framework.version = (char *)version;
	s.framework.python = (char *)python;
	s.framework.strict = strict;
	r = agent_fwcheck_say(&s, "/usr/bin/python3", have_py, have_fw, &out);
	assert_string_equal(out.data, want);
	buf_release(&out);
	return r;
}

static void test_say(void **state)
{
	(void)state;
	assert_int_equal(say(NULL, NULL, NULL, 0, "3.11.2", NULL,
			     "Script mode runs Python 3.11.2 "
			     "(/usr/bin/python3)."),
			 0);
	assert_int_equal(
		say("PyTorch", NULL, NULL, 0, "3.11.2", "1.13.1",
		    "Script mode runs Python 3.11.2 and PyTorch 1.13.1 "
		    "(/usr/bin/python3)."),
		0);
	assert_int_equal(say("PyTorch", "1.13.1", "py3", 0, "3.11.2",
			     "1.13.0a0+gitunknown",
			     "Script mode runs Python 3.11.2 and PyTorch "
			     "1.13.0a0+gitunknown (/usr/bin/python3), as the "
			     "image asks for PyTorch 1.13.1 and py3."),
			 0);
	assert_int_equal(
		say("PyTorch", "1.5.0", "py3", 0, "3.11.2", "1.13.1",
		    "Script mode runs Python 3.11.2 and PyTorch 1.13.1 "
		    "(/usr/bin/python3), but the image asks for "
		    "PyTorch 1.5.0 and py3: warning, running anyway. "
		    "trainctld --image-map can point the image at a "
		    "Python of your own (docs/script-mode.md)."),
		1);
	assert_int_equal(
		say("XGBoost", "1.7", NULL, 1, "3.11.2", NULL,
		    "Script mode runs Python 3.11.2 and XGBoost (not "
		    "installed) (/usr/bin/python3), but the image asks "
		    "for XGBoost 1.7: refused (--framework-versions "
		    "strict). trainctld --image-map can point the "
		    "image at a Python of your own "
		    "(docs/script-mode.md)."),
		1);
	/* The Python alone is off. */
	assert_int_equal(
		say("scikit-learn", "1.2", "py39", 0, "3.11.2", "1.2.1",
		    "Script mode runs Python 3.11.2 and scikit-learn "
		    "1.2.1 (/usr/bin/python3), but the image asks for "
		    "scikit-learn 1.2 and py39: warning, running "
		    "anyway. trainctld --image-map can point the image "
		    "at a Python of your own (docs/script-mode.md)."),
		1);
}

static void test_wanted(void **state)
{
	struct api_assignment s;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.launch_mode = API_LAUNCH_SCRIPT;
	s.program = (char *)"train.py";
	assert_true(agent_fwcheck_wanted(&s));
	s.program = (char *)"train.sh";
	assert_false(agent_fwcheck_wanted(&s));
	s.program = (char *)"train.py";
	s.launch_mode = API_LAUNCH_EXEC;
	assert_false(agent_fwcheck_wanted(&s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_say),
		cmocka_unit_test(test_wanted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
