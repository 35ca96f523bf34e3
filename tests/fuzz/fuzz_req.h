#ifndef FUZZ_REQ_H
#define FUZZ_REQ_H

/*
 * The fuzzers' request format: "METHOD URI", header lines "Name: value",
 * a blank line, the body. Parsed in place in text (NUL-terminated).
 */
#include <stddef.h>
#include <string.h>

#include "api/sigv4.h"

struct fuzz_req {
	const char *method;
	const char *uri;
	struct api_header headers[32];
	size_t n_headers;
	const char *body; /* "" when none */
};

static inline void fuzz_req_parse(char *text, struct fuzz_req *r)
{
	char *line = text, *next, *sp;

	r->n_headers = 0;
	next = strchr(line, '\n');
	if (next)
		*next++ = '\0';
	sp = strchr(line, ' ');
	r->method = line;
	r->uri = "/";
	if (sp) {
		*sp = '\0';
		r->uri = sp + 1;
	}
	while (next && *next && *next != '\n' && r->n_headers < 32) {
		char *colon;

		line = next;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		r->headers[r->n_headers].name = line;
		r->headers[r->n_headers].value = colon + 1 + (colon[1] == ' ');
		r->n_headers++;
	}
	if (next && *next == '\n')
		next++;
	r->body = next ? next : "";
}

#endif
