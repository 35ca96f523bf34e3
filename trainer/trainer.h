#ifndef TRAINER_TRAINER_H
#define TRAINER_TRAINER_H

/*
 * libtrainer: what a C training program needs to run under trainctl (or
 * SageMaker): the job's environment, typed hyperparameters, atomic
 * checkpoints, metric lines, and collectives across every rank of the job.
 *
 * Build a program with
 *     cc train.c $(pkg-config --cflags --libs trainer)
 *
 * Rules of the library: it never prints (except trainer_metric(), whose
 * output is its purpose) and never exits; every function returns 0 or a
 * negative TRAINER_E* code, and trainer_errmsg() says what went wrong in
 * words. It is not thread-safe: one struct trainer per process, used from
 * one thread.
 *
 * Ranks. Under mpirun (the job's sagemaker_mpi_enabled mode) the world is
 * MPI_COMM_WORLD. Under torch_distributed mode (RANK / WORLD_SIZE in the
 * environment, no mpirun) MPI is a singleton, so collectives across ranks
 * need NCCL (TRAINER_DEVICE_GPU), whose unique id goes through the job's
 * rendezvous store. Without either, the world is this one process.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum trainer_err {
	TRAINER_OK = 0,
	TRAINER_ENOMEM = -1,	/* allocation failed */
	TRAINER_EINVAL = -2,	/* bad argument or bad value in the env */
	TRAINER_ENOTFOUND = -3, /* no such hyperparameter / checkpoint / key */
	TRAINER_EIO = -5,	/* file or network operation failed */
	TRAINER_ETIMEDOUT = -6, /* a wait passed its deadline */
	TRAINER_ECOMM = -7,	/* the collective backend failed */
	TRAINER_ENOTSUP = -8	/* not built in (e.g. NCCL without CUDA) */
};

enum trainer_device {
	TRAINER_DEVICE_CPU = 0, /* MPI collectives on host memory */
	TRAINER_DEVICE_GPU = 1	/* NCCL collectives on device memory */
};

enum trainer_dtype { TRAINER_FLOAT = 0, TRAINER_DOUBLE = 1, TRAINER_INT64 = 2 };

enum trainer_op { TRAINER_SUM = 0, TRAINER_MAX = 1, TRAINER_MIN = 2 };

struct trainer;

/*
 * Reads the environment (SM_*, RANK/WORLD_SIZE, OMPI_COMM_WORLD_*,
 * TRAINCTL_*), initialises MPI (MPI_Init_thread, unless already
 * initialised by the caller) and, for TRAINER_DEVICE_GPU, CUDA and NCCL.
 * *out is set on success; on failure *out is NULL and, when errmsg is not
 * NULL, a reason is copied into errmsg[0..errlen).
 * argc/argv may be NULL.
 */
int trainer_init(int *argc, char ***argv, enum trainer_device device,
		 struct trainer **out, char *errmsg, size_t errlen);

/* Finalises the backends (MPI_Finalize when trainer_init initialised it). */
void trainer_free(struct trainer *t);

/* The last error's text, or "" (valid until the next call on t). */
const char *trainer_errmsg(const struct trainer *t);

/* The world: rank of this process in 0..world-1, and per-host layout. */
int trainer_rank(const struct trainer *t);
int trainer_world_size(const struct trainer *t);
int trainer_local_rank(const struct trainer *t);
int trainer_local_size(const struct trainer *t);

/* Hosts of the job (SM_HOSTS; "algo-1" alone outside a job). */
size_t trainer_num_hosts(const struct trainer *t);
const char *trainer_host(const struct trainer *t, size_t i);
const char *trainer_current_host(const struct trainer *t);
/* Index of the current host in the host list. */
size_t trainer_host_index(const struct trainer *t);

/* Which attempt of the job this is (TRAINCTL_ATTEMPT, 1 outside a job). */
int trainer_attempt(const struct trainer *t);

/*
 * Directories: model (SM_MODEL_DIR), output data (SM_OUTPUT_DATA_DIR),
 * checkpoints (TRAINCTL_CHECKPOINT_DIR, default /opt/ml/checkpoints) and a
 * channel's data directory (SM_CHANNEL_<NAME>; NULL when the job has no
 * such channel). Strings live as long as t.
 * Outside any job (no SM_* nor TRAINCTL_* variable) the defaults are
 * ./model, ./output and ./checkpoints, and trainer_init() creates ./model
 * and ./output so that a program run by hand can write at once.
 */
const char *trainer_model_dir(const struct trainer *t);
const char *trainer_output_dir(const struct trainer *t);
const char *trainer_checkpoint_dir(const struct trainer *t);
const char *trainer_channel_dir(const struct trainer *t, const char *channel);

/*
 * Hyperparameters, from SM_HPS (a JSON object; values as the toolkit
 * decodes them: numbers, booleans, strings). Each getter returns
 * TRAINER_ENOTFOUND when the key is absent (and leaves *v alone, so a
 * default set beforehand stays), TRAINER_EINVAL when the value does not
 * have the asked type (a string "3" is accepted as the integer 3, "0.5"
 * as a double, "true"/"False"/"1"/"0" and 0/1 as booleans; an integral
 * real such as 1e3 as an integer; trainer_hp_string wants a JSON string).
 */
int trainer_hp_int(const struct trainer *t, const char *key, int64_t *v);
int trainer_hp_double(const struct trainer *t, const char *key, double *v);
int trainer_hp_bool(const struct trainer *t, const char *key, int *v);
/* *v points into t, valid as long as t. */
int trainer_hp_string(const struct trainer *t, const char *key, const char **v);

