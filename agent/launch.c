/*
 * The argv, environment and working directory of an assignment's ranks,
 * and starting them.
 *
 * The environment is complete and explicit, in layers (later wins):
 *   1. a minimal base: PATH, HOME, LANG, USER, PYTHONFAULTHANDLER=1 (a
 *      hung Python rank's stacks on SIGABRT, agent/hangwatch.c; in every
 *      rank, since a shell may start Python; the request's Environment
 *      may turn it off) and, for Python, PYTHONUNBUFFERED=1 and
 *      PYTHONPATH=<code>[:<base>/.trainagent/runtime] (the modules built
 *      into the agent, agent/runtime.c);
 *   2. api_sm_env_build(): the request's Environment, TRAINING_JOB_NAME
 *      and _ARN, then what sagemaker-training-toolkit sets (SM_*,
 *      CURRENT_HOST, ...) — the toolkit's order, so SM_* beat a request
 *      that sets them, as in a real container;
 *   3. ours: TRAINCTL_JOB, TRAINCTL_ATTEMPT, TRAINCTL_CHECKPOINT_NOW
 *      (agent/ckptnow.c), MASTER_ADDR and MASTER_PORT
 *      (as the PyTorch container sets on every run) and, with more than
 *      one process per host, the torchrun-style rank variables.
 * Nothing of the agent's own environment leaks in (its token least of
 * all).
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/assignment.h"
#include "agent/ckptnow.h"
#include "agent/ident.h"
#include "agent/jobdir.h"
#include "agent/launch.h"
#include "agent/lines.h"
#include "agent/podman.h"
#include "agent/proc.h"
#include "agent/pyenv.h"
#include "agent/runtime.h"
#include "api/distribution.h"
#include "api/sm_env.h"
#include "common/err.h"
#include "common/log.h"
#include "common/netutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

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

static void base_env(struct strvec *env, int python, const char *code,
		     const char *runtime, const struct agent_ident *id)
{
	struct buf path = BUF_INIT;

	const char *lang = getenv("LANG");
	const struct passwd *pw = getpwuid(id->set ? id->uid : geteuid());

	agent_env_set(env, "PATH", AGENT_BASE_PATH);
	agent_env_set(env, "HOME",
		      pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/");
	agent_env_set(env, "LANG", lang && *lang ? lang : "C.UTF-8");
	agent_env_set(env, "USER", pw && pw->pw_name ? pw->pw_name : "root");
	agent_env_set(env, "PYTHONFAULTHANDLER", "1");
	if (python) {
		agent_env_set(env, "PYTHONUNBUFFERED", "1");
		(void)buf_adds(&path, code);
		if (runtime)
			(void)buf_addf(&path, ":%s", runtime);
		agent_env_set(env, "PYTHONPATH", path.data);
	}
	buf_release(&path);
}

/*
 * argv of one rank, before the user arguments; venv: the job's Python
 * environment as the rank sees it (NULL: none).
 */
