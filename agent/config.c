/*
 * trainagent's command line, in three steps like OpenSSH's servconf.c:
 * every field unset, then the arguments, then defaults for the rest.
 */
#define LOG_TAG "agent"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/proc.h"
#include "agent/telemetry.h"
#include "common/err.h"
#include "common/opt.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

void agent_config_init(struct agent_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->cpus = -1;
	cfg->gpus = -1;
	cfg->token_stdin = -1;
	cfg->keep_jobs = -1;
	cfg->telemetry_ms = -1;
	cfg->memckpt_mb = -1;
	cfg->peer_port = -1;
}

enum {
	OPT_VERBOSE = 'v',
	OPT_HELP = 'h',
	OPT_CONTROLLER = 256,
	OPT_HOST,
	OPT_WORK_DIR,
	OPT_CPUS,
	OPT_GPUS,
	OPT_ADDRESS,
	OPT_TOKEN_STDIN,
	OPT_KEEP_JOBS,
	OPT_CA_FILE,
	OPT_TELEMETRY_MS,
	OPT_MEMCKPT_MB,
	OPT_MEMCKPT_DIR,
	OPT_PEER_PORT,
};

static const struct option options[] = {
	{ "controller", required_argument, NULL, OPT_CONTROLLER },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "work-dir", required_argument, NULL, OPT_WORK_DIR },
	{ "cpus", required_argument, NULL, OPT_CPUS },
	{ "gpus", required_argument, NULL, OPT_GPUS },
	{ "address", required_argument, NULL, OPT_ADDRESS },
	{ "token-stdin", no_argument, NULL, OPT_TOKEN_STDIN },
	{ "keep-jobs", no_argument, NULL, OPT_KEEP_JOBS },
	{ "ca-file", required_argument, NULL, OPT_CA_FILE },
	{ "telemetry-ms", required_argument, NULL, OPT_TELEMETRY_MS },
	{ "memory-checkpoint-mb", required_argument, NULL, OPT_MEMCKPT_MB },
	{ "memory-checkpoint-dir", required_argument, NULL, OPT_MEMCKPT_DIR },
	{ "peer-checkpoint-port", required_argument, NULL, OPT_PEER_PORT },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

void agent_usage(void)
{
	fputs("usage: trainagent --controller URL --host NAME [--work-dir DIR]\n"
	      "                  [--cpus N] [--gpus N] [--address ADDR]\n"
	      "                  [--token-stdin] [--keep-jobs]\n"
	      "                  [--telemetry-ms MS] [--memory-checkpoint-mb N]\n"
	      "                  [--memory-checkpoint-dir DIR]\n"
	      "                  [--peer-checkpoint-port PORT] [-v]...\n"
	      "\n"
	      "  --controller   trainctld's URL (http://127.0.0.1:8080)\n"
	      "  --host         this host's name in the controller's inventory\n"
	      "  --work-dir     where job directories live (/var/lib/trainagent)\n"
	      "  --cpus         CPUs to report (online CPUs)\n"
	      "  --gpus         GPUs to report (nvidia-smi -L, else 0)\n"
	      "  --address      address other hosts reach this one at (the\n"
	      "                 local address of the connection to the\n"
	      "                 controller)\n"
	      "  --token-stdin  read the host token from stdin's first line\n"
	      "  --ca-file FILE PEM CAs to verify an https controller with\n"
	      "                 (else $TRAINCTL_AGENT_TOKEN)\n"
	      "  --keep-jobs    keep job directories after the controller\n"
	      "                 forgets them\n"
	      "  --telemetry-ms MS  sample CPU, memory, disk, network and\n"
	      "                 GPUs every MS ms for the controller (5000;\n"
	      "                 0: off)\n"
	      "  --memory-checkpoint-mb N  keep each job's latest checkpoints\n"
	      "                 in memory, up to N MiB per job, and restore\n"
	      "                 a retry from there (0: off, the default)\n"
	      "  --memory-checkpoint-dir DIR  where (a tmpfs folder;\n"
	      "                 " AGENT_MEMCKPT_DIR ")\n"
	      "  --peer-checkpoint-port PORT  serve the copies to the job's\n"
	      "                 other hosts on PORT and copy each to the\n"
	      "                 next host of the job, for a restore on\n"
	      "                 another host (0: off, the default)\n"
	      "  -v             more logging (repeatable)\n",
	      stderr);
}

