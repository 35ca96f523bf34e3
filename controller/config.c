#define LOG_TAG "ctrl"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/ctrl.h"
#include "controller/rendezvous.h"
#include "controller/straggler.h"
#include "controller/stragwatch.h"
#include "ha/ha.h"
#include "common/err.h"
#include "common/opt.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * Built in three steps, as OpenSSH's servconf.c does: every field unset,
 * then the command line, then defaults where a field is still unset.
 */
void ctrl_config_init(struct ctrl_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->threads = -1;
	cfg->body_max = -1;
	cfg->local_hosts = -1;
	cfg->heartbeat_ms = -1;
	cfg->host_deadline_ms = -1;
	cfg->grace_ms = -1;
	cfg->max_retries = -1;
	cfg->hang_timeout_ms = -1;
	cfg->strag_action = -1;
	cfg->strag_window_ms = -1;
	cfg->infra_min_disk_mb = -1;
	cfg->infra_min_shm_mb = -1;
	cfg->infra_max_skew_ms = -1;
	cfg->infra_net = 1;
	cfg->infra_net_rtt_factor = -1;
	cfg->infra_net_rtt_floor_us = -1;
	cfg->infra_net_bw_factor = -1;
	cfg->restart_wait_ms = -1;
	cfg->elastic_wait_ms = -1;
	cfg->quarantine_failures = -1;
	cfg->quarantine_window_ms = -1;
	cfg->tm_interval_ms = -2; /* unset; -1 is "the agents' own" */
	cfg->tm_retention_h = -1;
	cfg->s3_max_uploads = -1;
	cfg->s3_upload_max_age_ms = -1;
	cfg->tm_job_retention_d = -1;
	cfg->rdzv_attempt_bytes = -1;
	cfg->rdzv_attempt_keys = -1;
	cfg->rdzv_total_bytes = -1;
	cfg->per_client_conns = -1;
	cfg->agent_per_client_conns = -1;
	cfg->ha_election_ms = -1;
	cfg->ha_heartbeat_ms = -1;
	cfg->ha_snapshot_entries = -1;
	cfg->header_timeout_s = -1;
}

enum {
	OPT_LISTEN = 'l',
	OPT_STATE_DIR = 's',
	OPT_VERBOSE = 'v',
	OPT_HELP = 'h',
	OPT_CREDENTIALS = 256,
	OPT_REGION,
	OPT_ACCOUNT,
	OPT_THREADS,
	OPT_BODY_MAX,
	OPT_CHECK,
	OPT_ROUTES,
	OPT_LOCAL_HOSTS,
	OPT_AGENT_BINARY,
	OPT_HEARTBEAT,
	OPT_DEADLINE,
	OPT_GRACE,
	OPT_ADVERTISE,
	OPT_S3_ENDPOINT,
	OPT_INVENTORY,
	OPT_MAX_RETRIES,
	OPT_HANG_TIMEOUT,
	OPT_RETRY_POLICY,
	OPT_RESTART_WAIT,
	OPT_ELASTIC_WAIT,
	OPT_FILE_ROOT,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_TLS_CA,
	OPT_S3_DOMAIN,
	OPT_REGISTRY_AUTH,
	OPT_INSECURE_REGISTRY,
	OPT_IMAGE_MAP,
	OPT_FRAMEWORK_VERSIONS,
	OPT_TM_RETENTION,
	OPT_TM_INTERVAL,
	OPT_TM_JOB_RETENTION,
	OPT_S3_MAX_UPLOADS,
	OPT_S3_UPLOAD_AGE,
	OPT_RDZV_ATTEMPT_BYTES,
	OPT_RDZV_ATTEMPT_KEYS,
	OPT_RDZV_TOTAL_BYTES,
	OPT_AGENT_LISTEN,
	OPT_PER_CLIENT,
	OPT_AGENT_PER_CLIENT,
	OPT_HEADER_TIMEOUT,
	OPT_STRAG_ACTION,
	OPT_STRAG_WINDOW,
	OPT_STRAG_RATIO,
	OPT_QUARANTINE_FAILURES,
	OPT_QUARANTINE_WINDOW,
	OPT_INFRA_CHECK,
	OPT_INFRA_DISK,
	OPT_INFRA_SHM,
	OPT_INFRA_SKEW,
	OPT_INFRA_NET,
	OPT_INFRA_NET_RTT,
	OPT_INFRA_NET_FLOOR,
	OPT_INFRA_NET_BW,
	OPT_MEMBER,
	OPT_PEERS,
	OPT_HA_ELECTION,
	OPT_HA_HEARTBEAT,
	OPT_HA_SNAPSHOT,
	OPT_HA_JOIN,
	OPT_HA_RECOVER,
};

