/*
 * Who this process is in the job, and the collectives. Under mpirun the
 * world is MPI_COMM_WORLD; otherwise RANK / WORLD_SIZE describe it (as
 * torchrun and trainctl's torch_distributed mode set them) and MPI is a
 * singleton, so only NCCL can reach the other ranks. The collectives are
 * thin wrappers: MPI or NCCL does the work, we check arguments and turn
 * failures into TRAINER_ECOMM with the backend's words.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "trainer/internal.h"
#include "common/banned.h"

/* MPI counts are int: longer buffers go in pieces of this many elements. */
#define MPI_CHUNK ((size_t)INT_MAX)

static int mpi_fail(const struct trainer *t, const char *what, int rc)
{
	char s[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS || len <= 0)
		(void)snprintf(s, sizeof(s), "error %d", rc);
	else
		s[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] =
			'\0';
	return trainer__err(t, TRAINER_ECOMM, "%s: %s", what, s);
}

/* 1 when set (and *v filled), 0 when unset, TRAINER_EINVAL when bad. */
static int env_int(struct trainer *t, const char *name, int min, int *v)
{
	const char *s = getenv(name);
	char *end;
	long n;

	if (!s || !*s)
		return 0;
	errno = 0;
	n = strtol(s, &end, 10);
	if (errno || *end || n < min || n > INT_MAX)
		return trainer__err(t, TRAINER_EINVAL,
				    "%s '%s' is not an integer >= %d", name, s,
				    min);
	*v = (int)n;
	return 1;
}

static int world_from_mpi(struct trainer *t, int rank, int size)
{
	int ret;

	t->rank = rank;
	t->world = size;
	t->local_rank = rank;
	t->local_size = size;
	ret = env_int(t, "OMPI_COMM_WORLD_LOCAL_RANK", 0, &t->local_rank);
	if (ret >= 0)
		ret = env_int(t, "OMPI_COMM_WORLD_LOCAL_SIZE", 1,
			      &t->local_size);
	return ret < 0 ? ret : 0;
}

static int world_from_env(struct trainer *t)
{
	int have_lr, have_ls, ret;

	t->rank = 0;
	t->world = 1;
	ret = env_int(t, "RANK", 0, &t->rank);
	if (ret < 0)
		return ret;
	ret = env_int(t, "WORLD_SIZE", 1, &t->world);
	if (ret < 0)
		return ret;
	have_lr = env_int(t, "LOCAL_RANK", 0, &t->local_rank);
	if (have_lr < 0)
		return have_lr;
	have_ls = env_int(t, "LOCAL_WORLD_SIZE", 1, &t->local_size);
	if (have_ls < 0)
		return have_ls;
	/* Without the local variables, assume the ranks fill the hosts. */
	if (!have_ls)
		t->local_size = t->n_hosts > 0 && t->world % t->n_hosts == 0 ?
					t->world / (int)t->n_hosts :
					t->world;
	if (!have_lr)
		t->local_rank = t->rank % t->local_size;
	if (t->rank >= t->world)
		return trainer__err(t, TRAINER_EINVAL,
				    "RANK %d is not below WORLD_SIZE %d",
				    t->rank, t->world);
	if (t->local_rank >= t->local_size || t->local_size > t->world)
		return trainer__err(t, TRAINER_EINVAL,
				    "LOCAL_RANK %d / LOCAL_WORLD_SIZE %d do "
				    "not fit WORLD_SIZE %d",
				    t->local_rank, t->local_size, t->world);
	return 0;
}

int trainer__mpi_init(struct trainer *t, int *argc, char ***argv)
{
	int flag = 0, provided, rank, size, rc;

	rc = MPI_Finalized(&flag);
	if (rc == MPI_SUCCESS && flag)
		return trainer__err(t, TRAINER_ECOMM,
				    "MPI was finalised already (one trainer "
				    "per process)");
	rc = MPI_Initialized(&flag);
	if (rc != MPI_SUCCESS)
		return mpi_fail(t, "MPI_Initialized", rc);
	if (!flag) {
		if (!argc || !argv) {
			argc = NULL;
			argv = NULL;
		}
		rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED,
				     &provided);
		if (rc != MPI_SUCCESS)
			return mpi_fail(t, "MPI_Init_thread", rc);
		t->mpi_owned = 1;
	}
	/* Failures come back as codes; the default handler aborts. */
	rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rc != MPI_SUCCESS)
		return mpi_fail(t, "MPI_COMM_WORLD", rc);
	t->mpi_size = size;
	if (size > 1 || getenv("OMPI_COMM_WORLD_SIZE"))
		return world_from_mpi(t, rank, size);
	return world_from_env(t);
}

