#ifndef COMMON_TIMEUTIL_H
#define COMMON_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Wall-clock time in milliseconds since the epoch. */
int64_t time_now_ms(void);

/* Monotonic time in milliseconds (for deadlines and durations). */
int64_t time_mono_ms(void);

/* Monotonic time in microseconds (for latency measurements). */
int64_t time_mono_us(void);

/*
 * Writes ms (epoch milliseconds) as "2025-01-31T12:00:00.123Z" into out.
 * Returns out; out is always NUL-terminated when size > 0.
 */
char *time_format_iso(int64_t ms, char *out, size_t size);

#endif