static void set_str(char **field, const char *value)
{
	free(*field);
	*field = xstrdup(value);
}

static int parse_int(const char *opt, const char *value, long lo, long hi,
		     int *out, struct buf *err)
{
	long v;
	int ret = opt_parse_long(opt, value, lo, hi, &v, err);

	if (!ret)
		*out = (int)v;
	return ret;
}

int agent_config_parse_args(struct agent_config *cfg, int argc, char **argv,
			    struct buf *err)
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", options, NULL)) != -1) {
		switch (c) {
		case OPT_CONTROLLER:
			set_str(&cfg->controller, optarg);
			break;
		case OPT_HOST:
			set_str(&cfg->host, optarg);
			break;
		case OPT_WORK_DIR:
			set_str(&cfg->work_dir, optarg);
			break;
		case OPT_CPUS:
			if (parse_int("cpus", optarg, 0, 65536, &cfg->cpus,
				      err))
				return ERR_INVALID;
			break;
		case OPT_GPUS:
			if (parse_int("gpus", optarg, 0, 1024, &cfg->gpus, err))
				return ERR_INVALID;
			break;
		case OPT_ADDRESS:
			set_str(&cfg->address, optarg);
			break;
		case OPT_TOKEN_STDIN:
			cfg->token_stdin = 1;
			break;
		case OPT_KEEP_JOBS:
			cfg->keep_jobs = 1;
			break;
		case OPT_CA_FILE:
			set_str(&cfg->ca_file, optarg);
			break;
		case OPT_TELEMETRY_MS:
			if (opt_parse_long("telemetry-ms", optarg, 0, 3600000,
					   &cfg->telemetry_ms, err))
				return ERR_INVALID;
			break;
		case OPT_MEMCKPT_MB:
			if (opt_parse_long("memory-checkpoint-mb", optarg, 0,
					   1 << 24, &cfg->memckpt_mb, err))
				return ERR_INVALID;
			break;
		case OPT_MEMCKPT_DIR:
			set_str(&cfg->memckpt_dir, optarg);
			break;
		case OPT_PEER_PORT:
			if (opt_parse_long("peer-checkpoint-port", optarg, 0,
					   65535, &cfg->peer_port, err))
				return ERR_INVALID;
			break;
		case OPT_VERBOSE:
			cfg->verbose++;
			break;
		case OPT_HELP:
			agent_usage();
			exit(0);
		case ':':
			(void)buf_addf(err, "option '%s' needs a value",
				       argv[optind - 1]);
			return ERR_INVALID;
		default:
			(void)buf_addf(err, "unknown option '%s'",
				       argv[optind - 1]);
			return ERR_INVALID;
		}
	}
	if (optind < argc) {
		(void)buf_addf(err, "unexpected argument '%s'", argv[optind]);
		return ERR_INVALID;
	}
	return 0;
}

/*
 * GPUs as the toolkit counts them for SM_NUM_GPUS: the "GPU " lines of
 * `nvidia-smi -L`. Runs it once at start-up, bounded to a few seconds.
 */
