/*
 * MPI mode without SSH between hosts.
 *
 * On algo-1 the agent runs mpirun with OpenMPI's remote launcher
 * (plm_rsh_agent) set to "trainagent rsh". On every other host it runs
 * "trainagent mpi-worker", which listens on the attempt's port for that
 * host. mpirun calls the launcher with ssh's convention (options, host,
 * then the words of a command for a shell); the launcher connects to that
 * host's worker, which runs the command (OpenMPI's orted) with /bin/sh and
 * relays its output and exit status back. The command's processes stay in
 * the worker's session, so the agent stops them all with the assignment.
 *
 * The wire, launcher -> worker:
 *     "TRAINCTL-RSH 1\n" <token> "\n" <decimal length> "\n" <command>
 * worker -> launcher, frames of one type byte and a 4-byte big-endian
 * length: 'o' stdout bytes, 'e' stderr bytes, 'x' the exit status (4
 * bytes: the code, or 128 + signal). The token is the attempt's
 * rendezvous token (TRAINCTL_RDZV_TOKEN, in both environments); a
 * connection without it is closed unanswered.
 */
#define _GNU_SOURCE
#define LOG_TAG "mpi"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/mpi.h"
#include "common/buf.h"
#include "common/fsutil.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define RSH_MAGIC "TRAINCTL-RSH 1\n"
#define RSH_MAX_COMMAND (64 << 10)
#define RSH_MAX_TOKEN 256
#define RSH_HEADER_MS 10000    /* a launcher sends its header at once */
#define RSH_CONNECT_MS 120000  /* a worker's host may start later */
#define RSH_MAX_CONNECTIONS 64 /* served by one worker */
#define RSH_EXIT_LAUNCH 255    /* what ssh exits with when it fails */
#define RSH_STOP_MS 5000       /* handlers' time to end once stopped */