/*
 * Checkpoints, written atomically in trainer_checkpoint_dir():
 *   <dir>/step-<step, 10 digits>.rank-<rank>/<files...>
 *   <dir>/step-<...>.rank-<rank>/MANIFEST.json   (written last)
 * The files go into a temporary directory (<dir>/.tmp-...), each is
 * fsync'ed, then MANIFEST.json ({"format": "trainctl-checkpoint-1",
 * "step": N, "rank": R, "world_size": W, "files": [{"name", "size",
 * "sha256"}]}) is written and fsync'ed, the directory is renamed into
 * place and its parent fsync'ed. A checkpoint is complete when its
 * manifest exists and every file it lists has the listed size (and, when
 * verified, hash). Older checkpoints of this rank beyond `keep` (default
 * 2, trainer_checkpoint_keep(); 0 or less keeps all) are removed after a
 * save succeeds; the one just saved always stays. Saving a step again
 * replaces it. step: 0..9999999999. Format: docs/checkpoints.md.
 */
struct trainer_file {
	const char *name; /* [A-Za-z0-9._-]+, not MANIFEST.json */
	const void *data;
	size_t len;
};

int trainer_checkpoint_save(struct trainer *t, int64_t step,
			    const struct trainer_file *files, size_t n);
void trainer_checkpoint_keep(struct trainer *t, int keep);
/*
 * The newest complete checkpoint of this rank (sizes and hashes checked):
 * *step set, 0 returned; TRAINER_ENOTFOUND when there is none.
 */
int trainer_checkpoint_latest(struct trainer *t, int64_t *step);
/* Reads one file of a checkpoint into a malloc'ed buffer (*data). */
int trainer_checkpoint_load(struct trainer *t, int64_t step, const char *name,
			    void **data, size_t *len);
/*
 * The newest step whose checkpoint is complete on every rank (a MIN
 * allreduce of each rank's latest, repeated below that bound when some
 * rank lacks the step): what all ranks should resume from. Collective:
 * every rank must call it. TRAINER_ENOTFOUND when no step is on all.
 */
int trainer_checkpoint_latest_all(struct trainer *t, int64_t *step);
/*
 * Whether the agent asked for a checkpoint now, before a planned stop
 * (docs/checkpoints.md, "Checkpoint now"): 1 on every rank when any
 * host's request file (TRAINCTL_CHECKPOINT_NOW) exists, else 0; a
 * negative TRAINER_E* on failure. Collective with more than one rank (a
 * MAX allreduce): every rank calls it at the same steps, e.g. each step.
 * The first call tells the agent that this program takes requests; until
 * then a stop sends SIGTERM at once. After a 1, save a checkpoint at this
 * step on every rank: trainer_checkpoint_save() then answers the request
 * (a barrier, then the request file removed), and the agent stops the
 * ranks. Outside a job it returns 0.
 */
int trainer_checkpoint_requested(struct trainer *t);

/*
 * Metrics: one line on the stream given by trainer_metric_stream()
 * (default stdout), flushed at once:
 *     #metric <name>=<value %.8g> step=<step>
 * A MetricDefinition {"Name": "<name>", "Regex": "#metric <name>=(\\S+)"}
 * picks it up; trainctl matches these lines for every job even without
 * MetricDefinitions. name: [A-Za-z0-9:._/-]{1,255}; a value that is not
 * finite or a negative step is TRAINER_EINVAL (nothing is written).
 */
int trainer_metric(struct trainer *t, const char *name, double value,
		   int64_t step);
void trainer_metric_stream(struct trainer *t, FILE *f);

/*
 * Collectives over every rank (buffers in host memory for
 * TRAINER_DEVICE_CPU, device memory for TRAINER_DEVICE_GPU). Built on
 * MPI_Allreduce/MPI_Bcast/MPI_Send/MPI_Recv/MPI_Barrier, or the NCCL
 * equivalents; the library implements none of them itself.
 * trainer_allreduce works in place (sendrecv); TRAINER_AVG is SUM then a
 * division by the world size, done by trainer_allreduce_avg() (ncclAvg on
 * the GPU). Tags are 0..32767; NCCL has none and matches sends in order.
 * Under torch_distributed mode with TRAINER_DEVICE_CPU (several ranks but
 * no mpirun) the collectives return TRAINER_ENOTSUP.
 */
int trainer_allreduce(struct trainer *t, void *buf, size_t count,
		      enum trainer_dtype dtype, enum trainer_op op);
int trainer_allreduce_avg(struct trainer *t, float *buf, size_t count);
int trainer_broadcast(struct trainer *t, void *buf, size_t count,
		      enum trainer_dtype dtype, int root);
int trainer_send(struct trainer *t, const void *buf, size_t count,
		 enum trainer_dtype dtype, int peer, int tag);
int trainer_recv(struct trainer *t, void *buf, size_t count,
		 enum trainer_dtype dtype, int peer, int tag);
int trainer_barrier(struct trainer *t);

/*
 * The job's rendezvous store (TRAINCTL_RDZV_URL, TRAINCTL_RDZV_TOKEN):
 * a key-value store in the controller, private to this job and attempt.
 * key: [A-Za-z0-9._-]{1,128}; value at most 65536 bytes.
 * trainer_kv_get waits until the key exists or timeout_ms passes
 * (TRAINER_ETIMEDOUT); *value is malloc'ed (and NUL-terminated after len
 * bytes), the caller frees it. An HTTP status other than 200 (or 404 while
 * waiting) is TRAINER_EIO with the status in trainer_errmsg().
 * TRAINER_ENOTSUP outside a job (no TRAINCTL_RDZV_URL).
 */
int trainer_kv_put(struct trainer *t, const char *key, const void *value,
		   size_t len);
int trainer_kv_get(struct trainer *t, const char *key, int timeout_ms,
		   void **value, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
