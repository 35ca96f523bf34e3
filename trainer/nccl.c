/*
 * The GPU backend: NCCL collectives on device memory, one communicator
 * over the whole job. Every call runs on the backend's own stream and
 * waits for it, so the API stays synchronous like the MPI one.
 *
 * The unique id reaches the other ranks through MPI_Bcast under mpirun,
 * and through the job's rendezvous store (key nccl-id-<attempt>) when MPI
 * is a singleton (torch_distributed mode). Built only with
 * -DTRAINER_HAVE_NCCL; otherwise every entry point says TRAINER_ENOTSUP.
 */
#include <stdlib.h>
#include <string.h>

#include "trainer/internal.h"

#ifdef TRAINER_HAVE_NCCL

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include "common/banned.h"

/* How long ranks other than 0 wait for rank 0 to publish the id. */
#define NCCL_ID_TIMEOUT_MS (15 * 60 * 1000)

struct trainer__nccl {
	ncclComm_t comm;
	cudaStream_t stream;
	int64_t *scratch; /* device memory for barrier and host helpers */
	size_t scratch_n;
	int have_comm, have_stream;
};

static int cuda_fail(const struct trainer *t, const char *what, cudaError_t e)
{
	return trainer__err(t, TRAINER_ECOMM, "%s: %s", what,
			    cudaGetErrorString(e));
}

static int nccl_fail(const struct trainer *t, const char *what, ncclResult_t r)
{
	return trainer__err(t, TRAINER_ECOMM, "%s: %s", what,
			    ncclGetErrorString(r));
}

static int get_unique_id(struct trainer *t, ncclUniqueId *id)
{
	char key[64];
	void *val = NULL;
	size_t len = 0;
	ncclResult_t r;
	int ret, rc;

	if (t->rank == 0) {
		r = ncclGetUniqueId(id);
		if (r != ncclSuccess)
			return nccl_fail(t, "ncclGetUniqueId", r);
	}
	if (t->world == 1)
		return 0;
	if (t->mpi_size == t->world) {
		rc = MPI_Bcast(id, (int)sizeof(*id), MPI_BYTE, 0,
			       MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS)
			return trainer__err(t, TRAINER_ECOMM,
					    "MPI_Bcast of the NCCL id failed");
		return 0;
	}
	(void)snprintf(key, sizeof(key), "nccl-id-%d", t->attempt);
	if (t->rank == 0)
		return trainer_kv_put(t, key, id, sizeof(*id));
	ret = trainer_kv_get(t, key, NCCL_ID_TIMEOUT_MS, &val, &len);
	if (ret)
		return ret;
	if (len != sizeof(*id)) {
		free(val);
		return trainer__err(t, TRAINER_ECOMM,
				    "rendezvous key %s holds %zu bytes, not an "
				    "NCCL id",
				    key, len);
	}
	memcpy(id, val, sizeof(*id));
	free(val);
	return 0;
}

int trainer__nccl_init(struct trainer *t)
{
	struct trainer__nccl *g;
	ncclUniqueId id;
	ncclResult_t r;
	cudaError_t e;
	int ndev = 0, ret;

	e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess)
		return cuda_fail(t, "cudaGetDeviceCount", e);
	if (t->local_rank >= ndev)
		return trainer__err(t, TRAINER_ECOMM,
				    "local rank %d but only %d CUDA devices",
				    t->local_rank, ndev);
	e = cudaSetDevice(t->local_rank);
	if (e != cudaSuccess)
		return cuda_fail(t, "cudaSetDevice", e);
	g = calloc(1, sizeof(*g));
	if (!g)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	t->nccl = g;
	e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
	if (e != cudaSuccess)
		return cuda_fail(t, "cudaStreamCreate", e);
	g->have_stream = 1;
	g->scratch_n = 16;
	e = cudaMalloc((void **)&g->scratch, g->scratch_n * sizeof(int64_t));
	if (e != cudaSuccess) {
		g->scratch = NULL;
		return cuda_fail(t, "cudaMalloc", e);
	}
	memset(&id, 0, sizeof(id));
	ret = get_unique_id(t, &id);
	if (ret)
		return ret;
	r = ncclCommInitRank(&g->comm, t->world, id, t->rank);
	if (r != ncclSuccess)
		return nccl_fail(t, "ncclCommInitRank", r);
	g->have_comm = 1;
	return 0;
}

void trainer__nccl_free(struct trainer *t)
{
	struct trainer__nccl *g = t->nccl;

	if (!g)
		return;
	if (g->have_comm)
		(void)ncclCommDestroy(g->comm);
	if (g->scratch)
		(void)cudaFree(g->scratch);
	if (g->have_stream)
		(void)cudaStreamDestroy(g->stream);
	free(g);
	t->nccl = NULL;
}

static ncclDataType_t nccl_type(enum trainer_dtype dtype)
{
	switch (dtype) {
	case TRAINER_FLOAT:
		return ncclFloat;
	case TRAINER_DOUBLE:
		return ncclDouble;
	case TRAINER_INT64:
		return ncclInt64;
	}
	return ncclFloat;
}

static ncclRedOp_t nccl_op(enum trainer_op op)
{
	switch (op) {
	case TRAINER_SUM:
		return ncclSum;
	case TRAINER_MAX:
		return ncclMax;
	case TRAINER_MIN:
		return ncclMin;
	}
	return ncclSum;
}

