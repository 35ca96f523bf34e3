#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/bug.h"
#include "common/log.h"
#include "common/timeutil.h"

int log_level_current = LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_set_level(int level)
{
	if (level < LOG_ERROR)
		level = LOG_ERROR;
	if (level > LOG_DEBUG)
		level = LOG_DEBUG;
	log_level_current = level;
}

void log_msg(int level, const char *tag, const char *fmt, ...)
{
	char line[2048];
	char ts[32];
	va_list ap;
	int n;

	if (level < LOG_ERROR || level > LOG_DEBUG)
		level = LOG_ERROR;
	time_format_iso(time_now_ms(), ts, sizeof(ts));
	n = snprintf(line, sizeof(line), "%s %s %s: ", ts, level_names[level],
		     tag);
	if (n < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line so lines of concurrent threads do not mix. */
	fprintf(stderr, "%s\n", line);
}

void bug_fl(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "BUG: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}
