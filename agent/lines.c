/*
 * Splitting a child's output into log lines: bounded, never blocking, and
 * always valid UTF-8 (the lines go into JSON strings).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "agent/lines.h"
#include "common/err.h"
#include "common/utf8.h"
#include "common/banned.h"

#define READ_CHUNK 65536
#define READ_BUDGET (4 * READ_CHUNK)

static const char replacement[] = "\xef\xbf\xbd";

/*
 * Length of the valid UTF-8 sequence at s (at most n bytes), or 0 when it
 * is invalid (RFC 3629) or NUL: the lines go into JSON strings.
 */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;

	if (utf8_decode(s, n, 0, &len) <= 0)
		return 0;
	return len;
}

void agent_utf8_repair(const char *s, size_t n, struct buf *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, start = 0, len;

	while (i < n) {
		len = utf8_seq(u + i, n - i);
		if (len) {
			i += len;
			continue;
		}
		(void)buf_add(out, s + start, i - start);
		(void)buf_add(out, replacement, 3);
		i++;
		start = i;
	}
	(void)buf_add(out, s + start, i - start);
}

void agent_lines_init(struct agent_lines *l, size_t max)
{
	buf_init(&l->part, 0);
	buf_init(&l->fix, 0);
	l->max = max ? max : AGENT_LINE_MAX;
}

static void emit(struct agent_lines *l, const char *s, size_t n,
		 agent_line_fn *fn, void *arg)
{
	if (n > 0 && s[n - 1] == '\r')
		n--;
	buf_reset(&l->fix);
	agent_utf8_repair(s, n, &l->fix);
	fn(arg, l->fix.data, l->fix.len);
}

/*
 * How much of a line that reached max bytes to emit: all of it, less an
 * incomplete multi-byte character at its end (that one continues on the
 * next line, whole).
 */
static size_t cut_point(const char *s, size_t len)
{
	unsigned char c;
	size_t k, need;

	for (k = 1; k <= 3 && k < len; k++) {
		c = (unsigned char)s[len - k];
		if ((c & 0xc0) == 0x80)
			continue;
		if (c < 0xc0)
			return len;
		need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		return need > k ? len - k : len;
	}
	return len;
}

void agent_lines_feed(struct agent_lines *l, const char *data, size_t n,
		      agent_line_fn *fn, void *arg)
{
	const char *nl;
	size_t take, cut;

	while (n > 0) {
		nl = memchr(data, '\n', n);
		take = nl ? (size_t)(nl - data) : n;
		if (l->part.len + take <= l->max) {
			if (!nl) {
				(void)buf_add(&l->part, data, take);
				return;
			}
			if (l->part.len) {
				(void)buf_add(&l->part, data, take);
				emit(l, l->part.data, l->part.len, fn, arg);
				buf_reset(&l->part);
			} else {
				emit(l, data, take, fn, arg);
			}
			data += take + 1;
			n -= take + 1;
			continue;
		}
		/* Too long: fill part up to max, emit it, keep the rest. */
		take = l->max - l->part.len;
		(void)buf_add(&l->part, data, take);
		data += take;
		n -= take;
		cut = cut_point(l->part.data, l->part.len);
		emit(l, l->part.data, cut, fn, arg);
		memmove(l->part.data, l->part.data + cut, l->part.len - cut);
		l->part.len -= cut;
		l->part.data[l->part.len] = '\0';
	}
}

void agent_lines_flush(struct agent_lines *l, agent_line_fn *fn, void *arg)
{
	if (l->part.len)
		emit(l, l->part.data, l->part.len, fn, arg);
	buf_reset(&l->part);
}

int agent_lines_read(struct agent_lines *l, int fd, agent_line_fn *fn,
		     void *arg)
{
	char chunk[READ_CHUNK];
	size_t total = 0;
	ssize_t n;

	while (total < READ_BUDGET) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return ERR_IO;
		if (n == 0) {
			agent_lines_flush(l, fn, arg);
			return 1;
		}
		agent_lines_feed(l, chunk, (size_t)n, fn, arg);
		total += (size_t)n;
	}
	return 0;
}

void agent_lines_release(struct agent_lines *l)
{
	buf_release(&l->part);
	buf_release(&l->fix);
}
