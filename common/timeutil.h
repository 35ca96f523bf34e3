#ifndef COMMON_TIMEUTIL_H
#define COMMON_TIMEUTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Wall-clock time in milliseconds since the epoch. */
int64_t time_now_ms(void);

/*
 * Wall-clock milliseconds as the kernel stamps files: never later than the
 * mtime of a file written after the call (time_now_ms() can be a few ms
 * ahead of it).
 */
int64_t time_file_ms(void);

/* Monotonic time in milliseconds (for deadlines and durations). */
int64_t time_mono_ms(void);

/* Monotonic time in microseconds (for latency measurements). */
int64_t time_mono_us(void);

/*
 * Initializes cond so that its timed waits run on CLOCK_MONOTONIC: a step
 * of the wall clock neither stretches nor cuts them. Returns 0 or pthread's
 * error number.
 */
int time_cond_init_mono(pthread_cond_t *cond);

/* The CLOCK_MONOTONIC time ms from now, for a timed wait on such a cond. */
void time_mono_deadline(struct timespec *ts, int64_t ms);

/*
 * Writes ms (epoch milliseconds) as "2025-01-31T12:00:00.123Z" into out.
 * Returns out; out is always NUL-terminated when size > 0.
 */
char *time_format_iso(int64_t ms, char *out, size_t size);

#endif
