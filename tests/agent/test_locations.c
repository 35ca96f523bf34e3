/*
 * Tests agent/locations.c, the check of every URI the agent stages against
 * the locations the job's owner may name: s3:// within the owner's S3
 * prefixes (the byte-prefix rule of trainctl_s3_prefixes), file:// under
 * the allowed folders once what exists is resolved (a symbolic link out of
 * a root is out), a manifest's objects in the manifest's own scheme, and an
 * assignment without locations (an older controller) allowing every one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/locations.h"
#include "api/agent_proto.h"
#include "api/sigv4.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/fsutil.h"

static char p_bob[] = "data/bob/", p_shared[] = "shared/ro";
static char *prefixes[] = { p_bob, p_shared, NULL };

static void job_of_bob(struct api_assignment *a, char **roots, size_t n)
{
	memset(a, 0, sizeof(*a));
	a->has_locations = 1;
	a->loc_s3_prefixes = prefixes;
	a->n_loc_s3_prefixes = 2;
	a->loc_file_roots = roots;
	a->n_loc_file_roots = n;
}

static int allowed(const struct api_assignment *a, const char *uri)
{
	struct buf why = BUF_INIT;
	int ret = agent_uri_allowed(a, uri, &why);

	if (ret)
		assert_true(why.len > 0);
	buf_release(&why);
	return ret == 0;
}

static void test_prefix_rule(void **state)
{
	(void)state;
	assert_true(api_s3_prefixes_allow(prefixes, 2, "data/bob/x"));
	assert_true(api_s3_prefixes_allow(prefixes, 2, "data/bob/"));
	assert_false(api_s3_prefixes_allow(prefixes, 2, "data/bob"));
	assert_false(api_s3_prefixes_allow(prefixes, 2, "data/bobby/x"));
	assert_false(api_s3_prefixes_allow(prefixes, 2, "data/alice/x"));
	assert_true(api_s3_prefixes_allow(prefixes, 2, "shared/rox"));
	assert_false(api_s3_prefixes_allow(prefixes, 0, "data/bob/x"));
}

static void test_s3(void **state)
{
	struct api_assignment a;

	(void)state;
	job_of_bob(&a, NULL, 0);
	assert_true(allowed(&a, "s3://data/bob/train/a.csv"));
	assert_false(allowed(&a, "s3://data/alice/train/a.csv"));
	assert_false(allowed(&a, "s3://data/bobby/a.csv"));
	assert_false(allowed(&a, "s3://other/bob/a.csv"));
	assert_false(allowed(&a, "s3://data/bob/../alice/a.csv"));
	a.loc_s3_any = 1;
	assert_true(allowed(&a, "s3://data/alice/train/a.csv"));
	/* No file roots and not any: file:// is refused. */
	assert_false(allowed(&a, "file:///etc/passwd"));
}

static void test_file(void **state)
{
	char top[] = "/tmp/test-locations-XXXXXX";
	char root[96], link[96], inside[128], slash[] = "/", *roots[2];
	struct api_assignment a;

	(void)state;
	assert_non_null(mkdtemp(top));
	(void)snprintf(root, sizeof(root), "%s/root", top);
	(void)snprintf(link, sizeof(link), "%s/root/out", top);
	(void)snprintf(inside, sizeof(inside), "file://%s/root/d/x.bin", top);
	assert_int_equal(fs_mkdir_p(root, 0755, NULL), 0);
	assert_int_equal(symlink("/etc", link), 0);
	roots[0] = root;
	roots[1] = NULL;
	job_of_bob(&a, roots, 1);
	assert_true(allowed(&a, inside));
	(void)snprintf(inside, sizeof(inside), "file://%s", root);
	assert_true(allowed(&a, inside));
	(void)snprintf(inside, sizeof(inside), "file://%s/root/out/passwd",
		       top);
	assert_false(allowed(&a, inside));
	(void)snprintf(inside, sizeof(inside), "file://%s/rootx/a", top);
	assert_false(allowed(&a, inside));
	assert_false(allowed(&a, "file:///etc/passwd"));
	assert_false(allowed(&a, "s3://data/alice/a"));
	assert_true(fs_path_under("/etc/passwd", roots, 0) == 0);
	roots[0] = slash;
	assert_true(fs_path_under("/etc/passwd", roots, 1));
	a.loc_file_any = 1;
	assert_true(allowed(&a, "file:///etc/passwd"));
	assert_int_equal(fs_remove_tree(top), 0);
}

static void test_manifest(void **state)
{
	struct api_assignment a;
	struct api_channel c;
	struct buf err = BUF_INIT;
	char name[] = "train", uri[] = "s3://data/bob/manifest.json";

	(void)state;
	job_of_bob(&a, NULL, 0);
	memset(&c, 0, sizeof(c));
	c.name = name;
	c.s3_uri = uri;
	assert_int_equal(
		agent_manifest_uri_check(&a, &c, "s3://data/bob/k/1", &err), 0);
	assert_int_equal(agent_manifest_uri_check(&a, &c, "s3://data/alice/k/1",
						  &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "channel 'train'"));
	assert_non_null(strstr(err.data, "s3://data/bob/manifest.json"));
	assert_non_null(strstr(err.data, "s3://data/alice/k/1"));
	/* Another scheme than the manifest's, whatever the locations. */
	a.has_locations = 0;
	buf_reset(&err);
	assert_int_equal(agent_manifest_uri_check(&a, &c, "file:///etc/passwd",
						  &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "scheme"));
	/* Without locations (an older controller) any S3 object goes. */
	assert_int_equal(agent_manifest_uri_check(&a, &c, "s3://data/alice/k/1",
						  &err),
			 0);
	buf_reset(&err);
	assert_int_equal(agent_channel_uri_check(&a, &c, "s3://any/", &err), 0);
	a.has_locations = 1;
	assert_int_equal(agent_channel_uri_check(&a, &c, "s3://data/alice/",
						 &err),
			 ERR_INVALID);
	assert_non_null(strstr(err.data, "channel 'train'"));
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix_rule),
		cmocka_unit_test(test_s3),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_manifest),
	};

	return cmocka_run_group_tests_name("agent/locations", tests, NULL,
					   NULL);
}
