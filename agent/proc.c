/*
 * Starting, signalling and reaping the agent's children (see proc.h for the
 * six steps). This file and task.c are the only places that fork.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/ident.h"
#include "agent/proc.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/spawn.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static char **env_find(const struct strvec *env, const char *name)
{
	size_t len = strlen(name);
	size_t i;

	for (i = 0; i < env->n; i++)
		if (!strncmp(env->v[i], name, len) && env->v[i][len] == '=')
			return &env->v[i];
	return NULL;
}

void agent_env_set(struct strvec *env, const char *name, const char *value)
{
	char **slot = env_find(env, name);
	struct buf b = BUF_INIT;

	if (!slot) {
		strvec_pushf(env, "%s=%s", name, value);
		return;
	}
	(void)buf_addf(&b, "%s=%s", name, value);
	free(*slot);
	*slot = buf_detach(&b, NULL);
}

const char *agent_env_get(const struct strvec *env, const char *name)
{
	char **slot = env_find(env, name);

	return slot ? *slot + strlen(name) + 1 : NULL;
}

void agent_proc_init(struct agent_proc *p)
{
	memset(p, 0, sizeof(*p));
	p->pid = -1;
	p->out_fd = -1;
	p->err_fd = -1;
}

char *agent_proc_which(const char *name, const struct strvec *env)
{
	const char *path = agent_env_get(env, "PATH");
	struct buf b = BUF_INIT;
	const char *p, *end;
	struct stat st;

	if (strchr(name, '/'))
		return xstrdup(name);
	if (!path || !*path)
		path = "/usr/bin:/bin";
	for (p = path; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		buf_reset(&b);
		if (end == p)
			(void)buf_addf(&b, "./%s", name);
		else
			(void)buf_addf(&b, "%.*s/%s", (int)(end - p), p, name);
		if (!stat(b.data, &st) && S_ISREG(st.st_mode) &&
		    !access(b.data, X_OK))
			return buf_detach(&b, NULL);
	}
	buf_release(&b);
	return NULL;
}

/* What the child tells the parent when it cannot get to exec. */
struct start_failure {
	int step;
	int err;
};

enum {
	STEP_SETSID = 1,
	STEP_UNSHARE,
	STEP_PRIVATE,
	STEP_MKDIR,
	STEP_BIND,
	STEP_STDIO,
	STEP_IDENT,
	STEP_CHDIR,
	STEP_EXEC,
	STEP_CGROUP
};

static const char *step_name(int step)
{
	switch (step) {
	case STEP_SETSID:
		return "setsid";
	case STEP_UNSHARE:
		return "unshare the mount namespace";
	case STEP_PRIVATE:
		return "make mounts private";
	case STEP_MKDIR:
		return "create /opt/ml";
	case STEP_BIND:
		return "bind the job directory at /opt/ml";
	case STEP_STDIO:
		return "set up stdin/stdout/stderr";
	case STEP_IDENT:
		return "run as the job's user";
	case STEP_CHDIR:
		return "change directory";
	case STEP_CGROUP:
		return "join the network isolation cgroup";
	default:
		return "execute";
	}
}

static int kill_session(pid_t sid, int sig);

/* In the child: report, explain on stderr, exit 127. Never returns. */
static _Noreturn void child_fail(int status_fd, int step, int err,
				 const char *subject)
{
	struct start_failure f = { step, err };
	char msg[1024];
	int n;

	n = snprintf(msg, sizeof(msg), "trainagent: cannot %s '%s': %s\n",
		     step_name(step), subject ? subject : "", strerror(err));
	if (n > 0)
		fs_write_all(STDERR_FILENO, msg,
			     (size_t)n < sizeof(msg) ? (size_t)n :
						       sizeof(msg) - 1);
	fs_write_all(status_fd, (const char *)&f, sizeof(f));
	_exit(127);
}

