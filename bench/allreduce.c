/*
 * Allreduce bandwidth of libtrainer (trainer_allreduce) against OpenMPI's
 * own MPI_Allreduce on the same buffers, sizes and ranks, alternating the
 * two so that both see the same machine. Run by bench/allreduce.sh under
 * mpirun; rank 0 prints one line per size:
 *     bytes  trainer_GBps  mpi_GBps  ratio
 * (bus bandwidth as nccl-tests defines it: 2 (n-1)/n * bytes / time).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/trainer.h"

static double run(struct trainer *t, float *buf, size_t count, int iters,
		  int use_trainer)
{
	double t0;
	int i;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < iters; i++) {
		if (use_trainer)
			(void)trainer_allreduce(t, buf, count, TRAINER_FLOAT,
						TRAINER_SUM);
		else
			MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT,
				      MPI_SUM, MPI_COMM_WORLD);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	return (MPI_Wtime() - t0) / iters;
}

int main(int argc, char **argv)
{
	struct trainer *t = NULL;
	char msg[256];
	size_t bytes;
	int rank, world, rounds = 5;

	if (trainer_init(&argc, &argv, TRAINER_DEVICE_CPU, &t, msg,
			 sizeof(msg))) {
		fprintf(stderr, "allreduce: %s\n", msg);
		return 1;
	}
	rank = trainer_rank(t);
	world = trainer_world_size(t);
	if (!rank)
		printf("%10s %14s %14s %7s\n", "bytes", "trainer_GBps",
		       "mpi_GBps", "ratio");
	for (bytes = 4096; bytes <= ((size_t)64 << 20); bytes *= 4) {
		size_t count = bytes / sizeof(float);
		float *buf = calloc(count, sizeof(float));
		int iters = bytes < (1 << 20) ? 200 : 20;
		double tt = 1e9, tm = 1e9, f, bw_t, bw_m;
		int r;

		if (!buf)
			return 1;
		(void)run(t, buf, count, 3, 1); /* warm up */
		for (r = 0; r < rounds; r++) {
			double a = run(t, buf, count, iters, 1);
			double b = run(t, buf, count, iters, 0);

			tt = a < tt ? a : tt;
			tm = b < tm ? b : tm;
		}
		f = 2.0 * (world - 1) / world * (double)bytes / 1e9;
		bw_t = f / tt;
		bw_m = f / tm;
		if (!rank)
			printf("%10zu %14.3f %14.3f %7.3f\n", bytes, bw_t, bw_m,
			       bw_t / bw_m);
		free(buf);
	}
	trainer_free(t);
	return 0;
}