static int program_argv(const struct agent_assign *a, const char *code_dir,
			const char *venv, struct strvec *args, int *python,
			struct buf *err)
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
			strvec_push(args, s->argv[i]);
		*python = is_python(s->argv[0]);
		return 0;
	}
	if (!s->program || !*s->program || strstr(s->program, "..") ||
	    s->program[0] == '/') {
		(void)buf_addf(err, "script launch: bad program '%s'",
			       s->program ? s->program : "");
		return ERR_INVALID;
	}
	if (ends_with(s->program, ".py") && venv) {
		strvec_pushf(args, "%s/bin/python3", venv);
		strvec_push(args, s->program);
		*python = 1;
	} else if (ends_with(s->program, ".py")) {
		strvec_push(args, s->runtime && *s->runtime ?
					  s->runtime :
					  "/usr/bin/python3");
		strvec_push(args, s->program);
		*python = 1;
	} else if (ends_with(s->program, ".sh")) {
		strvec_push(args, "/bin/sh");
		strvec_push(args, s->program);
	} else {
		/* The toolkit makes it executable (chmod 0777) first. */
		(void)buf_addf(&path, "%s/%s", code_dir, s->program);
		if (chmod(path.data, 0755) && errno != ENOENT)
			log_warn("chmod %s: %s", path.data, strerror(errno));
		buf_release(&path);
		strvec_pushf(args, "./%s", s->program);
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

static void rank_init(struct agent_rank *r, int rank)
{
	memset(r, 0, sizeof(*r));
	agent_proc_init(&r->proc);
	agent_lines_init(&r->out, 0);
	agent_lines_init(&r->err, 0);
	r->pidfd = -1;
	r->rank = rank;
}

/*
 * The interface that holds address, and its network as a CIDR (for
 * NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME and OpenMPI's
 * btl/oob_tcp_if_include, which want a network: interface names differ
 * between hosts). Returns 0 or ERR_NOTFOUND.
 */
static int netif_of(const char *address, char *name, size_t name_len,
		    char *cidr, size_t cidr_len)
{
	struct ifaddrs *ifs = NULL, *i;
	struct in_addr want;
	int ret = ERR_NOTFOUND;

	if (!address || inet_pton(AF_INET, address, &want) != 1 ||
	    getifaddrs(&ifs))
		return ERR_NOTFOUND;
	for (i = ifs; i; i = i->ifa_next) {
		const struct sockaddr_in *sa = (const void *)i->ifa_addr;
		const struct sockaddr_in *nm = (const void *)i->ifa_netmask;
		uint32_t mask;
		struct in_addr net;
		char nb[INET_ADDRSTRLEN];
		int bits = 0;

		if (!sa || sa->sin_family != AF_INET || !nm ||
		    sa->sin_addr.s_addr != want.s_addr)
			continue;
		mask = ntohl(nm->sin_addr.s_addr);
		while (bits < 32 && (mask & (0x80000000u >> bits)))
			bits++;
		net.s_addr = sa->sin_addr.s_addr & nm->sin_addr.s_addr;
		inet_ntop(AF_INET, &net, nb, sizeof(nb));
		(void)snprintf(name, name_len, "%s", i->ifa_name);
		(void)snprintf(cidr, cidr_len, "%s/%d", nb, bits);
		ret = 0;
		break;
	}
	freeifaddrs(ifs);
	return ret;
}

static char *self_exe(void)
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (n <= 0)
		return xstrdup("trainagent");
	path[n] = '\0';
	/* Provisioning may have replaced the binary since this agent
	 * started: the file now at that path is the one to run. */
	if (n > 10 && !strcmp(path + n - 10, " (deleted)"))
		path[n - 10] = '\0';
	return xstrdup(path);
}

/* Splits custom mpirun options on white space (as the toolkit does). */
static void push_words(struct strvec *v, const char *s)
{
	while (s && *s) {
		const char *e;

		while (*s == ' ' || *s == '\t' || *s == '\n')
			s++;
		e = s;
		while (*e && *e != ' ' && *e != '\t' && *e != '\n')
			e++;
		if (e > s) {
			char *w = xstrndup(s, (size_t)(e - s));

			strvec_push(v, w);
			free(w);
		}
		s = e;
	}
}

/*
 * MPI mode on algo-1: mpirun over every host, with the toolkit's options
 * (contract 6.2) except that the remote launcher is `trainagent rsh`
 * and the daemons stay attached to it (not daemonized), so they live in
 * the sessions the agents made. algo-1 is named by its address so that
 * mpirun knows it is local; the others by algo-N, which the launcher
 * maps to their workers through TRAINCTL_MPI_PEERS.
 */
