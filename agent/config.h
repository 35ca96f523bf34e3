#ifndef AGENT_CONFIG_H
#define AGENT_CONFIG_H

/* The command line and its defaults (agent/config.c). */
#include "common/buf.h"

#define AGENT_VERSION "0.1.0"

/*
 * Built in three steps as OpenSSH's servconf.c: agent_config_init() marks
 * every field unset (-1 or NULL), agent_config_parse_args() fills in the
 * command line, agent_config_fill_defaults() the rest.
 */
struct agent_config {
	/*
	 * --controller: the base URL (no trailing slash), or the members of
	 * a replicated controller separated by commas; split into
	 * controllers (NULL-terminated) by agent_config_fill_defaults()
	 */
	char *controller;
	char **controllers;
	size_t n_controllers;
	char *host;
	char *work_dir;
	int cpus;
	int gpus;
	char *address; /* NULL until found: see session.c */
	int token_stdin;
	int keep_jobs;
	int verbose;
	/* --ca-file: what the controller's TLS is checked against (pinned
	 * at provisioning), NULL: system CAs */
	char *ca_file;
	long telemetry_ms; /* --telemetry-ms: sampling interval, 0: off */
	/* --memory-checkpoint-mb: the job's latest checkpoints kept in
	 * memory, at most this many MiB per job (0: off); under
	 * --memory-checkpoint-dir/<host> (agent/memckpt.h) */
	long memckpt_mb;
	char *memckpt_dir;
	/* --peer-checkpoint-port: the copies served to the job's other
	 * hosts on this port, and each pushed to the next host of the job
	 * (agent/peerckpt.h); 0: off */
	long peer_port;
};

#define AGENT_MEMCKPT_DIR "/dev/shm/trainctl-checkpoints"

void agent_config_init(struct agent_config *cfg);

/*
 * Parses argv. Returns 0, or ERR_INVALID with err explaining (the caller
 * prints usage and exits 2). --help prints usage and exits 0.
 */
int agent_config_parse_args(struct agent_config *cfg, int argc, char **argv,
			    struct buf *err);

/* Supplies defaults for what is still unset; may run nvidia-smi. */
void agent_config_fill_defaults(struct agent_config *cfg);

/* Checks required options. Returns 0 or ERR_INVALID with err. */
int agent_config_check(const struct agent_config *cfg, struct buf *err);

void agent_config_release(struct agent_config *cfg);
void agent_usage(void);

#endif