static int count_gpus(void)
{
	struct agent_proc p;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	char chunk[4096];
	char *tool, *s;
	int n = 0;
	ssize_t r;

	agent_proc_init(&p);
	strvec_push(&p.env, "PATH=/usr/bin:/bin:/usr/local/bin");
	tool = agent_proc_which("nvidia-smi", &p.env);
	if (!tool) {
		agent_proc_release(&p);
		return 0;
	}
	strvec_push(&p.args, tool);
	strvec_push(&p.args, "-L");
	free(tool);
	if (agent_proc_start(&p, &err) || p.start_errno)
		goto out;
	/*
	 * The pipe is non-blocking; wait on it with poll until EOF. A tool
	 * that hangs is killed after 5 s.
	 */
	for (;;) {
		struct pollfd pfd = { p.out_fd, POLLIN, 0 };
		int pr = poll(&pfd, 1, 5000);

		if (pr <= 0) {
			(void)agent_proc_signal(&p, SIGKILL);
			break;
		}
		r = read(p.out_fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (out.len < 65536)
			(void)buf_add(&out, chunk, (size_t)r);
	}
	(void)agent_proc_signal(&p, SIGKILL);
	agent_proc_wait(&p);
	for (s = out.data; (s = strstr(s, "GPU ")); s += 4)
		if (s == out.data || s[-1] == '\n')
			n++;
out:
	agent_proc_release(&p);
	buf_release(&err);
	buf_release(&out);
	return n;
}

/* --controller A,B,C into its members, each without trailing slashes. */
static void split_controllers(struct agent_config *cfg)
{
	struct strvec v = STRVEC_INIT;
	size_t i, len;

	strvec_split(&v, cfg->controller, ',');
	for (i = 0; i < v.n; i++) {
		len = strlen(v.v[i]);
		while (len > 0 && v.v[i][len - 1] == '/')
			v.v[i][--len] = '\0';
	}
	cfg->controllers = v.v;
	cfg->n_controllers = v.n;
}

/* *field from the environment's name (0..hi) when still unset. */
static void env_long(const char *name, long hi, long *field)
{
	struct buf e = BUF_INIT;

	if (*field < 0 && getenv(name) &&
	    opt_parse_long(name, getenv(name), 0, hi, field, &e))
		*field = -1;
	buf_release(&e);
}

void agent_config_fill_defaults(struct agent_config *cfg)
{
	long n;

	if (cfg->controller && !cfg->controllers)
		split_controllers(cfg);
	if (!cfg->work_dir)
		cfg->work_dir = xstrdup("/var/lib/trainagent");
	if (cfg->cpus < 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		cfg->cpus = n < 1 ? 1 : (int)n;
	}
	if (cfg->gpus < 0)
		cfg->gpus = count_gpus();
	if (cfg->token_stdin < 0)
		cfg->token_stdin = 0;
	if (cfg->keep_jobs < 0)
		cfg->keep_jobs = 0;
	if (cfg->telemetry_ms < 0)
		cfg->telemetry_ms = AGENT_TELEMETRY_MS;
	/* The environment gives the defaults too: trainctld's own agents
	 * (--local-hosts) inherit its environment. */
	env_long("TRAINCTL_MEMORY_CHECKPOINT_MB", 1 << 24, &cfg->memckpt_mb);
	env_long("TRAINCTL_PEER_CHECKPOINT_PORT", 65535, &cfg->peer_port);
	if (cfg->memckpt_mb < 0)
		cfg->memckpt_mb = 0;
	if (cfg->peer_port < 0)
		cfg->peer_port = 0;
	if (!cfg->memckpt_dir && getenv("TRAINCTL_MEMORY_CHECKPOINT_DIR"))
		cfg->memckpt_dir =
			xstrdup(getenv("TRAINCTL_MEMORY_CHECKPOINT_DIR"));
	if (!cfg->memckpt_dir)
		cfg->memckpt_dir = xstrdup(AGENT_MEMCKPT_DIR);
}

static int name_ok(const char *s)
{
	size_t i;

	if (!*s || strlen(s) > 127)
		return 0;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '_' || s[i] == '.'))
			return 0;
	return s[0] != '.';
}

int agent_config_check(const struct agent_config *cfg, struct buf *err)
{
	size_t i;

	if (!cfg->controller || !cfg->controllers) {
		(void)buf_adds(err, "--controller URL is required");
		return ERR_INVALID;
	}
	for (i = 0; i < cfg->n_controllers; i++) {
		const char *u = cfg->controllers[i];

		if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) {
			(void)buf_addf(err,
				       "controller URL '%s' must start with "
				       "http:// or https://",
				       u);
			return ERR_INVALID;
		}
	}
	if (!cfg->host) {
		(void)buf_adds(err, "--host NAME is required");
		return ERR_INVALID;
	}
	if (!name_ok(cfg->host)) {
		(void)buf_addf(err,
			       "host name '%s' must be 1-127 of "
			       "[A-Za-z0-9._-]",
			       cfg->host);
		return ERR_INVALID;
	}
	if (cfg->work_dir[0] != '/') {
		(void)buf_addf(err, "work directory '%s' must be absolute",
			       cfg->work_dir);
		return ERR_INVALID;
	}
	if (cfg->memckpt_dir && cfg->memckpt_dir[0] != '/') {
		(void)buf_addf(err,
			       "memory checkpoint folder '%s' must be "
			       "absolute",
			       cfg->memckpt_dir);
		return ERR_INVALID;
	}
	return 0;
}

void agent_config_release(struct agent_config *cfg)
{
	free(cfg->controller);
	strv_free(cfg->controllers);
	free(cfg->host);
	free(cfg->work_dir);
	free(cfg->address);
	free(cfg->ca_file);
	free(cfg->memckpt_dir);
	agent_config_init(cfg);
}
