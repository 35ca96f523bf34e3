#ifndef AGENT_LINES_H
#define AGENT_LINES_H

#include <stddef.h>

#include "common/buf.h"

/*
 * Line splitting for a child's output: lines end at '\n'; a line that
 * reaches max bytes without one is cut there (at a UTF-8 character
 * boundary) and the rest continues as the next line; invalid UTF-8 and NUL
 * bytes become U+FFFD, so every line is valid JSON string material.
 */
#define AGENT_LINE_MAX (64 * 1024)

typedef void agent_line_fn(void *arg, const char *line, size_t len);

struct agent_lines {
	struct buf part; /* bytes after the last newline */
	struct buf fix;	 /* scratch for the repaired line */
	size_t max;
};

void agent_lines_init(struct agent_lines *l, size_t max);

/* Feeds n bytes; calls fn once per complete line (without the '\n'). */
void agent_lines_feed(struct agent_lines *l, const char *data, size_t n,
		      agent_line_fn *fn, void *arg);

/* End of stream: a partial last line, if any, goes to fn. */
void agent_lines_flush(struct agent_lines *l, agent_line_fn *fn, void *arg);

/*
 * Reads what fd has now (it must be non-blocking), at most about 256 KiB
 * per call so one chatty child cannot starve the others, and feeds it.
 * Returns 1 at end of file (after flushing), 0 when more may come, or
 * ERR_IO.
 */
int agent_lines_read(struct agent_lines *l, int fd, agent_line_fn *fn,
		     void *arg);

void agent_lines_release(struct agent_lines *l);

/*
 * Writes s into out as valid UTF-8: invalid sequences and NUL bytes become
 * U+FFFD (EF BF BD). Appends to out.
 */
void agent_utf8_repair(const char *s, size_t n, struct buf *out);

#endif
