/*
 * The job's Python environment. In script mode a requirements.txt at the
 * top of the code folder is installed before a Python entry point runs,
 * as the SageMaker training toolkit does (`python -m pip install -r
 * requirements.txt` in the code folder, with the job's environment). The
 * toolkit installs into the container's own Python; on a shared host that
 * would change the host for every later job, so each assignment gets a
 * virtual environment of its own instead, in its scratch folder:
 *
 *   <runtime> -m venv --system-site-packages --without-pip <venv>
 *   <venv>/bin/python3 -m pip install -r requirements.txt
 *
 * --system-site-packages keeps what the host has (torch, numpy, ...)
 * importable, and --without-pip makes creating it cost a tenth of a second:
 * the host's pip is found through those same site packages and installs
 * into the environment (sys.prefix), never into the host. The ranks then
 * run <venv>/bin/python3 with <venv>/bin first on PATH. The environment
 * goes with the job folder.
 *
 * Both commands run in the staging worker (as the job's user, like the
 * rest of staging); their output goes into the job's log line by line.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/launch.h"
#include "agent/lines.h"
#include "agent/proc.h"
#include "agent/pyenv.h"
#include "agent/task.h"
#include "common/err.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define PYENV_REL ".trainagent/scratch/venv"
#define PYENV_LINE_MAX 4096 /* longer output lines are cut there */
#define PYENV_PYTHON "/usr/bin/python3"

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int agent_pyenv_wanted(const struct api_assignment *s, const char *dir)
{
	struct buf path = BUF_INIT;
	struct stat st;
	int r;

	/* As the toolkit: for a Python program only (not a command). */
	if (s->launch_mode != API_LAUNCH_SCRIPT || !s->program ||
	    !ends_with(s->program, ".py"))
		return 0;
	(void)buf_addf(&path, "%s/code/requirements.txt", dir);
	r = !stat(path.data, &st) && S_ISREG(st.st_mode);
	buf_release(&path);
	return r;
}

char *agent_pyenv_path(const char *base)
{
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, "%s/%s", base, PYENV_REL);
	return buf_detach(&b, NULL);
}

int agent_pyenv_ready(const char *dir)
{
	struct buf path = BUF_INIT;
	int r;

	(void)buf_addf(&path, "%s/%s/bin/python3", dir, PYENV_REL);
	r = !access(path.data, X_OK);
	buf_release(&path);
	return r;
}

/* What one command's output lines are reported as, and the last ones. */
struct pyenv_out {
	int fd;		     /* the worker's report pipe */
	struct buf last_err; /* last non-empty stderr line */
	struct buf last_out; /* last non-empty stdout line */
	int is_stderr;
};

static void on_line(void *arg, const char *line, size_t len)
{
	struct pyenv_out *o = arg;
	struct buf *last = o->is_stderr ? &o->last_err : &o->last_out;

	if (len > PYENV_LINE_MAX)
		len = PYENV_LINE_MAX;
	agent_task_say(o->fd, "%s %.*s", o->is_stderr ? "stderr" : "stdout",
		       (int)len, line);
	while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (len) {
		buf_reset(last);
		(void)buf_add(last, line, len);
	}
}

/*
 * The child's side: stdin from /dev/null, the pipes, nothing else open
 * (the worker's report pipe least of all: a process pip leaves behind
 * would keep it open), cwd, exec.
 */
static void exec_child(char *const *argv, char *const *env, const char *cwd,
		       int out, int err)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC), fd;

	if (null < 0 || dup2(null, STDIN_FILENO) < 0 ||
	    dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
		_exit(127);
	if (syscall(SYS_close_range, 3, ~0U, 0))
		for (fd = 3; fd < 1024; fd++)
			(void)close(fd);
	if (cwd && chdir(cwd)) {
		dprintf(STDERR_FILENO, "cannot enter %s: %s\n", cwd,
			strerror(errno));
		_exit(127);
	}
	execve(argv[0], argv, env);
	dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/*
 * Runs argv with exactly env in cwd, reporting its output lines, and waits
 * for it. It stays in the worker's process group, so that stopping the
 * worker stops it too. Returns 0 with *status its wait status, or ERR_IO.
 */
static int run(char *const *argv, char *const *env, const char *cwd,
	       struct pyenv_out *o, int *status, struct buf *err)
{
	struct agent_lines lines[2];
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, fds[2], k;
	pid_t pid;

	if (pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		(void)buf_addf(err, "pipe: %s", strerror(errno));
		for (k = 0; k < 2; k++) {
			if (out[k] >= 0)
				close(out[k]);
			if (errp[k] >= 0)
				close(errp[k]);
		}
		return ERR_IO;
	}
	pid = fork();
	if (pid < 0) {
		(void)buf_addf(err, "fork: %s", strerror(errno));
		for (k = 0; k < 2; k++) {
			close(out[k]);
			close(errp[k]);
		}
		return ERR_IO;
	}
	if (pid == 0)
		exec_child(argv, env, cwd, out[1], errp[1]);
	close(out[1]);
	close(errp[1]);
	fds[0] = out[0];
	fds[1] = errp[0];
	for (k = 0; k < 2; k++)
		agent_lines_init(&lines[k], PYENV_LINE_MAX);
	/* Blocking reads of whichever pipe has data: order kept per pipe. */
	while (fds[0] >= 0 || fds[1] >= 0) {
		struct pollfd p[2] = { { fds[0], POLLIN, 0 },
				       { fds[1], POLLIN, 0 } };
		char chunk[8192];
		ssize_t r;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (k = 0; k < 2; k++) {
			if (fds[k] < 0 || !p[k].revents)
				continue;
			o->is_stderr = k;
			r = read(fds[k], chunk, sizeof(chunk));
			if (r > 0) {
				agent_lines_feed(&lines[k], chunk, (size_t)r,
						 on_line, o);
			} else if (r == 0 || errno != EINTR) {
				agent_lines_flush(&lines[k], on_line, o);
				close(fds[k]);
				fds[k] = -1;
			}
		}
	}
	for (k = 0; k < 2; k++) {
		if (fds[k] >= 0)
			close(fds[k]);
		agent_lines_release(&lines[k]);
	}
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR) {
			(void)buf_addf(err, "waitpid: %s", strerror(errno));
			return ERR_IO;
		}
	return 0;
}