static int mpi_leader_argv(const struct api_assignment *s, const char *exe,
			   const char *cidr, const struct strvec *prog,
			   const struct strvec *env, struct strvec *args,
			   struct buf *peers, struct buf *err)
{
	int ppn = s->processes_per_host > 0 ? s->processes_per_host : 1;
	int np = s->mpi_processes > 0 ? s->mpi_processes :
					ppn * (int)s->n_hosts;
	struct buf hosts = BUF_INIT;
	char *mpirun = agent_proc_which("mpirun", env);
	size_t i;

	if (!mpirun) {
		(void)buf_adds(err, "MPI mode needs mpirun (OpenMPI) on the "
				    "PATH of algo-1");
		return ERR_NOTFOUND;
	}
	for (i = 0; i < s->n_hosts; i++) {
		(void)buf_addf(&hosts, "%s%s:%d", i ? "," : "",
			       i ? s->hosts[i] : s->addresses[0], ppn);
		if (i)
			(void)buf_addf(peers, "%s%s=%s:%d",
				       peers->len ? "," : "", s->hosts[i],
				       s->addresses[i],
				       s->master_port + 2 * (int)i);
	}
	strvec_push(args, mpirun);
	free(mpirun);
	strvec_push(args, "--host");
	strvec_push(args, hosts.data);
	strvec_push(args, "-np");
	strvec_pushf(args, "%d", np);
	strvec_push(args, "--allow-run-as-root");
	strvec_push(args, "--display-map");
	strvec_push(args, "--tag-output");
	strvec_push(args, "-mca");
	strvec_push(args, "plm_rsh_agent");
	strvec_pushf(args, "%s rsh", exe);
	strvec_push(args, "-mca");
	strvec_push(args, "plm_rsh_no_tree_spawn");
	strvec_push(args, "1");
	strvec_push(args, "-mca");
	strvec_push(args, "orte_leave_session_attached");
	strvec_push(args, "1");
	if (cidr && *cidr) {
		strvec_push(args, "-mca");
		strvec_push(args, "btl_tcp_if_include");
		strvec_push(args, cidr);
		strvec_push(args, "-mca");
		strvec_push(args, "oob_tcp_if_include");
		strvec_push(args, cidr);
	}
	strvec_push(args, "-bind-to");
	strvec_push(args, "none");
	strvec_push(args, "-map-by");
	strvec_push(args, "slot");
	strvec_push(args, "-mca");
	strvec_push(args, "pml");
	strvec_push(args, "ob1");
	strvec_push(args, "-mca");
	strvec_push(args, "btl");
	strvec_push(args, "^openib");
	strvec_push(args, "-mca");
	strvec_push(args, "orte_abort_on_non_zero_status");
	strvec_push(args, "1");
	strvec_push(args, "-mca");
	strvec_push(args, "btl_vader_single_copy_mechanism");
	strvec_push(args, "none");
	strvec_push(args, "-x");
	strvec_push(args, "NCCL_MIN_NRINGS=4");
	push_words(args, s->mpi_options);
	for (i = 0; i < prog->n; i++)
		strvec_push(args, prog->v[i]);
	buf_release(&hosts);
	return 0;
}

/* What one process of the assignment is: its role in the mode. */
struct rank_role {
	const char *tf_type; /* TF_CONFIG task type, NULL: none */
	int tf_index;
	const char *role; /* TRAINCTL_ROLE, NULL: none */
	int role_index;	  /* servers 0..K-1, workers 0..N-1 (chief 0) */
};

/* Parameter servers: hosts [0, K) run a server as rank 0 too. */
static size_t ps_count(const struct api_assignment *s)
{
	size_t k = s->ps_servers > 0 ? (size_t)s->ps_servers : s->n_hosts;

	return k > s->n_hosts ? s->n_hosts : k;
}

static int mode_nproc(const struct api_assignment *s)
{
	switch (s->dist_mode) {
	case API_DIST_NONE: /* more than one: torchrun-style, as below */
	case API_DIST_TORCH:
		return s->processes_per_host > 0 ? s->processes_per_host : 1;
	case API_DIST_PARAMETER_SERVER:
		return (size_t)s->host_index < ps_count(s) ? 2 : 1;
	default:
		return 1;
	}
}

