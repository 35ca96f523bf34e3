#ifndef TRAINER_INTERNAL_H
#define TRAINER_INTERNAL_H

/*
 * What the files of libtrainer share: the context struct, the error
 * setter and the backend hooks. Nothing outside trainer/ includes this.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "trainer/trainer.h"

#define TRAINER__ERRLEN 512
#define TRAINER__KEY_MAX 128
#define TRAINER__VALUE_MAX 65536
#define TRAINER__KEEP_DEFAULT 2

/* One SM_CHANNEL_<NAME> variable, copied at trainer_init(). */
struct trainer__channel {
	char *name; /* the part after SM_CHANNEL_, as in the env */
	char *dir;
};

struct trainer__nccl;

struct trainer {
	/*
	 * The error text lives in its own allocation so that getters taking
	 * a const struct trainer * can still explain a failure.
	 */
	char *err;

	enum trainer_device device;
	int rank, world, local_rank, local_size;
	int attempt;

	char **hosts;
	size_t n_hosts;
	size_t host_index;
	char *current_host;

	char *model_dir, *output_dir, *ckpt_dir;
	struct trainer__channel *channels;
	size_t n_channels;
	json_t *hps; /* a JSON object, never NULL after init */

	int keep;
	FILE *metric_stream; /* NULL means stdout */
	/* Checkpoint-now: listening announced; a request answered by
	 * trainer_checkpoint_requested() awaits its save. */
	int ckpt_now_listening;
	int ckpt_now_pending;

	char *rdzv_url; /* NULL outside a job */
	char *rdzv_token;
	int curl_inited;

	/* MPI: whether we called MPI_Init_thread, and MPI_COMM_WORLD's size. */
	int mpi_owned;
	int mpi_size;
	struct trainer__nccl *nccl; /* NULL unless TRAINER_DEVICE_GPU */
};

/*
 * Formats the error text into t->err and returns code, so that a failure
 * reads `return trainer__err(t, TRAINER_EINVAL, "...", ...);`.
 */
int trainer__err(const struct trainer *t, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A malloc'ed copy of s, or NULL when s is NULL or memory ran out. */
char *trainer__strdup(const char *s);

/* env.c: fills the env part of t (everything but the backends). */
int trainer__env_load(struct trainer *t);
void trainer__env_release(struct trainer *t);

/* comm.c: MPI setup and teardown. */
int trainer__mpi_init(struct trainer *t, int *argc, char ***argv);
void trainer__mpi_finalize(struct trainer *t);
/* An allreduce of host int64 values whatever the device (used by
 * trainer_checkpoint_latest_all). */
int trainer__allreduce_host_i64(struct trainer *t, int64_t *v, size_t n,
				enum trainer_op op);

/* nccl.c: the GPU backend; every function returns TRAINER_ENOTSUP when
 * libtrainer was built without NCCL. */
int trainer__nccl_init(struct trainer *t);
void trainer__nccl_free(struct trainer *t);
int trainer__nccl_allreduce(struct trainer *t, void *buf, size_t count,
			    enum trainer_dtype dtype, enum trainer_op op,
			    int avg);
int trainer__nccl_broadcast(struct trainer *t, void *buf, size_t count,
			    enum trainer_dtype dtype, int root);
int trainer__nccl_send(struct trainer *t, const void *buf, size_t count,
		       enum trainer_dtype dtype, int peer);
int trainer__nccl_recv(struct trainer *t, void *buf, size_t count,
		       enum trainer_dtype dtype, int peer);
int trainer__nccl_barrier(struct trainer *t);
int trainer__nccl_allreduce_host_i64(struct trainer *t, int64_t *v, size_t n,
				     enum trainer_op op);

/* kv.c */
int trainer__kv_global_init(struct trainer *t);
void trainer__kv_global_cleanup(struct trainer *t);

/* comm.c: bytes per element, 0 for an unknown dtype. */
size_t trainer__dtype_size(enum trainer_dtype dtype);

/* manifest.c: MANIFEST.json of one checkpoint directory. */
#define TRAINER__MANIFEST "MANIFEST.json"
#define TRAINER__FORMAT "trainctl-checkpoint-1"
#define TRAINER__NAME_MAX 255

struct trainer__mfile {
	char *name;
	uint64_t size;
	char sha256[65]; /* lower-case hex */
};

struct trainer__manifest {
	int64_t step;
	int rank, world_size;
	struct trainer__mfile *files;
	size_t n;
};

/* Whether name is a valid checkpoint file name ([A-Za-z0-9._-]{1,255},
 * not "." or "..", not MANIFEST.json). */
int trainer__name_valid(const char *name);
/* "a/b" in a malloc'ed string, NULL when memory ran out. */
char *trainer__path_join(const char *a, const char *b);
void trainer__sha256_hex(const unsigned char digest[32], char out[65]);
/*
 * Writes len bytes to a new file dir/name (which must not exist) and
 * fsyncs it; the sha256 of the data goes to hex when not NULL.
 */
int trainer__file_write(struct trainer *t, const char *dir, const char *name,
			const void *data, size_t len, char *hex);
int trainer__dir_fsync(struct trainer *t, const char *dir);
/* Writes and fsyncs dir/MANIFEST.json. */
int trainer__manifest_write(struct trainer *t, const char *dir,
			    const struct trainer__manifest *m);
/*
 * Reads dir/MANIFEST.json into *m (release with
 * trainer__manifest_release). TRAINER_ENOTFOUND when there is none,
 * TRAINER_EIO when it is not a valid manifest.
 */
int trainer__manifest_read(struct trainer *t, const char *dir,
			   struct trainer__manifest *m);
void trainer__manifest_release(struct trainer__manifest *m);
/*
 * Checks that dir/<f->name> has f->size bytes and, when hash is set (or
 * data is not NULL), the sha256 f->sha256. When data is not NULL the
 * content is handed back in a malloc'ed buffer that the caller frees.
 * 0 when it matches, TRAINER_EIO (or TRAINER_ENOMEM) otherwise.
 */
int trainer__file_verify(struct trainer *t, const char *dir,
			 const struct trainer__mfile *f, int hash, void **data);

#endif
