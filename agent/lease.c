/*
 * The host's lease, and the watchdog that enforces it.
 *
 * A host may run its attempts only while its lease holds: the lease ends
 * deadline - margin after the send time of the last request that the
 * controller counts as a sign of life (register, work poll, heartbeat)
 * and that it acknowledged. The controller declares the host lost only
 * deadline after it received that request, so when it starts a
 * replacement the lease has been over for at least the margin
 * (docs/distributed.md says the bounds).
 *
 * Killing the ranks when the lease ends must not depend on the agent
 * being scheduled: an agent that is frozen (SIGSTOP, a stuck page fault)
 * or dead cannot fence anything. So the agent publishes the lease's end
 * and the processes it guards (ranks and forked workers, each with its
 * kernel start time) in a small shared file, <work-dir>/lease, and a
 * separate process, `trainagent watchdog`, sleeps on the monotonic clock
 * and SIGKILLs every one of them once the lease ran out. The watchdog
 * outlives an agent killed with -9 (a restarted agent takes the same
 * file over and renews it); it leaves when the agent exits cleanly, when
 * the file goes, or when it has nothing left to guard and no agent.
 *
 * An agent provisioned over SSH (--token-stdin) has nobody on its host to
 * start it again when it dies: its watchdog does, at once (at most every
 * RESPAWN_MS), with the same command line and the token through a pipe
 * (never a file or an argument). The new agent finds the running ranks
 * in the job directories, takes the lease over before it ran out and
 * re-attaches to the attempt, so the job goes on without a restart.
 *
 * The table is written under a sequence count (odd while it changes), so
 * the watchdog never acts on half an entry.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/assignment.h"
#include "agent/lease.h"
#include "agent/proc.h"
#include "agent/task.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define LEASE_MAGIC 0x534c4354u /* "TCLS" */
#define LEASE_VERSION 1
#define WATCHDOG_TICK_MS 50
#define RESPAWN_MS 2000
#define TOKEN_MAX 4096

enum { LEASE_RANK = 1, LEASE_WORKER = 2 };

struct lease_proc {
	int32_t pid;
	int32_t kind;
	uint64_t start; /* /proc/<pid>/stat starttime */
};

struct agent_lease_page {
	uint32_t magic;
	uint32_t version;
	int32_t agent_pid;
	int32_t watchdog_pid;
	int32_t quit;	  /* the agent exits cleanly: leave */
	uint32_t n;	  /* entries of procs in use */
	int64_t until_ms; /* monotonic; 0: none */
	uint64_t fired;	  /* times the watchdog killed */
	uint64_t seq;	  /* odd while procs/n change */
	struct lease_proc procs[AGENT_LEASE_PROCS];
};

int64_t agent_lease_margin_ms(int64_t deadline_ms)
{
	int64_t m = deadline_ms / 10;

	return m < 50 ? 50 : m > 500 ? 500 : m;
}

/*
 * Reads /proc/<pid>/<name> into buf (NUL-terminated; it may hold NULs
 * too). Returns the bytes read, or -1.
 */
static ssize_t read_proc(int pid, const char *name, char *buf, size_t size)
{
	char path[64];
	ssize_t len;
	int fd;

	if (pid <= 0)
		return -1;
	(void)snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	return len;
}