static void role_of(const struct api_assignment *s, int rank,
		    struct rank_role *r)
{
	memset(r, 0, sizeof(*r));
	if (s->dist_mode == API_DIST_MULTI_WORKER_MIRRORED) {
		r->tf_type = "worker";
		r->tf_index = s->host_index;
		r->role = "worker";
		r->role_index = s->host_index;
	} else if (s->dist_mode == API_DIST_PARAMETER_SERVER) {
		int server = (size_t)s->host_index < ps_count(s) && rank == 0;

		r->role = server ? "ps" : "worker";
		r->tf_type = server		? "ps" :
			     s->host_index == 0 ? "master" :
						  "worker";
		r->tf_index = server		 ? s->host_index :
			      s->host_index == 0 ? 0 :
						   s->host_index - 1;
		r->role_index = s->host_index;
	}
}

/* What api_sm_env_build() is given: the assignment, seen from base. */
static void sm_env_input(const struct agent_ctx *ctx,
			 const struct api_assignment *s, const char *base,
			 struct api_sm_env_input *in)
{
	memset(in, 0, sizeof(*in));
	in->base_dir = base;
	in->hyperparameters_json = s->hyperparameters_json;
	in->input_data_config_json = s->input_data_config_json;
	in->resource_config_json = s->resource_config_json;
	in->job_name = s->job;
	in->job_arn = s->job_arn;
	in->region = getenv("AWS_REGION");
	if (s->launch_mode == API_LAUNCH_SCRIPT)
		in->user_entry_point = s->program;
	in->num_cpus = ctx->cfg.cpus;
	in->num_gpus = ctx->cfg.gpus;
	in->environment = s->environment;
	in->n_environment = s->n_environment;
}

/* Layers 2 and 3 of the environment, those every rank shares. */
static void job_env(const struct agent_ctx *ctx, const struct agent_assign *a,
		    int bound, const struct api_kv *smenv, size_t n_smenv,
		    const char *ifname, struct strvec *env)
{
	const struct api_assignment *s = &a->spec;
	char *ckpt;
	size_t i;

	for (i = 0; i < n_smenv; i++)
		agent_env_set(env, smenv[i].key, smenv[i].value);
	agent_env_set(env, "TRAINCTL_JOB", s->job);
	strvec_pushf(env, "TRAINCTL_ATTEMPT=%d", s->attempt);
	agent_ckptnow_env(bound ? "/opt/ml" : a->dir, env);
	if (s->master_addr && *s->master_addr)
		agent_env_set(env, "MASTER_ADDR", s->master_addr);
	if (s->master_port > 0)
		strvec_pushf(env, "MASTER_PORT=%d", s->master_port);
	if (s->rdzv_url && s->rdzv_token) {
		agent_env_set(env, "TRAINCTL_RDZV_URL", s->rdzv_url);
		if (ctx->cfg.ca_file)
			agent_env_set(env, "TRAINCTL_CA_FILE",
				      ctx->cfg.ca_file);
		agent_env_set(env, "TRAINCTL_RDZV_TOKEN", s->rdzv_token);
	}
	agent_env_set(env, "TRAINCTL_DISTRIBUTION",
		      api_dist_mode_name(s->dist_mode));
	ckpt = bound ? xstrdup(s->checkpoint_local_path &&
					       *s->checkpoint_local_path ?
				       s->checkpoint_local_path :
				       "/opt/ml/checkpoints") :
		       agent_jobdir_checkpoint_path(a->dir,
						    s->checkpoint_local_path);
	agent_env_set(env, "TRAINCTL_CHECKPOINT_DIR", ckpt);
	free(ckpt);
	/* What the PyTorch container sets on every run, and what gloo
	 * needs to pick the host's own network. The job's Environment
	 * wins. */
	if (*ifname) {
		if (!agent_env_get(env, "NCCL_SOCKET_IFNAME"))
			agent_env_set(env, "NCCL_SOCKET_IFNAME", ifname);
		if (!agent_env_get(env, "GLOO_SOCKET_IFNAME"))
			agent_env_set(env, "GLOO_SOCKET_IFNAME", ifname);
	}
}