static int ready(struct trainer *t)
{
	if (!t->nccl || !t->nccl->have_comm)
		return trainer__err(t, TRAINER_ECOMM,
				    "the NCCL backend is not initialised");
	return 0;
}

/* Waits for the stream; the result of an enqueue is in r. */
static int finish(struct trainer *t, const char *what, ncclResult_t r)
{
	cudaError_t e;

	if (r != ncclSuccess)
		return nccl_fail(t, what, r);
	e = cudaStreamSynchronize(t->nccl->stream);
	if (e != cudaSuccess)
		return cuda_fail(t, what, e);
	return 0;
}

int trainer__nccl_allreduce(struct trainer *t, void *buf, size_t count,
			    enum trainer_dtype dtype, enum trainer_op op,
			    int avg)
{
	int ret = ready(t);

	if (ret)
		return ret;
	return finish(t, "ncclAllReduce",
		      ncclAllReduce(buf, buf, count, nccl_type(dtype),
				    avg ? ncclAvg : nccl_op(op), t->nccl->comm,
				    t->nccl->stream));
}

int trainer__nccl_broadcast(struct trainer *t, void *buf, size_t count,
			    enum trainer_dtype dtype, int root)
{
	int ret = ready(t);

	if (ret)
		return ret;
	return finish(t, "ncclBroadcast",
		      ncclBroadcast(buf, buf, count, nccl_type(dtype), root,
				    t->nccl->comm, t->nccl->stream));
}

int trainer__nccl_send(struct trainer *t, const void *buf, size_t count,
		       enum trainer_dtype dtype, int peer)
{
	int ret = ready(t);

	if (ret)
		return ret;
	return finish(t, "ncclSend",
		      ncclSend(buf, count, nccl_type(dtype), peer,
			       t->nccl->comm, t->nccl->stream));
}

int trainer__nccl_recv(struct trainer *t, void *buf, size_t count,
		       enum trainer_dtype dtype, int peer)
{
	int ret = ready(t);

	if (ret)
		return ret;
	return finish(t, "ncclRecv",
		      ncclRecv(buf, count, nccl_type(dtype), peer,
			       t->nccl->comm, t->nccl->stream));
}

/* NCCL has no barrier: an allreduce of one value on every rank is one. */
int trainer__nccl_barrier(struct trainer *t)
{
	int ret = ready(t);

	if (ret)
		return ret;
	return finish(t, "ncclAllReduce (barrier)",
		      ncclAllReduce(t->nccl->scratch, t->nccl->scratch, 1,
				    ncclInt64, ncclSum, t->nccl->comm,
				    t->nccl->stream));
}

int trainer__nccl_allreduce_host_i64(struct trainer *t, int64_t *v, size_t n,
				     enum trainer_op op)
{
	struct trainer__nccl *g = t->nccl;
	cudaError_t e;
	int ret = ready(t);

	if (ret)
		return ret;
	if (n > g->scratch_n)
		return trainer__err(t, TRAINER_EINVAL,
				    "host allreduce of %zu values", n);
	e = cudaMemcpy(g->scratch, v, n * sizeof(*v), cudaMemcpyHostToDevice);
	if (e != cudaSuccess)
		return cuda_fail(t, "cudaMemcpy", e);
	ret = finish(t, "ncclAllReduce",
		     ncclAllReduce(g->scratch, g->scratch, n, ncclInt64,
				   nccl_op(op), g->comm, g->stream));
	if (ret)
		return ret;
	e = cudaMemcpy(v, g->scratch, n * sizeof(*v), cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
		return cuda_fail(t, "cudaMemcpy", e);
	return 0;
}

#else /* !TRAINER_HAVE_NCCL */

#include "common/banned.h"

static int not_built(struct trainer *t)
{
	return trainer__err(t, TRAINER_ENOTSUP,
			    "libtrainer was built without NCCL/CUDA: "
			    "TRAINER_DEVICE_GPU is not available");
}

int trainer__nccl_init(struct trainer *t)
{
	return not_built(t);
}

void trainer__nccl_free(struct trainer *t)
{
	(void)t;
}

int trainer__nccl_allreduce(struct trainer *t, void *buf, size_t count,
			    enum trainer_dtype dtype, enum trainer_op op,
			    int avg)
{
	(void)buf;
	(void)count;
	(void)dtype;
	(void)op;
	(void)avg;
	return not_built(t);
}

int trainer__nccl_broadcast(struct trainer *t, void *buf, size_t count,
			    enum trainer_dtype dtype, int root)
{
	(void)buf;
	(void)count;
	(void)dtype;
	(void)root;
	return not_built(t);
}

int trainer__nccl_send(struct trainer *t, const void *buf, size_t count,
		       enum trainer_dtype dtype, int peer)
{
	(void)buf;
	(void)count;
	(void)dtype;
	(void)peer;
	return not_built(t);
}

int trainer__nccl_recv(struct trainer *t, void *buf, size_t count,
		       enum trainer_dtype dtype, int peer)
{
	(void)buf;
	(void)count;
	(void)dtype;
	(void)peer;
	return not_built(t);
}

int trainer__nccl_barrier(struct trainer *t)
{
	return not_built(t);
}

int trainer__nccl_allreduce_host_i64(struct trainer *t, int64_t *v, size_t n,
				     enum trainer_op op)
{
	(void)v;
	(void)n;
	(void)op;
	return not_built(t);
}

#endif