void agent_proc_reset_signals(int ignore_sigpipe)
{
	struct sigaction sa;
	sigset_t none;
	int sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	if (ignore_sigpipe) {
		sa.sa_handler = SIG_IGN;
		(void)sigaction(SIGPIPE, &sa, NULL);
	}
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

/* dup2 that also works when from == to (clears close-on-exec). */
static int move_fd(int from, int to)
{
	if (from == to)
		return fcntl(to, F_SETFD, 0);
	return dup2(from, to) < 0 ? -1 : 0;
}

static int bind_opt_ml(const char *dir, int status_fd)
{
	if (unshare(CLONE_NEWNS))
		child_fail(status_fd, STEP_UNSHARE, errno, dir);
	/* Our mounts must not propagate back to the host namespace. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		child_fail(status_fd, STEP_PRIVATE, errno, "/");
	if (mkdir("/opt", 0755) && errno != EEXIST)
		child_fail(status_fd, STEP_MKDIR, errno, "/opt");
	if (mkdir("/opt/ml", 0755) && errno != EEXIST)
		child_fail(status_fd, STEP_MKDIR, errno, "/opt/ml");
	if (mount(dir, "/opt/ml", NULL, MS_BIND | MS_REC, NULL))
		child_fail(status_fd, STEP_BIND, errno, dir);
	return 0;
}

/* In the child: a read end of the named pipe at fd `at`, kept over exec. */
static void keep_reader(const char *path, int at)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		return;
	if (fd != at) {
		(void)dup2(fd, at);
		close(fd);
	}
}

/* Moves the calling process into the cgroup whose cgroup.procs is path. */
static int join_cgroup(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, "0", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

static _Noreturn void child_run(struct agent_proc *p, const char *file,
				int status_fd, int out_w, int err_w)
{
	int devnull, fd;

	agent_proc_reset_signals(0);
	/* Fds 3 and 4 are for the named pipes' read ends (keep_reader). */
	if (status_fd < 5) {
		fd = fcntl(status_fd, F_DUPFD_CLOEXEC, 5);
		if (fd >= 0)
			status_fd = fd;
	}
	/* stderr first, so that later failures reach the job's log. */
	if (move_fd(err_w, STDERR_FILENO))
		child_fail(status_fd, STEP_STDIO, errno, "stderr");
	if (setsid() < 0)
		child_fail(status_fd, STEP_SETSID, errno, "");
	if (p->bind_dir)
		bind_opt_ml(p->bind_dir, status_fd);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || move_fd(devnull, STDIN_FILENO) ||
	    move_fd(out_w, STDOUT_FILENO))
		child_fail(status_fd, STEP_STDIO, errno, "/dev/null");
	/*
	 * Everything the agent holds (other jobs' pipes, curl's sockets) is
	 * opened close-on-exec already; this catches what a library might
	 * have opened without it. The status pipe is close-on-exec anyway.
	 */
	(void)syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
	/* The pipes live in the agent's own folder: opened while root. */
	if (p->out_fifo)
		keep_reader(p->out_fifo, 3);
	if (p->err_fifo)
		keep_reader(p->err_fifo, 4);
	if (p->cgroup_procs && join_cgroup(p->cgroup_procs))
		child_fail(status_fd, STEP_CGROUP, errno, p->cgroup_procs);
	if (agent_ident_become(p->ident))
		child_fail(status_fd, STEP_IDENT, errno, p->args.v[0]);
	if (p->cwd && chdir(p->cwd))
		child_fail(status_fd, STEP_CHDIR, errno, p->cwd);
	execve(file, p->args.v, p->env.v);
	child_fail(status_fd, STEP_EXEC, errno, file);
}

/* --- the keeper ---------------------------------------------------------- */

/* What the keeper tells the parent first: the program's pid, or why not. */
struct keeper_hello {
	pid_t pid;
	int err;
};

static void keeper_signals(void)
{
	static const int ignored[] = { SIGHUP,	SIGINT,	 SIGQUIT, SIGTERM,
				       SIGPIPE, SIGUSR1, SIGUSR2, SIGTTIN,
				       SIGTTOU, SIGTSTP };
	size_t i;

	agent_proc_reset_signals(0);
	for (i = 0; i < ARRAY_SIZE(ignored); i++)
		(void)signal(ignored[i], SIG_IGN);
}

int agent_proc_write_exit(const char *path, int status)
{
	char line[64];
	int n;

	if (WIFSIGNALED(status))
		n = snprintf(line, sizeof(line), "signal %d\n",
			     WTERMSIG(status));
	else
		n = snprintf(line, sizeof(line), "exit %d\n",
			     WEXITSTATUS(status));
	return fs_write_atomic(path, line, (size_t)n, 0600, 0, NULL) ? -1 : 0;
}

int agent_proc_read_exit(const char *path, int *exit_code, int *term_signal)
{
	char line[64];
	ssize_t n;
	int fd, v;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	line[n] = '\0';
	if (sscanf(line, "exit %d", &v) == 1 && v >= 0 && v < 256) {
		*exit_code = v;
		*term_signal = 0;
		return 0;
	}
	if (sscanf(line, "signal %d", &v) == 1 && v > 0 && v < NSIG) {
		*term_signal = v;
		*exit_code = 128 + v;
		return 0;
	}
	return -1;
}

/*
 * The keeper's whole life once the program runs: wait for it (without
 * reaping, so that its pid and group stay taken), kill what is left of its
 * group and session, reap it, write how it ended to exit_file and end the
 * same way, so that the parent, when it is still there, learns the status
 * as if it had reaped the program itself.
 */
/*
 * The init of a rank's container, from its pid file, if it still is that:
 * a process in a PID namespace other than ours.
 */
static void kill_container(const char *pidfile)
{
	char buf[32], path[64], ns[64], own[64];
	ssize_t n, m;
	long pid;
	int fd = open(pidfile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	pid = strtol(buf, NULL, 10);
	if (pid <= 1)
		return;
	(void)snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
	n = readlink(path, ns, sizeof(ns) - 1);
	m = readlink("/proc/self/ns/pid", own, sizeof(own) - 1);
	if (n <= 0 || m <= 0 || (n == m && !memcmp(ns, own, (size_t)n)))
		return;
	(void)kill((pid_t)pid, SIGKILL);
}

/* Runs argv (absolute argv[0]) with a bare PATH; a minute at most. */
static void run_cleanup(const struct strvec *argv)
{
	char *env[] = { (char *)"PATH=/usr/local/sbin:/usr/local/bin:"
				"/usr/sbin:/usr/bin:/sbin:/bin",
			NULL };
	struct spawn_result res = SPAWN_RESULT_INIT;

	(void)spawn_capture(argv->v, env, 60000, 0, &res);
	spawn_result_release(&res);
}

static _Noreturn void keep(pid_t pid, const struct agent_proc *p)
{
	const char *exit_file = p->exit_file;
	struct rlimit no_core = { 0, 0 };
	sigset_t none;
	siginfo_t si;
	int status = 0;
	pid_t r;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (!waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT))
			break;
		if (errno != EINTR)
			_exit(255);
	}
	(void)kill(-pid, SIGKILL);
	(void)kill_session(pid, SIGKILL);
	do {
		r = waitpid(pid, &status, 0);
	} while (r < 0 && errno == EINTR);
	if (r != pid)
		_exit(255);
	if (p->container_pidfile &&
	    (WIFSIGNALED(status) || WEXITSTATUS(status) >= 125)) {
		kill_container(p->container_pidfile);
		if (p->cleanup.n)
			run_cleanup(&p->cleanup);
	}
	(void)agent_proc_write_exit(exit_file, status);
	if (!WIFSIGNALED(status))
		_exit(WEXITSTATUS(status));
	(void)setrlimit(RLIMIT_CORE, &no_core);
	(void)signal(WTERMSIG(status), SIG_DFL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)raise(WTERMSIG(status));
	_exit(128 + WTERMSIG(status));
}