/* The job's Python environment comes first, as if activated. */
static void venv_env(const char *venv, struct strvec *env)
{
	const char *path = agent_env_get(env, "PATH");
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, "%s/bin%s%s", venv, path && *path ? ":" : "",
		       path ? path : "");
	agent_env_set(env, "PATH", b.data);
	agent_env_set(env, "VIRTUAL_ENV", venv);
	buf_release(&b);
}

/* The torchrun variables every rank of a host shares; on algo-1, that
 * MASTER_PORT is free. */
static int torch_env(const struct api_assignment *s, int nproc,
		     struct strvec *env, struct buf *err)
{
	strvec_pushf(env, "TORCHELASTIC_RESTART_COUNT=%d",
		     s->attempt > 0 ? s->attempt - 1 : 0);
	agent_env_set(env, "TORCHELASTIC_RUN_ID", s->job);
	agent_env_set(env, "TORCHELASTIC_USE_AGENT_STORE", "False");
	agent_env_set(env, "ROLE_NAME", "default");
	strvec_pushf(env, "GROUP_WORLD_SIZE=%zu", s->n_hosts ? s->n_hosts : 1);
	if (nproc > 1 && !agent_env_get(env, "OMP_NUM_THREADS"))
		agent_env_set(env, "OMP_NUM_THREADS", "1");
	if (s->host_index == 0 && s->master_port > 0 &&
	    !net_port_bindable(s->master_port)) {
		(void)buf_addf(err, "MASTER_PORT %d is in use on algo-1",
			       s->master_port);
		return ERR_CONFLICT;
	}
	return 0;
}

/* argv of every rank: the program, or in MPI mode mpirun on algo-1 and
 * the MPI worker elsewhere. */
static int mode_argv(const struct api_assignment *s, const char *exe,
		     const char *cidr, const struct strvec *prog,
		     struct strvec *env, struct strvec *args, struct buf *err)
{
	struct buf peers = BUF_INIT;
	size_t i;
	int ret = 0;

	if (s->dist_mode == API_DIST_MPI && s->host_index == 0) {
		ret = mpi_leader_argv(s, exe, cidr, prog, env, args, &peers,
				      err);
		if (!ret && peers.len)
			agent_env_set(env, "TRAINCTL_MPI_PEERS", peers.data);
	} else if (s->dist_mode == API_DIST_MPI) {
		strvec_push(args, exe);
		strvec_push(args, "mpi-worker");
		strvec_push(args, "--port");
		strvec_pushf(args, "%d", s->master_port + 2 * s->host_index);
	} else {
		for (i = 0; i < prog->n; i++)
			strvec_push(args, prog->v[i]);
	}
	buf_release(&peers);
	return ret;
}

/* What torchrun gives each rank. */
static void torchrun_rank_env(const struct api_assignment *s, int nproc,
			      size_t i, struct strvec *env)
{
	int world = nproc * (int)(s->n_hosts ? s->n_hosts : 1);
	int rank = s->host_index * nproc + (int)i;

	strvec_pushf(env, "RANK=%d", rank);
	strvec_pushf(env, "LOCAL_RANK=%zu", i);
	strvec_pushf(env, "WORLD_SIZE=%d", world);
	strvec_pushf(env, "LOCAL_WORLD_SIZE=%d", nproc);
	strvec_pushf(env, "NODE_RANK=%d", s->host_index);
	strvec_pushf(env, "GROUP_RANK=%d", s->host_index);
	strvec_pushf(env, "ROLE_RANK=%d", rank);
	strvec_pushf(env, "ROLE_WORLD_SIZE=%d", world);
}

