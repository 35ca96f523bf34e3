#ifndef AGENT_PROC_H
#define AGENT_PROC_H

/*
 * One child process of the agent, after git's `struct child_process`
 * (run-command.h) and libuv's uv_process_options_t: the caller fills in
 * argv, the complete environment, the working directory and whether to bind
 * a directory at /opt/ml, then agent_proc_start() runs it as
 *
 *   1. fork
 *   2. setsid: the child leads a new session and process group, so
 *      agent_proc_signal() reaches every process it starts
 *   3. as root, when bind_dir is set: unshare(CLONE_NEWNS), make every
 *      mount private, bind bind_dir at /opt/ml
 *   4. stdin from /dev/null, stdout and stderr into two pipes
 *   5. the job's user, when ident is set (groups, gid, uid)
 *   6. chdir(cwd)
 *   7. execve(argv[0], argv, env) with exactly env: nothing is inherited
 *
 * With exit_file set, step 1 forks a keeper first, which forks the child
 * and stays its parent (see exit_file below).
 *
 * A failure in steps 2-7 is written to the child's stderr as one line and
 * the child exits 127, like a shell that cannot run a command; the parent
 * learns it through a close-on-exec pipe and sets start_errno.
 *
 * The agent is single-threaded, so the child may call ordinary library
 * functions between fork and exec.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/strvec.h"

struct agent_ident;

/*
 * Sets NAME=value in an environment vector: replaces the entry for name
 * when there is one (keeping its position), else appends.
 */
void agent_env_set(struct strvec *env, const char *name, const char *value);

/* Returns the value of name in env, or NULL. The string belongs to env. */
const char *agent_env_get(const struct strvec *env, const char *name);

struct agent_proc {
	/* Filled by the caller; owned by the proc, freed by _release(). */
	struct strvec args; /* args.v[0] is the program */
	struct strvec env;  /* the complete environment */
	char *cwd;	    /* NULL: the agent's own */
	char *bind_dir;	    /* NULL: no private /opt/ml */
	/*
	 * Absolute paths for named pipes to use as stdout and stderr
	 * instead of anonymous ones (NULL: anonymous). The child keeps a
	 * read end of each open (on fds 3 and 4), so that if the agent dies
	 * the child's writes block instead of failing with EPIPE, and a
	 * restarted agent reopens the paths and reads on.
	 */
	char *out_fifo;
	char *err_fifo;
	/* Run as this user (set last before exec); unset: the agent's. */
	const struct agent_ident *ident;
	/*
	 * With exit_file set, the program runs under a keeper: a small
	 * process (root, in a session of its own, not in the program's
	 * group) that is the program's parent, waits for it, kills what is
	 * left of its group, writes how it ended to exit_file ("exit N" or
	 * "signal N", atomically) and then ends the same way. So the exit
	 * status of a program that ends while no agent runs is not lost: an
	 * agent that starts again reads it there. pid is the program's. The
	 * keeper shows as `trainagent keep-rank PID`.
	 */
	char *exit_file;
	/*
	 * A container's rank (agent/podman.c), with exit_file: when the
	 * program (podman run) was killed or failed as podman (exit 125
	 * and up) the keeper SIGKILLs the container's init, whose PID it
	 * reads from container_pidfile, and runs cleanup (an absolute
	 * argv[0]; `podman rm --force`, at most a minute) before it writes
	 * exit_file: a rank that ended leaves no container behind.
	 */
	char *container_pidfile;
	struct strvec cleanup;
	/* A cgroup's cgroup.procs the program joins before exec (NULL:
	 * none): network isolation (netiso.c). */
	char *cgroup_procs;

	/* Filled by agent_proc_start(). */
	pid_t pid;	    /* also the process group and session id */
	pid_t keeper;	    /* the keeper, the agent's child; 0: none (left) */
	int out_fd;	    /* stdout read end, non-blocking, -1 when closed */
	int err_fd;	    /* stderr read end, non-blocking, -1 when closed */
	int64_t started_ms; /* wall clock */
	int start_errno;    /* set when the child failed before exec */

	/* Filled when the process has been reaped. */
	int exited;
	int exit_code;	 /* valid when term_signal == 0 */
	int term_signal; /* the signal that ended it, 0 = none */
	int64_t exited_ms;
};

/*
 * The agent's argv (from main()), whose strings a keeper overwrites with
 * its own title (see keeper_title in proc.c). Unset: keepers keep the
 * title they were forked with.
 */
void agent_proc_set_title_area(char **argv);

/*
 * Writes or reads an exit file (see exit_file). _write takes a wait
 * status; _read fills exit_code (128 + signal for a signal) and
 * term_signal. Both return 0, or -1 when there is none or it is garbled.
 */
int agent_proc_write_exit(const char *path, int status);
int agent_proc_read_exit(const char *path, int *exit_code, int *term_signal);

/* Empties p: no process, fds -1. */
void agent_proc_init(struct agent_proc *p);

/*
 * Starts p as described above. Returns 0 once the child has either exec'd
 * or failed and will exit 127 (start_errno tells which), or ERR_INVALID /
 * ERR_IO with err explaining when there is no child at all (no argv, pipe
 * or fork failed).
 */
int agent_proc_start(struct agent_proc *p, struct buf *err);

/*
 * Sends sig to p's whole process group, so grandchildren get it too.
 * Returns 0, or ERR_NOTFOUND when no process of the group is left.
 */
int agent_proc_signal(const struct agent_proc *p, int sig);

/*
 * Reaps p if it has ended, without blocking. Before the leader is reaped
 * (while its pid cannot be reused) the rest of its process group gets
 * SIGKILL, so no straggler outlives it. Returns 1 when p was reaped now or
 * earlier (exited, exit_code, term_signal, exited_ms set), 0 while it runs.
 */
int agent_proc_reap(struct agent_proc *p);

/* Like agent_proc_reap() but waits for the end. */
void agent_proc_wait(struct agent_proc *p);

/*
 * Opens the read end of a named pipe made by agent_proc_start(),
 * non-blocking and close-on-exec. Returns the fd or -1.
 */
int agent_proc_open_fifo(const char *path);

/* Closes the pipes and frees the inputs; never signals or waits. */
void agent_proc_release(struct agent_proc *p);

/*
 * Says whether this process can give children a private /opt/ml: it is
 * root and a test child managed to unshare its mount namespace and bind a
 * directory at /opt/ml (creating /opt/ml when missing). Returns 1 or 0;
 * why, when 0, goes to why.
 */
int agent_proc_can_bind(struct buf *why);

/*
 * In a new child: every signal back to its default disposition and none
 * blocked; with ignore_sigpipe, SIGPIPE ignored (writes to a closed pipe
 * or socket fail instead).
 */
void agent_proc_reset_signals(int ignore_sigpipe);

/*
 * Searches name in the PATH of env (or /usr/bin:/bin) when it holds no
 * slash. Returns a new string (yours to free) with the path of an
 * executable file, or NULL.
 */
char *agent_proc_which(const char *name, const struct strvec *env);

#endif
