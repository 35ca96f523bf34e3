#ifndef COMMON_SPAWN_H
#define COMMON_SPAWN_H

/*
 * Running a helper program (podman, skopeo) to its end and keeping what it
 * wrote, as git's capture_command() does: posix_spawn (safe in a threaded
 * program), the child in a process group of its own so that a timeout
 * kills everything it started, stdin from /dev/null, stdout and stderr
 * read through pipes and capped.
 */
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct spawn_result {
	int status;	/* wait status */
	int timed_out;	/* it ran past the timeout and was killed */
	struct buf out; /* the first max_out bytes of its stdout */
	struct buf err; /* the first max_out bytes of its stderr */
};

#define SPAWN_RESULT_INIT                \
	{                                \
		0, 0, BUF_INIT, BUF_INIT \
	}

/*
 * Runs argv (argv[0] a path, or a name searched in PATH) with envp (NULL:
 * this process's environment) and waits for it, at most timeout_ms (0:
 * no limit). Returns 0 when it ran (res says how it ended), or ERR_IO with
 * why in res->err when it could not start.
 */
int spawn_capture(char *const argv[], char *const envp[], int64_t timeout_ms,
		  size_t max_out, struct spawn_result *res);

/* 1 when the program exited with status 0. */
int spawn_ok(const struct spawn_result *res);

/*
 * The last non-empty line of what it wrote on stderr (else stdout), into
 * out: what an error message quotes.
 */
void spawn_last_line(const struct spawn_result *res, struct buf *out);

void spawn_result_release(struct spawn_result *res);

#endif
