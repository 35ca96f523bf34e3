#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("trainctl: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_strv_push(struct cli_strv *sv, const char *s)
{
	ALLOC_GROW(sv->v, sv->n + 1, sv->alloc);
	sv->v[sv->n++] = s;
}

void cli_strv_release(struct cli_strv *sv)
{
	free(sv->v);
	sv->v = NULL;
	sv->n = 0;
	sv->alloc = 0;
}

int cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return ERR_INVALID;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max)
		return ERR_INVALID;
	*out = v;
	return 0;
}

int cli_parse_seconds(const char *s, int64_t *ms_out)
{
	char *end;
	double v;

	if (!s || !*s)
		return ERR_INVALID;
	errno = 0;
	v = strtod(s, &end);
	/* 1e9 seconds is 31 years: anything larger is a typo. */
	if (errno || *end || end == s || !isfinite(v) || v < 0 || v > 1e9)
		return ERR_INVALID;
	*ms_out = (int64_t)(v * 1000.0 + 0.5);
	return 0;
}

/* Appends everything fd has to out. */
static int read_fd(int fd, const char *name, struct buf *out, struct buf *err)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			buf_reset(err);
			(void)buf_addf(err, "cannot read '%s': %s", name,
				       strerror(errno));
			return ERR_IO;
		}
		if (n == 0)
			return 0;
		if (buf_add(out, chunk, (size_t)n)) {
			buf_reset(err);
			(void)buf_addf(err, "'%s' is larger than %u bytes",
				       name, CLI_MAX_INPUT);
			return ERR_TOOBIG;
		}
	}
}

int cli_read_input(const char *arg, struct buf *out, struct buf *err)
{
	const char *path = arg;
	int fd, r;

	if (!strncmp(arg, "file://", 7))
		path = arg + 7;
	else if (arg[strspn(arg, " \t\r\n")] == '{')
		return buf_adds(out, arg) ? ERR_TOOBIG : 0;
	if (!strcmp(path, "-"))
		return read_fd(0, "stdin", out, err);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		buf_reset(err);
		(void)buf_addf(err, "cannot open '%s': %s", path,
			       strerror(errno));
		return ERR_IO;
	}
	r = read_fd(fd, path, out, err);
	close(fd);
	return r;
}

const char *cli_time(int64_t ms, char *out, size_t size)
{
	if (!ms) {
		snprintf(out, size, "-");
		return out;
	}
	return time_format_iso(ms, out, size);
}

void cli_print_field(const char *label, const char *value)
{
	if (value && *value)
		printf("%-17s%s\n", label, value);
}

void cli_print_time_field(const char *label, int64_t ms)
{
	char t[40];

	if (ms)
		cli_print_field(label, cli_time(ms, t, sizeof(t)));
}
