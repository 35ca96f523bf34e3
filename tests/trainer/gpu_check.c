/*
 * Run by tests/trainer/test_gpu_build.sh: trainer_init with
 * TRAINER_DEVICE_GPU on a machine that may have no GPU. Prints
 * "init: <code> <message>" and exits 0 when the library answered with a
 * clean error code (ECOMM or ENOTSUP), 2 for anything else. With a GPU
 * (a world of one rank) it also runs the NCCL collectives on device
 * memory and exits 1 when one of them is wrong.
 */
#include <stdio.h>

#include <cuda_runtime.h>

#include "trainer.h"

static int gpu_checks(struct trainer *t)
{
	float h[4] = { 1, 2, 3, 4 }, *d = NULL;
	int64_t step = -1;
	int bad = 0, i;

	if (cudaMalloc((void **)&d, sizeof(h)) != cudaSuccess ||
	    cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice) != cudaSuccess)
		return 1;
	bad |= trainer_allreduce(t, d, 4, TRAINER_FLOAT, TRAINER_SUM) != 0;
	bad |= trainer_allreduce(t, d, 4, TRAINER_FLOAT, TRAINER_MAX) != 0;
	bad |= trainer_allreduce_avg(t, d, 4) != 0;
	bad |= trainer_broadcast(t, d, 4, TRAINER_FLOAT, 0) != 0;
	bad |= trainer_barrier(t) != 0;
	if (bad)
		printf("collective: %s\n", trainer_errmsg(t));
	if (cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost) != cudaSuccess)
		bad = 1;
	for (i = 0; i < 4; i++)
		bad |= h[i] != (float)(i + 1);
	/* No checkpoints: every rank agrees there is none. */
	bad |= trainer_checkpoint_latest_all(t, &step) != TRAINER_ENOTFOUND;
	(void)cudaFree(d);
	printf("gpu checks: %s\n", bad ? "failed" : "passed");
	return bad;
}

int main(int argc, char **argv)
{
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
	return ret == TRAINER_ECOMM || ret == TRAINER_ENOTSUP ? 0 : 2;
}
