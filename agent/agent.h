#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

/*
 * trainagent, the node daemon (docs/agent-protocol.md). One thread and one
 * poll loop (loop.c) serve everything: the signal self-pipe, the stdout
 * and stderr pipes of every child, the report pipes of the staging and
 * packing workers (task.c), pidfds of processes adopted after a restart,
 * and libcurl's sockets (http.c). The one exception, the server of
 * checkpoint copies to other hosts (peerserve.c), runs threads of its own
 * that share only a table of tokens, under a lock, with the loop.
 * Everything the daemon knows lives in one struct agent_ctx, passed first
 * to every function.
 *
 * This header holds only that context. Every file's functions are
 * declared in the header of its own name (assign.c: agent/assign.h), and
 * the state of one assignment, which most steps read, in
 * agent/assignment.h. A file includes the headers of what it uses; a
 * lower file (jobdir.c, launch.c, pipe.c, upload.c, ...) returns what
 * happened and leaves the assignment's phase to assign.c, which calls it.
 *
 * Files: config.c (command line), loop.c (the loop, signals, reaping),
 * http.c (libcurl multi), session.c (register, work long-poll, status
 * heartbeat, log shipping, self-fencing), logq.c (the bounded log queue),
 * assign.c (desired vs actual: the per-assignment state machine),
 * supervise.c (output, exits, adoption after a restart),
 * jobdir.c (job directories and state.json), launch.c (argv and
 * environment of a rank), pyenv.c (requirements.txt), task.c + stage.c +
 * upload.c (the forked workers and artifact upload), proc.c (fork/exec of
 * one process), lines.c (line splitting).
 */
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/http.h"
#include "agent/images.h"
#include "agent/lease.h"
#include "agent/logq.h"
#include "agent/session.h"
#include "agent/telemetry.h"

struct agent_assign;
struct agent_pollref;
struct agent_peerserve;

struct agent_ctx {
	struct agent_config cfg;
	struct agent_images images;
	char **argv; /* main's, for the watchdog to start the agent again */
	struct agent_lease lease;
	char *token;
	char boot_id[40];
	int can_bind; /* root with working mount namespaces */
	struct agent_http http;
	struct agent_session sess;
	struct agent_logq logq;
	struct agent_telemetry tm;
	struct agent_assign *assigns;
	/* The checkpoint copies served to the job's other hosts
	 * (agent/peerserve.h); NULL: off. */
	struct agent_peerserve *peer;
	/* The poll set, rebuilt every turn. */
	struct pollfd *pfds;
	struct agent_pollref *prefs;
	size_t n_pfds;
	size_t alloc_pfds;
	size_t alloc_prefs; /* allocated count of prefs */
	int sig_pipe[2];
	int got_sigchld;
	int shutting_down;
	int64_t shutdown_kill_at; /* monotonic */
	int exit_now;
	/* The work directory's lock, checked now and then: an agent whose
	 * directory was removed has nothing left to serve. */
	int lock_fd;
	char *lock_path;
	int64_t lock_check_at; /* monotonic */
};

#endif
