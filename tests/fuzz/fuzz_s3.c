/*
 * libFuzzer harness for the embedded store's S3 face (storage/s3d/):
 * the input is read as an HTTP request ("METHOD URI", header lines, a
 * blank line, the body) and driven through begin, data (in pieces of 7
 * bytes, as a slow client sends them) and finish against a store in a
 * temp folder, with a bucket "fuzz-bucket" that holds one object. What
 * is checked: no crash, no leak, no write outside the folder, and every
 * reply is a status with either a body or a file.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/s3d/s3d.h"
#include "common/buf.h"
#include "common/fsutil.h"
#include "tests/fuzz/fuzz_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64], uploads[96];

static void teardown(void)
{
	(void)fs_remove_tree(root);
}

static void setup(void)
{
	char p[160];
	FILE *f;

	snprintf(root, sizeof(root), "/tmp/fuzz-s3-XXXXXX");
	if (!mkdtemp(root))
		abort();
	atexit(teardown);
	snprintf(uploads, sizeof(uploads), "%s/.uploads", root);
	snprintf(p, sizeof(p), "%s/fuzz-bucket", root);
	if (mkdir(uploads, 0700) || mkdir(p, 0755))
		abort();
	snprintf(p, sizeof(p), "%s/fuzz-bucket/obj", root);
	f = fopen(p, "w");
	if (!f)
		abort();
	fputs("0123456789", f);
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3d_env env = { 0 };
	struct s3d_req req = { 0 };
	struct fuzz_req fr;
	struct s3d_reply reply;
	struct s3d *s;
	char *text = malloc(size + 1);
	size_t off, len;

	if (!text)
		return 0;
	if (!root[0])
		setup();
	memcpy(text, data, size);
	text[size] = '\0';
	fuzz_req_parse(text, &fr);
	req.method = fr.method;
	req.raw_uri = fr.uri;
	env.root = root;
	env.uploads = uploads;
	env.region = "us-east-1";
	env.domain = "s3.fuzz";
	env.max_object = 1 << 20;
	req.headers = fr.headers;
	req.n_headers = fr.n_headers;
	req.now_ms = 1440938160000LL;
	req.request_id = "fuzz";
	(void)s3d_claims(&env, &req);
	s = s3d_begin(&env, &req);
	len = strlen(fr.body);
	for (off = 0; off < len; off += 7)
		s3d_data(s, fr.body + off, len - off < 7 ? len - off : 7);
	s3d_finish(s, &reply);
	if (reply.status < 200 || reply.status > 599)
		abort();
	s3d_reply_release(&reply);
	s3d_free(s);
	free(text);
	return 0;
}