uint64_t agent_proc_start_ticks(pid_t pid)
{
	char stat[1024], *p;
	unsigned long long start = 0;
	int field;

	if (read_proc((int)pid, "stat", stat, sizeof(stat)) < 0)
		return 0;
	/* Field 22 counts from the pid; comm (2) may hold anything. */
	p = strrchr(stat, ')');
	for (field = 2; p && *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (!p || sscanf(p, "%llu", &start) != 1)
		return 0;
	return start;
}

static int map_page(const char *path, int create, int *fd_out,
		    struct agent_lease_page **out, struct buf *err)
{
	struct agent_lease_page *pg;
	struct stat st;
	int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);

	if (fd < 0 || fstat(fd, &st) ||
	    ((size_t)st.st_size < sizeof(*pg) &&
	     (!create || ftruncate(fd, (off_t)sizeof(*pg))))) {
		(void)buf_addf(err, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ERR_IO;
	}
	pg = mmap(NULL, sizeof(*pg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (pg == MAP_FAILED) {
		(void)buf_addf(err, "mmap %s: %s", path, strerror(errno));
		close(fd);
		return ERR_IO;
	}
	*fd_out = fd;
	*out = pg;
	return 0;
}

static char *lease_path(const char *work_dir, const char *name)
{
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, "%s/%s", work_dir, name);
	return buf_detach(&b, NULL);
}

/* --- the agent's side ------------------------------------------------------
 */

static int watchdog_alive(const struct agent_lease_page *pg)
{
	char cmd[256];
	int pid = __atomic_load_n(&pg->watchdog_pid, __ATOMIC_ACQUIRE);
	ssize_t n;

	if (pid <= 0 || kill(pid, 0))
		return 0;
	n = read_proc(pid, "cmdline", cmd, sizeof(cmd));
	if (n <= 0)
		return 0;
	/* argv[1] follows argv[0]'s NUL. */
	return memchr(cmd, '\0', (size_t)n) &&
	       !strcmp(cmd + strlen(cmd) + 1, "watchdog");
}

/*
 * Forks and execs argv with line (and a newline) on its stdin, in a
 * session of its own. Returns the pid or -1.
 */
static pid_t spawn_with_stdin(const char *exe, char *const *argv,
			      const char *line)
{
	int p[2] = { -1, -1 };
	pid_t pid;

	if (line && pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		sigset_t none;

		(void)setsid();
		sigemptyset(&none);
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
		if (line && dup2(p[0], STDIN_FILENO) < 0)
			_exit(127);
		execv(exe, argv);
		_exit(127);
	}
	if (line) {
		close(p[0]);
		if (pid > 0 && (fs_write_all(p[1], line, strlen(line)) ||
				fs_write_all(p[1], "\n", 1)))
			log_warn("cannot hand the token over to pid %d",
				 (int)pid);
		close(p[1]);
	}
	return pid;
}

static void spawn_watchdog(struct agent_ctx *ctx)
{
	struct agent_lease *l = &ctx->lease;
	int respawn = ctx->cfg.token_stdin && ctx->argv;
	size_t n = 0, i;
	char **argv;
	pid_t pid;

	if (watchdog_alive(l->page))
		return;
	while (respawn && ctx->argv[n])
		n++;
	argv = xcalloc(n + 6, sizeof(*argv));
	argv[0] = (char *)"trainagent";
	argv[1] = (char *)"watchdog";
	argv[2] = ctx->cfg.work_dir;
	if (respawn) {
		argv[3] = (char *)"--respawn";
		for (i = 0; i < n; i++)
			argv[4 + i] = ctx->argv[i];
	}
	/* The binary may have been replaced on disk: this is the one we
	 * run. */
	pid = spawn_with_stdin("/proc/self/exe", argv,
			       respawn ? ctx->token : NULL);
	free(argv);
	if (pid < 0) {
		log_warn("cannot start the watchdog: %s", strerror(errno));
		return;
	}
	__atomic_store_n(&l->page->watchdog_pid, (int32_t)pid,
			 __ATOMIC_RELEASE);
	log_info("watchdog started (pid %d)", (int)pid);
}

int agent_lease_open(struct agent_ctx *ctx, struct buf *err)
{
	struct agent_lease *l = &ctx->lease;
	char *path = lease_path(ctx->cfg.work_dir, "lease");
	int ret;

	l->fd = -1;
	ret = map_page(path, 1, &l->fd, &l->page, err);
	free(path);
	if (ret)
		return ret;
	if (l->page->magic != LEASE_MAGIC ||
	    l->page->version != LEASE_VERSION) {
		memset(l->page, 0, sizeof(*l->page));
		l->page->version = LEASE_VERSION;
		__atomic_store_n(&l->page->magic, LEASE_MAGIC,
				 __ATOMIC_RELEASE);
	}
	/*
	 * A previous agent's lease still guards its processes: this agent
	 * may not make it longer before the controller has answered.
	 */
	if (l->page->until_ms > 0 && l->page->n)
		ctx->sess.lease_base =
			l->page->until_ms - ctx->sess.deadline_ms +
			agent_lease_margin_ms(ctx->sess.deadline_ms);
	__atomic_store_n(&l->page->quit, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&l->page->agent_pid, (int32_t)getpid(),
			 __ATOMIC_RELEASE);
	l->fired_seen = __atomic_load_n(&l->page->fired, __ATOMIC_ACQUIRE);
	spawn_watchdog(ctx);
	return 0;
}

static void add_proc(struct lease_proc *v, uint32_t *n, pid_t pid, int kind,
		     uint64_t *start)
{
	if (pid <= 0 || *n >= AGENT_LEASE_PROCS)
		return;
	if (!*start)
		*start = agent_proc_start_ticks(pid);
	if (!*start)
		return;
	v[*n].pid = pid;
	v[*n].kind = kind;
	v[*n].start = *start;
	(*n)++;
}

void agent_lease_sync(struct agent_ctx *ctx, int64_t now, int64_t until)
{
	struct agent_lease *l = &ctx->lease;
	struct agent_lease_page *pg = l->page;
	struct lease_proc v[AGENT_LEASE_PROCS];
	struct agent_assign *a;
	uint32_t n = 0;
	uint64_t fired;
	size_t i;

	if (!pg)
		return;
	for (a = ctx->assigns; a; a = a->next) {
		for (i = 0; i < a->n_ranks; i++) {
			struct agent_rank *r = &a->ranks[i];

			if (!r->proc.exited)
				add_proc(v, &n, r->proc.pid, LEASE_RANK,
					 &r->start_ticks);
		}
		if (agent_task_busy(&a->task) && !a->task.reaped)
			add_proc(v, &n, a->task.pid, LEASE_WORKER,
				 &a->task.start_ticks);
	}
	if (n != pg->n || memcmp(v, pg->procs, n * sizeof(*v))) {
		__atomic_add_fetch(&pg->seq, 1, __ATOMIC_ACQ_REL);
		memcpy(pg->procs, v, n * sizeof(*v));
		pg->n = n;
		__atomic_add_fetch(&pg->seq, 1, __ATOMIC_ACQ_REL);
	}
	if (__atomic_load_n(&pg->until_ms, __ATOMIC_ACQUIRE) != until)
		__atomic_store_n(&pg->until_ms, until, __ATOMIC_RELEASE);
	fired = __atomic_load_n(&pg->fired, __ATOMIC_ACQUIRE);
	if (fired != l->fired_seen) {
		l->fired_seen = fired;
		/* The agent fences by itself too when it runs: this says only
		 * that the watchdog acted, not that the agent was away. */
		log_warn("the watchdog killed this host's processes: the "
			 "lease ran out");
	}
	/* Now and then: a watchdog that died is started again. */
	if (now >= l->check_at) {
		l->check_at = now + 1000;
		spawn_watchdog(ctx);
	}
}

static void sleep_ms(int64_t ms);

/* How long a clean exit waits for the watchdog to leave too. */
#define WATCHDOG_QUIT_MS 1000

void agent_lease_close(struct agent_ctx *ctx)
{
	struct agent_lease *l = &ctx->lease;
	int64_t deadline = time_mono_ms() + WATCHDOG_QUIT_MS;
	int wd;

	if (!l->page)
		return;
	__atomic_store_n(&l->page->until_ms, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&l->page->seq, 1, __ATOMIC_ACQ_REL);
	l->page->n = 0;
	__atomic_add_fetch(&l->page->seq, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&l->page->quit, 1, __ATOMIC_RELEASE);
	/*
	 * The watchdog sees quit within a tick. Wait for it (reaping it when
	 * it is our child): whoever waits for the agent to exit, trainctld
	 * stopping its local hosts or a service manager, then finds nothing
	 * of it left.
	 */
	wd = __atomic_load_n(&l->page->watchdog_pid, __ATOMIC_ACQUIRE);
	while (wd > 0 && time_mono_ms() < deadline) {
		if (waitpid(wd, NULL, WNOHANG) == wd ||
		    !watchdog_alive(l->page))
			break;
		sleep_ms(5);
	}
	(void)munmap(l->page, sizeof(*l->page));
	l->page = NULL;
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

/* --- the watchdog ------------------------------------------------------------
 */

/* A consistent copy of the table; 0 when it kept changing. */
static int snapshot(const struct agent_lease_page *pg, struct lease_proc *v,
		    uint32_t *n)
{
	int tries;

	for (tries = 0; tries < 1000; tries++) {
		uint64_t s1 = __atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE);

		if (s1 & 1)
			continue;
		*n = pg->n < AGENT_LEASE_PROCS ? pg->n : AGENT_LEASE_PROCS;
		memcpy(v, pg->procs, *n * sizeof(*v));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE) == s1)
			return 1;
	}
	return 0;
}

