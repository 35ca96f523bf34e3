#define LOG_TAG "ctrl"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "controller/ctrl.h"
#include "controller/files.h"
#include "controller/hosts.h"
#include "controller/local_cluster.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

extern char **environ;

#define RESTART_MIN_MS 200
#define RESTART_MAX_MS 5000
#define RESTART_STABLE_MS 30000 /* ran this long: not crash-looping */
#define STOP_WAIT_MS 5000

/* Whether pid is a running trainagent (an agent adopted after a restart). */
static int is_agent(pid_t pid)
{
	char path[64];
	char cmd[512];
	ssize_t n;
	int fd;

	if (pid <= 0 || kill(pid, 0))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	cmd[n] = '\0';
	return strstr(cmd, "trainagent") != NULL;
}

static int spawn(struct ctrl_ctx *ctx, struct ctrl_host *h, int cpus)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t mask, defaults;
	struct buf tok = BUF_INIT, s3 = BUF_INIT, logp = BUF_INIT,
		   cpu = BUF_INIT, pidp = BUF_INIT, num = BUF_INIT;
	char **envp;
	size_t n_env = 0, i, k = 0;
	pid_t pid;
	int rc;
	char *argv[] = { ctx->cfg.agent_binary,
			 (char *)"--controller",
			 ctx->cfg.agent_controllers,
			 (char *)"--host",
			 h->name,
			 (char *)"--work-dir",
			 h->work_dir,
			 (char *)"--cpus",
			 NULL,
			 (char *)"--address",
			 (char *)"127.0.0.1",
			 NULL,
			 NULL,
			 NULL };

	(void)buf_addf(&cpu, "%d", cpus);
	argv[8] = cpu.data;
	if (ctx->tls_ca_path) {
		argv[11] = (char *)"--ca-file";
		argv[12] = ctx->tls_ca_path;
	}
	while (environ[n_env])
		n_env++;
	envp = xcalloc(n_env + 3, sizeof(*envp));
	for (i = 0; i < n_env; i++)
		if (strncmp(environ[i], "TRAINCTL_AGENT_TOKEN=", 21) &&
		    (!ctx->cfg.s3_endpoint ||
		     strncmp(environ[i], "TRAINCTL_S3_ENDPOINT=", 21)))
			envp[k++] = environ[i];
	(void)buf_addf(&tok, "TRAINCTL_AGENT_TOKEN=%s", h->token);
	envp[k++] = tok.data;
	/* The local agents reach S3 where this controller does. */
	if (ctx->cfg.s3_endpoint) {
		(void)buf_addf(&s3, "TRAINCTL_S3_ENDPOINT=%s",
			       ctx->cfg.s3_endpoint);
		envp[k++] = s3.data;
	}
	(void)buf_addf(&logp, "%s/agent.log", h->work_dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, logp.data,
					 O_WRONLY | O_CREAT | O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawnattr_init(&attr);
	/* Its own process group: a Ctrl-C to trainctld's terminal does not
	 * reach it; trainctld stops it on the way out. It starts with no
	 * signal blocked and SIGPIPE at its default, whatever this thread
	 * has. */
	sigemptyset(&mask);
	sigemptyset(&defaults);
	sigaddset(&defaults, SIGPIPE);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
						POSIX_SPAWN_SETSIGMASK |
						POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &mask);
	posix_spawnattr_setsigdefault(&attr, &defaults);
	rc = posix_spawn(&pid, ctx->cfg.agent_binary, &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free(envp);
	if (rc) {
		log_error("host '%s': cannot start '%s': %s", h->name,
			  ctx->cfg.agent_binary, strerror(rc));
	} else {
		h->pid = pid;
		h->spawned_ms = time_mono_ms();
		(void)buf_addf(&pidp, "%s/agent.pid", h->work_dir);
		(void)buf_addf(&num, "%d\n", (int)pid);
		ctrl_write_small(pidp.data, num.data);
		log_info("host '%s': agent started (pid %d)", h->name,
			 (int)pid);
	}
	buf_release(&tok);
	buf_release(&s3);
	buf_release(&logp);
	buf_release(&cpu);
	buf_release(&pidp);
	buf_release(&num);
	return rc ? ERR_IO : 0;
}

static int cpus_per_host(struct ctrl_ctx *ctx)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	int per = (int)(n / (ctx->cfg.local_hosts ? ctx->cfg.local_hosts : 1));

	return per < 1 ? 1 : per;
}

