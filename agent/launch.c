/*
 * The argv, environment and working directory of an assignment's ranks,
 * and starting them.
 *
 * The environment is complete and explicit, in layers (later wins):
 *   1. a minimal base: PATH, HOME, LANG, USER (PYTHONUNBUFFERED=1 and
 *      PYTHONPATH=<code> for Python);
 *   2. api_sm_env_build(): the request's Environment, TRAINING_JOB_NAME
 *      and _ARN, then what sagemaker-training-toolkit sets (SM_*,
 *      CURRENT_HOST, ...) — the toolkit's order, so SM_* beat a request
 *      that sets them, as in a real container;
 *   3. ours: TRAINCTL_JOB, TRAINCTL_ATTEMPT, MASTER_ADDR and MASTER_PORT
 *      (as the PyTorch container sets on every run) and, with more than
 *      one process per host, the torchrun-style rank variables.
 * Nothing of the agent's own environment leaks in (its token least of
 * all).
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "api/sm_env.h"
#include "common/err.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define BASE_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static int is_python(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "python", 6);
}

static void base_env(struct agent_strv *env, int python, const char *code)
{
	const char *lang = getenv("LANG");
	const struct passwd *pw = getpwuid(geteuid());

	agent_env_set(env, "PATH", BASE_PATH);
	agent_env_set(env, "HOME",
		      pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/");
	agent_env_set(env, "LANG", lang && *lang ? lang : "C.UTF-8");
	agent_env_set(env, "USER", pw && pw->pw_name ? pw->pw_name : "root");
	if (python) {
		agent_env_set(env, "PYTHONUNBUFFERED", "1");
		agent_env_set(env, "PYTHONPATH", code);
	}
}

/* argv of one rank, before the user arguments. */
static int program_argv(const struct agent_assign *a, const char *code_dir,
			struct agent_strv *args, int *python, struct buf *err)
{
	const struct api_assignment *s = &a->spec;
	struct buf path = BUF_INIT;
	size_t i;

	*python = 0;
	if (s->launch_mode == API_LAUNCH_EXEC) {
		if (!s->argv || !s->argv[0]) {
			(void)buf_adds(err, "exec launch without argv");
			return ERR_INVALID;
		}
		for (i = 0; s->argv[i]; i++)
			agent_strv_push(args, s->argv[i]);
		*python = is_python(s->argv[0]);
		return 0;
	}
	if (!s->program || !*s->program || strstr(s->program, "..") ||
	    s->program[0] == '/') {
		(void)buf_addf(err, "script launch: bad program '%s'",
			       s->program ? s->program : "");
		return ERR_INVALID;
	}
	if (ends_with(s->program, ".py")) {
		agent_strv_push(args, s->runtime && *s->runtime ?
					      s->runtime :
					      "/usr/bin/python3");
		agent_strv_push(args, s->program);
		*python = 1;
	} else if (ends_with(s->program, ".sh")) {
		agent_strv_push(args, "/bin/sh");
		agent_strv_push(args, s->program);
	} else {
		/* The toolkit makes it executable (chmod 0777) first. */
		(void)buf_addf(&path, "%s/%s", code_dir, s->program);
		if (chmod(path.data, 0755) && errno != ENOENT)
			log_warn("chmod %s: %s", path.data, strerror(errno));
		buf_release(&path);
		agent_strv_pushf(args, "./%s", s->program);
	}
	return 0;
}

/* Whether dir has any entry (the stager leaves code/ empty without code). */
static int has_entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = 0;

	while (d && !r && (de = readdir(d)))
		r = strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (d)
		closedir(d);
	return r;
}

char *agent_fifo_path(const char *dir, int rank, const char *stream)
{
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, "%s/.trainagent/rank%d.%s", dir, rank, stream);
	return buf_detach(&b, NULL);
}

static void rank_init(struct agent_rank *r, int rank)
{
	memset(r, 0, sizeof(*r));
	agent_proc_init(&r->proc);
	agent_lines_init(&r->out, 0);
	agent_lines_init(&r->err, 0);
	r->pidfd = -1;
	r->rank = rank;
}