/* SIGKILLs what the table guards; returns how many were still there. */
static int fire(struct agent_lease_page *pg)
{
	struct lease_proc v[AGENT_LEASE_PROCS];
	uint32_t n = 0, i;
	int killed = 0;

	if (!snapshot(pg, v, &n))
		return 0;
	for (i = 0; i < n; i++) {
		uint64_t now_start = agent_proc_start_ticks(v[i].pid);
		struct agent_proc p;

		agent_proc_init(&p);
		p.pid = v[i].pid;
		if (now_start && now_start != v[i].start)
			continue; /* the pid is somebody else's now */
		if (!now_start)
			p.exited = 1; /* the leader is gone: the rest */
		if (v[i].kind == LEASE_WORKER) {
			killed += kill(-v[i].pid, SIGKILL) == 0;
			continue;
		}
		killed += agent_proc_signal(&p, SIGKILL) == 0;
	}
	return killed;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000),
			       (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Alive and not a zombie. */
static int proc_alive(int pid)
{
	char stat[512], *p;

	if (pid <= 0 || kill(pid, 0) ||
	    read_proc(pid, "stat", stat, sizeof(stat)) < 0)
		return 0;
	p = strrchr(stat, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* The token on stdin (one line), for starting the agent again. */
static char *read_token(void)
{
	struct buf b = BUF_INIT_MAX(TOKEN_MAX);
	char c;

	for (;;) {
		ssize_t n = read(STDIN_FILENO, &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || c == '\n')
			break;
		if (buf_addch(&b, c)) {
			buf_release(&b);
			return NULL;
		}
	}
	return b.len ? buf_detach(&b, NULL) : (buf_release(&b), NULL);
}

/*
 * Starts the agent again; the pid goes to WORK_DIR/agent.pid when the
 * provisioner keeps one there (it checks that file before starting one).
 */
static pid_t respawn_agent(const char *work_dir, char **agent_argv,
			   const char *token)
{
	const char *exe = agent_argv[0];
	struct buf pidf = BUF_INIT, line = BUF_INIT;
	pid_t pid;

	/* The agent's own path: provisioning may have put a newer build
	 * there since this watchdog started. A binary that was removed is
	 * the provisioner's to copy again. */
	if (exe[0] == '/' && access(exe, X_OK))
		return -1;
	if (exe[0] != '/')
		exe = "/proc/self/exe";
	pid = spawn_with_stdin(exe, agent_argv, token);
	(void)buf_addf(&pidf, "%s/agent.pid", work_dir);
	(void)buf_addf(&line, "%d\n", (int)pid);
	if (pid > 0 && !access(pidf.data, F_OK))
		(void)fs_write_atomic(pidf.data, line.data, line.len, 0644, 0,
				      NULL);
	buf_release(&pidf);
	buf_release(&line);
	return pid;
}

/*
 * The agent (pid agent) is gone: starts it again, at most once every
 * RESPAWN_MS. Returns whether an agent runs now.
 */
static int respawn_gone_agent(struct agent_lease_page *pg, const char *work_dir,
			      char **agent_argv, const char *token, int agent,
			      int64_t now, int64_t *respawned_at)
{
	pid_t pid;

	if (!agent_argv || now - *respawned_at < RESPAWN_MS)
		return 0;
	*respawned_at = now;
	pid = respawn_agent(work_dir, agent_argv, token);
	if (pid <= 0)
		return 0;
	log_warn("the agent (pid %d) is gone: started it again (pid %d)", agent,
		 (int)pid);
	/* It says so itself once it runs. */
	__atomic_store_n(&pg->agent_pid, (int32_t)pid, __ATOMIC_RELEASE);
	return 1;
}

/*
 * Guards the lease at path (want: its file when mapped) until told to
 * quit, until the work directory goes, or until there is neither an
 * agent nor a lease (left) to guard.
 */
static void watch(struct agent_lease_page *pg, const char *path,
		  const struct stat *want, const char *work_dir,
		  char **agent_argv, const char *token)
{
	struct stat now_st;
	int64_t fired_for = -1, respawned_at = 0;

	for (;;) {
		int64_t until =
			__atomic_load_n(&pg->until_ms, __ATOMIC_ACQUIRE);
		int agent = __atomic_load_n(&pg->agent_pid, __ATOMIC_ACQUIRE);
		int64_t now = time_mono_ms();
		int agent_alive = proc_alive(agent);

		if (__atomic_load_n(&pg->quit, __ATOMIC_ACQUIRE))
			break;
		if (stat(path, &now_st) || now_st.st_ino != want->st_ino ||
		    now_st.st_dev != want->st_dev)
			break; /* the work directory went */
		if (until > 0 && now >= until && until != fired_for && pg->n) {
			fired_for = until;
			if (fire(pg) > 0)
				__atomic_add_fetch(&pg->fired, 1,
						   __ATOMIC_ACQ_REL);
		}
		if (!agent_alive)
			agent_alive = respawn_gone_agent(pg, work_dir,
							 agent_argv, token,
							 agent, now,
							 &respawned_at);
		if (!agent_alive && (!pg->n || fired_for == until))
			break; /* no agent, nothing (left) to guard */
		/* The agents it started are its children. */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		sleep_ms(until > now && until - now < WATCHDOG_TICK_MS ?
				 until - now :
				 WATCHDOG_TICK_MS);
	}
}

/*
 * `trainagent watchdog WORK_DIR [--respawn AGENT-ARGV...]` (the token on
 * stdin with --respawn).
 */
int agent_watchdog_main(int argc, char **argv)
{
	struct agent_lease_page *pg;
	struct buf err = BUF_INIT;
	struct stat want;
	char *path, *lock, *token = NULL;
	char **agent_argv = NULL;
	int fd = -1, lock_fd, ret = 0;

	if (argc >= 4 && !strcmp(argv[2], "--respawn")) {
		agent_argv = argv + 3;
		token = read_token();
		if (!token)
			agent_argv = NULL;
	} else if (argc != 2) {
		fprintf(stderr, "usage: trainagent watchdog WORK_DIR "
				"[--respawn AGENT-ARGV...]\n");
		return 2;
	}
	path = lease_path(argv[1], "lease");
	lock = lease_path(argv[1], "watchdog.lock");
	lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	pg = NULL;
	/* One watchdog per work directory. */
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB))
		goto out;
	if (map_page(path, 0, &fd, &pg, &err) || fstat(fd, &want) ||
	    pg->magic != LEASE_MAGIC) {
		fprintf(stderr, "trainagent watchdog: %s\n",
			err.len ? err.data : "no lease file");
		ret = 1;
		goto out;
	}
	__atomic_store_n(&pg->watchdog_pid, (int32_t)getpid(),
			 __ATOMIC_RELEASE);
	watch(pg, path, &want, argv[1], agent_argv, token);
	__atomic_store_n(&pg->watchdog_pid, 0, __ATOMIC_RELEASE);
out:
	if (pg)
		(void)munmap(pg, sizeof(*pg));
	if (fd >= 0)
		close(fd);
	if (lock_fd >= 0)
		close(lock_fd);
	free(path);
	free(lock);
	if (token) {
		memset(token, 0, strlen(token));
		free(token);
	}
	buf_release(&err);
	return ret;
}
