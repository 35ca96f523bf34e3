/*
 * Run by tests/trainer/test_gpu_build.sh: trainer_init with
 * TRAINER_DEVICE_GPU, then the NCCL collectives on device memory.
 *
 * With GPU_CHECK_EXPECT_GPU=1 (the script sets it on a host with an NVIDIA
 * GPU) trainer_init must succeed: an error exits 1. Without it, the host
 * has no GPU and trainer_init must answer with a clean error code (ECOMM
 * or ENOTSUP): exit 0, or 2 for anything else.
 *
 * Every rank starts from values that differ by rank ((rank + 1) * (i + 1)),
 * so that in a world of several ranks (mpirun -np 2, one GPU each) SUM,
 * MAX, MIN, AVG and a broadcast from the last rank each give a result no
 * rank held before. In a world of one rank they are all identities: then
 * the check shows only that the values round-trip through device memory
 * and NCCL unchanged, and says so. Prints "gpu checks: passed (rank R of
 * W)" or "gpu checks: failed ..."; exits 0 or 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "trainer.h"

#define N 5

/* Copies h (n values of size sz) to the device, runs op, copies back. */
static int on_device(struct trainer *t, void *h, size_t n, size_t sz,
		     int (*op)(struct trainer *, void *, size_t, void *),
		     void *arg, const char *what)
{
	void *d = NULL;
	int ret;

	if (cudaMalloc(&d, n * sz) != cudaSuccess ||
	    cudaMemcpy(d, h, n * sz, cudaMemcpyHostToDevice) != cudaSuccess) {
		printf("%s: cannot put the values on the device\n", what);
		(void)cudaFree(d);
		return 1;
	}
	/* Poison the host copy: the result must come from the device. */
	memset(h, 0xa5, n * sz);
	ret = op(t, d, n, arg);
	if (ret)
		printf("%s: %s\n", what, trainer_errmsg(t));
	if (cudaMemcpy(h, d, n * sz, cudaMemcpyDeviceToHost) != cudaSuccess) {
		printf("%s: cannot copy the result back\n", what);
		ret = 1;
	}
	(void)cudaFree(d);
	return ret != 0;
}

static int op_reduce(struct trainer *t, void *d, size_t n, void *arg)
{
	const int *a = arg; /* dtype, op */

	return trainer_allreduce(t, d, n, (enum trainer_dtype)a[0],
				 (enum trainer_op)a[1]);
}

static int op_avg(struct trainer *t, void *d, size_t n, void *arg)
{
	(void)arg;
	return trainer_allreduce_avg(t, d, n);
}

static int op_bcast(struct trainer *t, void *d, size_t n, void *arg)
{
	return trainer_broadcast(t, d, n, TRAINER_FLOAT, *(int *)arg);
}

static void fill_f(float *h, int r)
{
	int i;

	for (i = 0; i < N; i++)
		h[i] = (float)((r + 1) * (i + 1));
}

/* h[i] must be k * (i + 1). */
static int expect_f(const float *h, double k, const char *what)
{
	int i, bad = 0;

	for (i = 0; i < N; i++)
		if (h[i] != (float)(k * (i + 1))) {
			printf("%s: [%d] is %g, not %g\n", what, i, h[i],
			       k * (i + 1));
			bad = 1;
		}
	return bad;
}

static int gpu_checks(struct trainer *t)
{
	int r = trainer_rank(t), w = trainer_world_size(t);
	float f[N];
	double dbl[N];
	int64_t v[N];
	int64_t step = -1;
	int args[2];
	int bad = 0, root = w - 1, i;

	if (w == 1)
		printf("a world of 1 rank: every collective is an identity; "
		       "checked: the values round-trip through device memory "
		       "and NCCL\n");
	fill_f(f, r);
	args[0] = TRAINER_FLOAT;
	args[1] = TRAINER_SUM;
	bad |= on_device(t, f, N, sizeof(*f), op_reduce, args, "SUM float");
	bad |= expect_f(f, w * (w + 1) / 2.0, "SUM float");
	fill_f(f, r);
	args[1] = TRAINER_MAX;
	bad |= on_device(t, f, N, sizeof(*f), op_reduce, args, "MAX float");
	bad |= expect_f(f, w, "MAX float");
	fill_f(f, r);
	bad |= on_device(t, f, N, sizeof(*f), op_avg, NULL, "AVG float");
	bad |= expect_f(f, (w + 1) / 2.0, "AVG float");
	fill_f(f, r);
	bad |= on_device(t, f, N, sizeof(*f), op_bcast, &root, "broadcast");
	bad |= expect_f(f, w, "broadcast");
	for (i = 0; i < N; i++)
		dbl[i] = (double)((r + 1) * (i + 1));
	args[0] = TRAINER_DOUBLE;
	args[1] = TRAINER_MIN;
	bad |= on_device(t, dbl, N, sizeof(*dbl), op_reduce, args,
			 "MIN double");
	for (i = 0; i < N; i++)
		if (dbl[i] != (double)(i + 1)) {
			printf("MIN double: [%d] is %g, not %d\n", i, dbl[i],
			       i + 1);
			bad = 1;
		}
	/* Beyond 2^53: an int64 that went through a float would change. */
	for (i = 0; i < N; i++)
		v[i] = ((int64_t)1 << 60) + (int64_t)(r + 1) * (i + 1);
	args[0] = TRAINER_INT64;
	args[1] = TRAINER_SUM;
	bad |= on_device(t, v, N, sizeof(*v), op_reduce, args, "SUM int64");
	for (i = 0; i < N; i++)
		if (v[i] != (int64_t)w * ((int64_t)1 << 60) +
				    (int64_t)(w * (w + 1) / 2) * (i + 1)) {
			printf("SUM int64: [%d] is %lld\n", i, (long long)v[i]);
			bad = 1;
		}
	if (trainer_barrier(t)) {
		printf("barrier: %s\n", trainer_errmsg(t));
		bad = 1;
	}
	/* No checkpoints: every rank agrees there is none. */
	if (trainer_checkpoint_latest_all(t, &step) != TRAINER_ENOTFOUND) {
		printf("checkpoint_latest_all: %s\n", trainer_errmsg(t));
		bad = 1;
	}
	printf("gpu checks: %s (rank %d of %d)\n", bad ? "failed" : "passed", r,
	       w);
	return bad;
}

int main(int argc, char **argv)
{
	const char *e = getenv("GPU_CHECK_EXPECT_GPU");
	int expect_gpu = e && !strcmp(e, "1");
	struct trainer *t = NULL;
	char err[256] = "";
	int ret;

	ret = trainer_init(&argc, &argv, TRAINER_DEVICE_GPU, &t, err,
			   sizeof(err));
	printf("init: %d %s\n", ret, err);
	if (ret == 0) {
		ret = gpu_checks(t);
		trainer_free(t);
		return ret ? 1 : 0;
	}
	if (t != NULL)
		return 2;
	if (expect_gpu) {
		printf("gpu checks: failed (trainer_init on a GPU host)\n");
		return 1;
	}
	return ret == TRAINER_ECOMM || ret == TRAINER_ENOTSUP ? 0 : 2;
}