static char *title_at;
static size_t title_len;

void agent_proc_set_title_area(char **argv)
{
	char *end;
	int i;

	if (!argv || !argv[0])
		return;
	end = argv[0] + strlen(argv[0]) + 1;
	for (i = 1; argv[i] && argv[i] == end; i++)
		end += strlen(argv[i]) + 1;
	title_at = argv[0];
	title_len = (size_t)(end - argv[0]);
}

/*
 * Writes "trainagent\0keep-rank\0PID" over the agent's argv strings (what
 * /proc/PID/cmdline shows), the rest zeroed, as OpenSSH's setproctitle()
 * does; too little room leaves them be.
 */
static void keeper_title(pid_t pid)
{
	char t[64];
	int n;

	(void)prctl(PR_SET_NAME, "trainagent-keep", 0, 0, 0);
	n = snprintf(t, sizeof(t), "trainagent%ckeep-rank%c%d", '\0', '\0',
		     (int)pid);
	if (!title_at || n <= 0 || (size_t)n + 1 > title_len)
		return;
	memset(title_at, 0, title_len);
	memcpy(title_at, t, (size_t)n);
}

/*
 * The keeper: a session of its own (a signal to the agent's group or a
 * hangup of its terminal does not reach it), then the program as its
 * child, then keep(). It stays a fork of the agent (an exec would load
 * the agent's libraries again, on the launch path of every rank) that
 * holds none of its files and shows as `trainagent keep-rank PID`.
 */
