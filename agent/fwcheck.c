/*
 * Which Python and framework a script-mode job runs (agent/fwcheck.h).
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/fwcheck.h"
#include "agent/launch.h"
#include "agent/proc.h"
#include "agent/pyenv.h"
#include "agent/task.h"
#include "api/framework.h"
#include "common/err.h"
#include "common/strvec.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define FWCHECK_PYTHON "/usr/bin/python3"
#define FWCHECK_WAIT_MS 30000
#define FWCHECK_OUT_MAX 4096

/* Prints the Python's version, then the distribution's or "-". */
static const char probe[] =
	"import sys\n"
	"print('%d.%d.%d' % sys.version_info[:3])\n"
	"v = '-'\n"
	"try:\n"
	"    import importlib.metadata as m\n"
	"    v = m.version(sys.argv[1]) if sys.argv[1] else '-'\n"
	"except Exception:\n"
	"    pass\n"
	"print(v)\n";

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int agent_fwcheck_wanted(const struct api_assignment *s)
{
	return s->launch_mode == API_LAUNCH_SCRIPT && s->program &&
	       ends_with(s->program, ".py");
}

/* "the image asks for PyTorch 1.5.0 and py3" */
static void asked(const struct api_framework *f, struct buf *out)
{
	(void)buf_adds(out, "the image asks for ");
	if (f->name && f->version)
		(void)buf_addf(out, "%s %s", f->name, f->version);
	if (f->name && f->version && f->python)
		(void)buf_adds(out, " and ");
	if (f->python)
		(void)buf_adds(out, f->python);
}

int agent_fwcheck_say(const struct api_assignment *s, const char *path,
		      const char *python_version, const char *framework_version,
		      struct buf *out)
{
	const struct api_framework *f = &s->framework;
	int fw_ok = api_framework_version_ok(f->version, framework_version);
	int py_ok = api_framework_python_ok(f->python, python_version);

	(void)buf_addf(out, "Script mode runs Python %s", python_version);
	if (f->name)
		(void)buf_addf(out, " and %s %s", f->name,
			       framework_version ? framework_version :
						   "(not installed)");
	(void)buf_addf(out, " (%s)", path);
	if (!f->version && !f->python) {
		(void)buf_adds(out, ".");
		return 0;
	}
	if (fw_ok && py_ok) {
		(void)buf_adds(out, ", as ");
		asked(f, out);
		(void)buf_adds(out, ".");
		return 0;
	}
	(void)buf_adds(out, ", but ");
	asked(f, out);
	(void)buf_addf(out,
		       ": %s. trainctld --image-map can point the image at a "
		       "Python of your own (docs/script-mode.md).",
		       f->strict ? "refused (--framework-versions strict)" :
				   "warning, running anyway");
	return 1;
}

/* The child: stdin from /dev/null, stdout into the pipe, exec. */
static void exec_probe(char *const *argv, char *const *env, int out)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), fd;

	if (null < 0 || dup2(null, STDIN_FILENO) < 0 ||
	    dup2(out, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
		_exit(127);
	if (syscall(SYS_close_range, 3, ~0U, 0))
		for (fd = 3; fd < 1024; fd++)
			(void)close(fd);
	execve(argv[0], argv, env);
	_exit(127);
}

/* Reads the child's output until it closes or the wait is over. */
static void read_out(int fd, struct buf *out)
{
	int64_t end = time_mono_ms() + FWCHECK_WAIT_MS;
	char chunk[512];

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t left = end - time_mono_ms();
		ssize_t r;

		if (left <= 0)
			break;
		if (poll(&p, 1, (int)left) <= 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		r = read(fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (out->len < FWCHECK_OUT_MAX)
			(void)buf_add(out, chunk, (size_t)r);
	}
}

/* Runs the probe with python; fills out with its output. */
static int ask(const char *python, const char *dist, struct buf *out,
	       struct buf *err)
{
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
	int p[2], status = 0;
	pid_t pid;

	strvec_push(&argv, python);
	strvec_push(&argv, "-c");
	strvec_push(&argv, probe);
	strvec_push(&argv, dist ? dist : "");
	agent_env_set(&env, "PATH", AGENT_BASE_PATH);
	agent_env_set(&env, "LANG", "C.UTF-8");
	if (pipe2(p, O_CLOEXEC)) {
		(void)buf_addf(err, "pipe: %s", strerror(errno));
		strvec_release(&argv);
		strvec_release(&env);
		return ERR_IO;
	}
	pid = fork();
	if (pid == 0)
		exec_probe(argv.v, env.v, p[1]);
	close(p[1]);
	if (pid > 0)
		read_out(p[0], out);
	close(p[0]);
	if (pid > 0) {
		(void)kill(pid, SIGKILL); /* gone by now, or hung */
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	strvec_release(&argv);
	strvec_release(&env);
	if (pid < 0 || !strchr(out->data ? out->data : "", '\n')) {
		(void)buf_addf(err, "cannot ask %s for its version", python);
		return ERR_IO;
	}
	return 0;
}

int agent_fwcheck_run(const struct api_assignment *s, const char *dir, int fd,
		      struct buf *err)
{
	struct buf out = BUF_INIT, say = BUF_INIT;
	char *python, *fw, *nl;
	int ret, off;

	if (agent_pyenv_ready(dir)) {
		char *venv = agent_pyenv_path(dir);
		struct buf b = BUF_INIT;

		(void)buf_addf(&b, "%s/bin/python3", venv);
		python = buf_detach(&b, NULL);
		free(venv);
	} else {
		python = xstrdup(s->runtime && *s->runtime ? s->runtime :
							     FWCHECK_PYTHON);
	}
	ret = ask(python, s->framework.dist, &out, err);
	if (ret)
		goto out;
	nl = strchr(out.data, '\n');
	*nl = '\0';
	fw = nl + 1;
	fw[strcspn(fw, "\r\n")] = '\0';
	off = agent_fwcheck_say(s, python, out.data,
				strcmp(fw, "-") && *fw ? fw : NULL, &say);
	agent_task_say(fd, "note %s", say.data);
	agent_task_say(fd, "runtime %s", say.data);
	if (off && s->framework.strict) {
		(void)buf_adds(err, say.data);
		ret = ERR_INVALID;
	}
out:
	free(python);
	buf_release(&out);
	buf_release(&say);
	return ret;
}