static const struct option options[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "credentials", required_argument, NULL, OPT_CREDENTIALS },
	{ "region", required_argument, NULL, OPT_REGION },
	{ "account-id", required_argument, NULL, OPT_ACCOUNT },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "max-body", required_argument, NULL, OPT_BODY_MAX },
	{ "check-config", no_argument, NULL, OPT_CHECK },
	{ "routes", no_argument, NULL, OPT_ROUTES },
	{ "local-hosts", required_argument, NULL, OPT_LOCAL_HOSTS },
	{ "agent-binary", required_argument, NULL, OPT_AGENT_BINARY },
	{ "heartbeat-ms", required_argument, NULL, OPT_HEARTBEAT },
	{ "host-deadline-ms", required_argument, NULL, OPT_DEADLINE },
	{ "grace-period", required_argument, NULL, OPT_GRACE },
	{ "advertise-url", required_argument, NULL, OPT_ADVERTISE },
	{ "s3-endpoint", required_argument, NULL, OPT_S3_ENDPOINT },
	{ "s3-domain", required_argument, NULL, OPT_S3_DOMAIN },
	{ "s3-max-uploads", required_argument, NULL, OPT_S3_MAX_UPLOADS },
	{ "s3-upload-max-age", required_argument, NULL, OPT_S3_UPLOAD_AGE },
	{ "inventory", required_argument, NULL, OPT_INVENTORY },
	{ "max-retries", required_argument, NULL, OPT_MAX_RETRIES },
	{ "hang-timeout", required_argument, NULL, OPT_HANG_TIMEOUT },
	{ "straggler-action", required_argument, NULL, OPT_STRAG_ACTION },
	{ "straggler-window", required_argument, NULL, OPT_STRAG_WINDOW },
	{ "straggler-ratio", required_argument, NULL, OPT_STRAG_RATIO },
	{ "retry-policy", required_argument, NULL, OPT_RETRY_POLICY },
	{ "restart-wait", required_argument, NULL, OPT_RESTART_WAIT },
	{ "elastic-wait", required_argument, NULL, OPT_ELASTIC_WAIT },
	{ "quarantine-failures", required_argument, NULL,
	  OPT_QUARANTINE_FAILURES },
	{ "quarantine-window", required_argument, NULL, OPT_QUARANTINE_WINDOW },
	{ "telemetry-retention", required_argument, NULL, OPT_TM_RETENTION },
	{ "telemetry-ms", required_argument, NULL, OPT_TM_INTERVAL },
	{ "telemetry-job-retention", required_argument, NULL,
	  OPT_TM_JOB_RETENTION },
	{ "allow-file-root", required_argument, NULL, OPT_FILE_ROOT },
	{ "rdzv-attempt-bytes", required_argument, NULL,
	  OPT_RDZV_ATTEMPT_BYTES },
	{ "rdzv-attempt-keys", required_argument, NULL, OPT_RDZV_ATTEMPT_KEYS },
	{ "rdzv-total-bytes", required_argument, NULL, OPT_RDZV_TOTAL_BYTES },
	{ "agent-listen", required_argument, NULL, OPT_AGENT_LISTEN },
	{ "per-client-connections", required_argument, NULL, OPT_PER_CLIENT },
	{ "agent-per-client-connections", required_argument, NULL,
	  OPT_AGENT_PER_CLIENT },
	{ "header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT },
	{ "infra-check", required_argument, NULL, OPT_INFRA_CHECK },
	{ "infra-check-min-disk", required_argument, NULL, OPT_INFRA_DISK },
	{ "infra-check-min-shm", required_argument, NULL, OPT_INFRA_SHM },
	{ "infra-check-max-skew-ms", required_argument, NULL, OPT_INFRA_SKEW },
	{ "infra-check-network", required_argument, NULL, OPT_INFRA_NET },
	{ "infra-check-net-rtt-factor", required_argument, NULL,
	  OPT_INFRA_NET_RTT },
	{ "infra-check-net-rtt-floor-us", required_argument, NULL,
	  OPT_INFRA_NET_FLOOR },
	{ "infra-check-net-bw-factor", required_argument, NULL,
	  OPT_INFRA_NET_BW },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	{ "tls-ca", required_argument, NULL, OPT_TLS_CA },
	{ "registry-auth", required_argument, NULL, OPT_REGISTRY_AUTH },
	{ "insecure-registry", required_argument, NULL, OPT_INSECURE_REGISTRY },
	{ "image-map", required_argument, NULL, OPT_IMAGE_MAP },
	{ "framework-versions", required_argument, NULL,
	  OPT_FRAMEWORK_VERSIONS },
	{ "member", required_argument, NULL, OPT_MEMBER },
	{ "peers", required_argument, NULL, OPT_PEERS },
	{ "ha-election-ms", required_argument, NULL, OPT_HA_ELECTION },
	{ "ha-heartbeat-ms", required_argument, NULL, OPT_HA_HEARTBEAT },
	{ "ha-snapshot-entries", required_argument, NULL, OPT_HA_SNAPSHOT },
	{ "join", no_argument, NULL, OPT_HA_JOIN },
	{ "ha-recover", no_argument, NULL, OPT_HA_RECOVER },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* The options of gray failures: stragglers, bad hosts, checks. */
static void usage_gray_failures(void)
{
	fputs("  --quarantine-failures  drain a host whose failures ended\n"
	      "                  this many different jobs' attempts within\n"
	      "                  --quarantine-window (3; 0: off)\n"
	      "  --quarantine-window  seconds those failures are counted\n"
	      "                  over (3600)\n"
	      "  --infra-check   check every job's hosts before its attempts,\n"
	      "                  not only those asking (off)\n"
	      "  --infra-check-min-disk  MiB free the work and checkpoint\n"
	      "                  folders need (1024)\n"
	      "  --infra-check-min-shm  MiB free /dev/shm needs (64)\n"
	      "  --infra-check-max-skew-ms  largest clock offset from the\n"
	      "                  controller (2000)\n"
	      "  --infra-check-network  measure the network between a\n"
	      "                  job's hosts too (on)\n"
	      "  --infra-check-net-rtt-factor  a host whose round trip is\n"
	      "                  over this many times the job's median\n"
	      "                  fails (5) ...\n"
	      "  --infra-check-net-rtt-floor-us  ... when it is also this\n"
	      "                  many microseconds above it (5000)\n"
	      "  --infra-check-net-bw-factor  a host whose bandwidth is\n"
	      "                  under the job's median divided by this\n"
	      "                  fails (10)\n",
	      stderr);
	fputs("  --straggler-action  what a host found persistently slower\n"
	      "                  than the other hosts of its job gets: none\n"
	      "                  (not watched), name (in the job's status\n"
	      "                  message and /metrics; the default) or move\n"
	      "                  (named, drained, and the job restarted from\n"
	      "                  its checkpoint on a spare, when one is free)\n"
	      "  --straggler-window  seconds a host must stay slower (30)\n"
	      "  --straggler-ratio  how much slower than the other hosts'\n"
	      "                  median is a straggler (1.5; 1.1..100)\n",
	      stderr);
}

static void usage_images(void)
{
	fputs("  --registry-auth credentials for pulling container images\n"
	      "                  (containers auth.json); hosts get only the\n"
	      "                  entry of the registry a job pulls from\n"
	      "  --insecure-registry HOST[:PORT] a registry whose TLS\n"
	      "                  certificate is not verified (repeatable)\n"
	      "  --image-map     lines 'PATTERN IMAGE': a TrainingImage that\n"
	      "                  matches PATTERN (fnmatch) runs as IMAGE, or\n"
	      "                  script mode with the Python IMAGE names when\n"
	      "                  it is an absolute path\n"
	      "  --framework-versions warn|strict  a script-mode job whose\n"
	      "                  image asks for a framework or Python version\n"
	      "                  its hosts do not run: a warning (warn) or a\n"
	      "                  ClientError failure (strict)\n",
	      stderr);
}

/* The options of the replicated controller (docs/ha.md). */
static void usage_members(void)
{
	fputs("  --member ID     this controller's id among --peers\n"
	      "  --peers ID=RAFTADDR=APIURL,...  the members of a replicated\n"
	      "                  controller (3 or more; none: one controller)\n"
	      "  --ha-election-ms  raft's election timeout (800)\n"
	      "  --ha-heartbeat-ms  the leader's heartbeat (100)\n"
	      "  --ha-snapshot-entries  log entries between snapshots of the\n"
	      "                  store (8192)\n"
	      "  --join          a new member of a running cluster: wait to\n"
	      "                  be added (trainctl members add)\n"
	      "  --ha-recover    force raft's configuration in --state-dir to\n"
	      "                  this member alone, then exit (a majority was\n"
	      "                  lost; docs/ha.md)\n",
	      stderr);
}

void ctrl_usage(void)
{
	fputs("usage: trainctld [--listen HOST:PORT] [--state-dir DIR]\n"
	      "                 [--credentials FILE] [--region REGION]\n"
	      "                 [--account-id ID] [--threads N] [--max-body BYTES]\n"
	      "                 [--local-hosts N] [--agent-binary PATH]\n"
	      "                 [--heartbeat-ms MS] [--host-deadline-ms MS]\n"
	      "                 [--grace-period SECONDS] [--advertise-url URL]\n"
	      "                 [--s3-endpoint URL] [--s3-domain DOMAIN]\n"
	      "                 [--inventory FILE]\n"
	      "                 [--max-retries N] [--retry-policy all|sagemaker]\n"
	      "                 [--restart-wait SECONDS] [--elastic-wait SECONDS]\n"
	      "                 [--hang-timeout SECONDS]\n"
	      "                 [--straggler-action none|name|move]\n"
	      "                 [--straggler-window SECONDS] [--straggler-ratio X]\n"
	      "                 [--quarantine-failures N] [--quarantine-window SECONDS]\n"
	      "                 [--infra-check on|off] [--infra-check-min-disk MIB]\n"
	      "                 [--infra-check-min-shm MIB]\n"
	      "                 [--infra-check-max-skew-ms MS] [--infra-check-network on|off]\n"
	      "                 [--infra-check-net-rtt-factor X]\n"
	      "                 [--infra-check-net-rtt-floor-us US]\n"
	      "                 [--infra-check-net-bw-factor X]\n"
	      "                 [--allow-file-root DIR]...\n"
	      "                 [--tls-cert FILE --tls-key FILE [--tls-ca FILE]]\n"
	      "                 [--registry-auth FILE] [--insecure-registry HOST]...\n"
	      "                 [--image-map FILE] [--framework-versions warn|strict]\n"
	      "                 [--telemetry-ms MS] [--telemetry-retention HOURS]\n"
	      "                 [--telemetry-job-retention DAYS]\n"
	      "                 [--s3-max-uploads N] [--s3-upload-max-age SECONDS]\n"
	      "                 [--agent-listen HOST:PORT]\n"
	      "                 [--per-client-connections N]\n"
	      "                 [--agent-per-client-connections N]\n"
	      "                 [--header-timeout SECONDS]\n"
	      "                 [--member ID --peers ID=RAFTADDR=APIURL,...]\n"
	      "                 [--rdzv-attempt-bytes BYTES]\n"
	      "                 [--rdzv-attempt-keys N] [--rdzv-total-bytes BYTES]\n"
	      "                 [--check-config] [--routes] [-v]...\n"
	      "\n"
	      "  --listen        address to serve the API on (127.0.0.1:8080)\n"
	      "  --state-dir     where the database lives\n"
	      "                  ($XDG_STATE_HOME/trainctl or ~/.local/state/trainctl)\n"
	      "  --credentials   AWS shared-credentials file; when given every\n"
	      "                  request must carry a valid SigV4 signature\n"
	      "  --region        region in ARNs and signatures (us-east-1)\n"
	      "  --account-id    12-digit account in ARNs (000000000000)\n"
	      "  --threads       HTTP worker threads (number of CPUs)\n"
	      "  --max-body      request body limit in bytes (1048576)\n"
	      "  --inventory     JSON file of hosts to provision over SSH\n"
	      "                  (reloaded on SIGHUP)\n"
	      "  --local-hosts   hosts of the embedded local cluster (2; 0 with\n"
	      "                  --inventory)\n"
	      "  --agent-binary  trainagent to start for them (next to trainctld)\n"
	      "  --heartbeat-ms  agent heartbeat period (1000)\n"
	      "  --host-deadline-ms  a host missing heartbeats this long is\n"
	      "                  lost (3000)\n"
	      "  --grace-period  seconds from SIGTERM to SIGKILL on Stop (120)\n"
	      "  --max-retries   restarts of a failed attempt for jobs without\n"
	      "                  RetryStrategy (0)\n"
	      "  --hang-timeout  seconds without progress after which a rank\n"
	      "                  is hung and its attempt fails (1800; 0: off)\n"
	      "  --retry-policy  which failures are retried: all (every one but\n"
	      "                  a ClientError; the default) or sagemaker\n"
	      "                  (InternalServerError only, as SageMaker)\n"
	      "  --restart-wait  seconds a restart waits for a lost host to come\n"
	      "                  back or a spare to be free (60)\n"
	      "  --elastic-wait  seconds an elastic job's restart waits for a\n"
	      "                  spare before it goes on with fewer hosts (2)\n",
	      stderr);
	fputs("  --telemetry-ms  the agents' sampling interval (their own,\n"
	      "                  5000, unless given; 0: off)\n"
	      "  --telemetry-retention  hours host samples are kept (24)\n"
	      "  --telemetry-job-retention  days a job's host samples (the\n"
	      "                  CloudWatch host metrics) are kept (15)\n"
	      "  --advertise-url URL agents use to reach the controller\n"
	      "                  (--agent-listen's, else --listen's)\n"
	      "  --s3-endpoint   S3-compatible endpoint for s3:// URIs (none: the\n"
	      "                  embedded store in <state-dir>/s3, served\n"
	      "                  as S3 on --listen)\n"
	      "  --s3-domain     also answer virtual-hosted S3 requests\n"
	      "                  (Host: <bucket>.DOMAIN)\n"
	      "  --s3-max-uploads  open multipart uploads of the embedded\n"
	      "                  store one access key may hold (1000; 0: no cap)\n"
	      "  --s3-upload-max-age  seconds after which an open multipart\n"
	      "                  upload is aborted (86400; 0: never)\n",
	      stderr);
	usage_gray_failures();
	fputs("  --tls-cert, --tls-key  PEM certificate and key: serve HTTPS\n"
	      "  --tls-ca        PEM CA that agents and ranks verify the\n"
	      "                  certificate with (the certificate itself)\n"
	      "  --allow-file-root  a folder file:// URIs of jobs may name\n"
	      "                  (repeatable; with --credentials and none, jobs\n"
	      "                  may use no file:// URI; without credentials and\n"
	      "                  none, any folder)\n",
	      stderr);
	usage_images();
	usage_members();
	fputs("  --agent-listen  a second address serving agents and ranks only\n"
	      "                  (agent protocol, rendezvous, blobs): a flood of\n"
	      "                  the API does not reach them (none)\n"
	      "  --per-client-connections  connections one client address may\n"
	      "                  hold on --listen (64; 0: no limit, the default\n"
	      "                  on a loopback --listen)\n"
	      "  --agent-per-client-connections  the same on --agent-listen,\n"
	      "                  where one host's agent and ranks share an\n"
	      "                  address (1024; 0: no limit)\n"
	      "  --header-timeout  seconds a connection may take to send its\n"
	      "                  request's headers (10); then 120 idle\n"
	      "  --rdzv-attempt-bytes  bytes of rendezvous keys and values one\n"
	      "                  attempt of a job may hold (8388608)\n"
	      "  --rdzv-attempt-keys  rendezvous keys one attempt may hold\n"
	      "                  (4096)\n"
	      "  --rdzv-total-bytes  bytes of all attempts together, more\n"
	      "                  than one attempt's (67108864)\n"
	      "  --check-config  check the configuration, print it and exit\n"
	      "  --routes        list the route table, one row a line, and "
	      "exit\n"
	      "  -v              more logging (repeatable)\n",
	      stderr);
}

static int set_str(char **field, const char *value)
{
	free(*field);
	*field = xstrdup(value);
	return 0;
}

/* Keeps the resolved folder: a symlink to it names the same place. */
static int add_file_root(struct ctrl_config *cfg, const char *dir,
			 struct buf *err)
{
	char *real = dir[0] == '/' ? realpath(dir, NULL) : NULL;
	struct stat st;
	size_t n;

	if (!real || stat(real, &st) || !S_ISDIR(st.st_mode)) {
		(void)buf_addf(err,
			       "--allow-file-root '%s' must be an absolute "
			       "path of an existing folder",
			       dir);
		free(real);
		return ERR_INVALID;
	}
	n = strlen(real);
	if (n == 1) /* "/": every file; kept as "" so that "/x" is under it */
		real[0] = '\0';
	ALLOC_GROW(cfg->file_roots, cfg->n_file_roots + 1,
		   cfg->file_roots_alloc);
	cfg->file_roots[cfg->n_file_roots++] = real;
	return 0;
}

/* Options whose value is kept as given. */
static const struct {
	int opt;
	size_t off; /* of a char * in struct ctrl_config */
} str_opts[] = {
	{ OPT_LISTEN, offsetof(struct ctrl_config, listen) },
	{ OPT_STATE_DIR, offsetof(struct ctrl_config, state_dir) },
	{ OPT_CREDENTIALS, offsetof(struct ctrl_config, credentials_file) },
	{ OPT_REGION, offsetof(struct ctrl_config, region) },
	{ OPT_ACCOUNT, offsetof(struct ctrl_config, account_id) },
	{ OPT_AGENT_BINARY, offsetof(struct ctrl_config, agent_binary) },
	{ OPT_TLS_CERT, offsetof(struct ctrl_config, tls_cert) },
	{ OPT_TLS_KEY, offsetof(struct ctrl_config, tls_key) },
	{ OPT_TLS_CA, offsetof(struct ctrl_config, tls_ca) },
	{ OPT_ADVERTISE, offsetof(struct ctrl_config, advertise_url) },
	{ OPT_S3_ENDPOINT, offsetof(struct ctrl_config, s3_endpoint) },
	{ OPT_S3_DOMAIN, offsetof(struct ctrl_config, s3_domain) },
	{ OPT_INVENTORY, offsetof(struct ctrl_config, inventory) },
	{ OPT_REGISTRY_AUTH, offsetof(struct ctrl_config, registry_auth) },
	{ OPT_IMAGE_MAP, offsetof(struct ctrl_config, image_map) },
	{ OPT_AGENT_LISTEN, offsetof(struct ctrl_config, agent_listen) },
	{ OPT_PEERS, offsetof(struct ctrl_config, peers) },
};

/* Options whose value is a number from min to max, kept times scale. */
#define NUM_INT(f) offsetof(struct ctrl_config, f), 1
#define NUM_LONG(f) offsetof(struct ctrl_config, f), 0
static const struct {
	int opt;
	const char *name;
	long min, max, scale;
	size_t off;
	int is_int; /* the field is an int, else a long */
} num_opts[] = {
	{ OPT_THREADS, "threads", 1, 256, 1, NUM_INT(threads) },
	{ OPT_BODY_MAX, "max-body", 1024, 1L << 30, 1, NUM_LONG(body_max) },
	{ OPT_LOCAL_HOSTS, "local-hosts", 0, 64, 1, NUM_INT(local_hosts) },
	{ OPT_HEARTBEAT, "heartbeat-ms", 10, 60000, 1, NUM_LONG(heartbeat_ms) },
	{ OPT_DEADLINE, "host-deadline-ms", 50, 3600000, 1,
	  NUM_LONG(host_deadline_ms) },
	{ OPT_GRACE, "grace-period", 0, 86400, 1000, NUM_LONG(grace_ms) },
	{ OPT_MAX_RETRIES, "max-retries", 0, 30, 1, NUM_INT(max_retries) },
	{ OPT_HANG_TIMEOUT, "hang-timeout", 0, 28L * 86400, 1000,
	  NUM_LONG(hang_timeout_ms) },
	{ OPT_RESTART_WAIT, "restart-wait", 0, 86400, 1000,
	  NUM_LONG(restart_wait_ms) },
	{ OPT_ELASTIC_WAIT, "elastic-wait", 0, 86400, 1000,
	  NUM_LONG(elastic_wait_ms) },
	{ OPT_STRAG_WINDOW, "straggler-window", 1, 86400, 1000,
	  NUM_LONG(strag_window_ms) },
	{ OPT_QUARANTINE_FAILURES, "quarantine-failures", 0, 1000, 1,
	  NUM_INT(quarantine_failures) },
	{ OPT_QUARANTINE_WINDOW, "quarantine-window", 1, 30L * 86400, 1000,
	  NUM_LONG(quarantine_window_ms) },
	{ OPT_TM_INTERVAL, "telemetry-ms", 0, 3600000, 1,
	  NUM_LONG(tm_interval_ms) },
	{ OPT_TM_RETENTION, "telemetry-retention", 1, 24 * 366, 1,
	  NUM_LONG(tm_retention_h) },
	{ OPT_TM_JOB_RETENTION, "telemetry-job-retention", 1, 3660, 1,
	  NUM_LONG(tm_job_retention_d) },
	{ OPT_S3_MAX_UPLOADS, "s3-max-uploads", 0, 1000000, 1,
	  NUM_LONG(s3_max_uploads) },
	{ OPT_S3_UPLOAD_AGE, "s3-upload-max-age", 0, 366L * 86400, 1000,
	  NUM_LONG(s3_upload_max_age_ms) },
	{ OPT_RDZV_ATTEMPT_BYTES, "rdzv-attempt-bytes", 65536, 1L << 32, 1,
	  NUM_LONG(rdzv_attempt_bytes) },
	{ OPT_RDZV_ATTEMPT_KEYS, "rdzv-attempt-keys", 1, 1000000, 1,
	  NUM_LONG(rdzv_attempt_keys) },
	{ OPT_RDZV_TOTAL_BYTES, "rdzv-total-bytes", 131072, 1L << 36, 1,
	  NUM_LONG(rdzv_total_bytes) },
	{ OPT_PER_CLIENT, "per-client-connections", 0, 1000000, 1,
	  NUM_LONG(per_client_conns) },
	{ OPT_AGENT_PER_CLIENT, "agent-per-client-connections", 0, 1000000, 1,
	  NUM_LONG(agent_per_client_conns) },
	{ OPT_HEADER_TIMEOUT, "header-timeout", 1, 120, 1,
	  NUM_LONG(header_timeout_s) },
	{ OPT_INFRA_DISK, "infra-check-min-disk", 0, 1L << 30, 1,
	  NUM_LONG(infra_min_disk_mb) },
	{ OPT_INFRA_SHM, "infra-check-min-shm", 0, 1L << 30, 1,
	  NUM_LONG(infra_min_shm_mb) },
	{ OPT_INFRA_SKEW, "infra-check-max-skew-ms", 1, 86400000, 1,
	  NUM_LONG(infra_max_skew_ms) },
	{ OPT_INFRA_NET_RTT, "infra-check-net-rtt-factor", 1, 1000000, 1,
	  NUM_LONG(infra_net_rtt_factor) },
	{ OPT_INFRA_NET_FLOOR, "infra-check-net-rtt-floor-us", 0, 60000000, 1,
	  NUM_LONG(infra_net_rtt_floor_us) },
	{ OPT_INFRA_NET_BW, "infra-check-net-bw-factor", 1, 1000000, 1,
	  NUM_LONG(infra_net_bw_factor) },
	{ OPT_MEMBER, "member", 1, 1000000, 1, NUM_INT(member) },
	{ OPT_HA_ELECTION, "ha-election-ms", 100, 60000, 1,
	  NUM_LONG(ha_election_ms) },
	{ OPT_HA_HEARTBEAT, "ha-heartbeat-ms", 10, 10000, 1,
	  NUM_LONG(ha_heartbeat_ms) },
	{ OPT_HA_SNAPSHOT, "ha-snapshot-entries", 16, 100000000, 1,
	  NUM_LONG(ha_snapshot_entries) },
};

/* Sets a string or number option from the tables; 0 when c is neither. */
static int table_option(struct ctrl_config *cfg, int c, const char *value,
			int *ret, struct buf *err)
{
	char *base = (char *)cfg;
	size_t i;
	long v;

	*ret = 0;
	for (i = 0; i < ARRAY_SIZE(str_opts); i++)
		if (str_opts[i].opt == c) {
			set_str((char **)(void *)(base + str_opts[i].off),
				value);
			return 1;
		}
	for (i = 0; i < ARRAY_SIZE(num_opts); i++) {
		if (num_opts[i].opt != c)
			continue;
		if (opt_parse_long(num_opts[i].name, value, num_opts[i].min,
				   num_opts[i].max, &v, err)) {
			*ret = ERR_INVALID;
			return 1;
		}
		v *= num_opts[i].scale;
		if (num_opts[i].is_int)
			*(int *)(void *)(base + num_opts[i].off) = (int)v;
		else
			*(long *)(void *)(base + num_opts[i].off) = v;
		return 1;
	}
	return 0;
}

static int straggler_action(struct ctrl_config *cfg, const char *value,
			    struct buf *err)
{
	static const char *const names[] = { "none", "name", "move" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (!strcmp(value, names[i])) {
			cfg->strag_action = (int)i;
			return 0;
		}
	}
	(void)buf_addf(err,
		       "--straggler-action must be 'none', 'name' or 'move', "
		       "not '%s'",
		       value);
	return ERR_INVALID;
}

static int straggler_ratio(struct ctrl_config *cfg, const char *value,
			   struct buf *err)
{
	char *end;
	double v = strtod(value, &end);

	if (end == value || *end || !(v >= 1.1 && v <= 100)) {
		(void)buf_addf(err,
			       "--straggler-ratio must be a number from 1.1 "
			       "to 100, not '%s'",
			       value);
		return ERR_INVALID;
	}
	cfg->strag_ratio = v;
	return 0;
}

static int retry_policy(struct ctrl_config *cfg, const char *value,
			struct buf *err)
{
	if (!strcmp(value, "all")) {
		cfg->retry_sagemaker = 0;
	} else if (!strcmp(value, "sagemaker")) {
		cfg->retry_sagemaker = 1;
	} else {
		(void)buf_addf(err,
			       "--retry-policy must be 'all' or 'sagemaker', "
			       "not '%s'",
			       value);
		return ERR_INVALID;
	}
	return 0;
}

static int on_off(const char *name, const char *value, int *out,
		  struct buf *err)
{
	if (strcmp(value, "on") && strcmp(value, "off")) {
		(void)buf_addf(err, "%s must be 'on' or 'off', not '%s'", name,
			       value);
		return ERR_INVALID;
	}
	*out = !strcmp(value, "on");
	return 0;
}

int ctrl_config_parse_args(struct ctrl_config *cfg, int argc, char **argv,
			   struct buf *err)
{
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":l:s:vh", options, NULL)) != -1) {
		if (table_option(cfg, c, optarg, &ret, err)) {
			if (ret)
				return ret;
			continue;
		}
		switch (c) {
		case OPT_CHECK:
			cfg->check_only = 1;
			break;
		case OPT_ROUTES:
			cfg->print_routes = 1;
			break;
		case OPT_RETRY_POLICY:
			if (retry_policy(cfg, optarg, err))
				return ERR_INVALID;
			break;
		case OPT_STRAG_ACTION:
			if (straggler_action(cfg, optarg, err))
				return ERR_INVALID;
			break;
		case OPT_STRAG_RATIO:
			if (straggler_ratio(cfg, optarg, err))
				return ERR_INVALID;
			break;
		case OPT_INFRA_CHECK:
			if (on_off("--infra-check", optarg, &cfg->infra_check,
				   err))
				return ERR_INVALID;
			break;
		case OPT_INFRA_NET:
			if (on_off("--infra-check-network", optarg,
				   &cfg->infra_net, err))
				return ERR_INVALID;
			break;
		case OPT_FILE_ROOT:
			if (add_file_root(cfg, optarg, err))
				return ERR_INVALID;
			break;
		case OPT_FRAMEWORK_VERSIONS:
			if (strcmp(optarg, "warn") &&
			    strcmp(optarg, "strict")) {
				(void)buf_addf(err,
					       "--framework-versions must be "
					       "'warn' or 'strict', not '%s'",
					       optarg);
				return ERR_INVALID;
			}
			cfg->framework_strict = !strcmp(optarg, "strict");
			break;
		case OPT_INSECURE_REGISTRY:
			if (!*optarg || strchr(optarg, '/')) {
				(void)buf_addf(err,
					       "--insecure-registry '%s' must "
					       "be HOST[:PORT]",
					       optarg);
				return ERR_INVALID;
			}
			ALLOC_GROW(cfg->insecure, cfg->n_insecure + 1,
				   cfg->insecure_alloc);
			cfg->insecure[cfg->n_insecure++] = xstrdup(optarg);
			break;
		case OPT_HA_JOIN:
			cfg->ha_join = 1;
			break;
		case OPT_HA_RECOVER:
			cfg->ha_recover = 1;
			break;
		case OPT_VERBOSE:
			cfg->verbose++;
			break;
		case OPT_HELP:
			ctrl_usage();
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

static char *default_state_dir(void)
{
	const char *xdg = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	struct buf b = BUF_INIT;

	if (xdg && *xdg)
		(void)buf_addf(&b, "%s/trainctl", xdg);
	else if (home && *home)
		(void)buf_addf(&b, "%s/.local/state/trainctl", home);
	else
		(void)buf_adds(&b, "/var/lib/trainctl");
	return buf_detach(&b, NULL);
}

/* PATH of a binary installed next to this one. */
static char *sibling_binary(const char *name)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct buf b = BUF_INIT;
	char *slash;

	if (n <= 0)
		return xstrdup(name);
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	(void)buf_addf(&b, "%s/%s", self, name);
	return buf_detach(&b, NULL);
}

/* Defaults of the options that depend on no other: unset is NULL. */
static const struct {
	size_t off;
	const char *value;
} string_defaults[] = {
	{ offsetof(struct ctrl_config, listen), "127.0.0.1:8080" },
	{ offsetof(struct ctrl_config, region), "us-east-1" },
	{ offsetof(struct ctrl_config, account_id), "000000000000" },
};

/* The same for numbers: unset is below 0. */
static const struct {
	size_t off;
	long value;
} long_defaults[] = {
	{ offsetof(struct ctrl_config, body_max), 1L << 20 },
	{ offsetof(struct ctrl_config, heartbeat_ms), 1000 },
	{ offsetof(struct ctrl_config, host_deadline_ms), 3000 },
	{ offsetof(struct ctrl_config, grace_ms), 120000 },
	{ offsetof(struct ctrl_config, hang_timeout_ms), 1800000 },
	{ offsetof(struct ctrl_config, restart_wait_ms), 60000 },
	{ offsetof(struct ctrl_config, elastic_wait_ms), 2000 },
	{ offsetof(struct ctrl_config, strag_window_ms), CTRL_STRAG_WINDOW_MS },
	{ offsetof(struct ctrl_config, quarantine_window_ms), 3600000 },
	{ offsetof(struct ctrl_config, tm_retention_h), 24 },
	{ offsetof(struct ctrl_config, s3_max_uploads), 1000 },
	{ offsetof(struct ctrl_config, s3_upload_max_age_ms), 86400L * 1000 },
	{ offsetof(struct ctrl_config, tm_job_retention_d), 15 },
	{ offsetof(struct ctrl_config, rdzv_attempt_bytes),
	  CTRL_RDZV_ATTEMPT_BYTES },
	{ offsetof(struct ctrl_config, rdzv_attempt_keys),
	  CTRL_RDZV_ATTEMPT_KEYS },
	{ offsetof(struct ctrl_config, rdzv_total_bytes),
	  CTRL_RDZV_TOTAL_BYTES },
	{ offsetof(struct ctrl_config, agent_per_client_conns), 1024 },
	{ offsetof(struct ctrl_config, header_timeout_s), 10 },
	{ offsetof(struct ctrl_config, infra_min_disk_mb), 1024 },
	{ offsetof(struct ctrl_config, infra_min_shm_mb), 64 },
	{ offsetof(struct ctrl_config, infra_max_skew_ms), 2000 },
	{ offsetof(struct ctrl_config, infra_net_rtt_factor), 5 },
	{ offsetof(struct ctrl_config, infra_net_rtt_floor_us), 5000 },
	{ offsetof(struct ctrl_config, infra_net_bw_factor), 10 },
	{ offsetof(struct ctrl_config, ha_election_ms), 800 },
	{ offsetof(struct ctrl_config, ha_heartbeat_ms), 100 },
	{ offsetof(struct ctrl_config, ha_snapshot_entries), 8192 },
};

static void fill_table_defaults(struct ctrl_config *cfg)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(string_defaults); i++) {
		char **v = (char **)((char *)cfg + string_defaults[i].off);

		if (!*v)
			*v = xstrdup(string_defaults[i].value);
	}
	for (i = 0; i < ARRAY_SIZE(long_defaults); i++) {
		long *v = (long *)((char *)cfg + long_defaults[i].off);

		if (*v < 0)
			*v = long_defaults[i].value;
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * --advertise-url A,B,C: this member's URL first, then the other
 * members'. agent_controllers gets them all sorted, so that an agent
 * started by one leader is the agent another would start (provisioning
 * keeps an agent whose --controller is the same); advertise_url keeps the
 * first.
 */
static void split_advertise(struct ctrl_config *cfg)
{
	struct strvec v = STRVEC_INIT;
	struct buf all = BUF_INIT;
	size_t i;

	strvec_split(&v, cfg->advertise_url, ',');
	qsort(v.v, v.n, sizeof(*v.v), cmp_str);
	for (i = 0; i < v.n; i++)
		(void)buf_addf(&all, "%s%s", i ? "," : "", v.v[i]);
	cfg->agent_controllers = buf_detach(&all, NULL);
	cfg->advertise_url[strcspn(cfg->advertise_url, ",")] = '\0';
	strvec_release(&v);
}

void ctrl_config_fill_defaults(struct ctrl_config *cfg)
{
	long n;

	fill_table_defaults(cfg);
	if (!cfg->state_dir)
		cfg->state_dir = default_state_dir();
	if (cfg->threads < 0) {
		/* Several per CPU: requests that wait on the disk (a create
		 * waits for its group commit) leave the CPU to others, and
		 * concurrent creates share one fsync. */
		n = 8 * sysconf(_SC_NPROCESSORS_ONLN);
		cfg->threads = n < 16 ? 16 : n > 64 ? 64 : (int)n;
	}
	/* The embedded local cluster is the default only without an
	 * inventory. */
	if (cfg->local_hosts < 0)
		cfg->local_hosts = cfg->inventory || cfg->peers ? 0 : 2;
	if (cfg->max_retries < 0)
		cfg->max_retries = 0;
	if (cfg->strag_action < 0)
		cfg->strag_action = CTRL_STRAG_NAME;
	if (cfg->strag_ratio <= 0)
		cfg->strag_ratio = CTRL_STRAG_RATIO;
	if (cfg->quarantine_failures < 0)
		cfg->quarantine_failures = 3;
	if (cfg->tm_interval_ms < -1)
		cfg->tm_interval_ms = -1;
	/* On loopback every client shares one address (and may take any
	 * other of 127/8): a limit per address would only hold back the
	 * many connections of local agents and benchmarks. Without an
	 * agent listener, a host's agent and ranks (long-polls, parallel
	 * part transfers) share the API's, so its limit leaves them room. */
	if (cfg->per_client_conns < 0 && ctrl_listen_is_loopback(cfg->listen))
		cfg->per_client_conns = 0;
	else if (cfg->per_client_conns < 0)
		cfg->per_client_conns = cfg->agent_listen ? 64 : 256;
	if (!cfg->agent_binary)
		cfg->agent_binary = sibling_binary("trainagent");
	if (!cfg->advertise_url) {
		struct buf b = BUF_INIT;

		(void)buf_addf(&b, "%s://%s", cfg->tls_cert ? "https" : "http",
			       cfg->agent_listen ? cfg->agent_listen :
						   cfg->listen);
		cfg->advertise_url = buf_detach(&b, NULL);
	}
	if (!cfg->agent_controllers)
		split_advertise(cfg);
}

int ctrl_listen_is_loopback(const char *listen)
{
	return !strncmp(listen, "127.", 4) || !strncmp(listen, "[::1]:", 6) ||
	       !strncmp(listen, "localhost:", 10);
}

/* --listen or --agent-listen (opt): HOST:PORT, loopback without
 * credentials. */
static int check_listen(const struct ctrl_config *cfg, const char *opt,
			const char *listen, struct buf *err)
{
	const char *colon = strrchr(listen, ':');
	char *end;
	long port;

	if (!colon || colon == listen) {
		(void)buf_addf(err, "--%s '%s' must be HOST:PORT", opt, listen);
		return ERR_INVALID;
	}
	port = strtol(colon + 1, &end, 10);
	if (*end || colon[1] == '\0' || port < 0 || port > 65535) {
		(void)buf_addf(err, "--%s '%s' has an invalid port", opt,
			       listen);
		return ERR_INVALID;
	}
	if (!cfg->credentials_file && !ctrl_listen_is_loopback(listen)) {
		(void)buf_addf(err,
			       "--%s '%s' is not a loopback address: "
			       "without --credentials requests are not "
			       "authenticated, so the API may only listen on "
			       "loopback",
			       opt, listen);
		return ERR_INVALID;
	}
	return 0;
}

/* Every URL of --advertise-url (all, sorted) is http(s) and not empty. */
static int check_advertise(const char *all, struct buf *err)
{
	struct strvec v = STRVEC_INIT;
	size_t i;
	int ret = 0;

	strvec_split(&v, all, ',');
	for (i = 0; i < v.n && !ret; i++) {
		const char *u = v.v[i];

		if (!((strlen(u) > 7 && !strncmp(u, "http://", 7)) ||
		      (strlen(u) > 8 && !strncmp(u, "https://", 8)))) {
			(void)buf_addf(err,
				       "--advertise-url: '%s' is not an "
				       "http:// or https:// URL",
				       u);
			ret = -1;
		}
	}
	strvec_release(&v);
	return ret;
}

/* --member and --peers (controller/member.c runs the member). */
static int check_members(const struct ctrl_config *cfg, struct buf *err)
{
	struct ha_config members;

	if (!cfg->peers != !cfg->member) {
		(void)buf_adds(err, "--member and --peers go together");
		return ERR_INVALID;
	}
	if ((cfg->ha_join || cfg->ha_recover) && !cfg->peers) {
		(void)buf_adds(err, "--join and --ha-recover need --peers");
		return ERR_INVALID;
	}
	if (cfg->ha_join && cfg->ha_recover) {
		(void)buf_adds(err,
			       "--join and --ha-recover exclude each other");
		return ERR_INVALID;
	}
	if (!cfg->peers)
		return 0;
	if (cfg->local_hosts > 0 || cfg->tls_cert) {
		(void)buf_adds(err, "--peers runs hosts over SSH only, without "
				    "--local-hosts or --tls-cert");
		return ERR_INVALID;
	}
	if (cfg->ha_heartbeat_ms * 2 > cfg->ha_election_ms) {
		(void)buf_addf(err,
			       "--ha-heartbeat-ms (%ld) must be at most half "
			       "of --ha-election-ms (%ld)",
			       cfg->ha_heartbeat_ms, cfg->ha_election_ms);
		return ERR_INVALID;
	}
	memset(&members, 0, sizeof(members));
	if (ha_config_parse_peers(&members, cfg->peers, (unsigned)cfg->member,
				  err))
		return ERR_INVALID;
	ha_config_release(&members);
	return 0;
}

int ctrl_config_check(const struct ctrl_config *cfg, struct buf *err)
{
	size_t i;

	if (check_members(cfg, err))
		return ERR_INVALID;

	if (check_listen(cfg, "listen", cfg->listen, err) ||
	    (cfg->agent_listen &&
	     check_listen(cfg, "agent-listen", cfg->agent_listen, err)))
		return ERR_INVALID;
	if (check_advertise(cfg->agent_controllers, err))
		return ERR_INVALID;
	if (cfg->agent_listen && !strcmp(cfg->agent_listen, cfg->listen)) {
		(void)buf_addf(err,
			       "--agent-listen '%s' must differ from --listen",
			       cfg->agent_listen);
		return ERR_INVALID;
	}
	if (cfg->rdzv_attempt_bytes >= cfg->rdzv_total_bytes) {
		(void)buf_addf(err,
			       "--rdzv-attempt-bytes (%ld) must be less than "
			       "--rdzv-total-bytes (%ld): one attempt may not "
			       "take the whole rendezvous store",
			       cfg->rdzv_attempt_bytes, cfg->rdzv_total_bytes);
		return ERR_INVALID;
	}
	if (!cfg->tls_cert != !cfg->tls_key ||
	    (cfg->tls_ca && !cfg->tls_cert)) {
		(void)buf_adds(err, "--tls-cert and --tls-key go together, and "
				    "--tls-ca needs them");
		return ERR_INVALID;
	}
	if (strlen(cfg->account_id) != 12) {
		(void)buf_addf(err, "--account-id '%s' must be 12 digits",
			       cfg->account_id);
		return ERR_INVALID;
	}
	for (i = 0; i < 12; i++) {
		if (cfg->account_id[i] < '0' || cfg->account_id[i] > '9') {
			(void)buf_addf(err,
				       "--account-id '%s' must be 12 "
				       "digits",
				       cfg->account_id);
			return ERR_INVALID;
		}
	}
	for (i = 0; cfg->region[i]; i++) {
		char c = cfg->region[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '-')) {
			(void)buf_addf(err,
				       "--region '%s' may hold only "
				       "a-z, 0-9 and '-'",
				       cfg->region);
			return ERR_INVALID;
		}
	}
	return 0;
}