/* TF_CONFIG and TRAINCTL_ROLE of rank i in the TensorFlow modes. */
static void role_env(const struct api_assignment *s, size_t i,
		     struct strvec *env)
{
	struct rank_role role;

	role_of(s, (int)i, &role);
	if (role.tf_type) {
		struct buf tf = BUF_INIT;

		(void)api_tf_config_build(s->dist_mode,
					  (const char *const *)s->addresses,
					  s->n_hosts, ps_count(s),
					  s->master_port, role.tf_type,
					  role.tf_index, &tf);
		agent_env_set(env, "TF_CONFIG", tf.data);
		buf_release(&tf);
	}
	if (role.role) {
		agent_env_set(env, "TRAINCTL_ROLE", role.role);
		strvec_pushf(env, "TRAINCTL_ROLE_INDEX=%d", role.role_index);
	}
}

/* Rank i's process: the shared argv and environment, its own
 * variables, its FIFOs. */
static void rank_proc(const struct agent_ctx *ctx, const struct agent_assign *a,
		      size_t i, int nproc, const struct strvec *args,
		      const struct strvec *env, const char *cwd, int bound,
		      struct agent_rank *r)
{
	const struct api_assignment *s = &a->spec;
	size_t j;

	rank_init(r, (int)i);
	for (j = 0; j < args->n; j++)
		strvec_push(&r->proc.args, args->v[j]);
	for (j = 0; j < env->n; j++)
		strvec_push(&r->proc.env, env->v[j]);
	if (s->dist_mode == API_DIST_TORCH ||
	    (s->dist_mode == API_DIST_NONE && nproc > 1))
		torchrun_rank_env(s, nproc, i, &r->proc.env);
	else
		role_env(s, i, &r->proc.env);
	r->proc.out_fifo = agent_fifo_path(a->dir, (int)i, "stdout");
	r->proc.err_fifo = agent_fifo_path(a->dir, (int)i, "stderr");
	r->proc.exit_file = agent_fifo_path(a->dir, (int)i, "exit");
	if (s->launch_mode == API_LAUNCH_CONTAINER) {
		/* podman runs as root; the image as the job's user. */
		char *podman;

		agent_podman_run_argv(&ctx->cfg, a, (int)i, &r->proc.env,
				      ctx->cfg.ca_file, &r->proc.args);
		r->proc.cwd = xstrdup(a->dir);
		r->proc.container_pidfile =
			agent_fifo_path(a->dir, (int)i, "cpid");
		agent_podman_cleanup_argv(&ctx->cfg, a, (int)i,
					  &r->proc.cleanup);
		podman = agent_proc_which(r->proc.cleanup.v[0], env);
		if (podman) {
			free(r->proc.cleanup.v[0]);
			r->proc.cleanup.v[0] = podman;
		}
		return;
	}
	r->proc.cwd = xstrdup(cwd);
	r->proc.ident = &a->ident;
	if (bound)
		r->proc.bind_dir = xstrdup(a->dir);
	if (a->netiso_procs)
		r->proc.cgroup_procs = xstrdup(a->netiso_procs);
}

/* Starts the nproc ranks; on an error, kills those already started. */
static int start_ranks(const struct agent_ctx *ctx, struct agent_assign *a,
		       int nproc, const struct strvec *args,
		       const struct strvec *env, const char *cwd, int bound,
		       struct buf *err)
{
	size_t i, j;
	int ret;

	a->ranks = xcalloc((size_t)nproc, sizeof(*a->ranks));
	a->n_ranks = (size_t)nproc;
	for (i = 0; i < (size_t)nproc; i++) {
		struct agent_rank *r = &a->ranks[i];

		rank_proc(ctx, a, i, nproc, args, env, cwd, bound, r);
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
			return ret;
		}
		if (r->proc.start_errno)
			log_warn("%s/%d/%s: rank %zu could not start: %s",
				 a->job, a->attempt, a->algo, i,
				 strerror(r->proc.start_errno));
		else
			log_info("%s/%d/%s: rank %zu started: pid %d, %s%s",
				 a->job, a->attempt, a->algo, i,
				 (int)r->proc.pid,
				 a->spec.image ? a->spec.image : args->v[0],
				 a->spec.image ? " (container)" :
				 bound	       ? " (private /opt/ml)" :
						 "");
	}
	return 0;
}

