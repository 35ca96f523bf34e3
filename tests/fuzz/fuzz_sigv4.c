/*
 * libFuzzer harness for SigV4 verification, under the API's rules and
 * S3's: the input is read as an HTTP request (tests/fuzz/fuzz_req.h),
 * exactly the parts of a request an attacker controls.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/sigv4.h"
#include "common/buf.h"
#include "tests/fuzz/fuzz_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char creds_text[] =
		"[default]\naws_access_key_id = AKIDEXAMPLE\n"
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n";
	struct api_credentials creds = { 0 };
	struct fuzz_req fr;
	struct api_sigv4_s3 s3;
	struct api_sigv4_request req = { 0 };
	struct buf err = BUF_INIT;
	const char *type = NULL;
	char *text = malloc(size + 1);
	int status = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (api_credentials_parse(creds_text, &creds, &err))
		abort();
	fuzz_req_parse(text, &fr);
	req.method = fr.method;
	req.raw_uri = fr.uri;
	req.headers = fr.headers;
	req.n_headers = fr.n_headers;
	req.body = fr.body;
	req.body_len = strlen(fr.body);
	(void)api_sigv4_verify(&req, &creds, "sagemaker", 1440938160000LL,
			       &type, &status, &err);
	/* S3's rules: the path as sent, x-amz-content-sha256 as given. */
	(void)api_sigv4_verify_s3(&req, &creds, 1440938160000LL, &s3, &type,
				  &status, &err, NULL);
	api_credentials_release(&creds);
	buf_release(&err);
	free(text);
	return 0;
}