static _Noreturn void keeper_run(struct agent_proc *p, const char *file,
				 int status_fd, int out_w, int err_w)
{
	struct keeper_hello h = { -1, 0 };
	int devnull;
	pid_t pid;

	keeper_signals();
	(void)setsid();
	(void)unlink(p->exit_file);
	pid = fork();
	if (pid == 0)
		child_run(p, file, status_fd, out_w, err_w);
	h.pid = pid;
	h.err = pid < 0 ? errno : 0;
	fs_write_all(status_fd, (const char *)&h, sizeof(h));
	if (pid < 0)
		_exit(127);
	/* Nothing of the agent's: its lock, sockets, pipes, the job's. */
	devnull = open("/dev/null", O_RDWR);
	if (devnull >= 0) {
		(void)dup2(devnull, STDIN_FILENO);
		(void)dup2(devnull, STDOUT_FILENO);
	}
	(void)syscall(SYS_close_range, 3U, ~0U, 0U);
	keeper_title(pid);
	keep(pid, p);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int agent_proc_open_fifo(const char *path)
{
	return open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

/*
 * An anonymous pipe, or a fresh named one at *path (when the filesystem
 * has no FIFOs, *path is cleared and the pipe is anonymous): fd[0] the
 * read end, fd[1] the write end, both close-on-exec. The reader is opened
 * first, so opening the writer does not block.
 */
static int make_pipe(char **path, int fd[2])
{
	if (*path) {
		(void)unlink(*path);
		if (mkfifo(*path, 0600)) {
			/* A filesystem without FIFOs: plain pipes, then. */
			FREE_AND_NULL(*path);
		}
	}
	if (!*path)
		return pipe2(fd, O_CLOEXEC);
	fd[0] = agent_proc_open_fifo(*path);
	if (fd[0] < 0)
		return -1;
	fd[1] = open(*path, O_WRONLY | O_CLOEXEC);
	if (fd[1] < 0) {
		close(fd[0]);
		fd[0] = -1;
		return -1;
	}
	/* Room for the output of a few seconds without an agent. */
	(void)fcntl(fd[0], F_SETPIPE_SZ, 1 << 20);
	/* The read end is non-blocking for the loop; the writer is not. */
	return 0;
}

int agent_proc_start(struct agent_proc *p, struct buf *err)
{
	int status[2] = { -1, -1 }, out[2] = { -1, -1 }, errp[2] = { -1, -1 };
	struct start_failure f;
	char *file = NULL;
	ssize_t n;
	pid_t pid;
	int ret = 0;

	if (!p->args.n) {
		(void)buf_adds(err, "no program to run");
		return ERR_INVALID;
	}
	if (!p->env.v)
		strvec_push(&p->env, "PATH=/usr/bin:/bin");
	file = agent_proc_which(p->args.v[0], &p->env);
	if (!file)
		file = xstrdup(p->args.v[0]); /* exec reports ENOENT */
	if (pipe2(status, O_CLOEXEC) || make_pipe(&p->out_fifo, out) ||
	    make_pipe(&p->err_fifo, errp)) {
		(void)buf_addf(err, "pipe: %s", strerror(errno));
		ret = ERR_IO;
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		(void)buf_addf(err, "fork: %s", strerror(errno));
		ret = ERR_IO;
		goto out;
	}
	if (pid == 0) {
		close(status[0]);
		close(out[0]);
		close(errp[0]);
		if (p->exit_file)
			keeper_run(p, file, status[1], out[1], errp[1]);
		child_run(p, file, status[1], out[1], errp[1]);
	}
	p->pid = pid;
	p->started_ms = time_now_ms();
	close_fd(&status[1]);
	close_fd(&out[1]);
	close_fd(&errp[1]);
	if (p->exit_file) {
		struct keeper_hello h;

		p->keeper = pid;
		do {
			n = read(status[0], &h, sizeof(h));
		} while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(h) || h.pid <= 0) {
			(void)buf_addf(err, "fork: %s",
				       strerror(n == (ssize_t)sizeof(h) &&
							h.err ?
						h.err :
						EIO));
			(void)waitpid(pid, NULL, 0);
			p->keeper = 0;
			p->pid = -1;
			ret = ERR_IO;
			goto out;
		}
		p->pid = h.pid;
	}
	/* Blocks only until exec: EOF means it succeeded. */
	do {
		n = read(status[0], &f, sizeof(f));
	} while (n < 0 && errno == EINTR);
	p->start_errno = n == (ssize_t)sizeof(f) ? (f.err ? f.err : EIO) : 0;
	p->out_fd = out[0];
	p->err_fd = errp[0];
	out[0] = errp[0] = -1;
	(void)fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	(void)fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
out:
	close_fd(&status[0]);
	close_fd(&status[1]);
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	free(file);
	return ret;
}

/*
 * Signals every process of session sid outside the leader's group: a
 * launcher such as mpirun puts each rank in a process group of its own,
 * but they all stay in the session the agent made. The kernel does not
 * reuse an ID while a session or group still carries it, so a match is
 * one of ours. Returns how many were signalled.
 */
static int kill_session(pid_t sid, int sig)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d))) {
		char path[64], stat[512], *rp;
		long pid, s = 0, pg = 0;
		ssize_t len;
		int fd;

		pid = strtol(de->d_name, &rp, 10);
		if (*rp || pid <= 1)
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, stat, sizeof(stat) - 1);
		close(fd);
		if (len <= 0)
			continue;
		stat[len] = '\0';
		/* "pid (comm) state ppid pgrp session ...": comm may hold
		 * anything, so parse after its last ')'. */
		rp = strrchr(stat, ')');
		if (!rp || sscanf(rp + 1, " %*c %*d %ld %ld", &pg, &s) != 2)
			continue;
		if (s == sid && pg != sid && kill((pid_t)pid, sig) == 0)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