int agent_launch(struct agent_ctx *ctx, struct agent_assign *a, struct buf *err)
{
	const struct api_assignment *s = &a->spec;
	struct api_sm_env_input in;
	struct api_kv *smenv = NULL;
	char **user_args = NULL;
	size_t n_smenv = 0, i;
	struct strvec args = STRVEC_INIT;
	struct strvec env = STRVEC_INIT;
	struct buf code = BUF_INIT, code_host = BUF_INIT, cwd = BUF_INIT;
	struct buf runtime = BUF_INIT;
	struct strvec prog = STRVEC_INIT;
	int container = s->launch_mode == API_LAUNCH_CONTAINER;
	int python = 0, bound = container || ctx->can_bind, nproc, ret;
	const char *base = bound ? "/opt/ml" : a->dir;
	char ifname[64] = "", cidr[64] = "";
	char *exe = self_exe(), *venv = NULL;

	nproc = mode_nproc(s);
	(void)netif_of(ctx->cfg.address, ifname, sizeof(ifname), cidr,
		       sizeof(cidr));
	(void)buf_addf(&code_host, "%s/code", a->dir);
	(void)buf_addf(&code, "%s/code", base);
	sm_env_input(ctx, s, base, &in);
	ret = api_sm_env_build(&in, &smenv, &n_smenv, &user_args, err);
	if (ret)
		goto out;
	/* Staging made one when requirements.txt asked for it. */
	if (s->launch_mode == API_LAUNCH_SCRIPT && agent_pyenv_ready(a->dir))
		venv = agent_pyenv_path(base);
	ret = container ? 0 :
			  program_argv(a, code_host.data, venv, &prog, &python,
				       err);
	if (ret)
		goto out;
	if (s->launch_mode == API_LAUNCH_SCRIPT)
		for (i = 0; user_args && user_args[i]; i++)
			strvec_push(&prog, user_args[i]);
	ret = agent_ident_resolve(&a->ident, a->spec.run_as, err);
	if (ret)
		goto out;
	ret = python ? agent_runtime_write(a->dir, err) : 0;
	if (ret < 0)
		goto out;
	if (ret)
		(void)buf_addf(&runtime, "%s/%s", base, AGENT_RUNTIME_REL);
	ret = 0;
	base_env(&env, python, code.data, runtime.len ? runtime.data : NULL,
		 &a->ident);
	job_env(ctx, a, bound, smenv, n_smenv, ifname, &env);
	if (venv)
		venv_env(venv, &env);
	if (s->dist_mode == API_DIST_TORCH) {
		ret = torch_env(s, nproc, &env, err);
		if (ret)
			goto out;
	}
	/* A container's argv is made per rank, with its environment. */
	ret = container ? 0 : mode_argv(s, exe, cidr, &prog, &env, &args, err);
	if (ret)
		goto out;
	/* Script mode runs in code/; exec mode too when there is code. */
	if (s->launch_mode == API_LAUNCH_SCRIPT || has_entries(code_host.data))
		(void)buf_adds(&cwd, code.data);
	else
		(void)buf_adds(&cwd, base);

	agent_ckptnow_reset(a->dir);
	ret = start_ranks(ctx, a, nproc, &args, &env, cwd.data, bound, err);
	if (ret)
		goto out;
	a->bound = bound;
out:
	api_sm_env_release(smenv, n_smenv, user_args);
	strvec_release(&prog);
	free(exe);
	free(venv);
	strvec_release(&args);
	strvec_release(&env);
	buf_release(&code);
	buf_release(&code_host);
	buf_release(&runtime);
	buf_release(&cwd);
	return ret;
}