static int read_all(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = read(fd, c, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

static int frame(int fd, char type, const void *data, uint32_t len)
{
	unsigned char h[5];

	h[0] = (unsigned char)type;
	h[1] = (unsigned char)(len >> 24);
	h[2] = (unsigned char)(len >> 16);
	h[3] = (unsigned char)(len >> 8);
	h[4] = (unsigned char)len;
	if (fs_write_all(fd, h, sizeof(h)))
		return -1;
	return len ? fs_write_all(fd, data, len) : 0;
}

/* ---- the launcher: trainagent rsh [ssh options] host command... ---- */

/* "algo-2=10.0.0.12:31002,algo-3=..." -> the address and port of host. */
static int peer_of(const char *peers, const char *host, char *addr,
		   size_t addr_len, int *port)
{
	size_t hl = strlen(host);
	const char *p = peers;

	while (p && *p) {
		const char *end = strchr(p, ','), *eq = strchr(p, '=');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (eq && eq < p + n && (size_t)(eq - p) == hl &&
		    !strncmp(p, host, hl)) {
			const char *colon = NULL, *q;
			size_t al;

			for (q = eq + 1; q < p + n; q++)
				if (*q == ':')
					colon = q;
			if (!colon)
				return -1;
			al = (size_t)(colon - eq - 1);
			if (al + 1 > addr_len)
				return -1;
			memcpy(addr, eq + 1, al);
			addr[al] = '\0';
			*port = atoi(colon + 1);
			return *port > 0 && *port < 65536 ? 0 : -1;
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

static int connect_to(const char *addr, int port, int64_t deadline_ms)
{
	struct addrinfo hints, *res = NULL;
	char ps[16];
	int fd = -1, delay = 20;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	(void)snprintf(ps, sizeof(ps), "%d", port);
	if (getaddrinfo(addr, ps, &hints, &res) || !res)
		return -1;
	for (;;) {
		fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen))
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
		if (time_mono_ms() >= deadline_ms)
			break;
		/* The worker's host may still be starting it. */
		{
			struct timespec ts = { 0, delay * 1000000L };

			nanosleep(&ts, NULL);
		}
		if (delay < 500)
			delay *= 2;
	}
	freeaddrinfo(res);
	return fd;
}

/* ssh options that take a value (ssh(1)). */
static int takes_value(const char *opt)
{
	return opt[1] && !opt[2] && strchr("BbcDEeFIiJLlmOopQRSWw", opt[1]);
}

/* Where HOST is in `trainagent rsh [options] HOST COMMAND...`, or -1. */
static int rsh_host_arg(int argc, char **argv)
{
	int i = 1;

	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		i += takes_value(argv[i]) ? 2 : 1;
	}
	return i >= argc - 1 ? -1 : i;
}

/* The header and the command, as the wire above has them. */
static int send_request(int fd, const char *token, const struct buf *cmd)
{
	char hdr[64];

	(void)snprintf(hdr, sizeof(hdr), "\n%zu\n", cmd->len);
	if (fs_write_all(fd, RSH_MAGIC, strlen(RSH_MAGIC)) ||
	    fs_write_all(fd, token, strlen(token)) ||
	    fs_write_all(fd, hdr, strlen(hdr)) ||
	    fs_write_all(fd, cmd->data, cmd->len))
		return -1;
	return 0;
}

/*
 * Relays the worker's output frames to ours until its exit status, which
 * it returns (RSH_EXIT_LAUNCH when the connection ends first).
 */
static int relay_frames(int fd, const char *host)
{
	int status = RSH_EXIT_LAUNCH;

	for (;;) {
		unsigned char h[5];
		char data[16384];
		uint32_t len;

		if (read_all(fd, h, sizeof(h))) {
			fprintf(stderr,
				"trainagent rsh: %s: the worker closed the "
				"connection\n",
				host);
			break;
		}
		len = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 |
		      (uint32_t)h[3] << 8 | h[4];
		if (h[0] == 'x' && len == 4) {
			unsigned char s[4];

			if (read_all(fd, s, 4))
				break;
			status = s[3];
			break;
		}
		if ((h[0] != 'o' && h[0] != 'e') || len > sizeof(data) ||
		    read_all(fd, data, len)) {
			fprintf(stderr, "trainagent rsh: %s: bad frame\n",
				host);
			break;
		}
		(void)fs_write_all(h[0] == 'o' ? STDOUT_FILENO : STDERR_FILENO,
				   data, len);
	}
	return status;
}

int agent_rsh_main(int argc, char **argv)
{
	const char *peers = getenv("TRAINCTL_MPI_PEERS");
	const char *token = getenv("TRAINCTL_RDZV_TOKEN");
	struct buf cmd = BUF_INIT;
	char addr[128];
	int i, port = 0, fd, status = RSH_EXIT_LAUNCH;
	const char *host;

	i = rsh_host_arg(argc, argv);
	if (i < 0) {
		fprintf(stderr, "trainagent rsh: usage: trainagent rsh "
				"[options] HOST COMMAND...\n");
		return RSH_EXIT_LAUNCH;
	}
	host = argv[i++];
	if (!token || !peers ||
	    peer_of(peers, host, addr, sizeof(addr), &port)) {
		fprintf(stderr,
			"trainagent rsh: no worker known for host '%s' "
			"(TRAINCTL_MPI_PEERS=%s)\n",
			host, peers ? peers : "");
		return RSH_EXIT_LAUNCH;
	}
	for (; i < argc; i++)
		(void)buf_addf(&cmd, "%s%s", cmd.len ? " " : "", argv[i]);
	if (cmd.len > RSH_MAX_COMMAND || strlen(token) > RSH_MAX_TOKEN) {
		fprintf(stderr, "trainagent rsh: command too long\n");
		buf_release(&cmd);
		return RSH_EXIT_LAUNCH;
	}
	fd = connect_to(addr, port, time_mono_ms() + RSH_CONNECT_MS);
	if (fd < 0) {
		fprintf(stderr,
			"trainagent rsh: cannot reach the worker of %s at "
			"%s:%d: %s\n",
			host, addr, port, strerror(errno));
		buf_release(&cmd);
		return RSH_EXIT_LAUNCH;
	}
	if (send_request(fd, token, &cmd))
		fprintf(stderr, "trainagent rsh: %s: connection lost\n", host);
	else
		status = relay_frames(fd, host);
	close(fd);
	buf_release(&cmd);
	return status;
}

/* ---- the worker: trainagent mpi-worker --port P ---- */

/* Reads a "\n"-terminated line of at most max bytes. */
static int read_line(int fd, char *out, size_t max)
{
	size_t n = 0;

	for (;;) {
		char c;

		if (read_all(fd, &c, 1))
			return -1;
		if (c == '\n')
			break;
		if (n + 1 >= max)
			return -1;
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

/*
 * The request's header and command (NUL-terminated, to free), or NULL
 * when it is not one: the wrong magic or token, a bad length, too slow.
 */
static char *read_request(int fd, const char *token)
{
	struct timeval tv = { RSH_HEADER_MS / 1000, 0 };
	char magic[32], tok[RSH_MAX_TOKEN + 2], lenbuf[32];
	char *cmd, *end;
	long len;

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (read_line(fd, magic, sizeof(magic)) ||
	    strcmp(magic, "TRAINCTL-RSH 1") ||
	    read_line(fd, tok, sizeof(tok)) || strcmp(tok, token) ||
	    read_line(fd, lenbuf, sizeof(lenbuf)))
		return NULL;
	len = strtol(lenbuf, &end, 10);
	if (*end || len < 1 || len > RSH_MAX_COMMAND)
		return NULL;
	cmd = xmalloc((size_t)len + 1);
	if (read_all(fd, cmd, (size_t)len)) {
		free(cmd);
		return NULL;
	}
	cmd[len] = '\0';
	tv.tv_sec = 0;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return cmd;
}

/* Forks cmd under /bin/sh, its stdout and stderr into the pipes. */
static pid_t spawn_command(const char *cmd, const int out[2], const int err[2])
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		(void)dup2(null, STDIN_FILENO);
		(void)dup2(out[1], STDOUT_FILENO);
		(void)dup2(err[1], STDERR_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * One read from the pipe *rd that poll found ready (p), sent to the
 * launcher at *fd as a frame of type; *fd becomes -1 when that fails.
 * Returns 1 when the pipe closed (then closed here, *rd -1), else 0.
 */
static int relay_pipe(int *fd, const struct pollfd *p, int *rd, char type)
{
	char data[16384];
	ssize_t r;

	if (p->fd < 0 || !(p->revents & (POLLIN | POLLHUP)))
		return 0;
	r = read(p->fd, data, sizeof(data));
	if (r < 0 && errno == EINTR)
		return 0;
	if (r <= 0) {
		close(*rd);
		*rd = -1;
		return 1;
	}
	if (*fd >= 0 && frame(*fd, type, data, (uint32_t)r))
		*fd = -1;
	return 0;
}

/*
 * Relays the command's output (rd: its stdout and stderr pipes) to the
 * launcher at fd until both pipes close; stops the command when the
 * launcher goes. With drop_out, its stdout is read and dropped. Returns
 * fd, or -1 once the launcher is gone.
 */
static int relay_output(int fd, pid_t pid, int rd[2], int drop_out)
{
	int open_pipes = 2;

	while (open_pipes) {
		struct pollfd p[3] = { { rd[0], POLLIN, 0 },
				       { rd[1], POLLIN, 0 },
				       { fd, POLLIN, 0 } };
		int k;

		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			/* The launcher is gone (mpirun ended or died): so
			 * is the reason for what we run. */
			char c;

			if (read(fd, &c, 1) <= 0) {
				(void)kill(pid, SIGTERM);
				fd = -1;
				p[2].fd = -1;
			}
		}
		for (k = 0; k < 2; k++) {
			int dropped = -1;

			open_pipes -=
				relay_pipe(k || !drop_out ? &fd : &dropped,
					   &p[k], &rd[k], k ? 'e' : 'o');
		}
		/* With the launcher gone the pipes are still drained, so
		 * the command never blocks on a full one. */
	}
	return fd;
}

/*
 * Whether cmd starts OpenMPI's daemon: a word whose base name is orted
 * (mpirun may put variable assignments or a path before it).
 */
static int runs_orted(const char *cmd)
{
	const char *s = cmd;

	while (*s) {
		const char *e, *base;

		while (*s == ' ' || *s == '\t' || *s == ';')
			s++;
		e = s;
		while (*e && *e != ' ' && *e != '\t' && *e != ';')
			e++;
		for (base = e; base > s && base[-1] != '/';)
			base--;
		if (e - base == 5 && !strncmp(base, "orted", 5))
			return 1;
		s = e;
	}
	return 0;
}

/*
 * Runs one connection's command; the handler process exits with it.
 *
 * An orted's own stdout carries nothing but its copy of --display-map's
 * table, which mpirun prints already: over ssh the daemon detaches and
 * that copy goes nowhere, so it is dropped here too. Its stderr (errors)
 * is relayed; the ranks' output reaches mpirun through OpenMPI itself.
 */
static int serve(int fd, const char *token)
{
	int out[2], err[2], rd[2], status = 0;
	unsigned char code[4];
	char *cmd;
	int orted;
	pid_t pid;

	cmd = read_request(fd, token);
	if (!cmd)
		return RSH_EXIT_LAUNCH;
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		free(cmd);
		return RSH_EXIT_LAUNCH;
	}
	orted = runs_orted(cmd);
	pid = spawn_command(cmd, out, err);
	free(cmd);
	if (pid < 0)
		return RSH_EXIT_LAUNCH;
	close(out[1]);
	close(err[1]);
	rd[0] = out[0];
	rd[1] = err[0];
	fd = relay_output(fd, pid, rd, orted);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) :
				       WEXITSTATUS(status);
	code[0] = code[1] = code[2] = 0;
	code[3] = (unsigned char)status;
	if (fd >= 0)
		(void)frame(fd, 'x', code, 4);
	return status;
}

static volatile sig_atomic_t worker_stopped;

static void on_term(int sig)
{
	(void)sig;
	worker_stopped = 1;
}

/* Only there to interrupt poll(): a handler that ended is reaped now. */
static void on_child(int sig)
{
	(void)sig;
}

/*
 * SIGTERM (the agent stopping the assignment) is caught: once mpirun has
 * come, the handlers still running end with their commands, which the
 * same signal reaches. A worker whose daemons all ended well exits 0 as it
 * would have a moment later: the controller stops the other hosts as soon
 * as mpirun ends, and this is that stop arriving first, not a failure.
 * Otherwise (stopped before mpirun came, a daemon that did not end well,
 * or one still running after RSH_STOP_MS) it ends by the signal.
 */
static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_term;
	(void)sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP;
	(void)sigaction(SIGCHLD, &sa, NULL);
}

static void die_by_sigterm(void)
{
	signal(SIGTERM, SIG_DFL);
	(void)raise(SIGTERM);
	_exit(128 + SIGTERM);
}

/* The handlers a worker started, and what they ended with. */
struct worker {
	int lfd;
	const char *token;
	int served;  /* handlers that ended having served a command */
	int running; /* handlers not yet reaped */
	int result;  /* the first non-zero exit of a served command */
};

/* The listening socket on port, or -1 (said on stderr). */
static int worker_listen(int port)
{
	struct sockaddr_in a;
	int lfd, one = 1;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	a.sin_port = htons((uint16_t)port);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 16)) {
		fprintf(stderr,
			"trainagent mpi-worker: cannot listen on port %d: "
			"%s\n",
			port, strerror(errno));
		return -1;
	}
	return lfd;
}

