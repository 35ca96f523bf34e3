#ifndef COMMON_BUG_H
#define COMMON_BUG_H

/*
 * BUG() reports a programmer mistake with file and line and aborts. Never use
 * it for bad input: that gets an error code and a message instead.
 */
#define BUG(...) bug_fl(__FILE__, __LINE__, __VA_ARGS__)

_Noreturn void bug_fl(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
