#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/err.h"
#include "common/spawn.h"
#include "common/timeutil.h"
#include "common/banned.h"

extern char **environ;

static void keep(struct buf *b, const char *data, size_t n, size_t max)
{
	if (b->len < max)
		(void)buf_add(b, data, n < max - b->len ? n : max - b->len);
}

/* Reads the two pipes until both are closed or the deadline passes. */
static int drain(int fds[2], int64_t deadline, size_t max,
		 struct spawn_result *res)
{
	char chunk[8192];

	while (fds[0] >= 0 || fds[1] >= 0) {
		struct pollfd p[2] = { { fds[0], POLLIN, 0 },
				       { fds[1], POLLIN, 0 } };
		int wait_ms = -1, i, n;

		if (deadline) {
			int64_t left = deadline - time_mono_ms();

			if (left <= 0)
				return -1;
			wait_ms = left > 1000 ? 1000 : (int)left;
		}
		n = poll(p, 2, wait_ms);
		if (n < 0 && errno != EINTR)
			return -1;
		for (i = 0; i < 2 && n > 0; i++) {
			ssize_t r;

			if (fds[i] < 0 || !p[i].revents)
				continue;
			r = read(fds[i], chunk, sizeof(chunk));
			if (r > 0) {
				keep(i ? &res->err : &res->out, chunk,
				     (size_t)r, max);
			} else if (r == 0 ||
				   (errno != EINTR && errno != EAGAIN)) {
				close(fds[i]);
				fds[i] = -1;
			}
		}
	}
	return 0;
}

int spawn_capture(char *const argv[], char *const envp[], int64_t timeout_ms,
		  size_t max_out, struct spawn_result *res)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, fds[2];
	int64_t deadline = timeout_ms > 0 ? time_mono_ms() + timeout_ms : 0;
	pid_t pid;
	int rc, i;

	res->status = 0;
	res->timed_out = 0;
	if (pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		(void)buf_addf(&res->err, "pipe: %s", strerror(errno));
		for (i = 0; i < 2; i++) {
			if (out[i] >= 0)
				close(out[i]);
			if (errp[i] >= 0)
				close(errp[i]);
		}
		return ERR_IO;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
					 O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, errp[1], STDERR_FILENO);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attr, 0);
	rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv,
			  envp ? envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(out[1]);
	close(errp[1]);
	if (rc) {
		close(out[0]);
		close(errp[0]);
		(void)buf_addf(&res->err, "cannot run %s: %s", argv[0],
			       strerror(rc));
		return ERR_IO;
	}
	fds[0] = out[0];
	fds[1] = errp[0];
	if (drain(fds, deadline, max_out, res)) {
		res->timed_out = 1;
		(void)kill(-pid, SIGKILL);
	}
	for (i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	/* Whatever it left running in its group ends with it, while the
	 * unreaped leader keeps the group's ID from being reused. */
	{
		siginfo_t si;

		while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) &&
		       errno == EINTR)
			;
	}
	(void)kill(-pid, SIGKILL);
	while (waitpid(pid, &res->status, 0) < 0 && errno == EINTR)
		;
	return 0;
}

int spawn_ok(const struct spawn_result *res)
{
	return !res->timed_out && WIFEXITED(res->status) &&
	       WEXITSTATUS(res->status) == 0;
}

static int last_line(const struct buf *b, struct buf *out)
{
	size_t end = b->len, start;

	while (end && (b->data[end - 1] == '\n' || b->data[end - 1] == '\r' ||
		       b->data[end - 1] == ' '))
		end--;
	if (!end)
		return 0;
	start = end;
	while (start && b->data[start - 1] != '\n')
		start--;
	(void)buf_add(out, b->data + start, end - start);
	return 1;
}

void spawn_last_line(const struct spawn_result *res, struct buf *out)
{
	if (!last_line(&res->err, out) && !last_line(&res->out, out))
		(void)buf_adds(out, res->timed_out ? "timed out" : "no output");
}

void spawn_result_release(struct spawn_result *res)
{
	buf_release(&res->out);
	buf_release(&res->err);
}