/* "exit 1" or "signal 9" for a wait status. */
static void describe_status(int status, struct buf *out)
{
	if (WIFSIGNALED(status))
		(void)buf_addf(out, "signal %d", WTERMSIG(status));
	else
		(void)buf_addf(out, "exit %d", WEXITSTATUS(status));
}

/*
 * What pip and venv run with: a minimal base, then the job's Environment
 * (so PIP_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX, proxies reach pip, as
 * they do in the toolkit's container), then the environment's own bin
 * first on PATH. No cache unless the job asks for one: a cache in the
 * user's home would be the host's, shared between jobs.
 */
static void pip_env(const struct api_assignment *s, const char *venv,
		    struct strvec *env)
{
	const struct passwd *pw = getpwuid(geteuid());
	const char *lang = getenv("LANG");
	const char *path;
	struct buf b = BUF_INIT;
	size_t i;

	agent_env_set(env, "PATH", AGENT_BASE_PATH);
	agent_env_set(env, "HOME",
		      pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/");
	agent_env_set(env, "LANG", lang && *lang ? lang : "C.UTF-8");
	agent_env_set(env, "USER", pw && pw->pw_name ? pw->pw_name : "root");
	agent_env_set(env, "PYTHONUNBUFFERED", "1");
	agent_env_set(env, "PIP_DISABLE_PIP_VERSION_CHECK", "1");
	agent_env_set(env, "PIP_PROGRESS_BAR", "off");
	agent_env_set(env, "PIP_NO_INPUT", "1");
	for (i = 0; i < s->n_environment; i++)
		agent_env_set(env, s->environment[i].key,
			      s->environment[i].value);
	if (!agent_env_get(env, "PIP_CACHE_DIR") &&
	    !agent_env_get(env, "PIP_NO_CACHE_DIR"))
		agent_env_set(env, "PIP_NO_CACHE_DIR", "1");
	path = agent_env_get(env, "PATH");
	(void)buf_addf(&b, "%s/bin%s%s", venv, path && *path ? ":" : "",
		       path ? path : "");
	agent_env_set(env, "PATH", b.data);
	agent_env_set(env, "VIRTUAL_ENV", venv);
	buf_release(&b);
}

int agent_pyenv_install(const struct api_assignment *s, const char *dir, int fd,
			struct buf *err)
{
	struct strvec env = STRVEC_INIT, args = STRVEC_INIT;
	struct pyenv_out o = { fd, BUF_INIT, BUF_INIT, 0 };
	struct buf code = BUF_INIT, why = BUF_INIT;
	char *venv = agent_pyenv_path(dir);
	int64_t t0 = time_mono_ms();
	int status = 0, ret;

	(void)buf_addf(&code, "%s/code", dir);
	pip_env(s, venv, &env);
	agent_task_say(fd,
		       "note requirements.txt: installing with pip into the "
		       "job's Python environment");
	strvec_push(&args,
		    s->runtime && *s->runtime ? s->runtime : PYENV_PYTHON);
	strvec_push(&args, "-m");
	strvec_push(&args, "venv");
	strvec_push(&args, "--system-site-packages");
	strvec_push(&args, "--without-pip");
	strvec_push(&args, venv);
	ret = run(args.v, env.v, code.data, &o, &status, &why);
	if (!ret && (!WIFEXITED(status) || WEXITSTATUS(status))) {
		(void)buf_adds(err, "requirements.txt: cannot create a Python "
				    "environment (");
		describe_status(status, err);
		(void)buf_addf(err, "): %s",
			       o.last_err.len ? o.last_err.data :
			       o.last_out.len ? o.last_out.data :
						"no output");
		ret = ERR_IO;
		goto out;
	}
	if (ret) {
		(void)buf_addf(err, "requirements.txt: %s", why.data);
		goto out;
	}
	strvec_release(&args);
	strvec_pushf(&args, "%s/bin/python3", venv);
	strvec_push(&args, "-m");
	strvec_push(&args, "pip");
	strvec_push(&args, "install");
	strvec_push(&args, "-r");
	strvec_push(&args, "requirements.txt");
	buf_reset(&o.last_err);
	buf_reset(&o.last_out);
	ret = run(args.v, env.v, code.data, &o, &status, &why);
	if (ret) {
		(void)buf_addf(err, "requirements.txt: %s", why.data);
		goto out;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		(void)buf_adds(err, "requirements.txt: pip install failed (");
		describe_status(status, err);
		(void)buf_addf(err, "): %s",
			       o.last_err.len ? o.last_err.data :
			       o.last_out.len ? o.last_out.data :
						"no output");
		ret = ERR_IO;
		goto out;
	}
	agent_task_say(fd, "note requirements.txt: installed in %.1f s",
		       (double)(time_mono_ms() - t0) / 1000.0);
out:
	strvec_release(&args);
	strvec_release(&env);
	buf_release(&o.last_err);
	buf_release(&o.last_out);
	buf_release(&code);
	buf_release(&why);
	free(venv);
	return ret;
}