int ctrl_local_start(struct ctrl_ctx *ctx, struct buf *err)
{
	struct buf dir = BUF_INIT;
	struct buf p = BUF_INIT;
	int i;
	int ret = 0;

	if (access(ctx->cfg.agent_binary, X_OK)) {
		(void)buf_addf(err,
			       "agent binary '%s' is not executable "
			       "(build it, or give --agent-binary, or "
			       "--local-hosts 0)",
			       ctx->cfg.agent_binary);
		return ERR_INVALID;
	}
	(void)buf_addf(&dir, "%s/hosts", ctx->cfg.state_dir);
	mkdir(dir.data, 0711);
	(void)chmod(dir.data, 0711);
	for (i = 1; i <= ctx->cfg.local_hosts && !ret; i++) {
		struct ctrl_host *h;
		char name[32];
		char *token;
		char *pid;
		int existed;

		snprintf(name, sizeof(name), "local-%d", i);
		/* The token survives a controller restart, so agents left
		 * running keep working. */
		token = ctrl_host_token(ctx, name, &existed);
		pthread_mutex_lock(&ctx->hosts_lock);
		h = ctrl_hosts_add(ctx, name, token);
		h->local = 1;
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s", dir.data, name);
		h->work_dir = xstrdup(p.data);
		(void)buf_adds(&p, "/agent.pid");
		pid = ctrl_read_line(p.data);
		if (pid && is_agent((pid_t)atoi(pid))) {
			h->pid = (pid_t)atoi(pid);
			log_info("host '%s': adopting running agent (pid %d)",
				 name, (int)h->pid);
		} else {
			ret = spawn(ctx, h, cpus_per_host(ctx));
			if (ret)
				(void)buf_addf(err,
					       "cannot start the agent of "
					       "host '%s'",
					       name);
		}
		pthread_mutex_unlock(&ctx->hosts_lock);
		free(pid);
		free(token);
	}
	buf_release(&dir);
	buf_release(&p);
	return ret;
}

void ctrl_local_tick(struct ctrl_ctx *ctx)
{
	int64_t now = time_mono_ms();
	size_t i;

	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		struct ctrl_host *h = ctx->hosts[i];
		int status;
		int gone = 0;

		if (!h->local || ctx->stopping)
			continue;
		if (h->pid > 0) {
			pid_t r = waitpid(h->pid, &status, WNOHANG);

			/* An adopted agent is not our child: ECHILD. */
			gone = r == h->pid ||
			       (r < 0 && errno == ECHILD && !is_agent(h->pid));
			if (gone) {
				log_warn("host '%s': agent (pid %d) ended; "
					 "restarting",
					 h->name, (int)h->pid);
				h->pid = 0;
				/* An agent that ran a while starts afresh: the
				 * first restart is at once, then backing off
				 * while it keeps dying. */
				if (now - h->spawned_ms > RESTART_STABLE_MS)
					h->restarts = 0;
				h->restarts++;
				h->restart_at_ms =
					now +
					(h->restarts == 1 ?
						 0 :
					 h->restarts > 6 ?
						 RESTART_MAX_MS :
						 RESTART_MIN_MS
							 << (h->restarts - 2));
			}
		}
		if (h->pid == 0 && h->restart_at_ms &&
		    now >= h->restart_at_ms) {
			h->restart_at_ms = 0;
			spawn(ctx, h, cpus_per_host(ctx));
		}
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
}

void ctrl_local_stop(struct ctrl_ctx *ctx)
{
	int64_t deadline = time_mono_ms() + STOP_WAIT_MS;
	pid_t *pids;
	size_t n = 0, i;
	int left;

	/* Collect the agents under the lock, wait for them without it: the
	 * HTTP threads still need the hosts while agents say goodbye. */
	pthread_mutex_lock(&ctx->hosts_lock);
	pids = xcalloc(ctx->n_hosts + 1, sizeof(*pids));
	for (i = 0; i < ctx->n_hosts; i++) {
		if (ctx->hosts[i]->local && ctx->hosts[i]->pid > 0) {
			pids[n++] = ctx->hosts[i]->pid;
			ctx->hosts[i]->pid = 0;
		}
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	for (i = 0; i < n; i++)
		kill(pids[i], SIGTERM);
	do {
		left = 0;
		for (i = 0; i < n; i++) {
			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], NULL, WNOHANG) == pids[i] ||
			    (errno == ECHILD && !is_agent(pids[i])))
				pids[i] = 0;
			else
				left++;
		}
		if (left)
			usleep(20000);
	} while (left && time_mono_ms() < deadline);
	for (i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		log_warn("agent pid %d did not stop; killing it", (int)pids[i]);
		kill(-pids[i], SIGKILL);
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	free(pids);
}