int agent_launch(struct agent_ctx *ctx, struct agent_assign *a, struct buf *err)
{
	const struct api_assignment *s = &a->spec;
	struct api_sm_env_input in;
	struct api_kv *smenv = NULL;
	char **user_args = NULL;
	size_t n_smenv = 0, i, j;
	struct agent_strv args = AGENT_STRV_INIT;
	struct agent_strv env = AGENT_STRV_INIT;
	struct buf code = BUF_INIT, code_host = BUF_INIT, cwd = BUF_INIT;
	int python = 0, bound = ctx->can_bind, nproc, ret;
	const char *base = bound ? "/opt/ml" : a->dir;

	nproc = s->processes_per_host > 0 ? s->processes_per_host : 1;
	(void)buf_addf(&code_host, "%s/code", a->dir);
	(void)buf_addf(&code, "%s/code", base);
	memset(&in, 0, sizeof(in));
	in.base_dir = base;
	in.hyperparameters_json = s->hyperparameters_json;
	in.input_data_config_json = s->input_data_config_json;
	in.resource_config_json = s->resource_config_json;
	in.job_name = s->job;
	in.job_arn = s->job_arn;
	in.region = getenv("AWS_REGION");
	if (s->launch_mode == API_LAUNCH_SCRIPT)
		in.user_entry_point = s->program;
	in.num_cpus = ctx->cfg.cpus;
	in.num_gpus = ctx->cfg.gpus;
	in.environment = s->environment;
	in.n_environment = s->n_environment;
	ret = api_sm_env_build(&in, &smenv, &n_smenv, &user_args, err);
	if (ret)
		goto out;
	ret = program_argv(a, code_host.data, &args, &python, err);
	if (ret)
		goto out;
	if (s->launch_mode == API_LAUNCH_SCRIPT)
		for (i = 0; user_args && user_args[i]; i++)
			agent_strv_push(&args, user_args[i]);
	base_env(&env, python, code.data);
	for (i = 0; i < n_smenv; i++)
		agent_env_set(&env, smenv[i].key, smenv[i].value);
	agent_env_set(&env, "TRAINCTL_JOB", s->job);
	agent_strv_pushf(&env, "TRAINCTL_ATTEMPT=%d", s->attempt);
	if (s->master_addr && *s->master_addr)
		agent_env_set(&env, "MASTER_ADDR", s->master_addr);
	if (s->master_port > 0)
		agent_strv_pushf(&env, "MASTER_PORT=%d", s->master_port);
	/* Script mode runs in code/; exec mode too when there is code. */
	if (s->launch_mode == API_LAUNCH_SCRIPT || has_entries(code_host.data))
		(void)buf_adds(&cwd, code.data);
	else
		(void)buf_adds(&cwd, base);

	a->ranks = xcalloc((size_t)nproc, sizeof(*a->ranks));
	a->n_ranks = (size_t)nproc;
	for (i = 0; i < (size_t)nproc; i++) {
		struct agent_rank *r = &a->ranks[i];

		rank_init(r, (int)i);
		for (j = 0; j < args.n; j++)
			agent_strv_push(&r->proc.args, args.v[j]);
		for (j = 0; j < env.n; j++)
			agent_strv_push(&r->proc.env, env.v[j]);
		if (nproc > 1) {
			int world = nproc * (int)(s->n_hosts ? s->n_hosts : 1);

			agent_strv_pushf(&r->proc.env, "RANK=%d",
					 s->host_index * nproc + (int)i);
			agent_strv_pushf(&r->proc.env, "LOCAL_RANK=%zu", i);
			agent_strv_pushf(&r->proc.env, "WORLD_SIZE=%d", world);
			agent_strv_pushf(&r->proc.env, "LOCAL_WORLD_SIZE=%d",
					 nproc);
			agent_strv_pushf(&r->proc.env, "NODE_RANK=%d",
					 s->host_index);
			agent_strv_pushf(&r->proc.env, "GROUP_RANK=%d",
					 s->host_index);
		}
		r->proc.cwd = xstrdup(cwd.data);
		r->proc.out_fifo = agent_fifo_path(a->dir, (int)i, "stdout");
		r->proc.err_fifo = agent_fifo_path(a->dir, (int)i, "stderr");
		if (bound)
			r->proc.bind_dir = xstrdup(a->dir);
		ret = agent_proc_start(&r->proc, err);
		if (ret) {
			/* Those already started must not run alone. */
			for (j = 0; j < i; j++)
				(void)agent_proc_signal(&a->ranks[j].proc,
							SIGKILL);
			r->proc.exited = 1;
			r->proc.exit_code = 127;
			for (j = i + 1; j < (size_t)nproc; j++)
				rank_init(&a->ranks[j], (int)j);
			a->n_ranks = i + 1;
			goto out;
		}
		if (r->proc.start_errno)
			log_warn("%s/%d/%s: rank %zu could not start: %s",
				 a->job, a->attempt, a->algo, i,
				 strerror(r->proc.start_errno));
		else
			log_info("%s/%d/%s: rank %zu started: pid %d, %s%s",
				 a->job, a->attempt, a->algo, i,
				 (int)r->proc.pid, args.v[0],
				 bound ? " (private /opt/ml)" : "");
	}
	a->bound = bound;
out:
	api_sm_env_release(smenv, n_smenv, user_args);
	agent_strv_release(&args);
	agent_strv_release(&env);
	buf_release(&code);
	buf_release(&code_host);
	buf_release(&cwd);
	return ret;
}