void ctrl_config_print(const struct ctrl_config *cfg)
{
	size_t i;

	printf("listen %s\n", cfg->listen);
	printf("state-dir %s\n", cfg->state_dir);
	printf("credentials %s\n",
	       cfg->credentials_file ? cfg->credentials_file : "none");
	printf("region %s\n", cfg->region);
	printf("account-id %s\n", cfg->account_id);
	printf("threads %d\n", cfg->threads);
	printf("max-body %ld\n", cfg->body_max);
	printf("local-hosts %d\n", cfg->local_hosts);
	printf("agent-binary %s\n", cfg->agent_binary);
	printf("heartbeat-ms %ld\n", cfg->heartbeat_ms);
	printf("host-deadline-ms %ld\n", cfg->host_deadline_ms);
	printf("grace-period %ld\n", cfg->grace_ms / 1000);
	printf("max-retries %d\n", cfg->max_retries);
	printf("hang-timeout %ld\n", cfg->hang_timeout_ms / 1000);
	printf("retry-policy %s\n", cfg->retry_sagemaker ? "sagemaker" : "all");
	printf("restart-wait %ld\n", cfg->restart_wait_ms / 1000);
	printf("elastic-wait %ld\n", cfg->elastic_wait_ms / 1000);
	printf("straggler-action %s\n",
	       cfg->strag_action == CTRL_STRAG_NONE ? "none" :
	       cfg->strag_action == CTRL_STRAG_MOVE ? "move" :
						      "name");
	if (cfg->peers)
		printf("member %d\npeers %s\n", cfg->member, cfg->peers);
	printf("straggler-window %ld\n", cfg->strag_window_ms / 1000);
	printf("straggler-ratio %g\n", cfg->strag_ratio);
	printf("quarantine-failures %d\n", cfg->quarantine_failures);
	printf("quarantine-window %ld\n", cfg->quarantine_window_ms / 1000);
	printf("infra-check %s\n", cfg->infra_check ? "on" : "off");
	printf("infra-check-min-disk %ld\n", cfg->infra_min_disk_mb);
	printf("infra-check-min-shm %ld\n", cfg->infra_min_shm_mb);
	printf("infra-check-max-skew-ms %ld\n", cfg->infra_max_skew_ms);
	printf("infra-check-network %s\n", cfg->infra_net ? "on" : "off");
	printf("infra-check-net-rtt-factor %ld\n", cfg->infra_net_rtt_factor);
	printf("infra-check-net-rtt-floor-us %ld\n",
	       cfg->infra_net_rtt_floor_us);
	printf("infra-check-net-bw-factor %ld\n", cfg->infra_net_bw_factor);
	if (cfg->tm_interval_ms >= 0)
		printf("telemetry-ms %ld\n", cfg->tm_interval_ms);
	else
		printf("telemetry-ms agents\n");
	printf("telemetry-retention %ld\n", cfg->tm_retention_h);
	printf("s3-max-uploads %ld\n", cfg->s3_max_uploads);
	printf("s3-upload-max-age %ld\n", cfg->s3_upload_max_age_ms / 1000);
	printf("telemetry-job-retention %ld\n", cfg->tm_job_retention_d);
	printf("advertise-url %s\n", cfg->advertise_url);
	printf("agent-controllers %s\n", cfg->agent_controllers);
	printf("agent-listen %s\n",
	       cfg->agent_listen ? cfg->agent_listen : "none");
	printf("per-client-connections %ld\n", cfg->per_client_conns);
	printf("agent-per-client-connections %ld\n",
	       cfg->agent_per_client_conns);
	printf("header-timeout %ld\n", cfg->header_timeout_s);
	printf("rdzv-attempt-bytes %ld\n", cfg->rdzv_attempt_bytes);
	printf("rdzv-attempt-keys %ld\n", cfg->rdzv_attempt_keys);
	printf("rdzv-total-bytes %ld\n", cfg->rdzv_total_bytes);
	printf("inventory %s\n", cfg->inventory ? cfg->inventory : "none");
	printf("tls-cert %s\n", cfg->tls_cert ? cfg->tls_cert : "none");
	printf("s3-endpoint %s\n",
	       cfg->s3_endpoint ? cfg->s3_endpoint : "none");
	printf("s3-domain %s\n", cfg->s3_domain ? cfg->s3_domain : "none");
	printf("registry-auth %s\n",
	       cfg->registry_auth ? cfg->registry_auth : "none");
	for (i = 0; i < cfg->n_insecure; i++)
		printf("insecure-registry %s\n", cfg->insecure[i]);
	printf("image-map %s\n", cfg->image_map ? cfg->image_map : "none");
	printf("framework-versions %s\n",
	       cfg->framework_strict ? "strict" : "warn");
	for (i = 0; i < cfg->n_file_roots; i++)
		printf("allow-file-root %s\n",
		       cfg->file_roots[i][0] ? cfg->file_roots[i] : "/");
	if (!cfg->n_file_roots)
		printf("allow-file-root %s\n",
		       cfg->credentials_file ? "none" : "any");
}

void ctrl_config_release(struct ctrl_config *cfg)
{
	free(cfg->listen);
	free(cfg->state_dir);
	free(cfg->credentials_file);
	free(cfg->region);
	free(cfg->account_id);
	free(cfg->agent_binary);
	free(cfg->advertise_url);
	free(cfg->agent_controllers);
	free(cfg->agent_listen);
	free(cfg->peers);
	free(cfg->s3_endpoint);
	free(cfg->s3_domain);
	free(cfg->inventory);
	free(cfg->tls_cert);
	free(cfg->tls_key);
	free(cfg->tls_ca);
	free(cfg->registry_auth);
	free(cfg->image_map);
	while (cfg->n_insecure)
		free(cfg->insecure[--cfg->n_insecure]);
	free(cfg->insecure);
	while (cfg->n_file_roots)
		free(cfg->file_roots[--cfg->n_file_roots]);
	free(cfg->file_roots);
	memset(cfg, 0, sizeof(*cfg));
}
