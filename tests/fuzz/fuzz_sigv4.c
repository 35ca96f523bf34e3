/*
 * libFuzzer harness for SigV4 verification: the input is read as an HTTP
 * request ("METHOD URI", header lines, a blank line, the body), exactly the
 * parts of a request an attacker controls.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/sigv4.h"
#include "common/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADERS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char creds_text[] =
		"[default]\naws_access_key_id = AKIDEXAMPLE\n"
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n";
	struct api_credentials creds = { 0 };
	struct api_header headers[MAX_HEADERS];
	struct api_sigv4_request req = { 0 };
	struct buf err = BUF_INIT;
	const char *type = NULL;
	char *text = malloc(size + 1);
	char *line;
	char *next;
	char *sp;
	size_t n = 0;
	int status = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (api_credentials_parse(creds_text, &creds, &err))
		abort();
	line = text;
	next = strchr(line, '\n');
	if (next)
		*next++ = '\0';
	sp = strchr(line, ' ');
	req.method = line;
	req.raw_uri = "/";
	if (sp) {
		*sp = '\0';
		req.raw_uri = sp + 1;
	}
	while (next && *next && *next != '\n' && n < MAX_HEADERS) {
		char *colon;

		line = next;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		headers[n].name = line;
		headers[n].value = colon + 1 + (colon[1] == ' ');
		n++;
	}
	if (next && *next == '\n')
		next++;
	req.headers = headers;
	req.n_headers = n;
	req.body = next ? next : "";
	req.body_len = next ? strlen(next) : 0;
	(void)api_sigv4_verify(&req, &creds, "sagemaker", 1440938160000LL,
			       &type, &status, &err);
	api_credentials_release(&creds);
	buf_release(&err);
	free(text);
	return 0;
}