int agent_proc_signal(const struct agent_proc *p, int sig)
{
	int n;

	if (p->pid <= 0)
		return ERR_NOTFOUND;
	n = kill_session(p->pid, sig);
	if (kill(-p->pid, sig) == 0 || n > 0)
		return 0;
	/* A leader that has not run setsid yet has no group of its own. */
	if (!p->exited && kill(p->pid, sig) == 0)
		return 0;
	return ERR_NOTFOUND;
}

static void record_status(struct agent_proc *p, int status)
{
	p->exited = 1;
	p->exited_ms = time_now_ms();
	if (WIFSIGNALED(status)) {
		p->term_signal = WTERMSIG(status);
		p->exit_code = 128 + p->term_signal;
	} else {
		p->term_signal = 0;
		p->exit_code = WEXITSTATUS(status);
	}
}

/* Alive, a zombie included (a keeper that died leaves the program to us). */
static int still_there(pid_t pid)
{
	return pid > 0 && kill(pid, 0) == 0;
}

static int reap(struct agent_proc *p, int block)
{
	pid_t target = p->keeper > 0 ? p->keeper : p->pid;
	siginfo_t si;
	int status, code, sig;
	pid_t r;

	if (p->exited)
		return 1;
	if (target <= 0)
		return 0;
	memset(&si, 0, sizeof(si));
	/*
	 * Look first without reaping: while the leader is a zombie its pid
	 * (the group id) cannot be given to a new process, so the group
	 * kill below cannot hit a stranger.
	 */
	while (waitid(P_PID, (id_t)target, &si,
		      WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == ECHILD) {
			/* Someone else reaped it: status unknown, unless the
			 * keeper wrote it down. */
			p->exited = 1;
			p->exit_code = 255;
			p->exited_ms = time_now_ms();
			if (p->exit_file &&
			    !agent_proc_read_exit(p->exit_file, &code, &sig)) {
				p->exit_code = code;
				p->term_signal = sig;
			}
			return 1;
		}
		return 0;
	}
	if (si.si_pid != target)
		return 0;
	if (target == p->keeper) {
		/* The keeper killed the group and reaped the program. */
		do {
			r = waitpid(target, &status, 0);
		} while (r < 0 && errno == EINTR);
		p->keeper = 0;
		if (r != target) {
			p->exited = 1;
			return 1;
		}
		/*
		 * A keeper that was killed itself wrote nothing; the program
		 * is then ours (we are a subreaper), and reaped as any.
		 */
		if (agent_proc_read_exit(p->exit_file, &code, &sig) &&
		    WIFSIGNALED(status) && still_there(p->pid))
			return reap(p, block);
		record_status(p, status);
		return 1;
	}
	(void)kill(-p->pid, SIGKILL);
	(void)kill_session(p->pid, SIGKILL);
	do {
		r = waitpid(p->pid, &status, 0);
	} while (r < 0 && errno == EINTR);
	if (r == p->pid)
		record_status(p, status);
	else
		p->exited = 1;
	return 1;
}