/* Accepts one connection when there is one, served by a new handler. */
static void worker_accept(struct worker *w)
{
	struct pollfd p = { w->lfd, POLLIN, 0 };
	int cfd;
	pid_t h;

	if (poll(&p, 1, 200) <= 0 || !(p.revents & POLLIN))
		return;
	cfd = accept4(w->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	if (w->served + w->running < RSH_MAX_CONNECTIONS) {
		h = fork();
		if (h == 0) {
			close(w->lfd);
			_exit(serve(cfd, w->token));
		}
		if (h > 0)
			w->running++;
	}
	close(cfd);
}

/* Reaps the handlers that ended. */
static void worker_reap(struct worker *w)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		int code = WIFSIGNALED(st) ? 128 + WTERMSIG(st) :
					     WEXITSTATUS(st);

		w->running--;
		/* A refused connection (bad token) serves nothing. */
		if (code == RSH_EXIT_LAUNCH)
			continue;
		w->served++;
		if (code && !w->result)
			w->result = code;
	}
}

int agent_mpi_worker_main(int argc, char **argv)
{
	struct worker w = { -1, getenv("TRAINCTL_RDZV_TOKEN"), 0, 0, 0 };
	int64_t stop_by = 0;
	int port = 0, i;

	for (i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--port"))
			port = atoi(argv[i + 1]);
	if (port <= 0 || port > 65535 || !w.token || !*w.token) {
		fprintf(stderr, "trainagent mpi-worker: needs --port PORT and "
				"TRAINCTL_RDZV_TOKEN\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	w.lfd = worker_listen(port);
	if (w.lfd < 0)
		return 1;
	fprintf(stderr,
		"trainagent mpi-worker: waiting for mpirun on port %d\n", port);
	catch_signals();
	/* Until mpirun has come and everything it started has ended. */
	while (!w.served || w.running) {
		if (worker_stopped && !stop_by)
			stop_by = time_mono_ms() + RSH_STOP_MS;
		if (worker_stopped && (!w.running || time_mono_ms() >= stop_by))
			break;
		if (!worker_stopped)
			worker_accept(&w);
		worker_reap(&w);
		if (worker_stopped && w.running) {
			struct timespec ts = { 0, 10 * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
	close(w.lfd);
	if (worker_stopped && (!w.served || w.running || w.result))
		die_by_sigterm();
	return w.result;
}