void trainer__mpi_finalize(struct trainer *t)
{
	int fin = 0;

	if (!t->mpi_owned)
		return;
	t->mpi_owned = 0;
	if (MPI_Finalized(&fin) == MPI_SUCCESS && !fin)
		(void)MPI_Finalize();
}

size_t trainer__dtype_size(enum trainer_dtype dtype)
{
	switch (dtype) {
	case TRAINER_FLOAT:
		return sizeof(float);
	case TRAINER_DOUBLE:
		return sizeof(double);
	case TRAINER_INT64:
		return sizeof(int64_t);
	}
	return 0;
}

static MPI_Datatype mpi_type(enum trainer_dtype dtype)
{
	switch (dtype) {
	case TRAINER_FLOAT:
		return MPI_FLOAT;
	case TRAINER_DOUBLE:
		return MPI_DOUBLE;
	case TRAINER_INT64:
		return MPI_INT64_T;
	}
	return MPI_DATATYPE_NULL;
}

static MPI_Op mpi_op(enum trainer_op op)
{
	switch (op) {
	case TRAINER_SUM:
		return MPI_SUM;
	case TRAINER_MAX:
		return MPI_MAX;
	case TRAINER_MIN:
		return MPI_MIN;
	}
	return MPI_OP_NULL;
}

static int check_buf(struct trainer *t, const void *buf, size_t count,
		     enum trainer_dtype dtype)
{
	if (trainer__dtype_size(dtype) == 0)
		return trainer__err(t, TRAINER_EINVAL, "unknown dtype %d",
				    (int)dtype);
	if (!buf && count > 0)
		return trainer__err(t, TRAINER_EINVAL, "buffer is NULL");
	return 0;
}

/* Whether MPI_COMM_WORLD is the job's world (CPU collectives possible). */
static int check_mpi_world(struct trainer *t)
{
	if (t->mpi_size != t->world)
		return trainer__err(t, TRAINER_ENOTSUP,
				    "%d ranks started without mpirun: "
				    "collectives need TRAINER_DEVICE_GPU "
				    "(NCCL) or mpirun",
				    t->world);
	return 0;
}

static int check_peer(struct trainer *t, int peer, const char *what)
{
	if (peer < 0 || peer >= t->world)
		return trainer__err(t, TRAINER_EINVAL,
				    "%s %d is not a rank of 0..%d", what, peer,
				    t->world - 1);
	return 0;
}

int trainer_allreduce(struct trainer *t, void *buf, size_t count,
		      enum trainer_dtype dtype, enum trainer_op op)
{
	size_t esz, off, n;
	int ret, rc;

	if (!t)
		return TRAINER_EINVAL;
	ret = check_buf(t, buf, count, dtype);
	if (ret)
		return ret;
	if (mpi_op(op) == MPI_OP_NULL)
		return trainer__err(t, TRAINER_EINVAL, "unknown op %d",
				    (int)op);
	if (count == 0)
		return 0;
	if (t->device == TRAINER_DEVICE_GPU)
		return trainer__nccl_allreduce(t, buf, count, dtype, op, 0);
	ret = check_mpi_world(t);
	if (ret)
		return ret;
	esz = trainer__dtype_size(dtype);
	for (off = 0; off < count; off += n) {
		n = count - off < MPI_CHUNK ? count - off : MPI_CHUNK;
		rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * esz,
				   (int)n, mpi_type(dtype), mpi_op(op),
				   MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS)
			return mpi_fail(t, "MPI_Allreduce", rc);
	}
	return 0;
}

int trainer_allreduce_avg(struct trainer *t, float *buf, size_t count)
{
	size_t i;
	int ret;

	if (!t)
		return TRAINER_EINVAL;
	if (t->device == TRAINER_DEVICE_GPU) {
		ret = check_buf(t, buf, count, TRAINER_FLOAT);
		if (ret || count == 0)
			return ret;
		return trainer__nccl_allreduce(t, buf, count, TRAINER_FLOAT,
					       TRAINER_SUM, 1);
	}
	ret = trainer_allreduce(t, buf, count, TRAINER_FLOAT, TRAINER_SUM);
	if (ret)
		return ret;
	for (i = 0; i < count; i++)
		buf[i] /= (float)t->world;
	return 0;
}

int trainer_broadcast(struct trainer *t, void *buf, size_t count,
		      enum trainer_dtype dtype, int root)
{
	size_t esz, off, n;
	int ret, rc;