int agent_proc_reap(struct agent_proc *p)
{
	return reap(p, 0);
}

void agent_proc_wait(struct agent_proc *p)
{
	(void)reap(p, 1);
}

void agent_proc_release(struct agent_proc *p)
{
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	strvec_release(&p->args);
	strvec_release(&p->env);
	FREE_AND_NULL(p->cwd);
	FREE_AND_NULL(p->bind_dir);
	FREE_AND_NULL(p->out_fifo);
	FREE_AND_NULL(p->err_fifo);
	FREE_AND_NULL(p->exit_file);
	FREE_AND_NULL(p->container_pidfile);
	FREE_AND_NULL(p->cgroup_procs);
	strvec_release(&p->cleanup);
}

int agent_proc_can_bind(struct buf *why)
{
	struct agent_proc p;
	char tmpl[] = "/tmp/trainagent-bind-XXXXXX";
	struct buf err = BUF_INIT;
	int ok = 0;

	if (geteuid() != 0) {
		(void)buf_adds(why, "not running as root");
		return 0;
	}
	if (!mkdtemp(tmpl)) {
		(void)buf_addf(why, "mkdtemp: %s", strerror(errno));
		return 0;
	}
	agent_proc_init(&p);
	strvec_push(&p.args, "/bin/true");
	strvec_push(&p.env, "PATH=/usr/bin:/bin");
	p.bind_dir = xstrdup(tmpl);
	if (agent_proc_start(&p, &err)) {
		(void)buf_addf(why, "%s", err.data);
		goto out;
	}
	agent_proc_wait(&p);
	if (p.start_errno)
		(void)buf_addf(why, "%s", strerror(p.start_errno));
	else if (p.exit_code != 0)
		(void)buf_addf(why, "/bin/true exited %d", p.exit_code);
	else
		ok = 1;
out:
	agent_proc_release(&p);
	buf_release(&err);
	(void)rmdir(tmpl);
	return ok;
}
