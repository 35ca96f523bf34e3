#ifndef COMMON_LOG_H
#define COMMON_LOG_H

#include <stdarg.h>

/*
 * One line per event to stderr:
 *   2025-01-31T12:00:00.123Z info ctrl: job 'x' Starting -> Training
 * The level is checked before anything is formatted. Each .c file may define
 * LOG_TAG before including this header to name its module.
 */
enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

#ifndef LOG_TAG
#define LOG_TAG "trainctl"
#endif

extern int log_level_current;

void log_set_level(int level);
void log_msg(int level, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_at(lvl, ...)                                      \
	do {                                                  \
		if ((lvl) <= log_level_current)               \
			log_msg((lvl), LOG_TAG, __VA_ARGS__); \
	} while (0)
#define log_error(...) log_at(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_at(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_at(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)

#endif
