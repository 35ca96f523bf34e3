#ifndef API_DISTRIBUTION_H
#define API_DISTRIBUTION_H

/*
 * The job's distribution mode, from its hyperparameters as the SageMaker
 * SDK encodes `distribution=` (contract 6.1), and the per-process
 * variables each mode derives from it.
 */
#include <stddef.h>

#include "api/job_spec.h"
#include "common/buf.h"

enum api_dist_mode {
	API_DIST_NONE = 0,	       /* the entry point once per host */
	API_DIST_TORCH,		       /* torchrun-style ranks, env:// */
	API_DIST_MPI,		       /* mpirun on algo-1, the others wait */
	API_DIST_PARAMETER_SERVER,     /* a worker per host, servers on K */
	API_DIST_MULTI_WORKER_MIRRORED /* one worker per host, TF_CONFIG */
};

struct api_distribution {
	enum api_dist_mode mode;
	/* Processes per host asked for; 0: the host's GPUs, else 1. */
	int processes_per_host;
	/* MPI: total processes (sagemaker_mpi_num_processes), 0: all. */
	int mpi_processes;
	/* MPI: sagemaker_mpi_custom_mpi_options, NULL when none. */
	char *mpi_options;
	/* parameter_server: hosts that also run a server, 0: all. */
	int ps_servers;
};

/* Hosts a job may have; limits what the variables below can hold. */
#define API_DIST_MAX_PROCS 256

/*
 * Reads the mode from spec's hyperparameters. Returns 0, or ERR_INVALID
 * with err naming the hyperparameter (two modes at once, a count that is
 * not an integer in range, a mode trainctl does not run). d is zeroed on
 * failure.
 */
int api_distribution_parse(const struct api_job_spec *spec,
			   struct api_distribution *d, struct buf *err);
void api_distribution_release(struct api_distribution *d);

const char *api_dist_mode_name(enum api_dist_mode m);
int api_dist_mode_parse(const char *s, enum api_dist_mode *m);

/*
 * TF_CONFIG for one process (contract 6.2, with addresses instead of
 * names): cluster.master = [addr[0]:worker_port(0)], cluster.worker = the
 * other hosts' worker ports, cluster.ps = the first n_ps hosts' server
 * ports (parameter_server only); task = {type, index}. type is "master",
 * "worker" or "ps". Ports: host i's worker listens on port_base + 2i, its
 * server on port_base + 2i + 1. For multi-worker mirrored, every host is
 * in cluster.worker and there is no master.
 */
int api_tf_config_build(enum api_dist_mode mode, const char *const *addresses,
			size_t n_hosts, size_t n_ps, int port_base,
			const char *type, int index, struct buf *out);

/* Whether a hyperparameter value (JSON-encoded, as the SDK sends) is true. */
int api_hp_true(const char *value);

#endif