	if (!t)
		return TRAINER_EINVAL;
	ret = check_buf(t, buf, count, dtype);
	if (!ret)
		ret = check_peer(t, root, "root");
	if (ret)
		return ret;
	if (count == 0)
		return 0;
	if (t->device == TRAINER_DEVICE_GPU)
		return trainer__nccl_broadcast(t, buf, count, dtype, root);
	ret = check_mpi_world(t);
	if (ret)
		return ret;
	esz = trainer__dtype_size(dtype);
	for (off = 0; off < count; off += n) {
		n = count - off < MPI_CHUNK ? count - off : MPI_CHUNK;
		rc = MPI_Bcast((char *)buf + off * esz, (int)n, mpi_type(dtype),
			       root, MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS)
			return mpi_fail(t, "MPI_Bcast", rc);
	}
	return 0;
}

static int check_p2p(struct trainer *t, const void *buf, size_t count,
		     enum trainer_dtype dtype, int peer, int tag)
{
	int ret = check_buf(t, buf, count, dtype);

	if (!ret)
		ret = check_peer(t, peer, "peer");
	if (ret)
		return ret;
	if (peer == t->rank)
		return trainer__err(t, TRAINER_EINVAL,
				    "peer %d is this rank itself", peer);
	if (tag < 0 || tag > 32767)
		return trainer__err(t, TRAINER_EINVAL,
				    "tag %d is not in 0..32767", tag);
	return 0;
}

int trainer_send(struct trainer *t, const void *buf, size_t count,
		 enum trainer_dtype dtype, int peer, int tag)
{
	size_t esz, off, n;
	int ret, rc;

	if (!t)
		return TRAINER_EINVAL;
	ret = check_p2p(t, buf, count, dtype, peer, tag);
	if (ret)
		return ret;
	if (t->device == TRAINER_DEVICE_GPU)
		return count ? trainer__nccl_send(t, buf, count, dtype, peer) :
			       0;
	ret = check_mpi_world(t);
	if (ret)
		return ret;
	esz = trainer__dtype_size(dtype);
	/* One message even for count 0, so that the receiver matches it. */
	off = 0;
	do {
		n = count - off < MPI_CHUNK ? count - off : MPI_CHUNK;
		rc = MPI_Send((const char *)buf + off * esz, (int)n,
			      mpi_type(dtype), peer, tag, MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS)
			return mpi_fail(t, "MPI_Send", rc);
		off += n;
	} while (off < count);
	return 0;
}

int trainer_recv(struct trainer *t, void *buf, size_t count,
		 enum trainer_dtype dtype, int peer, int tag)
{
	size_t esz, off, n;
	MPI_Status st;
	int ret, rc, got;

	if (!t)
		return TRAINER_EINVAL;
	ret = check_p2p(t, buf, count, dtype, peer, tag);
	if (ret)
		return ret;
	if (t->device == TRAINER_DEVICE_GPU)
		return count ? trainer__nccl_recv(t, buf, count, dtype, peer) :
			       0;
	ret = check_mpi_world(t);
	if (ret)
		return ret;
	esz = trainer__dtype_size(dtype);
	off = 0;
	do {
		n = count - off < MPI_CHUNK ? count - off : MPI_CHUNK;
		rc = MPI_Recv((char *)buf + off * esz, (int)n, mpi_type(dtype),
			      peer, tag, MPI_COMM_WORLD, &st);
		if (rc != MPI_SUCCESS)
			return mpi_fail(t, "MPI_Recv", rc);
		rc = MPI_Get_count(&st, mpi_type(dtype), &got);
		if (rc != MPI_SUCCESS)
			return mpi_fail(t, "MPI_Get_count", rc);
		if ((size_t)got != n)
			return trainer__err(t, TRAINER_ECOMM,
					    "recv from %d: got %d elements, "
					    "wanted %zu",
					    peer, got, n);
		off += n;
	} while (off < count);
	return 0;
}

int trainer_barrier(struct trainer *t)
{
	int ret, rc;

	if (!t)
		return TRAINER_EINVAL;
	if (t->device == TRAINER_DEVICE_GPU)
		return trainer__nccl_barrier(t);
	ret = check_mpi_world(t);
	if (ret)
		return ret;
	rc = MPI_Barrier(MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS)
		return mpi_fail(t, "MPI_Barrier", rc);
	return 0;
}

int trainer__allreduce_host_i64(struct trainer *t, int64_t *v, size_t n,
				enum trainer_op op)
{
	if (t->device == TRAINER_DEVICE_GPU)
		return trainer__nccl_allreduce_host_i64(t, v, n, op);
	return trainer_allreduce(t, v, n, TRAINER_INT64, op);
}
